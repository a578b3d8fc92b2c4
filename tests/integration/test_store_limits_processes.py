"""The session store at its byte limit: replacing an existing key (scripts/store.py, contextware/store/kvstore.py).

The replaced value's own bytes are freed by the replace, so a new value that fits once the old one
is gone evicts nothing, and one that needs more room evicts just enough other values, by policy, in
the same commit as the save.  A value larger than the whole store is refused with exit 2 and
``value_too_large``, and then nothing is lost: the old value stays, no other key is evicted, the
table gets no new version."""

from __future__ import annotations

import json
import re

import pytest

from contextware.storage.project import Project
from contextware.storage.schemas import KV_TABLE
from contextware.store import kvstore
from tests.support.session_store import MAX_BYTES, OLD_DOC, full_store, store_snapshot, value_of_size


def _version(project: Project) -> int:
    table = project.db.open_table(KV_TABLE)
    table.checkout_latest()
    return table.version


def _rows_at(project: Project, version: int) -> dict[str, str]:
    table = Project.open(project.root).db.open_table(KV_TABLE)  # its own handle: checkout pins it
    table.checkout(version)
    return {r["id"]: r["data"] for r in table.to_arrow().to_pylist()}


def _one_sentence(message: str) -> None:
    assert "\n" not in message and message.endswith(".") and message[0].isupper(), message
    assert not re.search(r"[.!?]\s", message[:-1]), f"more than one sentence: {message!r}"


@pytest.mark.parametrize("policy, victim", [("lru", ("a", "v1")), ("oldest", ("a", "v0"))])
def test_a_growing_replace_evicts_exactly_what_is_needed_in_the_same_commit(project_dir, script, policy, victim):
    """60 new bytes against 60 of the others: 20 over, so exactly one 20-byte value goes, the first by
    the policy (lru: a/v0 was loaded, so a/v1 is the least recently used; oldest: a/v0 was saved
    first).  Counting the old 40 bytes would evict all three.  The save, the replacement and the
    eviction are one new table version: the version before it is the untouched store."""
    project = full_store(project_dir, store_eviction=policy)
    before, version = store_snapshot(project), _version(project)
    new_doc = value_of_size(60, "h")

    res = script("store", "save", "--namespace", "t", "--key", "doc", "--data", json.dumps(new_doc))
    assert res.returncode == 0, res.stdout + res.stderr[-2000:]
    out = res.json
    assert out["ok"] is True and out["created"] is False and out["size"] == 60
    assert out["evicted"] == [
        {"namespace": victim[0], "key": victim[1], "size": 20, "reason": "max_bytes", "policy": policy}
    ]

    after = store_snapshot(project)
    gone = f"{victim[0]}/{victim[1]}"
    assert set(after) == set(before) - {gone}
    assert after["t/doc"] == json.dumps(new_doc)
    assert {k: v for k, v in after.items() if k != "t/doc"} == {
        k: v for k, v in before.items() if k not in (gone, "t/doc")
    }
    assert kvstore.stats(project)["bytes"] == MAX_BYTES

    assert _version(project) == version + 1  # one commit ...
    assert _rows_at(project, version) == before  # ... right after the untouched store
    assert _rows_at(project, version + 1) == after


def test_a_replace_that_can_never_fit_fails_clearly_and_loses_nothing(project_dir, script):
    """One byte more than the whole store: exit 2, ``value_too_large`` in one sentence, and the old
    value, every other key and the table's version are as they were."""
    project = full_store(project_dir)
    before, version = store_snapshot(project), _version(project)
    listed = kvstore.list_keys(project)["keys"]

    res = script(
        "store", "save", "--namespace", "t", "--key", "doc", "--data", json.dumps(value_of_size(MAX_BYTES + 1, "z"))
    )
    assert res.returncode == 2, res.stdout + res.stderr[-2000:]
    assert res.json["ok"] is False and set(res.json) == {"ok", "error"}
    err = res.json["error"]
    assert err["code"] == "value_too_large"
    _one_sentence(err["message"])
    assert "nothing was saved" in err["message"] and "store_max_bytes" in err["message"]
    assert err["message"].startswith("The value is 101 bytes, more than the whole store may hold (100 bytes,")
    assert "Traceback" not in res.stderr

    assert _version(project) == version  # not even an empty commit
    assert store_snapshot(project) == before  # the old value is still there, nothing was evicted
    assert kvstore.load(project, "t", "doc")["data"] == OLD_DOC
    assert [(k["namespace"], k["key"], k["size"], k["updated_at"]) for k in kvstore.list_keys(project)["keys"]] == [
        (k["namespace"], k["key"], k["size"], k["updated_at"]) for k in listed
    ]

    loaded = script("store", "load", "--namespace", "t", "--key", "doc")  # and the CLI sees it too
    assert loaded.returncode == 0 and loaded.json["data"] == OLD_DOC
