"""The session store at its byte limit, in-process: a replace that fits once the old value is gone
evicts nothing; one of exactly the limit evicts every other value."""

from __future__ import annotations

import pytest

from contextware.store import kvstore
from tests.support.session_store import MAX_BYTES, OTHERS, full_store, store_snapshot, value_of_size


@pytest.mark.slow
def test_a_replace_that_fits_once_the_old_value_is_gone_evicts_nothing(project_dir):
    """At exactly the limit, a same-size or smaller replacement needs no room: counting the old value
    (or evicting it as if it were another key) would evict the others."""
    project = full_store(project_dir)
    before = store_snapshot(project)

    same = kvstore.save(project, "t", "doc", value_of_size(40, "e"))
    assert same["created"] is False and same["size"] == 40 and same["evicted"] == []
    smaller = kvstore.save(project, "t", "doc", value_of_size(30, "f"))
    assert smaller["created"] is False and smaller["evicted"] == []

    after = store_snapshot(project)
    assert sorted(after) == sorted(before)  # one row per key, none gone
    assert {k: v for k, v in after.items() if k != "t/doc"} == {k: v for k, v in before.items() if k != "t/doc"}
    assert kvstore.load(project, "t", "doc")["data"] == value_of_size(30, "f")
    assert kvstore.stats(project)["bytes"] == MAX_BYTES - 10


@pytest.mark.slow
def test_a_replace_of_exactly_the_limit_evicts_every_other_value(project_dir):
    project = full_store(project_dir)
    out = kvstore.save(project, "t", "doc", value_of_size(MAX_BYTES, "g"))
    assert out["created"] is False
    assert sorted((e["namespace"], e["key"]) for e in out["evicted"]) == sorted(OTHERS)
    assert set(store_snapshot(project)) == {"t/doc"}
    assert kvstore.load(project, "t", "doc")["data"] == value_of_size(MAX_BYTES, "g")
