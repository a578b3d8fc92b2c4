"""What every host's installer shares: how hooks and the MCP server are started (``Runner``: ``uv run
--no-sync --project <skill_dir>`` or a given Python), the one ``uv sync`` that prepares them, the
skill's text, atomic writes of what we add, and the manifest of everything written
(``<CONTEXTWARE_HOME>/install-manifest.json``) from which ``uninstall`` removes exactly that."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from contextware.errors import ContextwareError, UsageError
from contextware.hosts import settings_merge
from contextware.system import contextware_home, write_atomic

NAME = "contextware"

UV_SYNC_TIMEOUT = 900.0

CLI_TIMEOUT = 120.0


def skill_dir() -> Path:
    return Path(__file__).resolve().parents[2]


def _q(path: Path | str) -> str:
    return shlex.quote(str(path))


@dataclass(frozen=True)
class Runner:
    """How hooks and the MCP server start: ``uv run --no-sync --project`` or a given Python."""

    kind: str  # "uv" | "python"
    exe: str

    def argv(self, script: str) -> list[str]:
        skill = str(skill_dir())
        path = f"{skill}/scripts/{script}"
        return [self.exe, "run", "--no-sync", "--project", skill, path] if self.kind == "uv" else [self.exe, path]

    def command(self, script: str) -> str:
        return shlex.join(self.argv(script))

    def hook_command(self, script: str) -> str:
        """Hooks start on every turn: the environment's Python runs the script directly (``uv run``
        would add its own resolution to each start); the script imports only the standard library
        before it asks the resident service."""
        if self.kind == "uv":
            return shlex.join([str(environment_python()), f"{skill_dir()}/scripts/{script}"])
        return self.command(script)


def environment_python() -> Path:
    """The Python of the skill's environment, as ``uv sync --project <skill_dir>`` makes it."""
    raw = os.environ.get("UV_PROJECT_ENVIRONMENT")
    base = Path(raw) if raw else Path(".venv")
    return (base if base.is_absolute() else skill_dir() / base) / "bin" / "python"


def run_tool(cmd: list[str], timeout: float, cwd: Path | str | None = None) -> tuple[int, str, str]:
    """Run a helper program in its own process group; killed with its children after ``timeout``."""
    from contextware.system import run_in_group

    try:
        return run_in_group(cmd, cwd=cwd, timeout=timeout)
    except OSError as exc:
        raise ContextwareError(f"Cannot run {cmd[0]}: {exc.strerror or exc}.", code="tool_failed") from None
    except subprocess.TimeoutExpired:
        raise ContextwareError(
            f"{Path(cmd[0]).name} {cmd[1]} did not finish within {timeout:g} seconds "
            "and was stopped; nothing was installed.",
            code="timeout",
        ) from None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def choose_runner(python: str | None) -> tuple[Runner, list[str]]:
    python = python or os.environ.get("CONTEXTWARE_HOOK_PYTHON") or None
    if python:
        found = python if os.sep in python else shutil.which(python)
        if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
            raise UsageError(f"--python {python}: no such executable.", code="bad_python")
        rc, _, _ = run_tool([found, "-c", "import sys; sys.path.pop(0); import contextware"], 60)
        if rc != 0:
            raise UsageError(
                f"--python {python} cannot import contextware: give the Python of the skill's "
                f"environment ({skill_dir() / '.venv' / 'bin' / 'python'}).",
                code="bad_python",
            )
        return Runner("python", os.path.abspath(found)), []
    uv = os.environ.get("UV")
    uv = uv if uv and os.path.isfile(uv) and os.access(uv, os.X_OK) else shutil.which("uv")
    if uv:
        return Runner("uv", os.path.abspath(uv)), []
    return Runner("python", sys.executable), [
        f"uv was not found: hooks and the MCP server run {sys.executable} directly; install uv and run "
        "this again to give them the skill's own environment."
    ]


def sync_environment(runner: Runner) -> None:
    """``uv sync --project <skill_dir>`` once, so the ``--no-sync`` hook runs find an environment."""
    if runner.kind != "uv":
        return
    # Compiled once here: the project no longer sets compile-bytecode, which made every `uv run`
    # re-compile the whole environment.
    rc, _, err = run_tool([runner.exe, "sync", "--compile-bytecode", "--project", str(skill_dir())], UV_SYNC_TIMEOUT)
    if rc != 0:
        raise ContextwareError(
            f"uv sync --project {skill_dir()} failed ({_last_line(err)}); nothing was installed.", code="uv_sync_failed"
        )


def mcp_server(runner: Runner) -> dict:
    argv = runner.argv("mcp_server.py")
    return {"command": argv[0], "args": argv[1:]}


def skill_text() -> str:
    path = skill_dir() / "SKILL.md"
    try:
        return path.read_text(encoding="utf-8").replace("<skill_dir>", _q(skill_dir()))
    except OSError:
        raise ContextwareError(
            f"The skill's guide {path} is missing; reinstall Contextware.", code="skill_missing"
        ) from None


def put_text(path: Path, text: str, created_dirs: list[str]) -> bool:
    """Write ``text`` atomically unless the file already holds it (file mode kept); True if written."""
    if settings_merge.read_text(path) == text:
        return False
    missing = [p for p in path.parents if not p.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        created_dirs.extend(str(p) for p in reversed(missing))
        write_atomic(path, text, keep_mode=True)
    except OSError as exc:
        raise ContextwareError(f"Cannot write {path}: {exc.strerror or exc}.", code="not_writable") from None
    return True


def manifest_path() -> Path:
    return contextware_home() / "install-manifest.json"


@contextmanager
def manifest(write: bool) -> Iterator[dict]:
    """The manifest's ``installs`` mapping, saved on exit (under a lock) when ``write`` and it changed."""
    path = manifest_path()
    if not write and not path.exists():
        yield {}
        return
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path.with_name(".install-manifest.lock"))):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            doc = {}
        installs = doc.get("installs") if isinstance(doc.get("installs"), dict) else {}
        before = json.dumps(installs, sort_keys=True)
        try:
            yield installs
        finally:  # saved even when the install failed half-way, so uninstall knows what was done
            if json.dumps(installs, sort_keys=True) != before:
                put_text(path, json.dumps({"version": 1, "installs": installs}, indent=2) + "\n", [])
                os.chmod(path, 0o600)  # it may hold a copy of a settings file
