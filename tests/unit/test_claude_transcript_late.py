"""Claude Code writes its transcript asynchronously: the Stop hook may start before the file exists or
before the turn's lines are in it.  The turn's prompt is still the right one (never an older turn's),
and a transcript that never catches up costs a bounded wait."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from contextware.hosts.hooks.claude_transcript import prompt_of_turn
from contextware.hosts.hooks.handlers import run_hook
from contextware.memory import records
from contextware.storage.project import Project


def _turn(prompt: str, answer: str) -> str:
    return "".join(
        json.dumps({"type": kind, "message": {"role": kind, "content": [{"type": "text", "text": text}]}}) + "\n"
        for kind, text in (("user", prompt), ("assistant", answer))
    )


def _append_later(path: Path, text: str, delay: float = 0.3) -> threading.Thread:
    def write() -> None:
        time.sleep(delay)
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)

    thread = threading.Thread(target=write)
    thread.start()
    return thread


def test_a_transcript_written_after_stop_started_gives_the_turns_prompt(tmp_path: Path):
    path = tmp_path / "session.jsonl"  # not there yet
    writer = _append_later(path, _turn("Can I deploy on Friday?", "No: Monday to Thursday."))
    assert prompt_of_turn(path, "No: Monday to Thursday.") == "Can I deploy on Friday?"
    writer.join()


def test_an_older_turns_prompt_is_not_taken_while_the_transcript_catches_up(tmp_path: Path):
    path = tmp_path / "session.jsonl"
    path.write_text(_turn("Where are the logs?", "In /var/log/app."))
    writer = _append_later(path, _turn("And how long are they kept?", "Thirty days."))
    assert prompt_of_turn(path, "Thirty  days.\n") == "And how long are they kept?"  # whitespace as sent
    writer.join()


def test_a_transcript_that_never_catches_up_costs_a_bounded_wait(tmp_path: Path):
    path = tmp_path / "session.jsonl"
    path.write_text(_turn("Where are the logs?", "In /var/log/app."))
    started = time.monotonic()
    assert prompt_of_turn(path, "An answer it never shows.", wait_s=0.2) == "Where are the logs?"
    assert prompt_of_turn(tmp_path / "missing.jsonl", "Anything.", wait_s=0.2) is None
    assert time.monotonic() - started < 2.0
    assert prompt_of_turn(tmp_path, "Anything.") is None  # a folder: nothing to wait for


@pytest.mark.slow
def test_stop_before_the_transcript_exists_stores_both_sides_once(project: Project, tmp_path: Path):
    (project.root / ".git").mkdir()
    path = tmp_path / "late.jsonl"
    writer = _append_later(path, _turn("Can I deploy on Friday?", "No: Monday to Thursday."))
    stop = {
        "session_id": "late-1",
        "transcript_path": str(path),
        "cwd": str(project.root),
        "hook_event_name": "Stop",
        "last_assistant_message": "No: Monday to Thursday.",
    }
    assert run_hook(json.dumps(stop)) == ""
    writer.join()
    logs = records.list_records(project, "logs")["records"]
    assert sorted((r["role"], r["text"]) for r in logs) == [
        ("agent", "No: Monday to Thursday."),
        ("user", "Can I deploy on Friday?"),
    ]
