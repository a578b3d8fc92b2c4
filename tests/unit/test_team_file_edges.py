"""The team memory file at its edges: line separators that JSON leaves raw, and what git's merge
driver may be handed instead of three regular files (a named pipe, a device, a folder, nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextware.core.errors import UsageError
from contextware.memory.records import save_fact
from contextware.memory.team.share import export_memory, import_memory
from contextware.storage.project import Project

PASTED = "Release notes go in CHANGELOG.md\u2028under Unreleased\u2029(pasted from a web page)."


@pytest.mark.slow
def test_a_line_separator_in_a_memory_is_escaped_on_export_and_read_back(project, tmp_path):
    save_fact(project, PASTED, kind="convention")
    text = export_memory(project, None)["jsonl"]
    assert "\u2028" not in text and "\u2029" not in text and "\x85" not in text
    assert len(text.splitlines()) == 2  # the header and one memory, for every line reader
    (tmp_path / "other").mkdir()
    other = Project.open(tmp_path / "other")
    assert import_memory(other, text, source="team.jsonl")["added"] == 1
    assert export_memory(other, None)["jsonl"] == text
    assert json.loads(text.splitlines()[1])["text"] == PASTED


@pytest.mark.slow
def test_a_file_an_older_version_wrote_with_raw_separators_still_imports(project, tmp_path):
    save_fact(project, PASTED, kind="convention")
    escaped = export_memory(project, None)["jsonl"]
    header, line = escaped.rstrip("\n").split("\n")
    raw = json.dumps(json.loads(line), ensure_ascii=False)  # what json.dumps left in the file before
    assert "\u2028" in raw
    (tmp_path / "other").mkdir()
    other = Project.open(tmp_path / "other")
    report = import_memory(other, f"{header}\n{raw}\n", source="old.jsonl")
    assert report["added"] == 1


def _driver(*paths: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextware.cli", "merge-driver", *paths],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def sides(tmp_path: Path, project: Project) -> dict[str, Path]:
    save_fact(project, "Deploys go through the release pipeline.", kind="constraint")
    text = export_memory(project, None)["jsonl"]
    out = {}
    for name in ("base", "ours", "theirs"):
        out[name] = tmp_path / f"{name}.jsonl"
        out[name].write_text(text)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("which", ["base", "ours", "theirs"])
@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "missing"])
def test_the_merge_driver_refuses_what_is_not_a_file_with_one_error(sides, tmp_path, which, kind):
    if kind == "device" and which == "ours":
        pytest.skip("OURS is written: a driver that wrongly accepted /dev/zero would replace the device node")
    bad = tmp_path / f"bad-{kind}"
    if kind == "fifo":
        os.mkfifo(bad)  # nobody ever writes to it: an open would block for good
    elif kind == "device":
        bad = Path("/dev/zero")  # never ends
    elif kind == "folder":
        bad.mkdir()
    paths = {**sides, which: bad}
    before = sides["ours"].read_text()
    done = _driver(str(paths["base"]), str(paths["ours"]), str(paths["theirs"]))
    assert done.returncode == 2, done
    error = json.loads(done.stdout)["error"]
    assert error["code"] in ("bad_merge_input", "file_not_found") and "Traceback" not in done.stderr
    if which != "ours":
        assert sides["ours"].read_text() == before  # nothing merged into OURS


@pytest.mark.slow
def test_the_merge_driver_still_merges_three_regular_files(sides):
    done = _driver(str(sides["base"]), str(sides["ours"]), str(sides["theirs"]))
    assert done.returncode == 0 and done.stdout == ""


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"id": "fact-1a2b3c4d5e6f", "text": "Use pnpm.", "kind": 5}, "kind"),
        ({"id": "fact-1a2b3c4d5e6f", "text": "Use pnpm.", "status": True}, "status"),
        ({"id": "fact-1a2b3c4d5e6f", "text": "Use pnpm.", "kind": ["note"]}, "kind"),
        ({"id": "episode-1a2b3c4d5e6f", "goal": "g", "result": "success", "summary": "s", "category": 7}, "category"),
    ],
)
def test_a_choice_that_is_not_a_text_is_a_bad_line_not_an_internal_error(project: Project, line, field):
    """A teammate's line with a number or a list where a choice goes (kind, status) was an
    ``AttributeError`` (internal error, exit 1) in import and in the merge driver: now the bad line,
    named with its field, and nothing imported."""
    entry = {**line, "created_at": "2026-01-01T00:00:00Z"}
    text = json.dumps({"format": "contextware-memory", "version": 2}) + "\n" + json.dumps(entry) + "\n"
    with pytest.raises(UsageError) as refused:
        import_memory(project, text, source="memory.jsonl")
    assert refused.value.code == "bad_import"
    assert refused.value.details["bad_lines"][0]["field"] == field
    assert not project.data_dir.exists() or project.db.open_table("facts") is None
