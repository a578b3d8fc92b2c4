"""Gemini CLI and Claude Code hook handlers (``run_hook``, run by ``entry`` or the resident service):
memory brought into every turn without the agent asking.  Claude Code's events map onto Gemini's.

- SessionStart: the session briefing (``context.py``) as ``additionalContext``, and one line on how
  to reach the memory with the tools this host offers (``--host``; see ``instructions``).
- BeforeAgent (Claude Code: UserPromptSubmit): the facts, lessons of similar episodes and top code
  files relevant to the prompt, within a small budget; nothing at all when no result reaches
  ``hook_min_confidence``.
- AfterAgent (Claude Code: Stop, whose prompt is read from the transcript): the prompt and the
  response saved as ``logs`` rows (secrets redacted by ``memory``), in projects that already use
  memory or are git repositories (never a stray folder elsewhere).
- PreCompress (Claude Code: PreCompact): turns of the transcript that are not in the logs yet (a
  safety net for turns whose AfterAgent hook failed) are saved before the CLI compresses the history.

A hook never blocks or fails the turn: whatever goes wrong, it prints nothing, exits 0 and appends
one line to ``<data_dir>/hooks.log``.  Recalled memory is fenced and labelled as reference data,
not instructions.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from contextware.hosts.hooks.event import HookEvent

if TYPE_CHECKING:
    from contextware.core.settings import Settings
    from contextware.memory.results import MemoryRow, Saved
    from contextware.storage.candidate import RecalledItem
    from contextware.storage.project import Project


# Gemini CLI puts additionalContext into the prompt as it is; an answer over this many characters is
# cut to it (the fence kept closed), never dropped.
HOST_CONTEXT_LIMIT = 2_000_000
MAX_CODE_FILES = 3
MAX_TRANSCRIPT_BYTES = 32 * 1024 * 1024  # a Gemini CLI transcript read for its last turns: at most its tail
CODE_RELATIVE = 0.8  # recall lets files in only when one is about the prompt; keep those close to the best


class _HookContext(TypedDict):
    hookEventName: str
    additionalContext: str


class HookReply(TypedDict):
    """What a hook prints for its host (Gemini CLI and Claude Code read the same shape): the text
    added to the model's context for this event."""

    hookSpecificOutput: _HookContext


def _output(event: str, body: str, note: str = "") -> HookReply:
    """The hook's answer: the body redacted again (rows stored before a detector existed) and fenced
    as reference data within the host's limit.  Stored texts went through the full layer when they
    were saved, so the warm path runs the shapes only (no detect-secrets load on every turn).  ``note``
    is our own text, added after the fence."""
    from contextware.core.fence import fence
    from contextware.core.redact import redact_text

    context = fence(redact_text(body, library=False), limit=HOST_CONTEXT_LIMIT)
    if note:  # our own words after the fence (how to reach memory here), not recalled data
        context += "\n" + note
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}


GEMINI_ONLY_EVENTS = frozenset({"BeforeAgent", "AfterAgent", "BeforeModel", "AfterModel", "PreCompress"})


def _is_gemini(event: HookEvent) -> bool:
    """Gemini CLI's hooks are installed without ``--host`` and the hook process names Gemini
    when Gemini CLI's own variables are in its environment (``entry.read_event``); Claude Code's
    name their host.  An event nobody named is Gemini's only by its name (``BeforeAgent``, ...):
    a ``SessionStart`` piped in by hand, or by another host, gets the briefing at once."""
    if event.host:
        return event.host == "gemini"
    return event.name in GEMINI_ONLY_EVENTS


def _briefing(project: "Project") -> str:
    """The session briefing's markdown, or '' when nothing is remembered yet."""
    from contextware.core.fence import inline_all
    from contextware.memory.briefing import SECTIONS, render_markdown, session_context

    ctx = session_context(project, project.config.hook_session_tokens)
    if not any(s in ctx for s in SECTIONS) and not ctx["project"].get("session_count"):  # nothing remembered yet
        return ""
    return render_markdown(inline_all(ctx))


def _usage(event: HookEvent) -> str:
    from contextware.hosts.hooks.instructions import how_to_reach_memory

    return how_to_reach_memory(event.host)


def session_start(project: "Project", event: HookEvent) -> HookReply | None:
    """The briefing, for every host.  A session briefed here is marked, so that its first prompt
    is not briefed again (``_first_turn_briefing`` briefs a Gemini CLI session whose SessionStart
    gave nothing).  Gemini CLI resuming a session (``-r``) drops every stored user message that
    starts with ``<hook_context>``, and with ``-p`` the session start's context is prepended to the
    first prompt: so a resumed Gemini CLI session also gets the questions asked in it before,
    from the captured turns (``_asked_before``)."""
    body = _briefing(project)
    if _is_gemini(event) and event.source == "resume" and event.session_id:
        body = "\n\n".join(part for part in (body, _asked_before(project, event.session_id)) if part)
    if not body:
        return None
    if event.session_id and project.data_dir.is_dir():
        from contextware.hosts.hooks import briefed

        briefed.mark_briefed(project.data_dir, event.session_id)
    return _output("SessionStart", body, _usage(event))


ASKED_BEFORE = 8  # a resumed session's latest questions recalled at most
ASKED_CHARS = 300


def _asked_before(project: "Project", session_id: str) -> str:
    """The questions asked earlier in this session (newest ``ASKED_BEFORE``, each shortened), as a
    section of the briefing, or ''."""
    from contextware.core.fence import inline
    from contextware.core.text import cut_at_word
    from contextware.memory.turns.digest import session_turns

    asked = [str(t.get("text") or "") for t in session_turns(project, session_id) if t.get("role") == "user"]
    asked = [a for a in asked if a.strip()][-ASKED_BEFORE:]
    if not asked:
        return ""
    lines = [f"{i}. {inline(cut_at_word(a, ASKED_CHARS))}" for i, a in enumerate(asked, 1)]
    return "## Asked earlier in this session\n" + "\n".join(lines)


def _first_turn_briefing(project: "Project", event: HookEvent) -> str:
    """Gemini CLI: the briefing's markdown on the session's first BeforeAgent, else ''."""
    from contextware.hosts.hooks import briefed

    session = event.session_id
    if not _is_gemini(event) or not session or not project.data_dir.is_dir():
        return ""
    if briefed.was_briefed(project.data_dir, session):
        return ""
    body = _briefing(project)
    briefed.mark_briefed(project.data_dir, session)
    return body


RELEVANT_HEADING = "## Relevant to this prompt"


def before_agent(project: "Project", event: HookEvent) -> HookReply | None:
    """The memory relevant to the prompt; on a Gemini CLI session's first prompt, the briefing first,
    in the same fence (one block of reference data, one header)."""
    name = event.name or "BeforeAgent"
    briefing = _first_turn_briefing(project, event)
    recalled = _recalled(project, event)
    if not briefing:
        return _output(name, recalled) if recalled else None
    body = f"{briefing}\n\n{RELEVANT_HEADING}\n{recalled}" if recalled else briefing
    return _output(name, body, _usage(event))


def _line(hit: RecalledItem) -> str:
    from contextware.core.fence import inline
    from contextware.memory.briefing import first_sentence
    from contextware.memory.turns.digest import digest_label, is_digest

    c = hit["collection"]
    stale = f" (may be stale: {inline(hit['may_be_stale'])})" if hit.get("may_be_stale") else ""
    stale += f" ({inline(hit['from'])})" if hit.get("from") else ""  # not the user's own (memory.trust)
    if c == "facts":
        return f"- [{(hit.get('kind') or 'note').upper()}] {inline(hit['text'])}{stale}"
    if c == "episodes" and is_digest(hit):  # a summary of a session: neither a success nor a failure
        return f"- [{digest_label(hit.get('created_at')).upper()}] {inline(hit['summary'])}{stale}"
    if c == "episodes":
        return f"- [PAST {hit['result'].upper()}] {inline(hit['goal'])}: {inline(hit['summary'])}{stale}"
    if c == "code_index":
        stale = " (changed since indexed)" if hit.get("stale") else ""
        return f"- file {inline(hit['file_path'])}{stale}: {inline(first_sentence(hit.get('summary') or ''))}"
    if c == "offloads":
        summary = inline(first_sentence(hit.get("summary") or "", 240))
        return f"- [RESEARCH] {summary} (full: {inline(hit.get('full_response_path'))})"
    return ""


def _handle(hit: RecalledItem) -> str:
    """`` (fact-…, 2026-11-20)``: the memory's id and the day it was saved, so that the agent can
    fetch the whole of a shortened text (MCP ``get_memory``, ``memory get``) and weigh its age."""
    from contextware.core.fence import inline

    day = str(hit.get("created_at") or "")[:10]
    return f" ({inline(str(hit['id']))}{', ' + day if day else ''})" if hit.get("id") else ""


def _cut_short(hit: Mapping[str, object], whole: Mapping[str, object] | None) -> bool:
    """Whether recall showed a memory's text or summary shortened (its summary mode)."""
    shown, whole = hit, whole or {}
    return any(
        isinstance(shown.get(key), str) and isinstance(whole.get(key), str) and shown[key] != whole[key]
        for key in ("text", "summary")
    )


_HOOK_OPEN, _HOOK_CLOSE = "<hook_context>", "</hook_context>"


def typed_prompt(event: HookEvent) -> str:
    """What the person typed: Gemini CLI's ``prompt`` also carries what hooks added before it (each
    in ``<hook_context>``, our briefing among them), which must neither steer recall nor be logged."""
    return without_hook_context(event.prompt)


def without_hook_context(text: str) -> str:
    """A user message without the blocks hooks added to it (Gemini CLI keeps them in the prompt it
    hands to AfterAgent and in the transcript that PreCompress reads).  One pass (a regular
    expression took seconds on a prompt of many unclosed tags); an unclosed block is kept as written."""
    kept, at = [], 0
    while (start := text.find(_HOOK_OPEN, at)) >= 0 and (end := text.find(_HOOK_CLOSE, start)) >= 0:
        kept.append(text[at:start])
        at = end + len(_HOOK_CLOSE)
        while at < len(text) and text[at].isspace():
            at += 1
    kept.append(text[at:])
    return "".join(kept).strip()


def _recalled(project: "Project", event: HookEvent) -> str:
    """One line per memory the prompt hook injects for the typed prompt ('' for none); what it
    decided is recorded for ``memory why``."""
    from contextware.memory.recall.prompt import for_prompt

    prompt = typed_prompt(event)
    if len(prompt) < 3:
        return ""
    budget = project.config.hook_prompt_tokens * 4
    if project.data_dir.is_dir():  # memory to search: load the model while lancedb is imported
        from contextware.storage.embeddings import preload_in_background

        preload_in_background(project.embedder)
    result = for_prompt(project, prompt)  # memory/recall/prompt.py; its explanation feeds the turn's record
    from contextware.memory.trust import for_hooks

    known = {h.id: h.row for h in result.hits}
    # quarantined, untrusted imported memories: on request only
    hits = for_hooks(project, result.results, cast("dict[str, MemoryRow]", known))
    lines: list[str] = []
    words: list[str] = []
    injected: list[str] = []
    files = 0
    best_file = max((h["score"] for h in hits if h["collection"] == "code_index"), default=0.0)
    for hit in hits:
        if hit["collection"] == "code_index":
            if hit["score"] < CODE_RELATIVE * best_file or files >= MAX_CODE_FILES:
                continue
            files += 1
        line = _line(hit)
        shown = line + _handle(hit) if hit["collection"] in ("facts", "episodes") else line
        if line and sum(len(x) + 1 for x in lines) + len(shown) <= budget:
            lines.append(shown)
            words.append(line)  # the use feedback judges the memory's words, not its id or date
            injected.append(hit["id"])
    from contextware.memory.turns import decisions

    decisions.record(project, decisions.entry(event.name, event.session_id, prompt, result, injected))
    _note_injected(project, event, dict(zip(injected, words, strict=True)))
    if any(_cut_short(hit, known.get(hit["id"])) for hit in hits if hit["id"] in injected):
        from contextware.hosts.hooks.instructions import how_to_get_whole

        lines.append(how_to_get_whole(_host(event)))
    return "\n".join(lines)


MAX_TOOL_BYTES = 512 * 1024  # of a transcript's tail read for the last turn's tool calls


def _note_injected(project: "Project", event: HookEvent, texts: dict[str, str]) -> None:
    """Count what was injected and keep its hashed keys for the answer (``memory.turns.usage``)."""
    from contextware.memory.turns import usage

    try:
        usage.injected(project.data_dir, event.session_id, texts)
    except Exception as exc:  # noqa: BLE001 - feedback must never fail the turn
        _log_failure("use", exc, project)


def _judge_use(project: "Project", event: HookEvent, answer: object) -> None:
    """Whether the answer and the turn's tool calls used what was injected into its prompt; the
    transcript is read for the tool calls only when something was injected."""
    from contextware.hosts.hooks.claude_transcript import tool_inputs
    from contextware.memory.turns import usage

    try:
        session = event.session_id
        if not usage.is_pending(project.data_dir, session):
            return
        if event.claude_transcript:
            tools = tool_inputs(Path(event.claude_transcript))
        else:
            tools = _gemini_tool_inputs(Path(event.transcript_path)) if event.transcript_path else []
        usage.judge(project.data_dir, session, answer if isinstance(answer, str) else "", tools)
    except Exception as exc:  # noqa: BLE001 - feedback must never fail the turn
        _log_failure("use", exc, project)


def _gemini_tool_inputs(path: Path) -> list[str]:
    """The arguments of the tool calls after the last user message of a Gemini CLI transcript
    (``toolCalls`` of its ``gemini`` messages), each as JSON; [] when there are none.  Read from
    the end back to that message; a message re-appended under its id is read once."""
    from contextware.hosts.hooks.claude_transcript import read_tail

    try:
        raw = read_tail(path, MAX_TOOL_BYTES)
    except OSError:
        return []
    calls: list[str] = []
    seen: set[str] = set()
    try:  # an older transcript is one JSON document (JSON lines fail at their second line, cheaply)
        doc = json.loads(raw)
        lines = [json.dumps(m) for m in doc.get("messages", [])] if isinstance(doc, dict) else []
    except (ValueError, RecursionError):
        lines = raw.split("\n")
    for line in reversed(lines):
        if '"toolCalls"' not in line and '"user"' not in line:
            continue
        try:
            m = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(m, dict) or str(m.get("id")) in seen:
            continue
        seen.add(str(m.get("id")))
        if str(m.get("type") or "") == "user":
            break
        found = m.get("toolCalls")
        for call in reversed(found) if isinstance(found, list) else ():
            if isinstance(call, dict):
                calls.append(json.dumps(call.get("args"), ensure_ascii=False))
    return calls[::-1]


def _records_here(project: "Project") -> bool:
    """Logs are written only where memory is already in use or in a git repository: a user-wide
    install must not leave a data folder in every directory Gemini CLI is started in."""
    if project.data_dir.is_dir():
        return True
    return (project.root / ".git").exists() and project.root != Path.home()


def after_agent(project: "Project", event: HookEvent) -> HookReply | None:
    from contextware.core.fence import strip_injected
    from contextware.memory.records import save_log

    if not _records_here(project):
        return None
    session = event.session_id or "unknown"
    from contextware.storage.embeddings import preload_in_background

    preload_in_background(project.embedder)
    turn = {"user": typed_prompt(event), "agent": _answer_as_shown(event)}
    _judge_use(project, event, turn["agent"])
    asked = None
    for role, text in turn.items():
        if isinstance(text, str):
            text, cut = _head(project, text)
            text = strip_injected(text)  # the prompt as the CLI holds it carries our hooks' context
            if text.strip():
                # The answer carries the question it answers: one row holds the whole exchange.
                text = fit_log(project, text, cut)
                saved = save_log(project, text, session_id=session, role=role, source="hook", prompt=asked)
                if role == "user":
                    _save_instructions(project, text, saved)
                asked = text if role == "user" else None
    _refresh_digest(project, session)
    return None


def _save_instructions(project: "Project", text: str, saved: "Saved") -> None:
    """A user turn that asks to remember something ("please remember: …", "from now on …") adds it
    as a fact, its source the turn's log row (``memory.remember``).  Only for a turn seen the first
    time: a fact deleted in the browser does not come back when the same turn is captured again.
    A failure is logged: the turn is saved."""
    from contextware.memory.records import save_fact
    from contextware.memory.remember import instructions

    if "duplicate_of" in saved or not saved.get("ids"):
        return
    for found in instructions(text):
        try:
            save_fact(project, found.text, kind=found.kind, source=f"turn:{saved['ids'][0]}")
        except Exception as exc:  # noqa: BLE001 - a fact too long or refused: the turn itself is kept
            _log_failure("remember", exc, project)


def _refresh_digest(project: "Project", session: str) -> None:
    """The session's digest episode, rewritten after its turns are saved (a capture event: the
    hook has already answered), then the retention policy if one is set and due.  A failure is
    logged, never raised: the turns are saved."""
    from contextware.memory.turns.digest import refresh_digest
    from contextware.memory.turns.retention import retain_if_due

    try:
        refresh_digest(project, session)
    except Exception as exc:  # noqa: BLE001 - the digest is a convenience; the turns are what counts
        _log_failure("digest", exc, project)
    try:
        retain_if_due(project)  # the configured retention policy, at most once a day
    except Exception as exc:  # noqa: BLE001 - turns stay stored; the next run tries again
        _log_failure("retention", exc, project)


def turn_limit(project: "Project") -> int:
    """Characters kept of a hook turn's prompt or answer: ``hook_turn_chars`` within ``max_log_chars``."""
    return min(project.config.max_log_chars, project.config.hook_turn_chars)


def fit_log(project: "Project", text: str, cut_before: int = 0) -> str:
    """A hook turn longer than ``turn_limit`` is cut to it and kept (refused whole, it would be lost;
    kept whole, a 40 MB turn was thousands of rows on the hook's path), the cut noted at its end;
    ``cut_before``: characters already cut off before cleaning.  1% is left for redaction markers,
    which can be longer than what they replace."""
    limit = int(turn_limit(project) * 0.99)
    if len(text) <= limit and not cut_before:
        return text
    marker = "\n[… cut: {} more characters over the log limit of a turn]"
    kept = text if len(text) <= limit else text[: max(0, limit - len(marker) - 12)]
    return kept + marker.format(len(text) - len(kept) + cut_before)


def _head(project: "Project", text: str) -> tuple[str, int]:
    """The start of a turn's text, long enough for ``fit_log`` after cleaning (which only shortens
    it), and how many characters were left off: a huge turn is never scanned whole."""
    cap = 2 * turn_limit(project)
    return (text, 0) if len(text) <= cap else (text[:cap], len(text) - cap)


def _answer_as_shown(event: HookEvent) -> object:
    """The turn's answer as the user saw it: the agent messages after the last user message of the
    transcript.  Gemini CLI 0.61's ``prompt_response`` joins the streamed chunks' texts with a space
    after merging them (an answer streamed as "Not" + "ed." arrives as "Noted. ed."), so it is only
    the fallback when the transcript is missing or holds no answer yet."""
    path = event.transcript_path
    if path:
        try:
            turns = _transcript_turns(Path(path))
        except OSError:
            turns = []
        answer: list[str] = []
        for role, text in reversed(turns):
            if role == "user":
                break
            answer.insert(0, text)
        if answer:
            return "\n\n".join(answer)
    return event.answer


def stop(project: "Project", event: HookEvent) -> HookReply | None:
    """Claude Code's Stop: the answer is in the payload, the prompt in the transcript."""
    from contextware.hosts.hooks.claude_transcript import prompt_of_turn

    path = event.transcript_path
    prompt = prompt_of_turn(Path(path), event.answer) if path else None
    # transcript_path is Claude Code's here, not Gemini CLI's: the answer is the one in the payload.
    turn = event._replace(prompt=prompt or "", transcript_path="", claude_transcript=path)
    return after_agent(project, turn)


def _transcript_turns(path: Path) -> list[tuple[str, str]]:
    """(role, text) of the user and model messages of a Gemini CLI transcript.

    Gemini CLI 0.61 appends JSON lines: a metadata record (``messages: []``), ``{"$set": ...}``
    updates, and message records ``{"id", "timestamp", "type": "user"|"gemini"|"info"|..., "content"}``
    where a message re-appended under the same id replaces the earlier one.  A single JSON document
    with a ``messages`` list (older versions) is read too."""
    from contextware.hosts.hooks.claude_transcript import read_tail

    raw = read_tail(path, MAX_TRANSCRIPT_BYTES)
    try:
        docs: list[Any] = [json.loads(raw)]
    except (ValueError, RecursionError):  # a line nested thousands deep is one bad line, not the session's loss
        docs = []
        for line in raw.split("\n"):  # "\n" only: a message may hold U+2028 raw
            try:
                docs.append(json.loads(line))
            except (ValueError, RecursionError):
                continue
    by_id: dict[Any, dict[str, Any]] = {}
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        for m in doc.get("messages", []) if "messages" in doc else [doc]:
            if isinstance(m, dict) and ("type" in m or "role" in m):
                by_id[m.get("id") or len(by_id)] = m
    turns = []
    for m in by_id.values():
        kind = str(m.get("type") or m.get("role") or "").lower()
        role = "user" if kind == "user" else "agent" if kind in ("gemini", "model", "assistant", "agent") else None
        content = m.get("content", m.get("text", m.get("parts")))
        if isinstance(content, dict):
            content = [content]
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
        if role and isinstance(content, str) and content.strip():
            turns.append((role, content))
    return turns


def pre_compress(project: "Project", event: HookEvent) -> HookReply | None:
    from contextware.core.fence import strip_injected
    from contextware.memory.records import save_log

    path = event.transcript_path
    if not path or not Path(path).is_file() or not _records_here(project):
        return None
    session = event.session_id or "unknown"
    if event.name == "PreCompact":  # Claude Code's transcript
        from contextware.hosts.hooks.claude_transcript import turns

        read = turns(Path(path))
    else:
        read = _transcript_turns(Path(path))
    asked = None
    for role, whole in read[-40:]:
        text, cut = _head(project, whole)
        text = strip_injected(without_hook_context(text) if role == "user" else text)
        if text.strip():  # exact duplicates of what AfterAgent saved are skipped
            text = fit_log(project, text, cut)
            prompt = asked if role == "agent" else None  # an answer carries the question before it
            saved = save_log(project, text, session_id=session, role=role, source="hook", prompt=prompt)
            if role == "user":
                _save_instructions(project, text, saved)
            asked = text if role == "user" else asked
    _refresh_digest(project, session)
    return None


HANDLERS = {  # one handler for each of ``event.EVENTS``
    "SessionStart": session_start,
    "BeforeAgent": before_agent,
    "AfterAgent": after_agent,
    "PreCompress": pre_compress,
    "UserPromptSubmit": before_agent,  # Claude Code
    "Stop": stop,
    "PreCompact": pre_compress,
}


def _log_failure(event: str, exc: BaseException, project: "Project | None", settings: "Settings | None" = None) -> None:
    """Append the failure to the project's hooks.log, else to the one in ``contextware_home`` (of
    ``settings``, else of the project's, else of this process's)."""
    from contextware.core.system import contextware_home

    try:
        if project is not None and project.data_dir.is_dir():
            where = project.data_dir
        else:
            where = contextware_home(settings or (project.settings if project is not None else None))
        where.mkdir(parents=True, exist_ok=True)
        import traceback  # only on failure: the hook process imports as little as it can

        from contextware.core.redact import redact_text

        last = redact_text(traceback.format_exception_only(type(exc), exc)[-1].strip())
        with open(where / "hooks.log", "a", encoding="utf-8") as f:
            f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {event or '?'} failed: {last}\n")
    except Exception:  # noqa: BLE001 - nowhere to report: stay silent, never fail the turn
        pass


def _host(event: HookEvent) -> str:
    """The agent host of an event: named by ``--host``, else told by the event's name."""
    if event.host:
        return "claude" if event.host.startswith("claude") else event.host[:40]
    return "gemini" if event.name in ("BeforeAgent", "AfterAgent", "PreCompress") else "claude"


def run_hook(stdin: str, settings: "Settings | None" = None) -> str:
    """The hook's stdout for one event (empty when there is nothing to add), with the caller's
    ``settings`` (by default this process's).  Never raises."""
    event, project = "", None
    try:
        payload = json.loads(stdin) if stdin.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("the hook input is not a JSON object")
        hook = HookEvent.parse(payload)
        event = hook.name
        handler = HANDLERS.get(event)
        if handler is None:
            return ""
        import os

        from contextware.storage.project import Project

        if hook.cwd and os.path.isdir(hook.cwd):
            os.chdir(hook.cwd)  # resolve the project as a command run there would (git top level, ...)
        project = Project.open(None, settings)
        from contextware.memory import provenance

        with provenance.use("hook", host=_host(hook), session=hook.session_id or None):
            out = handler(project, hook)
        return json.dumps(out, ensure_ascii=False) if out else ""
    except BaseException as exc:  # noqa: BLE001 - a memory hook must never break the turn
        _log_failure(event, exc, project, settings)
        return ""
