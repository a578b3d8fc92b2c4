"""A hook turn over the log limit is cut to it and kept (it was dropped whole); a 40 MB turn is a few
dozen rows, not thousands (issue 23 i); a transcript that is a named pipe never blocks the hook;
terminal escape sequences are stripped when text is stored and from every ``--format text`` output."""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from contextware.cli import emit
from contextware.hosts.hooks import entry
from contextware.hosts.hooks.handlers import run_hook, without_hook_context
from contextware.memory import records
from contextware.storage.project import Project


def _event(cwd: Path, **extra: str) -> str:
    return json.dumps({"session_id": "sess_1", "cwd": str(cwd), "hook_event_name": "AfterAgent", **extra})


@pytest.mark.slow
def test_a_hook_answer_over_the_log_limit_is_cut_to_it_not_dropped(project_dir: Path):
    (project_dir / ".git").mkdir()
    data = project_dir / "contextware_data"
    data.mkdir()
    (data / "config.json").write_text(json.dumps({"max_log_chars": 6000}))
    answer = "The migration plan. " + " ".join(f"step{i}" for i in range(2000))  # ~14,000 characters
    assert run_hook(_event(project_dir, prompt="plan the migration", prompt_response=answer)) == ""
    logs = records.list_records(Project.open(project_dir), "logs", limit=100)["records"]
    agent = sorted((r for r in logs if r["role"] == "agent"), key=lambda r: r["chunk_index"])
    assert agent, "the long answer was dropped"
    kept = " ".join(r["text"] for r in agent)
    assert kept.startswith("The migration plan. step0 step1") and len(kept) <= 6000
    assert "more characters over the log limit of a turn]" in kept


@pytest.mark.slow  # over 7 s: the full suite runs it, the fast subset does not
def test_a_40_mb_turn_is_stored_as_a_bounded_cut_never_thousands_of_rows(project_dir: Path):
    (project_dir / ".git").mkdir()
    (project_dir / "contextware_data").mkdir()
    words = " ".join(f"w{i}" for i in range(3_000_000))[:20_000_000]  # 20 MB prompt + 20 MB answer
    started = time.monotonic()
    assert run_hook(_event(project_dir, prompt=words, prompt_response=words)) == ""
    logs = records.list_records(Project.open(project_dir), "logs", limit=10_000)["records"]
    assert 2 <= len(logs) <= 80, f"{len(logs)} rows for one turn"
    for role in ("user", "agent"):
        kept = " ".join(r["text"] for r in sorted(logs, key=lambda r: r["chunk_index"]) if r["role"] == role)
        assert kept.startswith("w0 w1 w2") and len(kept) <= 41_000
        cut = int(kept.rsplit("[… cut: ", 1)[1].split()[0])
        assert cut > 19_900_000  # counted on the whole turn, not on the head kept for cleaning
    assert time.monotonic() - started < 120


def test_unclosed_host_wrappers_are_stripped_in_one_pass():
    hostile = "<hook_context>" * 50_000 + " the question"
    started = time.monotonic()
    assert without_hook_context(hostile) == hostile.strip()
    assert without_hook_context("<hook_context>ours</hook_context>\n typed") == "typed"
    assert time.monotonic() - started < 1.0  # a regular expression took ~4 minutes on this input


@pytest.mark.parametrize("event", ["AfterAgent", "PreCompress"])
def test_a_transcript_that_is_a_named_pipe_never_blocks_the_hook(project_dir: Path, event: str):
    (project_dir / ".git").mkdir()
    (project_dir / "contextware_data").mkdir()
    fifo = project_dir / "transcript.jsonl"
    os.mkfifo(fifo)
    done = threading.Event()
    threading.Thread(
        target=lambda: (
            run_hook(
                json.dumps(
                    {
                        "session_id": "s",
                        "cwd": str(project_dir),
                        "hook_event_name": event,
                        "transcript_path": str(fifo),
                        "prompt": "hi there",
                        "prompt_response": "an answer",
                    }
                )
            ),
            done.set(),
        ),
        daemon=True,
    ).start()
    assert done.wait(60), "the hook blocked on a named pipe"


def test_an_event_over_the_stdin_limit_is_not_read_whole(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(entry, "MAX_EVENT_BYTES", 1000)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"a": "' + b"x" * 5000 + b'"}')))
    monkeypatch.setattr(sys, "argv", ["hook.py"])
    assert len(entry.read_event()) == 1000


def test_terminal_escapes_are_stripped_before_storing(project: Project):
    raw = "\x1b[31mred\x1b[0m build \x1b]0;pwned\x07failed\x1b[2J on CI\x08."
    saved = records.save_fact(project, raw)
    text = records.get(Project.open(project.root), saved["id"])["record"]["text"]
    assert text == "red build failed on CI."


def test_text_output_never_carries_terminal_escapes(capsys):
    emit({"ok": True, "note": "a\x1b[2Jb\x1b]52;c;aGk=\x07c"}, "text", lambda r: r["note"])
    assert capsys.readouterr().out == "abc\n"
