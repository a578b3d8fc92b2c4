"""Claude Code's hook events (UserPromptSubmit, Stop, PreCompact) mapped onto the shared handlers, the
transcript reader that finds a turn's prompt, and the session-start note that names this host's tools.
Transcript lines are shaped as Claude Code 2.1.328 writes them (DESIGN.md, "Claude Code facts")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextware.core.fence import FENCE_CLOSE, FENCE_OPEN
from contextware.hosts.hooks import instructions
from contextware.hosts.hooks.claude_transcript import last_prompt, turns
from contextware.hosts.hooks.event import with_host
from contextware.hosts.hooks.handlers import run_hook
from contextware.memory import records
from contextware.storage.project import Project
from tests.support.hook_events import write_transcript

FACT = "Never deploy on Fridays; production releases go out Monday to Thursday only."


def event(name: str, cwd: Path, **extra: object) -> str:
    return json.dumps(
        {
            "session_id": "5f1c-claude",
            "transcript_path": str(cwd / "none.jsonl"),
            "cwd": str(cwd),
            "hook_event_name": name,
            **extra,
        }
    )


def test_the_transcript_gives_the_last_typed_prompt_not_tool_results_or_meta_lines(tmp_path: Path):
    path = write_transcript(tmp_path / "t.jsonl", "Can I deploy on Friday?", "No.")
    assert last_prompt(path) == "Can I deploy on Friday?"
    assert turns(path) == [
        ("user", "an older prompt"),
        ("agent", "an older answer"),
        ("user", "Can I deploy on Friday?"),
        ("agent", "No."),
    ]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert last_prompt(empty) is None


@pytest.mark.slow
def test_user_prompt_submit_answers_under_its_own_event_name(project: Project):
    records.save_fact(project, FACT, kind="constraint")
    out = json.loads(run_hook(event("UserPromptSubmit", project.root, prompt="Can I deploy on Friday?")))
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "UserPromptSubmit"
    assert spec["additionalContext"].startswith(FENCE_OPEN) and FACT in spec["additionalContext"]
    assert run_hook(event("UserPromptSubmit", project.root, prompt="what is the capital of Australia?")) == ""


@pytest.mark.slow
def test_stop_saves_the_turn_once_with_the_prompt_from_the_transcript(project: Project, tmp_path: Path):
    (project.root / ".git").mkdir()
    path = write_transcript(tmp_path / "t.jsonl", "Can I deploy on Friday?", "No: Monday to Thursday.")
    stop = event("Stop", project.root, transcript_path=str(path), last_assistant_message="No: Monday to Thursday.")
    assert run_hook(stop) == ""
    assert run_hook(stop.replace('"Stop"', '"Stop", "stop_hook_active": true')) == ""  # fired again: no copy
    logs = records.list_records(project, "logs")["records"]
    assert sorted((r["role"], r["text"]) for r in logs) == [
        ("agent", "No: Monday to Thursday."),
        ("user", "Can I deploy on Friday?"),
    ]
    assert run_hook(event("PreCompact", project.root, transcript_path=str(path), trigger="auto")) == ""
    logs = records.list_records(project, "logs")["records"]
    assert len(logs) == 4  # the older turn was not logged yet; this turn is not logged twice


@pytest.mark.slow
def test_the_session_start_note_names_the_tools_of_this_host(project: Project, monkeypatch: pytest.MonkeyPatch):
    records.save_fact(project, FACT, kind="constraint")
    start = event("SessionStart", project.root, source="startup")

    def note(host: str | None, session: str = "s-claude") -> str:
        # Gemini CLI: a session with no SessionStart is briefed on its first BeforeAgent (hooks/briefed.py).
        first = start if host and host.startswith("claude") else event("BeforeAgent", project.root, prompt="hello")
        first = json.dumps({**json.loads(first), "session_id": session})
        ctx = json.loads(run_hook(with_host(first, host)))["hookSpecificOutput"]["additionalContext"]
        return ctx.split(FENCE_CLOSE, 1)[1].strip().splitlines()[0]

    assert "`mcp__contextware__recall`" in note("claude")
    assert "`mcp__plugin_contextware_contextware__recall`" in note("claude-plugin")
    for host in ("gemini", None):  # headless Gemini CLI has no MCP tools: shell commands only
        text = note(host, f"s-{host}")  # `contextware` is on PATH here: the command the hooks call
        assert "mcp" not in text.lower() and '`contextware recall --query "..."`' in text
        assert "`contextware save " in text and "python" not in text.lower()
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)  # not on PATH: the scripts, as before
    text = note("gemini", "s-off-path")
    assert "recall.py --query" in text and "save_fact.py" in text
    assert with_host("not json", "claude") == "not json"


@pytest.mark.slow
def test_a_line_nested_thousands_deep_in_the_transcript_loses_that_line_only(project: Project, tmp_path: Path):
    """json.loads raises RecursionError (not ValueError) past its depth: one such line once lost the
    turn's prompt and answer, and every later turn of the session."""
    (project.root / ".git").mkdir()
    path = write_transcript(tmp_path / "t.jsonl", "Can I deploy on Friday?", "No: Monday to Thursday.")
    deep = "[" * 5000 + "]" * 5000
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:4], deep, *lines[4:]]) + "\n")
    stop = event("Stop", project.root, transcript_path=str(path), last_assistant_message="No: Monday to Thursday.")
    assert run_hook(stop) == ""
    logs = records.list_records(project, "logs")["records"]
    assert ("user", "Can I deploy on Friday?") in {(r["role"], r["text"]) for r in logs}
