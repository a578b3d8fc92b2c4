"""scripts/install.py run again with a different runner than the first install: the hooks and the MCP
server then start another way (``uv run --no-sync --project ...``, ``--python PATH``,
``CONTEXTWARE_HOOK_PYTHON`` or, a project's default, ``contextware`` from PATH).  The second install replaces the first in place (one hook of ours per
event, one MCP entry, the manifest's runner updated, the original settings still known) and
uninstall afterwards gives back exactly what was there before the first install.

The uv runner uses a stand-in ``uv`` (``$UV``, which install.py honours): it records its arguments
and exits 0, so that ``uv sync`` does not touch the test's own environment.  The Python runners are
this interpreter and a wrapper script that execs it (a second, different --python PATH)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from tests.support.repo import REPO, SCRIPTS
from tests.support.scripts import run_script

EVENTS = ("SessionStart", "BeforeAgent", "AfterAgent", "PreCompress")
SETTINGS = {  # a user's own project settings: their hooks (one sharing an event with ours) and MCP servers
    "general": {"vimMode": True},
    "hooks": {
        "BeforeAgent": [{"matcher": "*", "hooks": [{"type": "command", "command": "echo mine", "name": "my-hook"}]}],
        "BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh"}]}],
    },
    "mcpServers": {
        "github": {"command": "gh-mcp", "args": ["--stdio"]},
        "contextware": {"command": "my-old-memory-server"},
    },  # replaced by ours, must come back
    "ui": {"theme": "Dracula"},
}


def _fake_uv(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "fake-uv-bin"
    bin_dir.mkdir(exist_ok=True)
    uv = bin_dir / "uv"
    uv.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(bin_dir / "calls.log"))}\nexit 0\n')
    uv.chmod(0o755)
    return uv


def _wrapper_python(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "other-python-bin"
    bin_dir.mkdir(exist_ok=True)
    py = bin_dir / "python3"
    py.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    py.chmod(0o755)
    return py


def _runner(kind: str, tmp_path: Path) -> tuple[list[str], dict[str, str], str, list[str]]:
    """(install options, environment, runner kind, argv prefix before the script path)."""
    if kind == "uv":
        uv = str(_fake_uv(tmp_path))
        return [], {"UV": uv}, "uv", [uv, "run", "--no-sync", "--project", str(REPO)]
    if kind == "python":
        return ["--python", sys.executable], {}, "python", [sys.executable]
    if kind == "env-python":  # the same choice made through the environment
        return [], {"CONTEXTWARE_HOOK_PYTHON": sys.executable}, "python", [sys.executable]
    if kind == "portable":  # a project's default: the console command from PATH, no path of this machine
        return [], {}, "command", ["contextware"]
    py = str(_wrapper_python(tmp_path))
    return ["--python", py], {}, "python", [py]


def _hook_argv(kind: str, argv: list[str]) -> list[str]:
    """Hooks and the MCP server never start through ``uv run``: the uv runner's run the skill
    environment's Python."""
    return [str(REPO / ".venv" / "bin" / "python")] if kind == "uv" else argv


def _install(root: Path, opts: list[str], env: dict[str, str]):
    res = run_script("install", "gemini", "--project", *opts, cwd=root, env=env)
    assert res.returncode == 0, res.stdout + res.stderr[-2000:]
    return res.json


def _manifest() -> dict:
    return json.loads((Path(os.environ["CONTEXTWARE_HOME"]) / "install-manifest.json").read_text())["installs"]


def _ours(data: dict) -> dict[str, list[dict]]:
    return {
        event: [d for d in defs if any(str(h.get("name", "")).startswith("contextware-") for h in d["hooks"])]
        for event, defs in data["hooks"].items()
    }


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``root``."""
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("with_settings", [True, False], ids=["user-settings", "no-settings"])
@pytest.mark.parametrize("first, second", [("python", "portable"), ("portable", "python"), ("python", "other-python")])
def test_project_reinstall_with_another_runner_replaces_the_first_and_uninstall_restores(
    project_dir: Path, tmp_path: Path, first: str, second: str, with_settings: bool
):
    path = project_dir / ".gemini" / "settings.json"
    if with_settings:
        path.parent.mkdir()
        path.write_text(json.dumps(SETTINGS, indent=2) + "\n")
    before = _tree(project_dir)
    key = f"gemini:project:{project_dir.resolve()}"

    opts1, env1, kind1, _argv1 = _runner(first, tmp_path)
    one = _install(project_dir, opts1, env1)
    assert one["changed"] and one["runner"] == kind1
    installed = json.loads(path.read_text())
    entry1 = _manifest()[key]

    opts2, env2, kind2, argv2 = _runner(second, tmp_path)
    two = _install(project_dir, opts2, env2)
    portable = kind2 == "command"
    hook_command = "contextware hook" if portable else shlex.join([*argv2, f"{REPO}/scripts/hook.py"])
    mcp = (
        {"command": "contextware", "args": ["mcp"]}
        if portable
        else {"command": argv2[0], "args": [*argv2[1:], f"{REPO}/scripts/mcp_server.py"]}
    ) | {"timeout": 900_000}
    assert two["changed"] is True and two["runner"] == kind2
    # the skill names the scripts' paths for a Python runner, the console command for the portable one
    assert two["written"] == [".gemini/settings.json"] + (
        [".gemini/skills/contextware/SKILL.md"] if "portable" in (first, second) else []
    )
    assert two["hook_command"] == hook_command and two["mcp_server"] == mcp
    if "uv" in (first, second):
        calls = (tmp_path / "fake-uv-bin" / "calls.log").read_text().splitlines()
        assert calls == [f"sync --compile-bytecode --project {REPO}"]  # only the uv install synced

    data = json.loads(path.read_text())
    ours = _ours(data)
    for event in EVENTS:
        assert len(ours[event]) == 1, (event, data["hooks"][event])  # replaced, not added
        (hook,) = ours[event][0]["hooks"]
        assert hook["command"] == hook_command and hook["name"] == _ours(installed)[event][0]["hooks"][0]["name"]
    assert sum(len(v) for v in ours.values()) == len(EVENTS)
    assert data["mcpServers"]["contextware"] == mcp
    # Nothing else moved: same keys in the same order, same hook positions, the user's entries as they were.
    assert list(data) == list(installed) and list(data["hooks"]) == list(installed["hooks"])
    assert list(data["mcpServers"]) == list(installed["mcpServers"])
    for event, defs in data["hooks"].items():
        assert len(defs) == len(installed["hooks"][event])
        for new, old in zip(defs, installed["hooks"][event], strict=False):
            assert (new in ours[event]) == (old in _ours(installed)[event])
            if new not in ours[event]:
                assert new == old
    if with_settings:
        assert data["hooks"]["BeforeAgent"][0] == SETTINGS["hooks"]["BeforeAgent"][0]
        assert {k: data[k] for k in ("general", "ui")} == {k: SETTINGS[k] for k in ("general", "ui")}
        assert data["mcpServers"]["github"] == SETTINGS["mcpServers"]["github"]

    entry = _manifest()[key]
    assert entry["runner"] == kind2
    assert entry["settings"]["original"] == entry1["settings"]["original"]
    assert entry["settings"]["original"] == (before.get(".gemini/settings.json", b"").decode() or None)
    assert entry["settings"]["created_keys"] == entry1["settings"]["created_keys"]
    assert entry["settings"]["mcp_previous"] == (SETTINGS["mcpServers"]["contextware"] if with_settings else None)
    assert entry["settings"]["written_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert entry["skill"]["original"] == entry1["skill"]["original"]

    assert _install(project_dir, opts2, env2)["changed"] is False  # the second runner is now the installed one

    gone = run_script("install", "uninstall", "--project", cwd=project_dir)
    assert gone.returncode == 0 and gone.json["changed"], gone.stdout
    assert _tree(project_dir) == before  # byte for byte, and no file or folder install created is left
    assert key not in _manifest()


def test_project_reinstall_with_another_runner_then_a_user_edit_uninstall_removes_only_ours(
    project_dir: Path, tmp_path: Path
):
    """Edited after the second install, the file cannot get its bytes back: uninstall removes our
    entries only, and the user's own ``contextware`` MCP server replaced by the FIRST install comes
    back (the re-install must not take our first entry for the user's)."""
    path = project_dir / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(SETTINGS, indent=2) + "\n")
    _install(project_dir, *_runner("python", tmp_path)[:2])
    _install(project_dir, *_runner("portable", tmp_path)[:2])
    edited = json.loads(path.read_text())
    edited["ui"]["theme"] = "GitHub"
    path.write_text(json.dumps(edited, indent=4) + "\n")

    gone = run_script("install", "uninstall", "--project", cwd=project_dir)
    assert gone.returncode == 0 and gone.json["written"] == [".gemini/settings.json"], gone.stdout
    assert json.loads(path.read_text()) == {**SETTINGS, "ui": {"theme": "GitHub"}}
    assert not (project_dir / ".gemini" / "skills").exists()


def test_user_reinstall_with_another_runner_rewrites_the_extension_and_uninstall_removes_it(
    project_dir: Path, tmp_path: Path
):
    home = Path(os.environ["CONTEXTWARE_HOME"])
    gemini_home = Path(os.environ["GEMINI_CLI_HOME"])
    before_home, before_gemini = _tree(home), _tree(gemini_home)
    # another Python than the environment's: the uv runner's hooks run the environment's Python
    opts1, env1, _, _argv1 = _runner("other-python", tmp_path)
    opts2, env2, _, argv2 = _runner("uv", tmp_path)

    one = run_script("install", "gemini", "--no-link", *opts1, cwd=project_dir, env=env1)
    assert one.returncode == 0 and one.json["changed"], one.stdout
    ext = Path(one.json["extension_dir"])
    two = run_script("install", "gemini", "--no-link", *opts2, cwd=project_dir, env=env2)
    assert two.returncode == 0 and two.json["runner"] == "uv", two.stdout
    assert sorted(Path(p).relative_to(ext).as_posix() for p in two.json["written"]) == [
        "CONTEXTWARE.md",
        "gemini-extension.json",
        "hooks/hooks.json",
    ]

    hook_command = shlex.join([*_hook_argv("uv", argv2), f"{REPO}/scripts/hook.py"])
    hooks = json.loads((ext / "hooks" / "hooks.json").read_text())["hooks"]
    assert sorted(hooks) == sorted(EVENTS)
    assert all(len(defs) == 1 and [h["command"] for h in defs[0]["hooks"]] == [hook_command] for defs in hooks.values())
    manifest = json.loads((ext / "gemini-extension.json").read_text())
    mcp_argv = _hook_argv("uv", argv2)  # the MCP server starts like the hooks: no `uv run` on every turn
    assert manifest["mcpServers"] == {
        "contextware": {
            "command": mcp_argv[0],
            "args": [*mcp_argv[1:], str(SCRIPTS / "mcp_server.py")],
            "timeout": 900_000,
        }
    }
    context = (ext / "CONTEXTWARE.md").read_text()
    assert f"uv run --project {REPO}" in context and sys.executable not in context
    assert _manifest()["gemini:user"]["runner"] == "uv"

    gone = run_script("install", "uninstall", cwd=project_dir)
    assert gone.returncode == 0 and gone.json["removed"] == [str(ext)], gone.stdout
    assert not ext.exists() and not ext.parent.exists()
    assert "gemini:user" not in _manifest()
    after_home = {
        k: v for k, v in _tree(home).items() if not k.startswith((".install-manifest.lock", "install-manifest.json"))
    }
    assert after_home == before_home and _tree(gemini_home) == before_gemini
