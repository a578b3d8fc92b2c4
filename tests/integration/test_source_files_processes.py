"""The code index's file listing imports nothing heavy (a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_import_is_light() -> None:
    """Importing the module (the watch process and hooks do) must not pull in pathspec or git."""
    code = "import sys, contextware.codeindex.files as m; print('pathspec' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    ).stdout
    assert out.strip() == "False"
