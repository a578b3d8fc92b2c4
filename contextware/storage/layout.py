"""Where a project's memory lives. Everything is resolved at call time from arguments and the environment,
never from module-level constants, so tests and long-running processes see changes."""

from __future__ import annotations

import os
from pathlib import Path

from contextware.errors import UsageError

DATA_DIR_NAME = "contextware_data"


def find_git_root(start: Path) -> Path | None:
    """The nearest ancestor holding ``.git`` (a directory, or a file for worktrees/submodules).

    Walking the tree avoids spawning ``git`` (~5 ms) on every call; hooks run on every turn.
    """
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def resolve_project_root(explicit: str | os.PathLike | None = None) -> Path:
    """``--project-root``, else ``CONTEXTWARE_PROJECT_ROOT``, else the git top level, else the cwd."""
    if explicit is not None and not str(explicit).strip():
        raise UsageError(
            "--project-root is empty; give the project's folder (or leave the option out).", code="bad_project_root"
        )
    raw = explicit or os.environ.get("CONTEXTWARE_PROJECT_ROOT")
    if raw:
        root = Path(raw).expanduser()
        if not root.exists():
            raise UsageError(f"Project root {raw} does not exist.", code="bad_project_root")
        if not root.is_dir():
            raise UsageError(f"Project root {raw} is not a directory.", code="bad_project_root")
        return root.resolve()
    try:
        cwd = Path.cwd().resolve()
    except FileNotFoundError:
        raise UsageError("The working directory no longer exists.", code="bad_project_root") from None
    return find_git_root(cwd) or cwd


def resolve_data_dir(project_root: Path) -> Path:
    raw = os.environ.get("CONTEXTWARE_DATA_DIR")
    return Path(raw).expanduser().resolve() if raw else project_root / DATA_DIR_NAME


def resolve_db_uri(data_dir: Path) -> str:
    return os.environ.get("CONTEXTWARE_DB_URI") or str(data_dir / "lancedb")


def is_local_uri(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")
