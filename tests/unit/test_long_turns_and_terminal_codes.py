"""A hook turn over the log limit is cut to it and kept (it was dropped whole); terminal escape
sequences are stripped when text is stored and from every ``--format text`` output."""

from __future__ import annotations

import json
import os
from pathlib import Path

from contextware.cli import emit
from contextware.hosts.hooks import run_hook
from contextware.memory import records
from contextware.settings import Settings
from contextware.storage.project import Project


def _event(cwd: Path, **extra: str) -> str:
    return json.dumps({"session_id": "sess_1", "cwd": str(cwd), "hook_event_name": "AfterAgent", **extra})


def test_a_hook_answer_over_the_log_limit_is_cut_to_it_not_dropped(project_dir: Path):
    (project_dir / ".git").mkdir()
    data = project_dir / "contextware_data"
    data.mkdir()
    (data / "config.json").write_text(json.dumps({"max_log_chars": 6000}))
    answer = "The migration plan. " + " ".join(f"step{i}" for i in range(2000))  # ~14,000 characters
    assert (
        run_hook(
            _event(project_dir, prompt="plan the migration", prompt_response=answer), Settings.from_env(os.environ)
        )
        == ""
    )
    logs = records.list_records(Project.open(project_dir, Settings.from_env(os.environ)), "logs", limit=100)["records"]
    agent = sorted((r for r in logs if r["role"] == "agent"), key=lambda r: r["chunk_index"])
    assert agent, "the long answer was dropped"
    kept = " ".join(r["text"] for r in agent)
    assert kept.startswith("The migration plan. step0 step1") and len(kept) <= 6000
    assert "more characters over the log limit]" in kept


def test_terminal_escapes_are_stripped_before_storing(project: Project):
    raw = "\x1b[31mred\x1b[0m build \x1b]0;pwned\x07failed\x1b[2J on CI\x08."
    saved = records.save_fact(project, raw)
    text = records.get(Project.open(project.root, Settings.from_env(os.environ)), saved["id"])["record"]["text"]
    assert text == "red build failed on CI."


def test_text_output_never_carries_terminal_escapes(capsys):
    emit({"ok": True, "note": "a\x1b[2Jb\x1b]52;c;aGk=\x07c"}, "text", lambda r: r["note"])
    assert capsys.readouterr().out == "abc\n"
