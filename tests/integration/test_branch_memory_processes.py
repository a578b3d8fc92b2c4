"""Branch memory through every door, as real processes on a real git repository: a fact saved by
``save_fact.py`` on ``feature/jwt`` is left out on ``main`` by ``recall.py``, the MCP server's
``recall`` and the prompt hook (BeforeAgent), found with ``--branch any``; after the merge all three
find it.  A squash-merged branch's fact comes back with ``memory.py promote --branch``, and the
team memory file carries where each memory was learned."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.branch_git import commit, git, new_repo
from tests.support.hook_events import context_of, event
from tests.support.mcp_client import call, run, serve
from tests.support.repo import SCRIPTS
from tests.support.scripts import run_script

JWT = "Sessions are now JWTs signed with the AUTH_KEY secret from the vault."
SQUASH = "Rate limits are kept in the RATE_TABLE setting of the gateway."
QUESTION = "How are sessions signed?"


def _repo(tmp_path: Path) -> Path:
    return new_repo(tmp_path / "app")


def _recall(root: Path, *extra: str) -> list[str]:
    out = run_script("recall", QUESTION, "--scope", "memory", "--min-confidence", "0", *extra, cwd=root)
    assert out.returncode == 0, out.stdout
    return [r["text"] for r in out.json["results"]]


def _hook(root: Path) -> str:
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "hook.py")],
        input=event("BeforeAgent", root, prompt=QUESTION),
        capture_output=True,
        text=True,
        cwd=root,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return context_of(proc.stdout, "BeforeAgent") if proc.stdout.strip() else ""


def _mcp(root: Path, args: dict) -> list[str]:
    found: list[str] = []

    async def ask() -> None:
        async with serve(root) as client:
            out = await call(client, "recall", {"query": QUESTION, "scope": "memory", "min_confidence": 0, **args})
            found.extend(r["text"] for r in out["results"])

    run(ask)
    return found


def test_cli_mcp_and_hook_follow_the_branch(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    git(root, "checkout", "-q", "-b", "feature/jwt")
    commit(root, "jwt.py")
    saved = run_script("save_fact", JWT, "--kind", "decision", cwd=root).json
    assert saved["ok"], saved
    got = run_script("memory", "get", saved["id"], cwd=root).json["record"]
    assert got["branch"] == "feature/jwt" and got["commit"] == git(root, "rev-parse", "HEAD")
    assert _recall(root) == [JWT]

    git(root, "checkout", "-q", "main")
    assert _recall(root) == []
    assert _recall(root, "--branch", "any") == [JWT]
    assert _recall(root, "--branch", "feature/jwt") == [JWT]
    assert "AUTH_KEY" not in _hook(root)  # neither recalled nor in the first prompt's briefing
    assert "AUTH_KEY" not in run_script("context", "--format", "text", cwd=root).stdout
    assert _mcp(root, {}) == [] and _mcp(root, {"branch": "any"}) == [JWT]
    bad = run_script("recall", QUESTION, "--branch", "no/such", cwd=root)
    assert bad.returncode == 2 and bad.json["error"]["code"] == "bad_branch", bad.stdout

    git(root, "merge", "-q", "--no-ff", "-m", "merge jwt", "feature/jwt")
    assert _recall(root) == [JWT]
    assert "AUTH_KEY" in _hook(root)
    briefing = run_script("context", "--format", "text", cwd=root).stdout
    assert "AUTH_KEY" in briefing and "(branch main)" in briefing  # the briefing names the branch
    assert _mcp(root, {}) == [JWT]


def test_squash_merge_then_promote_and_the_memory_file(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    git(root, "checkout", "-q", "-b", "feature/limits")
    commit(root, "limits.py")
    assert run_script("save_fact", SQUASH, cwd=root).json["ok"]
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--squash", "feature/limits")
    git(root, "commit", "-q", "-m", "limits (squashed)")
    question = "Where are the rate limits kept?"
    out = run_script("recall", question, "--scope", "memory", "--min-confidence", "0", cwd=root).json
    assert out["results"] == []

    exported = run_script("export", cwd=root).json
    assert exported["ok"], exported
    line = json.loads((root / ".contextware/memory.jsonl").read_text().splitlines()[1])
    assert line["branch"] == "feature/limits" and len(line["commit"]) == 40

    promoted = run_script("memory", "promote", "--branch", "feature/limits", cwd=root).json
    assert promoted["ok"] and promoted["promoted"]["facts"] == 1, promoted
    out = run_script("recall", question, "--scope", "memory", "--min-confidence", "0", cwd=root).json
    assert [r["text"] for r in out["results"]] == [SQUASH] and "branch" not in out["results"][0]
    run_script("export", cwd=root)
    line = json.loads((root / ".contextware/memory.jsonl").read_text().splitlines()[1])
    assert "branch" not in line and "commit" not in line  # everyone's: the line as before branches


def test_the_warm_service_follows_each_checkout(project_dir: Path, services: None) -> None:
    """The hot path: the prompt hook answered by the resident service, which keeps the project,
    its table snapshots and the ancestry warm, still answers for the HEAD of each turn."""
    from tests.support.service_helpers import hook as served_hook
    from tests.support.service_helpers import status

    root = new_repo(project_dir)
    git(root, "checkout", "-q", "-b", "feature/jwt")
    commit(root, "jwt.py")
    assert run_script("save_fact", JWT, "--kind", "decision", cwd=root).json["ok"]
    asked = iter(range(100))

    def context() -> str:
        # A new session each time: one prompt sent twice by one host within seconds is answered once.
        out = served_hook(event("BeforeAgent", root, prompt=QUESTION, session_id=f"s{next(asked)}"), root)
        assert out.returncode == 0 and out.stderr == "", out.stderr
        return context_of(out.stdout, "BeforeAgent") if out.stdout.strip() else ""

    assert "AUTH_KEY" in context()
    assert status(root)["running"] is True
    git(root, "checkout", "-q", "main")
    assert "AUTH_KEY" not in context()
    git(root, "merge", "-q", "--no-ff", "-m", "merge jwt", "feature/jwt")
    assert "AUTH_KEY" in context()
    git(root, "checkout", "-q", "-b", "before", "HEAD~1")  # main before the merge
    assert "AUTH_KEY" not in context()
    assert status(root)["requests"] >= 4
