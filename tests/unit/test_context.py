"""context.py: the one-call briefing, its priorities and its token budget."""

from __future__ import annotations

import os

import pytest

from contextware.core.text import CHARS_PER_TOKEN
from contextware.memory import records
from contextware.memory.briefing import render_markdown, session_context
from contextware.storage.project import Project
from tests.support.bit_rot import flip_stored


@pytest.mark.slow
def test_full_briefing_has_every_section_in_priority_order(briefed: Project):
    ctx = session_context(briefed, 4000)
    assert ctx["project"]["id"] == briefed.id and ctx["project"]["root"] == str(briefed.root)
    assert ctx["project"]["session_count"] == 2 and ctx["project"]["last_session"]["id"] == "s2"
    texts = [f["text"] for f in ctx["constraints"]]
    assert "Never deploy on Fridays." in texts and "Deploy on Fridays." not in texts  # superseded is hidden
    assert ctx["preferences"][0]["text"] == "Prefer plain SQL over the ORM for reports."
    # twelve near-identical failures are one open failure, shown as the newest of them
    assert [f["goal"] for f in ctx["failures"]] == ["Fix flaky test 11"]
    assert [e["goal"] for e in ctx["recent_episodes"]] == ["Bump version"]
    code = ctx["code_index"]
    assert code["files_indexed"] == 4 and code["stale"] == 0 and code["last_crawl"]
    assert code["central_files"][0]["file_path"] == "pkg/ledger.py" and code["central_files"][0]["mentioned_by"] == 3
    assert ctx["store"] == [{"namespace": "baselines", "keys": 1}]
    md = render_markdown(ctx)
    assert md.index("Constraints") < md.index("Preferences") < md.index("failures") < md.index("Code index")
    # a note (what a plain ``save`` gives) is briefed too, after the other kinds of fact
    assert [f["text"] for f in ctx["notes"]] == ["The ledger uses integer cents."]
    assert md.index("Preferences") < md.index("## Notes\n- The ledger uses integer cents.") < md.index("failures")


def test_central_files_of_rows_indexed_before_the_imports_column(briefed: Project):
    """Rows written by a version without ``imports`` (null there) are ranked from their indexed text;
    rows with the column are ranked without reading any text."""
    table = briefed.db.open_table("code_index")
    stored = {r["id"]: r["imports"] for r in table.search().select(["id", "imports"]).limit(None).to_list()}
    assert "ledger" in stored["pkg/api.py"] and stored["pkg/ledger.py"] == []
    table.update(where="id != 'pkg/reports.py'", values={"imports": None})  # as an older version left them
    code = session_context(Project.open(briefed.root), 4000)["code_index"]
    assert code["central_files"][0] == {**code["central_files"][0], "file_path": "pkg/ledger.py", "mentioned_by": 3}


@pytest.mark.parametrize("budget", [100, 150, 250, 400, 1500])
def test_budget_is_never_exceeded_and_priorities_survive(briefed: Project, budget: int):
    ctx = session_context(briefed, budget)
    md = render_markdown(ctx)
    assert len(md) <= budget * CHARS_PER_TOKEN and ctx["tokens"] <= budget
    if budget >= 150:
        assert ctx["constraints"], "constraints come first"
    if "store" in ctx:
        assert "constraints" in ctx and "failures" in ctx
    assert ctx["truncated"] is (session_context(briefed, 100_000)["tokens"] > budget)


@pytest.mark.slow
def test_stale_files_are_counted(briefed: Project):
    os.utime(briefed.root / "pkg" / "api.py", (1, 1))
    (briefed.root / "pkg" / "billing.py").unlink()
    assert session_context(briefed)["code_index"]["stale"] == 2


def test_a_bad_store_setting_is_the_same_config_error_for_the_briefing(briefed: Project):
    """Issue 23 f: a bad value is one error from every command, the briefing's included (it was
    skipped here and failed only the store commands); the hook that briefs fails open with it."""
    from contextware.core.errors import ConfigError

    (briefed.data_dir / "config.json").write_text('{"store_eviction": "LRU"}')
    with pytest.raises(ConfigError, match="store_eviction"):
        session_context(Project.open(briefed.root), 4000)
    (briefed.data_dir / "config.json").write_text('{"store_eviction": "lru"}')
    ctx = session_context(Project.open(briefed.root), 4000)
    assert ctx["store"] == [{"namespace": "baselines", "keys": 1}] and ctx["constraints"]


def test_briefing_shows_every_kind_once_newest_first(project: Project):
    """Each kind of fact has its section; near-duplicates collapse to the newest (stored vectors,
    across kinds); a failure that a later success of the same task resolved is not open."""
    from contextware.offload.files import session_dir
    from contextware.offload.sessions import _new_state, _save

    records.save_fact(project, "The user prefers small pull requests with one change each.", kind="preference")
    records.save_fact(project, "The user prefers small pull requests, one change each.", kind="preference")
    records.save_fact(project, "Money is stored as integer cents, never floats.", kind="decision")
    records.save_fact(project, "Branches are named type/ticket-slug.", kind="convention")
    records.save_fact(project, "Postgres 16 runs on port 5433 for the tests.", kind="environment")
    records.save_fact(project, "Never commit secrets to the repository.", kind="constraint")
    records.save_episode(
        project,
        "The build broke on the missing lockfile.",
        goal="Build the web app",
        result="failure",
        category="build",
    )
    records.save_episode(
        project,
        "Regenerated the lockfile; the build passes.",
        goal="Build the web app",
        result="success",
        category="build",
    )
    records.save_episode(
        project, "Timed out on the locked table.", goal="Run the invoice migration", result="failure", category="db"
    )
    sdir = session_dir(project, "auth-refactor")
    sdir.mkdir(parents=True)
    _save(sdir, _new_state("auth-refactor", "auth"))

    ctx = session_context(Project.open(project.root), 4000)
    assert [f["text"] for f in ctx["preferences"]] == ["The user prefers small pull requests, one change each."]
    assert [f["text"] for f in ctx["decisions"]] == ["Money is stored as integer cents, never floats."]
    assert [f["text"] for f in ctx["conventions"]] == ["Branches are named type/ticket-slug."]
    assert [f["text"] for f in ctx["environment"]] == ["Postgres 16 runs on port 5433 for the tests."]
    assert [f["goal"] for f in ctx["failures"]] == ["Run the invoice migration"]  # the build one was fixed
    assert [e["goal"] for e in ctx["recent_episodes"]] == ["Build the web app"]
    assert [s["name"] for s in ctx["offload_sessions"]] == ["auth-refactor"]
    md = render_markdown(ctx)
    order = ["Constraints", "Preferences", "Decisions", "Conventions", "Environment", "Open failures", "Recent work"]
    assert [md.index(f"## {h}") for h in order] == sorted(md.index(f"## {h}") for h in order)
    assert md.count("small pull requests") == 1

    # a small budget keeps the first item of every kind before the rest of any
    small = session_context(Project.open(project.root), 160)
    assert small["truncated"] and small["tokens"] <= 160
    assert "constraints" in small and "preferences" in small


def test_a_damaged_summary_of_a_central_file_is_never_shown(briefed: Project):
    flip_stored(briefed, "code_index", b"posting and balancing", len("post"))  # posting -> posvin...
    ctx = session_context(Project.open(briefed.root), 4000)
    assert "code_index" not in ctx and "memory.py repair" in ctx["unavailable"]["code_index"]
    assert ctx["constraints"], "a damaged code index costs its own section only"


def test_a_damaged_summary_the_briefing_does_not_show_costs_nothing(briefed: Project):
    """Only the summaries shown (the central files') are read and checked: the figures need none."""
    flip_stored(briefed, "code_index", b"The billing module.", len("The bil"))
    code = session_context(Project.open(briefed.root), 4000)["code_index"]
    assert code["files_indexed"] == 4 and code["central_files"][0]["file_path"] == "pkg/ledger.py"
    assert code["central_files"][0]["summary"].startswith("The ledger: posting and balancing")
