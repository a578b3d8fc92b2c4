"""A local table's files checked by type before Lance opens them, and copied aside without following
anything out of the table.

Lance writes only regular files and folders.  A data file or manifest that is a FIFO, a device, a
socket or a symlink was put there by something else: opening a FIFO blocks for ever (every door,
the prompt hook included, hung inside Lance's open), and a symlink can lead anywhere (a repair that
copied one pointing at ``/dev/zero`` wrote 71 GB).  ``check`` lstat-s the entries of the table's
folders and caches the answer per folder state (their mtimes change when an entry is added, removed
or replaced), so an unchanged table costs a few ``stat`` calls per open.  ``copy_aside`` copies only
regular files, each at most its own size, after checking that the disk has room for them.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from contextware.core.errors import DamagedDataError, DiskFullError

SUBFOLDERS = ("data", "_versions", "_deletions", "_transactions", "_indices")
SPARE_BYTES = 64 << 20  # room left on the disk after a copy, for the rewrite that follows it
_checked: dict[str, tuple[tuple[int, ...], list[str], tuple[int, ...]]] = {}


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _base_folders(folder: str) -> list[str]:
    return [folder, *(os.path.join(folder, sub) for sub in SUBFOLDERS)]


def _index_folders(folder: str) -> list[str]:
    try:
        with os.scandir(os.path.join(folder, "_indices")) as entries:
            return [e.path for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _folders(folder: str) -> list[str]:
    """The table's folders whose entries Lance reads: its own, the known subfolders, each index's."""
    return [*_base_folders(folder), *_index_folders(folder)]


def _state(folders: list[str]) -> tuple[int, ...]:
    state: list[int] = []
    for path in folders:
        try:
            st = os.lstat(path)
            state += [st.st_mode, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size]
        except OSError:
            state += [0, 0, 0, 0, 0]
    return tuple(state)


def irregular(folder: str | Path) -> list[tuple[str, str]]:
    """(path relative to the table folder, what it is) of every entry that Lance would open and that
    is not a regular file or a folder, including the folders themselves when they are symlinks."""
    folder = str(folder)
    found: list[tuple[str, str]] = []
    for path in _folders(folder):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        rel = os.path.relpath(path, folder)
        if not stat.S_ISDIR(st.st_mode):
            found.append((rel, _kind(st.st_mode)))
            continue
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    mode = entry.stat(follow_symlinks=False).st_mode
                    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                        found.append((os.path.join(rel, entry.name) if rel != "." else entry.name, _kind(mode)))
        except OSError:
            continue
    return found


def check(folder: str | Path, name: str, hint: str) -> None:
    """Raise ``damaged_data`` (naming ``hint``, the repair command) when an entry of the table folder
    is not a regular file; nothing is opened.  Cached until one of its folders changes."""
    folder = str(folder)
    base = _state(_base_folders(folder))
    cached = _checked.get(folder)
    if cached is not None and cached[0] == base and _state(cached[1]) == cached[2]:
        return  # no entry added, removed or replaced since the last check (~10 stat calls)
    bad = irregular(folder)
    if bad:
        rel, what = bad[0]
        raise DamagedDataError(
            f"The {name} table's file {rel} is {what}, not a file Lance wrote; it is not opened; {hint}."
        )
    indexes = _index_folders(folder)
    _checked[folder] = (base, indexes, _state(indexes))


def move_irregular(folder: Path, aside: Path) -> list[str]:
    """Move every irregular entry of the table folder into ``aside`` by renaming it (never opened,
    never followed); the relative paths moved.  DamagedDataError when one cannot be renamed."""
    moved: list[str] = []
    for rel, what in irregular(folder):
        if rel in ("", "."):
            continue
        target = aside / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(folder / rel, target)
        except OSError as exc:
            raise DamagedDataError(
                f"The table's file {rel} is {what} and could not be moved aside ({exc.strerror}); remove it by hand."
            ) from None
        moved.append(rel)
    _checked.pop(str(folder), None)
    return moved


def _regular_files(folder: Path) -> list[tuple[Path, int]]:
    files: list[tuple[Path, int]] = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        for entry in names:
            path = Path(root) / entry
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                files.append((path, st.st_size))
        dirs[:] = [d for d in dirs if stat.S_ISDIR(os.lstat(os.path.join(root, d)).st_mode)]
    return files


def copy_aside(folder: Path, backup: Path) -> int:
    """Copy the table's regular files under ``backup`` (symlinks, FIFOs and devices are skipped, never
    followed), each at most the size it had when listed; the bytes written.  DiskFullError before
    anything is written when the disk lacks room for them (plus ``SPARE_BYTES``)."""
    files = _regular_files(folder)
    total = sum(size for _, size in files)
    backup.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(backup).free
    if free < total + SPARE_BYTES:
        raise DiskFullError(
            f"The disk has {free >> 20} MB free and the repair needs {(total + SPARE_BYTES) >> 20} MB to keep a copy "
            f"of the table first; nothing was changed: free some space and try again."
        )
    written = 0
    for path, size in files:
        target = backup / path.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        written += _copy_bounded(path, target, size)
    return written


def _copy_bounded(source: Path, target: Path, size: int) -> int:
    """Copy at most ``size`` bytes of a regular file (re-checked once open: it may have been swapped)."""
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 0
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            left = size
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                os.write(out, chunk)
                left -= len(chunk)
            return size - left
        finally:
            os.close(out)
    finally:
        os.close(fd)
