"""The one-call briefing of a fresh session (``context.py``, the SessionStart hook, the MCP tool).

Sections in priority order, items added while the rendered markdown stays within the token budget
(estimated at 4 characters a token); the first item that does not fit ends the briefing, so nothing
of lower priority is shown in place of something more important: the project, active constraints and preferences
(verbatim), recent failures and their lessons, code-index coverage and the most central files, open
offload sessions, and the session store's namespaces.  The JSON result holds exactly what the
markdown shows.

"Central" files are those whose module name appears in the import lines of the most other indexed
files (import in-degree, approximated the same way in every language); the ranking is cached per
table version.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.errors import ContextwareError, UsageError
from contextware.storage.integrity import GUARDED, verify_rows
from contextware.storage.schemas import CHECKSUM_COLUMN, CODE_TABLE
from contextware.system import write_atomic
from contextware.text import approx_tokens, cut_at_word, iso

if TYPE_CHECKING:
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


def _rows(project: "Project", table: str, columns: list[str], where: str | None = None) -> list[dict]:
    tbl = project.db.open_table(table)
    if tbl is None:
        return []
    # Rows whose content is shown are checked against their checksum (which needs every guarded
    # column); metadata-only reads (session ids and times) are not.
    guarded = GUARDED.get(table, ())
    check = any(c in guarded and c not in ("id", "file_path", "namespace") for c in columns)
    selected = [*columns, *(c for c in (*guarded, CHECKSUM_COLUMN) if c not in columns)] if check else columns

    def query() -> list[dict]:
        q = tbl.search().select(selected)
        if where:
            q = q.where(where)
        return q.limit(None).to_arrow().to_pylist()

    rows = project.db.read(query)
    if check:
        verify_rows(table, rows)
        rows = [{c: r.get(c) for c in columns} for r in rows]
    return rows


def _sessions(project: "Project") -> dict[str, Any]:
    rows = _rows(project, "logs", ["session_id", "created_at"])
    last: dict[str, Any] = {}
    for r in rows:
        sid, at = r.get("session_id"), r.get("created_at")
        if sid and at and (sid not in last or at > last[sid]):
            last[sid] = at
    if not last:
        return {"session_count": 0, "last_session": None}
    sid = max(last, key=lambda s: last[s])
    return {"session_count": len(last), "last_session": {"id": sid, "at": iso(last[sid])}}


def _facts(project: "Project", kind: str) -> list[dict]:
    rows = _rows(
        project,
        "facts",
        ["id", "text", "kind", "created_at"],
        f"kind = '{kind}' AND (status IS NULL OR status = 'active')",
    )
    rows.sort(key=lambda r: r.get("created_at") or 0, reverse=True)
    return [{"id": r["id"], "text": r["text"]} for r in rows]


def _failures(project: "Project", limit: int = 10) -> list[dict]:
    rows = _rows(
        project,
        "episodes",
        ["id", "goal", "result", "summary", "category", "created_at"],
        "result = 'failure' OR result = 'partial'",
    )
    rows.sort(key=lambda r: r.get("created_at") or 0, reverse=True)
    return [
        {
            "id": r["id"],
            "goal": r["goal"],
            "result": r["result"],
            "lesson": r["summary"],
            "at": iso(r.get("created_at")),
        }
        for r in rows[:limit]
    ]


def _stem(path: str) -> str:
    p = Path(path)
    return (p.parent.name if p.stem == "__init__" else p.stem).lower()


def central_files(project: "Project", version: int | None) -> list[dict]:
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
    mentions: Counter = Counter()
    for r in rows:
        own = _stem(r["file_path"])
        for stem in set(r["imports"]) & by_stem.keys():
            if stem != own:
                for path in by_stem[stem]:
                    mentions[path] += 1
    files = [{"file_path": p, "mentioned_by": n} for p, n in mentions.most_common(CENTRAL_FILES)]
    try:
        write_atomic(cache, json.dumps({"version": version, "files": files}))
    except OSError:
        pass  # a cache: the next briefing computes it again
    return files


def _code(project: "Project") -> dict[str, Any] | None:
    tbl = project.db.open_table(CODE_TABLE)
    if tbl is None:
        return None
    from contextware.codeindex.hits import freshness

    rows = _rows(project, CODE_TABLE, ["file_path", "mtime", "size", "indexed_at", "summary"])
    stale = sum(freshness(project, r) is not None for r in rows)
    last = max((r["indexed_at"] for r in rows if r.get("indexed_at")), default=None)
    summaries = {r["file_path"]: r.get("summary") or "" for r in rows}
    central = central_files(project, tbl.version)
    for c in central:
        c["summary"] = first_sentence(summaries.get(c["file_path"], ""))
    return {"files_indexed": len(rows), "stale": stale, "last_crawl": iso(last), "central_files": central}


def first_sentence(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    out = m.group(1) if m else text
    return cut_at_word(out, limit)


def _offload_sessions(project: "Project") -> list[dict]:
    from contextware.offload.files import SESSION_STATE, SUMMARY, sessions_root

    root = sessions_root(project)
    out = []
    for meta in sorted(root.glob(f"*/{SESSION_STATE}")) if root.is_dir() else []:
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if data.get("closed") or data.get("status") == "closed":
            continue
        try:
            summary = (meta.parent / SUMMARY).read_text(encoding="utf-8")
        except OSError:
            summary = ""
        lines = [ln.strip() for ln in summary.splitlines() if ln.strip() and not ln.startswith("#")][:2]
        turns = data.get("turns")
        out.append(
            {
                "name": data.get("name") or meta.parent.name,
                "turns": len(turns) if isinstance(turns, list) else turns,
                "updated_at": data.get("updated_at"),
                "summary": " ".join(lines)[:240],
            }
        )
    out.sort(key=lambda s: s.get("updated_at") or "", reverse=True)
    return out


def _store(project: "Project") -> list[dict]:
    """Namespaces and their key counts: one column read (the store's limits and access log are not
    needed here, and a bad store setting must not cost the session its briefing)."""
    from contextware.storage.schemas import KV_TABLE

    counts = Counter(r["namespace"] for r in _rows(project, KV_TABLE, ["namespace"]))
    return [{"namespace": n, "keys": k} for n, k in sorted(counts.items())]


# -- rendering within the budget -----------------------------------------------------------------
def render_markdown(ctx: dict) -> str:
    p = ctx["project"]
    lines = [f"# Project memory: {p['name']} ({p['id']})", f"Root: {p['root']}"]
    if p.get("last_session"):
        lines.append(f"Sessions: {p['session_count']}; last {p['last_session']['id']} at {p['last_session']['at']}")
    else:
        lines.append(f"Sessions: {p.get('session_count', 0)}")
    if ctx.get("constraints"):
        lines += ["", "## Constraints (must hold)"] + [f"- {f['text']}" for f in ctx["constraints"]]
    if ctx.get("preferences"):
        lines += ["", "## Preferences"] + [f"- {f['text']}" for f in ctx["preferences"]]
    if ctx.get("failures"):
        lines += ["", "## Recent failures and lessons"]
        lines += [f"- [{f['result']}] {f['goal']}: {f['lesson']}" for f in ctx["failures"]]
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
    if ctx.get("offload_sessions"):
        lines += ["", "## Open offload sessions"]
        lines += [f"- {s['name']} ({s['turns']} turns): {s['summary']}" for s in ctx["offload_sessions"]]
    if ctx.get("store"):
        lines += ["", "## Session store: " + ", ".join(f"{s['namespace']} ({s['keys']})" for s in ctx["store"])]
    if ctx.get("unavailable"):
        lines += ["", "## Unavailable"] + [f"- {name}: {message}" for name, message in ctx["unavailable"].items()]
    return "\n".join(lines)


# The briefing's sections in priority order, each with what reads it.
_SOURCES: tuple[tuple[str, Callable[["Project"], Any]], ...] = (
    ("constraints", lambda p: _facts(p, "constraint")),
    ("preferences", lambda p: _facts(p, "preference")),
    ("failures", _failures),
    ("code_index", _code),
    ("offload_sessions", _offload_sessions),
    ("store", _store),
)
SECTIONS = tuple(name for name, _ in _SOURCES)


def session_context(project: "Project", budget_tokens: int = DEFAULT_BUDGET) -> dict:
    if not 100 <= budget_tokens <= 100_000:
        raise UsageError("--budget-tokens must be between 100 and 100000.", code="bad_budget")
    head = {"id": project.id, "name": project.root.name, "root": str(project.root), **_sessions(project)}
    ctx: dict[str, Any] = {"project": head}
    truncated = False
    unavailable: dict[str, str] = {}
    for name, read in _SOURCES:
        try:
            value = read(project)  # read only when reached: a full budget stops before the costlier sections
        except ContextwareError as exc:  # a damaged table costs its own section, not the briefing
            unavailable[name] = exc.message
            continue
        if not value:
            continue
        if isinstance(value, dict):  # the code index: its figures, then its central files
            items = value.pop("central_files", [])
            ctx[name] = {**value, "central_files": []}
            target = ctx[name]["central_files"]
        else:
            items, ctx[name] = value, []
            target = ctx[name]
        if isinstance(value, dict) and approx_tokens(render_markdown(ctx)) > budget_tokens:
            del ctx[name]
            truncated = True
        for item in [] if truncated else items:
            target.append(item)
            if approx_tokens(render_markdown(ctx)) > budget_tokens:
                target.pop()
                truncated = True
                break
        if name in ctx and not ctx[name]:
            del ctx[name]
        if truncated:  # what did not fit outranks everything after it: stop here
            break
    if unavailable:
        ctx["unavailable"] = unavailable
    return {
        **ctx,
        "budget_tokens": budget_tokens,
        "tokens": approx_tokens(render_markdown(ctx)),
        "truncated": truncated,
    }
