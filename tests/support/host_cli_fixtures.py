"""What the fixtures of the real host CLIs share (tests/support/gemini_fixtures.py, tests/support/claude_fixtures.py):
where the pinned CLI is installed, how a test requires it, and serving a fake model API."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class PinnedCli:
    """An npm CLI at the version the tests pin, installed by ``.ci/install_npm_cli.sh`` into
    ``$CONTEXTWARE_CACHE_DIR/<folder>-<version>`` (or named by ``env_var``)."""

    title: str
    package: str
    version: str
    folder: str
    name: str
    env_var: str

    def installed(self) -> str | None:
        """Path of the real CLI: ``env_var``, else the install script's cache folder."""
        explicit = os.environ.get(self.env_var)
        if explicit:
            return explicit if os.access(explicit, os.X_OK) else None
        cache = Path(os.environ.get("CONTEXTWARE_CACHE_DIR") or Path.home() / ".cache" / "contextware")
        path = cache / f"{self.folder}-{self.version}" / "node_modules" / ".bin" / self.name
        return str(path) if os.access(path, os.X_OK) else None

    def require(self) -> str:
        """The installed CLI; a test without it is skipped, or fails under CI or when ``env_var``
        names a path that does not run."""
        path = self.installed()
        if path is not None:
            return path
        message = (
            f"the real {self.title} {self.version} is not installed: run "
            f"bash .ci/install_npm_cli.sh {self.package} {self.version} {self.folder} {self.name} "
            f"(or set {self.env_var} to the path it prints)"
        )
        if os.environ.get("CI") or os.environ.get(self.env_var):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def serve(api_class: Any) -> Iterator[Any]:
    """A started fake API, stopped after the test (the body of an API fixture: ``yield from``)."""
    api = api_class().start()
    try:
        yield api
    finally:
        api.stop()
