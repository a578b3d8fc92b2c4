"""A broken or bad ``config.json`` (issue 23 f) is the same error from every command and every MCP
tool: exit 2, one sentence naming the file and the key, whatever the command uses.  It was exit 1 for
broken JSON and 2 for a bad type, and a bad value of a setting a command did not use (``store_eviction``
for ``recall``, ``summary_max_tokens`` for ``save``) passed silently there; ``memory list`` and
``stats`` read no settings at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextware.cli import run
from contextware.hosts.mcp.server import call_tool
from contextware.memory import records
from contextware.storage.project import Project

BAD = {
    "not-json": ("{broken", "damaged_config", "not valid JSON"),
    "not-an-object": ("[1, 2]", "damaged_config", "JSON object"),
    "unknown-key": ('{"sumarizer": "local"}', "unknown_setting", "summarizer"),
    "wrong-type": ('{"max_fact_chars": "4000"}', "bad_config", "max_fact_chars"),
    "bool-for-number": ('{"recall_candidates": true}', "bad_config", "recall_candidates"),
    "bad-choice": ('{"store_eviction": "fifo"}', "bad_config", "store_eviction"),
    "bad-summarizer": ('{"summarizer": "cloud"}', "bad_config", "summarizer"),
    "below-floor": ('{"summary_max_tokens": 5}', "bad_config", "summary_max_tokens"),
    "zero-timeout": ('{"gemini_timeout_s": 0}', "bad_config", "gemini_timeout_s"),
    "negative-limit": ('{"max_log_chars": -1}', "bad_config", "max_log_chars"),
    "fraction-over-1": ('{"hook_min_confidence": 2}', "bad_config", "hook_min_confidence"),
    "bad-worktrees": ('{"worktrees": "both"}', "bad_config", "worktrees"),
    "pattern-not-list": ('{"secret_files": "*.pem"}', "bad_config", "secret_files"),
    "bad-eviction-map": ('{"store_eviction_by_namespace": {"a": "fifo"}}', "bad_config", "store_eviction_by_namespace"),
    # numbers JSON allows that no setting can use: they passed `config check`, then overflowed later
    "nan": ('{"tombstone_days": NaN}', "bad_config", "tombstone_days"),
    "infinity": ('{"log_retention_days": Infinity}', "bad_config", "log_retention_days"),
    "huge-float": ('{"cache_ttl_days": 1e308}', "bad_config", "cache_ttl_days"),
    "huge-int": ('{"store_max_bytes": 1000000000000000000000000000000}', "bad_config", "store_max_bytes"),
}
COMMANDS = [
    ("save", ["We ship on Mondays"]),
    ("recall", ["--query", "deploy"]),
    ("memory", ["list"]),
    ("memory", ["stats"]),
    ("store", ["load", "--namespace", "a", "--key", "b"]),
    ("context", []),
    ("export", ["--output", "-"]),
    ("config", ["check"]),
]


@pytest.fixture
def seeded(project: Project, monkeypatch: pytest.MonkeyPatch) -> Path:
    records.save_fact(project, "We deploy on Fridays")
    monkeypatch.chdir(project.root)
    return project.root


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_config_is_one_error_with_exit_2_from_every_command_and_tool(seeded: Path, case: str, capsys):
    text, code, named = BAD[case]
    config = seeded / "contextware_data" / "config.json"
    config.write_text(text)
    messages = set()
    for command, argv in COMMANDS:
        assert run(command, argv) == 2, (command, argv)
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == code and named in error["message"] and "\n" not in error["message"], error
        messages.add(error["message"])
    for tool, arguments in (("recall", {"query": "deploy"}), ("save_fact", {"content": "We ship on Mondays"})):
        answer = call_tool(tool, arguments)
        assert answer["isError"], answer
        assert json.loads(answer["content"][0]["text"])["error"]["message"] in messages
    assert len(messages) == 1, messages  # the same sentence everywhere
    config.unlink()
    assert records.list_records(Project.open(seeded))["total"] == 1  # nothing was written meanwhile
