"""Shared fixtures of the offload tests (tests/unit/test_offload*.py, tests/integration/test_offload*.py), registered as a plugin in tests/conftest.py.

- ``real_gemini``: this process's environment points the REAL Gemini CLI at the fake API
  (``tests/support/fake_gemini_api.py``); returns the fake, whose replies the test scripts.
- ``fake_gemini``: a tiny fake ``gemini`` executable (~50 ms a call instead of ~2 s) for tests whose
  point is our files, index and locks rather than the CLI (sync, --global, concurrency).
- ``make_project``: a temp project with a few source files and test settings in ``project.config``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

# Settings that keep tests fast: no summary calls unless a test asks, no back-off sleeps.
TEST_CONFIG = {"offload_summarizer": "truncate", "offload_retry_backoff_s": 0, "summary_max_tokens": 60}

FAKE_GEMINI = """\
#!{python}
import json, os, sys, time, uuid
argv = sys.argv[1:]
stdin = sys.stdin.read()
def opt(name):
    return argv[argv.index(name) + 1] if name in argv else None
prompt = next((a[len("--prompt="):] for a in argv if a.startswith("--prompt=")), None) or opt("-p") or ""
with open(os.environ["FAKE_GEMINI_LOG"], "a") as f:
    f.write(json.dumps({{"argv": argv, "stdin": stdin, "cwd": os.getcwd(), "t": time.time()}}) + "\\n")
time.sleep(float(os.environ.get("FAKE_GEMINI_DELAY") or 0))
if opt("--session-id") and opt("--session-id") == os.environ.get("FAKE_GEMINI_EXISTING"):
    sys.stderr.write('Error starting session: Session ID "%s" already exists.\\n' % opt("--session-id"))
    sys.exit(42)
sid = opt("--session-id") or opt("--resume") or str(uuid.uuid4())
response = os.environ.get("FAKE_GEMINI_RESPONSE") or ("Answer to: " + prompt + ". It is final.")
stats = {{"models": {{(opt("-m") or "gemini-fake"): {{"tokens": {{"prompt": 100, "candidates": 20, "total": 120}}}}}}}}
sys.stdout.write(json.dumps({{"session_id": sid, "response": response, "stats": stats}}))
"""


@pytest.fixture
def real_gemini(
    gemini_bin: str, gemini_cli_env: dict[str, str], fake_gemini_api: Any, monkeypatch: pytest.MonkeyPatch
) -> Any:
    for name in list(os.environ):
        if name.startswith(("GEMINI_", "GOOGLE_")) and name not in gemini_cli_env:
            monkeypatch.delenv(name)
    for name, value in gemini_cli_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CONTEXTWARE_GEMINI_BIN", gemini_bin)
    return fake_gemini_api


class FakeGemini:
    def __init__(self, path: Path, log: Path) -> None:
        self.path, self.log = path, log

    def calls(self) -> list[dict]:
        return [json.loads(x) for x in self.log.read_text().splitlines()] if self.log.exists() else []


@pytest.fixture
def fake_gemini(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeGemini:
    path = tmp_path / "fakebin" / "gemini"
    path.parent.mkdir()
    path.write_text(FAKE_GEMINI.format(python=sys.executable))
    path.chmod(0o755)
    log = tmp_path / "fake_gemini.log"
    monkeypatch.setenv("CONTEXTWARE_GEMINI_BIN", str(path))
    monkeypatch.setenv("FAKE_GEMINI_LOG", str(log))
    return FakeGemini(path, log)


def write_sources(root: Path) -> Path:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "docs").mkdir(exist_ok=True)
    (root / "src" / "app.py").write_text("def handler(event):\n    return route(event)  # UNIQUE-APP-CONTENT\n")
    (root / "src" / "util.py").write_text("def route(event):\n    return event['path']\n")
    (root / "docs" / "design.md").write_text("# Design\n\nRequests go through handler then route.\n")
    return root


@pytest.fixture
def make_project(tmp_path: Path):
    from contextware.storage.project import Project

    def _make(name: str = "proj", **config: Any) -> Project:
        root = write_sources(tmp_path / name)
        project = Project.open(root)
        project.configure(**{**TEST_CONFIG, **config})
        return project

    return _make


def varied_text(n: int, word: str = "Finding") -> str:
    """Long text without repetition (the CLI's loop detection re-asks on repetitive replies)."""
    return " ".join(f"{word} {i}: module m{i} handles case {i * 7} of {i * 13} widgets." for i in range(n))


def table_rows(project: Any) -> list[dict]:
    table = project.db.open_table("offloads")
    if table is None:
        return []
    cols = [c for c in table.schema.names if c != "vector"]
    return table.search().select(cols).limit(None).to_arrow().to_pylist()


def user_text(request: Any) -> str:
    return "\n".join(request.texts())
