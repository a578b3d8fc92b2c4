"""One JSON line nested past the parser's stack in a transcript's tail costs that line only: the
turns before and after it are read (issue 35: a 5,000-deep line lost every later turn of a Gemini
session, ``RecursionError`` was not caught).  Real files, the real hook handler and storage."""

from __future__ import annotations

import json
from pathlib import Path

from contextware.hosts.hooks.claude_transcript import turns as claude_turns
from contextware.hosts.hooks.handlers import _transcript_turns, run_hook
from contextware.memory import records
from contextware.storage.project import Project
from tests.support.hook_events import event

DEEP = "[" * 5000 + "]" * 5000  # valid JSON, deeper than json.loads can recurse


def _gemini_transcript(path: Path, *, deep_at: int) -> Path:
    records_ = [
        {"sessionId": "sess_1", "projectHash": "x", "startTime": "2026-11-21T07:00:00Z", "messages": []},
        {"id": "m1", "timestamp": "t", "type": "user", "content": [{"text": "first question"}]},
        {"id": "m2", "timestamp": "t", "type": "gemini", "content": "first answer"},
        {"id": "m3", "timestamp": "t", "type": "user", "content": [{"text": "second question\u2028with a break"}]},
        {"id": "m4", "timestamp": "t", "type": "gemini", "content": "the answer after the deep line"},
    ]
    lines = [json.dumps(r, ensure_ascii=False) for r in records_]
    lines.insert(deep_at, DEEP)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_deep_line_in_a_gemini_transcript_loses_only_that_line(tmp_path: Path):
    path = _gemini_transcript(tmp_path / "session.jsonl", deep_at=3)
    assert _transcript_turns(path) == [
        ("user", "first question"),
        ("agent", "first answer"),
        ("user", "second question\u2028with a break"),  # a raw U+2028 does not split its line
        ("agent", "the answer after the deep line"),
    ]
    (tmp_path / "whole.json").write_text(json.dumps({"messages": []})[:-2] + DEEP + "]}")
    assert _transcript_turns(tmp_path / "whole.json") == []  # one deep document: nothing, no crash


def test_the_turn_after_a_deep_line_is_captured_by_the_after_agent_hook(project: Project, tmp_path: Path):
    project.ensure_data_dir()
    path = _gemini_transcript(tmp_path / "session.jsonl", deep_at=3)
    out = run_hook(
        event(
            "AfterAgent", project.root, prompt="second question", prompt_response="streamed", transcript_path=str(path)
        )
    )
    assert out == ""
    logs = records.list_records(Project.open(project.root), "logs")["records"]
    assert any(r["role"] == "agent" and "the answer after the deep line" in r["text"] for r in logs), logs


def test_a_deep_line_in_a_claude_transcript_loses_only_that_line(tmp_path: Path):
    def line(kind: str, text: str) -> str:
        content = text if kind == "user" else [{"type": "text", "text": text}]
        return json.dumps({"type": kind, "message": {"role": kind, "content": content}}, ensure_ascii=False)

    path = tmp_path / "claude.jsonl"
    path.write_text("\n".join([line("user", "q1"), DEEP, line("assistant", "a1\u2029b"), line("user", "q2")]) + "\n")
    assert claude_turns(path) == [("user", "q1"), ("agent", "a1\u2029b"), ("user", "q2")]
