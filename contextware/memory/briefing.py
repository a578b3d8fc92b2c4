"""The one-call briefing of a fresh session (``context.py``, the SessionStart hook, the MCP tool).

Sections in priority order: the project, active constraints, preferences, decisions, conventions,
environment facts and notes (verbatim), open failures and their lessons (a failure that a later success
of the same task resolved is left out), recent successful work, code-index coverage and the most
central files, offload sessions, and the session store's namespaces.  Each group of near-duplicate
facts or episodes (stored vectors at least ``similar_threshold`` alike; nothing is embedded again)
is shown once, as its newest member.  Items are added while the rendered markdown stays within the
token budget: every section's first few items in priority order, then the rest in priority order;
the first item that does not fit ends the briefing, so nothing of lower priority is shown in place
of something more important.  The JSON result holds exactly what the markdown shows.  A fact or
episode whose linked code changed since it was saved carries ``may_be_stale`` (``memory.code_links``;
judged at every briefing, as the code index changes on its own).

"Central" files are those whose module name appears in the import lines of the most other indexed
files (import in-degree, approximated the same way in every language); the ranking is cached per
table version.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, cast

from contextware.core.errors import ContextwareError, FieldError
from contextware.core.system import write_atomic
from contextware.core.text import approx_tokens, cut_at_word, iso, sql_str
from contextware.storage.integrity import hashed_columns, verify_rows
from contextware.storage.layout import is_local_uri
from contextware.storage.schemas import CHECKSUM_COLUMN, CODE_TABLE

if TYPE_CHECKING:
    from contextware.memory.results import (
        BriefEpisode,
        BriefFact,
        Briefing,
        CentralFile,
        CodeIndexBrief,
        LinkedRow,
        OffloadBrief,
        StoreBrief,
    )
    from contextware.storage.project import Project

DEFAULT_BUDGET = 1500
CENTRAL_FILES = 5
_GENERIC_STEMS = frozenset(
    {
        "main",
        "index",
        "utils",
        "util",
        "test",
        "tests",
        "conftest",
        "setup",
        "init",
        "readme",
        "config",
        "types",
        "common",
        "base",
        "core",
        "helpers",
        "constants",
        "models",
        "mod",
        "lib",
    }
)


def _rows(project: "Project", table: str, columns: list[str], where: str | None = None) -> list[dict[str, Any]]:
    tbl = project.db.open_table(table)
    if tbl is None:
        return []
    if table in ("facts", "episodes", "logs"):  # what the hooks may inject unasked: trusted (memory.trust),
        from contextware.memory.branches import recall_wheres  # and seen from this checkout's branch
        from contextware.memory.trust import only_trusted

        where = recall_wheres(project, "current", {table: only_trusted(project, tbl, where)}, unasked=True)[table]
    # Rows whose content is shown are checked against their checksum (which needs every guarded
    # column); metadata-only reads (session ids and times) are not.
    guarded = hashed_columns(table)
    check = any(c in guarded and c not in ("id", "file_path", "namespace") for c in columns)
    selected = [*columns, *(c for c in (*guarded, CHECKSUM_COLUMN) if c not in columns)] if check else columns

    def query() -> list[dict[str, Any]]:
        q = tbl.search().select(selected)
        if where:
            q = q.where(where)
        return q.limit(None).to_arrow().to_pylist()

    rows = project.db.read(query)
    if check:
        verify_rows(table, rows)
        rows = [{c: r.get(c) for c in columns} for r in rows]
    return rows


class LastSession(TypedDict):
    id: str
    at: str


class SessionCounts(TypedDict):
    session_count: int
    last_session: LastSession | None


def _sessions(project: "Project") -> SessionCounts:
    rows = _rows(project, "logs", ["session_id", "created_at"])
    last: dict[str, datetime] = {}
    for r in rows:
        sid, at = r.get("session_id"), r.get("created_at")
        if isinstance(sid, str) and sid and isinstance(at, datetime) and (sid not in last or at > last[sid]):
            last[sid] = at
    if not last:
        return {"session_count": 0, "last_session": None}
    sid = max(last, key=lambda s: last[s])
    return {"session_count": len(last), "last_session": {"id": sid, "at": iso(last[sid]) or ""}}


# Fact kinds in the briefing, most important first, with their headings.  Notes (the kind a plain
# ``save`` gives) come last: a fact the user saved is in the next session's briefing, whatever its kind.
FACT_SECTIONS = (
    ("constraints", "constraint", "Constraints (must hold)"),
    ("preferences", "preference", "Preferences"),
    ("decisions", "decision", "Decisions"),
    ("conventions", "convention", "Conventions"),
    ("environment", "environment", "Environment"),
    ("notes", "note", "Notes"),
)
RECENT_EPISODES = 5
OPEN_FAILURES = 10


def _newest_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r.get("created_at") or datetime.min.replace(tzinfo=timezone.utc), reverse=True)


# A row of any table, with or without its stored ``vector``.
Row = TypeVar("Row", bound=Mapping[str, object])


def collapse(rows: list[Row], threshold: float) -> list[Row]:
    """Rows (newest first) without their near-duplicates: each group of rows whose stored vectors
    are at least ``threshold`` alike is represented by its newest member.  Rows without a vector
    are kept as they are."""
    import numpy as np

    with_vec = [i for i, r in enumerate(rows) if r.get("vector") is not None]
    if not with_vec:
        return list(rows)
    matrix = np.asarray([rows[i]["vector"] for i in with_vec], dtype=np.float32)
    sims = matrix @ matrix.T  # stored vectors are normalised: cosine similarities, in one product
    dropped: set[int] = set()
    kept_vec: list[int] = []
    for j, i in enumerate(with_vec):
        if kept_vec and float(sims[j, kept_vec].max()) >= threshold:
            dropped.add(i)
        else:
            kept_vec.append(j)
    return [r for i, r in enumerate(rows) if i not in dropped]


# What a long-lived process (the resident service) computed from a table at one version: the
# briefing's fact and episode sections, redone only when the table changed (tens of thousands of rows
# cost a second or more to read and collapse; a SessionStart hook runs on every headless turn).
_derived: dict[tuple[str, str], tuple["_Stamp", list[dict[str, object]]]] = {}

# A local table's data files: name, size and modification time of each.
_Files = tuple[tuple[str, int, int], ...]
# What a reused section was computed from: the table's version, the collapse threshold, its data
# files and the branch and commit it was seen from.
_Stamp = tuple[int, float, _Files, tuple[str | None, str | None]]

# An item of a memory section: a fact, or an episode.
Item = TypeVar("Item", "BriefFact", "BriefEpisode")


def _data_files_stamp(db_uri: str, table: str) -> _Files | None:
    """Name, size and mtime of each of a local table's data files: a byte changed in place (bit rot,
    a bad disk) changes no table version, and a reused section would hide it from the row checks.
    None for an object store, so nothing is reused there."""
    if not is_local_uri(db_uri):
        return None
    try:
        with os.scandir(Path(db_uri) / f"{table}.lance" / "data") as entries:
            return tuple(sorted((e.name, *_size_mtime(e)) for e in entries))
    except OSError:
        return None


def _size_mtime(entry: os.DirEntry[str]) -> tuple[int, int]:
    st = entry.stat()
    return st.st_size, st.st_mtime_ns


class _Memory:
    """Active facts and episodes, read once per briefing and collapsed to their newest members."""

    def __init__(self, project: "Project", code: Callable[[], CodeIndexBrief | None]) -> None:
        self.project = project
        self.threshold = project.config.similar_threshold
        self._episode_rows: list[dict[str, Any]] | None = None
        self.code = code  # the code index section (``_code``), read beside the other sections

    def _derive(self, table: str, what: str, compute: Callable[[], list[Item]]) -> list[Item]:
        """``compute()``, or what it gave before for the same table version, threshold and HEAD (the
        branch decides which rows are seen: ``memory.branches``)."""
        from contextware.storage import gitstate

        try:
            tbl = self.project.db.open_table(table)
            files = _data_files_stamp(self.project.db_uri, table)
            head = gitstate.head(self.project.root)
            seen_from = (head.branch, head.commit)
            stamp = (int(tbl.version), self.threshold, files, seen_from) if tbl is not None and files else None
        except Exception:  # noqa: BLE001 - no version, no reuse: computed afresh (errors surface there)
            stamp = None
        slot = (str(self.project.data_dir), f"{table}:{what}")
        cached = _derived.get(slot)
        if stamp is not None and cached is not None and cached[0] == stamp:
            return [cast(Item, dict(r)) for r in cached[1]]  # callers may change what they get: never the kept rows
        value = compute()
        if stamp is not None:
            _derived[slot] = (stamp, [dict(r) for r in value])
        return value

    def _facts(self) -> list[BriefFact]:
        rows = _rows(
            self.project,
            "facts",
            ["id", "text", "kind", "created_at", "vector", *_LINKS],
            "status IS NULL OR status = 'active'",
        )
        collapsed = collapse(_newest_first(rows), self.threshold)  # across kinds: one truth, said once
        return [{"id": r["id"], "text": r["text"], "kind": r["kind"], **_links(r)} for r in collapsed]

    def facts(self, kind: str) -> list[BriefFact]:
        rows = [r for r in self._derive("facts", "active", self._facts) if r.get("kind") == kind]
        return self.flagged("facts", [{"id": r["id"], "text": r["text"], **_links(r)} for r in rows])

    def flagged(self, collection: str, items: list[Item]) -> list[Item]:
        """Items without their links, each flagged ``may_be_stale`` when the code it names changed
        (judged now, not cached with the table: the code index changes on its own)."""
        from contextware.memory.code_links import stale_flag

        out: list[Item] = []
        for item in items:
            links: LinkedRow = {}
            if "code_links" in item:
                links["code_links"] = item.pop("code_links")
            if "code_hashes" in item:
                links["code_hashes"] = item.pop("code_hashes")
            flagged = item.copy()
            if note := stale_flag(self.project, collection, links).get("may_be_stale"):
                flagged["may_be_stale"] = note
            out.append(flagged)
        return out

    def _episodes(self) -> list[dict[str, Any]]:
        if self._episode_rows is None:
            columns = ["id", "goal", "result", "summary", "category", "created_at", "vector", *_LINKS]
            self._episode_rows = _newest_first(_rows(self.project, "episodes", columns))
        return self._episode_rows

    def open_failures(self) -> list[BriefEpisode]:
        rows = self._derive("episodes", "open_failures", lambda: self._open_failures(self._episodes()))
        return self.flagged("episodes", rows)

    def _open_failures(self, rows: list[dict[str, Any]]) -> list[BriefEpisode]:
        """Failed or partial tasks, newest first, near-duplicates collapsed, without those that a later
        success of a near-duplicate task resolved (one matrix product: failures x successes)."""
        import numpy as np

        failed = [i for i, r in enumerate(rows) if r["result"] != "success"]
        won = [i for i, r in enumerate(rows) if r["result"] == "success" and r.get("vector") is not None]
        resolved: set[int] = set()
        probe = [i for i in failed if rows[i].get("vector") is not None]
        if probe and won:
            sims = (
                np.asarray([rows[i]["vector"] for i in probe], dtype=np.float32)
                @ np.asarray([rows[i]["vector"] for i in won], dtype=np.float32).T
            )
            later = np.asarray(won)[None, :] < np.asarray(probe)[:, None]  # newest first: a lower index is later
            hit = ((sims >= self.threshold) & later).any(axis=1)
            resolved = {i for i, h in zip(probe, hit.tolist(), strict=True) if h}
        out = [rows[i] for i in failed if i not in resolved]
        return [_episode(r, "lesson") for r in collapse(out, self.threshold)[:OPEN_FAILURES]]

    def recent(self) -> list[BriefEpisode]:
        def compute() -> list[BriefEpisode]:
            done = [r for r in self._episodes() if r["result"] == "success"]
            return [_episode(r, "summary") for r in collapse(done, self.threshold)[:RECENT_EPISODES]]

        return self.flagged("episodes", self._derive("episodes", "recent", compute))


# The columns tying a memory to code (``memory.code_links``), carried with cached items and judged
# when the briefing is made.
_LINKS = ("code_links", "code_hashes")


class _Links(TypedDict):
    code_links: list[str] | None
    code_hashes: list[str] | None


def _links(r: Mapping[str, Any]) -> _Links:
    return {"code_links": r.get("code_links"), "code_hashes": r.get("code_hashes")}


def _episode(r: dict[str, Any], text_key: str) -> BriefEpisode:
    """An episode row as the briefing shows it, its summary under ``text_key`` (lesson or summary)."""
    if text_key == "lesson":
        return {
            "id": r["id"],
            "goal": r["goal"],
            "result": r["result"],
            "category": r.get("category"),
            "lesson": r["summary"],
            "at": iso(r.get("created_at")),
            **_links(r),
        }
    return {
        "id": r["id"],
        "goal": r["goal"],
        "result": r["result"],
        "category": r.get("category"),
        "summary": r["summary"],
        "at": iso(r.get("created_at")),
        **_links(r),
    }


def _stem(path: str) -> str:
    p = Path(path)
    return (p.parent.name if p.stem == "__init__" else p.stem).lower()


def central_files(project: "Project", version: int | None) -> list[CentralFile]:
    cache = project.data_dir / "cache" / "central_files.json"
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached.get("version") == version and version is not None:
            return cached["files"]
    except (OSError, ValueError):
        pass
    from contextware.storage.embedded_text import import_words

    rows = _rows(project, CODE_TABLE, ["file_path", "imports"])
    if any(r["imports"] is None for r in rows):  # indexed before the column existed: read the text
        texts = {
            r["file_path"]: r["search_text"]
            for r in _rows(project, CODE_TABLE, ["file_path", "search_text"], "imports IS NULL")
        }
        for r in rows:
            if r["imports"] is None:
                r["imports"] = import_words(texts.get(r["file_path"]) or "")
    by_stem: dict[str, list[str]] = {}
    for r in rows:
        stem = _stem(r["file_path"])
        if len(stem) >= 4 and stem not in _GENERIC_STEMS:
            by_stem.setdefault(stem, []).append(r["file_path"])
    mentions: Counter[str] = Counter()
    for r in rows:
        own = _stem(r["file_path"])
        for stem in set(r["imports"]) & by_stem.keys():
            if stem != own:
                for path in by_stem[stem]:
                    mentions[path] += 1
    files: list[CentralFile] = [{"file_path": p, "mentioned_by": n} for p, n in mentions.most_common(CENTRAL_FILES)]
    try:
        write_atomic(cache, json.dumps({"version": version, "files": files}))
    except OSError:
        pass  # a cache: the next briefing computes it again
    return files


def _code(project: "Project") -> CodeIndexBrief | None:
    tbl = project.db.open_table(CODE_TABLE)
    if tbl is None:
        return None
    from contextware.codeindex.hits import freshness

    # The figures need no stored text, so every row is read without its summary; only the summaries
    # shown (the central files') are read with their checksums and checked: checking all 300 rows
    # of a project cost a third of a warm session start.
    rows = _rows(project, CODE_TABLE, ["file_path", "mtime", "size", "indexed_at"])
    stale = sum(freshness(project, r) is not None for r in rows)
    last = max((r["indexed_at"] for r in rows if r.get("indexed_at")), default=None)
    central = central_files(project, tbl.version)
    summaries: dict[str, str] = {}
    if central:
        where = "file_path IN (" + ", ".join(sql_str(c["file_path"]) for c in central) + ")"
        shown = _rows(project, CODE_TABLE, ["file_path", "summary"], where)
        summaries = {r["file_path"]: r.get("summary") or "" for r in shown}
    for c in central:
        c["summary"] = first_sentence(summaries.get(c["file_path"], ""))
    return {"files_indexed": len(rows), "stale": stale, "last_crawl": iso(last), "central_files": central}


def first_sentence(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    out = m.group(1) if m else text
    return cut_at_word(out, limit)


def _offload_sessions(project: "Project") -> list[OffloadBrief]:
    """Offload sessions, most recently used first, as the sessions module lists them."""
    from contextware.offload.session_admin import session_list

    out: list[OffloadBrief] = []
    for sess in session_list(project)["sessions"]:
        lines = [ln.strip() for ln in (sess.get("summary") or "").splitlines() if ln.strip() and not ln.startswith("#")]
        out.append(
            {
                "name": sess["name"],
                "turns": sess["turns"],
                "updated_at": sess.get("updated_at"),
                "summary": cut_at_word(" ".join(lines[:2]), 240),
            }
        )
    return out


def _store(project: "Project") -> list[StoreBrief]:
    """Namespaces and their key counts: one column read (the store's limits and access log are not
    needed here, and a bad store setting must not cost the session its briefing)."""
    from contextware.storage.schemas import KV_TABLE

    counts = Counter(r["namespace"] for r in _rows(project, KV_TABLE, ["namespace"]))
    return [{"namespace": n, "keys": k} for n, k in sorted(counts.items())]


# -- rendering within the budget -----------------------------------------------------------------
def render_markdown(ctx: Briefing) -> str:
    """The briefing as markdown: a heading per section, an item per line."""
    p = ctx["project"]
    on = f" (branch {p['branch']})" if p.get("branch") else ""
    lines = [f"# Project memory: {p['name']} ({p['id']})", f"Root: {p['root']}{on}"]
    if last := p.get("last_session"):
        lines.append(f"Sessions: {p['session_count']}; last {last['id']} at {last['at']}")
    else:
        lines.append(f"Sessions: {p.get('session_count', 0)}")
    for name, _kind, heading in FACT_SECTIONS:
        if items := cast("list[BriefFact] | None", ctx.get(name)):
            lines += ["", f"## {heading}"] + [f"- {f['text']}{_stale(f)}" for f in items]
    if failures := ctx.get("failures"):
        lines += ["", "## Open failures and lessons"]
        lines += [f"- {_episode_head(f)}: {f['lesson']}{_stale(f)}" for f in failures]
    if recent := ctx.get("recent_episodes"):
        lines += ["", "## Recent work"]
        lines += [f"- {_episode_head(e, False)}: {e['summary']}{_stale(e)}" for e in recent]
    code = ctx.get("code_index")
    if code:
        lines += [
            "",
            f"## Code index: {code['files_indexed']} files, {code['stale']} stale, last crawl {code['last_crawl']}",
        ]
        lines += [
            f"- {c['file_path']} (mentioned by {c['mentioned_by']}): {c.get('summary', '')}"
            for c in code.get("central_files", [])
        ]
    if offloads := ctx.get("offload_sessions"):
        lines += ["", "## Open offload sessions"]
        lines += [f"- {s['name']} ({s['turns']} turns): {s['summary']}" for s in offloads]
    if store := ctx.get("store"):
        lines += ["", "## Session store: " + ", ".join(f"{s['namespace']} ({s['keys']})" for s in store)]
    if unavailable := ctx.get("unavailable"):
        lines += ["", "## Unavailable"] + [f"- {name}: {message}" for name, message in unavailable.items()]
    return "\n".join(lines)


# The briefing's sections in priority order, each with what reads it and how many of its items are
# placed before the next section's first ones (None: all).  Items join one queue: every section's
# first items in order, then the rest in order; the first item that does not fit the budget ends
# the briefing, so nothing is shown in place of something more important.
_SOURCES: tuple[tuple[str, Callable[[_Memory], Any], int | None], ...] = (
    *((name, (lambda m, k=kind: m.facts(k)), 3 if kind != "constraint" else None) for name, kind, _ in FACT_SECTIONS),
    ("failures", lambda m: m.open_failures(), 3),
    ("recent_episodes", lambda m: m.recent(), 2),
    ("code_index", lambda m: m.code(), 3),
    ("offload_sessions", lambda m: _offload_sessions(m.project), 2),
    ("store", lambda m: _store(m.project), None),
)
SECTIONS = tuple(name for name, _, _ in _SOURCES)


def session_context(project: "Project", budget_tokens: int = DEFAULT_BUDGET) -> Briefing:
    """The session briefing within ``budget_tokens``, the most important sections first."""
    if not 100 <= budget_tokens <= 100_000:
        raise FieldError("{field} must be between 100 and 100000.", field="budget_tokens", code="bad_budget")
    from concurrent.futures import ThreadPoolExecutor

    # The two table scans that are never reused run beside the sections (each mostly waits in
    # LanceDB's native code); the pool is joined before returning.
    with ThreadPoolExecutor(max_workers=2) as pool:
        sessions = pool.submit(_sessions, project)
        code = pool.submit(_code, project)
        return _assemble(project, budget_tokens, sessions.result(), _Memory(project, code.result))


def _assemble(project: "Project", budget_tokens: int, sessions: SessionCounts, memory: _Memory) -> Briefing:
    from contextware.storage import gitstate

    branch = gitstate.head(project.root).branch  # the memories shown are the ones this branch sees
    head = {"id": project.id, "name": project.root.name, "root": str(project.root), "branch": branch, **sessions}
    ctx: dict[str, Any] = {"project": head}
    unavailable: dict[str, str] = {}
    first: list[tuple[str, Any]] = []
    rest: list[tuple[str, Any]] = []
    shells: dict[str, Any] = {}
    for name, read, quota in _SOURCES:
        try:
            value = read(memory)
        except ContextwareError as exc:  # a damaged table costs its own section, not the briefing
            unavailable[name] = exc.message
            continue
        if not value:
            continue
        if isinstance(value, dict):  # the code index: its figures (an item of their own), then its central files
            items = value.pop("central_files", [])
            shells[name] = value
            first.append((name, None))
        else:
            items = value
        cut = len(items) if quota is None else quota
        first += [(name, item) for item in items[:cut]]
        rest += [(name, item) for item in items[cut:]]
    truncated = False
    for name, item in first + rest:
        if item is None:
            ctx[name] = {**shells[name], "central_files": []}
        else:
            target = ctx[name]["central_files"] if name in shells else ctx.setdefault(name, [])
            target.append(item)
        if approx_tokens(render_markdown(_ordered(ctx))) > budget_tokens:
            if item is None:
                del ctx[name]
            else:
                target.pop()
                if not target and name not in shells:
                    del ctx[name]
            truncated = True
            break
    brief = _ordered(ctx)
    if unavailable:
        brief["unavailable"] = unavailable
    return {
        **brief,
        "budget_tokens": budget_tokens,
        "tokens": approx_tokens(render_markdown(brief)),
        "truncated": truncated,
    }


def _episode_head(e: BriefEpisode, with_result: bool = True) -> str:
    """An episode's head in the briefing: a session digest says what it is ("Session summary,
    <date>"), never a success or a failure; another episode its result and goal."""
    from contextware.memory.turns.digest import digest_label, is_digest

    if is_digest(cast("Mapping[str, object]", e)):
        return digest_label(e.get("at"))
    return f"[{e['result']}] {e['goal']}" if with_result else e["goal"]


def _stale(item: BriefFact | BriefEpisode) -> str:
    """The flag of a memory whose code changed since it was saved (``memory.code_links``)."""
    return f" (may be stale: {item['may_be_stale']})" if item.get("may_be_stale") else ""


def render_fenced(ctx: Briefing, limit: int | None = None) -> str:
    """The briefing as markdown inside the memory fence (``contextware.core.fence``), every stored text on
    one line: what ``context.py --format text``, the MCP tool and the SessionStart hook show."""
    from contextware.core.fence import fence, inline_all

    return fence(render_markdown(inline_all(ctx)), limit)


def _ordered(ctx: dict[str, Any]) -> Briefing:
    """The sections in priority order (items were added in queue order)."""
    ordered = {"project": ctx["project"], **{name: ctx[name] for name in SECTIONS if name in ctx}}
    return cast("Briefing", ordered)  # the sections by name, each of its declared shape
