"""Issue 34 item 3 against the REAL host CLIs (fake APIs): a resumed session keeps the first question
and the session briefing.  Gemini CLI 0.61 drops, on ``-r``, every stored user message that starts
with ``<hook_context>``, so the briefing must not be prepended to the first prompt; Claude Code's
``--continue`` replays the session's messages, the hook context among them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextware.memory import records
from contextware.storage.project import Project
from tests.support.claude_fixtures import run_claude
from tests.support.fake_anthropic_api import message_texts
from tests.support.fake_gemini_api import Reply
from tests.support.gemini_fixtures import gemini_turn
from tests.support.scripts import run_script

pytestmark = pytest.mark.slow

FACT = "Database migrations run with make migrate, never by hand against production."
FIRST = "What is the layout of the billing module?"
SECOND = "And where do its tests live?"


def test_gemini_resume_keeps_the_first_question_and_the_briefing(
    gemini_bin, fake_gemini_api, gemini_cli_env, project: Project
):
    root = project.root
    (root / ".git").mkdir()
    records.save_fact(project, FACT, kind="convention", topics=["database"])
    assert run_script("install", "gemini", "--project", cwd=root, env=gemini_cli_env).returncode == 0
    trusted = Path(gemini_cli_env["GEMINI_CLI_HOME"]) / ".gemini" / "trustedFolders.json"
    trusted.write_text(json.dumps({str(root): "TRUST_FOLDER"}))

    fake_gemini_api.push(Reply(text=["It has three parts."]))
    gemini_turn(gemini_bin, root, gemini_cli_env, FIRST)
    first = "\n".join(fake_gemini_api.chat_requests()[-1].texts())
    assert FIRST in first and FACT in first  # turn 1 carried the briefing
    fake_gemini_api.push(Reply(text=["Under tests/billing, next to the fixtures."]))
    gemini_turn(gemini_bin, root, gemini_cli_env, SECOND, resume=True)
    texts = fake_gemini_api.chat_requests()[-1].texts()
    sent = "\n".join(texts)
    assert FIRST in sent, texts  # the first question survived the resume ...
    assert FACT in sent and "contextware-memory" in sent  # ... and the briefing with it
    assert sent.count("Search this memory") == 1  # briefed once, not again on the resumed turn
    assert SECOND in sent


def test_claude_continue_keeps_the_first_question_and_the_briefing(
    claude_bin, fake_anthropic_api, claude_env, project: Project
):
    root = project.root
    records.save_fact(project, FACT, kind="convention", topics=["database"])
    assert run_script("install", "claude", "--project", cwd=root, env=claude_env).returncode == 0
    fake_anthropic_api.push("It has three parts.")
    proc = run_claude(claude_bin, FIRST, root, claude_env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for flag in ("--continue", "--resume"):
        extra = [flag] if flag == "--continue" else [flag, json.loads(proc.stdout)["session_id"]]
        fake_anthropic_api.push("Under tests/billing.")
        again = run_claude(claude_bin, SECOND, root, claude_env, *extra)
        assert again.returncode == 0, again.stderr[-3000:]
        request = fake_anthropic_api.message_requests()[-1]
        users = "\n".join(message_texts(request, "user"))
        everything = json.dumps(request.body)
        assert FIRST in users and SECOND in users, flag
        assert FACT in everything, flag  # the briefing is still in the resumed history
