"""Read models only the browser needs: the dashboard's figures, the code index as a map of folders
and files, and session timelines.  Each reads through the project's database like the CLI does
and never writes."""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from contextware.browser.models import (
    CodeFile,
    Dashboard,
    Definition,
    DuplicatePair,
    IndexedFile,
    OffloadPage,
    OffloadView,
    ReviewQueues,
    ServiceStatus,
    Session,
    Timeline,
    UseRow,
)
from contextware.core.errors import NotFoundError, UsageError
from contextware.core.text import iso, sql_str
from contextware.storage.schemas import CHUNKS_TABLE, CODE_TABLE

if TYPE_CHECKING:
    from contextware.memory.results import MemoryRow
    from contextware.service.messages import ServiceRequest
    from contextware.storage.project import Project

MAX_LINE_COUNT_BYTES = 4_000_000  # a file this large shows its size, not its lines
MAX_FILES_COUNTED = 400  # files of one folder whose lines are counted (the rest show sizes)
MAX_TIMELINE = 2000  # turns of one session shown
SERVICE_TIMEOUT_S = 5.0


def _read(project: "Project", table: str, columns: list[str], where: str | None = None) -> list[dict[str, Any]]:
    tbl = project.db.open_table(table)
    if tbl is None:
        return []
    names = set(tbl.schema.names)
    cols = [c for c in columns if c in names]

    def query() -> list[dict[str, Any]]:
        q = tbl.search().select(cols)
        return (q.where(where) if where else q).limit(None).to_arrow().to_pylist()

    return project.db.read(query)


def _code_rows(project: "Project", columns: list[str], where: str | None = None) -> list[IndexedFile]:
    """Rows of the code index, with those of ``columns`` it has."""
    return [
        cast(IndexedFile, r) for r in _read(project, CODE_TABLE, columns, where)
    ]  # the columns asked for, typed as storage.schemas has them


def service_status(project: "Project") -> ServiceStatus:
    """Whether the project's resident service runs (never starts it)."""
    from contextware.service import client
    from contextware.service.protocol import endpoint

    ep = endpoint(project.data_dir, project.settings)
    try:
        status = client.exchange(ep, {"op": "status"}, timeout=client.STATUS_TIMEOUT_S)
    except client.Unavailable:
        return {"mode": client.mode(project.settings), "running": False}
    answer = {"mode": client.mode(project.settings), **{k: v for k, v in status.items() if k != "ok"}}
    return cast(ServiceStatus, answer)  # the service's ``status`` keys (``resident.server``)


def freshness(project: "Project", row: IndexedFile) -> str:
    """fresh, changed or deleted: the file as it is now against its row."""
    try:
        st = os.stat(project.root / row["file_path"])
    except OSError:
        return "deleted"
    return "fresh" if st.st_mtime == row.get("mtime") and st.st_size == row.get("size") else "changed"


def link_states(project: "Project", collection: str, record_id: str) -> dict[str, str]:
    """Each file a memory names, as the code is now against when it was linked: "unchanged",
    "changed since saved", "not in the code index"; and "edited since indexed" when the file on
    disk moved on from its index row too."""
    mine = _read(project, collection, ["id", "code_links", "code_hashes"], f"id = {sql_str(record_id)}")
    if not mine:
        return {}
    paths = list(mine[0].get("code_links") or [])
    hashes = list(mine[0].get("code_hashes") or [])
    if not paths:
        return {}
    where = f"file_path IN ({', '.join(sql_str(p) for p in paths)})"
    rows = {r["file_path"]: r for r in _code_rows(project, ["file_path", "mtime", "size", "content_hash"], where)}
    out = {}
    for i, path in enumerate(paths):
        row = rows.get(path)
        if row is None:
            out[path] = "not in the code index"
            continue
        linked = hashes[i] if i < len(hashes) else None
        state = "unchanged" if linked is None or linked == row.get("content_hash") else "changed since saved"
        out[path] = state + ("" if freshness(project, row) == "fresh" else "; edited since indexed")
    return out


def dashboard(project: "Project") -> Dashboard:
    """``memory stats`` plus the service, the code index's last crawl and what went stale."""
    from contextware.memory.maintenance import stats
    from contextware.memory.records import list_records

    code = _code_rows(project, ["file_path", "mtime", "size", "indexed_at"])
    last = max((when for r in code if (when := r.get("indexed_at"))), default=None)
    figures = {
        **stats(project),
        "service": service_status(project),
        "code": {
            "files": len(code),
            "stale": sum(freshness(project, r) != "fresh" for r in code),
            "last_crawl": iso(last),
        },
        "stale_memories": list_records(project, stale=True, limit=1)["total"],
        "from_service": False,
    }
    return cast(Dashboard, figures)  # ``memory stats`` keys, untyped where memory returns them


def _from_service(project: "Project", command: str, *argv: str) -> dict[str, Any] | None:
    """The JSON answer of one quick command from the project's running service (never started
    here), or None when none answers."""
    import json

    from contextware.service import client
    from contextware.service.protocol import endpoint

    if client.mode(project.settings) == "off":
        return None
    message: ServiceRequest = {
        "op": "run",
        "id": os.urandom(8).hex(),
        "command": command,
        "argv": [*argv, "--project-root", str(project.root)],
        "prog": f"contextware {command}",
        "cwd": str(project.root),
        "env": client.forwarded_env(project.settings),
        "stdin": None,
    }
    try:
        answer = client.exchange(endpoint(project.data_dir, project.settings), message, SERVICE_TIMEOUT_S)
        out = json.loads(str(answer.get("stdout") or "null")) if answer.get("ok") and answer.get("exit") == 0 else None
    except (client.Unavailable, ValueError):
        return None
    return out if isinstance(out, dict) and out.get("ok") else None


def served_dashboard(project: "Project") -> Dashboard | None:
    """The dashboard's figures from a running resident service (its database is open, its
    LanceDB imported): what the first page shows while this process still loads its own.  Partial:
    changed files need this process's own read of the code index (``code.stale`` is None)."""
    from concurrent.futures import ThreadPoolExecutor

    asks = [("memory", "stats"), ("memory", "list", "--stale", "--limit", "1")]
    with ThreadPoolExecutor(len(asks)) as pool:  # the service answers each on its own thread
        stats, stale = pool.map(lambda argv: _from_service(project, *argv), asks)
    if stats is None or stale is None:
        return None
    code = (stats.get("tables") or {}).get(CODE_TABLE) or {}
    figures = {
        **{k: v for k, v in stats.items() if k != "ok"},
        "service": service_status(project),
        "code": {"files": code.get("rows", 0), "stale": None, "last_crawl": code.get("last_write")},
        "stale_memories": stale.get("total", 0),
        "from_service": True,
    }
    return cast(Dashboard, figures)  # ``memory stats`` as that command prints it


def warm_up(project: "Project") -> None:
    """Import LanceDB and open the tables the pages read (seconds on a cold, busy machine)."""
    for name in (*("facts", "episodes", "logs"), CODE_TABLE):
        project.db.open_table(name)


@dataclass
class Folder:
    path: str
    files: int = 0
    bytes: int = 0
    stale: int = 0
    recalled: int = 0


@dataclass
class FileEntry:
    path: str
    bytes: int
    language: str | None
    state: str
    lines: int | None = None
    recalled: int = 0


@dataclass
class CodeMap:
    folder: str
    folders: list[Folder] = field(default_factory=list)
    files: list[FileEntry] = field(default_factory=list)
    total_files: int = 0
    largest: int = 1  # bytes of the largest entry shown (the scale of the bars)


def _lines(path: Path) -> int | None:
    try:
        if os.path.getsize(path) > MAX_LINE_COUNT_BYTES:
            return None
        with open(path, "rb") as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 16), b""))
    except OSError:
        return None


def clean_folder(folder: str | None) -> str:
    """A project-relative folder as the map names it ("" is the root); no way out of the project."""
    parts = [p for p in (folder or "").replace("\\", "/").split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise UsageError("A folder of the code map is a path inside the project, without '..'.", code="bad_folder")
    return "/".join(parts)


def recall_counts(project: "Project") -> Counter[str]:
    """How often each file went into a prompt's context in the prompt hook's recent turns."""
    from contextware.memory.turns.decisions import recent

    return Counter(
        str(x.get("id"))
        for d in recent(project)
        for x in d.get("injected") or []
        if isinstance(x, dict) and x.get("collection") == CODE_TABLE
    )


def code_map(project: "Project", folder: str | None = None) -> CodeMap:
    """One folder of the code index: its sub-folders (files, bytes, stale files under each) and its
    files (bytes, lines, fresh/changed/deleted), largest first."""
    base = clean_folder(folder)
    prefix = f"{base}/" if base else ""
    rows = _code_rows(project, ["file_path", "mtime", "size", "language"])
    out = CodeMap(base, total_files=len(rows))
    recalled = recall_counts(project)
    folders: dict[str, Folder] = {}
    inside = [r for r in rows if r["file_path"].startswith(prefix)]
    if base and not inside:
        raise NotFoundError(f"No indexed file is under {base}/.")
    for r in inside:
        rest = r["file_path"][len(prefix) :]
        head, sep, _ = rest.partition("/")
        if sep:
            f = folders.setdefault(head, Folder(prefix + head))
            f.files += 1
            f.bytes += int(r.get("size") or 0)
            f.stale += freshness(project, r) != "fresh"
            f.recalled += recalled.get(r["file_path"], 0)
        else:
            state = freshness(project, r)
            entry = FileEntry(r["file_path"], int(r.get("size") or 0), r.get("language"), state)
            entry.recalled = recalled.get(r["file_path"], 0)
            out.files.append(entry)
    out.folders = sorted(folders.values(), key=lambda f: -f.bytes)
    out.files.sort(key=lambda f: -f.bytes)
    for entry in out.files[:MAX_FILES_COUNTED]:
        entry.lines = _lines(project.root / entry.path)
    out.largest = max([1, *(f.bytes for f in out.folders), *(f.bytes for f in out.files)])
    return out


def code_file(project: "Project", path: str) -> CodeFile:
    """One indexed file: its summary and symbols, its definitions (code_chunks) and the memories
    that name it (their ``code_links``)."""
    from contextware.memory.records import public_row
    from contextware.storage.integrity import verify_rows

    rows = _read(
        project,
        CODE_TABLE,
        [
            "id",
            "file_path",
            "language",
            "summary",
            "symbols",
            "summarizer",
            "mtime",
            "size",
            "content_hash",
            "indexed_at",
            "checksum",
            "search_text",
            "imports",
            "questions",
        ],
        f"file_path = {sql_str(path)}",
    )
    if not rows:
        raise NotFoundError(f"The code index has no file {path!r}.")
    verify_rows(CODE_TABLE, rows)
    row = cast(IndexedFile, rows[0])  # the columns asked for, typed as storage.schemas has them
    read = _read(project, CHUNKS_TABLE, ["name", "kind", "start_line", "end_line"], f"file_path = {sql_str(path)}")
    chunks = [cast(Definition, c) for c in read]  # the columns asked for, as the code_chunks table holds them
    chunks.sort(key=lambda c: c.get("start_line") or 0)
    linked = []
    for name in ("facts", "episodes"):
        tbl = project.db.open_table(name)
        if tbl is not None and "code_links" in tbl.schema.names:
            found = _read(
                project,
                name,
                ["id", "text", "goal", "kind", "result", "status", "created_at"],
                f"array_has(code_links, {sql_str(path)})",
            )
            linked += [public_row(cast("MemoryRow", r), name) for r in found]
    return {
        "file_path": row["file_path"],
        "language": row.get("language"),
        "summary": row.get("summary") or "",
        "symbols": list(row.get("symbols") or []),
        "summarizer": row.get("summarizer"),
        "indexed_at": iso(row.get("indexed_at")),
        "size": row.get("size"),
        "state": freshness(project, row),
        "lines": _lines(project.root / row["file_path"]),
        "definitions": chunks,
        "memories": linked,
    }


class _SessionTally(TypedDict):
    """One session while its turns are counted: first and last time still as read."""

    session_id: str
    turns: int
    first: datetime | None
    last: datetime | None


def sessions(project: "Project") -> list[Session]:
    """Captured sessions, newest first: turns, first and last time, and whether a digest exists."""
    by: dict[str, _SessionTally] = {}
    for r in _read(project, "logs", ["session_id", "created_at"]):
        sid = r.get("session_id") or "(none)"
        s = by.setdefault(sid, {"session_id": sid, "turns": 0, "first": None, "last": None})
        s["turns"] += 1
        when = r.get("created_at")
        if when is not None:
            s["first"] = when if s["first"] is None else min(s["first"], when)
            s["last"] = when if s["last"] is None else max(s["last"], when)
    out = sorted(by.values(), key=lambda s: s["last"].timestamp() if s["last"] else 0.0, reverse=True)
    return [
        {"session_id": s["session_id"], "turns": s["turns"], "first": iso(s["first"]), "last": iso(s["last"])}
        for s in out
    ]


def timeline(project: "Project", session_id: str) -> Timeline:
    """One session in order: its captured turns and the episode digesting it (``memory.digest``)."""
    from contextware.memory.records import public_row
    from contextware.storage.integrity import verify_rows

    tbl = project.db.open_table("logs")
    columns = [c for c in (tbl.schema.names if tbl is not None else []) if c not in ("vector", "search_text")]
    turns = _read(project, "logs", columns, f"session_id = {sql_str(session_id)}")
    if not turns:
        raise NotFoundError(f"No captured turn has the session id {session_id!r}.")
    verify_rows("logs", turns)
    turns.sort(key=lambda r: (iso(r.get("created_at")) or "", r.get("chunk_index") or 0))
    ep_tbl = project.db.open_table("episodes")
    ep_cols = [c for c in (ep_tbl.schema.names if ep_tbl is not None else []) if c not in ("vector", "search_text")]
    digests = _read(project, "episodes", ep_cols, f"source = {sql_str('digest:' + session_id)}")
    verify_rows("episodes", digests)
    return {
        "session_id": session_id,
        "turns": [public_row(cast("MemoryRow", r), "logs") for r in turns[:MAX_TIMELINE]],
        "total": len(turns),
        "digests": [public_row(cast("MemoryRow", r), "episodes") for r in digests],
    }


MAX_REVIEWED = 3000  # newest facts compared pairwise, newest user turns read, for the review queues
MAX_QUEUE = 50  # items shown per queue
_KEEPER = re.compile(
    r"\b(we (use|always|never|prefer|decided|agreed|standardi[sz]ed)|always|never|prefer|don'?t|do not|must|"
    r"should(n'?t)?|convention|from now on|remember|make sure|instead of)\b",
    re.I,
)


def worth_keeping(text: str) -> bool:
    """A captured user turn that states how things are done (not a question, not a wall of text)."""
    text = " ".join(text.split())
    return 20 <= len(text) <= 400 and not text.endswith("?") and bool(_KEEPER.search(text))


def review(project: "Project") -> ReviewQueues:
    """The review queues: memories whose code changed (``list --stale``), pairs of active facts
    that say nearly the same (cosine at or over ``similar_threshold``), and captured user turns that
    read like a convention or decision worth saving as a fact."""
    import numpy as np

    from contextware.memory.records import list_records, public_row

    stale = list_records(project, stale=True, limit=MAX_QUEUE)
    from contextware.storage.integrity import hashed_columns, verify_rows

    extra = ["status", "created_at", "checksum"]
    facts = _read(project, "facts", [*hashed_columns("facts"), *extra, "vector"], "status = 'active'")
    verify_rows("facts", facts)
    facts = sorted((f for f in facts if f.get("vector") is not None), key=lambda f: iso(f["created_at"]) or "")[
        -MAX_REVIEWED:
    ]
    pairs: list[DuplicatePair] = []
    if len(facts) > 1:
        threshold = project.config.similar_threshold
        m = np.asarray([f["vector"] for f in facts], dtype=np.float32)
        sims = np.triu(m @ m.T, k=1)
        for i, j in zip(*np.nonzero(sims >= threshold), strict=True):
            pairs.append(
                {
                    "older": public_row(
                        cast("MemoryRow", {k: v for k, v in facts[i].items() if k != "vector"}), "facts"
                    ),
                    "newer": public_row(
                        cast("MemoryRow", {k: v for k, v in facts[j].items() if k != "vector"}), "facts"
                    ),
                    "score": round(float(sims[i, j]), 3),
                }
            )
        pairs.sort(key=lambda p: -p["score"])
    turns = _read(project, "logs", [*hashed_columns("logs"), "created_at", "checksum"], "role = 'user'")
    verify_rows("logs", turns)
    turns.sort(key=lambda r: iso(r.get("created_at")) or "", reverse=True)
    saved = {" ".join(str(f.get("text") or "").split()).lower() for f in facts}
    keep = [
        public_row(cast("MemoryRow", r), "logs")
        for r in turns[:MAX_REVIEWED]
        if worth_keeping(str(r.get("text") or "")) and " ".join(str(r["text"]).split()).lower() not in saved
    ]
    use = _use_queues(project)
    return {
        "unused": use["unused"],
        "used_often": use["used_often"],
        "stale": stale["records"],
        "stale_total": stale["total"],
        "duplicates": pairs[:MAX_QUEUE],
        "duplicates_total": len(pairs),
        "keep": keep[:MAX_QUEUE],
        "keep_total": len(keep),
    }


def _use_queues(project: "Project") -> dict[str, list[UseRow]]:
    """Memories the prompt hook injected often and the agent never used, and those used often
    (``memory.turns.usage``), each with its text when it is still stored."""
    import re

    from contextware.memory.turns import usage

    queues = usage.queues(project.data_dir, limit=MAX_QUEUE)
    ids = sorted({r["id"] for rows in queues.values() for r in rows if re.fullmatch(r"[A-Za-z0-9_.:-]+", r["id"])})
    texts: dict[str, str] = {}
    if ids:
        where = "id IN (" + ", ".join(f"'{i}'" for i in ids) + ")"
        for name, cols in (("facts", ["id", "text"]), ("episodes", ["id", "goal", "summary"])):
            for row in _read(project, name, cols, where):
                texts[row["id"]] = str(row.get("text") or f"{row.get('goal') or ''} → {row.get('summary') or ''}")
    return {k: [cast(UseRow, {**r, "text": texts.get(r["id"])}) for r in rows] for k, rows in queues.items()}


MAX_ANSWER_BYTES = 2_000_000  # a full offload answer shown in the page at most


def offloads(project: "Project", offset: int = 0, limit: int = 50) -> OffloadPage:
    """Offload answers and session turns, newest first (``offloads`` table: the index of the files)."""
    from contextware.offload.table import public_offload
    from contextware.storage.integrity import hashed_columns, verify_rows
    from contextware.storage.schemas import OFFLOADS_TABLE

    rows = _read(project, OFFLOADS_TABLE, [*hashed_columns(OFFLOADS_TABLE), "created_at", "type", "model", "checksum"])
    verify_rows(OFFLOADS_TABLE, rows)
    rows.sort(key=lambda r: iso(r.get("created_at")) or "", reverse=True)
    page = [{"id": r["id"], **public_offload(project, r, prompt_chars=200)} for r in rows[offset : offset + limit]]
    return {"total": len(rows), "offloads": page}


def offload(project: "Project", offload_id: str) -> OffloadView:
    """One offload: its row as recall shows it and its full answer, read from the offload files
    (inside the data dir only, at most ``MAX_ANSWER_BYTES``)."""
    from contextware.offload.files import offloads_dir
    from contextware.offload.table import public_offload
    from contextware.storage.integrity import verify_rows
    from contextware.storage.schemas import OFFLOADS_TABLE

    tbl = project.db.open_table(OFFLOADS_TABLE)
    columns = [c for c in (tbl.schema.names if tbl is not None else []) if c not in ("vector", "search_text")]
    rows = _read(project, OFFLOADS_TABLE, columns, f"id = {sql_str(offload_id)}")
    if not rows:
        raise NotFoundError(f"No offload has the id {offload_id!r}.")
    verify_rows(OFFLOADS_TABLE, rows)
    row = rows[0]
    answer, note = None, None
    base = offloads_dir(project).resolve()
    path = (project.data_dir / str(row.get("response_file") or "")).resolve()
    if not row.get("response_file") or not path.is_relative_to(base) or not path.is_file():
        note = "The full answer's file is missing: `contextware sync check` says what to do."
    elif path.stat().st_size > MAX_ANSWER_BYTES:
        note = f"The full answer is {path.stat().st_size:,} bytes: open {public_offload(project, row)['full_response_path']}."
    else:
        answer = path.read_text(encoding="utf-8", errors="replace")
    view = {
        "id": offload_id,
        "prompt": row.get("prompt"),
        **public_offload(project, row, prompt_chars=10_000),
        "answer": answer,
        "note": note,
    }
    return cast(OffloadView, view)  # ``public_offload``'s keys, untyped where offload returns them
