"""Indexes kept current by the writer (real LanceDB, real model): a bulk write leaves at most
``MAX_UNINDEXED_ROWS`` rows outside the full-text and scalar indexes, and the duplicate check of a save
goes through the ``text_hash`` index."""

from __future__ import annotations

import json

import pytest

from contextware.memory import records
from contextware.memory.team.share import import_memory
from contextware.storage.database import MAX_UNINDEXED_ROWS, unindexed_rows, wanted_indexes
from contextware.storage.project import Project

HEADER = '{"format": "contextware-memory", "version": 1}\n'
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
]


def _logs(n: int) -> str:
    lines = []
    for i in range(n):
        words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
        lines.append(
            json.dumps(
                {
                    "id": f"log-{i:012x}",
                    "session_id": f"s{i % 40}",
                    "role": "user" if i % 2 else "agent",
                    "text": f"turn {i}: {words}",
                    "created_at": f"2026-01-{1 + i % 28:02d}T10:00:00Z",
                }
            )
        )
    return HEADER + "\n".join(lines) + "\n"


@pytest.mark.slow  # over 7 s: the full suite runs it, the fast subset does not
def test_a_bulk_import_is_indexed_before_it_returns(project):
    n = 2500
    report = import_memory(project, _logs(n), source="logs.jsonl")
    assert report["added"] == n
    table = project.db.open_table("logs")
    table.checkout_latest()
    indexed = {i.columns[0]: i.name for i in table.list_indices()}
    assert {c for c, _ in wanted_indexes(table)} <= set(indexed), indexed
    assert unindexed_rows(table) <= MAX_UNINDEXED_ROWS
    fts = table.index_stats(indexed["search_text"])
    assert fts.num_indexed_rows >= n - MAX_UNINDEXED_ROWS
    # The scalar indexes answer the filters we use.
    plan = table.search().where("text_hash = 'x'").select(["id"]).limit(1).explain_plan(True)
    assert "ScalarIndexQuery" in plan, plan


@pytest.mark.slow
def test_an_old_table_gets_its_indexes_on_the_next_write(project):
    saved = records.save_fact(project, "Run ruff before every commit.", kind="convention")
    table = project.db.open_table("facts")
    for index in list(table.list_indices()):
        if index.columns != ["search_text"]:
            table.drop_index(index.name)
    project = Project.open(project.root)  # a new process
    table = project.db.open_table("facts")
    records.save_fact(project, "Postgres 16 is the only supported database.", kind="constraint")
    table.checkout_latest()
    assert {c for c, _ in wanted_indexes(table)} <= {i.columns[0] for i in table.list_indices()}
    again = records.save_fact(project, "Run ruff before every commit.", kind="convention")
    assert again["duplicate_of"] == saved["id"]
