"""Each session is briefed once (``hosts/hooks/briefed.py``): at SessionStart, or on the first
BeforeAgent of a Gemini CLI session whose SessionStart gave nothing; a resumed Gemini CLI session,
which lost what was stored behind ``<hook_context>``, is briefed again with its earlier questions."""

from __future__ import annotations

import json

import pytest

from contextware.core.fence import FENCE_CLOSE
from contextware.hosts.hooks import briefed
from contextware.hosts.hooks.handlers import run_hook
from contextware.memory import records
from contextware.storage.project import Project
from tests.support.hook_events import context_of, event

FACT = "Database migrations run with make migrate, never by hand."


@pytest.mark.slow
def test_gemini_is_briefed_at_session_start_once_and_a_resume_recalls_its_questions(project: Project):
    """Gemini CLI's SessionStart gets the briefing (the loop smoke: the saved fact after a captured
    turn); its first prompt is not briefed again; a resumed session (``-r``, which drops every user
    message that starts with ``<hook_context>``: with ``-p`` the first question) gets the briefing
    and the questions asked in it before; a session whose SessionStart gave nothing is briefed on
    its first prompt."""
    records.save_fact(project, FACT, kind="convention")
    gemini = {"contextware_host": "gemini"}  # the hook process names Gemini CLI from its variables
    run_hook(
        event("AfterAgent", project.root, prompt="How do we deploy?", prompt_response="With make deploy.", **gemini)
    )
    start = context_of(run_hook(event("SessionStart", project.root, source="startup", **gemini)), "SessionStart")
    assert FACT in start and "Search this memory" in start.split(FENCE_CLOSE, 1)[1]
    assert "Asked earlier" not in start
    first = run_hook(event("BeforeAgent", project.root, prompt="What is on the roadmap?", **gemini))
    assert "Search this memory" not in first
    resumed = context_of(run_hook(event("SessionStart", project.root, source="resume", **gemini)), "SessionStart")
    assert FACT in resumed and "## Asked earlier in this session\n1. How do we deploy?" in resumed
    other = event("BeforeAgent", project.root, prompt="hi", **gemini).replace("sess_1", "sess_2")
    assert "Search this memory" in context_of(run_hook(other), "BeforeAgent")  # no SessionStart: here
    claude = json.loads(run_hook(event("SessionStart", project.root, contextware_host="claude")))
    assert FACT in claude["hookSpecificOutput"]["additionalContext"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", records.FACT_KINDS)
def test_a_session_start_nobody_named_is_briefed_after_a_captured_turn(project: Project, kind: str):
    """Piped in by hand (``echo '{...SessionStart...}' | contextware hook``) or by a host that does
    not name itself: the briefing at once, with the fact, after a captured agent turn; the
    session's first prompt is then not briefed a second time.  Every kind of fact is briefed: a
    note, which a plain ``contextware save`` gives, was left out until the loop smoke caught it."""
    records.save_fact(project, FACT, kind=kind)
    run_hook(event("AfterAgent", project.root, prompt="How do we deploy?", prompt_response="With make deploy."))
    out = json.loads(run_hook(event("SessionStart", project.root, source="startup")))
    assert FACT in out["hookSpecificOutput"]["additionalContext"]
    first = run_hook(event("BeforeAgent", project.root, prompt="How do we migrate the database?"))
    assert "Search this memory" not in first and "# Project memory" not in first


@pytest.mark.slow
def test_the_briefed_list_stays_bounded_and_odd_ids_are_harmless(project: Project):
    records.save_fact(project, FACT, kind="convention")
    data = project.data_dir
    for i in range(briefed.KEEP + 20):
        briefed.mark_briefed(data, f"s{i}")
    lines = (data / briefed.FILE).read_text().splitlines()
    assert len(lines) == briefed.KEEP and lines[-1] == f"s{briefed.KEEP + 19}"
    assert not briefed.was_briefed(data, "s0") and briefed.was_briefed(data, f"s{briefed.KEEP}")
    assert not briefed.was_briefed(data, "") and not briefed.was_briefed(data, "\n")
    briefed.mark_briefed(data, "a\nb c")  # whitespace cannot split a line into two ids
    assert briefed.was_briefed(data, "abc") and not briefed.was_briefed(data, "a")


def test_the_note_names_the_command_the_hooks_use(monkeypatch):
    from contextware.hosts.hooks import instructions

    monkeypatch.setattr(instructions.shutil, "which", lambda name: "/usr/local/bin/contextware")
    assert instructions.script_command("recall.py", "recall") == "contextware recall"
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    assert instructions.script_command("recall.py", "recall").endswith("scripts/recall.py")  # a clone
    monkeypatch.setattr(instructions, "__file__", "/nowhere/site-packages/contextware/hosts/hooks/instructions.py")
    assert instructions.script_command("recall.py", "recall").endswith(" -I -m contextware.cli recall")  # a package
