"""Issue 34 item 1: each kind of row, written by each writer, read back by each reader.

Writers: the command line (a fact, an episode, a conversation log), MCP ``save_fact``, Gemini CLI's
AfterAgent hook and Claude Code's Stop hook (captured turns; a "remember" turn becomes a fact), a
session digest, retention (old turns folded into a digest and archived) and an import of another
project's export.  Readers: the session briefing (``context``, MCP ``load_session_context``, Claude
Code's SessionStart hook, a Gemini session's first prompt), ``recall``, ``memory list``,
``export``, the memory browser's pages and ``memory stats``.  Every read must succeed (a row is
reported damaged only when its stored bytes differ, and none do here) and show each writer's rows
where that reader shows them.  The briefing used to fail after the first captured turn: its
checksum read missed columns the hook's writer hashed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from contextware.browser import views
from contextware.cli import run
from contextware.core.settings import Settings
from contextware.hosts.hooks.handlers import run_hook
from contextware.hosts.mcp.server import call_tool
from contextware.memory.team.importing import import_memory
from contextware.memory.team.share import export_memory
from contextware.memory.turns.digest import is_digest, refresh_digest
from contextware.memory.turns.retention import retain
from contextware.storage.project import Project
from tests.support.hook_events import write_transcript

FACTS = {
    "cli": "Release builds are signed with the hardware key kept in the office safe.",
    "mcp": "The staging cluster is rebuilt from scratch every Sunday night.",
    "remember": "Release notes go in CHANGELOG.md under Unreleased",
    "imported": "Feature flags live in flags.yaml and are reviewed by the platform team.",
}


def _json(capsys: pytest.CaptureFixture[str], code: int) -> dict[str, Any]:
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


@pytest.fixture
def written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Project, Settings, dict[str, str]]:
    """One project holding every writer's rows; the ids that must be read back, by writer."""
    import os

    root = tmp_path / "proj"
    root.mkdir()
    settings = Settings.from_env({**os.environ, "CONTEXTWARE_PROJECT_ROOT": str(root)})
    ids: dict[str, str] = {}

    def cli(*argv: str) -> dict[str, Any]:
        return _json(capsys, run(argv[0], list(argv[1:]), settings=settings))

    for n, text in enumerate(("How do we cut a release?", "Where is the signing key?", "Who approves it?")):
        cli("save", text, "--type", "log", "--role", "user", "--session", "s-retained")
        cli(
            "save",
            f"Answer {n}: ask the release manager.",
            "--type",
            "log",
            "--role",
            "agent",
            "--session",
            "s-retained",
        )
    time.sleep(0.2)
    retained = retain(Project.open(root), older_than=1e-6)  # s-retained: a digest, its turns archived
    assert retained["sessions"] == 1, retained

    ids["cli fact"] = cli("save", FACTS["cli"], "--kind", "constraint")["id"]
    ids["cli episode"] = cli(
        "save",
        "Pinned the signing tool to 2.3.",
        "--type",
        "episode",
        "--goal",
        "Fix release signing",
        "--result",
        "success",
    )["id"]
    for n in range(3):  # three requests: a session long enough to digest
        cli("save", f"Which port does admin API {n} use?", "--type", "log", "--role", "user", "--session", "s-cli")
        ids["cli log"] = cli(
            "save", f"Port 944{n}, TLS only.", "--type", "log", "--role", "agent", "--session", "s-cli"
        )["id"]

    answer = call_tool("save_fact", {"content": FACTS["mcp"], "kind": "convention"}, settings=settings)
    assert not answer["isError"], answer
    ids["mcp fact"] = json.loads(answer["content"][0]["text"])["id"]

    gemini_turn = {
        "session_id": "s-gemini",
        "cwd": str(root),
        "hook_event_name": "AfterAgent",
        "prompt": "Please remember: release notes go in CHANGELOG.md under Unreleased",
        "prompt_response": "Noted.",
    }
    assert run_hook(json.dumps(gemini_turn), settings) == ""
    transcript = write_transcript(tmp_path / "t.jsonl", "Can I deploy on Friday?", "No: Monday to Thursday.")
    claude_stop = {
        "session_id": "s-claude",
        "transcript_path": str(transcript),
        "cwd": str(root),
        "hook_event_name": "Stop",
        "last_assistant_message": "No: Monday to Thursday.",
        "contextware_host": "claude",
    }
    assert run_hook(json.dumps(claude_stop), settings) == ""

    project = Project.open(root)
    digest = refresh_digest(project, "s-cli")
    assert digest is not None and digest.get("id"), digest
    ids["digest"] = digest["id"]

    (tmp_path / "other").mkdir()
    other = Project.open(tmp_path / "other")
    from contextware.memory.records import save_fact

    ids["imported fact"] = save_fact(other, FACTS["imported"], kind="convention")["id"]
    export_memory(other, tmp_path / "team.jsonl")
    report = import_memory(project, (tmp_path / "team.jsonl").read_text(), source="team.jsonl")
    assert report["collections"]["facts"]["added"] == 1, report
    return Project.open(root), settings, ids


@pytest.mark.slow
def test_every_reader_reads_every_writers_rows(written, capsys: pytest.CaptureFixture[str]):
    project, settings, ids = written

    def cli(*argv: str) -> dict[str, Any]:
        return _json(capsys, run(argv[0], list(argv[1:]), settings=settings))

    listed = {
        r["id"]: r
        for c in ("facts", "episodes", "logs")
        for r in cli("memory", "list", "--collection", c, "--limit", "200")["records"]
    }
    assert [w for w, i in ids.items() if i not in listed] == []
    remembered = [r for r in listed.values() if r["collection"] == "facts" and FACTS["remember"] in r["text"]]
    assert len(remembered) == 1, "the Gemini hook's remember turn is a fact"
    sessions = {r.get("session_id") for r in listed.values() if r["collection"] == "logs"}
    assert {"s-cli", "s-gemini", "s-claude"} <= sessions and "s-retained" not in sessions  # archived
    digests = [r for r in listed.values() if r["collection"] == "episodes" and is_digest(r)]
    assert len(digests) == 2, "retention's digest and the refreshed one"

    briefing = cli("context")
    text = json.dumps(briefing)
    assert all(FACTS[w] in text for w in ("cli", "mcp", "remember")), briefing.get("markdown", "")[:2000]
    tool = call_tool("load_session_context", {"format": "json"}, settings=settings)
    assert not tool["isError"] and FACTS["cli"] in tool["content"][0]["text"]
    start = {"session_id": "s-new", "cwd": str(project.root), "hook_event_name": "SessionStart", "source": "startup"}
    assert FACTS["mcp"] in run_hook(json.dumps({**start, "contextware_host": "claude"}), settings)
    first = {**start, "session_id": "s-new-gemini", "hook_event_name": "BeforeAgent"}
    first["prompt"] = "Which port does the admin API use?"
    assert FACTS["cli"] in run_hook(json.dumps(first), settings)  # a Gemini session's first prompt: the briefing

    for writer, fact in FACTS.items():
        found = cli("recall", "--query", fact, "--limit", "3")["results"]
        assert found and fact in found[0].get("text", ""), (writer, found[:1])
    logs = cli("recall", "--query", "admin API port TLS", "--scope", "logs")["results"]
    assert logs and any("TLS only" in r.get("text", "") for r in logs)

    assert run("export", ["--output", "-", "--include-logs"], settings=settings) == 0
    shown = capsys.readouterr().out  # the team file's JSON Lines
    assert all(ids[w] in shown for w in ("cli fact", "mcp fact", "imported fact", "cli episode")), shown[:500]

    assert views.dashboard(project) and views.review(project) is not None
    browsed = {s.get("session_id") or s.get("id") for s in views.sessions(project)}
    assert {"s-cli", "s-gemini", "s-claude"} <= browsed, browsed
    assert views.timeline(project, "s-gemini")

    stats = cli("memory", "stats")
    assert stats["tables"]["facts"]["rows"] >= 4 and stats["tables"]["logs"]["rows"] >= 4, stats
