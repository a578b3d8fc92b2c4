"""Start-up cost and layering: scripts stay thin, --help imports nothing heavy, the package's layers
only point one way."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SCRIPTS

HEAVY = ("lancedb", "pyarrow", "numpy", "onnxruntime", "tokenizers", "fastembed", "pandas", "polars")
SCRIPT_NAMES = sorted(p.stem for p in SCRIPTS.glob("*.py"))
# Scripts go through contextware.cli, except the MCP server: a long-lived stdio server, not a command.
FRONT_END = {"mcp_server": "contextware.hosts.mcp_server"}


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_scripts_are_thin(name):
    tree = ast.parse((SCRIPTS / f"{name}.py").read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(isinstance(n, ast.ImportFrom) and n.module == FRONT_END.get(name, "contextware.cli") for n in imports)
    assert len([n for n in tree.body if not isinstance(n, ast.Expr) or not isinstance(n.value, ast.Constant)]) <= 2


@pytest.mark.parametrize("argv", [["--help"], ["--bogus-flag"]])
@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_help_and_usage_errors_import_nothing_heavy(name, argv):
    code = (
        "import runpy, sys\n"
        f"sys.argv = [{str(SCRIPTS / (name + '.py'))!r}, *{argv!r}]\n"
        "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\nexcept SystemExit:\n    pass\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "sys.stderr.write('HEAVY=' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "HEAVY=" in out.stderr
    assert out.stderr.split("HEAVY=")[-1].strip() == ""


def _imports(path: Path) -> set[str]:
    mods = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            mods.add(("." * node.level) + (node.module or ""))
        elif isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
    return mods


def test_core_never_imports_the_cli():
    for path in (REPO / "contextware").glob("*.py"):
        assert not any("cli" in m.split(".") for m in _imports(path)), path


def test_heavy_libraries_are_imported_lazily():
    """No module of the package imports a heavy library at module level."""
    for path in list((REPO / "contextware").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.split(".")[0] in HEAVY for n in names), f"{path.name} imports {names} at module level"


def test_no_module_is_huge():
    for path in (REPO / "contextware").rglob("*.py"):
        assert path.stat().st_size < 40_000, path
