"""File names that are not valid UTF-8, planted for real (``os.fsencode`` bytes) in a project with
and without git: the crawl skips and counts them, warns once, and indexes everything else."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from contextware.codeindex.indexer import crawl, index_files
from contextware.storage.project import Project


def _plant(root: Path) -> None:
    (root / "good.py").write_text("def good():\n    return 1\n")
    raw = os.fsencode(root)
    with open(raw + b"/bad_\xff\xfe.py", "w") as fh:
        fh.write("def bad():\n    return 2\n")
    os.mkdir(raw + b"/dir_\xe9")
    with open(raw + b"/dir_\xe9/inner.py", "w") as fh:
        fh.write("def inner():\n    return 3\n")


@pytest.mark.slow
@pytest.mark.parametrize("git", [False, True], ids=["walk", "git"])
def test_names_that_are_not_utf8_are_skipped_counted_and_warned(project_dir: Path, capsys, git: bool):
    if git:
        subprocess.run(["git", "init", "-q", str(project_dir)], check=True)
    _plant(project_dir)
    report = crawl(Project.open(project_dir), summarizer="local")
    assert report["indexed_files"] == ["good.py"]
    assert report["skipped_reasons"]["name_not_utf8"] == 2
    shown = sorted(s["path"] for s in report["skipped_files"] if s["reason"] == "name_not_utf8")
    assert shown == ["bad_\\xff\\xfe.py", "dir_\\xe9/inner.py"]
    json.dumps(report, ensure_ascii=False).encode("utf-8")  # the report prints as UTF-8
    err = capsys.readouterr().err
    assert err.count("not valid UTF-8") == 1 and "skipped 2 file(s)" in err


def test_index_file_given_such_a_name_skips_it(project_dir: Path, capsys):
    _plant(project_dir)
    name = os.fsdecode(os.fsencode(project_dir) + b"/bad_\xff\xfe.py")
    report = index_files(Project.open(project_dir), [name], summarizer="local")
    assert report["indexed"] == 0 and report["skipped_reasons"] == {"name_not_utf8": 1}
    assert "not valid UTF-8" in capsys.readouterr().err
