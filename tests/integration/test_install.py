"""scripts/install.py: Contextware's hooks, MCP server and skill put into Gemini CLI and taken out
exactly; the end-to-end tests run the REAL Gemini CLI against the fake API and check that the hooks
injected the project's memory into the chat request.

Hooks run ``sys.executable scripts/hook.py`` here (``--python``), not ``uv run``, to stay fast."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contextware.core.fence import FENCE_CLOSE, FENCE_OPEN
from contextware.memory import records
from contextware.storage.project import Project
from tests.support.repo import REPO, SCRIPTS
from tests.support.scripts import run_script

PY = ("--python", sys.executable)
HOOK_COMMAND = f"{shlex.quote(sys.executable)} {shlex.quote(str(SCRIPTS / 'hook.py'))}"
EVENTS = ("SessionStart", "BeforeAgent", "AfterAgent", "PreCompress")
FACT = "Never deploy on Fridays; production releases go out Monday to Thursday only."
PROMPT = "Can I deploy the release to production on Friday?"

# A user's own project settings, as Gemini CLI writes them (2-space JSON), with their own hooks.
USER_SETTINGS = {
    "general": {"vimMode": True, "preferredEditor": "vim"},
    "hooks": {
        "BeforeAgent": [{"matcher": "*", "hooks": [{"type": "command", "command": "echo mine", "name": "my-hook"}]}],
        "BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh"}]}],
    },
    "mcpServers": {"github": {"command": "gh-mcp", "args": ["--stdio"]}},
    "ui": {"theme": "Dracula", "footer": "🚀 ship it"},
}


def install_script(*args: str, cwd: Path, env: dict | None = None):
    return run_script("install", *args, cwd=cwd, env=env)


def settings_of(root: Path) -> dict:
    return json.loads((root / ".gemini" / "settings.json").read_text())


def test_project_merge_keeps_the_users_settings_and_uninstall_restores_the_bytes(project_dir: Path):
    path = project_dir / ".gemini" / "settings.json"
    path.parent.mkdir()
    original = json.dumps(USER_SETTINGS, indent=2, ensure_ascii=False) + "\n"
    path.write_text(original)

    first = install_script("gemini", "--project", *PY, cwd=project_dir).json
    assert first["ok"] and first["changed"] and first["scope"] == "project"
    assert first["written"] == [".gemini/settings.json", ".gemini/skills/contextware/SKILL.md"]
    data = settings_of(project_dir)
    for key in ("general", "ui"):
        assert data[key] == USER_SETTINGS[key]
    assert data["hooks"]["BeforeTool"] == USER_SETTINGS["hooks"]["BeforeTool"]
    assert data["hooks"]["BeforeAgent"][0] == USER_SETTINGS["hooks"]["BeforeAgent"][0]  # theirs first, kept
    for event in EVENTS:
        ours = [d for d in data["hooks"][event] if d["hooks"][0].get("name", "").startswith("contextware-")]
        assert len(ours) == 1 and ours[0]["matcher"] == "*"
        assert ours[0]["hooks"][0]["command"] == HOOK_COMMAND and ours[0]["hooks"][0]["timeout"] > 0
    assert data["mcpServers"]["github"] == USER_SETTINGS["mcpServers"]["github"]
    assert data["mcpServers"]["contextware"] == {
        "command": sys.executable,
        "args": [str(SCRIPTS / "mcp_server.py")],
        "timeout": 900_000,  # ms: room for long offloads
    }
    skill = (project_dir / ".gemini" / "skills" / "contextware" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: contextware\n") and "<skill_dir>" not in skill
    assert f"{REPO}/scripts/recall.py" in skill

    installed = path.read_bytes()
    again = install_script("gemini", "--project", *PY, cwd=project_dir).json
    assert again["changed"] is False and again["written"] == [] and path.read_bytes() == installed

    gone = install_script("uninstall", "--project", cwd=project_dir).json
    assert gone["changed"] and set(gone["removed"] + gone["written"]) == {
        ".gemini/settings.json",
        ".gemini/skills/contextware/SKILL.md",
    }
    assert path.read_text() == original  # byte for byte
    assert sorted(p.name for p in (project_dir / ".gemini").iterdir()) == ["settings.json"]
    assert install_script("uninstall", "--project", cwd=project_dir).json["changed"] is False


def test_project_uninstall_after_the_user_edited_settings_removes_only_ours(project_dir: Path):
    assert install_script("gemini", "--project", *PY, cwd=project_dir).json["changed"]
    data = settings_of(project_dir)  # no settings before: install created .gemini/ and the file
    data["general"] = {"vimMode": True}
    data["hooks"]["AfterAgent"].append({"matcher": "*", "hooks": [{"type": "command", "command": "notify-send done"}]})
    (project_dir / ".gemini" / "settings.json").write_text(json.dumps(data, indent=2) + "\n")

    result = install_script("uninstall", "--project", "--format", "text", cwd=project_dir)
    assert result.returncode == 0 and "Removed Contextware" in result.stdout
    left = settings_of(project_dir)
    assert left == {
        "general": {"vimMode": True},
        "hooks": {"AfterAgent": [{"matcher": "*", "hooks": [{"type": "command", "command": "notify-send done"}]}]},
    }
    assert not (project_dir / ".gemini" / "skills").exists()

    shutil.rmtree(project_dir / ".gemini")
    install_script("gemini", "--project", *PY, cwd=project_dir)
    install_script("uninstall", "--project", cwd=project_dir)
    assert not (project_dir / ".gemini").exists()  # everything install created is gone


@pytest.mark.parametrize("layout", ["tabs-crlf", "compact"])
def test_project_merge_keeps_the_files_layout_and_a_replaced_mcp_server_comes_back(project_dir: Path, layout: str):
    from contextware.hosts.install.dispatch import install, uninstall

    mine = {"ui": {"theme": "Dracula"}, "mcpServers": {"contextware": {"command": "my-old-memory-server"}}}
    original = (
        json.dumps(mine, indent="\t").replace("\n", "\r\n") + "\r\n"
        if layout == "tabs-crlf"
        else json.dumps(mine, separators=(",", ":"))
    )
    path = project_dir / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(original.encode())
    assert install("gemini", "project", project_root=str(project_dir), python=sys.executable)["changed"]
    raw = path.read_bytes().decode()
    if layout == "tabs-crlf":
        assert raw.endswith("}\r\n") and '\r\n\t"hooks": {' in raw and "\n" not in raw.replace("\r\n", "")
    else:
        assert "\n" not in raw and '"ui":{"theme":"Dracula"}' in raw
    assert json.loads(raw)["mcpServers"]["contextware"]["command"] == sys.executable
    assert uninstall("gemini", "project", project_root=str(project_dir))["changed"]
    assert path.read_bytes() == original.encode()

    install("gemini", "project", project_root=str(project_dir), python=sys.executable)
    edited = json.loads(path.read_text())
    edited["ui"]["theme"] = "GitHub"  # an edit after install: uninstall now removes only our entries
    path.write_text(json.dumps(edited))
    uninstall("gemini", "project", project_root=str(project_dir))
    assert json.loads(path.read_text()) == {"ui": {"theme": "GitHub"}, **{k: v for k, v in mine.items() if k != "ui"}}


def test_project_settings_with_comments_are_refused_untouched(project_dir: Path):
    path = project_dir / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text('{\n  // my theme\n  "ui": {"theme": "Dracula"}\n}\n')
    result = install_script("gemini", "--project", *PY, cwd=project_dir)
    assert result.returncode == 1 and result.json["error"]["code"] == "settings_unreadable"
    assert "comments" in result.json["error"]["message"]
    assert path.read_text().startswith("{\n  // my theme") and not (path.parent / "skills").exists()


def test_user_scope_writes_a_valid_extension_folder(project_dir: Path):
    result = install_script("gemini", "--no-link", cwd=project_dir, env={"CONTEXTWARE_HOOK_PYTHON": sys.executable})
    out = result.json
    ext = Path(out["extension_dir"])
    assert out["changed"] and out["scope"] == "user" and out["linked"] is False
    assert ext.name == "contextware" and ext.parent.name == "gemini-extension"
    manifest = json.loads((ext / "gemini-extension.json").read_text())
    assert manifest["name"] == "contextware" and manifest["version"] and manifest["description"]
    assert manifest["mcpServers"]["contextware"]["args"] == [str(SCRIPTS / "mcp_server.py")]
    context = (ext / manifest["contextFileName"]).read_text()
    assert "<contextware-memory>" in context and f"{REPO}/scripts/recall.py" in context
    hooks = json.loads((ext / "hooks" / "hooks.json").read_text())["hooks"]
    assert sorted(hooks) == sorted(EVENTS)
    assert all(d[0]["hooks"][0]["command"] == HOOK_COMMAND for d in hooks.values())
    skill = (ext / "skills" / "contextware" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: contextware\ndescription: ") and "<skill_dir>" not in skill
    assert f"{REPO}/scripts/save_fact.py" in skill

    again = install_script("gemini", "--user", "--no-link", *PY, "--format", "text", cwd=project_dir)
    assert "Nothing changed: already installed." in again.stdout
    gone = install_script("uninstall", cwd=project_dir).json
    assert gone["removed"] == [str(ext)] and not ext.exists() and gone["unlinked"] is False


def test_user_scope_without_gemini_or_with_a_foreign_extension_writes_nothing(
    project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("CONTEXTWARE_GEMINI_BIN", str(tmp_path / "no-such-gemini"))
    missing = install_script("gemini", *PY, cwd=project_dir)
    assert missing.returncode == 1 and missing.json["error"]["code"] == "gemini_not_installed"
    assert "--no-link" in missing.json["error"]["message"]

    monkeypatch.setenv("CONTEXTWARE_GEMINI_BIN", "/bin/true")
    home = tmp_path / "ghome"
    monkeypatch.setenv("GEMINI_CLI_HOME", str(home))
    other = home / ".gemini" / "extensions" / "contextware"
    other.mkdir(parents=True)
    (other / ".gemini-extension-install.json").write_text(json.dumps({"source": "/somewhere/else", "type": "link"}))
    conflict = install_script("gemini", *PY, cwd=project_dir)
    assert conflict.returncode == 1 and conflict.json["error"]["code"] == "extension_conflict"
    assert "/somewhere/else" in conflict.json["error"]["message"]
    bad = install_script("gemini", "--python", str(tmp_path / "nope"), cwd=project_dir)
    assert bad.returncode == 2 and bad.json["error"]["code"] == "bad_python"
    assert not (Path(os.environ["CONTEXTWARE_HOME"]) / "gemini-extension").exists()  # nothing was written


# -- end to end: the real Gemini CLI runs the installed hooks -----------------------------------------
def _ask_gemini(gemini_bin: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [gemini_bin, "--skip-trust", "-m", "gemini-2.5-flash", "-o", "json", "-p", PROMPT],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _sent_texts(fake_gemini_api) -> str:
    chats = fake_gemini_api.chat_requests()
    assert chats, "Gemini CLI sent no chat request"
    return "\n".join(chats[-1].texts())


def _assert_memory_round_trip(project: Project, proc: subprocess.CompletedProcess, fake_gemini_api) -> None:
    assert proc.returncode == 0, proc.stderr[-3000:]
    sent = _sent_texts(fake_gemini_api)
    assert PROMPT in sent
    # The CLI wraps hook context in <hook_context> and escapes its < and > (so the fence arrives as
    # &lt;contextware-memory&gt;): undo that to find the fences.
    assert "<hook_context>" in sent
    fences = re.findall(f"{FENCE_OPEN}(.*?){FENCE_CLOSE}", sent.replace("&lt;", "<").replace("&gt;", ">"), re.S)
    # Two fences: the session start's briefing (prepended to the prompt), then what was recalled
    # for the prompt (after it); tests/integration/test_resumed_sessions.py covers ``-r``.
    assert len(fences) == 2, sent[-3000:]
    briefing, recalled = fences
    assert "# Project memory" in briefing and FACT in briefing and FACT in recalled, fences
    logs = records.list_records(Project.open(project.root), "logs")["records"]  # AfterAgent saved the turn
    assert any(r["role"] == "user" and PROMPT in r["text"] for r in logs)


@pytest.fixture
def remembering_project(project: Project) -> Project:
    records.save_fact(project, FACT, kind="constraint", topics=["deploy"])
    return project


def test_end_to_end_project_hooks_inject_memory_into_real_gemini_cli(
    gemini_bin, fake_gemini_api, gemini_cli_env, remembering_project: Project
):
    """Without --python the committed settings call `contextware` from PATH (no path of this machine),
    as a teammate's clone would run them: here the console command of the test environment."""
    root = remembering_project.root
    assert not (root / ".git").exists()
    env = {**gemini_cli_env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{gemini_cli_env['PATH']}"}
    installed = install_script("gemini", "--project", cwd=root, env=env).json
    assert installed["changed"] and any("trusted folders" in w for w in installed["warnings"])
    assert installed["runner"] == "command" and installed["hook_command"] == "contextware hook"
    settings = (root / ".gemini" / "settings.json").read_text()
    assert str(REPO) not in settings and sys.executable not in settings
    assert str(REPO) not in (root / ".gemini" / "skills" / "contextware" / "SKILL.md").read_text()
    # Project settings load only in a trusted folder, and --skip-trust is not enough (the CLI reads
    # settings before it parses flags): trust the folder the way the CLI's trust prompt does.
    trusted = Path(gemini_cli_env["GEMINI_CLI_HOME"]) / ".gemini" / "trustedFolders.json"
    trusted.write_text(json.dumps({str(root): "TRUST_FOLDER"}))
    again = install_script("gemini", "--project", cwd=root, env=env).json
    # The test environment's own bin/ is not on the PATH a host started elsewhere has: warned, still runs here.
    assert again["changed"] is False and all("not on PATH" in w for w in again["warnings"])
    _assert_memory_round_trip(remembering_project, _ask_gemini(gemini_bin, root, env), fake_gemini_api)


def test_end_to_end_user_extension_is_linked_runs_its_hooks_and_unlinks(
    gemini_bin, fake_gemini_api, gemini_cli_env, remembering_project: Project
):
    root, env = remembering_project.root, {**gemini_cli_env, "CONTEXTWARE_GEMINI_BIN": gemini_bin}
    linked = Path(env["GEMINI_CLI_HOME"]) / ".gemini" / "extensions" / "contextware"
    out = install_script("gemini", "--user", *PY, cwd=root, env=env).json
    assert out["linked_now"] and out["linked"], out
    meta = json.loads((linked / ".gemini-extension-install.json").read_text())
    assert meta == {"source": out["extension_dir"], "type": "link"}
    assert install_script("gemini", *PY, cwd=root, env=env).json["changed"] is False
    # Linking trusted no folder, and an extension's hooks need no folder trust (only --skip-trust to run).
    assert not (Path(env["GEMINI_CLI_HOME"]) / ".gemini" / "trustedFolders.json").exists()

    _assert_memory_round_trip(remembering_project, _ask_gemini(gemini_bin, root, env), fake_gemini_api)

    gone = install_script("uninstall", "--user", cwd=root, env=env).json
    assert gone["unlinked"] and gone["warnings"] == [] and not linked.exists()
    assert not Path(out["extension_dir"]).exists()
    fake_gemini_api.requests.clear()
    after = _ask_gemini(gemini_bin, root, env)
    assert after.returncode == 0 and "contextware-memory" not in _sent_texts(fake_gemini_api)
