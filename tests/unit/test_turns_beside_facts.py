"""A captured turn that shares one rare word with the question does not outrank the saved fact that
answers it (issue 30): among hundreds of turns about other work, "lock" scores high on the logs
table's own full-text statistics, so a turn's BM25 counts only as far as the turn covers the
question (``RankerParams.turn_bm25``).  Real LanceDB, the real model."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from contextware.memory.recall.pipeline import recall
from contextware.memory.recall.query import parse_query
from contextware.memory.team.memfile import render
from contextware.memory.team.share import import_memory

START = datetime(2024, 5, 6, 9, 0, tzinfo=timezone.utc)
ANSWER = (
    "Poetry locking is slow when packages publish no metadata on PyPI: it must download each to learn "
    "its dependencies; -vvv shows which."
)
FACTS = (
    ANSWER,
    "poetry config virtualenvs.in-project true makes Poetry create .venv inside the repository.",
    "Since pip 20.3 the backtracking resolver is the default: it rejects inconsistent sets instead of installing them.",
    "Fixtures defined in conftest.py are available, without import, to every test in that folder and below.",
)
LOCK_TURN = "[ft] Add missing lock to kerning function"
SCRIPTS = ("Arabic", "Hebrew", "Thai", "Khmer", "Myanmar", "Tibetan", "Devanagari", "Bengali")
WORK = ("shaper", "buffer", "cluster", "glyph", "mark", "ligature", "cmap", "GSUB", "GPOS", "kern")


def _rows() -> list[dict]:
    rows = [
        {"id": f"fact-{i:012x}", "kind": "note", "text": text, "created_at": (START + timedelta(days=i)).isoformat()}
        for i, text in enumerate(FACTS)
    ]
    for n in range(400):  # a project's history: commits about other work, subject and message
        script, work = SCRIPTS[n % len(SCRIPTS)], WORK[(n * 7) % len(WORK)]
        subject = LOCK_TURN if n == 200 else f"[{work}] Fix {script} {work} handling in hb-ot-{work.lower()}.cc"
        for k, (role, text) in enumerate(
            (("user", subject), ("agent", f"Adjusted the {work} pass for {script} text; tests updated ({n})."))
        ):
            rows.append(
                {
                    "id": f"log-{2 * n + k:012x}",
                    "session_id": f"hb-{n // 10}",
                    "role": role,
                    "text": text,
                    "created_at": (START + timedelta(hours=n, minutes=k)).isoformat(),
                }
            )
    return rows


def test_a_turn_sharing_one_rare_word_does_not_outrank_the_fact_that_answers(project):
    import_memory(project, render(_rows()), source="history")
    query = parse_query("why does locking take forever?", scope="all", limit=5, min_confidence=0)
    results = recall(project, query).results
    texts = [r.get("text") for r in results]
    assert texts[0] == ANSWER, texts
