"""What every host's installer shares: how hooks and the MCP server are started (``Runner``: ``uv run
--no-sync --project <skill_dir>``, a given Python, or the ``contextware`` command found on PATH), the
one ``uv sync`` that prepares them, the skill's text, atomic writes of what we add, and the manifest
of everything written (``<CONTEXTWARE_HOME>/install-manifest.json``) from which ``uninstall`` removes
exactly that.

Files a project commits (``--project`` installs) must work on a teammate's machine too, so they get
the portable runner (``contextware hook``, ``contextware mcp``: no path of this machine); user-level
files get the machine's own runner: in a clone, its environment (``uv sync``, then its Python runs
``scripts/``); in an installed package (``uv tool install``, ``uvx --from``, pip), its own Python
on the entry modules (``python -I -m contextware.hosts.hooks.entry``; commands: the ``contextware``
command next to that Python, else ``python -I -m contextware.cli``), no ``scripts/`` there.
The skill's guide comes from the clone's ``SKILL.md`` or, installed, from the package's
``contextware/_data/SKILL.md`` (force-included by pyproject.toml)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

from contextware.core.errors import ContextwareError, UsageError
from contextware.core.system import contextware_home, write_atomic
from contextware.hosts.install import settings_merge

NAME = "contextware"

PORTABLE_COMMAND = "contextware"
MODULE = "contextware.cli"  # ``python -m contextware.cli <command>``: the command without its script
# What hooks and the MCP server of an installed package run (``python -I -m ...``: -I keeps a folder
# named contextware in the project, this repository's clone among them, from shadowing the package):
# the same standard-library entries scripts/hook.py and scripts/mcp_server.py import.
ENTRY_MODULES = {"hook.py": "contextware.hosts.hooks.entry", "mcp_server.py": "contextware.hosts.mcp.front"}

UV_SYNC_TIMEOUT = 900.0

CLI_TIMEOUT = 120.0


def skill_dir() -> Path:
    """The folder holding the package: a clone's root, or ``site-packages`` of an installed one."""
    return Path(__file__).resolve().parents[3]


def in_clone() -> bool:
    """Whether this package runs from a clone (``scripts/`` and ``pyproject.toml`` beside it) rather
    than from an installed copy, which has neither."""
    root = skill_dir()
    return (root / "pyproject.toml").is_file() and (root / "scripts" / "hook.py").is_file()


def skill_file() -> Path:
    """SKILL.md: the clone's, else the copy inside the installed package."""
    clone = skill_dir() / "SKILL.md"
    if clone.is_file() or in_clone():
        return clone
    return Path(__file__).resolve().parents[2] / "_data" / "SKILL.md"


def installed_command() -> Path | None:
    """The ``contextware`` console command of the running install (beside its Python), if any."""
    here = Path(sys.executable).parent / PORTABLE_COMMAND
    return here if here.is_file() and os.access(here, os.X_OK) else None


def from_uv_cache() -> bool:
    """Whether this install is one of uv's throwaway environments (``uvx``/``uv tool run``)."""
    return f"{os.sep}archive-v0{os.sep}" in sys.executable or f"{os.sep}builds-v0{os.sep}" in sys.executable


def fix_path_command() -> str:
    """The one command that puts ``contextware`` on PATH for this kind of install."""
    if in_clone():
        return f"uv tool install {shell_quote(skill_dir())}"
    if installed_command() is not None and not from_uv_cache():
        return "uv tool update-shell"  # a tool install whose bin folder is not on PATH yet
    return "uv tool install <your contextware clone>"


def shell_quote(path: Path | str) -> str:
    """A path as one shell word, for the commands hooks and the MCP server are started with."""
    return shlex.quote(str(path))


# script -> the console command running it (``contextware <command>``)
SCRIPT_COMMANDS = {
    "save_fact.py": "save",
    "recall.py": "recall",
    "memory.py": "memory",
    "index_file.py": "index",
    "crawl_project.py": "crawl",
    "watch.py": "watch",
    "store.py": "store",
    "offload.py": "offload",
    "sync.py": "sync",
    "context.py": "context",
    "install.py": "install",
    "service.py": "service",
    "hook.py": "hook",
    "mcp_server.py": "mcp",
    "export.py": "export",
    "import.py": "import",
    "ui.py": "ui",
}


@dataclass(frozen=True)
class Runner:
    """How hooks and the MCP server start: ``uv run --no-sync --project``, a given Python, or
    (``kind="command"``) the ``contextware`` console command looked up on PATH when the host runs it."""

    kind: str  # "uv" | "python" | "module" (``PYTHON -m contextware.cli``) | "command"
    exe: str

    def argv(self, script: str, *args: str) -> list[str]:
        if self.kind == "command":
            return [self.exe, SCRIPT_COMMANDS[script], *args]
        if self.kind == "module":
            return [self.exe, "-I", "-m", MODULE, SCRIPT_COMMANDS[script], *args]
        skill = str(skill_dir())
        path = f"{skill}/scripts/{script}"
        base = [self.exe, "run", "--no-sync", "--project", skill, path] if self.kind == "uv" else [self.exe, path]
        return [*base, *args]

    def command(self, script: str, *args: str) -> str:
        return shlex.join(self.argv(script, *args))

    def direct_argv(self, script: str, *args: str) -> list[str]:
        """Hooks and the MCP server start on every turn (Gemini CLI starts the server before each
        headless one): the environment's Python runs the script directly (``uv run`` would add its
        own resolution to each start); both import only the standard library on their warm path."""
        if self.kind == "uv":
            return [str(environment_python()), f"{skill_dir()}/scripts/{script}", *args]
        python = self.package_python()
        if python and script in ENTRY_MODULES:  # an installed package: its entry module, as scripts/ would
            return [python, "-I", "-m", ENTRY_MODULES[script], *args]
        return self.argv(script, *args)

    def package_python(self) -> str | None:
        """The Python of an installed package's runner (``-m`` or its console command's neighbour)."""
        if self.kind == "module":
            return self.exe
        if self.kind == "command" and not self.portable:
            python = Path(self.exe).parent / "python"
            return str(python) if python.is_file() else None
        return None

    def hook_command(self, script: str, *args: str) -> str:
        return shlex.join(self.direct_argv(script, *args))

    @property
    def portable(self) -> bool:
        """A command looked up on PATH: no path of this machine in what it writes."""
        return self.kind == "command" and self.exe == PORTABLE_COMMAND

    @property
    def packaged(self) -> bool:
        """Calls the package's commands (``contextware <command>``), not a clone's ``scripts/``."""
        return self.kind in ("command", "module")

    def run_prefix(self, script: str) -> str:
        """How an agent runs ``scripts/<script>`` the same way (for instructions we write)."""
        if self.packaged:
            return shlex.join(self.argv(script))
        skill = shell_quote(skill_dir())
        run = f"uv run --project {skill}" if self.kind == "uv" else shell_quote(self.exe)
        return f"{run} {skill}/scripts/{script}"


def own_bin_dirs() -> set[str]:
    """The running environment's own ``bin/`` folders (``sys.prefix``, ``VIRTUAL_ENV``, the skill's
    ``.venv``): ``uv run`` and an activated environment put them first on PATH, a host started from
    another shell does not have them."""
    dirs = {Path(sys.prefix) / "bin", environment_python().parent}
    if os.environ.get("VIRTUAL_ENV"):
        dirs.add(Path(os.environ["VIRTUAL_ENV"]) / "bin")
    return {os.path.realpath(d) for d in dirs}


def host_path() -> str:
    """PATH as a host started outside this environment will have it: this one's minus its own ``bin/``."""
    own = own_bin_dirs()
    parts = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(p for p in parts if p and os.path.realpath(p) not in own)


def host_which(command: str) -> str | None:
    """``command`` looked up on the PATH the host will have (see ``host_path``)."""
    return shutil.which(command, path=host_path())


def portable_runner() -> tuple[Runner, list[str]]:
    """The runner for files a project commits, with a warning when ``contextware`` is not on the PATH
    the host will have (this environment's own ``bin/`` left out)."""
    if host_which(PORTABLE_COMMAND):
        return Runner("command", PORTABLE_COMMAND), []
    return Runner("command", PORTABLE_COMMAND), [path_warning()]


def path_warning() -> str:
    return (
        f"`{PORTABLE_COMMAND}` is not on PATH: the project's hooks and MCP server call it, so they do nothing "
        f"on this machine until it is. Fix: `{fix_path_command()}` (teammates need it on PATH too)."
    )


def installed_runner() -> tuple[Runner, list[str]]:
    """This machine's runner for an installed package: its ``contextware`` command, else its Python."""
    command = installed_command()
    runner = Runner("command", str(command)) if command else Runner("module", sys.executable)
    if from_uv_cache():
        return runner, [
            f"This Contextware runs from uv's cache ({sys.executable}), which uv may clean: the files written "
            "call it there. `uv tool install` gives a lasting command; install again from it."
        ]
    return runner, []


def environment_python() -> Path:
    """The Python of the skill's environment, as ``uv sync --project <skill_dir>`` makes it."""
    raw = os.environ.get("UV_PROJECT_ENVIRONMENT")
    base = Path(raw) if raw else Path(".venv")
    return (base if base.is_absolute() else skill_dir() / base) / "bin" / "python"


def run_tool(cmd: list[str], timeout: float, cwd: Path | str | None = None) -> tuple[int, str, str]:
    """Run a helper program in its own process group; killed with its children after ``timeout``."""
    from contextware.core.system import run_in_group

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


def choose_runner(python: str | None, *, project: bool = False) -> tuple[Runner, list[str]]:
    """The runner for files of one scope: a project's (committed, so portable unless ``python`` is
    given explicitly) or the user's (this machine's ``--python``, which ``install.dispatch`` defaults to
    ``$CONTEXTWARE_HOOK_PYTHON``, or uv)."""
    if project:
        if not python:
            return portable_runner()
        runner, warnings = choose_runner(python)
        return runner, [
            *warnings,
            f"--python writes {runner.exe} into the project's files: a teammate's hooks will not find it; "
            f"leave --python out to have them call `{PORTABLE_COMMAND}` from PATH.",
        ]
    python = python or None
    if python:
        found = python if os.sep in python else shutil.which(python)
        if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
            raise UsageError(f"--python {python}: no such executable.", code="bad_python")
        rc, _, _ = run_tool([found, "-c", "import sys; sys.path.pop(0); import contextware"], 60)
        if rc == 0 and not in_clone():  # its hooks run it isolated (-I): the package must be its own
            rc, _, _ = run_tool([found, "-I", "-c", "import contextware"], 60)
        if rc != 0:
            where = environment_python() if in_clone() else Path(sys.executable)
            raise UsageError(
                f"--python {python} cannot import contextware: give the Python of the skill's environment ({where}).",
                code="bad_python",
            )
        runner = Runner("python", os.path.abspath(found))
        return (runner if in_clone() else Runner("module", runner.exe)), []
    if not in_clone():
        return installed_runner()
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
    # The package's own modules too (an editable install is not in site-packages): a hook run where
    # Python may not write __pycache__ (PYTHONDONTWRITEBYTECODE, common in containers) would compile
    # them on every turn, ~10 ms.  Best effort: a read-only checkout just keeps compiling.
    try:
        run_tool(
            [str(environment_python()), "-m", "compileall", "-q", str(skill_dir() / "contextware")], UV_SYNC_TIMEOUT
        )
    except ContextwareError:
        pass


def mcp_server(runner: Runner) -> dict[str, Any]:
    argv = runner.direct_argv("mcp_server.py")
    return {"command": argv[0], "args": argv[1:]}


def missing_paths(argv: list[str]) -> list[str]:
    """The absolute paths in a command line that do not exist (a command on PATH is looked up)."""
    missing = [a for a in argv if os.path.isabs(a) and not os.path.exists(a)]
    if argv and not os.path.isabs(argv[0]) and host_which(argv[0]) is None:
        missing.insert(0, argv[0])
    return missing


_SCRIPT_CALL = re.compile(r"uv run --project <skill_dir> <skill_dir>/scripts/(\w+\.py)|<skill_dir>/scripts/(\w+\.py)")


def skill_text(runner: Runner | None = None) -> str:
    """SKILL.md with ``<skill_dir>`` filled in; for a portable runner, script calls become
    ``contextware <command>`` so the copy holds no path of this machine."""
    path = skill_file()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        raise ContextwareError(
            f"The skill's guide {path} is missing; reinstall Contextware.", code="skill_missing"
        ) from None
    if runner is None and not in_clone():
        runner = installed_runner()[0]  # no scripts/ to point at
    if runner is not None and runner.packaged:
        text = _SCRIPT_CALL.sub(lambda m: runner.run_prefix(m.group(1) or m.group(2)), text)
        name = runner.exe if runner.kind == "command" else shlex.join([runner.exe, "-I", "-m", MODULE])
        return text.replace(
            "`<skill_dir>` is the folder holding this file.", f"The commands below are the `{name}` command's."
        ).replace("<skill_dir>", "<contextware checkout>")
    return text.replace("<skill_dir>", shell_quote(skill_dir()))


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


class _Installed(TypedDict):
    action: str  # install | uninstall | print
    agent: str  # gemini | claude | mcp
    scope: str  # user | project
    changed: bool
    written: list[str]
    removed: list[str]
    manifest: str  # the install manifest, which records what to undo


class MergeDriverReport(TypedDict, total=False):
    """What a project install registered of the memory file's git merge driver, or removed."""

    driver: str
    written: list[str]
    removed: list[str]
    warnings: list[str]


class InstallResult(_Installed, total=False):
    """What an install or uninstall did, for every host: the files written, removed or ``kept``
    (changed by someone since), and what the host needs next."""

    kept: list[str]
    project_root: str | None
    runner: str  # how the hooks start Python: uv, venv, command
    hook_command: str
    mcp_server: Mapping[str, object]  # the server entry written (command, args, env)
    config: Mapping[str, object]  # ``mcp print``: the entry to paste
    config_file: str
    host: str
    extension_dir: str
    linked: bool
    linked_now: bool
    unlinked: bool
    project: str
    merge_driver: MergeDriverReport
    warnings: list[str]
    next: str


def install_result(agent: str, action: str, scope: str, **fields: object) -> InstallResult:
    """The result every installer returns: what was written and removed, and whether anything changed."""
    written, removed = fields.pop("written", []), fields.pop("removed", [])
    return cast(
        InstallResult,
        {
            "action": action,
            "agent": agent,
            "scope": scope,
            "changed": bool(written or removed or fields.get("linked_now") or fields.get("unlinked")),
            "written": written,
            "removed": removed,
            **fields,
            "manifest": str(manifest_path()),
        },
    )


def manifest_path() -> Path:
    return contextware_home() / "install-manifest.json"


@contextmanager
def manifest(write: bool) -> Iterator[dict[str, Any]]:
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
