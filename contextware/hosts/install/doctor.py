"""``contextware doctor``: check an install end to end, as the hosts will use it, and say what to do.

Checks, each ``{"name", "ok", "detail", "fix"}`` (``fix`` is the one thing to do when not ok):

- ``command``: ``contextware`` resolves on PATH (what a project's committed files call);
- ``hook``: every distinct hook command installed for this project or user (read from the hosts'
  files: ``.claude/settings.json``, ``.gemini/settings.json``, ``~/.claude/settings.json``, the Gemini
  extension) and this install's own, each run with a ``SessionStart`` event on stdin: it must exit
  0 and print nothing or one JSON object;
- ``mcp``: every distinct MCP server command installed (``.mcp.json``, ``.cursor/mcp.json``,
  ``.vscode/mcp.json``, ``~/.claude.json``, ``~/.cursor/mcp.json``, the extension, Claude Desktop)
  and this install's own answers ``initialize`` and ``tools/list``;
- ``service``: the project's resident service starts (or runs) and answers ``status``;
- ``data``: every table of the project's memory opens and counts its rows.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import TypedDict

from contextware import __version__
from contextware.core.errors import ContextwareError
from contextware.core.json_types import JsonObject
from contextware.hosts.install import loop, settings_merge
from contextware.hosts.install.loop import DoctorCheck, check
from contextware.hosts.install.shared import (
    NAME,
    PORTABLE_COMMAND,
    choose_runner,
    fix_path_command,
    host_which,
    mcp_server,
    missing_paths,
)
from contextware.storage.layout import resolve_project_root

RUN_TIMEOUT_S = 90.0  # a cold hook or server start on a busy machine loads the model once
REINSTALL = "run the install again (`contextware install <host> ...`) from a working Contextware"


def _read_json(path: Path) -> JsonObject:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _files(root: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """(files that may hold our hooks, (files that may hold our MCP server, their servers key))."""
    from contextware.hosts.install import claude_code, gemini_cli, mcp_hosts

    ext = gemini_cli.extension_dir()
    hooks = [
        root / ".claude" / "settings.json",
        root / ".gemini" / "settings.json",
        claude_code.config_dir() / "settings.json",
        ext / "hooks" / "hooks.json",
    ]
    servers = [
        (root / ".mcp.json", "mcpServers"),
        (root / ".gemini" / "settings.json", "mcpServers"),
        (claude_code.user_state_file(), "mcpServers"),
        (ext / "gemini-extension.json", "mcpServers"),
    ]
    for host in ("cursor", "vscode", "claude-desktop"):
        for scope in ("project", "user"):
            if host == "claude-desktop" and scope == "project":
                continue
            servers.append(mcp_hosts.config_file(host, scope, root))
    return hooks, servers


def files_with_our_hooks(root: Path) -> list[str]:
    """Every hosts' file that holds a hook of ours (one host in two of them is a duplicate install)."""
    found = []
    for path in _files(root)[0]:
        for definitions in _member(_read_json(path), "hooks").values() if path.is_file() else []:
            if any(
                settings_merge.is_our_hook_definition(d) for d in (definitions if isinstance(definitions, list) else [])
            ):
                found.append(str(path))
                break
    return found


class FoundServer(TypedDict):
    server: JsonObject  # its entry in the host's settings
    file: str  # the settings file it was found in


def _member(data: JsonObject, key: str) -> JsonObject:
    """``data[key]`` when it is a JSON object, else {} (a hand-edited file may hold anything)."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _argv(server: JsonObject) -> list[str]:
    args = server.get("args")
    return [str(server.get("command") or ""), *(str(a) for a in (args if isinstance(args, list) else []))]


def installed_commands(root: Path) -> tuple[dict[str, str], dict[str, FoundServer]]:
    """(hook command -> the file it was found in, MCP server key -> where it was found) for every
    install of Contextware this project and this user have."""
    hook_files, server_files = _files(root)
    hooks: dict[str, str] = {}
    for path in hook_files:
        for definitions in _member(_read_json(path), "hooks").values() if path.is_file() else []:
            for definition in definitions if isinstance(definitions, list) else []:
                if isinstance(definition, dict) and settings_merge.is_our_hook_definition(definition):
                    inner = definition.get("hooks")
                    for hook in inner if isinstance(inner, list) else []:
                        command = hook.get("command") if isinstance(hook, dict) else None
                        if isinstance(command, str):
                            hooks.setdefault(command, str(path))
    servers: dict[str, FoundServer] = {}
    for path, key in server_files:
        found = _member(_read_json(path), key).get(NAME) if path.is_file() else None
        if isinstance(found, dict) and settings_merge.is_our_mcp_server(found):
            servers.setdefault(shlex.join(_argv(found)), {"server": found, "file": str(path)})
    return hooks, servers


def check_command(needed: bool) -> DoctorCheck:
    """``needed``: some installed file calls the command from PATH."""
    found = shutil.which(PORTABLE_COMMAND)
    if found and not host_which(PORTABLE_COMMAND):
        return check(  # a problem when installed files call it: a host started elsewhere will not find it
            "command",
            not needed,
            f"`{PORTABLE_COMMAND}` is on PATH here only as this environment's own {found}, which is on PATH only inside "
            "`uv run` or an activated environment: hosts started from another shell do not find it.",
            f"`{fix_path_command()}`",
        )
    if found:
        return check("command", True, f"`{PORTABLE_COMMAND}` is on PATH: {found}")
    if not needed:
        return check("command", True, f"`{PORTABLE_COMMAND}` is not on PATH; nothing installed here calls it.")
    return check(
        "command",
        False,
        f"`{PORTABLE_COMMAND}` is not on PATH: the hooks and MCP servers a project commits call it, and do nothing here.",
        f"`{fix_path_command()}`",
    )


def _env(root: Path, extra: JsonObject | None = None) -> dict[str, str]:
    env = {**os.environ, "CONTEXTWARE_PROJECT_ROOT": str(root)}
    for key, value in (extra or {}).items():
        if isinstance(value, str):
            env[str(key)] = value.replace("${workspaceFolder}", str(root))
    return env


def _missing(kind: str, command: str, source: str, missing: list[str]) -> DoctorCheck:
    if missing[0] == PORTABLE_COMMAND:
        detail = f"{command} (in {source}) calls `{PORTABLE_COMMAND}`, which is not on PATH."
        return check(kind, False, detail, f"`{fix_path_command()}`", command=command)
    return check(kind, False, f"{command} (in {source}): {missing[0]} does not exist.", REINSTALL, command=command)


def check_hook(command: str, source: str, root: Path) -> DoctorCheck:
    argv = shlex.split(command)
    missing = missing_paths(argv)
    if missing:
        return _missing("hook", command, source, missing)
    event = {
        "hook_event_name": "SessionStart",
        "session_id": "contextware-doctor",
        "source": "startup",
        "cwd": str(root),
        "transcript_path": "",
    }
    try:
        run = subprocess.run(
            argv,
            input=json.dumps(event),
            capture_output=True,
            text=True,
            cwd=root,
            env=_env(root),
            timeout=RUN_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return check("hook", False, f"{command} (in {source}) did not run: {exc}.", REINSTALL, command=command)
    out = run.stdout.strip()
    try:
        answered = run.returncode == 0 and (not out or isinstance(json.loads(out), dict))
    except ValueError:
        answered = False
    if answered:
        return check("hook", True, f"{command} answers a SessionStart event (in {source}).", command=command)
    said = (run.stderr.strip() or run.stdout.strip() or "no output").splitlines()[-1][:300]
    return check("hook", False, f"{command} (in {source}) exited {run.returncode}: {said}", REINSTALL, command=command)


def _messages(text: str) -> dict[int | str, JsonObject]:
    """A JSON-RPC server's answers by their id."""
    out: dict[int | str, JsonObject] = {}
    for line in text.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and isinstance(message.get("id"), int | str):
            out[message["id"]] = message
    return out


def check_mcp(server: JsonObject, source: str, root: Path) -> DoctorCheck:
    argv = _argv(server)
    command = shlex.join(argv)
    missing = missing_paths(argv)
    if missing:
        return _missing("mcp", command, source, missing)
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "contextware-doctor", "version": __version__},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    try:
        run = subprocess.run(
            argv,
            input="".join(json.dumps(r) + "\n" for r in requests),
            capture_output=True,
            text=True,
            cwd=root,
            env=_env(root, _member(server, "env")),
            timeout=RUN_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return check("mcp", False, f"{command} (in {source}) did not run: {exc}.", REINSTALL, command=command)
    answers = _messages(run.stdout)
    tools = _member(answers.get(2) or {}, "result").get("tools")
    if "result" in (answers.get(1) or {}) and isinstance(tools, list) and tools:
        return check(
            "mcp", True, f"{command} answers initialize and lists {len(tools)} tools (in {source}).", command=command
        )
    said = (run.stderr.strip() or "no answer").splitlines()[-1][:300]
    return check(
        "mcp",
        False,
        f"{command} (in {source}) did not answer initialize/tools/list: {said}",
        REINSTALL,
        command=command,
    )


def check_service(root: Path) -> DoctorCheck:
    from contextware.service import client
    from contextware.service.protocol import code_version, endpoint, supersedes
    from contextware.storage.layout import resolve_data_dir

    data_dir = resolve_data_dir(root)
    if not data_dir.is_dir():
        return check("service", True, f"No memory in {root} yet: the first save creates it and starts the service.")
    if client.mode() == "off":
        return check("service", True, "CONTEXTWARE_SERVICE=off: every caller works in-process.")
    ep = endpoint(data_dir)
    try:
        client.ensure_running(ep)
        status = client.exchange(ep, {"op": "status"}, timeout=client.STATUS_TIMEOUT_S)
    except (client.Unavailable, client.ServiceUnsafe, OSError) as exc:
        return check(
            "service",
            False,
            f"The service of {data_dir} does not answer ({exc}).",
            f"see {ep.log}; `contextware service stop --project-root {shlex.quote(str(root))}` and try again",
        )
    theirs, pid = status.get("version"), status.get("pid")
    if theirs == code_version():
        detail = f"The service answers (pid {pid}, version {theirs})."
    elif supersedes(code_version(), theirs):
        detail = f"The service (pid {pid}) runs older version {theirs}: the next call of this install replaces it."
    else:
        detail = (
            f"The service (pid {pid}) runs newer version {theirs}: this install ({code_version()}) works in-process."
        )
    return check("service", True, detail, pid=pid)


def check_data(root: Path) -> DoctorCheck:
    from contextware.memory.maintenance import stats
    from contextware.storage.layout import resolve_data_dir
    from contextware.storage.project import Project

    if not resolve_data_dir(root).is_dir():
        return check("data", True, f"No memory in {root} yet.")
    try:
        tables = stats(Project.open(str(root))).get("tables") or {}
    except ContextwareError as exc:
        return check("data", False, exc.message, "`contextware memory repair`")
    damaged = {name: info["damaged"] for name, info in tables.items() if isinstance(info, dict) and info.get("damaged")}
    if damaged:
        name, message = next(iter(damaged.items()))
        return check("data", False, f"Table {name} is damaged: {message}", "`contextware memory repair`")
    rows = sum(int(info.get("rows") or 0) for info in tables.values() if isinstance(info, dict))
    return check("data", True, f"{len(tables)} tables readable, {rows} rows.")


def check_briefing(root: Path) -> DoctorCheck:
    """The session briefing, read in this process as ``contextware context`` reads it."""
    from contextware.memory.briefing import session_context
    from contextware.storage.layout import resolve_data_dir
    from contextware.storage.project import Project

    if not resolve_data_dir(root).is_dir():
        return check("briefing", True, f"No memory in {root} yet.")
    try:
        out = session_context(Project.open(str(root)))
    except ContextwareError as exc:
        return check("briefing", False, f"The session briefing fails: {exc.message}", "`contextware memory repair`")
    return check("briefing", True, f"The session briefing reads ({len(json.dumps(out))} characters of JSON).")


class DoctorReport(TypedDict):
    """What ``doctor`` found: healthy when no check failed."""

    healthy: bool
    project_root: str
    version: str
    checks: list[DoctorCheck]
    problems: int  # failed checks


def doctor(project_root: str | None = None) -> DoctorReport:
    """Run every check for the project at ``project_root`` (default: as every command resolves it)."""
    root = resolve_project_root(project_root)
    hooks, servers = installed_commands(root)
    portable = [c for c in [*hooks, *servers] if shlex.split(c)[:1] == [PORTABLE_COMMAND]]
    checks = [check_command(needed=bool(portable))]
    try:
        runner, _ = choose_runner(None)  # this install's own commands, as a user-scope install writes them
        own_hook, own_server = runner.hook_command("hook.py"), mcp_server(runner)
        hooks.setdefault(own_hook, "this install")
        servers.setdefault(
            shlex.join([own_server["command"], *own_server["args"]]), {"server": own_server, "file": "this install"}
        )
    except ContextwareError as exc:
        checks.append(check("install", False, exc.message, REINSTALL))
    hook_checks = [check_hook(command, source, root) for command, source in hooks.items()]
    checks += hook_checks
    runs = [  # the loop, for every hook a host's file installs (and that starts at all)
        loop.run_loop(command, source, root)
        for (command, source), check in zip(hooks.items(), hook_checks, strict=True)
        if check["ok"] and loop.host_and_scope(source, root)
    ]
    checks += [*runs, *loop.duplicates(files_with_our_hooks(root), root)]
    checks.append(loop.check_log(root, bool(runs) and all(c["ok"] for c in runs)))
    checks += [check_mcp(entry["server"], entry["file"], root) for entry in servers.values()]
    checks += [check_service(root), check_data(root), check_briefing(root)]
    problems = [c for c in checks if not c["ok"]]
    return {
        "healthy": not problems,
        "project_root": str(root),
        "version": __version__,
        "checks": checks,
        "problems": len(problems),
    }


__all__ = ["DoctorReport", "doctor"]
