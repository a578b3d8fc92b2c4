"""The resident service's in-memory table snapshots (``storage.table_search``): the same answers as
LanceDB's own search, and never stale (real LanceDB, real model)."""

from __future__ import annotations

import json
import shutil

import pytest

from contextware.core.errors import DamagedDataError
from contextware.memory import edits, records
from contextware.memory.recall import ask
from contextware.storage import table_search
from contextware.storage.integrity import CHECKED
from contextware.storage.project import Project
from tests.support.bit_rot import flip_stored

FACTS = [
    ("Run ruff check before every commit.", "convention"),
    ("Postgres 16 is the only supported database.", "constraint"),
    ("The billing service queues invoices in Redis streams.", "decision"),
    ("Deploys go through fly deploy from the main branch.", "convention"),
    ("Auth tokens expire after fifteen minutes.", "constraint"),
    ("The search service uses Tantivy for its full-text index.", "decision"),
]
QUESTIONS = [
    "what must I run before committing?",
    "which database do we support?",
    "where are invoices queued?",
    "how do we deploy?",
    "how long do auth tokens live?",
    "what indexes the search text?",
]


@pytest.fixture
def snapshots():
    table_search.keep_snapshots()
    yield table_search
    table_search.drop_snapshots()


@pytest.fixture
def filled(project):
    ids = [records.save_fact(project, text, kind=kind)["id"] for text, kind in FACTS]
    ids.append(
        records.save_episode(
            project,
            "Deploy failed: the release migration timed out on a locked table.",
            goal="Deploy the API",
            result="failure",
            category="deploy",
        )["id"]
    )
    return project, ids


def _answers(project: Project, **kw) -> list[str]:
    return [json.dumps(ask(project, q, min_confidence=0.0, **kw), sort_keys=True, default=str) for q in QUESTIONS]


def _other_process(project: Project) -> Project:
    """A second handle on the same data, with its own connection: a writer in another process."""
    return Project(root=project.root, data_dir=project.data_dir, db_uri=project.db_uri)


@pytest.mark.slow
def test_snapshot_answers_equal_lancedb_answers(filled, snapshots):
    project, _ = filled
    table_search.drop_snapshots()
    plain = _answers(project) + _answers(project, kind="constraint") + _answers(project, scope="episodes")
    table_search.keep_snapshots()
    served = _answers(project) + _answers(project, kind="constraint") + _answers(project, scope="episodes")
    assert served == plain
    assert (project.db.uri, "facts") in table_search._snapshots  # the answers did come from a snapshot
    assert _answers(project) == plain[: len(QUESTIONS)]  # and keep coming, unchanged, from it


@pytest.mark.slow
def test_vector_and_fts_rows_equal_lancedb_rows(filled, snapshots):
    project, _ = filled
    db = project.db
    table = db.open_table("facts")
    qvec = project.embedder.embed(["which database do we support?"])[0]
    where = "(status IS NULL OR status = 'active') AND kind = 'constraint'"
    table_search.drop_snapshots()
    plain = [
        table_search.vector_rows(db, "facts", table, qvec, None, 4),
        table_search.vector_rows(db, "facts", table, qvec, where, 4),
        table_search.fts_rows(db, "facts", table, "database supported", None, 4),
    ]
    table_search.keep_snapshots()
    served = [
        table_search.vector_rows(db, "facts", table, qvec, None, 4),
        table_search.vector_rows(db, "facts", table, qvec, where, 4),
        table_search.fts_rows(db, "facts", table, "database supported", None, 4),
    ]
    for mine, theirs in zip(served, plain, strict=True):
        assert [r["id"] for r in mine] == [r["id"] for r in theirs]
        for a, b in zip(mine, theirs, strict=True):
            assert a.pop(CHECKED) is True  # checked once by the snapshot; the callers skip it
            assert a.keys() == b.keys()
            assert {k: v for k, v in a.items() if k != "_distance"} == {k: v for k, v in b.items() if k != "_distance"}
            if "_distance" in b:
                assert a["_distance"] == pytest.approx(b["_distance"], abs=1e-5)
    assert len(served[1]) == 2 and all(r["kind"] == "constraint" for r in served[1])  # the filter holds


@pytest.mark.slow
def test_a_write_by_another_process_is_seen_at_once(filled, snapshots):
    project, _ = filled
    ask(project, "where are invoices queued?")  # snapshots of the tables taken
    other = _other_process(project)
    new = records.save_fact(other, "Invoices are queued in Kafka since the March migration.", kind="decision")["id"]
    found = ask(project, "are invoices queued in Kafka?", min_confidence=0.0)
    assert found["results"][0]["id"] == new
    edits.delete(other, new)
    assert new not in [r["id"] for r in ask(project, "are invoices queued in Kafka?", min_confidence=0.0)["results"]]


@pytest.mark.slow
def test_a_status_change_by_another_process_updates_the_filters(filled, snapshots):
    project, ids = filled
    assert ids[1] in [r["id"] for r in ask(project, "which database do we support?")["results"]]
    other = _other_process(project)
    newer = records.save_fact(
        other, "Postgres 17 is the only supported database.", kind="constraint", supersedes=ids[1]
    )["id"]
    got = [r["id"] for r in ask(project, "which database do we support?")["results"]]
    assert newer in got and ids[1] not in got  # superseded: filtered out of the cached search too


@pytest.mark.slow
def test_a_table_dropped_and_created_again_is_read_again(filled, snapshots):
    """Versions start over at 1 in a re-created table: the version number alone would match a stale
    snapshot.  Both tables below reach the same version number."""
    project, _ = filled
    ask(project, "how do we deploy?")
    old_key = table_search._snapshots[(project.db.uri, "facts")].key
    old_version = project.db.open_table("facts").version
    other = _other_process(project)
    shutil.rmtree(project.data_dir / "lancedb" / "facts.lance")
    fresh = [records.save_fact(other, text, kind=kind)["id"] for text, kind in FACTS]
    assert project.db.open_table("facts").version == old_version  # the same version number again
    got = ask(project, "how do we deploy?", scope="memory")["results"]
    assert got and got[0]["id"] == fresh[3]
    assert table_search._snapshots[(project.db.uri, "facts")].key != old_key


@pytest.mark.slow
def test_a_table_rebuilt_under_the_service_is_read_again(filled, snapshots):
    """``replace_table`` (re-embedding with another model, salvage) commits a whole new table."""
    import pyarrow as pa

    project, ids = filled
    ask(project, "how do we deploy?")
    other = _other_process(project)
    table = other.db.open_table("facts")
    kept = [r for r in table.to_arrow().to_pylist() if r["id"] != ids[3]]
    with other.db.write_lock("facts"):
        other.db.replace_table("facts", pa.Table.from_pylist(kept, schema=table.schema))
    got = [r["id"] for r in ask(project, "how do we deploy?", min_confidence=0.0)["results"]]
    assert ids[3] not in got


@pytest.mark.slow
def test_tables_over_the_size_limit_are_searched_in_lancedb(filled, snapshots, monkeypatch):
    project, _ = filled
    plain = _answers(project)
    monkeypatch.setattr(table_search, "MAX_SNAPSHOT_ROWS", 3)
    table_search.drop_snapshots()
    table_search.keep_snapshots()
    assert _answers(project) == plain
    assert (project.db.uri, "facts") not in table_search._snapshots  # six facts: over the limit
    assert (project.db.uri, "episodes") in table_search._snapshots


@pytest.mark.slow
def test_one_shot_processes_keep_no_snapshot(filled):
    project, _ = filled
    ask(project, "how do we deploy?")
    assert not table_search.snapshots_kept()


@pytest.mark.slow
def test_rows_written_after_the_snapshot_are_read_from_lancedb(filled, snapshots):
    """A full-text hit committed between the snapshot check and the search (a race with another
    writer) still comes back whole, in the order asked."""
    project, ids = filled
    db = project.db
    table = db.open_table("facts")
    snap = table_search._snapshot(db, "facts", table)
    new = records.save_fact(_other_process(project), "Feature flags live in LaunchDarkly.", kind="decision")["id"]
    rows = snap.rows(db, table, [new, ids[0], "fact-000000000000"])
    assert [r["id"] for r in rows] == [new, ids[0]]  # an id gone meanwhile is skipped
    assert rows[0]["text"] == "Feature flags live in LaunchDarkly." and len(rows[0]["vector"]) == len(rows[1]["vector"])
    assert CHECKED not in rows[0] and rows[1].pop(CHECKED) is True  # only the snapshot's rows were checked
    assert list(rows[0]) == list(rows[1])  # the same columns in the same order


@pytest.mark.slow
def test_searches_do_not_wait_for_the_background_load(filled, snapshots, monkeypatch):
    """A cold service reads its tables in a thread; until a table is read, its searches ask
    LanceDB (the same answers) instead of waiting for it."""
    project, _ = filled
    plain = _answers(project)
    table_search.drop_snapshots()
    table_search.keep_snapshots()
    monkeypatch.setattr(table_search._preloading, "is_set", lambda: True)  # the load has not reached them
    assert _answers(project) == plain
    assert table_search._snapshots == {}  # the searches read nothing themselves
    monkeypatch.undo()
    table_search.load_in_background(project.db).join()
    assert {name for _, name in table_search._snapshots} == {"facts", "episodes"}
    assert not table_search._preloading.is_set()
    assert _answers(project) == plain


@pytest.mark.slow
def test_a_snapshot_checks_each_row_once_and_never_serves_a_damaged_one(filled, snapshots):
    """Rows are checked against their checksums the first time a snapshot returns them (then marked,
    so the callers' checks skip them); a row damaged on disk before the snapshot was read is
    damaged_data, never an answer."""
    project, _ = filled
    ask(project, "which database do we support?", min_confidence=0.0)
    snap = table_search._snapshots[(project.db.uri, "facts")]
    assert 0 < int(snap.checked.sum()) <= len(FACTS)
    table_search.drop_snapshots()
    flip_stored(project, "facts", b"Postgres 16 is the only", len("Postgres 1"))  # 16 -> 14
    table_search.keep_snapshots()
    with pytest.raises(DamagedDataError) as exc:
        ask(Project.open(project.root), "which database do we support?", min_confidence=0.0)
    assert "memory.py repair" in exc.value.message


@pytest.mark.slow
def test_a_write_is_applied_to_the_snapshot_not_reloaded(filled, snapshots):
    """The service's own writes (saves, a supersession, a compaction) bring its snapshot up to date
    in place: the next recall reads no table, and answers what LanceDB answers."""
    project, ids = filled
    ask(project, "where are invoices queued?")
    slot = (project.db.uri, "facts")
    held, loads = table_search._snapshots[slot].n, table_search.loads
    added = records.save_fact(project, "Invoices are queued in Kafka since the March migration.", kind="decision")
    newer = records.save_fact(project, "Postgres 17 is the only supported database.", supersedes=ids[1])
    project.db.compact("facts")
    snap = table_search._snapshots[slot]
    assert table_search.loads == loads and snap.n == held + 3  # two new rows, one replaced, none read again
    assert snap.key == table_search.version_key(project.db, "facts", project.db.open_table("facts"))
    served = _answers(project) + _answers(project, kind="constraint")
    assert table_search._snapshots[slot] is snap and table_search.loads == loads
    got = [r["id"] for r in ask(project, "which database do we support?", min_confidence=0.0)["results"]]
    assert newer["id"] in got and ids[1] not in got  # the superseded row left the filter's rows too
    assert added["id"] in [r["id"] for r in ask(project, "are invoices queued in Kafka?")["results"]]
    table_search.drop_snapshots()
    assert served == _answers(project) + _answers(project, kind="constraint")


@pytest.mark.slow
def test_a_delete_reads_the_table_again(filled, snapshots):
    project, ids = filled
    ask(project, "how do we deploy?")
    edits.delete(project, ids[3])
    assert ids[3] not in [r["id"] for r in ask(project, "how do we deploy?", min_confidence=0.0)["results"]]


@pytest.mark.slow
def test_a_save_finds_its_near_duplicates_in_the_snapshot(filled, snapshots):
    project, ids = filled
    ask(project, "how do we deploy?")
    out = records.save_fact(project, "Deploys go through fly deploy from the main branch only.", kind="convention")
    assert ids[3] in [s["id"] for s in out["similar"]]


@pytest.mark.slow
def test_reused_inode_numbers_do_not_make_a_new_table_the_old_one(filled, snapshots):
    """The file system may give a re-created table the inode numbers of the dropped one: its version
    count restarting (and its folder's change time) still tell them apart, and a catch-up is refused."""
    project, _ = filled
    ask(project, "how do we deploy?")
    old = table_search._snapshots[(project.db.uri, "facts")].key
    shutil.rmtree(project.data_dir / "lancedb" / "facts.lance")
    records.save_fact(_other_process(project), "Invoices are queued in SQS now.")
    new = table_search.version_key(project.db, "facts", project.db.open_table("facts"))
    assert new[0] != old[0]  # the change time differs even where the inodes were reused
    reused = (old[0], *new[1:])  # the worst case: every identity number reused
    assert new[1] <= old[1] and not table_search._same_table(old, reused)
    later = (old[0], old[1] + 1, *new[2:])
    assert table_search._same_table(old, later)
