"""The local summariser's import is light (a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys


def test_import_is_light() -> None:
    code = (
        "import sys, contextware.codeindex.local_summary as m; "
        "print(any(name.startswith(('tree_sitter', 'json')) for name in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
