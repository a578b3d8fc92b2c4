"""The export file format and its checks, in process: every bad line is named, nothing is written."""

from __future__ import annotations

import json

import pytest

from contextware.core.errors import UsageError
from contextware.memory.records import save_fact
from contextware.memory.team.share import export_memory, import_memory, parse_export

HEADER = '{"format": "contextware-memory", "version": 1}\n'
GOOD = {"id": "fact-0123456789ab", "kind": "note", "text": "We use uv.", "created_at": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize(
    "line, words",
    [
        ("{oops", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({**GOOD, "id": "fact-0123456789ac", "colour": "red"}), "unknown field colour"),
        (json.dumps({**GOOD, "id": "fact-0123456789ad", "kind": "wish"}), "kind"),
        (json.dumps({**GOOD, "id": "fact-1"}), "not a memory id"),
        (json.dumps({**GOOD, "id": "note-0123456789ab"}), "not a memory id"),
        (json.dumps({**GOOD, "id": "fact-0123456789ae", "text": " "}), "text is missing or empty"),
        (json.dumps({**GOOD, "id": "fact-0123456789af", "created_at": "yesterday"}), "not an ISO 8601 time"),
        (json.dumps({**GOOD, "id": "fact-0123456789a0", "supersedes": "episode-0123456789ab"}), "not a fact id"),
        (json.dumps({**GOOD, "id": "fact-0123456789a1", "topics": "ci"}), "topics must be a list"),
        (
            json.dumps(
                {"id": "episode-0123456789ab", "goal": "g", "summary": "s", "result": "meh", "created_at": "2026-01-01"}
            ),
            "result",
        ),
        (json.dumps(GOOD), "already on line 2"),
    ],
)
def test_every_bad_line_is_named(line, words):
    with pytest.raises(UsageError) as caught:
        parse_export(HEADER + json.dumps(GOOD) + "\n" + line + "\n")
    assert caught.value.code == "bad_import" and caught.value.exit_code == 2
    assert caught.value.message.startswith("Line 3: ") or caught.value.message.startswith("Line 3 "), (
        caught.value.message
    )
    assert words in caught.value.message and caught.value.message.endswith("nothing was imported.")


def test_a_newer_format_is_refused_and_blank_lines_are_fine():
    with pytest.raises(UsageError, match="version 3"):  # version 2 (tombstones, speakers) is this one
        parse_export('{"format": "contextware-memory", "version": 3}\n')
    rows = parse_export(HEADER + "\n" + json.dumps(GOOD) + "\n\n")
    assert [r["id"] for r in rows["facts"]] == [GOOD["id"]]
    assert rows["facts"][0]["updated_at"] == rows["facts"][0]["created_at"]


def test_a_bad_file_writes_nothing(project):
    with pytest.raises(UsageError):
        import_memory(project, HEADER + json.dumps(GOOD) + "\n{oops\n", source="x")
    assert not project.data_dir.exists()


def test_secrets_planted_in_a_file_never_reach_the_table(project):
    planted = {**GOOD, "text": "Deploy key AKIAABCDEFGHIJKLMNOP is in the vault."}
    report = import_memory(project, HEADER + json.dumps(planted) + "\n", source="x")
    assert report["added"] == 1 and report["redacted"] == {"aws_access_key": 1}
    out = export_memory(project, None)
    assert "AKIA" not in out["jsonl"] and "[REDACTED:aws_access_key]" in out["jsonl"]


def test_export_is_deterministic_and_import_is_idempotent(project, tmp_path):
    save_fact(project, "Use pnpm, not npm.", kind="convention", topics="js,deps")
    first = export_memory(project, None)["jsonl"]
    assert export_memory(project, None)["jsonl"] == first
    row = json.loads(first.splitlines()[1])
    assert list(row) == [
        "id",
        "kind",
        "text",
        "topics",
        "status",
        "supersedes",
        "superseded_by",
        "source",
        "created_at",
        "updated_at",
        "origin",
        "author",
        "host",
        "session",
    ]
    report = import_memory(project, first, source="x")
    assert (report["added"], report["updated"], report["unchanged"]) == (0, 0, 1)


@pytest.mark.slow
def test_dry_run_lists_the_changes_and_writes_nothing(project):
    newer = {**GOOD, "updated_at": "2026-02-01T00:00:00Z"}
    other = {**GOOD, "id": "fact-0123456789ff", "text": "We use ruff."}
    preview = import_memory(project, HEADER + json.dumps(GOOD) + "\n", source="x", dry_run=True)
    assert preview["changes"] == [{"id": GOOD["id"], "change": "add"}] and not project.data_dir.exists()
    import_memory(project, HEADER + json.dumps(GOOD) + "\n", source="x")
    text = HEADER + json.dumps(newer) + "\n" + json.dumps(other) + "\n"
    preview = import_memory(project, text, source="x", dry_run=True)
    assert preview["changes"] == [{"id": GOOD["id"], "change": "update"}, {"id": other["id"], "change": "add"}]
    assert (preview["added"], preview["updated"], preview["dry_run"]) == (1, 1, True)
    done = import_memory(project, text, source="x")
    assert (done["added"], done["updated"], done["unchanged"]) == (1, 1, 0)
    assert import_memory(project, text, source="x", dry_run=True)["changes"] == []


def test_every_bad_line_of_a_file_is_listed_with_its_field():
    bad_kind = json.dumps({**GOOD, "id": "fact-0123456789ad", "kind": "wish"})
    bad_time = json.dumps({**GOOD, "id": "fact-0123456789af", "created_at": "yesterday"})
    stone = json.dumps({"id": "fact-0123456789a2", "deleted_at": "soon"})
    text = HEADER + json.dumps(GOOD) + "\n" + bad_kind + "\n{oops\n" + bad_time + "\n" + stone + "\n"
    with pytest.raises(UsageError) as caught:
        parse_export(text)
    lines = caught.value.details["bad_lines"]
    assert [(p["line"], p["field"]) for p in lines] == [(3, "kind"), (4, None), (5, "created_at"), (6, "deleted_at")]
    assert caught.value.message.startswith("Line 3: ") and "Line 4 is not valid JSON" in caught.value.message


def test_a_file_with_conflict_markers_is_read_as_both_sides():
    older = {**GOOD, "updated_at": "2026-01-02T00:00:00Z"}
    newer = {**GOOD, "text": "We use uv everywhere.", "updated_at": "2026-01-03T00:00:00Z"}
    other = {**GOOD, "id": "fact-0123456789ff", "text": "We use ruff."}
    text = (
        HEADER
        + "<<<<<<< HEAD\n"
        + json.dumps(newer)
        + "\n=======\n"
        + json.dumps(older)
        + "\n"
        + json.dumps(other)
        + "\n>>>>>>> theirs\n"
    )
    rows = parse_export(text)["facts"]
    assert {r["id"]: r["text"] for r in rows} == {GOOD["id"]: "We use uv everywhere.", other["id"]: "We use ruff."}
    with pytest.raises(UsageError, match="ends inside a git conflict"):
        parse_export(HEADER + "<<<<<<< HEAD\n" + json.dumps(GOOD) + "\n")


def test_a_line_git_moved_can_stand_twice_in_one_side_of_a_conflict(project):
    """Saved again on one branch, a memory's line moves (its created_at changed): git may keep the
    new line among the lines both sides share and the old one in a conflict hunk.  The later of the
    two is taken (the 50-round team test hit this), by import and by the merge driver's reader."""
    from contextware.memory.team.memfile import read_entries

    older = {**GOOD, "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-02T00:00:00Z"}
    moved = {
        **GOOD,
        "text": "We use uv everywhere.",
        "created_at": "2026-01-05T00:00:00Z",
        "updated_at": "2026-01-05T00:00:00Z",
    }
    other = {**GOOD, "id": "fact-0123456789ff", "text": "We use ruff."}
    third = {**GOOD, "id": "fact-0123456789ee", "text": "We use mypy."}
    text = (
        HEADER
        + "<<<<<<< HEAD\n"
        + json.dumps(other)
        + "\n=======\n"
        + json.dumps(older)
        + "\n"
        + json.dumps(third)
        + "\n>>>>>>> theirs\n"
        + json.dumps(moved)
        + "\n"
    )
    assert read_entries(text)[GOOD["id"]]["text"] == "We use uv everywhere."
    report = import_memory(project, text, source="memory.jsonl")
    assert report["added"] == 3 and report["conflict_markers"] == "merged both sides"
    got = {r["id"]: r["text"] for r in parse_export(export_memory(project, None)["jsonl"])["facts"]}
    assert got[GOOD["id"]] == "We use uv everywhere."
    with pytest.raises(UsageError, match="is already on line"):  # in a file without markers: a bad line
        import_memory(project, HEADER + json.dumps(older) + "\n" + json.dumps(moved) + "\n", source="x")


@pytest.mark.slow
def test_tombstones_delete_and_a_newer_save_wins_over_them(project):
    from contextware.memory.edits import delete

    saved = save_fact(project, "The build cache lives in /var/cache/build.", kind="environment")
    stone = next(json.loads(line) for line in _deleted_copy(project, saved["id"]).splitlines()[1:])
    assert stone["id"] == saved["id"] and set(stone) == {"id", "created_at", "deleted_at", "deleted_by"}
    again = save_fact(project, "The build cache lives in /var/cache/build.", kind="environment")
    assert again["id"] == saved["id"]  # the same content, the same id; newer than its tombstone
    exported = [json.loads(line) for line in export_memory(project, None)["jsonl"].splitlines()[1:]]
    assert [e.get("text") for e in exported] == ["The build cache lives in /var/cache/build."]
    delete(project, saved["id"])
    assert "deleted_at" in export_memory(project, None)["jsonl"]


def _deleted_copy(project, record_id: str) -> str:
    from contextware.memory.edits import delete

    delete(project, record_id)
    return export_memory(project, None)["jsonl"]


@pytest.mark.slow
def test_a_logs_speaker_travels(project, tmp_path):
    from contextware.memory.records import save
    from contextware.storage.project import Project

    save(project, "log", "Ship it on Friday.", session_id="s-1", role="user", speaker="Alice")
    save(project, "log", "Not on Friday.", session_id="s-1", role="user", speaker="Bob")
    text = export_memory(project, None, include_logs=True)["jsonl"]
    speakers = sorted(json.loads(line)["speaker"] for line in text.splitlines()[1:])
    assert speakers == ["Alice", "Bob"]
    (tmp_path / "other").mkdir()
    other = Project.open(tmp_path / "other")
    assert import_memory(other, text, source="x")["added"] == 2
    assert export_memory(other, None, include_logs=True)["jsonl"] == text


@pytest.mark.slow
def test_the_same_text_under_two_ids_folds_into_the_smaller_and_keeps_the_chain(project):
    from contextware.memory.records import get

    when = "2026-01-01T00:00:00Z"
    old = {"id": "fact-eeeeeeeeeeee", "kind": "decision", "text": "Deploy with heroku.", "created_at": when}
    old.update(status="superseded", superseded_by="fact-ffffffffffff")
    mine = {"id": "fact-ffffffffffff", "kind": "decision", "text": "Deploy with fly.", "created_at": when}
    mine["supersedes"] = old["id"]
    import_memory(project, HEADER + json.dumps(old) + "\n" + json.dumps(mine) + "\n", source="mine")
    theirs = {"id": "fact-000000000001", "kind": "convention", "text": "Deploy with fly.", "created_at": when}
    report = import_memory(project, HEADER + json.dumps(theirs) + "\n", source="theirs")
    assert report["folded_into"] == {mine["id"]: theirs["id"]} and report["added"] == 1, report
    assert get(project, old["id"])["record"]["superseded_by"] == theirs["id"]
    with pytest.raises(Exception, match="No memory"):
        get(project, mine["id"])
    # The other way round, a file's larger id is a duplicate of the smaller one here.
    again = {**mine, "supersedes": None}
    report = import_memory(project, HEADER + json.dumps(again) + "\n", source="x")
    assert report["duplicate_of"] == {mine["id"]: theirs["id"]} and report["added"] == 0, report


@pytest.mark.slow
def test_a_change_within_the_same_second_is_later_than_the_version_it_follows(project, tmp_path):
    """Supersede, then delete the successor, in one second: the fact made current again must win a
    merge against its superseded copy on another clone (dated `now`, it tied, and the greater line,
    the superseded one, won on one clone while the other kept the active one)."""
    from contextware.memory.edits import delete
    from contextware.memory.team.tombstones import later

    old = save_fact(project, "Staging runs on a single node.", kind="environment")
    new = save_fact(project, "Staging runs on three nodes.", kind="environment", supersedes=old["id"])

    def line(record_id: str) -> dict:
        rows = [json.loads(x) for x in export_memory(project, None)["jsonl"].splitlines()[1:]]
        return next(r for r in rows if r["id"] == record_id)

    superseded = line(old["id"])
    assert superseded["status"] == "superseded" and superseded["updated_at"] > superseded["created_at"]
    delete(project, new["id"])
    current = line(old["id"])
    assert current["status"] == "active" and current["updated_at"] > superseded["updated_at"]
    assert later(superseded, current) is current and later(current, superseded) is current
