"""Damaged data, reproduced for real on real LanceDB tables: bytes flipped in a data file, one damaged
fragment among 30, the newest manifest damaged with older versions intact, every manifest deleted,
a flipped bit in a stored vector.  Each is detected (``damaged_data`` naming the repair command, never
a wrong or empty answer), and ``repair`` keeps every row that can still be read."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from contextware.core.errors import DamagedDataError
from contextware.memory import maintenance, records
from contextware.memory.recall import ask
from contextware.storage.integrity import row_problem
from contextware.storage.project import Project
from contextware.store import kvstore


def _project(root: Path) -> Project:
    """A project whose tables are never compacted, so every save stays its own fragment and version."""
    data = root / "contextware_data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "config.json").write_text(json.dumps({"compact_after_fragments": 100_000}))
    return Project.open(root)


def _table_dir(project: Project, name: str) -> Path:
    return Path(project.db_uri) / f"{name}.lance"


def _data_files(project: Project, name: str) -> list[Path]:
    return sorted((_table_dir(project, name) / "data").iterdir(), key=lambda p: p.stat().st_mtime_ns)


def _flip(path: Path, needle: bytes, offset: int, bit: int) -> None:
    """Flip one bit of the byte ``offset`` bytes into the first occurrence of ``needle`` in the file."""
    raw = bytearray(path.read_bytes())
    at = raw.find(needle)
    assert at >= 0, f"{needle!r} not found in {path}"
    raw[at + offset] ^= 1 << bit
    path.write_bytes(bytes(raw))


def _file_with(project: Project, name: str, needle: bytes) -> Path:
    return next(p for p in _data_files(project, name) if needle in p.read_bytes())


FACTS = [f"Service number {i} listens on port {8000 + i} behind the gateway." for i in range(30)]


def _save_facts(project: Project, texts: list[str]) -> list[str]:
    return [records.save_fact(project, t)["id"] for t in texts]


def _assert_damaged(exc: pytest.ExceptionInfo) -> None:
    assert exc.value.code == "damaged_data" and exc.value.exit_code == 1
    assert "memory.py repair" in exc.value.message, exc.value.message


@pytest.mark.slow  # 30+ saves, each its own version
def test_one_damaged_fragment_among_30_loses_only_its_row(tmp_path: Path):
    project = _project(tmp_path / "p")
    ids = _save_facts(project, FACTS)
    files = _data_files(project, "facts")
    assert len(files) == 30
    damaged = _file_with(project, "facts", ids[12].encode())
    damaged.write_bytes(damaged.read_bytes()[: len(damaged.read_bytes()) // 2])  # a torn write

    with pytest.raises(DamagedDataError) as exc:
        records.list_records(Project.open(project.root), limit=100)
    _assert_damaged(exc)

    report = maintenance.repair(Project.open(project.root))
    facts = report["tables"]["facts"]
    assert facts["status"] == "repaired" and facts["kept"] >= 29 and facts["lost"] == 1, report
    assert report["lost"] == 1 and report["kept"] >= 29
    assert (project.root / facts["backup"]).is_dir()  # nothing deleted: the damaged files are kept aside
    left = records.list_records(Project.open(project.root), limit=100)
    assert left["total"] == 29 and ids[12] not in {r["id"] for r in left["records"]}
    # The repaired table takes new saves and answers questions.
    records.save_fact(Project.open(project.root), "The gateway runs nginx 1.25.")
    out = ask(Project.open(project.root), "which port does service number 7 listen on?", scope="facts")
    assert out["results"] and "8007" in out["results"][0]["text"]


@pytest.mark.slow  # 30+ saves, each its own version
def test_damaged_newest_manifest_rolls_back_to_the_newest_readable_version(tmp_path: Path):
    project = _project(tmp_path / "p")
    _save_facts(project, FACTS[:34] if len(FACTS) >= 34 else FACTS + [f"Extra fact {i}." for i in range(4)])
    versions = sorted((_table_dir(project, "facts") / "_versions").iterdir())
    assert len(versions) >= 34
    newest = versions[0]  # v2 manifest names count down: the first name is the newest version
    newest.write_bytes(b"garbage")

    with pytest.raises(DamagedDataError) as exc:
        records.list_records(Project.open(project.root), limit=100)
    _assert_damaged(exc)

    report = maintenance.repair(Project.open(project.root))
    facts = report["tables"]["facts"]
    assert facts["status"] == "rolled_back" and facts["versions_dropped"] == 1, report
    assert facts["kept"] == 33 and facts["lost"] is None  # the last save's row cannot be counted
    assert (project.root / facts["moved_to"] / "_versions" / newest.name).read_bytes() == b"garbage"
    assert records.list_records(Project.open(project.root), limit=100)["total"] == 33
    assert records.save_fact(Project.open(project.root), "Saved after the rollback.")["written"] == 1


def test_every_manifest_deleted_is_an_error_not_an_empty_table(tmp_path: Path):
    project = _project(tmp_path / "p")
    _save_facts(project, FACTS[:3])
    for manifest in (_table_dir(project, "facts") / "_versions").iterdir():
        manifest.unlink()
    fresh = Project.open(project.root)
    with pytest.raises(DamagedDataError) as exc:
        records.list_records(fresh, limit=100)
    _assert_damaged(exc)
    assert "manifest" in exc.value.message
    with pytest.raises(DamagedDataError):
        ask(fresh, "which port?", scope="facts")
    assert "memory.py repair" in maintenance.stats(fresh)["tables"]["facts"]["damaged"]

    report = maintenance.repair(Project.open(project.root))
    facts = report["tables"]["facts"]
    assert facts["status"] == "moved" and facts["lost"] is None and report["lost"] is None
    assert (project.root / facts["moved_to"] / "data").is_dir()  # the data files are kept for forensics
    assert records.list_records(Project.open(project.root))["total"] == 0


def _stored_vector(project: Project, fact_id: str) -> bytes:
    import numpy as np

    table = project.db.open_table("facts")
    row = table.search().where(f"id = '{fact_id}'").limit(1).to_list()[0]
    return np.asarray(row["vector"], dtype="<f4").tobytes()


@pytest.mark.slow
def test_a_flipped_bit_in_a_vector_is_damaged_data_never_a_wrong_score(tmp_path: Path):
    project = _project(tmp_path / "p")
    ids = _save_facts(project, FACTS[:5])
    vector = _stored_vector(project, ids[2])
    # Bit 6 of the exponent byte of the first component: 0.05 becomes ~1e37-ish.
    path = next(p for p in _data_files(project, "facts") if vector in p.read_bytes())
    _flip(path, vector, 3, 6)
    damaged_value = struct.unpack("<f", bytearray(vector[:3]) + bytes([vector[3] ^ 0x40]))[0]
    assert abs(damaged_value) > 1e10 or damaged_value != damaged_value

    with pytest.raises(DamagedDataError) as exc:
        ask(Project.open(project.root), "Which port does service number 2 listen on?", scope="facts")
    _assert_damaged(exc)
    assert "vector" in exc.value.message

    report = maintenance.repair(Project.open(project.root))
    facts = report["tables"]["facts"]
    assert facts["recovered"] == 1 and facts["kept"] == 4 and facts["lost"] == 0, report
    out = ask(Project.open(project.root), "Which port does service number 2 listen on?", scope="facts")
    assert out["results"][0]["id"] == ids[2] and out["results"][0]["score"] < 2


@pytest.mark.slow
def test_bytes_flipped_in_stored_text_are_caught_by_the_row_checksum(tmp_path: Path):
    project = _project(tmp_path / "p")
    ids = _save_facts(project, FACTS[:5])
    path = _file_with(project, "facts", b"Service number 3 listens")
    _flip(path, b"Service number 3 listens", len("Service number 3 listens on port 800"), 0)  # 8003 -> 8002
    fresh = Project.open(project.root)
    with pytest.raises(DamagedDataError) as exc:
        records.get(fresh, ids[3])
    _assert_damaged(exc)
    with pytest.raises(DamagedDataError):
        ask(fresh, "Which port does service number 3 listen on?", scope="facts")

    report = maintenance.repair(Project.open(project.root))
    assert report["tables"]["facts"]["lost"] == 1 and report["tables"]["facts"]["kept"] == 4, report
    left = records.list_records(Project.open(project.root), limit=100)["records"]
    assert sorted(r["id"] for r in left) == sorted(ids[:3] + ids[4:])


def test_a_damaged_store_value_is_damaged_data(tmp_path: Path):
    project = _project(tmp_path / "p")
    kvstore.save(project, "baselines", "GET /users", {"p95_ms": 120})
    path = _file_with(project, "kv", b'"p95_ms":120')
    _flip(path, b'"p95_ms":120', len('"p95_ms":12'), 0)  # 120 -> 121: still valid JSON
    with pytest.raises(DamagedDataError) as exc:
        kvstore.load(Project.open(project.root), "baselines", "GET /users")
    _assert_damaged(exc)


def test_rows_of_older_versions_without_a_checksum_are_accepted(tmp_path: Path):
    project = _project(tmp_path / "p")
    ids = _save_facts(project, FACTS[:2])
    table = project.db.open_table("facts")
    table.update(where="true", values={"checksum": None})  # as written before the column existed
    fresh = Project.open(project.root)
    assert records.get(fresh, ids[0])["record"]["text"] == FACTS[0]
    assert ask(fresh, "Which port does service number 1 listen on?", scope="facts")["results"]


@pytest.mark.slow
def test_a_sound_table_is_left_alone_by_repair(tmp_path: Path):
    project = _project(tmp_path / "p")
    _save_facts(project, FACTS[:3])
    before = sorted(os.listdir(_table_dir(project, "facts") / "_versions"))
    report = maintenance.repair(Project.open(project.root))
    assert report["tables"]["facts"] == {"status": "ok", "kept": 3, "recovered": 0, "lost": 0}
    assert report["repaired"] == [] and report["lost"] == 0
    assert sorted(os.listdir(_table_dir(project, "facts") / "_versions")) == before
    assert not (project.data_dir / "damaged").exists()


def test_row_problem_tells_content_from_vector():
    from contextware.storage.integrity import GUARDED, hashed_columns, stamp

    row = {
        "id": "fact-000000000000",
        "text": "x",
        "kind": "note",
        "topics": [],
        "source": "agent",
        "supersedes": None,
        "vector": [1.0, 0.0],
    }
    # a row read back has every column it was read with: those hashed only when set are null here
    row.update(dict.fromkeys(hashed_columns("facts")[len(GUARDED["facts"]) :]))
    stamp("facts", [row])
    assert row_problem("facts", row) is None
    assert row_problem("facts", {**row, "text": "y"}) == "content"
    assert row_problem("facts", {**row, "vector": [0.0, 1.0]}) == "vector"
    assert row_problem("facts", {**row, "checksum": None, "vector": [1e24, 0.0]}) == "vector"
    assert row_problem("facts", {**row, "checksum": None, "vector": [float("nan"), 0.0]}) == "vector"
    assert row_problem("facts", {**row, "checksum": None}) is None


@pytest.mark.slow
def test_a_damaged_full_text_index_is_detected_and_rebuilt_by_repair(tmp_path: Path):
    project = _project(tmp_path / "p")
    ids = _save_facts(project, FACTS[:5])
    maintenance.compact(project)
    for path in (_table_dir(project, "facts") / "_indices").rglob("*"):
        if path.is_file():
            path.write_bytes(b"garbage" * 3)
    with pytest.raises(DamagedDataError) as exc:
        ask(Project.open(project.root), "Which port does service number 3 listen on?", scope="facts")
    _assert_damaged(exc)
    report = maintenance.repair(Project.open(project.root))
    facts = report["tables"]["facts"]
    assert facts["status"] == "repaired" and facts["index_rebuilt"] and facts["kept"] == 5 and facts["lost"] == 0
    out = ask(Project.open(project.root), "Which port does service number 3 listen on?", scope="facts")
    assert out["results"][0]["id"] == ids[3]


@pytest.mark.slow
def test_the_repair_message_says_what_was_kept_and_lost(tmp_path: Path):
    project = _project(tmp_path / "p")
    ids = _save_facts(project, FACTS[:4])
    damaged = _file_with(project, "facts", ids[1].encode())
    damaged.write_bytes(b"not a lance file at all")
    report = maintenance.repair(Project.open(project.root))
    assert report["message"].startswith("facts: repaired, kept 3 row(s), recovered 0, lost 1 row(s)")
    assert "contextware_data/damaged/facts-" in report["message"]
    assert maintenance.repair(Project.open(project.root))["message"].startswith("Every table was read back intact")


def test_the_session_briefing_never_shows_a_damaged_fact(tmp_path: Path):
    from contextware.memory.briefing import session_context

    project = _project(tmp_path / "p")
    for text in ("Always run the linter before committing.", "Use pnpm, not npm."):
        records.save_fact(project, text, kind="constraint")
    assert "Use pnpm" in json.dumps(session_context(Project.open(project.root)))
    path = _file_with(project, "facts", b"Use pnpm, not npm.")
    _flip(path, b"Use pnpm, not npm.", len("Use pn"), 1)  # pnpm -> prpm
    brief = session_context(Project.open(project.root))
    shown = json.dumps(brief)
    assert "prpm" not in shown and "memory.py repair" in shown


def test_a_file_where_the_database_should_be_is_moved_aside_not_reported_intact(tmp_path: Path):
    project = _project(tmp_path / "p")
    Path(project.db_uri).write_bytes(b"not a database")
    with pytest.raises(DamagedDataError):
        records.list_records(Project.open(project.root))
    report = maintenance.repair(Project.open(project.root))
    assert report["repaired"] == ["lancedb"] and report["lost"] is None, report
    assert not report["message"].startswith("Every table")
    assert records.save_fact(Project.open(project.root), "A fresh database works.")["written"] == 1


@pytest.mark.slow
def test_one_damaged_row_inside_a_compacted_fragment_costs_only_that_row(tmp_path: Path):
    project = _project(tmp_path / "p")
    ids = _save_facts(project, FACTS[:12])
    maintenance.compact(project)  # one fragment holds every row
    files = _data_files(project, "facts")
    assert len(files) == 1
    _flip(files[0], b"Service number 7 listens", len("Service number 7 listens on port 800"), 1)
    report = maintenance.repair(Project.open(project.root))
    facts = report["tables"]["facts"]
    assert facts == {**facts, "status": "repaired", "kept": 11, "recovered": 0, "lost": 1}, report
    left = {r["id"] for r in records.list_records(Project.open(project.root), limit=100)["records"]}
    assert left == set(ids) - {ids[7]}


@pytest.mark.slow
def test_stats_verifies_every_rows_checksum_and_names_the_damaged_ones(tmp_path: Path, capsys):
    from contextware.cli import run
    from tests.support.bit_rot import flip_stored

    project = _project(tmp_path / "p")
    ids = _save_facts(project, FACTS[:5])
    assert "damaged" not in maintenance.stats(Project.open(project.root))["tables"]["facts"]
    flip_stored(project, "facts", b"port 8002", 5)  # "8002" read back as another number, silently
    assert run("memory", ["stats", "--project-root", str(project.root)]) == 0  # stats shows, never fails
    facts = json.loads(capsys.readouterr().out)["tables"]["facts"]
    assert facts["damaged_rows"] == 1 and facts["damaged_ids"] == [ids[2]], facts
    assert "memory.py repair" in facts["damaged"]
    from contextware.hosts.install.doctor import check_data

    verdict = check_data(project.root)  # doctor's data check says so too
    assert verdict["ok"] is False and "facts is damaged: 1 row(s)" in verdict["detail"], verdict

    maintenance.repair(Project.open(project.root))
    assert "damaged" not in maintenance.stats(Project.open(project.root))["tables"]["facts"]


@pytest.mark.slow
def test_lance_errors_reach_the_user_without_its_source_paths(tmp_path: Path, capsys, monkeypatch):
    """Lance appends where in its Rust sources it failed (``/root/.cargo/registry/.../utils.rs:224:20``,
    ``/rustc/<hash>/.../function.rs:250:5``): paths of its build machine, never shown (issue 23 k)."""
    from contextware.cli import run

    project = _project(tmp_path / "p")
    _save_facts(project, FACTS[:2])
    for path in _data_files(project, "facts"):
        path.write_bytes(path.read_bytes()[:40])  # torn data files
    monkeypatch.chdir(project.root)
    for command, argv, exit_code in (
        ("memory", ["list"], 1),
        ("recall", ["--query", "port"], 1),
        ("memory", ["stats"], 0),
    ):
        assert run(command, argv) == exit_code, (command, capsys.readouterr())
        out = capsys.readouterr().out
        assert "damaged" in out and ".rs:" not in out and "/rustc/" not in out and ".cargo" not in out, out
    for manifest in (_table_dir(project, "facts") / "_versions").iterdir():
        manifest.write_bytes(b"garbage")
    assert run("memory", ["list"]) == 1
    out = capsys.readouterr().out
    assert "damaged_data" in out and ".rs:" not in out and ".cargo" not in out, out
