"""The linked worktrees of one repository (a real ``git worktree add``) share the main checkout's memory,
found through the common git dir without spawning git (each checkout sees what its branch has); ``CONTEXTWARE_WORKTREES=separate`` or
``"worktrees": "separate"`` in the main checkout's config.json gives each worktree its own."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from contextware.storage.layout import main_worktree
from tests.support.scripts import run_script

FACT = "The feature branch renames the billing tables; run the migration before the tests."


def _git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


@pytest.fixture
def repo_with_worktree(tmp_path: Path) -> tuple[Path, Path]:
    main = tmp_path / "app"
    (main / "src").mkdir(parents=True)
    (main / "src" / "billing.py").write_text("def charge():\n    pass\n")
    _git("init", "-q", "-b", "main", cwd=main)
    _git("add", ".", cwd=main)
    _git("commit", "-q", "-m", "init", cwd=main)
    _git("worktree", "add", "-q", str(tmp_path / "app-feature"), "-b", "feature", cwd=main)
    return main, tmp_path / "app-feature"


def _recall(cwd: Path, env: dict | None = None) -> list[str]:
    out = run_script("recall", "--query", "which tables does the feature branch rename?", cwd=cwd, env=env).json
    assert out["ok"], out
    return [r.get("text") for r in out["results"]]


def test_worktrees_share_the_main_checkouts_memory(repo_with_worktree: tuple[Path, Path]):
    main, feature = repo_with_worktree
    assert main_worktree(feature) == main.resolve() and main_worktree(main) is None
    saved = run_script("save_fact", FACT, "--kind", "decision", cwd=feature / "src").json
    assert saved["ok"], saved
    assert not (feature / "contextware_data").exists() and (main / "contextware_data").is_dir()
    assert FACT in _recall(feature / "src")
    # One store, and the branch rule of memory/branches.py: main sees the feature's memory once the
    # feature's work after it reaches main.
    assert FACT not in _recall(main)
    (feature / "src" / "billing.py").write_text("def charge():\n    return 1\n")
    _git("commit", "-qam", "rename the billing tables", cwd=feature)
    _git("merge", "-q", "--ff-only", "feature", cwd=main)
    assert FACT in _recall(main)  # saved in the worktree, found from the main checkout


def test_separate_worktrees_by_environment_or_config(repo_with_worktree: tuple[Path, Path]):
    main, feature = repo_with_worktree
    assert run_script("save_fact", FACT, "--kind", "decision", cwd=main).json["ok"]
    assert FACT not in _recall(feature, env={"CONTEXTWARE_WORKTREES": "separate"})

    (main / "contextware_data" / "config.json").write_text(json.dumps({"worktrees": "separate"}))
    assert FACT not in _recall(feature)
    assert run_script("save_fact", "Only in the feature worktree.", cwd=feature).json["ok"]
    assert (feature / "contextware_data").is_dir()
    assert FACT in _recall(feature, env={"CONTEXTWARE_WORKTREES": "shared"})  # the environment wins

    bad = run_script("recall", "--query", "x", cwd=feature, env={"CONTEXTWARE_WORKTREES": "both"})
    assert bad.returncode == 2 and "worktrees must be shared or separate" in bad.json["error"]["message"]
