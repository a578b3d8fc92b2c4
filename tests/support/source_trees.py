"""Project trees for the code-index tests: files written under a root, in git mode (a repository)
or walk mode (outside any repository), with ``MODES`` to run a test in both."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from contextware.codeindex.files import IgnoreRules

HAVE_GIT = shutil.which("git") is not None


needs_git = pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")


MODES = [pytest.param("git", marks=needs_git), "walk"]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def write(root: Path, rel: str, content: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def make_mode(root: Path, mode: str, *, commit: bool = True) -> None:
    """Turn ``root`` into a git repo (everything added, ignored files included with -f) or make sure
    it is outside any repo."""
    if mode == "git":
        git(root, "init", "-q")
        if commit:
            git(root, "add", "-A")
            git(root, "commit", "-qm", "init", "--allow-empty")
    elif IgnoreRules.load(root, root / "contextware_data").git:
        pytest.skip("the temp dir is inside a git work tree")
