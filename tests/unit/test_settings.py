"""Settings are read from the environment once, where a process enters the package, into one
``Settings``; no other module reads ``os.environ`` (the list below says who still does, and why)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from contextware.core.settings import Settings

REPO = Path(__file__).resolve().parents[2]

# Composition roots: the one function of each entry point that builds Settings from os.environ, and
# the one default for callers that pass none (``current_settings``).
ROOTS: dict[str, set[str]] = {
    "contextware/core/settings.py": {"current_settings"},  # the default of every optional settings parameter
    "contextware/cli/__init__.py": {"run", "run_served"},  # the command line (and the service's fallback)
    "contextware/hosts/hooks/entry.py": {"main"},  # the hook process
    "contextware/hosts/mcp/front.py": {"main"},  # the MCP server process
    "contextware/resident/server.py": {"main"},  # the resident service's own (each request: the caller's)
}

_GEMINI = (
    "the Gemini CLI adapter: its child's environment, the CLI's own variables (GEMINI_CLI_HOME, HOME, "
    "its auth variables) and CONTEXTWARE_GEMINI_BIN; runs only in the caller's own process (commands and "
    "tools that run Gemini never go to the service)"
)

# Modules that still touch os.environ anywhere, each for a reason that is not a setting of ours.
OTHERS: dict[str, str] = {
    "contextware/codeindex/files.py": "the environment of the git child process",
    "contextware/storage/lancedb_import.py": "LANCEDB_LOG, Lance's own variable, read by its Rust side",
    "contextware/gemini/availability.py": _GEMINI,
    "contextware/gemini/headless.py": _GEMINI,
    "contextware/gemini/process.py": _GEMINI,
    "contextware/gemini/sessions.py": _GEMINI,
    "contextware/hosts/install/shared.py": "installer: UV, UV_PROJECT_ENVIRONMENT (uv's own)",
    "contextware/hosts/install/claude_code.py": "installer: CLAUDE_CONFIG_DIR, Claude Code's own variable",
    "contextware/hosts/install/gemini_cli.py": "installer: Gemini CLI's trust variables",
    "contextware/hosts/install/mcp_hosts.py": "installer: APPDATA, XDG_CONFIG_HOME, where MCP hosts keep their files",
    "contextware/cli/render.py": "NO_COLOR, beside the terminal check (stdout is never a terminal in the service)",
    "contextware/hosts/install/doctor.py": "the environment of the hook and MCP server processes it runs to check them",
    "contextware/hosts/install/loop.py": "doctor's loop: the environment of the installed hook commands it runs",
}


def _reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, enclosing top-level function or "") of every os.environ / os.getenv / os.putenv use and
    every ``from os import environ``-style import."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and not function:
                name = child.name
            if (
                isinstance(child, ast.Attribute)
                and child.attr in ("environ", "environb", "getenv", "getenvb", "putenv", "unsetenv")
                and isinstance(child.value, ast.Name)
                and child.value.id == "os"
            ):
                found.append((child.lineno, name))
            if (
                isinstance(child, ast.ImportFrom)
                and child.module == "os"
                and any(a.name in ("environ", "environb", "getenv", "getenvb", "putenv") for a in child.names)
            ):
                found.append((child.lineno, name))
            visit(child, name)

    visit(tree, "")
    return found


def _offenders(package: Path) -> list[str]:
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).as_posix()
        for line, function in _reads(ast.parse(path.read_text())):
            if rel in OTHERS or function in ROOTS.get(rel, set()):
                continue
            out.append(f"{rel}:{line} ({function or 'module level'})")
    return out


@pytest.mark.slow
def test_only_the_composition_roots_read_the_environment():
    assert _offenders(REPO / "contextware") == []


def test_the_listed_exceptions_still_exist_and_still_read_it():
    """A module that stops reading the environment leaves the list (so the list says what remains)."""
    for rel in [*OTHERS, *ROOTS]:
        assert _reads(ast.parse((REPO / rel).read_text())), f"{rel} no longer reads os.environ: drop it"


def test_the_scan_sees_a_planted_read(tmp_path):
    package = tmp_path / "contextware"
    (package / "storage").mkdir(parents=True)
    (package / "storage" / "planted.py").write_text("import os\n\ndef f():\n    return os.environ.get('X')\n")
    (package / "planted_too.py").write_text("from os import getenv\n")
    (package / "cli").mkdir()
    (package / "cli" / "__init__.py").write_text("import os\n\ndef handle():\n    return os.getenv('X')\n")
    assert _offenders(package) == [
        "contextware/cli/__init__.py:4 (handle)",
        "contextware/planted_too.py:1 (module level)",
        "contextware/storage/planted.py:4 (f)",
    ]


def test_from_env_reads_every_variable():
    env = {
        "CONTEXTWARE_PROJECT_ROOT": "/p",
        "CONTEXTWARE_DATA_DIR": "/d",
        "CONTEXTWARE_DB_URI": "s3://b/x",
        "CONTEXTWARE_HOME": "/h",
        "CONTEXTWARE_SERVICE": " OFF ",
        "CONTEXTWARE_EMBED_MODEL": "BAAI/bge-small-en-v1.5",
        "CONTEXTWARE_DISABLE_EMBEDDINGS": "0",
        "CONTEXTWARE_WORKTREES": "separate",
        "AWS_ENDPOINT_URL": "http://aws",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "CONTEXTWARE_HOOK_PYTHON": "/bin/python",
        "XDG_RUNTIME_DIR": "/run/user/1",
        "PATH": "/bin",
    }
    s = Settings.from_env(env)
    assert (s.project_root, s.data_dir, s.db_uri, s.home) == ("/p", "/d", "s3://b/x", "/h")
    assert s.service == "off" and s.disable_embeddings is True and s.worktrees == "separate"
    assert s.embed_model == "BAAI/bge-small-en-v1.5" and s.object_store_endpoint == "http://aws"
    assert s.aws_region == "eu-west-1" and s.hook_python == "/bin/python"
    assert s.runtime_dir == "/run/user/1" and "PATH" not in s.forwarded_env()
    assert Settings.from_env({**env, "CONTEXTWARE_S3_ENDPOINT": "http://mine"}).object_store_endpoint == "http://mine"
    empty = Settings.from_env({"CONTEXTWARE_DATA_DIR": "", "CONTEXTWARE_SERVICE": ""})
    assert empty.data_dir is None and empty.service == "auto" and empty == Settings(forwarded=empty.forwarded)


def test_a_callers_settings_take_only_its_contextware_variables():
    """What the service does for each request: the caller's CONTEXTWARE_* variables replace the
    service's own (a variable the caller has not set is unset), the others stay the service's."""
    own = Settings.from_env(
        {"CONTEXTWARE_KEEP": "mine", "CONTEXTWARE_DATA_DIR": "/mine", "XDG_RUNTIME_DIR": "/run", "AWS_REGION": "r"}
    )
    caller = own.for_caller({"CONTEXTWARE_KEEP": "theirs", "PATH": "/evil", "AWS_REGION": "x"})
    assert caller.forwarded_env() == {"CONTEXTWARE_KEEP": "theirs"}
    assert caller.data_dir is None and caller.runtime_dir == "/run" and caller.aws_region == "r"


def test_settings_is_standard_library_only():
    """The hook process imports it on every turn."""
    import subprocess

    code = (
        "import sys; before = set(sys.modules); import contextware.core.settings; "
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] != 'contextware' "
        "and m.split('.')[0] not in {*sys.stdlib_module_names, *sys.builtin_module_names}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


def test_the_settings_page_is_generated_from_the_declarations():
    """Stale? Run ``uv run python -m contextware.storage.config``."""
    from contextware.storage.config import SETTINGS, settings_markdown
    from tests.support.repo import REPO

    page = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    assert page == settings_markdown()
    assert all(f"`{s.key}`" in page for s in SETTINGS)
