"""The fitted ranker of memories (``memory/recall/ranker.py``): its features, its determinism, the
fit command that writes its weights (issue 30, item 2).  Real LanceDB in a temp dir, the real model."""

from __future__ import annotations

import ast
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from contextware.memory import records
from contextware.memory.recall import DEFAULT_PARAMS, ask, parse_query
from contextware.memory.recall.fusion import judge
from contextware.memory.recall.params import ConfidenceWeights, RankerParams, RankerWeights
from contextware.memory.recall.ranker import FEATURES, features, named_date, scores
from contextware.memory.recall.search import candidates

REPO = Path(__file__).resolve().parents[2]
SMOKE_WEIGHTS = REPO / "bench" / "data" / "smoke_ranker_weights.py"


def _weights(path: Path) -> dict[str, dict[str, float]]:
    """The three dicts a weights file assigns, read without importing it."""
    out = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = ast.literal_eval(node.value)  # type: ignore[arg-type]
    return out


def test_the_dates_a_question_names():
    assert named_date("What did Gina find for her clothing store on 1 February, 2023?") == (2023, 2, 1)
    assert named_date("What painting did Melanie show to Caroline on October 13, 2023?") == (2023, 10, 13)
    assert named_date("What setback did Melanie face in October 2023?") == (2023, 10, None)
    assert named_date("When did Melanie go camping in June?") == (None, 6, None)
    assert named_date("How many times has Melanie gone to the beach in 2023?") == (2023, None, None)
    assert named_date("What may we use for the build cache?") is None
    assert named_date("which registry do we push images to?") is None


def test_the_default_weights_are_the_fitted_ones_and_name_every_feature():
    fitted = _weights(REPO / "contextware" / "memory" / "recall" / "ranker_weights.py")
    assert set(fitted) == {"MEMORY", "LOGS", "CONFIDENCE"}
    names = {*FEATURES, "bias"}
    assert set(fitted["MEMORY"]) == names and set(fitted["LOGS"]) == names
    assert DEFAULT_PARAMS.ranker == RankerParams(RankerWeights(**fitted["MEMORY"]), RankerWeights(**fitted["LOGS"]))
    assert DEFAULT_PARAMS.ranker.memory.cosine == 1.0  # the memories' scores in a cosine's units
    refit = fitted["CONFIDENCE"]  # empty: the refit did not raise the gate's AUC, ConfidenceWeights' own stay
    assert DEFAULT_PARAMS.confidence.weights == (ConfidenceWeights(**refit) if refit else ConfidenceWeights())


@pytest.mark.slow
def test_the_ranker_is_deterministic_and_reads_each_feature(project):
    """The same candidates score the same, twice and in another order; a date the question names
    and the row's date meet; an echo of the question is flagged."""
    records.save_fact(project, "CI pushes every built container image to ghcr.io/acme, tagged with the commit sha.")
    records.save_fact(project, "Release notes are drafted by the changelog bot from merged pull requests.")
    records.save_log(project, "again, where do we push built images", session_id="s1", role="user")
    question = "where do built container images get pushed in March 2026?"
    query = parse_query(question, limit=5, min_confidence=0)
    found = candidates(project, query, DEFAULT_PARAMS.fusion, {}).candidates
    assert len(found) >= 3
    first = scores(found, question, DEFAULT_PARAMS.fusion, DEFAULT_PARAMS.ranker)
    again = scores(found, question, DEFAULT_PARAMS.fusion, DEFAULT_PARAMS.ranker)
    backwards = scores(found[::-1], question, DEFAULT_PARAMS.fusion, DEFAULT_PARAMS.ranker)[::-1]
    assert first == again and all(abs(a - b) < 1e-9 for a, b in zip(first, backwards, strict=True))
    x = {
        c.id: dict(zip(FEATURES, f, strict=True))
        for c, f in zip(found, features(found, question, DEFAULT_PARAMS.fusion), strict=True)
    }
    echo = next(c.id for c in found if c.collection == "logs")
    assert x[echo]["echo"] == 1.0
    assert all(v["echo"] == 0.0 for k, v in x.items() if k != echo)
    image = next(c.id for c in found if "ghcr.io" in str(c.row.get("text")))
    notes = next(c.id for c in found if "changelog" in str(c.row.get("text")))
    assert x[image]["coverage"] > x[notes]["coverage"] and x[image]["rr_cosine"] == 1.0
    today = datetime.now(timezone.utc)
    dated = f"what did we decide about images in {today.strftime('%B %Y')}?"
    assert all(f[FEATURES.index("date")] == 1.0 for f in features(found, dated, DEFAULT_PARAMS.fusion))
    hits = judge(found, question, DEFAULT_PARAMS)
    assert [h.score for h in hits] == [h.score for h in judge(found, question, DEFAULT_PARAMS)]


@pytest.mark.slow
def test_a_newer_unlinked_restatement_is_flagged_and_ranks_above_the_older(project):
    old = records.save_fact(project, "Outgoing HTTP calls from the backend use requests with a 10 s timeout.")["id"]
    records.save_fact(project, "Deploys go through fly deploy from the main branch.")
    new = records.save_fact(
        project,
        "Outgoing HTTP calls from the backend use httpx (the shared client in ledgerly/http.py) with a 5 s "
        "connect and 30 s read timeout; requests was removed from the dependencies.",
    )["id"]
    question = "which library do we use for outgoing HTTP calls?"
    found = candidates(project, parse_query(question, limit=5), DEFAULT_PARAMS.fusion, {}).candidates
    x = {
        c.id: dict(zip(FEATURES, f, strict=True))
        for c, f in zip(found, features(found, question, DEFAULT_PARAMS.fusion), strict=True)
    }
    assert x[old]["restated"] == 1.0 and x[old]["restates"] == 0.0
    assert x[new]["restates"] == 1.0 and x[new]["restated"] == 0.0
    every = [r["id"] for r in ask(project, question, min_confidence=0.0, include_superseded=True)["results"]]
    assert every.index(new) < every.index(old)


@pytest.mark.slow  # over 7 s: the full suite runs it, the fast subset does not
def test_the_fit_command_writes_the_smoke_weights(tmp_path):
    """``bench/fit_ranker.py --smoke`` fits on the tiny smoke sets in seconds and writes what
    bench/data/smoke_ranker_weights.py holds (the fit is deterministic)."""
    out = tmp_path / "weights.py"
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "fit_ranker.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got, kept = _weights(out), _weights(SMOKE_WEIGHTS)
    assert set(got) == set(kept) == {"MEMORY", "LOGS", "CONFIDENCE"}
    for name, values in kept.items():
        assert set(got[name]) == set(values)
        for k, v in values.items():
            assert abs(got[name][k] - v) <= 0.01 * max(1.0, abs(v)), (name, k, got[name][k], v)
    assert "leave-one-source-out" in done.stdout


def test_a_speaker_is_named_by_a_name_not_by_a_common_word():
    """The ``speaker`` feature: a name part of the turn's speaker among the question's words
    ("Caroline's" names Caroline); a speaker called by a stop word ("me") names nobody."""
    from contextware.core.words import words
    from contextware.memory.recall.ranker import speaker_named

    def asked_words(question: str) -> frozenset[str]:
        return frozenset(words(question))  # as ``ranker.features`` reads the question

    assert speaker_named(asked_words("What is Caroline's favourite book?"), {"speaker": "Caroline"}) == 1.0
    assert speaker_named(asked_words("When did Mel go camping?"), {"speaker": "Melanie"}) == 0.0
    assert speaker_named(asked_words("What did Alice Smith decide?"), {"speaker": "Alice Smith"}) == 1.0
    assert speaker_named(asked_words("what did you tell me yesterday?"), {"speaker": "me"}) == 0.0
    assert speaker_named(asked_words("What did Bob cook?"), {"speaker": None}) == 0.0
