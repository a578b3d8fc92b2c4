"""Gemini CLI hands BeforeAgent and AfterAgent the prompt with what hooks added before it (each block
in ``<hook_context>``, escaped; seen with the real CLI 0.61.0): recall must search and the log must
keep only what the person typed, however long the session's briefing is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextware.hosts.hooks.handlers import run_hook
from contextware.memory import records
from contextware.storage.project import Project

FACT = "Never deploy on Fridays; production releases go out Monday to Thursday only."
QUESTION = "Can I deploy the release to production on Friday?"
BRIEFING = (
    "<hook_context>&lt;contextware-memory&gt;\n# Project memory: proj\n"
    + "\n".join(f"- central file src/module_{i}.py: parses the billing ledger" for i in range(60))
    + "\n&lt;/contextware-memory&gt;\nSearch this memory from the shell.</hook_context>\n\n"
)


def _event(name: str, root: Path, **extra: str) -> str:
    return json.dumps({"session_id": "s_1", "cwd": str(root), "hook_event_name": name, **extra})


@pytest.mark.slow
def test_recall_and_the_log_see_only_the_typed_prompt(project: Project):
    (project.root / ".git").mkdir()
    records.save_fact(project, FACT, kind="constraint")
    assert len(BRIEFING) > 2000  # recall reads 2000 characters: the question would be cut off
    out = json.loads(run_hook(_event("BeforeAgent", project.root, prompt=BRIEFING + QUESTION)))
    assert FACT in out["hookSpecificOutput"]["additionalContext"]

    run_hook(_event("AfterAgent", project.root, prompt=BRIEFING + QUESTION, prompt_response="No."))
    logs = records.list_records(project, "logs")["records"]
    assert sorted((r["role"], r["text"]) for r in logs) == [("agent", "No."), ("user", QUESTION)]
