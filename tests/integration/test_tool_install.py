"""`uv tool install .` and `uvx --from .` from a clone give a working `contextware` command (offline,
from uv's cache: .ci/run fills it once with `uv tool install .`), whose every install works in a
fresh HOME, whose `doctor` finds what is wrong, and which shares one resident service per project
with the clone's own environment."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contextware.core.fence import FENCE_CLOSE, FENCE_OPEN
from contextware.memory import records
from contextware.storage.project import Project
from tests.support.claude_fixtures import run_claude
from tests.support.fake_anthropic_api import message_texts
from tests.support.gemini_fixtures import installed_gemini_bin
from tests.support.repo import REPO, SCRIPTS

UV = shutil.which("uv")
WARM_UP = "run `uv tool install .` once with network access to fill uv's cache"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(UV is None, reason="uv is not on PATH")]


def _run(cmd: list[str], env: dict[str, str], cwd=None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _uv_env(tools: Path) -> dict[str, str]:
    env = {**os.environ, "UV_TOOL_DIR": str(tools / "tools"), "UV_TOOL_BIN_DIR": str(tools / "bin")}
    env.pop("VIRTUAL_ENV", None)
    return env


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `contextware` command of `uv tool install --offline <clone>` (one install per module)."""
    assert UV is not None
    where = tmp_path_factory.mktemp("uv-tool")
    env = {**_uv_env(where), "UV_CACHE_DIR": _run([UV, "cache", "dir"], dict(os.environ)).stdout.strip()}
    installed = _run([UV, "tool", "install", "--offline", str(REPO)], env)
    assert installed.returncode == 0, f"{installed.stderr[-2000:]}\n({WARM_UP})"
    return where / "bin" / "contextware"


def _path(tool: Path, env: dict[str, str], on_path: bool = True) -> str:
    """PATH without any other `contextware` (the clone's environment has one), the tool's first."""
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "contextware").exists()]
    return os.pathsep.join([str(tool.parent), *path] if on_path else path)


def fresh_home(tmp_path: Path, tool: Path, on_path: bool = True) -> dict[str, str]:
    """An environment with a HOME of its own (nothing installed in it) and, when ``on_path``, the
    tool's bin folder first on PATH."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME")}
    env.pop("CONTEXTWARE_HOME", None)  # ~/.contextware of the fresh HOME
    env.pop("GEMINI_CLI_HOME", None)
    env["PATH"] = _path(tool, env, on_path)
    env["HOME"] = str(home)
    if installed_gemini_bin():
        env["CONTEXTWARE_GEMINI_BIN"] = str(installed_gemini_bin())
    return env


def test_uv_tool_install_from_a_clone_gives_a_working_command(tmp_path, tool):
    env = _uv_env(tool.parent.parent)
    command = str(tool)
    version = _run([command, "--version"], env)
    assert version.returncode == 0 and version.stdout.startswith("contextware ")
    project = tmp_path / "proj"
    project.mkdir()
    saved = _run([command, "save", "We deploy with fly deploy.", "--kind", "decision"], env, cwd=project)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    found = _run([command, "recall", "how do we deploy?"], env, cwd=project)
    assert json.loads(found.stdout)["results"][0]["id"] == json.loads(saved.stdout)["id"]
    served = _run([command, "mcp", "--help"], env)
    assert served.returncode == 0 and "contextware mcp" in served.stdout

    once = _run([UV, "tool", "run", "--offline", "--from", str(REPO), "contextware", "--help"], env)
    assert once.returncode == 0 and "commands:" in once.stdout, once.stderr[-2000:]


def _install(tool: Path, env: dict[str, str], project: Path, *args: str) -> dict:
    out = _run([str(tool), "install", *args], env, cwd=project)
    assert out.returncode == 0, f"install {' '.join(args)}: {out.stdout}{out.stderr[-2000:]}"
    return json.loads(out.stdout)


def _command_paths(argv: list[str]) -> list[str]:
    return [a for a in argv if os.path.isabs(a)]


def test_every_install_works_from_a_tool_install_in_a_fresh_home(tmp_path, tool):
    env = fresh_home(tmp_path, tool)
    project = tmp_path / "proj"
    project.mkdir()
    link = [] if installed_gemini_bin() else ["--no-link"]
    installs = [
        ("gemini", *link),
        ("gemini", "--project"),
        ("claude", "--user"),
        ("claude", "--project"),
        ("mcp", "--host", "cursor", "--user"),
        ("mcp", "--host", "cursor", "--project"),
        ("mcp", "--host", "vscode", "--user"),
        ("mcp", "--host", "vscode", "--project"),
        ("mcp", "--host", "claude-desktop"),
    ]
    for args in installs:
        result = _install(tool, env, project, *args)
        assert result["written"], args
        for written in result["written"]:
            path = Path(written) if os.path.isabs(written) else project / written
            assert path.is_file(), (args, written)
            assert str(tmp_path) in str(path.resolve()), (args, written)  # nothing outside the fresh HOME
        server = result["mcp_server"]
        for path in _command_paths([server["command"], *server["args"]]):
            assert os.path.exists(path), (args, path)
        if result["scope"] == "user":  # this machine's: the tool's own Python and entry, never a clone's scripts/
            assert server["command"].startswith(str(tool.parent.parent / "tools")), (args, server)
            assert server["args"] == ["-I", "-m", "contextware.hosts.mcp.front"], (args, server)
        assert not any("not on PATH" in w for w in result.get("warnings") or []), (args, result["warnings"])
        twice = [w for w in result.get("warnings") or [] if "installed twice" in w]
        assert bool(twice) == (args[1:2] == ("--project",) and args[0] in ("gemini", "claude")), (args, twice)
    skill = (Path(env["HOME"]) / ".claude" / "skills" / "contextware" / "SKILL.md").read_text()
    assert "scripts/" not in skill and "contextware recall" in skill

    printed = _install(tool, env, project, "mcp", "--host", "print")["config"]["mcpServers"]["contextware"]
    assert _command_paths([printed["command"], *printed["args"]])
    assert all(os.path.exists(p) for p in _command_paths([printed["command"], *printed["args"]]))

    # A folder named contextware in the project (a clone of this repository) shadows nothing: the
    # tool's Python runs its entries isolated (-I), so the working directory is not on sys.path.
    (project / "contextware").mkdir()
    (project / "contextware" / "__init__.py").write_text("raise SystemExit('the project shadowed the package')\n")
    doctor = json.loads(_run([str(tool), "doctor"], env, cwd=project).stdout)
    assert doctor["healthy"] is False
    assert sorted(c["name"] for c in doctor["checks"] if not c["ok"]) == ["duplicate", "duplicate"]
    for agent in ("gemini", "claude"):  # one install per host: the project's, which teammates share
        _install(tool, env, project, "uninstall", agent, "--user")
    doctor = json.loads(_run([str(tool), "doctor"], env, cwd=project).stdout)
    assert doctor["healthy"] is True, [c for c in doctor["checks"] if not c["ok"]]
    names = [c["name"] for c in doctor["checks"]]
    assert names.count("hook") >= 3 and names.count("mcp") >= 2 and {"command", "service", "data"} <= set(names)


def test_a_project_install_with_the_command_off_path_says_so(tmp_path, tool):
    env = fresh_home(tmp_path, tool, on_path=False)
    project = tmp_path / "proj"
    project.mkdir()
    result = _install(tool, env, project, "claude", "--project")
    warning = next(w for w in result["warnings"] if "not on PATH" in w)
    assert "`uv tool update-shell`" in warning
    text = _run([str(tool), "install", "gemini", "--project", "--format", "text"], env, cwd=project)
    assert text.returncode == 0 and "warning: `contextware` is not on PATH" in text.stdout

    doctor = json.loads(_run([str(tool), "doctor"], env, cwd=project).stdout)
    assert doctor["healthy"] is False
    problems = {c["name"]: c for c in doctor["checks"] if not c["ok"]}
    assert "not on PATH" in problems["command"]["detail"] and problems["command"]["fix"] == "`uv tool update-shell`"
    assert "not on PATH" in problems["hook"]["detail"] and "not on PATH" in problems["mcp"]["detail"]
    shown = _run([str(tool), "doctor", "--format", "text"], env, cwd=project).stdout
    assert "PROBLEM command" in shown and "fix: `uv tool update-shell`" in shown

    _run([str(tool), "install", "uninstall", "claude", "--project"], env, cwd=project)
    _run([str(tool), "install", "uninstall", "gemini", "--project"], env, cwd=project)
    moved = project / "gone"  # a user-scope hook pointing at a command that is no longer there
    settings = Path(env["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    hook = {"type": "command", "command": f"{moved}/contextware hook", "name": "contextware-SessionStart"}
    settings.write_text(json.dumps({"hooks": {"SessionStart": [{"matcher": "", "hooks": [hook]}]}}))
    doctor = json.loads(_run([str(tool), "doctor"], env, cwd=project).stdout)
    broken = [c for c in doctor["checks"] if c["name"] == "hook" and not c["ok"]]
    assert broken and f"{moved}/contextware does not exist" in broken[0]["detail"] and broken[0]["fix"]


def test_a_clone_and_a_tool_install_share_one_service(tmp_path, tool, project_dir, services):
    """Ten calls alternating between the clone's environment and the tool install (same version,
    different files): one service start, never a restart."""
    env = {**fresh_home(tmp_path, tool), "CONTEXTWARE_SERVICE": "off"}
    saved = _run([str(tool), "save", "We deploy with fly deploy.", "--kind", "decision"], env, cwd=project_dir)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    env["CONTEXTWARE_SERVICE"] = "auto"
    for i in range(10):
        if i % 2:
            cmd = [str(tool), "recall", "how do we deploy?"]
        else:
            cmd = [sys.executable, str(SCRIPTS / "recall.py"), "how do we deploy?"]
        out = _run(cmd, env, cwd=project_dir)
        assert out.returncode == 0 and json.loads(out.stdout)["results"], out.stdout + out.stderr
    log = (project_dir / "contextware_data" / "service.log").read_text()
    assert log.count("listening on") == 1, log
    assert "version_mismatch" not in log and "stop requested" not in log


# -- a real turn of each host, with memory from the tool install --------------------------------------
FACT = "Never deploy on Fridays; production releases go out Monday to Thursday only."
PROMPT = "Can I deploy the release to production on Friday?"


def _remember(tool: Path, env: dict[str, str], project: Path) -> None:
    saved = _run([str(tool), "save", FACT, "--kind", "constraint", "--topics", "deploy"], env, cwd=project)
    assert saved.returncode == 0, saved.stdout + saved.stderr


def _turn_logged(project: Path) -> bool:
    logs = records.list_records(Project.open(project), "logs", limit=100)["records"]
    return any(r["role"] == "user" and PROMPT in r["text"] for r in logs)


def test_a_real_gemini_cli_turn_with_the_tool_installed_extension(
    tool, gemini_bin, fake_gemini_api, gemini_cli_env, project_dir
):
    env = {**gemini_cli_env, "PATH": _path(tool, gemini_cli_env), "CONTEXTWARE_GEMINI_BIN": gemini_bin}
    _remember(tool, env, project_dir)
    out = _install(tool, env, project_dir, "gemini")
    assert out["linked"] and out["hook_command"].endswith(" -I -m contextware.hosts.hooks.entry"), out
    proc = subprocess.run(
        [gemini_bin, "--skip-trust", "-m", "gemini-2.5-flash", "-o", "json", "-p", PROMPT],
        cwd=project_dir,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    sent = "\n".join(fake_gemini_api.chat_requests()[-1].texts()).replace("&lt;", "<").replace("&gt;", ">")
    fences = re.findall(f"{FENCE_OPEN}(.*?){FENCE_CLOSE}", sent, re.S)
    assert len(fences) == 2, sent[-3000:]  # the session start's briefing, then the prompt's recall
    briefing, recalled = fences
    assert "# Project memory" in briefing and FACT in briefing and FACT in recalled, fences
    assert _turn_logged(project_dir)


@pytest.mark.parametrize("scope", ["--user", "--project"])
def test_a_real_claude_code_turn_with_the_tool_installed_hooks(
    tool, claude_bin, fake_anthropic_api, claude_env, project_dir, scope
):
    env = {**claude_env, "PATH": _path(tool, claude_env)}
    _remember(tool, env, project_dir)
    out = _install(tool, env, project_dir, "claude", scope)
    assert not any("not on PATH" in w for w in out["warnings"]), out
    fake_anthropic_api.push("No: releases go out Monday to Thursday only.")
    proc = run_claude(claude_bin, PROMPT, project_dir, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    system = "\n".join(message_texts(fake_anthropic_api.message_requests()[-1], "system"))
    recalled = system.split("UserPromptSubmit hook additional context: ", 1)[1]
    assert recalled.startswith(FENCE_OPEN) and FACT in recalled.split(FENCE_CLOSE)[0]
    assert _turn_logged(project_dir)
