"""Memories tied to the code they name: a fact or episode naming project files or symbols is linked
to them when saved, and flagged "may be stale" once the code index sees one of those files change,
move or disappear, until someone confirms, updates or supersedes it.

**Linking** (``link_row``: at save, update, import, confirm, and in ``memory repair`` for older
rows): paths (backticked or not, relative, absolute under the root, or a file name only one indexed
file has), dotted names whose module the index holds, and backticked identifiers at most
``MAX_SYMBOL_FILES`` files define; only what the index knows is linked.  The row keeps the paths
(``code_links``), each file's content hash then (``code_hashes``) and when (``linked_at``).

**Staleness is computed on read**, never written onto memories: the code index sits below memory.
A linked path whose row holds another hash changed; a path gone whose hash sits under exactly one
other path moved; a path gone with a ``code_removed`` mark (the one thing the indexer writes for
this) was deleted.  A path gone without a mark (an index rebuilt) is not flagged.

**Cheap on recall's hot path**: a row without links costs one lookup; the index's paths and hashes
are read once per version of its tables (``table_search.version_key``) and shared by every recall.
docs/how-it-works.md says more.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, cast

from contextware.core.text import utcnow
from contextware.memory.results import LinkedRow
from contextware.storage.layout import is_local_uri
from contextware.storage.schemas import CODE_REMOVED_TABLE, CODE_TABLE

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.project import Project

LINKED_COLLECTIONS = ("facts", "episodes")
TEXT_FIELDS = {"facts": ("text",), "episodes": ("goal", "summary")}
MAX_SYMBOL_FILES = 2  # a name defined in more files than this names none of them in particular
MAX_LINKS = 20
REMOTE_TTL_S = 2.0  # how long the code index's state is trusted unasked on an object store
FLAG = "may_be_stale"

_TOKENS = re.compile(r"`([^`\n]{1,300})`|(\S+)")  # a backticked span, or a word
_EDGE = "\"'()[]{}<>,;!?*“”‘’`"
_LINE_SUFFIX = re.compile(r"(?::\d+){1,2}$|#L\d+(?:-L?\d+)?$")
_FILE_NAME = re.compile(r"[\w.\-]+\.[A-Za-z][A-Za-z0-9]{0,9}")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_IDENT = re.compile(r"[A-Za-z_]\w{2,}")


# -- the code index as memory reads it ---------------------------------------------------------------
@dataclass
class _Files:
    """Per indexed path: (content hash, indexed_at); per hash: the paths holding it; per removed
    path: when it left the index."""

    current: dict[str, tuple[str | None, datetime | None]]
    by_hash: dict[str, list[str]]
    removed: dict[str, datetime | None]


@dataclass
class _Names:
    """What linking looks names up in: paths, file names, dotted module paths and symbols."""

    files: set[str]
    by_name: dict[str, list[str]] = field(default_factory=dict)
    modules: dict[str, list[str]] = field(default_factory=dict)
    symbols: dict[str, set[str]] = field(default_factory=dict)  # name (and its last part) -> paths
    defines: dict[str, set[str]] = field(default_factory=dict)  # path -> its symbols


_cache: dict[tuple[str, str], tuple[tuple[object, ...], object, float]] = {}  # slot -> (versions, value, checked at)
_cache_lock = threading.Lock()


def _key(project: "Project", name: str) -> tuple[object, ...] | None:
    from contextware.storage.table_search import version_key

    table = project.db.open_table(name)
    return None if table is None else (name, version_key(project.db, name, table))


Loaded = TypeVar("Loaded")


def _cached(project: "Project", what: str, tables: tuple[str, ...], load: Callable[[], Loaded]) -> Loaded | None:
    """``load()`` once per version of ``tables`` (None when the code index does not exist).  On an
    object store, where asking for the version is a round trip, a value is trusted for
    ``REMOTE_TTL_S`` without asking again (each hit of a recall would ask otherwise)."""
    slot = (project.db.uri, what)
    remote = not is_local_uri(project.db.uri)
    with _cache_lock:
        hit = _cache.get(slot)
    if remote and hit is not None and time.monotonic() - hit[2] < REMOTE_TTL_S:
        return cast("Loaded", hit[1])  # what load() gave for this slot
    key = tuple(_key(project, t) for t in tables)
    if key[0] is None:
        return None
    if hit is not None and hit[0] == key:
        if remote:
            with _cache_lock:
                _cache[slot] = (key, hit[1], time.monotonic())
        return cast("Loaded", hit[1])
    value = load()
    with _cache_lock:
        _cache[slot] = (key, value, time.monotonic())
    return value


def _read(project: "Project", name: str, columns: list[str]) -> dict[str, list[Any]]:
    table = project.db.open_table(name)
    if table is None:
        return {c: [] for c in columns}
    data = project.db.read(lambda: table.search().select(columns).limit(None).to_arrow())
    return {c: data.column(c).to_pylist() for c in columns}


def _files(project: "Project") -> _Files | None:
    def load() -> _Files:
        code = _read(project, CODE_TABLE, ["id", "content_hash", "indexed_at"])
        gone = _read(project, CODE_REMOVED_TABLE, ["id", "removed_at"])
        current = {p: (h, at) for p, h, at in zip(code["id"], code["content_hash"], code["indexed_at"], strict=True)}
        by_hash: dict[str, list[str]] = {}
        for p, (h, _) in current.items():
            if h:
                by_hash.setdefault(h, []).append(p)
        return _Files(current, by_hash, dict(zip(gone["id"], gone["removed_at"], strict=True)))

    files: _Files | None = _cached(project, "files", (CODE_TABLE, CODE_REMOVED_TABLE), load)
    return files


def _module_parts(path: str) -> list[str]:
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if parts and parts[-1] in ("__init__", "mod", "index"):
        parts = parts[:-1]
    return parts


def _names(project: "Project") -> _Names | None:
    def load() -> _Names:
        code = _read(project, CODE_TABLE, ["id", "symbols"])
        names = _Names(set(code["id"]))
        for path, symbols in zip(code["id"], code["symbols"], strict=True):
            names.by_name.setdefault(PurePosixPath(path).name, []).append(path)
            parts = _module_parts(path)
            for start in range(len(parts)):
                names.modules.setdefault(".".join(parts[start:]), []).append(path)
            own = names.defines.setdefault(path, set())
            for symbol in symbols or ():
                own.add(symbol)
                names.symbols.setdefault(symbol, set()).add(path)
                last = symbol.rsplit(".", 1)[-1]
                if last != symbol:
                    names.symbols.setdefault(last, set()).add(path)
        return names

    names: _Names | None = _cached(project, "names", (CODE_TABLE,), load)
    return names


# -- linking --------------------------------------------------------------------------------------------
def _candidates(text: str) -> list[tuple[str, bool]]:
    """(token, backticked) of what the text may name, in order of appearance."""
    out: list[tuple[str, bool]] = []
    for m in _TOKENS.finditer(text):
        span = (m.group(1) or "").strip()
        if span:
            out.append((span, True))
            out += [(t, True) for t in span.split() if t != span]
        elif m.group(2):
            out.append((m.group(2), False))
    cleaned = []
    for token, ticked in out:
        token = token.strip(_EDGE).rstrip(".:").removesuffix("()").replace("::", ".")
        token = _LINE_SUFFIX.sub("", token)
        while token.startswith("./"):
            token = token[2:]
        if len(token) >= 3:
            cleaned.append((token, ticked))
    return cleaned


def _resolve(project: "Project", names: _Names, token: str, ticked: bool) -> list[str]:
    """The indexed files ``token`` names (none when it names nothing the index knows)."""
    if token in names.files:
        return [token]
    if token.startswith("/"):
        try:
            rel = Path(token).relative_to(project.root).as_posix()
        except ValueError:
            return []
        return [rel] if rel in names.files else []
    if "/" not in token and _FILE_NAME.fullmatch(token):
        same = names.by_name.get(token, [])
        if len(same) == 1:
            return same
    if _DOTTED.fullmatch(token):
        parts = token.split(".")
        for k in range(len(parts), 0, -1):
            module, rest = ".".join(parts[:k]), ".".join(parts[k:])
            paths = names.modules.get(module)
            if not paths:
                continue
            if not rest:
                return paths if len(paths) <= MAX_SYMBOL_FILES else []
            found = [p for p in paths if rest in names.defines.get(p, ())]
            if found and len(found) <= MAX_SYMBOL_FILES:
                return found
        defined = names.symbols.get(token, set())
        if 0 < len(defined) <= MAX_SYMBOL_FILES:
            return sorted(defined)
    if ticked and _IDENT.fullmatch(token):
        defined = names.symbols.get(token, set())
        if 0 < len(defined) <= MAX_SYMBOL_FILES:
            return sorted(defined)
    return []


def find_links(project: "Project", texts: Iterable[str | None]) -> list[str] | None:
    """The indexed files the texts name, in order of mention; None when there is no code index."""
    candidates = [c for text in texts if text for c in _candidates(text)]
    if not candidates:
        return [] if project.db.open_table(CODE_TABLE) is not None else None
    names = _names(project)
    if names is None:
        return None
    found: dict[str, None] = {}
    for token, ticked in candidates:
        for path in _resolve(project, names, token, ticked):
            found.setdefault(path, None)
    return list(found)[:MAX_LINKS]


def link_row(project: "Project", collection: str, row: LinkedRow) -> None:
    """Set the row's ``code_links``, ``code_hashes`` and ``linked_at`` from its text and the code
    index now (all null when the project has no code index yet)."""
    if collection not in LINKED_COLLECTIONS:
        return
    paths = find_links(project, (cast("str | None", row.get(f)) for f in TEXT_FIELDS[collection]))
    files = _files(project) if paths else None
    if paths is None:
        row["code_links"] = row["code_hashes"] = row["linked_at"] = None
        return
    if files is not None:
        paths = [p for p in paths if p in files.current]  # removed since the names were read
    row["code_links"] = paths or None
    row["code_hashes"] = [files.current[p][0] or "" for p in paths] if files is not None and paths else None
    row["linked_at"] = utcnow()


def link_rows(project: "Project", collection: str, rows: Iterable[LinkedRow]) -> None:
    for row in rows:
        link_row(project, collection, row)


# -- staleness ----------------------------------------------------------------------------------------------
def _day(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d") if isinstance(value, datetime) else "an unknown date"


def stale_note(project: "Project", collection: str, row: LinkedRow) -> str | None:
    """Why the memory may be stale ("src/http/retry.py changed on 2026-11-20"), or None."""
    links = row.get("code_links")
    if not links or collection not in LINKED_COLLECTIONS:
        return None
    if collection == "facts" and row.get("status") == "superseded":
        return None
    files = _files(project)
    if files is None:
        return None
    hashes = list(row.get("code_hashes") or [])
    notes = []
    elsewhere_learned = _learned_elsewhere(project, row)
    for path, old in zip(links, hashes + [None] * (len(links) - len(hashes)), strict=True):
        now = files.current.get(path)
        if now is not None:
            if old is not None and now[0] != old:
                # learned on another branch: the file is another branch's version, not a change
                notes.append(
                    f"{path} differs on this branch" if elsewhere_learned else f"{path} changed on {_day(now[1])}"
                )
            continue
        removed = files.removed.get(path)
        elsewhere = [p for p in files.by_hash.get(old or "", []) if p not in links]
        if len(elsewhere) == 1:
            notes.append(f"{path} moved to {elsewhere[0]} on {_day(removed or files.current[elsewhere[0]][1])}")
        elif path in files.removed:
            gone = "was deleted" if not (project.root / path).exists() else "left the code index"
            notes.append(f"{path} {gone} on {_day(removed)}")
    return "; ".join(notes) or None


def _learned_elsewhere(project: "Project", row: LinkedRow) -> bool:
    """Whether the memory was learned on another branch than the one checked out (memory.branches)."""
    branch = row.get("branch")
    if not branch:
        return False
    from contextware.storage.gitstate import head

    return head(project.root).branch != branch


class StaleFlag(TypedDict, total=False):
    """``{"may_be_stale": note}`` for a memory whose linked code changed, else empty."""

    may_be_stale: str


class Linked(TypedDict, total=False):
    """What ``link_unlinked`` did: facts and episodes checked and linked (a note without an index)."""

    linked: int
    checked: int
    note: str


def stale_flag(project: "Project", collection: str, row: LinkedRow) -> StaleFlag:
    """``{"may_be_stale": note}`` for a memory whose linked code changed, else ``{}``."""
    note = stale_note(project, collection, row)
    return {"may_be_stale": note} if note else {}


# -- older rows ---------------------------------------------------------------------------------------------
def link_unlinked(project: "Project") -> Linked:
    """Link every fact and episode never linked (saved before links existed, or before the code
    index did): the step ``memory repair`` runs.  Idempotent: linked rows are left alone."""
    import pyarrow as pa

    from contextware.storage.schemas import FTS_COLUMN

    if project.db.open_table(CODE_TABLE) is None:
        return {"linked": 0, "checked": 0, "note": "no code index yet: run crawl, then repair again"}
    out: Linked = {"linked": 0, "checked": 0}
    for name in LINKED_COLLECTIONS:
        table = project.db.open_table(name)
        if table is None:
            continue
        columns = [c for c in table.schema.names if c != FTS_COLUMN]

        def unlinked(t: "Table" = table, c: list[str] = columns) -> list[LinkedRow]:
            return cast("list[LinkedRow]", t.search().where("linked_at IS NULL").select(c).limit(None).to_list())

        rows = project.db.read(unlinked)
        if not rows:
            continue
        rows = [cast(LinkedRow, {k: v for k, v in r.items() if not k.startswith("_")}) for r in rows]
        link_rows(project, name, rows)
        out["checked"] += len(rows)
        out["linked"] += sum(1 for r in rows if r.get("code_links"))
        ids = {r["id"]: r for r in rows}

        def write(tbl: "Table", ids: dict[str, LinkedRow] = ids) -> None:
            from contextware.core.text import sql_str

            # Only rows still unlinked now, with their current content (another writer may have
            # updated one meanwhile): the link columns are the only ones changed.
            where = f"linked_at IS NULL AND id IN ({', '.join(sql_str(i) for i in ids)})"
            fresh = tbl.search().where(where).limit(None).to_list()
            todo: list[dict[str, object]] = []
            for r in fresh:
                linked = ids[r["id"]]
                todo.append(
                    {
                        **{k: v for k, v in r.items() if not k.startswith("_")},
                        "code_links": linked["code_links"],
                        "code_hashes": linked["code_hashes"],
                        "linked_at": linked["linked_at"],
                    }
                )
            if todo:
                data = pa.Table.from_pylist(todo, schema=tbl.schema)
                tbl.merge_insert("id").when_matched_update_all().execute(data)

        project.db.write(name, write)
    return out
