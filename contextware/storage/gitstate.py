"""Which branch and commit a checkout is on, and what its history holds, read from ``.git``.

``head`` is on the hot path (every save, every prompt hook): it reads ``HEAD`` and the ref it
names from the files git keeps (loose refs, then ``packed-refs``; a linked worktree's ``.git`` is a
file ``gitdir: …`` whose ``commondir`` holds the shared refs) and never spawns git.  ``reflog``
reads a branch's log the same way.  ``ancestors`` is the one place that runs git: one
``git rev-list HEAD`` per HEAD commit, kept in memory per repository and commit, so a long-lived
process (the resident service) answers every later recall on that HEAD from memory.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")  # sha1, or sha256 repositories
HEADS = "refs/heads/"
MAX_REF_BYTES = 4096  # a ref or HEAD file is one line; anything longer is not one
MAX_REFLOG_BYTES = 8 * 1024 * 1024
ANCESTRY_TIMEOUT_S = 30.0
_MAX_CACHED = 8  # HEAD commits whose ancestry is kept (switching back and forth reuses them)


@dataclass(frozen=True)
class GitDirs:
    """``git``: this checkout's git dir (HEAD lives here); ``common``: the shared one (refs, logs)."""

    git: Path
    common: Path


@dataclass(frozen=True)
class Head:
    """Where a checkout is: ``branch`` (None when detached or not a repository) and ``commit``
    (None on an unborn branch or outside a repository)."""

    branch: str | None = None
    commit: str | None = None
    dirs: GitDirs | None = None


def _read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes, else None.  Opened without blocking
    and judged by its stat first: a named pipe planted as ``HEAD`` or a ref would otherwise hang
    every save and prompt hook."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, limit + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        data = b"".join(chunks)
        return None if len(data) > limit else data
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_small(path: Path) -> str | None:
    data = _read_regular(path, MAX_REF_BYTES)
    if data is None:
        return None
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None


def git_dirs(root: Path) -> GitDirs | None:
    """The git dirs of the checkout at ``root``: ``.git`` itself, or the dir a ``.git`` file names."""
    dot = root / ".git"
    if dot.is_dir():
        return GitDirs(dot, dot)
    text = _read_small(dot)
    if not text or not text.startswith("gitdir:"):
        return None
    git = (root / text[len("gitdir:") :].strip()).resolve()
    common_text = _read_small(git / "commondir")
    common = (git / common_text).resolve() if common_text else git
    return GitDirs(git, common) if git.is_dir() else None


def resolve_ref(dirs: GitDirs, ref: str) -> str | None:
    """The commit a full ref name points at: loose ref file, else ``packed-refs`` (symbolic refs
    are followed a few steps)."""
    for _ in range(5):
        if not ref.startswith("refs/") or ".." in ref:
            return None
        # per-worktree refs (refs/bisect, refs/worktree) live in the worktree's own dir
        text = _read_small(dirs.git / ref) if dirs.git != dirs.common else None
        text = text or _read_small(dirs.common / ref)
        if text is None:
            return _packed(dirs.common, ref)
        if text.startswith("ref:"):
            ref = text[4:].strip()
            continue
        return text if SHA.match(text) else None
    return None


def _packed(common: Path, ref: str) -> str | None:
    """``ref``'s commit in ``packed-refs``, parsed once per version of the file (it can hold
    thousands of refs, and ``head`` runs on every prompt)."""
    path = common / "packed-refs"
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (st.st_mtime_ns, st.st_size, st.st_ino)
    known = _packed_refs.get(str(path))
    if known is None or known[0] != key:
        data = _read_regular(path, MAX_REFLOG_BYTES)
        refs: dict[str, str] = {}
        for line in (data or b"").decode("utf-8", "replace").splitlines():
            if line.startswith(("#", "^")):
                continue
            sha, _, name = line.strip().partition(" ")
            if SHA.match(sha):
                refs[name] = sha
        if len(_packed_refs) > 64:
            _packed_refs.clear()
        known = _packed_refs[str(path)] = (key, refs)
    return known[1].get(ref)


_packed_refs: dict[str, tuple[tuple[int, int, int], dict[str, str]]] = {}


def head(root: Path) -> Head:
    """The branch and commit the checkout at ``root`` is on (``Head()`` outside a repository).

    A detached HEAD has the commit only, except during a rebase, when the branch being rebased
    (``rebase-merge/head-name``) is named: what is learned mid-rebase belongs to that branch."""
    dirs = git_dirs(root)
    if dirs is None:
        return Head()
    text = _read_small(dirs.git / "HEAD")
    if not text:
        return Head(dirs=dirs)
    if text.startswith("ref:"):
        ref = text[4:].strip()
        branch = ref[len(HEADS) :] if ref.startswith(HEADS) else None
        return Head(branch, resolve_ref(dirs, ref), dirs)
    commit = text if SHA.match(text) else None
    for state in ("rebase-merge", "rebase-apply"):
        name = _read_small(dirs.git / state / "head-name")
        if name and name.startswith(HEADS):
            return Head(name[len(HEADS) :], commit, dirs)
    return Head(None, commit, dirs)


def branch_tip(dirs: GitDirs, branch: str) -> str | None:
    return resolve_ref(dirs, HEADS + branch)


class LogEntry(NamedTuple):
    """One line of a branch's reflog: the commit it pointed at from then, when (seconds since the
    epoch), and whether this line made the branch (``branch: Created from …``) rather than moved it."""

    commit: str
    at: float
    created: bool


ZERO = "0" * 40


def reflog(dirs: GitDirs, branch: str) -> list[LogEntry]:
    """Every commit the branch pointed at, oldest first; empty when git keeps no log of it (the
    branch was deleted, or never existed here)."""
    if ".." in branch or branch.startswith("/") or "\0" in branch:
        return []
    path = dirs.common / "logs" / "refs" / "heads" / branch
    try:
        st = path.stat()
    except OSError:
        return []
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    known = _reflogs.get(str(path))
    if known is not None and known[0] == stamp:
        return known[1]  # unchanged since read: a log only grows (or is rewritten, a new inode)
    data = _read_regular(path, MAX_REFLOG_BYTES)
    if data is None:
        return []
    text = data.decode("utf-8", "replace")
    out: list[LogEntry] = []
    for line in text.splitlines():
        head_part, _, message = line.partition("\t")
        meta = head_part.split(" ")
        # "<old> <new> Name <email> <seconds> <zone>": the name may hold spaces, the tail does not
        if len(meta) >= 4 and SHA.match(meta[1]) and meta[-2].isdigit():
            made = meta[0].strip("0") == "" and not message.startswith("commit")
            out.append(LogEntry(meta[1], float(meta[-2]), made))
    if len(_reflogs) > 256:
        _reflogs.clear()
    _reflogs[str(path)] = (stamp, out)
    return out


_reflogs: dict[str, tuple[tuple[int, int, int], list[LogEntry]]] = {}


_ancestry: dict[tuple[str, str], frozenset[str]] = {}
_lock = threading.Lock()
runs = 0  # git processes started by ``ancestors`` (tests check the cache)


def ancestors(root: Path, dirs: GitDirs, commit: str) -> frozenset[str]:
    """Every commit reachable from ``commit`` (itself included): one ``git rev-list``, cached per
    repository and commit.  Empty when git cannot answer (no git, a shallow or damaged history)."""
    global runs
    key = (str(dirs.common), commit)
    with _lock:
        known = _ancestry.get(key)
    if known is not None:
        return known
    import subprocess

    try:
        runs += 1
        done = subprocess.run(
            ["git", "--git-dir", str(dirs.git), "rev-list", commit],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=ANCESTRY_TIMEOUT_S,
            check=False,
        )
        found = frozenset(done.stdout.split()) if done.returncode == 0 else frozenset()
    except (OSError, subprocess.SubprocessError):
        found = frozenset()
    with _lock:
        if len(_ancestry) >= _MAX_CACHED:
            _ancestry.pop(next(iter(_ancestry)))
        _ancestry[key] = found
    return found


def squashed_into(root: Path, dirs: GitDirs, commit: str, head: str) -> bool:
    """Whether the changes ``commit`` made since it forked from ``head``'s history are all in
    ``head`` (every file it changed has, in ``head``, the content it has in ``commit``): the mark a
    squash merge leaves.  Three git processes; False whenever git cannot tell (the commit was
    garbage-collected, no common history, no file changed).  Conservative: a file changed again
    after the squash hides it."""
    import subprocess

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "--git-dir", str(dirs.git), *args],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=ANCESTRY_TIMEOUT_S,
            check=False,
        )

    try:
        base = run("merge-base", commit, head)
        if base.returncode != 0 or not base.stdout.strip():
            return False
        changed = run("diff", "--name-only", "-z", base.stdout.strip(), commit)
        files = [f for f in changed.stdout.split("\0") if f]
        if changed.returncode != 0 or not files:
            return False
        same = run("diff", "--quiet", commit, head, "--", *files)
        return same.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
