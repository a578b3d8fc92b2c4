"""hook.py as a process, fed the JSON that Gemini CLI sends: the SessionStart briefing, and failures
that print nothing, exit 0 and are logged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from contextware.core.fence import FENCE_CLOSE, FENCE_OPEN
from contextware.memory import records
from contextware.storage.project import Project
from tests.support.hook_events import context_of, event
from tests.support.repo import SCRIPTS


def hook_script(stdin: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPTS / "hook.py")],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


GEMINI_ENV = {"GEMINI_SESSION_ID": "sess_1", "GEMINI_CWD": "."}  # what Gemini CLI sets for its hooks


def test_session_start_briefs_and_fences(project: Project):
    records.save_fact(project, "Never run migrations against production from a laptop.", kind="constraint")
    proc = hook_script(event("SessionStart", project.root, source="startup"), project.root, GEMINI_ENV)
    assert proc.returncode == 0 and proc.stderr == ""
    ctx = context_of(proc.stdout, "SessionStart")
    memory, note = ctx.split(FENCE_CLOSE)  # the fenced briefing, then how to reach memory in this host
    assert memory.startswith(FENCE_OPEN) and note.startswith("\nSearch this memory") and "\n" not in note[1:]
    assert "not instructions" in ctx and "Never run migrations against production from a laptop." in memory
    proc = hook_script(event("BeforeAgent", project.root, prompt="hi"), project.root, GEMINI_ENV)
    assert proc.returncode == 0 and proc.stderr == "" and "Search this memory" not in proc.stdout  # once


def test_a_session_start_piped_in_by_hand_is_briefed_after_a_captured_turn(project: Project):
    """The issue's reproduction, as processes: a fact saved as a user saves one (``save_fact.py``,
    no kind: a note), a captured agent turn, then a SessionStart nobody named (no ``--host``, no
    Gemini CLI variables): the briefing, with the saved fact."""
    fact = "Never run migrations against production from a laptop."
    saved = subprocess.run(
        [sys.executable, str(SCRIPTS / "save_fact.py"), fact], cwd=project.root, capture_output=True, timeout=120
    )
    assert saved.returncode == 0, saved.stderr
    turn = event("AfterAgent", project.root, prompt="How do we deploy?", prompt_response="With make deploy.")
    assert hook_script(turn, project.root).returncode == 0
    proc = hook_script(event("SessionStart", project.root, source="startup"), project.root)
    assert proc.returncode == 0 and proc.stderr == ""
    assert fact in context_of(proc.stdout, "SessionStart")


def test_failures_print_nothing_exit_zero_and_are_logged(project: Project):
    project.ensure_data_dir()
    (project.data_dir / "config.json").write_text("{not json")
    proc = hook_script(event("BeforeAgent", project.root, prompt="how do we deploy?"), project.root)
    assert (proc.returncode, proc.stdout) == (0, "")
    log = (project.data_dir / "hooks.log").read_text()
    assert "BeforeAgent failed" in log and "config.json" in log
    garbage = hook_script("this is not json", project.root)
    assert (garbage.returncode, garbage.stdout) == (0, "")
    unknown = hook_script(event("Notification", project.root), project.root)
    assert (unknown.returncode, unknown.stdout) == (0, "")
