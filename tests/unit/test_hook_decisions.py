"""The prompt hook's record of what it injected and held back (``memory.decisions``), and the
browser's Turns page over it: bounded, redacted, ids and numbers only."""

from __future__ import annotations

import json

import pytest

from contextware.hosts.hooks.handlers import run_hook
from contextware.memory import records
from contextware.memory.turns import decisions
from tests.support.browser import request, served_browser

FACT = "Never deploy on Fridays; production releases go out Monday to Thursday only."
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _prompt(project, text: str, session: str = "s_1") -> dict | None:
    (project.root / ".git").mkdir(exist_ok=True)
    event = {"session_id": session, "cwd": str(project.root), "hook_event_name": "BeforeAgent", "prompt": text}
    event["contextware_host"] = "claude"  # a Gemini CLI session's first prompt also carries the briefing
    out = run_hook(json.dumps(event))
    return json.loads(out) if out.strip() else None


@pytest.mark.slow
def test_each_prompt_leaves_its_decision(project):
    fact = records.save_fact(project, FACT, kind="constraint")["id"]
    records.save_fact(project, "The CI cache lives in an S3 bucket named ci-cache.", kind="environment")
    injected = _prompt(project, "Can I deploy the release to production on Friday?")
    assert injected is not None and FACT in injected["hookSpecificOutput"]["additionalContext"]
    nothing = _prompt(project, f"what is the capital of Peru? my token is {TOKEN}", session="s_2")
    assert nothing is None
    newest, older = decisions.recent(project)[:2]
    assert older["session"] == "s_1" and [x["id"] for x in older["injected"]] == [fact]
    assert older["verdict"].startswith("Answered") and older["gate"] > 0
    assert newest["session"] == "s_2" and newest["injected"] == [] and newest["verdict"].startswith("Nothing answered")
    assert newest["held"] and all(any(ch.isdigit() for ch in h["why"]) for h in newest["held"])
    assert TOKEN not in json.dumps(newest) and "capital of Peru" in newest["prompt"]
    text = (project.data_dir / decisions.FILE_NAME).read_text()
    assert FACT not in text  # ids and numbers, never a memory's text


def test_the_record_stays_bounded(project, monkeypatch):
    project.ensure_data_dir()
    monkeypatch.setattr(decisions, "MAX_BYTES", 5_000)
    monkeypatch.setattr(decisions, "KEEP", 10)
    for i in range(200):
        decisions.record(project, {"at": str(i), "prompt": "x" * 100})
    kept = decisions.recent(project)
    assert 10 <= len(kept) < 60 and kept[0]["at"] == "199"
    assert (project.data_dir / decisions.FILE_NAME).stat().st_size <= 5_000 + 200


@pytest.mark.slow
def test_the_turns_page_shows_what_was_injected_and_held_back(project):
    fact = records.save_fact(project, FACT, kind="constraint")["id"]
    _prompt(project, "Can I deploy the release to production on <b>Friday</b>?")
    with served_browser(project) as served:
        page = request(served.port, "/turns", token=served.token)
    assert page.status == 200 and f"/memory/{fact}" in page.text and "/sessions/s_1" in page.text
    assert "&lt;b&gt;Friday&lt;/b&gt;" in page.text and "<b>Friday" not in page.text
