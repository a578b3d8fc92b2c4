"""Claude Code: ``install.py claude`` puts the hooks, the MCP server and the skill in place and takes
exactly them out again; the end-to-end tests run the REAL ``claude`` binary against the fake
Anthropic API and check what reached the model's request and what memory stored.

Project installs are committed files, so they call ``contextware`` from PATH (here the test
environment's console command, first on PATH in ``claude_env``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contextware.core.fence import FENCE_CLOSE, FENCE_OPEN
from contextware.memory import records
from contextware.storage.project import Project
from tests.support.claude_fixtures import run_claude
from tests.support.fake_anthropic_api import Reply, message_texts
from tests.support.repo import REPO
from tests.support.scripts import run_script

FACT = "Never deploy on Fridays; production releases go out Monday to Thursday only."
PROMPT = "Can I deploy the release to production on Friday?"
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact")

# A user's own project settings and MCP servers, as Claude Code writes them.
USER_SETTINGS = {
    "permissions": {"allow": ["Bash(npm run test:*)"], "deny": []},
    "hooks": {
        "Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}],
    },
    "model": "opus",
}
USER_MCP = {"mcpServers": {"github": {"command": "gh-mcp", "args": ["--stdio"]}}}


def _tree(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


def _ours(settings: dict) -> dict[str, list[dict]]:
    return {
        event: [d for d in defs if d["hooks"][0].get("name", "").startswith("contextware-")]
        for event, defs in settings["hooks"].items()
    }


def test_project_install_is_portable_idempotent_and_uninstall_restores_the_bytes(project_dir: Path):
    (project_dir / ".claude").mkdir()
    (project_dir / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    (project_dir / ".mcp.json").write_text(json.dumps(USER_MCP, indent=4))
    before = _tree(project_dir)

    out = run_script("install", "claude", "--project", cwd=project_dir, env={"PATH": "/usr/bin:/bin"}).json
    assert out["ok"] and out["changed"] and out["agent"] == "claude" and out["runner"] == "command"
    assert out["written"] == [".claude/settings.json", ".mcp.json", ".claude/skills/contextware/SKILL.md"]
    settings = json.loads((project_dir / ".claude" / "settings.json").read_text())
    assert settings["permissions"] == USER_SETTINGS["permissions"] and settings["model"] == "opus"
    assert settings["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    assert settings["hooks"]["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0]  # theirs first, kept
    ours = _ours(settings)
    for event in EVENTS:
        (definition,) = ours[event]
        (hook,) = definition["hooks"]
        assert hook["command"] == "contextware hook --host claude" and 0 < hook["timeout"] <= 60  # seconds
    mcp = json.loads((project_dir / ".mcp.json").read_text())
    assert mcp["mcpServers"] == {**USER_MCP["mcpServers"], "contextware": {"command": "contextware", "args": ["mcp"]}}
    # Nothing of this machine in what the project commits.
    for rel in (".claude/settings.json", ".mcp.json", ".claude/skills/contextware/SKILL.md"):
        text = (project_dir / rel).read_text()
        assert str(REPO) not in text and sys.executable not in text and str(Path.home()) not in text, rel
    skill = (project_dir / ".claude" / "skills" / "contextware" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: contextware\n") and 'contextware recall "how do we run the tests?"' in skill

    assert any("`contextware` is not on PATH" in w for w in out["warnings"])  # not on this PATH
    installed = _tree(project_dir)
    again = run_script("install", "claude", "--project", "--format", "text", cwd=project_dir)
    assert "Nothing changed: already installed." in again.stdout and _tree(project_dir) == installed

    gone = run_script("install", "uninstall", "claude", "--project", cwd=project_dir).json
    assert gone["changed"] and sorted(gone["written"] + gone["removed"]) == sorted(out["written"])
    assert _tree(project_dir) == before  # byte for byte, and the skill folder install created is gone
    assert run_script("install", "uninstall", "claude", "--project", cwd=project_dir).json["changed"] is False


def test_user_install_writes_settings_state_and_skill_and_uninstall_removes_exactly_them(
    project_dir: Path, tmp_path: Path
):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    state = {"numStartups": 3, "projects": {"/x": {"hasTrustDialogAccepted": True}}, "mcpServers": {}}
    (home / ".claude.json").write_text(json.dumps(state))
    before = _tree(home)
    env = {"HOME": str(home)}

    out = run_script("install", "claude", "--python", sys.executable, cwd=project_dir, env=env).json
    assert out["changed"] and out["scope"] == "user" and out["runner"] == "python"
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    hook = f"{sys.executable} {REPO}/scripts/hook.py --host claude"
    assert all(d[0]["hooks"][0]["command"] == hook for d in _ours(settings).values()) and len(settings["hooks"]) == 4
    claude_json = json.loads((home / ".claude.json").read_text())
    assert claude_json["numStartups"] == 3 and claude_json["projects"] == state["projects"]
    assert claude_json["mcpServers"]["contextware"] == {
        "type": "stdio",
        "command": sys.executable,
        "args": [f"{REPO}/scripts/mcp_server.py"],
        "env": {},
    }
    assert (home / ".claude" / "skills" / "contextware" / "SKILL.md").is_file()
    assert (
        run_script("install", "claude", "--user", "--python", sys.executable, cwd=project_dir, env=env).json["changed"]
        is False
    )

    # Claude Code rewrites ~/.claude.json all the time: only our entry goes, the rest stays as it is then.
    claude_json["numStartups"] = 4
    (home / ".claude.json").write_text(json.dumps(claude_json, indent=2))
    gone = run_script("install", "uninstall", "claude", cwd=project_dir, env=env).json
    assert gone["changed"], gone
    assert json.loads((home / ".claude.json").read_text()) == {**state, "numStartups": 4}
    after = _tree(home)
    assert {k: v for k, v in after.items() if k != ".claude.json"} == {
        k: v for k, v in before.items() if k != ".claude.json"
    }


# -- end to end: the real Claude Code runs the installed hooks ---------------------------------------
def _system_messages(fake_anthropic_api) -> str:
    turns = fake_anthropic_api.message_requests()
    assert turns, "Claude Code sent no request"
    return "\n".join(message_texts(turns[-1], "system"))


def _logs(root: Path) -> list[dict]:
    return records.list_records(Project.open(root), "logs", limit=100)["records"]


@pytest.fixture
def remembering_project(project: Project) -> Project:
    records.save_fact(project, FACT, kind="constraint", topics=["deploy"])
    return project


@pytest.mark.slow
def test_end_to_end_memory_reaches_the_model_and_the_turn_is_stored_once(
    claude_bin, fake_anthropic_api, claude_env, remembering_project: Project
):
    root = remembering_project.root
    installed = run_script("install", "claude", "--project", cwd=root, env=claude_env).json
    assert installed["changed"] and not any("not on PATH" in w for w in installed["warnings"])
    fake_anthropic_api.push("No: releases go out Monday to Thursday only.")

    proc = run_claude(claude_bin, PROMPT, root, claude_env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["result"] == "No: releases go out Monday to Thursday only."
    system = _system_messages(fake_anthropic_api)
    # Claude Code passes hook context unescaped, as a system message after the user's.
    recalled = system.split("UserPromptSubmit hook additional context: ", 1)[1]
    assert recalled.startswith(FENCE_OPEN) and FACT in recalled.split(FENCE_CLOSE)[0]
    briefing = system.split("SessionStart hook additional context: ", 1)[1]
    assert FACT in briefing.split(FENCE_CLOSE)[0]
    assert "mcp__contextware__recall" in briefing  # this host's own tool names
    assert PROMPT in "\n".join(message_texts(fake_anthropic_api.message_requests()[-1], "user"))

    logs = _logs(root)
    assert sorted((r["role"], r["text"]) for r in logs) == [
        ("agent", "No: releases go out Monday to Thursday only."),
        ("user", PROMPT),
    ]  # stored once: one row per side of the turn, the prompt without any hook text
    assert len({r["session_id"] for r in logs}) == 1

    # The project's .mcp.json server answers the model's tool call (`contextware mcp` from PATH).
    fake_anthropic_api.requests.clear()
    fake_anthropic_api.push(
        Reply(tool_use={"name": "mcp__contextware__recall", "input": {"query": "when may we deploy?"}}), "Done."
    )
    env = {**claude_env, "ENABLE_TOOL_SEARCH": "false"}  # MCP tools in the request's tools, not deferred
    proc = run_claude(
        claude_bin, "Ask the memory when we may deploy.", root, env, "--allowedTools", "mcp__contextware__recall"
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["result"] == "Done.", proc.stdout + proc.stderr[-2000:]
    turns = fake_anthropic_api.message_requests()
    assert "mcp__contextware__recall" in [t.get("name") for t in turns[0].body.get("tools", [])]
    results = [
        b
        for m in turns[-1].body["messages"]
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert len(results) == 1 and not results[0].get("is_error"), results
    assert FACT in json.dumps(results[0]["content"])


@pytest.mark.slow
def test_end_to_end_broken_memory_or_hook_input_never_blocks_the_turn(
    claude_bin, fake_anthropic_api, claude_env, project: Project
):
    root = project.root
    (root / ".git").mkdir()  # a repository: Stop would record the turn
    assert run_script("install", "claude", "--project", cwd=root, env=claude_env).json["changed"]
    for bad in ("not json", "[1, 2]", '{"hook_event_name": "Stop", "transcript_path": "/"}', "\xff"):
        hook = subprocess.run(
            ["contextware", "hook", "--host", "claude"],
            input=bad,
            env=claude_env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert hook.returncode == 0 and hook.stdout == "", (bad, hook.stdout, hook.stderr)
    project.data_dir.mkdir(exist_ok=True)
    (project.data_dir / "config.json").write_text("{ planted: not json")  # every hook now fails

    proc = run_claude(claude_bin, PROMPT, root, claude_env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["is_error"] is False
    assert "contextware-memory" not in _system_messages(fake_anthropic_api)
    log = (project.data_dir / "hooks.log").read_text()
    assert "UserPromptSubmit failed" in log and "Stop failed" in log


@pytest.mark.slow
def test_end_to_end_the_plugin_validates_installs_from_its_marketplace_and_runs(
    claude_bin, fake_anthropic_api, claude_env, remembering_project: Project
):
    def claude(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [claude_bin, *args], env=claude_env, cwd=REPO, capture_output=True, text=True, timeout=120
        )

    valid = claude("plugin", "validate", str(REPO / "plugins" / "claude" / "contextware"))
    assert valid.returncode == 0 and "Validation passed" in valid.stdout and "must be" not in valid.stdout, valid.stdout
    assert claude("plugin", "validate", str(REPO)).returncode == 0  # the marketplace
    added = claude("plugin", "marketplace", "add", str(REPO))
    assert added.returncode == 0, added.stdout + added.stderr
    installed = claude("plugin", "install", "contextware@contextware")
    assert installed.returncode == 0 and "Successfully installed" in installed.stdout, installed.stdout

    root = remembering_project.root
    (root / ".git").mkdir()
    proc = run_claude(claude_bin, PROMPT, root, claude_env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    system = _system_messages(fake_anthropic_api)
    assert FACT in system.split("UserPromptSubmit hook additional context: ", 1)[1].split(FENCE_CLOSE)[0]
    assert "mcp__plugin_contextware_contextware__recall" in system  # a plugin's tools carry its name
    assert sorted(r["role"] for r in _logs(root)) == ["agent", "user"]


@pytest.mark.slow
def test_end_to_end_user_install_connects_the_mcp_server_and_runs_the_hooks_everywhere(
    claude_bin, fake_anthropic_api, claude_env, remembering_project: Project
):
    root = remembering_project.root
    out = run_script("install", "claude", "--python", sys.executable, cwd=root, env=claude_env).json
    assert out["changed"] and out["scope"] == "user", out
    listed = subprocess.run(
        [claude_bin, "mcp", "list"], cwd=root, env=claude_env, capture_output=True, text=True, timeout=120
    )
    line = next((ln for ln in listed.stdout.splitlines() if ln.startswith("contextware:")), "")
    assert "Connected" in line, listed.stdout + listed.stderr  # read from ~/.claude.json, and it answered

    proc = run_claude(claude_bin, PROMPT, root, claude_env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    system = _system_messages(fake_anthropic_api)
    assert FACT in system.split("UserPromptSubmit hook additional context: ", 1)[1].split(FENCE_CLOSE)[0]

    gone = run_script("install", "uninstall", "claude", "--user", cwd=root, env=claude_env).json
    assert gone["changed"] and gone["warnings"] == [], gone
    fake_anthropic_api.requests.clear()
    assert run_claude(claude_bin, PROMPT, root, claude_env).returncode == 0
    assert "contextware-memory" not in _system_messages(fake_anthropic_api)
