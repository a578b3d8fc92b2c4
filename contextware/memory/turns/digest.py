"""Session digests: what a session asked, decided, did and what failed, kept as one episode
(category ``session``) so that a finished conversation answers in one row.  Built locally and
extractively from the session's captured turns (no model call); rewritten as the session goes on,
after the hook has answered (the capture events are spooled); by Gemini, under a daily token budget,
when retention folds a finished session and the project asks for it (``gemini_digest``).  Its ``source`` is
``digest:<session id>``: the provenance, naming the turns it came from."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from contextware.core.text import cut_at_word, sql_str

if TYPE_CHECKING:
    from contextware.storage.project import Project

MIN_TURNS = 3  # a session shorter than this is its own turns: a digest would only repeat them
MAX_ITEMS = 4  # sentences per part of a digest
SENTENCE_CHARS = 200
# A sentence ends at . ! ? before a space or the end: "CHANGELOG.md" or "e.g" is not an end.
_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?](?=[^\s.!?]))+[.!?]*")
CATEGORY = "session"  # a digest episode's category: labelled "Session summary, <date>", never a success


def is_digest(row: Mapping[str, object]) -> bool:
    """Whether an episode (a row, a recall hit or a briefing item) is a session digest."""
    return row.get("category") == CATEGORY or str(row.get("source") or "").startswith("digest:")


def digest_label(at: object) -> str:
    """What a digest is, for the model and people: ``Session summary, 2026-11-28``."""
    day = at.date().isoformat() if isinstance(at, datetime) else str(at or "")[:10]
    return f"Session summary, {day}" if day else "Session summary"


_CUES = {
    "decided": re.compile(
        r"\b(decided|decision|we(?:'ll| will) use|let's use|going with|switch(?:ed)? to|agreed|prefer|from now on|always|never)\b",
        re.I,
    ),
    "done": re.compile(
        r"\b(done|added|fixed|created|updated|implemented|changed|removed|renamed|wrote|refactored|merged|deployed)\b",
        re.I,
    ),
    "failed": re.compile(
        r"\b(error|failed|fails|failing|failure|traceback|exception|could not|couldn't|cannot|broken|crash(?:ed|es)?)\b",
        re.I,
    ),
}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if len(s.strip()) > 12]


def _pick(texts: list[str], cue: re.Pattern[str]) -> list[str]:
    out: list[str] = []
    for text in texts:
        for s in _sentences(text):
            short = cut_at_word(s, SENTENCE_CHARS)
            if cue.search(s) and short not in out:
                out.append(short)
            if len(out) >= MAX_ITEMS:
                return out
    return out


def build_digest(turns: list[dict[str, Any]]) -> dict[str, str] | None:
    """The episode's fields from a session's turns in order (``role``, ``text``), or None for a
    session too short to need one."""
    asked = [t["text"] for t in turns if t.get("role") == "user" and t.get("text")]
    if len(asked) < MIN_TURNS:
        return None
    said = [t["text"] for t in turns if t.get("text")]
    answers = [t["text"] for t in turns if t.get("role") == "agent" and t.get("text")]
    # Decisions first: they are what a later question most often asks after, and the embedding of a
    # long text leans on its beginning.
    parts = {
        "Decided": _pick(said, _CUES["decided"]),
        "Failed": _pick(said, _CUES["failed"]),
        "Done": _pick(answers, _CUES["done"]),
        "Asked": [cut_at_word((_sentences(a) or [a])[0], SENTENCE_CHARS) for a in asked][:MAX_ITEMS],
    }
    result = "failure" if parts["Failed"] and not parts["Done"] else "partial" if parts["Failed"] else "success"
    summary = " ".join(
        f"{name}: {'; '.join(i.rstrip('.;: ') for i in items)}." for name, items in parts.items() if items
    )
    goal = f"Session of {len(asked)} requests: {parts['Asked'][0]}"
    return {"goal": cut_at_word(goal, 300), "summary": summary, "result": result}


def session_turns(project: "Project", session_id: str) -> list[dict[str, Any]]:
    """The session's captured turns, oldest first (first chunks only: a digest reads openings),
    those retention archived included: a session resumed after it was folded keeps its beginning."""
    from contextware.memory.turns.archive import archived_turns

    rows = archived_turns(project, session_id)
    table = project.db.open_table("logs")
    if table is not None:
        where = f"session_id = {sql_str(session_id)} AND (chunk_index IS NULL OR chunk_index = 0)"
        rows += project.db.read(
            lambda: table.search().where(where).select(["role", "text", "created_at"]).limit(None).to_list()
        )
    return sorted(rows, key=lambda r: (r.get("created_at") is None, r.get("created_at")))


def refresh_digest(project: "Project", session_id: str, *, use_model: bool = False) -> Mapping[str, object] | None:
    """Write (or rewrite) the digest episode of one session; None when the session is too short.
    ``use_model``: written by Gemini when the project asks for it and the day's budget allows
    (``gemini_digest``; never from a hook), ``"by": "gemini"`` in the answer; else extracted here."""
    turns = session_turns(project, session_id)
    fields = build_digest(turns)
    if fields is None:
        return None
    by = "local"
    if use_model:
        from contextware.memory.turns import gemini_digest

        written = gemini_digest.gemini_fields(project, turns) if gemini_digest.wanted(project) else None
        if written is not None:
            fields, by = written, "gemini"
    from contextware.memory import provenance

    with provenance.use("gemini_digest" if by == "gemini" else "digest", session=session_id):
        return {**_store(project, session_id, fields), "by": by}


def _store(project: "Project", session_id: str, fields: dict[str, str]) -> Mapping[str, object]:
    from contextware.memory import edits, records

    source = f"digest:{session_id}"
    table = project.db.open_table("episodes")
    old = []
    if table is not None:
        old = project.db.read(
            lambda: (
                table.search()
                .where(f"source = {sql_str(source)}")
                .select(["id", "goal", "summary", "result"])
                .limit(1)
                .to_list()
            )
        )
    if old and all(old[0].get(k) == fields[k] for k in ("goal", "summary", "result")):
        return {"id": old[0]["id"], "unchanged": True}
    if old:
        updated = edits.update(
            project, old[0]["id"], goal=fields["goal"], summary=fields["summary"], result=fields["result"]
        )
        return updated
    saved = records.save_episode(
        project, fields["summary"], goal=fields["goal"], result=fields["result"], category=CATEGORY, source=source
    )
    return saved
