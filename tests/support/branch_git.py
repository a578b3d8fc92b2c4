"""Real git for the branch-memory tests: run a command, make a commit, make a repository."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def commit(root: Path, name: str) -> None:
    (root / name).write_text(f"{name}\n")
    git(root, "add", name)
    git(root, "commit", "-q", "-m", name)


def new_repo(root: Path) -> Path:
    """A repository on ``main`` with one commit."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.com")
    commit(root, "README")
    return root
