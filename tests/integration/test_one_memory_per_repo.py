"""One memory per repository: a subdirectory of a monorepo and a linked worktree (real `git worktree
add`) reach the main checkout's memory from the CLI, the hooks of both hosts (Gemini CLI's BeforeAgent,
Claude Code's UserPromptSubmit, started outside the project with the session's cwd in the payload) and
the MCP server; `memory stats` says which root and data dir it resolved, and why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.hook_events import context_of, event
from tests.support.mcp_client import call, run, serve
from tests.support.repo import SCRIPTS
from tests.support.scripts import run_script
from tests.support.team_git import git

FACT = "The api package reads its database URL from API_DATABASE_URL, never from DATABASE_URL."


@pytest.fixture
def monorepo(tmp_path: Path) -> tuple[Path, Path]:
    main = tmp_path / "mono"
    (main / "packages" / "api").mkdir(parents=True)
    (main / "packages" / "api" / "app.py").write_text("print('api')\n")
    git(tmp_path, "init", "-q", "-b", "main", str(main))
    git(main, "config", "user.name", "t")
    git(main, "add", ".")
    git(main, "commit", "-q", "-m", "init")
    git(main, "worktree", "add", "-q", str(tmp_path / "mono-feature"), "-b", "feature")
    return main, tmp_path / "mono-feature"


def _stats(cwd: Path) -> dict:
    out = run_script("memory", "stats", cwd=cwd)
    assert out.returncode == 0, out.stdout
    return out.json


def test_subdirectories_and_worktrees_resolve_to_one_memory_everywhere(monorepo, tmp_path):
    main, feature = monorepo
    saved = run_script("save_fact", FACT, "--kind", "environment", cwd=main / "packages" / "api").json
    assert saved["ok"], saved
    shared = str((main / "contextware_data").resolve())

    for cwd, root in ((main, main), (main / "packages" / "api", main), (feature / "packages" / "api", feature)):
        stats = _stats(cwd)
        assert (stats["project_root"], stats["data_dir"]) == (str(root.resolve()), shared), stats
        assert stats["project_root_from"].startswith("the git top level above the working directory"), stats
        assert stats["tables"]["facts"]["rows"] == 1
    worktree = _stats(feature)
    assert worktree["data_dir_from"].startswith("shared with the main checkout"), worktree
    assert _stats(main)["data_dir_from"] == "contextware_data/ in the project root"
    pinned = run_script("memory", "stats", cwd=tmp_path, env={"CONTEXTWARE_PROJECT_ROOT": str(main)}).json
    assert pinned["project_root_from"] == "CONTEXTWARE_PROJECT_ROOT" and pinned["data_dir"] == shared
    assert not (feature / "contextware_data").exists() and not (main / "packages" / "api" / "contextware_data").exists()

    # The hooks of both hosts, started outside the project: the payload's cwd picks the project.
    prompt = "Where does the api package read its database URL from?"
    for name in ("BeforeAgent", "UserPromptSubmit"):
        proc = subprocess.run(
            [sys.executable, str(SCRIPTS / "hook.py")],
            input=event(name, feature / "packages" / "api", prompt=prompt),
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert "API_DATABASE_URL" in context_of(proc.stdout, name), (name, proc.stdout)

    async def through_mcp() -> None:
        async with serve(feature / "packages" / "api") as client:
            stats = await call(client, "memory_stats", {})
            assert (stats["project_root"], stats["data_dir"]) == (str(feature.resolve()), shared), stats
            found = await call(client, "recall", {"query": prompt})
            assert any("API_DATABASE_URL" in (r.get("text") or "") for r in found["results"]), found

    run(through_mcp)
