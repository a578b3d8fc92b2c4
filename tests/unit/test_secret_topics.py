"""Secrets given as topics (issue 23 h): a topic is stored, shown and matched as typed (lower-cased),
so one that looks like a secret is refused, never stored, through every door that takes topics:
save (fact, episode), memory update, an imported memory file, the MCP tools and offload.  Judged
before lower-casing (``akia...`` no longer looks like an AWS key)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextware.cli import run
from contextware.hosts.mcp.server import call_tool
from contextware.memory import records
from contextware.storage.project import Project
from tests.support import secret_corpus as sc

SECRETS = {"aws": sc.AWS_ACCESS, "github": sc.GITHUB, "slack": sc.SLACK, "stripe": sc.STRIPE, "google": sc.GOOGLE}


def _refused(code: int, out: str, secret: str) -> None:
    assert code == 2
    error = json.loads(out)["error"]
    assert error["code"] == "secret_in_name" and "Topic 2" in error["message"], error
    assert secret.lower() not in out.lower()


def _nothing_stored(root: Path, secret: str) -> None:
    if (root / "contextware_data").exists():
        assert secret.lower() not in sc.table_dump(root).lower()


@pytest.mark.parametrize("name", list(SECRETS))
def test_a_secret_topic_is_refused_by_save_and_update(project: Project, name: str, capsys, monkeypatch):
    secret = SECRETS[name]
    monkeypatch.chdir(project.root)
    topics = f"deploy,{secret}"
    _refused(run("save", ["We deploy on Fridays", "--topics", topics]), capsys.readouterr().out, secret)
    episode = ["Moved CI to GitHub Actions", "--type", "episode", "--goal", "move CI", "--result", "success"]
    _refused(run("save", [*episode, "--topics", topics]), capsys.readouterr().out, secret)
    fact = records.save_fact(Project.open(project.root), "We deploy on Tuesdays")
    _refused(run("memory", ["update", fact["id"], "--topics", topics]), capsys.readouterr().out, secret)
    _nothing_stored(project.root, secret)


def test_a_secret_topic_is_refused_by_import_mcp_and_offload(project: Project, capsys, monkeypatch):
    secret = sc.GITHUB
    monkeypatch.chdir(project.root)
    line = {
        "id": "fact-0123456789ab",
        "text": "We deploy on Fridays",
        "kind": "note",
        "topics": ["deploy", secret],
        "created_at": "2026-01-01T00:00:00Z",
    }
    memfile = project.root / "memory.jsonl"
    memfile.write_text('{"format": "contextware-memory", "version": 2}\n' + json.dumps(line) + "\n")
    code = run("import", [str(memfile)])
    out = capsys.readouterr().out
    assert code == 2 and "secret" in out and secret.lower() not in out.lower(), out
    answer = call_tool("save_fact", {"text": "We deploy on Fridays", "topics": ["deploy", secret]})
    assert answer["isError"] and secret.lower() not in json.dumps(answer).lower(), answer
    _refused(
        run("offload", ["--prompt", "Summarise the repo", "--topics", f"x,{secret}"]), capsys.readouterr().out, secret
    )
    _nothing_stored(project.root, secret)


def test_more_topics_than_one_memory_may_have_are_refused_at_every_door(project: Project, capsys, monkeypatch):
    """Issue 35: save capped a memory's text but not its topics (import did: 50)."""
    from contextware.core.text import MAX_TOPICS

    monkeypatch.chdir(project.root)
    many = ",".join(f"t{n}" for n in range(MAX_TOPICS + 1))
    for argv in (["save", "We deploy on Fridays", "--topics", many], ["offload", "--prompt", "x", "--topics", many]):
        assert run(argv[0], argv[1:]) == 2
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "bad_topic" and error["message"].startswith("--topics: more than 50"), error
    answer = call_tool("save_fact", {"content": "We deploy on Fridays", "topics": many.split(",")})
    assert answer["isError"] and '"topics: more than 50' in answer["content"][0]["text"], answer
    fact = records.save_fact(Project.open(project.root), "We deploy on Tuesdays", topics=many.split(",")[:MAX_TOPICS])
    assert len(records.get(Project.open(project.root), fact["id"])["record"]["topics"]) == MAX_TOPICS
    assert run("memory", ["update", fact["id"], "--topics", many]) == 2
    assert "more than 50" in capsys.readouterr().out
    assert records.list_records(Project.open(project.root))["total"] == 1  # nothing else was written
