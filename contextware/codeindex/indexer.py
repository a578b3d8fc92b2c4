"""The code index: one row per source file (summary, symbols, stat and content hash), written by
``crawl_project.py``, ``index_file.py`` and ``watch.py`` through the same pipeline.

Freshness is decided cheaply first: a file whose mtime and size match its row is unchanged without
being read; otherwise its content hash decides (a ``touch`` or a checkout that restores the same bytes
only refreshes the stat).  Changed files are summarised in parallel, embedded and written in batches of
WRITE_BATCH rows, so an interrupted crawl keeps every batch it finished.  Writers of the table are
serialised by ``Database.write``'s lock and rows are keyed by path (``merge_insert``), so any number of
concurrent indexers leave exactly one row per file.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.codeindex.source_text import is_utf8_name, printable_name
from contextware.errors import ContextwareError, EmbeddingError, GeminiError, UsageError
from contextware.storage.embedded_text import code_embedding_text, code_search_text, import_words
from contextware.storage.integrity import stamp
from contextware.storage.schemas import CODE_TABLE, FTS_COLUMN
from contextware.system import stop_on_signals
from contextware.text import sql_str, utcnow

if TYPE_CHECKING:
    from contextware.codeindex.local_summary import LocalSummary
    from contextware.codeindex.source_text import Candidate
    from contextware.storage.project import Project

SUMMARIZERS = ("auto", "gemini", "local")
WRITE_BATCH = 32
SEARCH_CONTENT_CHARS = 200_000
META_COLUMNS = ["id", "mtime", "size", "content_hash", "summarizer"]
# Gemini failures that will not go away within one crawl: stop asking, fall back (or fail) at once.
_PERSISTENT = {"auth", "untrusted_folder", "config", "gemini_not_installed", "sandbox", "no_workdir"}
# Timeouts in a row after which the API is taken to be down for this crawl (each costs gemini_timeout_s).
TIMEOUTS_IN_A_ROW = 2


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
    failed: list[dict] = field(default_factory=list)
    summarizers: Counter = field(default_factory=Counter)
    fallbacks: int = 0
    gemini_error: str | None = None
    degraded: str | None = None

    def to_dict(self, started: float, list_limit: int = 50) -> dict:
        skipped = [{"path": p, "reason": r} for r, paths in sorted(self.skipped.items()) for p in paths]
        out: dict[str, Any] = {
            "scanned": self.scanned,
            "indexed": len(self.indexed_files),
            "unchanged": self.unchanged,
            "removed": len(self.removed_files),
            "skipped": len(skipped),
            "skipped_reasons": {r: len(p) for r, p in sorted(self.skipped.items())},
            "skipped_files": skipped[:list_limit],
            "failed": len(self.failed),
            "failures": self.failed[:list_limit],
            "indexed_files": sorted(self.indexed_files)[:list_limit],
            "removed_files": sorted(self.removed_files)[:list_limit],
            "summarizers": dict(self.summarizers),
            "elapsed_s": round(time.monotonic() - started, 3),
        }
        if self.fallbacks:
            out["gemini_fallbacks"] = self.fallbacks
        if self.gemini_error:
            out["gemini_error"] = self.gemini_error
        if self.degraded:
            out["degraded"] = self.degraded
        return out


@dataclass
class _Work:
    candidate: "Candidate"
    text: str
    digest: str


# -- reading the table ---------------------------------------------------------------------------
def _meta(project: "Project", paths: Iterable[str] | None = None) -> dict[str, dict]:
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

    def query() -> list[dict]:
        q = table.search().select(META_COLUMNS)
        if wanted is not None:
            q = q.where(_in_list(wanted))
        return q.limit(None).to_arrow().to_pylist()

    return {row["id"]: row for row in db.read(query)}


def _in_list(ids: Sequence[str]) -> str:
    return f"id IN ({', '.join(sql_str(i) for i in ids)})"


# -- summarising ---------------------------------------------------------------------------------
def check_summarizer(name: str | None) -> str:
    name = name or "auto"
    if name not in SUMMARIZERS:
        raise UsageError(f"Unknown --summarizer {name!r}: use auto, gemini or local.", code="bad_summarizer")
    return name


class _Summarizer:
    """Runs the configured summariser over work items; calls ``done(work, summary, name)`` for each
    file as soon as it is summarised, ``failed(work, message)`` for files that could not be."""

    def __init__(self, project: "Project", mode: str, jobs: int, report: Report, stop: threading.Event) -> None:
        self.project = project
        self.stop = stop
        self.mode = mode
        self.jobs = jobs
        self.report = report
        self.use_gemini = mode == "gemini" or (mode == "auto" and _gemini_ready())
        self.broken: GeminiError | None = None
        self.timeouts = 0  # in a row
        self.lock = threading.Lock()

    def run(
        self,
        items: list[_Work],
        done: Callable[[_Work, "LocalSummary", str], None],
        failed: Callable[[_Work, str], None],
    ) -> None:
        if not items:
            return
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            futures: dict[Future, Any] = {}
            if self.use_gemini:
                from contextware.codeindex.gemini_summary import SourceFile, plan_batches

                by_path = {w.candidate.path: w for w in items}
                files = [SourceFile(w.candidate.path, w.text, _language(w)) for w in items]
                for batch in plan_batches(
                    files,
                    max_files=int(self.project.config["gemini_batch_files"]),
                    max_chars=int(self.project.config["gemini_batch_chars"]),
                ):
                    works = [by_path[f.path] for f in batch]
                    futures[pool.submit(self._gemini, batch)] = works
            else:
                for w in items:
                    futures[pool.submit(_local, w)] = [w]
            pending = set(futures)
            try:
                while pending:
                    finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                    for future in finished:
                        outcome = future.result()
                        for w in futures[future]:
                            summary, name = outcome[w.candidate.path]
                            if summary is None and self.stop.is_set():
                                continue  # stopped in the middle, not a failure of the file
                            if summary is None:
                                failed(w, name)
                            else:
                                done(w, summary, name)
                            if self.stop.is_set():  # done() embeds and writes: stop between files
                                raise KeyboardInterrupt
                    if self.stop.is_set():
                        raise KeyboardInterrupt
            except BaseException:
                for f in pending:
                    f.cancel()
                raise

    def _gemini(self, batch: list) -> dict[str, tuple[Any, str]]:
        from contextware.codeindex.gemini_summary import summarize_batch

        results: dict[str, Any]
        if self.broken is not None:
            results = {f.path: self.broken for f in batch}
        else:
            cfg = self.project.config
            from contextware.gemini import gemini_workdir

            try:
                cwd = gemini_workdir()
            except OSError as exc:
                error = GeminiError(
                    f"Gemini's working folder could not be created: {exc.strerror or exc}.", code="no_workdir"
                )
                results = {f.path: error for f in batch}
            else:
                results = summarize_batch(
                    batch,
                    cwd=cwd,
                    model=cfg.get("gemini_model") or None,
                    timeout=float(cfg["gemini_timeout_s"]),
                    state_dir=self.project.data_dir / "gemini",
                    rate_limit_per_minute=int(cfg["gemini_requests_per_minute"]),
                    rate_limit_backoff=float(cfg["gemini_rate_limit_backoff_s"]),
                    cancel=self.stop,
                )
        out: dict[str, tuple[Any, str]] = {}
        timed_out = any(isinstance(r, GeminiError) and r.code == "timeout" for r in results.values())
        with self.lock:
            self.timeouts = self.timeouts + 1 if timed_out else 0
        for f in batch:
            result = results.get(f.path)
            if result is not None and not isinstance(result, Exception):
                out[f.path] = (result, "gemini")
                continue
            err = result if isinstance(result, GeminiError) else GeminiError("Gemini returned nothing for this file.")
            if err.code == "interrupted":  # the crawl is stopping: neither a Gemini failure nor a fallback
                out[f.path] = (None, err.message)
                continue
            with self.lock:
                if self.broken is None and (err.code in _PERSISTENT or self.timeouts >= TIMEOUTS_IN_A_ROW):
                    self.broken = err
                self.report.gemini_error = err.message
                if self.mode != "gemini":
                    self.report.fallbacks += 1
            if self.mode == "gemini":
                out[f.path] = (None, err.message)
            else:
                out[f.path] = (_summarize_local(f.path, f.text), "local")
        return out


def _gemini_ready() -> bool:
    from contextware.gemini import gemini_ready

    return gemini_ready()


def _language(w: _Work) -> str | None:
    from contextware.codeindex.languages import detect_language

    return detect_language(w.candidate.path, w.text[:256])


def _summarize_local(path: str, text: str) -> "LocalSummary":
    from contextware.codeindex.local_summary import summarize_local

    return summarize_local(path, text)


def _local(w: _Work) -> dict[str, tuple[Any, str]]:
    return {w.candidate.path: (_summarize_local(w.candidate.path, w.text), "local")}


# -- writing -------------------------------------------------------------------------------------
class _Writer:
    """Collects finished rows and writes them WRITE_BATCH at a time (one commit per batch)."""

    def __init__(self, project: "Project", report: Report) -> None:
        self.project = project
        self.report = report
        self.rows: list[dict] = []
        self.touched: list["Candidate"] = []  # same bytes, new stat: only mtime and size change
        self.removals: list[str] = []

    def add(self, w: _Work, summary: "LocalSummary", summarizer: str) -> None:
        c = w.candidate
        row = {
            "id": c.path,
            "file_path": c.path,
            "language": summary.language,
            "summary": summary.summary,
            "symbols": list(summary.symbols),
            "summarizer": summarizer,
            "mtime": c.mtime,
            "size": c.size,
            "content_hash": w.digest,
            "indexed_at": utcnow(),
        }
        row[FTS_COLUMN] = code_search_text(row, w.text, SEARCH_CONTENT_CHARS)
        row["imports"] = import_words(w.text[:SEARCH_CONTENT_CHARS])
        self.rows.append(row)
        self.report.indexed_files.append(c.path)
        self.report.summarizers[summarizer] += 1
        if len(self.rows) >= WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        rows, touched, removals = self.rows, self.touched, self.removals
        if not (rows or touched or removals):
            return
        self.rows, self.touched, self.removals = [], [], []
        embedder = self.project.embedder
        if rows:
            try:
                vectors = embedder.embed([code_embedding_text(r) for r in rows])
                for row, vec in zip(rows, vectors, strict=False):
                    row["vector"] = vec.tolist()
            except EmbeddingError as exc:
                self.report.degraded = f"{exc.message} Rows were saved without vectors; run `memory.py reembed` later."
                for row in rows:
                    row["vector"] = None
        stamp(CODE_TABLE, rows)

        def write(tbl: Any) -> None:
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
        self.project.db.write(CODE_TABLE, write, dim=embedder.dim, model_id=embedder.model_id)


# -- the pipeline --------------------------------------------------------------------------------
def _run(
    project: "Project",
    candidates: Sequence["Candidate"],
    existing: dict[str, dict],
    report: Report,
    *,
    summarizer: str,
    force: bool,
    upgrade: bool,
    jobs: int | None,
    progress: bool,
    removals: Sequence[str] = (),
) -> None:
    from contextware.codeindex.source_text import read_source

    max_bytes = int(project.config["max_file_bytes"])
    writer = _Writer(project, report)
    writer.removals.extend(removals)
    report.removed_files.extend(removals)
    todo: list[_Work] = []
    for c in candidates:
        report.scanned += 1
        old = existing.get(c.path)
        redo = force or (upgrade and old is not None and old.get("summarizer") != "gemini")
        if old is not None and not redo and old["mtime"] == c.mtime and old["size"] == c.size:
            report.unchanged += 1
            continue
        text, digest, reason = read_source(c, max_bytes)
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
        todo.append(_Work(c, text or "", digest or ""))

    bar = _Progress(len(todo)) if progress and todo and sys.stderr.isatty() else None
    workers = max(1, jobs or int(project.config.get("crawl_jobs") or 0) or min(8, os.cpu_count() or 2))

    def done(w: _Work, summary: "LocalSummary", name: str) -> None:
        writer.add(w, summary, name)
        if bar:
            bar.step()

    def failed(w: _Work, message: str) -> None:
        report.failed.append({"path": w.candidate.path, "error": message})
        if bar:
            bar.step()

    stop = threading.Event()
    # A signal only sets ``stop``: the pipeline stops between files and writes what it finished
    # (a signal in the middle of a write would lose the batch).
    restore = stop_on_signals(stop)
    try:
        _Summarizer(project, "gemini" if upgrade else summarizer, workers, report, stop).run(todo, done, failed)
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
) -> dict:
    """Index the project (or the given files and folders): new and changed files are summarised,
    unchanged ones skipped, rows of deleted or newly ignored files removed."""
    from contextware.codeindex.files import IgnoreRules, list_project_files

    started = time.monotonic()
    summarizer = check_summarizer(summarizer)
    if jobs is not None and not 1 <= jobs <= 64:
        raise UsageError("--jobs must be between 1 and 64.", code="bad_jobs")
    if upgrade:
        _require_gemini("--upgrade")
    elif summarizer == "gemini":
        _require_gemini("--summarizer gemini")
    report = Report()
    listed, explicit = list_project_files(project.root, project.data_dir, paths or None)
    candidates = _drop_bad_names(listed, report)
    for rel, reason in explicit.items():
        report.skipped[reason].append(printable_name(rel))
    existing = _meta(project)
    present = {c.path for c in candidates}
    if paths:  # the given paths as the walker names them (a symlink keeps its own path, not its target's)
        rules = IgnoreRules.load(project.root, project.data_dir)
        scope = [rel for rel in map(rules.relative, paths) if rel is not None]
    else:
        scope = [""]
    gone = sorted(p for p in existing if p not in present and _under(p, scope))
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
    )
    if report.indexed_files or report.removed_files:
        # Fold the new rows into the full-text index (unindexed rows are scanned on every search).
        project.db.compact(CODE_TABLE)
    return report.to_dict(started)


def index_files(
    project: "Project", paths: Sequence[str | Path], *, summarizer: str = "auto", force: bool = False
) -> dict:
    """(Re)index the given files; a file that no longer exists is removed from the index."""
    from contextware.codeindex.files import IgnoreRules, check_file

    started = time.monotonic()
    if not paths:
        raise UsageError("Give at least one file to index.", code="no_paths")
    summarizer = check_summarizer(summarizer)
    if summarizer == "gemini":
        _require_gemini("--summarizer gemini")
    report = Report()
    rules = IgnoreRules.load(project.root, project.data_dir)
    max_bytes = int(project.config["max_file_bytes"])
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
    if not _gemini_ready():
        raise UsageError(
            f"{flag} needs Gemini CLI installed and authenticated (set GEMINI_API_KEY or run `gemini` once to log in).",
            code="gemini_unavailable",
        )
