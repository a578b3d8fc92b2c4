"""Looking after offload sessions: ``offload.py sessions list | show NAME | delete NAME``.

Deleting a session removes its folder (renamed aside first, so it vanishes at once), its index rows,
and, unless asked to keep them, its Gemini CLI sessions (best effort: the CLI's own sessions are
reported, never a reason to fail).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.core.errors import GeminiError, NotFoundError
from contextware.core.text import cut_at_word, sql_str
from contextware.offload.files import (
    SUMMARY,
    entry_lock,
    is_temporary,
    read_text,
    remove_dir,
    session_dir,
    sessions_root,
)
from contextware.offload.sessions import load_state
from contextware.offload.table import delete_rows

if TYPE_CHECKING:
    from contextware.storage.project import Project


def session_names(project: "Project") -> list[str]:
    root = sessions_root(project)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not is_temporary(p.name))


def _brief(state: dict[str, Any], summary: str | None) -> dict[str, Any]:
    return {
        "name": state["name"],
        "feature": state.get("feature"),
        "turns": len(state["turns"]),
        "tokens": int((state.get("tokens") or {}).get("total") or 0),
        "created_at": state.get("created_at"),
        "updated_at": state.get("updated_at"),
        "gemini_session_id": state.get("gemini_session_id"),
        "summary": cut_at_word(summary or "", 300),
    }


def session_list(project: "Project") -> dict[str, Any]:
    sessions = []
    for name in session_names(project):
        sdir = session_dir(project, name)
        state = load_state(sdir)
        if state is not None:
            sessions.append(_brief(state, read_text(sdir / SUMMARY)))
    sessions.sort(key=lambda s: s.get("updated_at") or "", reverse=True)
    return {"count": len(sessions), "sessions": sessions}


def _require(project: "Project", name: str) -> tuple[Path, dict[str, Any]]:
    sdir = session_dir(project, name)
    state = load_state(sdir)
    if state is None:
        known = ", ".join(session_names(project)) or "none yet"
        raise NotFoundError(f"No offload session is named {name!r} (sessions: {known}).", code="unknown_session")
    return sdir, state


def session_show(project: "Project", name: str) -> dict[str, Any]:
    sdir, state = _require(project, name)
    summary = read_text(sdir / SUMMARY)
    out = _brief(state, summary)
    out["summary"] = summary
    out["gemini_sessions"] = state.get("gemini_sessions") or []
    out["error_count"] = state.get("error_count") or 0
    out["context_tokens"] = state.get("context_tokens") or 0
    if state.get("last_error"):
        out["last_error"] = state["last_error"]
    out["turns"] = [
        {
            "turn": t["turn"],
            "created_at": t.get("created_at"),
            "prompt": cut_at_word(t.get("prompt") or "", 300),
            "summary": t.get("summary"),
            "tokens": t.get("token_count"),
            "gemini_session_id": t.get("gemini_session_id"),
            "full_response_path": project.relpath(sdir / t["file"]),
        }
        for t in state["turns"]
    ]
    return {"session": out}


def session_delete(project: "Project", name: str, *, keep_gemini: bool = False) -> dict[str, Any]:
    """Delete the session's files and index rows, and (unless ``keep_gemini``) its Gemini sessions."""
    from contextware.gemini.availability import gemini_available
    from contextware.gemini.sessions import delete_session

    with entry_lock(project, "session", name):
        sdir, state = _require(project, name)
        remove_dir(sdir)
    out: dict[str, Any] = {"deleted": name, "turns": len(state["turns"])}
    out.update(delete_rows(project, f"session_name = {sql_str(name)}"))
    ids = list(dict.fromkeys(s["id"] for s in state.get("gemini_sessions") or [] if s.get("id")))
    deleted, errors = [], []
    if not keep_gemini and ids and gemini_available():
        for sid in ids:
            try:
                delete_session(sid, cwd=project.root, timeout=project.config.gemini_timeout_s)
                deleted.append(sid)
            except GeminiError as exc:
                if exc.code != "unknown_session":
                    errors.append(exc.message)
    out["gemini_sessions_deleted"] = deleted
    if errors:
        out["gemini_errors"] = errors
    return out
