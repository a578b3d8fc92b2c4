"""The session store (contextware/store/kvstore.py) in a test project: a project with store
settings, its raw rows, and a store filled to exactly its byte limit."""

from __future__ import annotations

import json
from pathlib import Path

from contextware.storage.project import Project
from contextware.storage.schemas import KV_TABLE
from contextware.store import kvstore


def store_project(root: Path, **config) -> Project:
    """The project at ``root``, with ``config`` as its config.json when given."""
    if config:
        data = root / "contextware_data"
        data.mkdir(parents=True, exist_ok=True)
        (data / "config.json").write_text(json.dumps(config))
    return Project.open(root)


def store_rows(project: Project) -> list[dict]:
    """Every row of the session store's table."""
    return project.db.open_table(KV_TABLE).to_arrow().to_pylist()


# -- at the byte limit -----------------------------------------------------------------------------
MAX_BYTES = 100


OLD_DOC = "d" * 38  # 40 bytes of JSON with its quotes


OTHERS = [("a", "v0"), ("a", "v1"), ("b", "v2")]  # 20 bytes each: with the doc, exactly MAX_BYTES


def value_of_size(size: int, fill: str) -> str:
    """A JSON string whose stored text is ``size`` bytes (the quotes count)."""
    return fill * (size - 2)


def full_store(root: Path, **config) -> Project:
    """A store at exactly its byte limit: three 20-byte values saved first, then t/doc (40 bytes);
    a/v0 is loaded afterwards, so under LRU it is the most recently used of the three."""
    data = root / "contextware_data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "config.json").write_text(json.dumps({"store_max_bytes": MAX_BYTES, **config}))
    project = Project.open(root)
    for ns, key in OTHERS:
        assert kvstore.save(project, ns, key, value_of_size(20, key[-1]))["evicted"] == []
    assert kvstore.save(project, "t", "doc", OLD_DOC)["evicted"] == []
    kvstore.load(project, "a", "v0")
    assert kvstore.stats(project)["bytes"] == MAX_BYTES
    return project


def store_snapshot(project: Project) -> dict[str, str]:
    """id -> stored JSON text, read from the table itself."""
    table = project.db.open_table(KV_TABLE)
    table.checkout_latest()
    return {r["id"]: r["data"] for r in table.to_arrow().to_pylist()}
