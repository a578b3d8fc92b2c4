"""Start-up cost and layering: scripts stay thin, --help imports nothing heavy, the package's layers
only point one way."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import SCRIPTS

HEAVY = ("lancedb", "pyarrow", "numpy", "onnxruntime", "tokenizers", "fastembed", "pandas", "polars")


SCRIPT_NAMES = sorted(p.stem for p in SCRIPTS.glob("*.py"))


# Scripts go through contextware.cli, except the MCP server: a long-lived stdio server, not a command.
FRONT_END = {"mcp_server": "contextware.hosts.mcp_server"}


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
