"""Command-line front end: every script and the ``contextware`` command go through ``run``.

``run`` is the one place where results become the JSON envelope on stdout, errors become
``{"ok": false, "error": ...}`` with exit code 1 or 2, and ``--format text`` is rendered.
Command modules only import the heavy parts of the package inside their handlers, so ``--help`` and
bad usage answer in milliseconds.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from contextware import __version__
from contextware.core.errors import ContextwareError, ErrorBody, UsageError, internal_error
from contextware.core.settings import Settings

if TYPE_CHECKING:
    from contextware.storage.project import Project

# command name -> module under contextware.cli
COMMANDS = {
    "save": "save",
    "recall": "recall",
    "memory": "memory",
    "index": "index",
    "crawl": "crawl",
    "watch": "watch",
    "store": "store",
    "offload": "offload",
    "sync": "sync",
    "context": "context",
    "install": "install",
    "service": "service",
    "export": "export",
    "import": "import_file",
    "merge-driver": "merge_driver",
    "config": "config",
    "doctor": "doctor",
    "ui": "ui",
}


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises ``UsageError`` instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message[0].upper() + message[1:].rstrip(".") + ".", code="usage")


def add_common(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("common options")
    group.add_argument(
        "--project-root",
        metavar="PATH",
        help="project whose memory to use (default: $CONTEXTWARE_PROJECT_ROOT, the git top level, or the working directory)",
    )
    group.add_argument(
        "--format", choices=("json", "text"), default="json", help="json (default) for agents, text for people"
    )
    group.add_argument("--debug", action="store_true", help="print a traceback on stderr when something fails")


def new_parser(prog: str, description: str) -> ArgumentParser:
    p = ArgumentParser(prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"contextware {__version__}")
    return p


def read_content(value: str | None) -> str | None:
    """The positional content, or standard input for ``-``."""
    if value != "-":
        return value
    from contextware.core.system import MAX_INPUT_BYTES, read_limited

    data = read_limited(sys.stdin.buffer, MAX_INPUT_BYTES, "Standard input")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("Standard input is not valid UTF-8 text; nothing was saved.", code="bad_encoding") from None


def emit(result: dict[str, Any], fmt: str, render: Callable[[dict[str, Any]], str] | None) -> None:
    if fmt == "text":
        from contextware.cli.render import generic, use_color
        from contextware.core.fence import printable

        text = (render or generic)(result)
        # Stored escape sequences never reach a terminal; our own colours do, when colour is on.
        sys.stdout.write(printable(text, keep_colour=use_color()).rstrip("\n") + "\n")
    else:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def _wants_debug(argv: Sequence[str]) -> bool:
    return "--debug" in argv


def _wants_text(argv: Sequence[str]) -> bool:
    args = list(argv)
    return any(a == "--format=text" for a in args) or any(
        a == "--format" and i + 1 < len(args) and args[i + 1] == "text" for i, a in enumerate(args)
    )


def run(
    command: str, argv: Sequence[str] | None = None, prog: str | None = None, settings: Settings | None = None
) -> int:
    """Parse, call and print one command; returns the exit code.  ``settings``: the caller's (the
    resident service passes its caller's); by default this process's environment, read here once."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if settings is None:
        import os

        settings = Settings.from_env(os.environ)  # a composition root
    module = importlib.import_module(f"{__name__}.{COMMANDS[command]}")
    fmt = "text" if _wants_text(argv) else "json"
    try:
        parser = module.build_parser(prog or command)
        args = parser.parse_args(argv)
        args.settings = settings  # every handler takes the settings from here (``open_project``)
        fmt = getattr(args, "format", fmt)
        result = module.handle(args)
        raw = getattr(module, "raw_output", lambda _result: None)(result)
        if raw is not None:  # the command's output is a file's content (export --output -)
            sys.stdout.write(raw)
            sys.stdout.flush()
            return 0
        failure = getattr(module, "failure", lambda _result: None)(result)
        if failure is not None:  # a report that is itself the bad news (doctor: unhealthy), exit 1
            emit({"ok": False, "error": failure, **result}, fmt, getattr(module, "render_text", None))
            return 1
        emit({"ok": True, **result}, fmt, getattr(module, "render_text", None))
        return 0
    except ContextwareError as exc:
        return _fail(exc.to_dict(flag_name), exc.exit_code, fmt, argv)
    except KeyboardInterrupt:
        return _fail({"code": "interrupted", "message": "Interrupted."}, 130, fmt, argv)
    except UnicodeEncodeError as exc:  # bytes that are not UTF-8 on the command line, met anywhere
        if "surrogate" not in str(exc):
            return _fail(internal_error(exc), 1, fmt, argv)
        message = "An argument is not valid UTF-8 text (it holds bytes that are not UTF-8); give UTF-8 text."
        return _fail({"code": "bad_encoding", "message": message}, 2, fmt, argv)
    except Exception as exc:  # noqa: BLE001 - the envelope promises JSON, never a traceback
        return _fail(internal_error(exc), 1, fmt, argv)


# Inputs whose command-line flag is not ``--`` plus their name (``FieldError`` names inputs).
FLAGS = {"all_projects": "--global", "text": "--query", "query": "--query"}


def flag_name(field: str) -> str:
    """How the command line names an input: ``limit`` -> ``--limit``, ``max_chars`` -> ``--max-chars``."""
    return FLAGS.get(field) or "--" + field.replace("_", "-")


def _fail(error: ErrorBody, code: int, fmt: str, argv: Sequence[str]) -> int:
    from contextware.core.redact import redact_error

    error = redact_error(error)
    if _wants_debug(argv):
        import traceback

        traceback.print_exc(file=sys.stderr)
    if fmt == "text":
        from contextware.cli.render import paint, use_color
        from contextware.core.fence import printable

        line = f"{paint('error', 'bold', 'red')} ({error['code']}): {error['message']}"
        sys.stdout.write(printable(line, keep_colour=use_color()) + "\n")  # a message can quote input
    else:
        sys.stdout.write(json.dumps({"ok": False, "error": error}, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return code


def run_served(command: str, argv: Sequence[str], prog: str) -> int:
    """``run`` through the project's resident service when one can answer, else in this process."""
    import os

    from contextware.service.client import run_command

    settings = Settings.from_env(os.environ)  # a composition root: read once, for both paths
    code = run_command(command, argv, prog, settings)
    return run(command, argv, prog=prog, settings=settings) if code is None else code


def run_script(command: str) -> NoReturn:
    """Entry point of ``scripts/<name>.py``."""
    import os

    raise SystemExit(run_served(command, sys.argv[1:], os.path.basename(sys.argv[0])))


def run_hook() -> NoReturn:
    """``contextware hook``: one hook event on stdin, never a failed turn (``scripts/hook.py`` runs
    ``contextware.hosts.hooks.entry`` directly: the hook's process start skips this module's imports)."""
    from contextware.hosts.hooks.entry import main as hook_main

    hook_main()
    raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``contextware`` console command: ``contextware <command> [options]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    names = ", ".join([*COMMANDS, "hook", "mcp"])
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(
            f"usage: contextware <command> [options]   (or --version)\n\ncommands: {names}\n"
            "Run `contextware <command> --help` for a command's options; `contextware mcp` serves the MCP tools "
            "over stdio.\n"
        )
        raise SystemExit(0 if argv else 2)
    if argv[0] in ("-V", "--version"):
        sys.stdout.write(f"contextware {__version__}\n")
        raise SystemExit(0)
    if argv[0] == "hook":  # what installed hooks and MCP configs run (no path of this machine in them)
        run_hook()
    if argv[0] == "mcp":  # a long-lived stdio server, not a one-shot command
        from contextware.hosts.mcp.front import main as mcp_main

        mcp_main(argv[1:])
        raise SystemExit(0)
    if argv[0] not in COMMANDS:
        raise SystemExit(
            _fail({"code": "usage", "message": _unknown_command(argv[0], [*COMMANDS, "mcp"])}, 2, "json", argv)
        )
    raise SystemExit(run_served(argv[0], argv[1:], f"contextware {argv[0]}"))


def _unknown_command(name: str, names: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, names, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"Unknown command {name!r}: use one of {', '.join(names)}.{hint}"


def open_project(args: argparse.Namespace) -> "Project":
    """The command's project, its settings read now: a bad ``config.json`` is the same error (exit 2)
    from every command, not only from those that use the setting."""
    from contextware.storage.project import Project

    project = Project.open(getattr(args, "project_root", None), getattr(args, "settings", None))
    _ = project.config
    return project
