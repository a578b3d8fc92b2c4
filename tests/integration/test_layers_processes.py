"""Start-up cost: every script's --help and usage errors import nothing heavy (a fresh interpreter each)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.repo import HEAVY, SCRIPT_NAMES, SCRIPTS


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
