"""Named sessions, feature sessions and --resume-id (contextware.offload.sessions) against the REAL
Gemini CLI and the local fake API: turns and resume, the cumulative summary, sessions
list/show/delete, the 3-error policy with its back-off, rotation at the context limit, and recovery
after our state is lost.
"""

from __future__ import annotations

import json
import shutil

import pytest

from contextware.core.errors import UsageError
from contextware.gemini.sessions import list_sessions
from contextware.offload import sessions as offload_sessions
from contextware.offload.run import offload, sessions_command
from contextware.storage.project import Project
from tests.support.fake_gemini_api import Reply
from tests.support.offload_helpers import table_rows, user_text


def _state(project, name: str) -> dict:
    return json.loads((project.data_dir / "offloads" / "sessions" / name / "session.json").read_text())


def test_named_session_turns_resume_summary_and_management(real_gemini, make_project):
    project = make_project(offload_summarizer="gemini")
    real_gemini.push(
        "Turn one: the router lives in src/util.py.",
        "Turn two: handler calls route.",
        '```json\n{"turn_summary": "Handler calls route.", "summary": "Router in util; handler calls it."}\n```',
    )
    one = offload(project, "Where is the router?", session="routing")
    assert one["turn"] == 1 and one["summary"] == "Turn one: the router lives in src/util.py."
    assert one["new_gemini_session"] is True and one["gemini_session_id"].startswith("cw_routing_")
    sid = one["gemini_session_id"]
    assert "_" in sid[:8] and "-" not in sid[:8]

    two = offload(project, "Who calls it?", session="routing", files="src/app.py")
    assert two["turn"] == 2 and two["new_gemini_session"] is False and two["gemini_session_id"] == sid
    assert two["summary"] == "Router in util; handler calls it." and two["summary_method"] == "gemini"
    assert two["turn_summary"] == "Handler calls route."
    resumed = user_text(real_gemini.chat_requests()[1])
    assert "Where is the router?" in resumed and "Who calls it?" in resumed and "UNIQUE-APP-CONTENT" in resumed

    sdir = project.data_dir / "offloads" / "sessions" / "routing"
    turns = sorted(p.name for p in sdir.glob("full_response-*.md"))
    assert len(turns) == 2 and two["full_response_path"].endswith(turns[1])
    assert (sdir / turns[1]).read_text() == "Turn two: handler calls route."
    assert (sdir / "summary.md").read_text() == two["summary"]
    state = _state(project, "routing")
    assert [t["prompt"] for t in state["turns"]] == ["Where is the router?", "Who calls it?"]
    assert state["gemini_session_id"] == sid and state["tokens"]["total"] == one["tokens"] + two["tokens"]
    assert state["turns"][1]["source_paths"] == ["src/app.py"]

    rows = {(r["type"], r["turn_number"]): r for r in table_rows(project)}
    assert set(rows) == {("research", 1), ("research", 2), ("synthesis", 2)}
    assert rows[("synthesis", 2)]["summary"] == two["summary"]
    assert all(r["session_name"] == "routing" for r in rows.values())

    listed = sessions_command(project, "list")
    assert [(s["name"], s["turns"]) for s in listed["sessions"]] == [("routing", 2)]
    shown = sessions_command(project, "show", "routing")["session"]
    assert shown["summary"] == two["summary"] and [t["turn"] for t in shown["turns"]] == [1, 2]

    # --resume-id continues that Gemini session under another name of ours; an unknown id is bad input
    real_gemini.push("Turn three via resume.")
    three = offload(project, "Anything else?", session="followup", resume_id=sid)
    assert three["gemini_session_id"] == sid and three["turn"] == 1
    assert "Who calls it?" in user_text(real_gemini.chat_requests()[-1])
    with pytest.raises(UsageError) as info:
        offload(project, "q", resume_id="cw_nosuch_00000000")
    assert info.value.code == "unknown_session"
    assert not (project.data_dir / "offloads" / "sessions" / "cw_nosuch_00000000").exists()

    deleted = sessions_command(project, "delete", "routing")
    assert deleted["deleted"] == "routing" and deleted["gemini_sessions_deleted"] == [sid]
    assert not sdir.exists()
    assert {r["session_name"] for r in table_rows(project)} == {"followup"}
    assert sid not in [s.session_id for s in list_sessions(cwd=project.root)]


def test_three_errors_drop_the_session_with_linear_backoff(real_gemini, make_project, monkeypatch):
    project = make_project(offload_retry_backoff_s=10)
    slept: list[float] = []
    monkeypatch.setattr(offload_sessions, "_sleep", slept.append)
    real_gemini.push("Auth uses JWT tokens.")
    first = offload(project, "How does auth work?", feature="auth")
    old = first["gemini_session_id"]
    assert first["feature"] == "auth" and old.startswith("cw_auth_")
    assert real_gemini.chat_requests()[0].texts()[-1].startswith("[Feature: auth]")

    failure = Reply(status=400, error_message="Backend exploded.")
    real_gemini.push(failure, failure, failure, "Refresh tokens rotate daily.")
    out = offload(project, "How are tokens refreshed?", feature="auth")
    assert slept == [10, 20, 30]  # error_count x offload_retry_backoff_s
    assert len(out["retried_after"]) == 3 and "Backend exploded" in out["retried_after"][0]
    assert out["new_gemini_session"] is True and out["gemini_session_id"] != old
    assert out["gemini_session_reason"] == "3 consecutive errors or timeouts"
    chats = real_gemini.chat_requests()
    assert all("How does auth work?" in user_text(r) for r in chats[1:4])  # retried on the old session
    fresh = user_text(chats[-1])
    assert "[Feature: auth]" in fresh and "Auth uses JWT tokens." in fresh  # seeded with the summary
    assert "How does auth work?" not in fresh  # a new Gemini session, not the old history
    state = _state(project, "auth")
    assert state["error_count"] == 0 and [s["id"] for s in state["gemini_sessions"]] == [old, out["gemini_session_id"]]


def test_context_limit_starts_a_new_session_seeded_with_the_summary(real_gemini, make_project):
    project = make_project(offload_session_max_tokens=350_000)
    real_gemini.push(Reply(text="The billing module is huge.", prompt_tokens=400_000), "Invoices run nightly.")
    one = offload(project, "Map the billing module.", session="billing")
    assert one["context_tokens"] == 400_000 and "400000 tokens" in one["next_turn"]
    two = offload(project, "When do invoices run?", session="billing")
    assert two["new_gemini_session"] is True and two["gemini_session_id"] != one["gemini_session_id"]
    assert "400000" in two["gemini_session_reason"]
    sent = user_text(real_gemini.chat_requests()[-1])
    assert "The billing module is huge." in sent and "Map the billing module." not in sent
    assert two["summary"].startswith("The billing module is huge.") and "Invoices run nightly." in two["summary"]


def test_recovery_after_state_is_lost_and_unknown_ids_start_fresh(real_gemini, make_project):
    project = make_project()
    real_gemini.push("Search uses an inverted index.", "It is rebuilt hourly.", "Fresh start answer.")
    one = offload(project, "How does search work?", feature="search")
    sid = one["gemini_session_id"]
    shutil.rmtree(project.data_dir)  # our state is gone; Gemini CLI still has the session
    config = project.config
    project = Project.open(project.root)
    project.configure(**config.to_json())

    two = offload(project, "How often is it rebuilt?", feature="search")
    assert two["recovered"] == sid and two["gemini_session_id"] == sid and two["new_gemini_session"] is False
    assert "How does search work?" in user_text(real_gemini.chat_requests()[-1])  # resumed history

    state_path = project.data_dir / "offloads" / "sessions" / "search" / "session.json"
    state = json.loads(state_path.read_text())
    state["gemini_session_id"] = "cw_search_deadbeef"  # an id Gemini CLI does not know (exit 42)
    state_path.write_text(json.dumps(state))
    three = offload(project, "Start over?", feature="search")
    assert three["new_gemini_session"] is True and three["gemini_session_id"] not in (sid, "cw_search_deadbeef")
    assert "no longer knows" in three["gemini_session_reason"] and three["turn"] == 2
