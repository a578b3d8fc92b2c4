"""The session store at its byte limit, in-process: a replace that fits once the old value is gone
evicts nothing; one of exactly the limit evicts every other value."""

from __future__ import annotations

import json
import os
from pathlib import Path

from contextware.memory import kvstore
from contextware.settings import Settings
from contextware.storage.project import Project
from contextware.storage.schemas import KV_TABLE

MAX_BYTES = 100


OLD_DOC = "d" * 38  # 40 bytes of JSON with its quotes


OTHERS = [("a", "v0"), ("a", "v1"), ("b", "v2")]  # 20 bytes each: with the doc, exactly MAX_BYTES


def _value(size: int, fill: str) -> str:
    """A JSON string whose stored text is ``size`` bytes (the quotes count)."""
    return fill * (size - 2)


def _full_store(root: Path, **config) -> Project:
    """A store at exactly its byte limit: three 20-byte values saved first, then t/doc (40 bytes);
    a/v0 is loaded afterwards, so under LRU it is the most recently used of the three."""
    data = root / "contextware_data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "config.json").write_text(json.dumps({"store_max_bytes": MAX_BYTES, **config}))
    project = Project.open(root, Settings.from_env(os.environ))
    for ns, key in OTHERS:
        assert kvstore.save(project, ns, key, _value(20, key[-1]))["evicted"] == []
    assert kvstore.save(project, "t", "doc", OLD_DOC)["evicted"] == []
    kvstore.load(project, "a", "v0")
    assert kvstore.stats(project)["bytes"] == MAX_BYTES
    return project


def _snapshot(project: Project) -> dict[str, str]:
    """id -> stored JSON text, read from the table itself."""
    table = project.db.open_table(KV_TABLE)
    table.checkout_latest()
    return {r["id"]: r["data"] for r in table.to_arrow().to_pylist()}


def test_a_replace_that_fits_once_the_old_value_is_gone_evicts_nothing(project_dir):
    """At exactly the limit, a same-size or smaller replacement needs no room: counting the old value
    (or evicting it as if it were another key) would evict the others."""
    project = _full_store(project_dir)
    before = _snapshot(project)

    same = kvstore.save(project, "t", "doc", _value(40, "e"))
    assert same["created"] is False and same["size"] == 40 and same["evicted"] == []
    smaller = kvstore.save(project, "t", "doc", _value(30, "f"))
    assert smaller["created"] is False and smaller["evicted"] == []

    after = _snapshot(project)
    assert sorted(after) == sorted(before)  # one row per key, none gone
    assert {k: v for k, v in after.items() if k != "t/doc"} == {k: v for k, v in before.items() if k != "t/doc"}
    assert kvstore.load(project, "t", "doc")["data"] == _value(30, "f")
    assert kvstore.stats(project)["bytes"] == MAX_BYTES - 10


def test_a_replace_of_exactly_the_limit_evicts_every_other_value(project_dir):
    project = _full_store(project_dir)
    out = kvstore.save(project, "t", "doc", _value(MAX_BYTES, "g"))
    assert out["created"] is False
    assert sorted((e["namespace"], e["key"]) for e in out["evicted"]) == sorted(OTHERS)
    assert set(_snapshot(project)) == {"t/doc"}
    assert kvstore.load(project, "t", "doc")["data"] == _value(MAX_BYTES, "g")
