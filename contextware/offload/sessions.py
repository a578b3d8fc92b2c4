"""Multi-turn offloads: named sessions (``--session NAME``), feature sessions (``--feature F``) and
``--resume-id ID``.

A session is ``offloads/sessions/<name>/``: one ``full_response-<ISO8601>.md`` per turn, ``session.json``
(turns, tokens, the current Gemini session id and its history, the error count) and ``summary.md``, the
cumulative summary of what has been learned, which is what a turn returns.  The Gemini session behind
it runs under our own id (``cw_<name>_<hex>``, ``offload.files.new_gemini_session_id``), written to
``session.json`` *before* the call, so a crash mid-call loses nothing: the next call resumes that id,
or starts it if the CLI never created it.  Policies (configurable, see config.DEFAULTS):

- errors and timeouts: each bumps ``error_count``; the call is retried after ``error_count x
  offload_retry_backoff_s`` seconds; after ``offload_max_errors`` consecutive failures on one Gemini
  session it is dropped and a new one started (at most that many + 1 attempts per call);
- context: when the prompt tokens of the latest call pass ``offload_session_max_tokens``, the next
  turn starts a new Gemini session seeded with the cumulative summary;
- lost state: a feature whose ``session.json`` is gone adopts the most recent Gemini session of the
  last ``offload_recovery_days`` whose id or title names it; an id the CLI no longer knows (exit 42)
  means starting fresh;
- ``--resume-id``: continue exactly that Gemini session; no retries, no rotation.  The first prompt
  of every Gemini session of a feature starts with ``[Feature: F]``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.core.errors import GeminiError, UsageError
from contextware.core.text import cut_at_word, iso, utcnow
from contextware.offload.files import (
    SESSION_STATE,
    SUMMARY,
    TURN_PREFIX,
    data_relative,
    display_path,
    entry_lock,
    gemini_id_prefix,
    gemini_options,
    new_gemini_session_id,
    read_json,
    read_text,
    redact_texts,
    session_dir,
    turn_file_name,
    turn_file_time,
    write_json,
    write_text,
)
from contextware.offload.shield import offload_policy
from contextware.offload.sources import Sources, build_stdin, text_sha256
from contextware.offload.table import make_row, row_id, write_rows

if TYPE_CHECKING:
    from contextware.gemini.output import GeminiResult
    from contextware.storage.project import Project
    from contextware.storage.schemas import OffloadRow

STATE_VERSION = 1
# Failures that retrying or a new session cannot fix: raised at once, not counted.
PERSISTENT = {"auth", "untrusted_folder", "config", "gemini_not_installed", "sandbox", "input_too_large", "bad_request"}
_AGE_RE = re.compile(r"^(\d+)\s+(minute|hour|day)s?\s+ago$", re.I)
_sleep = time.sleep  # tests replace it to check the back-off without waiting


# -- state ---------------------------------------------------------------------------------------
def _new_state(name: str, feature: str | None) -> dict[str, Any]:
    now = iso(utcnow())
    return {
        "version": STATE_VERSION,
        "name": name,
        "feature": feature,
        "created_at": now,
        "updated_at": now,
        "gemini_session_id": None,
        "gemini_started": False,
        "gemini_sessions": [],
        "error_count": 0,
        "session_errors": 0,
        "last_error": None,
        "rotate": None,
        "context_tokens": 0,
        "tokens": {},
        "topics": [],
        "turns": [],
        "summary_method": None,
    }


def load_state(sdir: Path) -> dict[str, Any] | None:
    """``session.json`` with turns whose files exist, plus turn files it does not list (a crash
    between writing a turn and recording it); None when neither state nor turns exist."""
    state = read_json(sdir / SESSION_STATE)
    files = sorted(p.name for p in sdir.glob(f"{TURN_PREFIX}*.md")) if sdir.is_dir() else []
    if state is None and not files:
        return None
    if state is None:
        state = _new_state(sdir.name, None)
        state["recovered_from_files"] = True
    state.setdefault("turns", [])
    known = {t.get("file") for t in state["turns"]}
    for name in files:
        if name not in known:
            when = turn_file_time(name)
            state["turns"].append(
                {
                    "file": name,
                    "prompt": "",
                    "created_at": iso(when) if when else None,
                    "summary": None,
                    "summary_method": None,
                    "token_count": None,
                }
            )
    state["turns"] = [t for t in state["turns"] if t.get("file") in files]
    state["turns"].sort(key=lambda t: t["file"])
    for i, turn in enumerate(state["turns"], 1):
        turn["turn"] = i
    return state


def _save(sdir: Path, state: dict[str, Any]) -> None:
    state["updated_at"] = iso(utcnow())
    write_json(sdir / SESSION_STATE, state)


def _start_new(state: dict[str, Any], reason: str) -> None:
    sid = new_gemini_session_id(state["name"])
    state["gemini_sessions"].append(
        {"id": sid, "started_at": iso(utcnow()), "reason": reason, "replaces": state.get("gemini_session_id")}
    )
    state.update(gemini_session_id=sid, gemini_started=False, session_errors=0, rotate=None, context_tokens=0)


# -- recovery ------------------------------------------------------------------------------------
def age_minutes(age: str) -> float | None:
    """Minutes in Gemini CLI's relative times ("Just now", "5 minutes ago", "2 days ago")."""
    text = age.split(",")[0].strip()
    if text.lower() == "just now":
        return 0.0
    m = _AGE_RE.match(text)
    if not m:
        return None
    return int(m[1]) * {"minute": 1, "hour": 60, "day": 1440}[m[2].lower()]


def find_recoverable(sessions: Sequence[Any], name: str, feature: str, days: float) -> str | None:
    """The most recent of ``sessions`` (gemini.GeminiSession, oldest first) of the last ``days`` whose
    id has our prefix for ``name`` or whose title names ``feature``; id matches win."""
    prefix = gemini_id_prefix(name)
    word = re.compile(r"(?<![A-Za-z0-9])" + re.escape(feature) + r"(?![A-Za-z0-9])", re.I)
    best: tuple[int, float, int] | None = None
    chosen = None
    for s in sessions:
        minutes = age_minutes(s.age)
        if minutes is None or minutes > days * 1440:
            continue
        by_id = s.session_id.startswith(prefix)
        if not by_id and not word.search(s.title or ""):
            continue
        rank = (0 if by_id else 1, minutes, -s.index)
        if best is None or rank < best:
            best, chosen = rank, s.session_id
    return chosen


def _recover(project: "Project", state: dict[str, Any], feature: str) -> str | None:
    from contextware.gemini.sessions import list_sessions

    try:
        sessions = list_sessions(cwd=project.root, timeout=project.config.gemini_timeout_s)
    except GeminiError as exc:
        state["recovery_error"] = exc.message
        return None
    found = find_recoverable(sessions, state["name"], feature, project.config.offload_recovery_days)
    if found:
        state["gemini_sessions"].append(
            {"id": found, "started_at": None, "reason": "recovered from Gemini CLI's session list", "replaces": None}
        )
        state.update(gemini_session_id=found, gemini_started=True, session_errors=0, rotate=None)
    return found


# -- the call ------------------------------------------------------------------------------------
def _lead(sdir: Path, state: dict[str, Any]) -> str:
    """What the first prompt of a new Gemini session carries: the feature tag, and the summary of
    earlier turns when the session replaces another."""
    parts = [f"[Feature: {state['feature']}]"] if state.get("feature") else []
    summary = read_text(sdir / SUMMARY) if state["turns"] else None
    if summary and summary.strip():
        parts.append(
            "What this research has established so far (summary of earlier turns, from a previous "
            f"Gemini session):\n{summary.strip()}"
        )
    return "\n\n".join(parts)


def _call(
    project: "Project",
    sdir: Path,
    state: dict[str, Any],
    prompt: str,
    sources: Sources,
    texts: dict[str, str],
    model: str | None,
    override: bool,
) -> tuple["GeminiResult", dict[str, Any]]:
    from contextware.gemini.headless import run_gemini

    cfg = project.config
    max_errors = max(1, cfg.offload_max_errors)
    backoff = cfg.offload_retry_backoff_s
    attempts_left = max_errors + 1
    info: dict[str, Any] = {"errors": []}
    restarted = switched = False
    while True:
        if not override and (state.get("gemini_session_id") is None or state.get("rotate")):
            _start_new(state, state.get("rotate") or ("first turn" if not state["turns"] else "no Gemini session"))
        sid, started = state["gemini_session_id"], bool(state.get("gemini_started"))
        lead = "" if (started or override) else _lead(sdir, state)
        stdin = build_stdin(sources, texts, lead=lead)
        if not override:
            _save(sdir, state)  # the id is on disk before the CLI creates the session
        try:
            result = run_gemini(
                prompt,
                stdin_text=stdin,
                model=model,
                include_dirs=[str(p) for p in sources.dir_paths],
                session_id=None if started else sid,
                resume=sid if started else None,
                cwd=project.root,
                policy=offload_policy(project, sources.dir_paths),  # what Gemini's own tools may not read
                **gemini_options(project),
            )
        except GeminiError as exc:
            if exc.code == "session_exists" and not started and not switched:
                state["gemini_started"] = switched = True  # created by a call that crashed: continue it
                continue
            if exc.code == "unknown_session":
                if override:
                    raise UsageError(
                        f"Gemini CLI does not know the session {sid} (run `gemini --list-sessions` in "
                        "the project to see its sessions).",
                        code="unknown_session",
                    ) from None
                if not restarted:
                    restarted = True
                    state["rotate"] = f"Gemini CLI no longer knows session {sid}"
                    continue
            if override or exc.code in PERSISTENT:
                if not override:
                    _save(sdir, state)
                raise
            state["error_count"] = int(state.get("error_count") or 0) + 1
            state["session_errors"] = int(state.get("session_errors") or 0) + 1
            state["last_error"] = {"code": exc.code, "message": exc.message, "at": iso(utcnow())}
            info["errors"].append(exc.message)
            attempts_left -= 1
            if state["session_errors"] >= max_errors:
                state["rotate"] = f"{state['session_errors']} consecutive errors or timeouts"
            _save(sdir, state)
            if attempts_left <= 0:
                raise
            _sleep(state["error_count"] * backoff)
            continue
        info.update(
            new_gemini_session=not started,
            reason=(state["gemini_sessions"][-1].get("reason") if not started and state["gemini_sessions"] else None),
        )
        state.update(
            gemini_started=True,
            error_count=0,
            session_errors=0,
            last_error=None,
            rotate=None,
            context_tokens=result.prompt_tokens,
        )
        if result.session_id and state.get("gemini_session_id") != result.session_id:
            state["gemini_session_id"] = result.session_id  # --resume-id, or a new id after a refused try
        limit = cfg.offload_session_max_tokens
        if result.prompt_tokens > limit and not override:
            state["rotate"] = f"the context reached {result.prompt_tokens} tokens (limit {limit})"
        return result, info


# -- public --------------------------------------------------------------------------------------
def offload_session(
    project: "Project",
    prompt: str,
    *,
    sources: Sources,
    texts: dict[str, str],
    model: str | None,
    name: str | None = None,
    feature: str | None = None,
    resume_id: str | None = None,
    topics: Sequence[str] = (),
) -> dict[str, Any]:
    """One turn of a named or feature session (or of any Gemini session, with ``resume_id``)."""
    from contextware.offload.summary import summarize_turn

    name = name or feature or resume_id
    assert name
    sdir = session_dir(project, name)
    with entry_lock(project, "session", name):
        state = load_state(sdir)
        if state is not None and feature and state.get("feature") not in (None, feature):
            raise UsageError(
                f"Session {name} belongs to feature {state['feature']!r}, not {feature!r}.", code="feature_mismatch"
            )
        recovered = None
        fresh = state is None or state.get("recovered_from_files")
        if state is None:
            state = _new_state(name, feature)
        state["feature"] = state.get("feature") or feature
        override = resume_id is not None
        if override:
            if state.get("gemini_session_id") != resume_id:
                state["gemini_sessions"].append(
                    {
                        "id": resume_id,
                        "started_at": None,
                        "reason": "--resume-id",
                        "replaces": state.get("gemini_session_id"),
                    }
                )
            state.update(gemini_session_id=resume_id, gemini_started=True, rotate=None)
        elif fresh and state.get("feature") and not state.get("gemini_session_id"):
            recovered = _recover(project, state, state["feature"])
        result, info = _call(project, sdir, state, prompt, sources, texts, model, override)

        now = utcnow()
        fname = turn_file_name(now)
        redacted: dict[str, int] = {}
        stored_prompt, response = redact_texts(redacted, prompt, result.response)  # secrets never stored
        write_text(sdir / fname, response)
        turn_no = len(state["turns"]) + 1
        own, cumulative = summarize_turn(
            project, previous=read_text(sdir / SUMMARY), prompt=stored_prompt, response=response, turn=turn_no
        )
        turn = {
            "turn": turn_no,
            "file": fname,
            "prompt": stored_prompt,
            "prompt_hash": text_sha256(prompt),
            "created_at": iso(now),
            "model": model,
            "models": result.models,
            "gemini_session_id": state["gemini_session_id"],
            "new_gemini_session": info["new_gemini_session"],
            "tokens": result.tokens,
            "token_count": result.tokens.get("total", 0),
            "summary": own.text,
            "summary_method": own.method,
            "source_paths": sources.source_paths,
            "source_type": sources.source_type,
            "source_hash": sources.source_hash(),
            "topics": list(topics),
        }
        state["turns"].append(turn)
        for key, value in result.tokens.items():
            state["tokens"][key] = int(state["tokens"].get(key) or 0) + int(value)
        state["topics"] = list(dict.fromkeys([*(state.get("topics") or []), *topics]))
        state["summary_method"] = cumulative.method
        state.pop("recovered_from_files", None)
        write_text(sdir / SUMMARY, cumulative.text)
        _save(sdir, state)
    rows = [turn_row(project, state, turn), synthesis_row(project, state, cumulative.text)]
    out: dict[str, Any] = {
        "cached": False,
        "session": name,
        "feature": state.get("feature"),
        "turn": turn_no,
        "id": rows[0]["id"],
        "summary": cumulative.text,
        "summary_method": cumulative.method,
        "turn_summary": own.text,
        "full_response_path": display_path(project, data_relative(project, sdir / fname)),
        "tokens": turn["token_count"],
        "session_tokens": state["tokens"].get("total", 0),
        "context_tokens": result.prompt_tokens,
        "gemini_session_id": state["gemini_session_id"],
        "new_gemini_session": info["new_gemini_session"],
    }
    if info["new_gemini_session"] and info.get("reason"):
        out["gemini_session_reason"] = info["reason"]
    if state.get("rotate"):
        out["next_turn"] = f"starts a new Gemini session: {state['rotate']}"
    if recovered:
        out["recovered"] = recovered
    if info["errors"]:
        out["retried_after"] = info["errors"]
    if cumulative.error:
        out["summary_error"] = cumulative.error
    if redacted:
        out["redacted"] = redacted
    out.update(write_rows(project, rows))
    return out


# -- index rows ----------------------------------------------------------------------------------
def turn_row(project: "Project", state: dict[str, Any], turn: dict[str, Any]) -> "OffloadRow":
    from contextware.core.text import parse_iso

    name = state["name"]
    return make_row(
        project,
        id=row_id("turn", name, turn["file"]),
        prompt=turn.get("prompt") or "",
        type="research",
        summary=turn.get("summary") or "",
        summary_method=turn.get("summary_method") or "unknown",
        response_file=data_relative(project, session_dir(project, name) / turn["file"]),
        created_at=parse_iso(turn.get("created_at")) or utcnow(),
        model=turn.get("model"),
        source_paths=turn.get("source_paths") or [],
        source_hash=turn.get("source_hash"),
        source_type=turn.get("source_type"),
        session_name=name,
        turn_number=turn.get("turn"),
        feature=state.get("feature"),
        topics=turn.get("topics") or [],
        token_count=turn.get("token_count"),
    )


def synthesis_row(project: "Project", state: dict[str, Any], summary: str) -> "OffloadRow":
    from contextware.core.text import parse_iso

    name = state["name"]
    prompts = "; ".join(t.get("prompt") or "" for t in state["turns"] if t.get("prompt"))
    sources = list(dict.fromkeys(p for t in state["turns"] for p in t.get("source_paths") or []))
    return make_row(
        project,
        id=row_id("synthesis", name),
        prompt=cut_at_word(prompts, 2000) or f"Session {name}",
        type="synthesis",
        summary=summary,
        summary_method=state.get("summary_method") or "unknown",
        response_file=data_relative(project, session_dir(project, name) / SUMMARY),
        created_at=parse_iso(state.get("updated_at")) or utcnow(),
        source_paths=sources,
        session_name=name,
        turn_number=len(state["turns"]),
        feature=state.get("feature"),
        topics=state.get("topics") or [],
        token_count=int((state.get("tokens") or {}).get("total") or 0),
        model=(state["turns"][-1].get("model") if state["turns"] else None),
    )
