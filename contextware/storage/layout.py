"""Where a project's memory lives. Everything is resolved at call time from arguments and the caller's
``Settings`` (by default this process's, read at the call), never from module-level constants, so tests
and long-running processes see changes."""

from __future__ import annotations

import os
from pathlib import Path

from contextware.core.errors import ConfigError, UsageError
from contextware.core.settings import Settings, current_settings

DATA_DIR_NAME = "contextware_data"


def find_git_root(start: Path) -> Path | None:
    """The nearest ancestor holding ``.git`` (a directory, or a file for worktrees/submodules).

    Walking the tree avoids spawning ``git`` (~5 ms) on every call; hooks run on every turn.
    """
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def resolve_project_root(explicit: str | os.PathLike[str] | None = None, settings: Settings | None = None) -> Path:
    """``--project-root``, else ``CONTEXTWARE_PROJECT_ROOT``, else the git top level, else the cwd."""
    if explicit is not None and not str(explicit).strip():
        raise UsageError(
            "The project root is empty; give the project's folder (or leave it out).", code="bad_project_root"
        )
    raw = explicit or (settings or current_settings()).project_root
    if raw:
        shown = _shown(raw)
        try:
            root = Path(raw).expanduser()
            if not root.exists():
                raise UsageError(f"Project root {shown} does not exist.", code="bad_project_root")
            if not root.is_dir():
                raise UsageError(f"Project root {shown} is not a directory.", code="bad_project_root")
            return _not_the_file_system_root(root.resolve())
        except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop (RuntimeError on 3.11)
            raise UsageError(
                f"Project root {shown} cannot be used ({getattr(exc, 'strerror', None) or exc}).",
                code="bad_project_root",
            ) from None
    try:
        cwd = Path.cwd().resolve()
        return _not_the_file_system_root(find_git_root(cwd) or cwd)
    except FileNotFoundError:
        raise UsageError("The working directory no longer exists.", code="bad_project_root") from None
    except (OSError, RuntimeError) as exc:
        raise UsageError(
            f"The working directory cannot be used ({getattr(exc, 'strerror', None) or exc}).", code="bad_project_root"
        ) from None


def _shown(raw: object) -> str:
    """A path as an error shows it: at most 200 characters (a 5,000-character root is not repeated)."""
    text = os.fsdecode(raw) if isinstance(raw, (str, bytes, os.PathLike)) else str(raw)
    return text if len(text) <= 200 else f"{text[:120]}...{text[-60:]} ({len(text):,} characters)"


def utf8_path(path: Path, what: str) -> Path:
    """``path``, unless it holds bytes that are not UTF-8 (read from argv, the working directory or
    a variable as lone surrogates): LanceDB cannot open such a path, and a folder named so would be
    created before it failed.  Bad input: exit 2."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"{what} {_shown(str(path).encode('utf-8', 'surrogateescape').decode('utf-8', 'replace'))} holds bytes "
            "that are not UTF-8; use a folder whose name is UTF-8 text.",
            code="bad_encoding",
        ) from None
    return path


def _not_the_file_system_root(root: Path) -> Path:
    """The file system's root is no project: its memory would be written at ``/contextware_data``;
    a root whose name is not UTF-8 text is refused too (``utf8_path``)."""
    utf8_path(root, "The project root")
    if root == Path(root.anchor):
        raise UsageError(
            f"{root} is the root of the file system, not a project; name the project's folder "
            "(`--project-root DIR` or CONTEXTWARE_PROJECT_ROOT) or run from inside it.",
            code="bad_project_root",
        )
    return root


def main_worktree(root: Path) -> Path | None:
    """The main checkout of the repository whose linked worktree (``git worktree add``) is ``root``;
    None for a main checkout, a submodule, a bare repository's worktree or no repository.

    Read from the files git keeps (``.git`` is a file ``gitdir: <dir>``, and ``<dir>/commondir`` names
    the shared git dir) instead of spawning ``git rev-parse --git-common-dir``: hooks call this on
    every turn."""
    try:
        head = (root / ".git").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):  # a directory (a main checkout), missing, unreadable
        return None
    if not head.startswith("gitdir:"):
        return None
    gitdir = (root / head[len("gitdir:") :].strip()).resolve()
    try:
        common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except (OSError, UnicodeDecodeError):
        return None  # a submodule's git dir has no commondir: it is a project of its own
    if common.name != ".git" or not common.is_dir():
        return None  # a bare repository: no main checkout to share
    return common.parent


def worktrees_mode(main_root: Path, settings: Settings | None = None) -> str:
    """``shared`` (default) or ``separate``: ``$CONTEXTWARE_WORKTREES``, else ``"worktrees"`` in the
    main checkout's ``contextware_data/config.json``."""
    raw = (settings or current_settings()).worktrees
    if not raw:
        try:
            import json

            raw = json.loads((main_root / DATA_DIR_NAME / "config.json").read_text(encoding="utf-8")).get("worktrees")
        except (OSError, ValueError, AttributeError):
            raw = None
    if raw in (None, "", "shared"):
        return "shared"
    if raw == "separate":
        return "separate"
    raise ConfigError(f"worktrees must be shared or separate, not {raw!r}.", code="bad_config")


def resolve_data_dir(project_root: Path, settings: Settings | None = None) -> Path:
    """``CONTEXTWARE_DATA_DIR``, else ``<root>/contextware_data``; the linked worktrees of a repository
    share the main checkout's (one memory per repository) unless worktrees are ``separate``."""
    settings = settings or current_settings()
    raw = settings.data_dir
    if raw:
        try:
            return utf8_path(Path(raw).expanduser().resolve(), "CONTEXTWARE_DATA_DIR")
        except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
            raise UsageError(
                f"CONTEXTWARE_DATA_DIR={_shown(raw)} cannot be used ({getattr(exc, 'strerror', None) or exc}).",
                code="bad_data_dir",
            ) from None
    main = main_worktree(project_root)
    if main is not None and worktrees_mode(main, settings) == "shared":
        return inside(main, main / DATA_DIR_NAME)
    return inside(project_root, project_root / DATA_DIR_NAME)


def inside(root: Path, data_dir: Path) -> Path:
    """``data_dir``, unless it is a symlink leading out of ``root``: memory would silently be written
    (and read) elsewhere, so it is refused unless named explicitly by ``CONTEXTWARE_DATA_DIR``."""
    if not data_dir.is_symlink():
        return data_dir
    target = Path(os.path.realpath(data_dir))
    if target.is_relative_to(root.resolve()):
        return data_dir
    raise UsageError(
        f"{data_dir} is a symlink to {target}, outside the project; set CONTEXTWARE_DATA_DIR={target} "
        "to use it, or replace the link with a folder.",
        code="data_dir_outside_project",
    )


DB_DIR_NAME = "lancedb"  # the data dir's own database, under its write lock


def resolve_db_uri(data_dir: Path, settings: Settings | None = None) -> str:
    uri = (settings or current_settings()).db_uri
    if not uri:
        return str(data_dir / DB_DIR_NAME)
    utf8_path(Path(uri), "CONTEXTWARE_DB_URI")
    return uri


def is_local_uri(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")
