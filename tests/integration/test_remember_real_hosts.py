"""Issue 34 item 7's target against the REAL host CLIs (fake APIs): a user turn "Please remember:
release notes go in CHANGELOG.md under Unreleased" is recalled whole, as a fact, in the next
session's briefing of Gemini CLI and of Claude Code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from contextware.memory import records
from contextware.storage.project import Project
from tests.support.claude_fixtures import run_claude
from tests.support.fake_anthropic_api import message_texts
from tests.support.fake_gemini_api import Reply
from tests.support.scripts import run_script

pytestmark = pytest.mark.slow

RULE = "Please remember: release notes go in CHANGELOG.md under Unreleased"
FACT = "Release notes go in CHANGELOG.md under Unreleased."
LATER = "I am about to cut a release; what should I update?"


def _facts(root: Path) -> list[tuple[str, str]]:
    rows = records.list_records(Project.open(root), "facts", limit=10)["records"]
    return [(r["text"], r["kind"]) for r in rows]


def _gemini(gemini_bin: str, root: Path, env: dict, prompt: str) -> None:
    args = [gemini_bin, "--skip-trust", "-m", "gemini-2.5-flash", "-o", "json", "-p", prompt]
    proc = subprocess.run(
        args, cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_gemini_next_session_is_briefed_with_the_remembered_fact(gemini_bin, fake_gemini_api, gemini_cli_env, tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert run_script("install", "gemini", "--project", cwd=root, env=gemini_cli_env).returncode == 0
    trusted = Path(gemini_cli_env["GEMINI_CLI_HOME"]) / ".gemini" / "trustedFolders.json"
    trusted.write_text(json.dumps({str(root): "TRUST_FOLDER"}))
    fake_gemini_api.push(Reply(text=["Noted: CHANGELOG.md, under Unreleased."]))
    _gemini(gemini_bin, root, gemini_cli_env, RULE)
    assert _facts(root) == [(FACT, "convention")]
    fake_gemini_api.push(Reply(text=["Update CHANGELOG.md under Unreleased."]))
    _gemini(gemini_bin, root, gemini_cli_env, LATER)  # a new session, not a resume
    sent = "\n".join(fake_gemini_api.chat_requests()[-1].texts())
    assert "## Conventions\n- " + FACT in sent, sent[-3000:]


def test_claude_next_session_is_briefed_with_the_remembered_fact(claude_bin, fake_anthropic_api, claude_env, tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert run_script("install", "claude", "--project", cwd=root, env=claude_env).returncode == 0
    fake_anthropic_api.push("Noted: CHANGELOG.md, under Unreleased.")
    assert run_claude(claude_bin, RULE, root, claude_env).returncode == 0
    assert _facts(root) == [(FACT, "convention")]
    fake_anthropic_api.push("Update CHANGELOG.md under Unreleased.")
    assert run_claude(claude_bin, LATER, root, claude_env).returncode == 0
    system = "\n".join(message_texts(fake_anthropic_api.message_requests()[-1], "system"))
    briefing = system.split("SessionStart hook additional context: ", 1)[1]
    assert "## Conventions\n- " + FACT in briefing, briefing[:3000]
