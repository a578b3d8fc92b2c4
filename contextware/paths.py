"""Where things live. Everything is resolved at call time from arguments and the environment,
never from module-level constants, so tests and long-running processes see changes."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import UsageError

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


def contextware_home() -> Path:
    """Per-user state: the registry of known projects."""
    raw = os.environ.get("CONTEXTWARE_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".contextware"


def relative_posix(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


GEMINI_WORKDIR = "contextware-gemini-summaries"


def gemini_workdir() -> Path:
    """An empty working folder for Gemini calls that need no project (file summaries, summaries of
    answers): run in the project, Gemini CLI would add the project's file tree and GEMINI.md to every
    request and list each call among the user's sessions."""
    path = contextware_home() / GEMINI_WORKDIR
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_atomic(path: Path, text: str, *, keep_mode: bool = False) -> None:
    """Write ``text`` to ``path`` so that readers see the old or the new content, never a part:
    a uniquely named temporary file in the same folder, flushed to disk, then renamed.  Raises
    OSError (the temporary file is removed)."""
    import secrets
    import shutil

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".tmp-{path.name}.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if keep_mode and path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
