"""Use feedback (issue 33): whether an injected memory was used in the answer or the tool calls
(``memory.turns.use``), the per-memory counts the hooks keep (``memory.turns.usage``), and where
they show (``memory stats``, the dashboard, the review queues).  Real hooks, storage and model."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from contextware.browser import bodies, views
from contextware.hosts.hooks.handlers import run_hook
from contextware.memory import maintenance, records
from contextware.memory.turns import usage
from contextware.memory.turns.use import baseline, used
from tests.support.browser import request, served_browser

FACT = "The staging database runs Postgres 14 on port 5433, not 5432; its DSN lives in .env.staging."
OTHER = "Never deploy on Fridays; production releases go out Monday to Thursday only."


def test_a_path_identifier_or_number_from_the_memory_is_use():
    assert used(FACT, "Staging listens on 5433, so I changed the DSN.")
    assert used(FACT, "Done.", ['{"file_path": ".env.staging", "new_string": "localhost:5433"}'])
    assert used("- [NOTE] Cap recall with max_results_per_collection.", "Set max_results_per_collection to 8.")
    assert used(
        "- [NOTE] The parser lives in contextware/hosts/hooks/claude_transcript.py.", "Fixed claude_transcript.py."
    )
    assert used("- [DECISION] Use parseHTTPResponse for raw sockets.", "Switched to parseHTTPResponse().")


def test_enough_rare_words_are_use_and_common_words_are_not():
    memory = "- [LESSON] Flaky watcher failures came from inotify limits on the shared runner."
    assert used(memory, "The watcher was flaky because the runner hit its inotify limits; raised them.")
    assert not used(memory, "The test failed on CI again; I fixed the test and it passes now.")
    common = "- [LESSON] The shared runner needs a longer timeout for the browser test."
    reply = "I reran the test and updated the changelog."
    assert baseline(common, reply) and not used(common, reply)  # a shared common word only ('test')
    assert not used(memory, "Raised the inotify watch count.")  # one rare word is not enough
    assert not used(FACT, "I ran the database migration on production.")  # 'database' alone: one word


@pytest.mark.slow
def test_the_work_is_bounded():
    start = time.perf_counter()
    assert not used("x" * 5_000_000, "y " * 5_000_000, ["z" * 5_000_000])
    assert time.perf_counter() - start < 2.0


def _event(project, name: str, **extra: object) -> str:
    (project.root / ".git").mkdir(exist_ok=True)
    body = {"session_id": "s-use", "cwd": str(project.root), "hook_event_name": name, **extra}
    return json.dumps({**body, "contextware_host": "claude"})


def _counts(project) -> dict:
    return usage.load(project.data_dir)["memories"]


@pytest.mark.slow
def test_gemini_round_trip_counts_injected_and_used(project):
    fact = records.save_fact(project, FACT, kind="environment")["id"]
    records.save_fact(project, OTHER, kind="constraint")
    ask = "Why can't the migration connect to the staging database?"
    out = run_hook(_event(project, "BeforeAgent", prompt=ask))
    assert FACT in out
    run_hook(
        _event(project, "AfterAgent", prompt=ask, prompt_response="Staging listens on 5433; I fixed .env.staging.")
    )
    assert _counts(project)[fact]["injected"] == 1 and _counts(project)[fact]["used"] == 1
    run_hook(_event(project, "BeforeAgent", prompt="Which port does the staging database use again?"))
    run_hook(_event(project, "AfterAgent", prompt="x", prompt_response="I will look into it after lunch."))
    counts = _counts(project)[fact]
    assert counts["injected"] == 2 and counts["used"] == 1 and counts["last_used"]
    assert (
        not (project.data_dir / "hooks.log").exists()
        or "use failed" not in (project.data_dir / "hooks.log").read_text()
    )
    run_hook(_event(project, "BeforeAgent", prompt="Which port does the staging database use again?"))
    files = [project.data_dir / usage.EVENTS, *(project.data_dir / usage.PENDING).iterdir()]
    text = "".join(p.read_text() for p in files)
    assert "5433" not in text and "staging" not in text  # ids, counts and hashed keys: never a memory's words


def _claude_transcript(path: Path, prompt: str, answer: str, tool_input: dict) -> Path:
    def line(kind: str, content: object) -> str:
        return json.dumps({"type": kind, "sessionId": "s-use", "message": {"role": kind, "content": content}})

    lines = [
        line("user", "an older prompt"),
        line("assistant", [{"type": "tool_use", "id": "t0", "name": "Bash", "input": {"command": "cat .env.staging"}}]),
        line("user", [{"type": "tool_result", "tool_use_id": "t0", "content": "ok"}]),
        line("user", [{"type": "text", "text": prompt}]),
        line("assistant", [{"type": "tool_use", "id": "t1", "name": "Edit", "input": tool_input}]),
        line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
        line("assistant", [{"type": "text", "text": answer}]),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_claude_stop_counts_a_tool_call_that_uses_the_memory(project, tmp_path):
    fact = records.save_fact(project, FACT, kind="environment")["id"]
    ask = "The migration cannot reach the staging database, fix it"
    assert FACT in run_hook(_event(project, "UserPromptSubmit", prompt=ask))
    answer = "Fixed the connection string; the migration runs."
    path = _claude_transcript(
        tmp_path / "t.jsonl", ask, answer, {"file_path": ".env.staging", "new_string": ":5433/app"}
    )
    run_hook(_event(project, "Stop", transcript_path=str(path), last_assistant_message=answer))
    assert _counts(project)[fact]["used"] == 1
    # The earlier turn's tool call (cat .env.staging) does not count for a turn whose calls do not use it.
    assert FACT in run_hook(_event(project, "UserPromptSubmit", prompt=ask))
    path = _claude_transcript(tmp_path / "t.jsonl", ask, "Nothing to do.", {"file_path": "README.md"})
    run_hook(_event(project, "Stop", transcript_path=str(path), last_assistant_message="Nothing to do."))
    assert _counts(project)[fact] | {"last_used": None, "last_injected": None} == {
        "injected": 2,
        "used": 1,
        "fetched": 0,
        "last_used": None,
        "last_injected": None,
    }


def test_the_side_files_stay_bounded_and_private(project, monkeypatch):
    project.ensure_data_dir()
    monkeypatch.setattr(usage, "MAX_IDS", 20)
    monkeypatch.setattr(usage, "MAX_PENDING", 5)
    monkeypatch.setattr(usage, "MAX_EVENTS_BYTES", 600)
    for i in range(60):
        usage.injected(project.data_dir, f"session-{i}", {f"fact-{i:04d}": f"- [NOTE] note number {i}"})
        events = project.data_dir / usage.EVENTS
        assert not events.exists() or events.stat().st_size <= 600  # folded past the limit
    usage.fold(project.data_dir)
    memories = usage.load(project.data_dir)["memories"]
    assert len(memories) == 20 and "fact-0059" in memories and "fact-0000" not in memories
    pending = list((project.data_dir / usage.PENDING).iterdir())
    assert len(pending) == 5
    usage.fetched(project.data_dir, "fact-0059")
    for path in [project.data_dir / usage.FILE, project.data_dir / usage.EVENTS, *pending]:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    assert [p.name for p in project.data_dir.iterdir() if p.name.startswith(".use")] == []  # no temporary left


@pytest.mark.slow
def test_corrupt_side_files_are_ignored_and_rewritten(project):
    fact = records.save_fact(project, FACT, kind="environment")["id"]
    project.ensure_data_dir()
    (project.data_dir / usage.FILE).write_text('{"memories": [1, 2,')
    (project.data_dir / usage.EVENTS).write_text('{"at": 1, "used": 7}\nnot json\n[1]\n')
    ask = "Why can't the migration connect to the staging database?"
    assert FACT in run_hook(_event(project, "BeforeAgent", prompt=ask))
    run_hook(_event(project, "AfterAgent", prompt=ask, prompt_response="Port 5433 it is."))
    assert usage.load(project.data_dir)["memories"][fact]["used"] == 1
    usage.fold(project.data_dir)
    assert json.loads((project.data_dir / usage.FILE).read_text())["memories"][fact]["used"] == 1
    (project.data_dir / usage.FILE).write_text('{"memories": {"fact-x": {"injected": "many"}}}')
    assert usage.load(project.data_dir) == {"memories": {}}
    assert FACT in run_hook(_event(project, "BeforeAgent", prompt=ask))
    next((project.data_dir / usage.PENDING).iterdir()).write_text("{{{")
    run_hook(_event(project, "AfterAgent", prompt=ask, prompt_response="Port 5433 it is."))
    assert usage.load(project.data_dir)["memories"][fact] | {"last_injected": None} == {
        "injected": 1,
        "used": 0,
        "fetched": 0,
        "last_injected": None,
    }
    log = project.data_dir / "hooks.log"
    assert not log.exists() or "failed" not in log.read_text()


@pytest.mark.slow
def test_stats_dashboard_and_review_show_the_counts(project):
    idle = records.save_fact(project, OTHER, kind="constraint")["id"]
    busy = records.save_fact(project, FACT, kind="environment")["id"]
    for i in range(6):
        usage.injected(project.data_dir, f"s{i}", {idle: f"- [CONSTRAINT] {OTHER}", busy: f"- [ENVIRONMENT] {FACT}"})
        assert usage.judge(project.data_dir, f"s{i}", "Set the port to 5433.") == [busy]
    use = maintenance.stats(project)["use"]
    assert use | {} == {
        "memories_injected": 2,
        "memories_used": 1,
        "injections": 12,
        "uses": 6,
        "fetches": 0,
        "use_rate": 0.5,
    }
    q = views.review(project)
    assert [r["id"] for r in q["unused"]] == [idle] and q["unused"][0]["text"] == OTHER
    assert q["unused"][0]["injected"] == 6 and q["unused"][0]["used"] == 0
    assert [r["id"] for r in q["used_often"]] == [busy] and q["used_often"][0]["used"] == 6
    assert "50% of 12" in bodies._use_rate(use)
    with served_browser(project) as served:
        review = request(served.port, "/review", token=served.token)
        home = request(served.port, "/", token=served.token)
    assert review.status == 200 and "Injected often, never used (1)" in review.text and f"/memory/{idle}" in review.text
    assert "Used often (1)" in review.text and f"/memory/{busy}" in review.text
    assert home.status == 200 and "use rate" in home.text and "50% of 12" in home.text


def test_get_memory_by_id_counts_a_fetch(project, monkeypatch):
    from contextware.hosts.mcp.tools import TOOLS

    get_memory = TOOLS["get_memory"][0]

    fact = records.save_fact(project, FACT, kind="environment")["id"]
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("CONTEXTWARE_PROJECT_ROOT", str(project.root))
    result = get_memory(id=fact)
    assert not getattr(result, "is_error", getattr(result, "isError", False))
    counts = usage.load(project.data_dir)["memories"][fact]
    assert counts["fetched"] == 1 and counts["used"] == 0 and counts["last_used"]
    assert maintenance.stats(project)["use"]["fetches"] == 1


@pytest.mark.slow
def test_the_bench_meets_its_targets_on_the_test_split(capsys):
    import importlib.util

    from tests.support.repo import REPO

    spec = importlib.util.spec_from_file_location("use_detector", REPO / "bench" / "use_detector.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main([]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cases"] >= 40 and out["train"]["cases"] >= 20 and out["test"]["cases"] >= 20
    test = out["test"]["detector"]
    assert test["precision"] >= 0.9 and test["recall"] >= 0.8
    assert test["precision"] > out["test"]["baseline (any shared word)"]["precision"]


@pytest.mark.slow
def test_concurrent_hooks_lose_no_count(project):
    """Four processes count injections at once while the events are folded again and again."""
    import subprocess
    import sys

    project.ensure_data_dir()
    code = (
        "import sys; from pathlib import Path; from contextware.memory.turns import usage\n"
        "usage.MAX_EVENTS_BYTES = 400\n"
        "for i in range(150): usage.injected(Path(sys.argv[1]), '', {'fact-' + sys.argv[2]: 'x'})\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(project.data_dir), str(n % 2)], cwd=project.root)
        for n in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    memories = usage.load(project.data_dir)["memories"]
    assert memories["fact-0"]["injected"] == 300 and memories["fact-1"]["injected"] == 300
    usage.fold(project.data_dir)
    assert usage.load(project.data_dir)["memories"]["fact-0"]["injected"] == 300


def test_confirming_or_superseding_a_memory_counts_as_use(project):
    from contextware.memory import edits

    fact = records.save_fact(project, FACT, kind="environment")["id"]
    edits.confirm(project, fact)
    assert _counts(project)[fact]["used"] == 1
    newer = "The staging database moved to port 6543; its DSN still lives in .env.staging."
    records.save_fact(project, newer, kind="environment", supersedes=fact)
    assert _counts(project)[fact]["used"] == 2


def test_the_use_prior_reorders_near_ties_only(project):
    from contextware.memory.recall.fusion import order
    from contextware.memory.recall.types import Hit
    from contextware.storage.candidate import Candidate

    def hit(memory_id: str, score: float, day: int) -> Hit:
        from datetime import datetime, timezone

        row = {"id": memory_id, "text": memory_id, "created_at": datetime(2026, 1, day, tzinfo=timezone.utc)}
        return Hit(Candidate(row, "facts", 0.5, 0.5), score)

    def ids(prior: dict | None) -> list[str]:
        hits = [hit("fact-a", 0.605, 1), hit("fact-b", 0.601, 2), hit("fact-c", 0.5, 3)]
        return [h.id for h in order(hits, 0.01, prior=prior)]

    assert ids(None) == ids({}) == ["fact-b", "fact-a", "fact-c"]  # a tie: the newer first
    assert ids({"fact-a": 0.8}) == ["fact-a", "fact-b", "fact-c"]  # used: first among its ties
    assert ids({"fact-c": 1.0}) == ["fact-b", "fact-a", "fact-c"]  # never past a clear lead
    # From the counts: injected fifty times, never used, it sinks below a tie it won on recency.
    project.ensure_data_dir()
    for _ in range(50):
        usage.injected(project.data_dir, "", {"fact-b": "x"})
    priors = usage.priors(project.data_dir)
    assert -1.0 <= priors["fact-b"] < -0.9 and ids(priors) == ["fact-a", "fact-b", "fact-c"]
    usage.injected(project.data_dir, "", {"fact-a": "x"})  # once, not used: too little to move it
    assert -0.2 < usage.priors(project.data_dir)["fact-a"] < 0


@pytest.mark.slow
def test_without_feedback_recall_is_unchanged_and_feedback_hides_nothing(project):
    from contextware.memory.recall.pipeline import ask

    fact = records.save_fact(project, FACT, kind="environment")["id"]
    other = records.save_fact(project, OTHER, kind="constraint")["id"]
    question = "which port does the staging database listen on?"
    assert usage.priors(project.data_dir) == {}
    before = [r["id"] for r in ask(project, question, min_confidence=0)["results"]]
    for _ in range(30):
        usage.injected(project.data_dir, "", {fact: "x", other: "y"})
    after = [r["id"] for r in ask(project, question, min_confidence=0)["results"]]
    assert sorted(after) == sorted(before) and after[0] == fact  # a clear answer keeps its place
