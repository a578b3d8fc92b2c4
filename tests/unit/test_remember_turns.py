"""Issue 34 item 7: a user turn that asks to remember something becomes a fact of the right kind,
its source the turn; questions and idioms save nothing; digests say what they are."""

from __future__ import annotations

import json

import pytest

from contextware.hosts.hooks.handlers import _line, run_hook
from contextware.memory import records
from contextware.memory.briefing import render_markdown, session_context
from contextware.memory.remember import instruction, instructions
from contextware.memory.turns.digest import build_digest
from contextware.storage.project import Project
from tests.support.browser import form_token, request, served_browser
from tests.support.hook_events import event

RULE = "Please remember: release notes go in CHANGELOG.md under Unreleased"
FACT = "Release notes go in CHANGELOG.md under Unreleased."


@pytest.mark.parametrize(
    ("line", "text", "kind"),
    [
        (RULE, FACT, "convention"),
        ("remember that we deploy with make deploy", "We deploy with make deploy.", "convention"),
        ("Remember to run ruff before every commit.", "Run ruff before every commit.", "convention"),
        ("From now on, use pytest -n 0 on this machine", "From now on, use pytest -n 0 on this machine.", "convention"),
        ("Never push directly to main", "Never push directly to main.", "constraint"),
        ("always use uv, never pip", "Always use uv, never pip.", "constraint"),
        ("Keep in mind: I prefer small commits", "I prefer small commits.", "preference"),
        ("Don't forget: migrations must not run on Fridays", "Migrations must not run on Fridays.", "constraint"),
    ],
)
def test_instructions_become_facts_of_their_kind(line: str, text: str, kind: str):
    found = instruction(line)
    assert found is not None and (found.text, found.kind) == (text, kind)


@pytest.mark.parametrize(
    "line",
    [
        "Do you remember where the release notes go?",
        "do you remember the deploy command",
        "Remember when we broke prod?",
        "remember what the deploy script does",
        "Never mind, let's fix the login bug instead",
        "never mind",
        "Nevermind that test.",
        "Always the same error on CI",
        "Can you always run the tests?",
        "Why do we never use pip?",
        "The build always fails on Fridays",
        "I can't remember the deploy command, what is it",
        "Remember?",
        "Always.",
    ],
)
def test_questions_and_idioms_save_nothing(line: str):
    assert instruction(line) is None


def test_a_turn_gives_each_instruction_line_once():
    turn = f"{RULE}\nAlso, never commit .env files.\nNow fix the failing test in app/api.py.\n{RULE}"
    assert [(i.text, i.kind) for i in instructions(turn)] == [
        (FACT, "convention"),
        ("Never commit .env files.", "constraint"),
    ]


def _turn(project: Project, prompt: str, session: str = "sess_1") -> None:
    payload = event("AfterAgent", project.root, prompt=prompt, prompt_response="Noted.").replace("sess_1", session)
    assert run_hook(payload) == ""


@pytest.mark.slow
def test_a_remember_turn_is_a_fact_with_its_turn_as_source_recalled_whole_next_session(project: Project):
    (project.root / ".git").mkdir()
    _turn(project, RULE)
    facts = records.list_records(Project.open(project.root), "facts", limit=10)["records"]
    assert [(f["text"], f["kind"]) for f in facts] == [(FACT, "convention")]
    source = facts[0]["source"]
    assert source.startswith("turn:log-")
    user = records.get(Project.open(project.root), source.split(":", 1)[1])["record"]
    assert user["role"] == "user" and user["text"] == RULE  # the turn it came from
    # The next session's briefing, both hosts: the fact whole, in its section.
    claude = run_hook(event("SessionStart", project.root, source="startup", contextware_host="claude"))
    gemini = run_hook(event("BeforeAgent", project.root, prompt="What changed?").replace("sess_1", "sess_2"))
    for out in (claude, gemini):
        ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        assert f"## Conventions\n- {FACT}" in ctx
    # An ordinary fact in the browser: listed, shown with its source, deleted there for good.
    fid = facts[0]["id"]
    with served_browser(Project.open(project.root)) as served:
        port, token = served.port, served.token
        listing = request(port, "/memories?kind=convention", token=token).text
        assert fid in listing and "CHANGELOG.md under Unreleased" in listing
        shown = request(port, f"/memory/{fid}", token=token).text
        assert source in shown and "/edit" in shown and "/delete" in shown
        ask = request(port, f"/memory/{fid}/delete", token=token).text
        form = {"token": form_token(ask), "confirm": "yes"}
        done = request(port, f"/memory/{fid}/delete", method="POST", token=token, form=form)
        assert done.status == 200 and f"Deleted {fid}" in done.text
    _turn(project, RULE)  # the same turn captured again (PreCompress, say) does not bring it back
    assert records.list_records(Project.open(project.root), "facts", limit=10)["records"] == []


def test_questions_in_turns_add_no_fact(project: Project):
    (project.root / ".git").mkdir()
    _turn(project, "Do you remember where the release notes go?")
    _turn(project, "Never mind, what does app/api.py do?")
    assert records.list_records(Project.open(project.root), "facts", limit=10)["records"] == []


@pytest.mark.slow
def test_a_digest_is_labelled_a_session_summary_and_keeps_file_names_whole(project: Project):
    (project.root / ".git").mkdir()
    for prompt in (RULE, "How do we deploy?", "And where do the tests live?"):
        _turn(project, prompt)
    fields = build_digest([{"role": "user", "text": RULE}] * 3)
    assert fields is not None and "CHANGELOG.md under Unreleased" in fields["summary"]
    text = render_markdown(session_context(Project.open(project.root)))
    assert "Session summary, 20" in text and "Session of 3 requests:" not in text.split("## Recent work")[1]
    digest = next(r for r in records.list_records(Project.open(project.root), "episodes", limit=5)["records"])
    hit = {**digest, "collection": "episodes"}
    line = _line(hit)
    assert line.startswith("- [SESSION SUMMARY, 20") and "PAST" not in line and "CHANGELOG.md under" in line
