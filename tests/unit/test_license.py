"""The repository carries an OSI licence (issue 23, item 8), and the package metadata names it."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_mit_licence_is_in_the_repository_and_in_the_package_metadata():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n") and "Copyright (c) 2026 The Contextware authors" in text
    if sys.version_info >= (3, 11):
        import tomllib

        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
