"""``import`` embeds its rows shortest first, in calls bounded by tokens (real LanceDB, real model):
the same rows, vectors and counts as embedding each row alone."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextware.memory.team import share
from contextware.storage.embedded_text import embedding_text

HEADER = '{"format": "contextware-memory", "version": 1}\n'


def _facts() -> list[dict]:
    texts = [
        "uv runs everything.",
        "Postgres 16 is the only supported database; older versions lack the JSON path functions we rely on.",
        "Deploys go through fly deploy.",
        "Run ruff check before every commit, and ruff format, and mypy in strict mode on the package.",
        "Tokens expire after fifteen minutes.",
        "The billing service queues invoices in Redis streams, retried three times with backoff.",
    ]
    return [
        {"id": f"fact-{i:012x}", "kind": "note", "text": t, "created_at": f"2026-02-{i + 1:02d}T09:00:00Z"}
        for i, t in enumerate(texts)
    ]


@pytest.mark.slow
def test_a_length_sorted_import_writes_what_one_write_would(project):
    facts = _facts()
    text = HEADER + "".join(json.dumps(f) + "\n" for f in facts)
    report = share.import_memory(project, text, source="team.jsonl")
    assert (report["added"], report["updated"], report["unchanged"], report["duplicates"]) == (len(facts), 0, 0, 0)
    table = project.db.open_table("facts")
    rows = {r["id"]: r for r in table.to_arrow().to_pylist()}
    assert set(rows) == {f["id"] for f in facts}
    expected = project.embedder.embed([embedding_text("facts", rows[f["id"]]) for f in facts])
    got = np.array([rows[f["id"]]["vector"] for f in facts], dtype=np.float32)
    assert np.allclose(got, expected, atol=1e-5)  # sorting by length changes no vector
    again = share.import_memory(project, text, source="team.jsonl")
    assert (again["added"], again["unchanged"]) == (0, len(facts))
    newer = [{**facts[1], "text": "Postgres 17 only.", "updated_at": "2026-03-01T00:00:00Z"}]
    other = {**facts[2], "id": "fact-0000000000ff"}  # another id, a text already here
    third = share.import_memory(project, HEADER + "".join(json.dumps(f) + "\n" for f in [*newer, other]), source="x")
    assert (third["updated"], third["duplicates"], third["duplicate_of"]) == (1, 1, {other["id"]: facts[2]["id"]})
