"""A captured turn is found by what it answers (issue 30, item 3): the turn written next after a
strong full-text match joins recall's candidates, and the ranker's ``follows`` feature reads the
match's BM25.  Nothing is copied into a turn's own index (docs/retrieval.md section 19).  Real
LanceDB, the real model; the joining is switched off through the parameters, never patched."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from contextware.memory.recall.params import DEFAULT_PARAMS
from contextware.memory.recall.pipeline import recall
from contextware.memory.recall.query import parse_query
from contextware.memory.team.memfile import render
from contextware.memory.team.share import import_memory

START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
QUESTION = "Which colour should the deploy button on the release page be, red like the alerts or blue like the brand?"
REPLY = "The blue one, please."
ASKED = "what colour did we pick for the deploy button?"
WITHOUT_JOINING = replace(DEFAULT_PARAMS, fusion=replace(DEFAULT_PARAMS.fusion, next_turns=0))


def _turn(n: int, session: str, role: str, text: str, minutes: int) -> dict:
    return {
        "id": f"log-{n:012x}",
        "session_id": session,
        "role": role,
        "text": text,
        "created_at": (START + timedelta(minutes=minutes)).isoformat(),
    }


def _chat(project, *, late_reply: bool = False) -> str:
    """Eighty turns about the deploy button in other sessions (each more like the question than the
    reply is: its own words never make it a candidate), then the question and its reply."""
    noise = (
        "The deploy button moved to the top bar in check {i}.",
        "Deploy button check {i}: it still works after the upgrade.",
        "Button audit {i}: the deploy button stays.",
    )
    rows = [_turn(i, f"other-{i % 8}", "user" if i % 2 else "agent", noise[i % 3].format(i=i), i) for i in range(80)]
    rows.append(_turn(200, "colours", "agent", QUESTION, 100))
    rows.append(_turn(201, "colours", "user", REPLY, 101 + (30 if late_reply else 0)))
    import_memory(project, render(rows), source="chat")
    return rows[-1]["id"]


def _ids(project, params=DEFAULT_PARAMS) -> list[str]:
    query = parse_query(ASKED, scope="logs", limit=10, min_confidence=0)
    return [r["id"] for r in recall(project, query, params).results]


def test_a_reply_is_found_by_the_question_it_answers(project):
    reply = _chat(project)
    assert reply in _ids(project)
    assert reply not in _ids(project, WITHOUT_JOINING)  # its own words never reach the candidates


def test_a_turn_written_long_after_the_match_is_not_its_reply(project):
    reply = _chat(project, late_reply=True)  # half an hour later: another exchange
    assert reply not in _ids(project)


def test_a_reply_the_filters_exclude_is_never_joined(project):
    """The joined turn passes the same filter as the search (a branch's view, ``--since``): here one
    that keeps only the agent's turns, so the user's reply stays out."""
    from contextware.memory.recall.search import next_turns

    reply = _chat(project)
    table = project.db.open_table("logs")
    question = table.search().where("id = 'log-0000000000c8'").to_list()
    assert [r["id"] for r in next_turns(project, table, question, None)] == [reply]
    assert next_turns(project, table, question, "role = 'agent'") == []


def test_a_question_that_names_a_speaker_finds_what_that_speaker_said(project):
    """A chat of several people is asked about who said what (issue 30, item 3: a turn is searched
    with its speakers): of two turns about the team dinner in the same words, the one Bob wrote
    answers "what did Bob cook?".  The ranker's ``speaker`` feature
    reads the turn's ``speaker`` column; with its weight 0 Alice's turn comes first."""
    from contextware.memory.recall.params import RankerParams

    def said(n: int, speaker: str, text: str, minutes: int) -> dict:
        return {**_turn(n, "dinner", "user", text, minutes), "speaker": speaker}

    rows = [
        said(1, "Alice", "Cooking for the team dinner was fun: I made a lasagna.", 0),
        said(2, "Bob", "Cooking for the team dinner was fun: I made a mushroom risotto.", 1),
        said(3, "Alice", "Next time let's book a table somewhere instead.", 2),
    ]
    import_memory(project, render(rows), source="chat")
    query = parse_query("What did Bob cook for the team dinner?", scope="logs", limit=3, min_confidence=0)
    ranker = DEFAULT_PARAMS.ranker
    unnamed = replace(DEFAULT_PARAMS, ranker=RankerParams(memory=ranker.memory, logs=replace(ranker.logs, speaker=0.0)))
    first = recall(project, query).results[0]
    assert first["id"] == rows[1]["id"] and first["speaker"] == "Bob"
    assert recall(project, query, unnamed).results[0]["id"] == rows[0]["id"]
