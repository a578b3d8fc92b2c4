"""Which files the code index covers: git and walk modes, ignore files, built-in exclusions, explicit
paths, symlinks and reading."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HAVE_GIT = shutil.which("git") is not None


needs_git = pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")


MODES = [pytest.param("git", marks=needs_git), "walk"]


NESTED_EXPECTED = [
    ".gitignore",
    "a.py",
    "data/logs",
    "sub/.gitignore",
    "sub/deeper/.gitignore",
    "sub/deeper/only_here.txt",
    "sub/keep.log",
]


BUILTIN = {
    # path: reason (None = indexed)
    "src/main.py": None,
    "store/lancedb/x.lance": "data_dir",  # the custom data dir, whatever its name
    "contextware_data/notes.md": "data_dir",  # the default name is excluded anywhere
    "pkg/contextware_data/notes.md": "data_dir",
    ".hg/store.txt": "vcs",
    ".venv/lib/site.py": "virtualenv",
    "myenv/pyvenv.cfg": "virtualenv",  # detected by its marker, not its name
    "myenv/lib/site.py": "virtualenv",
    "env/bin/activate": "virtualenv",
    "infra/env/prod.tf": None,  # `env` without venv markers is ordinary config
    "node_modules/pkg/index.js": "dependencies",
    "web/bower_components/x.js": "dependencies",
    "src/__pycache__/main.cpython-311.pyc": "cache",
    ".pytest_cache/v/cache/nodeids": "cache",
    ".idea/workspace.xml": "editor",
    ".vscode/settings.json": None,
    "build/lib/x.py": "build_output",
    "dist/app.js": "build_output",
    "rust/target/debug/x.rs": "build_output",
    "pkg.egg-info/PKG-INFO": "build_output",
    "htmlcov/index.html": "build_output",
    "uv.lock": "lock_file",
    "web/package-lock.json": "lock_file",
    "web/yarn.lock": "lock_file",
    "Cargo.lock": "lock_file",
    "go.sum": "lock_file",
    "some.lock": "lock_file",
    "web/app.min.js": "minified",
    "web/app.min.css": "minified",
    "web/app.js.map": "minified",
    "assets/logo.png": "binary",
    "lib/native.so": "binary",
    "Main.class": "binary",
    "data/app.sqlite": "binary",
    ".env": "secrets",
    ".env.local": "secrets",
    ".env.example": None,
    "certs/server.pem": "secrets",
}


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
