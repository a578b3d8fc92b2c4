"""Who wrote a memory, from where: the provenance columns of facts, episodes and logs.

``origin`` is the door the memory came through (cli, mcp, hook, digest, gemini_digest, browser, merge),
``author`` the git identity of the person (``[user]`` of the repository's config, then the global
one; else the OS user), ``host`` the agent host (gemini, claude, cursor, ...) when known and
``session`` the host's session id when known.  An import keeps all four as the file gave them
(a teammate's memory stays theirs) and sets ``imported_at``: the mark that it came from a team file.

The entry points (the CLI, the MCP server, the hooks, the digests) set the door with ``use``; the
one write path (``records._save_rows``) calls ``fill``.  No git process is spawned: the author is
read from the config files once per process.
"""

from __future__ import annotations

import configparser
import contextlib
import getpass
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from contextware.memory.results import MemoryRow, Whose

ORIGINS = ("cli", "mcp", "hook", "digest", "gemini_digest", "browser", "import", "merge")
# The exported provenance fields (``imported_at`` and ``quarantine`` are this copy's own state).
FIELDS = ("origin", "author", "host", "session")
# What ``source`` said before provenance existed, as an origin (rows saved without ``use``).
_FROM_SOURCE = {"hook": "hook", "browser": "browser", "gemini": "gemini_digest", "digest": "digest"}


@dataclass(frozen=True)
class Door:
    """Where the memories written now come from."""

    origin: str | None = None
    host: str | None = None
    session: str | None = None


_NONE = Door()
_current: ContextVar[Door] = ContextVar("contextware_provenance", default=_NONE)


@contextlib.contextmanager
def use(origin: str | None = None, *, host: str | None = None, session: str | None = None) -> Iterator[Door]:
    """Memories saved inside the block carry this door (unset parts inherit the enclosing one)."""
    outer = _current.get()
    door = replace(
        outer,
        **{k: v for k, v in (("origin", origin), ("host", host), ("session", session)) if v},
    )
    token = _current.set(door)
    try:
        yield door
    finally:
        _current.reset(token)


def _user_of(path: Path) -> str | None:
    """``user.email`` (else ``user.name``) of one git config file, or None."""
    try:
        if not path.is_file() or path.stat().st_size > 1_000_000:
            return None
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        parser.read_string(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, configparser.Error):
        return None
    for section in parser.sections():
        if section.strip().lower() == "user":
            email = (parser.get(section, "email", fallback="") or "").strip().strip('"')
            name = (parser.get(section, "name", fallback="") or "").strip().strip('"')
            return email or name or None
    return None


def _git_dir(root: Path) -> Path | None:
    dot = root / ".git"
    if dot.is_dir():
        return dot
    try:
        line = dot.read_text(encoding="utf-8").strip() if dot.is_file() else ""
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = (root / line[len("gitdir:") :].strip()).resolve()
    try:  # a worktree: its config is the common directory's
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
        return (gitdir / common).resolve()
    except OSError:
        return gitdir


@lru_cache(maxsize=16)
def author(root: str | None) -> str | None:
    """The person saving: the repository's git identity, then the global one, else the OS user."""
    paths: list[Path] = []
    if root and (git := _git_dir(Path(root))) is not None:
        paths.append(git / "config")
    try:
        home = Path.home()
        paths += [home / ".gitconfig", home / ".config" / "git" / "config"]
    except RuntimeError:  # no home to resolve
        pass
    for path in paths:
        if found := _user_of(path):
            return found[:200]
    try:
        return getpass.getuser() or None
    except (OSError, KeyError, ImportError):
        return None


def fill(rows: list["MemoryRow"], root: str | None) -> None:
    """Set the provenance a new row lacks from the current door (call before the checksum)."""
    door = _current.get()
    who = author(root)
    for row in rows:
        if not row.get("origin"):
            row["origin"] = door.origin or _FROM_SOURCE.get(str(row.get("source") or ""), "cli")
        if row.get("author") is None:
            row["author"] = who
        if row.get("host") is None:
            row["host"] = door.host
        if row.get("session") is None:
            row["session"] = door.session or cast("str | None", row.get("session_id"))


def is_own(row: "MemoryRow | Whose", root: str | None) -> bool:
    """Whether the memory is the user's own: not imported, or written by the same author."""
    if row.get("imported_at") is None:
        return True
    return bool(row.get("author")) and row.get("author") == author(root)


def whose(row: "MemoryRow | Whose", root: str | None) -> str | None:
    """ "from alice@example.com, imported" for a memory that is not the user's own, else None."""
    if is_own(row, root):
        return None
    return f"from {row.get('author') or 'an unknown author'}, imported"
