"""Saving and reading memories: facts, episodes and conversation logs (``edits`` fixes and deletes them).

These plain functions are what the scripts, the console command, the hooks and the MCP server call.
Each returns a JSON-ready dict; each failure is a ``ContextwareError``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, cast

from contextware.core.errors import DamagedDataError, FieldError, NotFoundError, UsageError
from contextware.core.redact import redact, refuse_secret_name, refuse_secret_topics
from contextware.core.text import (
    check_unicode,
    chunk_text,
    iso,
    new_id,
    parse_since,
    parse_topics,
    sql_str,
    sql_time,
    strip_terminal_controls,
    text_hash,
    utcnow,
)
from contextware.memory import provenance
from contextware.memory.code_links import LINKED_COLLECTIONS, link_row, stale_note
from contextware.memory.results import Got, Listed, MemoryRow, PublicRecord, Saved, Similar, Written
from contextware.memory.team.tombstones import changed_after
from contextware.storage.embedded_text import embedding_text, search_text
from contextware.storage.embeddings import embed_texts
from contextware.storage.first_copy import keep_first_copy
from contextware.storage.integrity import CHECKED, stamp, verify_rows
from contextware.storage.schemas import ID_PREFIX, MEMORY_TABLES, EpisodeRow, FactRow, LogRow
from contextware.storage.table_search import vector_rows

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.project import Project

FACT_KINDS = ("preference", "constraint", "decision", "convention", "environment", "note")
RESULTS = ("success", "failure", "partial")
ROLES = ("user", "agent")
COLLECTIONS = {"fact": "facts", "episode": "episodes", "log": "logs"}
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,39}$")
_ID = re.compile(r"^[a-z]+-[0-9a-f]{12}$")
_SESSION = re.compile(r"^[A-Za-z0-9_.:\-]{1,128}$")


# -- validation ----------------------------------------------------------------------------------
def require_text(text: str | None, what: str) -> str:
    if text is None or not text.strip():
        raise UsageError(f"The {what} is empty; give the text to save.", code="empty_content")
    if "\x00" in text:
        raise UsageError(f"The {what} contains NUL bytes; save text, not binary data.", code="bad_content")
    return strip_terminal_controls(check_unicode(text, what)).strip()


def check_choice(value: str | None, allowed: Sequence[str], flag: str) -> str | None:
    if value is None:
        return None
    v = value.strip().lower()
    if v not in allowed:
        raise FieldError(f"Unknown {{field}} {value!r}: use one of {', '.join(allowed)}.", field=_field(flag))
    return v


def check_slug(value: str | None, flag: str) -> str | None:
    if value is None:
        return None
    v = value.strip().lower()
    if not _SLUG.match(v):
        raise FieldError(
            f"{{field}} {value!r} must be a short lowercase word such as test, git or deploy.", field=_field(flag)
        )
    return v


def _field(flag: str) -> str:
    """An input's name from the flag callers pass (``--kind`` -> ``kind``)."""
    return flag.strip("-").replace("-", "_")


def check_id(record_id: str) -> str:
    if not _ID.match(record_id or ""):
        raise NotFoundError(f"No memory has the id {record_id!r} (ids look like fact-1a2b3c4d5e6f).")
    return record_id


def content_id(collection: str, *parts: str, attempt: int = 0) -> str:
    """The id of a new fact or episode, from its kind and text (``fact-`` + 12 hex of a SHA-256), so
    that two clones saving the same memory give it the same id; ``attempt`` n > 0 when the id is
    taken already (by a superseded copy of the same text, say)."""
    import hashlib

    seed = "\x1f".join([ID_PREFIX[collection], *parts, *([str(attempt)] if attempt else [])])
    return f"{ID_PREFIX[collection]}-{hashlib.sha256(seed.encode()).hexdigest()[:12]}"


def _ids_from_content(project: "Project") -> bool:
    """Content ids need the write lock: only under it is "is this id free?" then "append" atomic.  A
    database beyond this data dir (``CONTEXTWARE_DB_URI``: an object store, or one shared by several
    machines) is written by processes that share no lock, so there ids stay random and the first
    committed copy of a text wins (``storage.first_copy``); import folds duplicates into one id."""
    from pathlib import Path

    from contextware.storage.layout import DB_DIR_NAME

    return "://" not in project.db_uri and Path(project.db_uri) == project.data_dir / DB_DIR_NAME


def collection_for_id(record_id: str) -> str | None:
    prefix = record_id.split("-", 1)[0]
    for table, p in ID_PREFIX.items():
        if p == prefix:
            return table
    return None


# -- embedding -----------------------------------------------------------------------------------


# -- saving --------------------------------------------------------------------------------------
def _hash_filter(digest: str, active_only: bool) -> str:
    where = f"text_hash = {sql_str(digest)}"
    if active_only:
        where += " AND (status IS NULL OR status = 'active')"
    return where


def _find_by_hash(table: "Table", digest: str, active_only: bool) -> MemoryRow | None:
    rows: list[MemoryRow] = (
        table.search().where(_hash_filter(digest, active_only)).select(["id"]).limit(1).to_arrow().to_pylist()
    )
    return rows[0] if rows else None


def _similar(project: "Project", collection: str, vector: list[float] | None, exclude: set[str]) -> list[Similar]:
    """The saved memories nearest to ``vector`` at or over ``similar_threshold``.  In the resident
    service the search runs on its in-memory snapshot of the table (one matrix product, kept current by
    its own writes: ``storage.table_search``), so a save does not scan the table."""
    if vector is None:
        return []
    table = project.db.open_table(collection)
    if table is None:
        return []
    threshold = project.config.similar_threshold
    where = "status = 'active'" if collection == "facts" else None
    field = "summary" if collection == "episodes" else "text"
    out: list[Similar] = []
    try:
        nearest = vector_rows(project.db, collection, table, vector, where, 5)
    except DamagedDataError:  # a damaged neighbour is reported by the reads, not by a save
        return []
    for row in nearest:
        score = 1.0 - float(row["_distance"])
        if score >= threshold and row["id"] not in exclude:
            out.append({"id": row["id"], "text": row[field], "score": round(score, 4)})
    return out


def _free_content_id(
    project: "Project", tbl: "Table", collection: str, rows: list[MemoryRow], parts: tuple[str, ...], old: str | None
) -> None:
    """Give ``rows[0]`` the first content id no row of the table holds (nor the fact it supersedes)."""
    for attempt in range(100):
        candidate = content_id(collection, *parts, attempt=attempt)
        if candidate != old and not tbl.search().where(f"id = {sql_str(candidate)}").select(["id"]).limit(1).to_list():
            break
    else:  # pragma: no cover - a hundred copies of one text
        candidate = new_id(ID_PREFIX[collection])
    if rows[0]["id"] != candidate:
        rows[0]["id"] = candidate
        stamp(collection, rows)
    _after_tombstone(project, rows[0])


def _after_tombstone(project: "Project", row: MemoryRow) -> None:
    """A memory saved again after it was deleted is later than its tombstone, also within the same
    second (the memory file keeps seconds, and a tombstone wins a tie)."""
    from datetime import timedelta

    from contextware.core.text import parse_iso
    from contextware.memory.team import tombstones

    stone = tombstones.load(project).get(row["id"]) if project.data_dir.exists() else None
    deleted = parse_iso(stone["deleted_at"]) if stone else None  # ``load`` drops a stone dated in the future
    if deleted is not None and row["updated_at"] < deleted + timedelta(seconds=1) <= utcnow() + tombstones.CLOCK_SKEW:
        row["created_at"] = row["updated_at"] = deleted + timedelta(seconds=1)


def _save_rows(
    project: "Project",
    collection: str,
    rows: list[MemoryRow],
    *,
    dedup_hash: str,
    supersedes: str | None = None,
    redactions: dict[str, int] | None = None,
    id_parts: tuple[str, ...] | None = None,
) -> Saved:
    """The one write path for new memories: dedup, embed, similar, supersede, insert.  With
    ``id_parts`` the row's id comes from its content (``content_id``), chosen under the lock."""
    import pyarrow as pa

    from contextware.memory.branches import learned_again, stamp_learned

    project.ensure_data_dir()
    stamp_learned(project, rows)  # the branch and commit it was learned on, read from .git
    db = project.db
    embedder = project.embedder
    active_only = collection == "facts"

    table = db.open_table(collection)
    if table is not None:
        db.check_model(collection, table, embedder.model_id, embedder.dim)
        existing = db.read(lambda: _find_by_hash(table, dedup_hash, active_only))
        if existing and supersedes is None:
            learned_again(project, collection, existing["id"], rows[0])  # on a second branch: everyone's
            dup = existing["id"]
            if redactions:
                return {"collection": collection, "redacted": redactions, "id": dup, "duplicate_of": dup, "written": 0}
            return {"collection": collection, "id": dup, "duplicate_of": dup, "written": 0}

    vectors, degraded = embed_texts(project.embedder, [embedding_text(collection, r) for r in rows])
    for i, row in enumerate(rows):
        row["vector"] = vectors[i] if vectors else None
        row["search_text"] = search_text(collection, row)  # FTS_COLUMN
    provenance.fill(rows, str(project.root))
    stamp(collection, rows)
    similar = (
        _similar(project, collection, rows[0]["vector"], {supersedes} if supersedes else set())
        if table is not None
        else []
    )

    ids = [r["id"] for r in rows]

    def write(tbl: "Table") -> Written:
        checked = tbl.version  # before the check: a commit at checked + 1 proves none came in between
        found = _find_by_hash(tbl, dedup_hash, active_only)
        if found and supersedes is None:
            return {"id": found["id"], "duplicate_of": found["id"], "written": 0}
        if id_parts is not None:
            _free_content_id(project, tbl, collection, rows, id_parts, supersedes)
            ids[:] = [r["id"] for r in rows]
        data = pa.Table.from_pylist(rows, schema=tbl.schema)
        if supersedes is None:
            committed = tbl.add(data).version
            if committed != checked + 1:  # another writer (no shared lock: an object store) committed meanwhile
                first = keep_first_copy(db, collection, _hash_filter(dedup_hash, active_only), ids, committed)
                if first is not None:
                    return {"id": first, "duplicate_of": first, "written": 0}
            return {"id": rows[0]["id"], "written": len(rows)}
        old = tbl.search().where(f"id = {sql_str(supersedes)}").limit(1).to_list()
        if not old:
            raise NotFoundError(f"No fact has the id {supersedes!r} to supersede.")
        old_row = cast(FactRow, {k: v for k, v in old[0].items() if not k.startswith("_")})
        if old_row.get("status") == "superseded":
            raise UsageError(
                f"Fact {supersedes} is already superseded by {old_row.get('superseded_by')}; supersede that one instead.",
                code="already_superseded",
            )
        old_row["status"] = "superseded"
        old_row["superseded_by"] = rows[0]["id"]
        old_row["updated_at"] = changed_after(old_row.get("updated_at"))
        both = pa.Table.from_pylist([rows[0], old_row], schema=tbl.schema)
        # One commit marks the old fact and inserts the new one: never half-superseded.
        tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(both)
        return {"id": rows[0]["id"], "written": 1, "superseded": supersedes}

    outcome = db.write(collection, write, dim=embedder.dim, model_id=embedder.model_id)
    result: Saved = {"collection": collection, **outcome}
    if redactions:  # before the write's keys, where the JSON shows it
        result = {"collection": collection, "redacted": redactions, **outcome}
    if outcome.get("superseded"):  # replacing a memory is relying on it: its use feedback counts it
        from contextware.memory.turns.usage import relied_on

        relied_on(project.data_dir, [outcome["superseded"]])
    if "duplicate_of" not in outcome:
        result["similar"] = [s for s in similar if s["id"] != outcome["id"]]
        if degraded:
            result["degraded"] = degraded
            result["vector"] = "pending: run `memory.py reembed` once the model loads"
    return result


def _prepare(text: str, what: str) -> tuple[str, dict[str, int]]:
    clean = require_text(text, what)
    return redact(clean)


def save_fact(
    project: "Project",
    text: str,
    *,
    kind: str | None = None,
    topics: str | Iterable[str] | None = None,
    supersedes: str | None = None,
    source: str = "agent",
) -> Saved:
    kind = check_choice(kind, FACT_KINDS, "kind") or "note"
    topic_list = parse_topics(refuse_secret_topics(topics))
    if supersedes is not None:
        check_id(supersedes)
        if collection_for_id(supersedes) != "facts":
            raise FieldError(f"{{field}} takes a fact id; {supersedes} is not a fact.", field="supersedes")
    body, redactions = _prepare(text, "fact")
    limit = project.config.max_fact_chars
    if len(body) > limit:
        raise UsageError(
            f"The fact is {len(body)} characters, over the {limit}-character limit; save a shorter fact, or a log for long text.",
            code="too_long",
        )
    now = utcnow()
    row: FactRow = {
        "id": content_id("facts", kind, text_hash(body)) if _ids_from_content(project) else new_id(ID_PREFIX["facts"]),
        "text": body,
        "kind": kind,
        "topics": topic_list,
        "source": source,
        "created_at": now,
        "updated_at": now,
        "status": "active",
        "supersedes": supersedes,
        "superseded_by": None,
        "text_hash": text_hash(body),
    }
    link_row(project, "facts", row)
    return _save_rows(
        project,
        "facts",
        [row],
        dedup_hash=row["text_hash"],
        supersedes=supersedes,
        redactions=redactions,
        id_parts=(kind, row["text_hash"]) if _ids_from_content(project) else None,
    )


def save_episode(
    project: "Project",
    summary: str,
    *,
    goal: str | None = None,
    result: str | None = None,
    category: str | None = None,
    topics: str | Iterable[str] | None = None,
    source: str = "agent",
) -> Saved:
    if goal is None or not goal.strip():
        raise FieldError("An episode needs a {field}: what the task set out to do.", field="goal", code="missing_goal")
    check_unicode(goal, "goal")
    if result is None:
        raise FieldError(
            "An episode needs a {field}: success, failure or partial.", field="result", code="missing_result"
        )
    outcome = check_choice(result, RESULTS, "result")
    cat = refuse_secret_name(check_slug(category, "category") or "general", "category")
    topic_list = parse_topics(refuse_secret_topics(topics))
    body, redactions = _prepare(summary, "episode summary")
    goal_text, goal_redactions = redact(goal.strip())
    for k, v in goal_redactions.items():
        redactions[k] = redactions.get(k, 0) + v
    limit = project.config.max_episode_chars
    if len(body) + len(goal_text) > limit:
        raise UsageError(
            f"The episode is over the {limit}-character limit; summarise what was done and learned.", code="too_long"
        )
    now = utcnow()
    row: EpisodeRow = {
        "id": (
            content_id("episodes", text_hash(goal_text, outcome or "", body))
            if _ids_from_content(project)
            else new_id(ID_PREFIX["episodes"])
        ),
        "goal": goal_text,
        "result": outcome or "",
        "category": cat,
        "summary": body,
        "topics": topic_list,
        "source": source,
        "created_at": now,
        "updated_at": now,
        "text_hash": text_hash(goal_text, outcome or "", body),
    }
    link_row(project, "episodes", row)
    return _save_rows(
        project,
        "episodes",
        [row],
        dedup_hash=row["text_hash"],
        redactions=redactions,
        id_parts=(row["text_hash"],) if _ids_from_content(project) else None,
    )


def save_log(
    project: "Project",
    text: str,
    *,
    session_id: str | None = None,
    role: str | None = None,
    speaker: str | None = None,
    source: str = "agent",
    prompt: str | None = None,
) -> Saved:
    """A chunk of the conversation.  An agent's answer may carry the user's ``prompt`` it answers:
    the row then is one exchange, found by the question's words and by the answer's."""
    if session_id is None or not _SESSION.match(session_id):
        raise FieldError(
            "A log needs a {field} id (letters, digits, and . _ : -).", field="session", code="missing_session"
        )
    role_v = check_choice(role or "", ROLES, "role") if role else None
    if role_v is None:
        raise FieldError("A log needs a {field}: user or agent.", field="role", code="missing_role")
    speaker_name = redact(" ".join(strip_terminal_controls(speaker).split())[:80])[0] or None if speaker else None
    body, redactions = _prepare(text, "log text")
    session_id, found = redact(session_id, library=False)  # an id is stored and shown: no secret in it
    for k, v in found.items():
        redactions[k] = redactions.get(k, 0) + v
    if len(body) > project.config.max_log_chars:
        raise UsageError(
            f"The log is over {project.config.max_log_chars} characters; save it in parts.", code="too_long"
        )
    asked = None
    if prompt is not None and prompt.strip() and role_v == "agent":
        asked, more = redact(strip_terminal_controls(prompt).strip())  # cleaned like the text it answers
        for kind, n in more.items():
            redactions[kind] = redactions.get(kind, 0) + n
    chunks = chunk_text(body, project.config.log_chunk_chars)
    digest = text_hash(session_id, role_v, body)
    now = utcnow()
    rows: list[LogRow] = [
        {
            "id": new_id(ID_PREFIX["logs"]),
            "session_id": session_id,
            "role": role_v,
            "speaker": speaker_name,
            "text": chunk,
            "chunk_index": i,
            "chunk_count": len(chunks),
            "source": source,
            "created_at": now,
            "updated_at": now,
            "text_hash": f"{digest}:{i}",
            **({"prompt": asked} if asked else {}),
        }
        for i, chunk in enumerate(chunks)
    ]
    written: list[MemoryRow] = list(rows)
    out = _save_rows(project, "logs", written, dedup_hash=f"{digest}:0", redactions=redactions)
    if "duplicate_of" not in out:
        out["ids"] = [str(r["id"]) for r in rows]
        out["chunks"] = len(rows)
    return out


def save(project: "Project", type_: str, content: str, **options: object) -> Saved:
    """Dispatch on the type; inputs that do not apply to it are refused rather than ignored."""
    type_ = check_choice(type_, tuple(COLLECTIONS), "type") or "fact"
    allowed = {
        "fact": {"kind", "topics", "supersedes", "source"},
        "episode": {"goal", "result", "category", "topics", "source"},
        "log": {"session_id", "role", "speaker", "source"},
    }[type_]
    given = {k: v for k, v in options.items() if v not in (None, [], "")}
    extra = sorted(set(given) - allowed)
    if extra:
        names = ["session" if e == "session_id" else e for e in extra]
        also = f" (nor {', '.join(names[1:])})" if names[1:] else ""
        raise FieldError(f"{{field}}{also} does not apply to a {type_}.", field=names[0], code="bad_option")
    savers: dict[str, Callable[..., Saved]] = {"fact": save_fact, "episode": save_episode, "log": save_log}
    func = savers[type_]
    return func(project, content, **given)


# -- reading and fixing -----------------------------------------------------------------------------
PUBLIC_DROP = {
    "vector",
    "search_text",
    "text_hash",
    "checksum",
    "_distance",
    "_score",
    "_relevance_score",
    "_rowid",
    CHECKED,
    "code_hashes",  # code_links: what each linked file was when linked (memory.code_links)
    "linked_at",
}


def public_row(row: MemoryRow, collection: str) -> PublicRecord:
    """The row as shown: its internal columns dropped, its times as ISO text."""
    out: dict[str, object] = {"collection": collection}
    for key, value in row.items():
        if key in PUBLIC_DROP:
            continue
        out[key] = iso(value) if isinstance(value, datetime) else value
    return cast(PublicRecord, out)


def locate(project: "Project", record_id: str) -> tuple[str, "Table", MemoryRow]:
    """The table holding the memory ``record_id``, the open table and the row (checked)."""
    check_id(record_id)
    collection = collection_for_id(record_id)
    table = project.db.open_table(collection) if collection else None
    if collection and table is not None:
        rows = project.db.read(lambda: table.search().where(f"id = {sql_str(record_id)}").limit(1).to_list())
        verify_rows(collection, rows)
        if rows:
            return collection, table, cast(MemoryRow, rows[0])
    raise NotFoundError(f"No memory has the id {record_id}.")


def get(project: "Project", record_id: str) -> Got:
    collection, _, row = locate(project, record_id)
    record: PublicRecord = {**public_row(row, collection), "has_vector": row.get("vector") is not None}
    if collection in LINKED_COLLECTIONS and (note := stale_note(project, collection, cast(FactRow, row))):
        record["may_be_stale"] = note
    return {"record": record}


SUPERSEDED = ("show", "hide", "only")


def list_records(
    project: "Project",
    collection: str | None = None,
    limit: int = 20,
    include_superseded: bool = True,
    *,
    stale: bool = False,
    kind: str | None = None,
    topic: str | None = None,
    source: str | None = None,
    superseded: str | None = None,
    since: str | None = None,
    offset: int = 0,
) -> Listed:
    """Memories, newest first; with ``stale`` only the active facts and episodes whose linked code
    changed, moved or went away since (each with ``may_be_stale``).  ``kind`` (facts), ``topic``
    (facts and episodes) and ``source`` narrow the tables they apply to; ``superseded`` is show,
    hide or only (facts); ``since`` (a date or an age: 7d) keeps newer ones; ``offset`` skips that
    many of the newest (a page)."""
    if limit < 1:
        raise FieldError("{field} must be at least 1.", field="limit")
    if offset < 0:
        raise UsageError("The offset must be 0 or more.", code="bad_offset")
    kind = check_choice(kind, FACT_KINDS, "kind") if kind else None
    topic = check_slug(topic.strip().lower(), "topic") if topic else None
    superseded = check_choice(superseded, SUPERSEDED, "superseded") if superseded else None
    after = parse_since(since) if since else None
    if superseded is None:
        superseded = "show" if include_superseded and not stale else "hide"
    names = [_collection_arg(collection)] if collection else list(MEMORY_TABLES)
    if stale:
        names = [n for n in names if n in LINKED_COLLECTIONS]
    if kind or superseded == "only":
        names = [n for n in names if n == "facts"]
    if topic:
        names = [n for n in names if n in LINKED_COLLECTIONS]
    records: list[PublicRecord] = []
    heads: list[tuple[str, str, str]] = []  # (created_at, table, id): sorted first, read in full by page
    columns_of: dict[str, list[str]] = {}
    for name in names:
        table = project.db.open_table(name)
        if table is None:
            continue
        kept = ("checksum", "code_hashes") if stale else ("checksum",)
        columns_of[name] = [c for c in table.schema.names if c not in PUBLIC_DROP or c in kept]
        where = [f"kind = {sql_str(kind)}"] if kind else []
        where += [f"array_has(topics, {sql_str(topic)})"] if topic else []
        where += [f"source = {sql_str(source)}"] if source else []
        where += [f"created_at >= {sql_time(after.replace(microsecond=0))}"] if after else []
        if name == "facts" and superseded == "hide":
            where.append("(status IS NULL OR status != 'superseded')")
        if name == "facts" and superseded == "only":
            where.append("status = 'superseded'")
        cols = columns_of[name] if stale else ["id", "created_at"]
        rows = _read_rows(project, table, cols, " AND ".join(where))
        if stale:
            verify_rows(name, rows)
            notes = [stale_note(project, name, cast(FactRow, r)) for r in rows]
            records += [{**public_row(r, name), "may_be_stale": n} for r, n in zip(rows, notes, strict=True) if n]
            continue
        heads += [(iso(r["created_at"]) or "", name, r["id"]) for r in rows]
    if stale:
        records.sort(key=lambda r: r.get("created_at") or "", reverse=True)
        page = records[offset : offset + limit]
        return {"count": len(page), "total": len(records), "records": page}
    heads.sort(key=lambda h: h[0], reverse=True)  # stable: ties keep the tables' order
    chosen = heads[offset : offset + limit]
    full: dict[tuple[str, str], PublicRecord] = {}
    for name in {h[1] for h in chosen}:
        ids = [h[2] for h in chosen if h[1] == name]
        table = project.db.open_table(name)
        if table is None:  # dropped since the search: nothing of it to show
            continue
        wanted = set(ids)
        by_id = f"id IN ({', '.join(sql_str(i) for i in ids)})" if len(ids) <= MAX_IN_LIST else ""
        rows = [r for r in _read_rows(project, table, columns_of[name], by_id) if r["id"] in wanted]
        verify_rows(name, rows)
        full.update({(name, r["id"]): public_row(r, name) for r in rows})
    page = [full[(name, rid)] for _, name, rid in chosen if (name, rid) in full]
    return {"count": len(page), "total": len(heads), "records": page}


MAX_IN_LIST = 1000  # ids read by one ``id IN (...)``; a longer page reads its tables whole


def _read_rows(project: "Project", table: "Table", columns: list[str], where: str) -> list[MemoryRow]:
    def read() -> list[MemoryRow]:
        q = table.search().select(columns)
        return (q.where(where) if where else q).limit(None).to_arrow().to_pylist()

    return project.db.read(read)


def _collection_arg(value: str) -> str:
    v = value.strip().lower()
    aliases = {**COLLECTIONS, "memory": "facts"}
    v = aliases.get(v, v)
    if v not in MEMORY_TABLES:
        raise UsageError(f"Unknown collection {value!r}: use one of {', '.join(MEMORY_TABLES)}.", code="bad_collection")
    return v
