"""Finished turns waiting to be saved: ``<data_dir>/hook-spool.jsonl``, one JSON line per turn.

A capture hook (AfterAgent, PreCompress) appends its event here and returns at once; the resident
service drains the file when poked and when it starts, and an in-process hook drains it too.  A
drainer takes the spool's lock, moves the file aside and replays every line; a drainer that dies
half-way leaves the moved file for the next one, and replaying a line twice writes nothing twice
(saves are keyed by their content).  A line that cannot be replayed (not JSON, nested too deep
for the parser, or failing in its replay) is moved to ``hook-spool.bad.jsonl`` (kept for a person,
up to ``MAX_QUARANTINE`` bytes) and the rest are saved: one poisoned line never stops a drain or a
service start.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path

from contextware.core.json_types import JsonObject
from contextware.service.messages import SpoolEntry

SPOOL = "hook-spool.jsonl"
DRAINING = "hook-spool.draining.jsonl"
QUARANTINE = "hook-spool.bad.jsonl"
MAX_QUARANTINE = 16 << 20


def quarantine(data_dir: Path, line: bytes) -> None:
    """Keep a line that could not be replayed aside, for a person to look at (never replayed)."""
    path = data_dir / QUARANTINE
    try:
        if path.exists() and path.stat().st_size + len(line) > MAX_QUARANTINE:
            return
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.rstrip(b"\n") + b"\n")
        finally:
            os.close(fd)
    except OSError:
        pass


def _entry(line: bytes) -> JsonObject | None:
    """The entry a line holds, or None (not JSON, too deep to parse safely, not an object)."""
    from contextware.service.protocol import too_deep

    if too_deep(line):
        return None
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return entry if isinstance(entry, dict) else None


def append(data_dir: Path, entry: SpoolEntry) -> None:
    """Add one entry with a single ``O_APPEND`` write (lines of concurrent writers never mix), on disk
    before this returns (fsync, ~3 ms): the hook then exits and the turn exists nowhere else.
    Raises OSError (a read-only data dir, say)."""
    try:
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (non-UTF-8 bytes in a path or variable): escaped
        line = (json.dumps(entry) + "\n").encode("ascii")
    fd = os.open(data_dir / SPOOL, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def pending(data_dir: Path) -> bool:
    return (data_dir / SPOOL).exists() or (data_dir / DRAINING).exists()


def drain(data_dir: Path, replay: Callable[[JsonObject], None]) -> int:
    """Replay every spooled entry once; the number replayed.  Raises OSError when the spool cannot
    be locked or moved (it then stays for the next drainer)."""
    if not pending(data_dir):
        return 0
    lock_dir = data_dir / "locks"
    lock_dir.mkdir(exist_ok=True)
    fd = os.open(lock_dir / "spool.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        done = 0
        draining = data_dir / DRAINING
        for _ in range(2):  # first what a dead drainer left, then the current spool
            if not draining.exists():
                try:
                    os.replace(data_dir / SPOOL, draining)
                except FileNotFoundError:
                    break
            for line in draining.read_bytes().splitlines():
                if not line.strip():
                    continue
                entry = _entry(line)  # None also for a torn line (a writer killed mid-write)
                if entry is None:
                    quarantine(data_dir, line)
                    continue
                try:
                    replay(entry)
                except Exception:  # noqa: BLE001 - one bad entry must not cost the others their save
                    quarantine(data_dir, line)
                    continue
                done += 1
            draining.unlink()
        return done
    finally:
        os.close(fd)
