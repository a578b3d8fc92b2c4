"""The code index: one row per source file (summary, symbols, stat and content hash), written by
``crawl_project.py``, ``index_file.py`` and ``watch.py`` through the same pipeline.

Freshness is decided cheaply first: a file whose mtime and size match its row is unchanged without
being read; otherwise its content hash decides (a ``touch`` or a checkout that restores the same bytes
only refreshes the stat).  Changed files are summarised in parallel, embedded and written in batches of
WRITE_BATCH rows, so an interrupted crawl keeps every batch it finished.  Writers of the table are
serialised by ``Database.write``'s lock and rows are keyed by path (``merge_insert``), so any number of
concurrent indexers leave exactly one row per file.

A file that leaves the index (deleted, moved away, newly ignored, too large) also leaves a row in
``code_removed``: its path and when.  That is the one thing the index writes for the layers above it
(it knows nothing of them): an edit or a move shows in the index itself (a new content hash; the
same hash under another path), a deletion leaves nothing else behind, and ``memory.code_links``
reads it to say when a file a memory names went away.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.codeindex.by_content import known, prune, remember, reuse_vector
from contextware.codeindex.source_text import is_utf8_name, printable_name
from contextware.codeindex.summarizing import SUMMARIZERS, Summarizer, Work, check_summarizer  # noqa: F401 - SUMMARIZERS, check_summarizer: the index's API
from contextware.core.errors import ContextwareError, EmbeddingError, FieldError, UsageError
from contextware.core.redact import redact_text
from contextware.core.system import stop_on_signals, write_atomic
from contextware.core.text import sql_str, utcnow
from contextware.storage.embedded_text import code_embedding_text, code_search_text, import_words
from contextware.storage.integrity import stamp
from contextware.storage.schemas import CHUNKS_TABLE, CODE_REMOVED_TABLE, CODE_TABLE

if TYPE_CHECKING:
    from datetime import datetime

    from lancedb.table import Table

    from contextware.codeindex.chunks import Chunk
    from contextware.codeindex.local_summary import LocalSummary
    from contextware.codeindex.source_text import Candidate
    from contextware.storage.embeddings import Embedder
    from contextware.storage.project import Project
    from contextware.storage.schemas import CodeChunkRow, CodeFileRow

WRITE_BATCH = 32
SEARCH_CONTENT_CHARS = 200_000
META_COLUMNS = ["id", "mtime", "size", "content_hash", "summarizer"]


class CrawlInterrupted(ContextwareError):
    code = "interrupted"
    exit_code = 130  # as for any command stopped by Ctrl-C


@dataclass
class Report:
    scanned: int = 0
    unchanged: int = 0
    indexed_files: list[str] = field(default_factory=list)
    removed_files: list[str] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    excluded: Counter[str] = field(default_factory=Counter[str])  # files the listing left out by rule, per reason
    failed: list[dict[str, Any]] = field(default_factory=list)
    summarizers: Counter[str] = field(default_factory=Counter[str])
    reused: int = 0  # files whose content was summarised before (codeindex.by_content): no summariser call
    fallbacks: int = 0
    gemini_error: str | None = None
    degraded: str | None = None

    def to_dict(self, started: float, list_limit: int = 50) -> dict[str, Any]:
        skipped = [{"path": p, "reason": r} for r, paths in sorted(self.skipped.items()) for p in paths]
        out: dict[str, Any] = {
            "scanned": self.scanned,
            "indexed": len(self.indexed_files),
            "unchanged": self.unchanged,
            "removed": len(self.removed_files),
            "skipped": len(skipped),
            "skipped_reasons": {r: len(p) for r, p in sorted(self.skipped.items())},
            "skipped_files": skipped[:list_limit],
            "excluded": dict(sorted(self.excluded.items())),
            "failed": len(self.failed),
            "failures": self.failed[:list_limit],
            "indexed_files": sorted(self.indexed_files)[:list_limit],
            "removed_files": sorted(self.removed_files)[:list_limit],
            "summarizers": dict(self.summarizers),
            "elapsed_s": round(time.monotonic() - started, 3),
        }
        if self.reused:
            out["reused_summaries"] = self.reused
        if self.fallbacks:
            out["gemini_fallbacks"] = self.fallbacks
        if self.gemini_error:
            out["gemini_error"] = self.gemini_error
        if self.degraded:
            out["degraded"] = self.degraded
        return out


# -- reading the table ---------------------------------------------------------------------------
def _meta(project: "Project", paths: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """Stat and hash of indexed files (all, or those of ``paths``), without vectors or text."""
    db = project.db
    table = db.open_table(CODE_TABLE)
    if table is None:
        return {}
    embedder = project.embedder
    db.check_model(CODE_TABLE, table, embedder.model_id, embedder.dim)
    wanted = None if paths is None else sorted(set(paths))
    if wanted == []:
        return {}

    def query() -> list[dict[str, Any]]:
        q = table.search().select(META_COLUMNS)
        if wanted is not None:
            q = q.where(_in_list(wanted))
        return q.limit(None).to_arrow().to_pylist()

    return {row["id"]: row for row in db.read(query)}


def _in_list(ids: Sequence[str]) -> str:
    return f"id IN ({', '.join(sql_str(i) for i in ids)})"


# -- writing -------------------------------------------------------------------------------------
class _Writer:
    """Collects finished rows and writes them WRITE_BATCH at a time (one commit per batch)."""

    def __init__(self, project: "Project", report: Report) -> None:
        self.project = project
        self.report = report
        self.rows: list[CodeFileRow] = []
        self.touched: list["Candidate"] = []  # same bytes, new stat: only mtime and size change
        self.removals: list[str] = []
        self.chunk_rows: list[CodeChunkRow] = []  # of the files in ``rows``: they replace those files' chunks
        self.fresh: list[CodeFileRow] = []  # rows of new summaries, kept per content hash after the write
        self.kept_vectors: dict[str, list[float]] = {}  # of re-used summaries: text hash -> vector

    def add(
        self,
        w: Work,
        summary: "LocalSummary",
        summarizer: str,
        reused: bool = False,
        vectors: dict[str, Any] | None = None,
    ) -> None:
        """``vectors``: text hash -> vector kept with a re-used summary (``by_content``)."""
        c = w.candidate
        row: CodeFileRow = {
            "id": c.path,
            "file_path": c.path,
            "language": summary.language,
            "summary": summary.summary,
            "symbols": list(summary.symbols),
            "questions": list(summary.questions) or None,
            "summarizer": summarizer,
            "mtime": c.mtime,
            "size": c.size,
            "content_hash": w.digest,
            "indexed_at": utcnow(),
        }
        row["search_text"] = code_search_text(row, w.text, SEARCH_CONTENT_CHARS)  # FTS_COLUMN
        row["imports"] = import_words(w.text[:SEARCH_CONTENT_CHARS])
        self.chunk_rows += chunk_rows(
            c.path, w.text[:SEARCH_CONTENT_CHARS], summary.language, row["indexed_at"], w.chunks
        )
        self.rows.append(row)
        self.report.indexed_files.append(c.path)
        if reused:
            self.report.reused += 1
            self.kept_vectors.update(vectors or {})
        else:
            self.report.summarizers[summarizer] += 1
            self.fresh.append(row)
        if len(self.rows) >= WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        rows, touched, removals, chunks = self.rows, self.touched, self.removals, self.chunk_rows
        if not (rows or touched or removals):
            return
        self.rows, self.touched, self.removals, self.chunk_rows = [], [], [], []
        embedder = self.project.embedder
        kept, self.kept_vectors = self.kept_vectors, {}
        texts = [*(code_embedding_text(r) for r in rows), *(c["text"] for c in chunks)]
        both: list[CodeFileRow | CodeChunkRow] = [*rows, *chunks]
        if rows:
            need = [(r, t) for r, t in zip(both, texts, strict=True) if not reuse_vector(r, t, kept)]
            try:
                embed_rows(embedder, [r for r, _ in need], [t for _, t in need])
            except EmbeddingError as exc:
                self.report.degraded = f"{exc.message} Rows were saved without vectors; run `memory.py reembed` later."
                for row in both:
                    row["vector"] = None
        stamp(CODE_TABLE, rows)
        stamp(CHUNKS_TABLE, chunks)

        def write(tbl: "Table") -> None:
            import pyarrow as pa

            upserts = list(rows)
            if touched:
                stats = {c.path: c for c in touched}
                for old in tbl.search().where(_in_list(sorted(stats))).limit(None).to_list():
                    c = stats[old["id"]]
                    upserts.append(
                        {**{k: v for k, v in old.items() if not k.startswith("_")}, "mtime": c.mtime, "size": c.size}
                    )
            if upserts:
                data = pa.Table.from_pylist(upserts, schema=tbl.schema)
                tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
            for start in range(0, len(removals), 500):
                tbl.delete(_in_list(removals[start : start + 500]))

        self.project.ensure_data_dir()
        if removals:  # before the rows go: a crash in between leaves the row, which wins over the mark
            record_removals(self.project, removals)
        # Chunks first: a crash between the two writes leaves the file's old row (and hash), so the
        # next crawl redoes the file and its chunks.
        replaced = [r["id"] for r in rows] + list(removals)
        if rows or (replaced and self.project.db.open_table(CHUNKS_TABLE) is not None):
            self.project.db.write(
                CHUNKS_TABLE,
                lambda tbl: replace_chunks(tbl, replaced, chunks),
                dim=embedder.dim,
                model_id=embedder.model_id,
            )
        self.project.db.write(CODE_TABLE, write, dim=embedder.dim, model_id=embedder.model_id)
        fresh, self.fresh = self.fresh, []
        # after the index: a crash before it only costs a summary later
        remember(self.project, fresh, list(zip(both, texts, strict=True)), embedder.model_id)


def record_removals(project: "Project", paths: Sequence[str]) -> None:
    """Mark ``paths`` as removed from the index now (``CODE_REMOVED_TABLE``, one row per path)."""
    import pyarrow as pa

    now = utcnow()
    rows = [{"id": p, "file_path": p, "removed_at": now} for p in dict.fromkeys(paths)]

    def write(tbl: "Table") -> None:
        data = pa.Table.from_pylist(rows, schema=tbl.schema)
        tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)

    project.db.write(CODE_REMOVED_TABLE, write)


def chunk_rows(
    path: str, text: str, language: str | None, indexed_at: datetime, chunks: "list[Chunk] | None" = None
) -> list[CodeChunkRow]:
    """The rows of ``CHUNKS_TABLE`` for one file (vectors are added by ``embed_rows``); ``chunks``
    when the summariser already made them from its parse."""
    from contextware.codeindex.chunks import file_chunks

    return [
        {
            "id": f"{path}#{c.start}-{c.end}",
            "file_path": path,
            "name": c.name,
            "kind": c.kind,
            "start_line": c.start,
            "end_line": c.end,
            "text": c.embedding_text,
            "indexed_at": indexed_at,
            "search_text": c.search_text,
        }
        for c in (file_chunks(path, text, language) if chunks is None else chunks)
    ]


def embed_rows(embedder: "Embedder", rows: "Sequence[CodeFileRow | CodeChunkRow]", texts: list[str]) -> None:
    """Set each row's vector from its text, files' and definitions' together: each distinct text is
    embedded once, and shortest first, since the model pads a batch to its longest text."""
    unique = sorted(set(texts), key=len)
    if not unique:
        return
    by_text = {t: v.tolist() for t, v in zip(unique, embedder.embed(unique), strict=False)}
    for row, text in zip(rows, texts, strict=True):
        row["vector"] = by_text[text]


def replace_chunks(tbl: "Table", paths: Sequence[str], rows: list[CodeChunkRow]) -> None:
    """Drop every chunk of ``paths`` and add ``rows`` (the new chunks of some of them)."""
    import pyarrow as pa

    for start in range(0, len(paths), 500):
        tbl.delete(f"file_path IN ({', '.join(sql_str(p) for p in paths[start : start + 500])})")
    if rows:
        tbl.add(pa.Table.from_pylist(rows, schema=tbl.schema))


# -- the pipeline --------------------------------------------------------------------------------
def _run(
    project: "Project",
    candidates: Sequence["Candidate"],
    existing: dict[str, dict[str, Any]],
    report: Report,
    *,
    summarizer: str,
    force: bool,
    upgrade: bool,
    jobs: int | None,
    progress: bool,
    removals: Sequence[str] = (),
    rejudge_minified: bool = False,
) -> None:
    """``rejudge_minified``: minified files were indexed by config until now; unchanged files are
    read again to find them (nothing else about an unchanged file can have changed)."""
    from contextware.codeindex.files import restored_reasons
    from contextware.codeindex.source_text import MINIFIED_MIN_CHARS, looks_minified, read_source

    max_bytes = project.config.max_file_bytes
    keep_minified = "minified" in restored_reasons(project.config)
    writer = _Writer(project, report)
    writer.removals.extend(removals)
    report.removed_files.extend(removals)
    todo: list[Work] = []
    for c in candidates:
        report.scanned += 1
        old = existing.get(c.path)
        redo = force or (upgrade and old is not None and old.get("summarizer") != "gemini")
        same_stat = old is not None and old["mtime"] == c.mtime and old["size"] == c.size
        if same_stat and not redo and not (rejudge_minified and c.size >= MINIFIED_MIN_CHARS):
            report.unchanged += 1
            continue
        text, digest, reason = read_source(c, max_bytes)
        if not reason and not keep_minified and looks_minified(text or ""):
            reason = "minified"
        if reason:
            report.skipped[reason].append(c.path)
            if old is not None:
                writer.removals.append(c.path)
                report.removed_files.append(c.path)
            continue
        if old is not None and not redo and old["content_hash"] == digest:
            writer.touched.append(c)
            report.unchanged += 1
            continue
        # Secrets in a file never reach a summariser (Gemini), a summary, a symbol or the search text.
        todo.append(Work(c, redact_text(text or ""), digest or ""))

    if todo and not force and not upgrade:  # content summarised before, on any branch: no summariser call
        kept = known(project, [w.digest for w in todo], summarizer, project.embedder.model_id)
        for w in [w for w in todo if w.digest in kept]:
            summary, made_by, vectors = kept[w.digest]
            writer.add(w, summary, made_by, reused=True, vectors=vectors)
        todo = [w for w in todo if w.digest not in kept]
    bar = _Progress(len(todo)) if progress and todo and sys.stderr.isatty() else None
    workers = max(1, jobs or project.config.crawl_jobs or min(8, os.cpu_count() or 2))

    def done(w: Work, summary: "LocalSummary", name: str) -> None:
        writer.add(w, summary, name)
        if bar:
            bar.step()

    def failed(w: Work, message: str) -> None:
        report.failed.append({"path": w.candidate.path, "error": message})
        if bar:
            bar.step()

    stop = threading.Event()
    # A signal only sets ``stop``: the pipeline stops between files and writes what it finished
    # (a signal in the middle of a write would lose the batch).
    restore = stop_on_signals(stop)
    try:
        Summarizer(project, "gemini" if upgrade else summarizer, workers, report, stop).run(todo, done, failed)
    except KeyboardInterrupt:
        writer.flush()
        if bar:
            bar.close()
        raise CrawlInterrupted(
            f"Interrupted: {len(report.indexed_files)} files were indexed and kept; run the same command again to finish.",
            details={
                "indexed": len(report.indexed_files),
                "remaining": len(todo) - len(report.indexed_files) - len(report.failed),
            },
        ) from None
    finally:
        restore()
    writer.flush()
    if bar:
        bar.close()


class _Progress:
    """A one-line progress bar on stderr (only used when stderr is a terminal)."""

    def __init__(self, total: int) -> None:
        self.total, self.count, self.started = total, 0, time.monotonic()

    def step(self) -> None:
        self.count += 1
        width = 30
        filled = int(width * self.count / self.total)
        rate = self.count / max(time.monotonic() - self.started, 1e-6)
        sys.stderr.write(
            f"\rindexing [{'#' * filled}{'.' * (width - filled)}] {self.count}/{self.total} ({rate:.1f} files/s)"
        )
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


BAD_NAME = "name_not_utf8"


def _drop_bad_names(candidates: Iterable["Candidate"], report: Report) -> list["Candidate"]:
    """Files whose name is not valid UTF-8 (``os.fsdecode`` left surrogates in it) cannot be stored
    or shown as text: each is skipped, counted under ``name_not_utf8`` (its name shown with escapes)
    and one warning on stderr says how many."""
    kept: list["Candidate"] = []
    bad: list[str] = []
    for cand in candidates:
        if is_utf8_name(cand.path):
            kept.append(cand)
        else:
            bad.append(printable_name(cand.path))
    if bad:
        report.skipped[BAD_NAME] += bad
        sys.stderr.write(
            f"warning: skipped {len(bad)} file(s) whose name is not valid UTF-8, e.g. {bad[0]}; rename them to index them.\n"
        )
    return kept


def _under(path: str, prefixes: Sequence[str]) -> bool:
    return any(not p or path == p or path.startswith(p + "/") for p in prefixes)


def crawl(
    project: "Project",
    paths: Sequence[str | Path] | None = None,
    *,
    summarizer: str = "auto",
    jobs: int | None = None,
    force: bool = False,
    upgrade: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Index the project (or the given files and folders): new and changed files are summarised,
    unchanged ones skipped, rows of deleted or newly ignored files removed."""
    from contextware.codeindex.files import IgnoreRules, list_project_files, restored_reasons

    started = time.monotonic()
    summarizer = check_summarizer(summarizer)
    if jobs is not None and not 1 <= jobs <= 64:
        raise FieldError("{field} must be between 1 and 64.", field="jobs", code="bad_jobs")
    if upgrade:
        _require_gemini("--upgrade")
    elif summarizer == "gemini":
        _require_gemini("--summarizer gemini")
    report = Report()
    restored = restored_reasons(project.config)
    listed, explicit = list_project_files(
        project.root, project.data_dir, paths or None, restored=restored, excluded=report.excluded
    )
    candidates = _drop_bad_names(listed, report)
    for rel, reason in explicit.items():
        report.skipped[reason].append(printable_name(rel))
    existing = _meta(project)
    if existing and project.db.open_table(CHUNKS_TABLE) is None:
        force = True  # an index written before definition chunks existed: build them for every file
    present = {c.path for c in candidates}
    if paths:  # the given paths as the walker names them (a symlink keeps its own path, not its target's)
        rules = IgnoreRules.load(project.root, project.data_dir, restored)
        scope = [rel for rel in map(rules.relative, paths) if rel is not None]
    else:
        scope = [""]
    gone = sorted(p for p in existing if p not in present and _under(p, scope))
    # Which classes config brought back at the last crawl: a class switched off again must leave.
    state = project.data_dir / "cache" / "index_restored.json"
    try:
        before = set(json.loads(state.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        before = set()
    _run(
        project,
        candidates,
        existing,
        report,
        summarizer=summarizer,
        force=force,
        upgrade=upgrade,
        jobs=jobs,
        progress=progress,
        removals=gone,
        rejudge_minified="minified" in before - restored,
    )
    if before != set(restored):
        project.ensure_data_dir()
        write_atomic(state, json.dumps(sorted(restored)))
    if report.indexed_files or report.removed_files:
        # Fold the new rows into the full-text index (unindexed rows are scanned on every search).
        project.db.compact(CODE_TABLE)
        project.db.compact(CHUNKS_TABLE)
    out = report.to_dict(started)
    if not paths and (pruned := prune(project, project.config.code_index_keep_days)):
        out["pruned_summaries"] = pruned
    return out


def index_files(
    project: "Project", paths: Sequence[str | Path], *, summarizer: str = "auto", force: bool = False
) -> dict[str, Any]:
    """(Re)index the given files; a file that no longer exists is removed from the index."""
    from contextware.codeindex.files import IgnoreRules, check_file, restored_reasons

    started = time.monotonic()
    if not paths:
        raise UsageError("Give at least one file to index.", code="no_paths")
    summarizer = check_summarizer(summarizer)
    if summarizer == "gemini":
        _require_gemini("--summarizer gemini")
    report = Report()
    rules = IgnoreRules.load(project.root, project.data_dir, restored_reasons(project.config))
    max_bytes = project.config.max_file_bytes
    candidates: dict[str, "Candidate"] = {}
    missing: list[str] = []
    rules.ask_git(rel for rel in map(rules.relative, paths) if rel)  # one git process, not one per file
    for p in paths:
        rel, cand, reason = check_file(project.root, project.data_dir, p, max_bytes=max_bytes, rules=rules)
        if not is_utf8_name(rel or ""):
            _drop_bad_names([cand] if cand is not None else [], report)
            if cand is None:
                report.skipped[reason or BAD_NAME].append(printable_name(rel))
        elif cand is not None and reason is None:
            candidates[cand.path] = cand
        elif reason == "missing":
            missing.append(rel)
        else:
            report.skipped[reason or "skipped"].append(rel)
    existing = _meta(project, [*candidates, *missing, *(r for rs in report.skipped.values() for r in rs)])
    gone = [m for m in missing if m in existing]
    if folders := [m for m in missing if m and m not in existing]:
        # A folder deleted or moved away arrives as one path (watch sees a single event): its rows go.
        under = sorted(p for p in _meta(project) if _under(p, folders))
        gone += under
        if vanished := [m for m in folders if not any(_under(p, [m]) for p in under)]:
            report.skipped["missing"] += vanished
    # A file that became too large, binary or ignored leaves the index.
    dropped = [r for rs in report.skipped.values() for r in rs if r in existing]
    _run(
        project,
        list(candidates.values()),
        existing,
        report,
        summarizer=summarizer,
        force=force,
        upgrade=False,
        jobs=None,
        progress=False,
        removals=[*gone, *dropped],
    )
    return report.to_dict(started)


def _require_gemini(flag: str) -> None:
    from contextware.gemini.availability import gemini_ready

    if not gemini_ready():
        raise UsageError(
            f"{flag} needs Gemini CLI installed and authenticated (set GEMINI_API_KEY or run `gemini` once to log in).",
            code="gemini_unavailable",
        )
