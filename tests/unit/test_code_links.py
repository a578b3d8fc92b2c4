"""Memories tied to code (memory.code_links): links made at save time against a real code index, and
the may-be-stale flag after real edits, renames and deletions seen by a crawl or index_files, shown
in recall (JSON and text), the briefing and the hook, until confirmed, updated or superseded.  The
same through a real watch process: tests/integration/test_watch_processes.py."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from contextware.cli import run
from contextware.codeindex.indexer import crawl, index_files
from contextware.hosts.hooks.handlers import run_hook
from contextware.memory import edits, records
from contextware.memory.briefing import render_markdown, session_context
from contextware.memory.recall import ask
from contextware.storage.project import Project
from tests.support.hook_events import context_of, event

TREE = {
    "src/http/retry.py": '"""Retry policy for outgoing HTTP calls."""\n\n\n'
    "def backoff_delay(attempt):\n    return 2**attempt\n",
    "src/models.py": '"""Data models."""\n\n\nclass Invoice:\n    def total(self):\n        return 0\n',
    "docs/notes.md": "# Notes\n\nNothing here.\n",
}
RETRY_FACT = "The retry policy lives in src/http/retry.py; waits double on each attempt."
QUESTION = "where does the retry policy live?"


def _today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def coded(project_dir: Path) -> Project:
    for rel, text in TREE.items():
        (project_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (project_dir / rel).write_text(text, encoding="utf-8")
    _git(project_dir, "init", "-q")
    _git(project_dir, "add", ".")
    _git(project_dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    project = Project.open(project_dir)
    crawl(project, summarizer="local")
    return project


def _links(project: Project, record_id: str) -> list[str] | None:
    links: list[str] | None = records.get(project, record_id)["record"].get("code_links")
    return links


def _flag(project: Project, record_id: str, question: str = QUESTION) -> str | None:
    found = [r for r in ask(project, question, limit=8)["results"] if r["id"] == record_id]
    assert found, f"{record_id} not recalled for {question!r}"
    flag: str | None = found[0].get("may_be_stale")
    return flag


@pytest.mark.slow
def test_links_name_what_the_code_index_knows_and_nothing_else(coded: Project):
    root = coded.root
    cases = {
        "The retry policy lives in `src/http/retry.py`.": ["src/http/retry.py"],
        "See ./src/http/retry.py:4 for the waits.": ["src/http/retry.py"],
        f"The absolute path {root}/src/models.py holds the models.": ["src/models.py"],
        "Waits come from retry.backoff_delay, doubling each time.": ["src/http/retry.py"],
        "Use `backoff_delay` rather than a fixed sleep.": ["src/http/retry.py"],
        "Totals are computed by models.Invoice.total on read.": ["src/models.py"],
        "Both retry.py and `Invoice` matter here.": ["src/http/retry.py", "src/models.py"],
    }
    for text, expected in cases.items():
        saved = records.save_fact(coded, text, kind="note")
        assert _links(coded, saved["id"]) == expected, text
    for text in (
        "Never deploy on Fridays.",  # names nothing
        "The old client was src/http/client.py, and lib/missing.py too.",  # unknown paths
        "We tried os.path.join and `not_a_symbol_anywhere` there.",  # names outside the project
        "Plain words like retry and backoff are not links.",
    ):
        saved = records.save_fact(coded, text, kind="note")
        assert _links(coded, saved["id"]) is None, text
    episode = records.save_episode(
        coded, "Tuned `backoff_delay` after timeouts.", goal="Fix flaky retries", result="success", category="debug"
    )
    assert _links(coded, episode["id"]) == ["src/http/retry.py"]


@pytest.mark.slow
def test_an_edit_flags_the_memory_until_it_is_confirmed(coded: Project):
    fact = records.save_fact(coded, RETRY_FACT, kind="decision")["id"]
    plain = records.save_fact(coded, "Retries never exceed five attempts in total.", kind="constraint")["id"]
    assert _flag(coded, fact) is None
    assert records.list_records(coded, stale=True)["count"] == 0

    retry = coded.root / "src/http/retry.py"
    retry.write_text(retry.read_text() + "\n\ndef jitter():\n    return 0\n")
    assert _flag(coded, fact) is None  # the index has not seen it yet
    index_files(coded, [retry], summarizer="local")  # one index event later: flagged
    assert _flag(coded, fact) == f"src/http/retry.py changed on {_today()}"
    assert _flag(coded, plain, "how many retry attempts at most?") is None  # names no file: never flagged
    listed = records.list_records(coded, stale=True)
    assert [r["id"] for r in listed["records"]] == [fact]
    assert listed["records"][0]["may_be_stale"].startswith("src/http/retry.py changed")
    assert records.get(coded, fact)["record"]["may_be_stale"] == listed["records"][0]["may_be_stale"]

    confirmed = edits.confirm(coded, fact)
    assert confirmed["was_stale"].startswith("src/http/retry.py changed") and confirmed["code_links"] == [
        "src/http/retry.py"
    ]
    assert _flag(coded, fact) is None
    assert records.list_records(coded, stale=True)["count"] == 0
    # Touching the file without changing its bytes flags nothing.
    os.utime(retry, (1_000_000_000, 1_000_000_000))
    crawl(coded, summarizer="local")
    assert _flag(coded, fact) is None


@pytest.mark.slow
def test_a_rename_with_git_mv_then_a_crawl_flags_it_as_moved(coded: Project):
    fact = records.save_fact(coded, RETRY_FACT, kind="decision")["id"]
    _git(coded.root, "mv", "src/http/retry.py", "src/http/retrying.py")
    report = crawl(coded, summarizer="local")
    assert report["removed_files"] == ["src/http/retry.py"]
    assert _flag(coded, fact) == f"src/http/retry.py moved to src/http/retrying.py on {_today()}"


@pytest.mark.slow
def test_a_deletion_then_a_crawl_flags_it_as_deleted(coded: Project):
    fact = records.save_fact(coded, RETRY_FACT, kind="decision")["id"]
    episode = records.save_episode(
        coded,
        "Doubling waits in src/http/retry.py stopped the flaky retry policy failures.",
        goal="Fix the retry policy",
        result="success",
        category="debug",
    )["id"]
    (coded.root / "src/http/retry.py").unlink()
    crawl(coded, summarizer="local")
    assert _flag(coded, fact) == f"src/http/retry.py was deleted on {_today()}"
    assert _flag(coded, episode) == f"src/http/retry.py was deleted on {_today()}"
    stale = {r["id"] for r in records.list_records(coded, stale=True)["records"]}
    assert stale == {fact, episode}
    # Confirming drops the link to a file that is gone: nothing left to go stale.
    assert edits.confirm(coded, fact)["code_links"] == []
    assert _flag(coded, fact) is None


@pytest.mark.slow
def test_updating_or_superseding_clears_the_flag(coded: Project):
    old = records.save_fact(coded, RETRY_FACT, kind="decision")["id"]
    other = records.save_fact(coded, "Invoice totals come from src/models.py and are cached.", kind="note")["id"]
    (coded.root / "src/http/retry.py").write_text("def backoff_delay(attempt):\n    return 3**attempt\n")
    (coded.root / "src/models.py").write_text("class Invoice:\n    pass\n")
    crawl(coded, summarizer="local")
    assert _flag(coded, old) and _flag(coded, other, "where do invoice totals come from?")
    new = records.save_fact(
        coded, "The retry policy lives in src/http/retry.py; waits triple on each attempt.", supersedes=old
    )["id"]
    assert _flag(coded, new) is None
    assert old not in {r["id"] for r in records.list_records(coded, stale=True)["records"]}
    edits.update(coded, other, text="Invoice totals come from src/models.py and are not cached.")
    assert _flag(coded, other, "where do invoice totals come from?") is None
    assert records.list_records(coded, stale=True)["count"] == 0


@pytest.mark.slow
def test_the_flag_shows_in_text_the_briefing_and_the_hook(coded: Project, capsys: pytest.CaptureFixture[str]):
    records.save_fact(coded, RETRY_FACT, kind="constraint")
    (coded.root / "src/http/retry.py").write_text("def backoff_delay(attempt):\n    return 1\n")
    index_files(coded, [coded.root / "src/http/retry.py"], summarizer="local")
    note = f"may be stale: src/http/retry.py changed on {_today()}"

    capsys.readouterr()
    assert run("recall", [QUESTION, "--project-root", str(coded.root), "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert note in " ".join(out.split()), out  # wrapped to the terminal's width
    assert run("recall", [QUESTION, "--project-root", str(coded.root)]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert any(r.get("may_be_stale") == note.split(": ", 1)[1] for r in results)
    assert run("memory", ["list", "--stale", "--project-root", str(coded.root), "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert note in " ".join(out.split()), out

    ctx = session_context(coded)
    assert ctx["constraints"][0]["may_be_stale"] == note.split(": ", 1)[1]
    assert f"{RETRY_FACT} ({note})" in render_markdown(ctx)
    start = event("SessionStart", coded.root, source="startup", contextware_host="claude")
    start = context_of(run_hook(start), "SessionStart")
    assert note in start
    injected = context_of(run_hook(event("BeforeAgent", coded.root, prompt=QUESTION)), "BeforeAgent")
    assert f"{RETRY_FACT} ({note})" in injected


@pytest.mark.slow
def test_repair_links_memories_saved_before_the_code_index(project_dir: Path, capsys: pytest.CaptureFixture[str]):
    project = Project.open(project_dir)
    fact = records.save_fact(project, RETRY_FACT, kind="decision")["id"]  # no code index yet: not linked
    assert _links(project, fact) is None
    for rel, text in TREE.items():
        (project_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (project_dir / rel).write_text(text, encoding="utf-8")
    crawl(project, summarizer="local")
    capsys.readouterr()
    assert run("memory", ["repair", "--project-root", str(project_dir)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["code_links"] == {"linked": 1, "checked": 1}
    assert _links(project, fact) == ["src/http/retry.py"]
    assert run("memory", ["repair", "--project-root", str(project_dir)]) == 0  # idempotent
    assert json.loads(capsys.readouterr().out)["code_links"] == {"linked": 0, "checked": 0}
    (project_dir / "src/http/retry.py").write_text("X = 1\n")
    crawl(project, summarizer="local")
    assert _flag(project, fact) == f"src/http/retry.py changed on {_today()}"


@pytest.mark.slow
def test_imported_memories_are_linked_here(coded: Project, tmp_path: Path):
    from contextware.memory.team.share import import_memory

    line = {
        "id": "fact-0123456789ab",
        "kind": "decision",
        "text": RETRY_FACT,
        "created_at": "2026-01-02T03:04:05Z",
    }
    text = json.dumps({"format": "contextware-memory", "version": 1}) + "\n" + json.dumps(line) + "\n"
    assert import_memory(coded, text, source="memory.jsonl")["added"] == 1
    assert _links(coded, "fact-0123456789ab") == ["src/http/retry.py"]


@pytest.mark.slow
def test_older_tables_gain_the_link_columns(project_dir: Path):
    """A facts table written before links existed (without their columns) is evolved when opened,
    and its rows are linked by repair."""
    import pyarrow as pa

    from contextware.memory.code_links import link_unlinked
    from contextware.storage.schemas import CODE_LINK_COLUMNS, table_schema

    project = Project.open(project_dir)
    fact = records.save_fact(project, RETRY_FACT, kind="decision")["id"]
    table = project.db.open_table("facts")
    rows = table.to_arrow().to_pylist()
    old = table_schema("facts", project.embedder.dim, project.embedder.model_id)
    for name, _ in CODE_LINK_COLUMNS:
        old = old.remove(old.get_field_index(name))
    project.db.conn.create_table("facts", data=pa.Table.from_pylist(rows, schema=old), mode="overwrite")
    for rel, text in TREE.items():
        (project_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (project_dir / rel).write_text(text, encoding="utf-8")
    fresh = Project.open(project_dir)
    crawl(fresh, summarizer="local")
    assert link_unlinked(fresh) == {"linked": 1, "checked": 1}
    assert "linked_at" in fresh.db.open_table("facts").schema.names
    assert _links(fresh, fact) == ["src/http/retry.py"]


@pytest.mark.slow
def test_logs_cannot_be_confirmed(coded: Project):
    from contextware.core.errors import UsageError

    log = records.save_log(coded, "see src/http/retry.py", session_id="s1", role="user")["id"]
    with pytest.raises(UsageError):
        edits.confirm(coded, log)
