"""Where things are in the repository, and what the layering tests count as heavy."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
SCRIPT_NAMES = sorted(p.stem for p in SCRIPTS.glob("*.py"))

# The folder put first on every test process's PYTHONPATH: its sitecustomize refuses and records any
# connection to a non-loopback address (tests/conftest.py installs it).
NETGUARD_DIR = Path(__file__).resolve().parent / "netguard"

# Libraries that cost seconds to import: the package imports them lazily, and a script's start-up
# must not load them (tests/unit/test_layers.py, tests/integration/test_layers_processes.py).
HEAVY = ("lancedb", "pyarrow", "numpy", "onnxruntime", "tokenizers", "fastembed", "pandas", "polars")
