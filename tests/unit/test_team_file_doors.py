"""A teammate's memory file is bounded like ``save`` and checked against the clock (issue 35, items
3 and 4): a huge line is refused before it is parsed, a text over save's limit, 100,000 topics, a
long id, a time later than now (a line dated 2099, a tombstone dated 9999) are bad lines; a stored
tombstone from the future never dates a re-save; U+2028/U+2029 are escaped on export and read back,
also from an older file that holds them raw.  In process, real LanceDB, the real model."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest

from contextware.core.errors import UsageError
from contextware.core.text import iso, utcnow
from contextware.memory import edits, records
from contextware.memory.team import tombstones
from contextware.memory.team.share import export_memory, import_memory

HEADER = '{"format": "contextware-memory", "version": 2}\n'
FACT = {"id": "fact-0123456789ab", "kind": "note", "text": "We use uv.", "created_at": "2026-01-01T00:00:00Z"}


def _file(*entries: dict | str) -> str:
    return HEADER + "".join((e if isinstance(e, str) else json.dumps(e, ensure_ascii=False)) + "\n" for e in entries)


def _refused(project, text: str) -> dict:
    with pytest.raises(UsageError) as info:
        import_memory(project, text, source="x")
    assert info.value.code == "bad_import" and "nothing was imported" in info.value.message
    assert not (project.data_dir / "lancedb").exists() or not records.list_records(project, "facts")["records"]
    return info.value.details["bad_lines"][0]


@pytest.mark.parametrize(
    "entry, field",
    [
        ({**FACT, "text": "x" * 4001}, "text"),
        ({**FACT, "topics": [f"t{i}" for i in range(51)]}, "topics"),
        ({**FACT, "id": "fact-" + "0" * 200}, "id"),
        ({**FACT, "source": "s" * 201}, "source"),
        ({**FACT, "updated_at": "2099-01-01T00:00:00Z"}, "updated_at"),
        ({**FACT, "created_at": "2099-01-01T00:00:00Z"}, "created_at"),
        ({"id": FACT["id"], "created_at": FACT["created_at"], "deleted_at": "9999-01-01T00:00:00Z"}, "deleted_at"),
    ],
    ids=["text-4001", "topics-51", "id-205", "source-201", "updated-2099", "created-2099", "tombstone-9999"],
)
def test_a_line_over_saves_limits_or_from_the_future_is_a_bad_line(project, entry, field):
    bad = _refused(project, _file(entry))
    assert (bad["line"], bad["field"]) == (2, field), bad


def test_a_line_dated_within_the_skew_is_imported(project):
    soon = iso(utcnow() + timedelta(hours=1))
    assert import_memory(project, _file({**FACT, "updated_at": soon}), source="x")["added"] == 1


@pytest.mark.slow
def test_a_huge_line_and_100000_topics_are_refused_at_once_before_parsing(project):
    started = time.monotonic()
    huge = json.dumps({**FACT, "text": "x" * 20_000_000})
    bad = _refused(project, _file(huge, {**FACT, "id": "fact-0123456789ac", "topics": ["t"] * 100_000}))
    assert bad["line"] == 2 and "characters" in bad["why"]
    assert time.monotonic() - started < 5


def test_a_tombstone_from_the_future_never_dates_a_re_save(project):
    """A tombstone dated 9999 once made the re-save 9999-01-01T00:00:01Z, outranking every later edit."""
    saved = records.save_fact(project, "Deploys go through make deploy.")
    tombstones.record(
        project, [{"id": saved["id"], "created_at": None, "deleted_at": "9999-01-01T00:00:00Z", "deleted_by": "x"}]
    )
    assert saved["id"] not in tombstones.load(project)  # a stored stone from the future is ignored
    edits.delete(project, saved["id"])
    again = records.save_fact(project, "Deploys go through make deploy.")
    row = records.get(project, again["id"])["record"]
    assert str(row["updated_at"]) < iso(utcnow() + timedelta(minutes=1)), row["updated_at"]
    assert tombstones.changed_after(utcnow().replace(year=9999)) <= utcnow()


def test_line_separators_are_escaped_on_export_and_read_back(project):
    text = "Paste\u2028from a web page\u2029kept."
    records.save_fact(project, text)
    out = export_memory(project, None)["jsonl"]
    assert "\u2028" not in out and "\u2029" not in out and "\\u2028" in out
    other = project.root / "other"
    other.mkdir()
    from contextware.storage.project import Project

    clone = Project.open(other)
    assert import_memory(clone, out, source="x")["added"] == 1
    assert records.list_records(clone, "facts")["records"][0]["text"] == text


def test_an_older_file_with_raw_line_separators_is_imported(project):
    raw = _file({**FACT, "text": "Raw\u2028separator\u2029inside."})
    assert "\u2028" in raw
    assert import_memory(project, raw, source="x")["added"] == 1
    assert records.list_records(project, "facts")["records"][0]["text"] == "Raw\u2028separator\u2029inside."
