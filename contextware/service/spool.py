"""Finished turns waiting to be saved: ``<data_dir>/hook-spool.jsonl``, one JSON line per turn.

A capture hook (AfterAgent, PreCompress) appends its event here and returns at once; the resident
service drains the file when poked and when it starts, and an in-process hook drains it too.  A
drainer takes the spool's lock, moves the file aside and replays every line; a drainer that dies
half-way leaves the moved file for the next one, and replaying a line twice writes nothing twice
(saves are keyed by their content).  Standard library only.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

SPOOL = "hook-spool.jsonl"
DRAINING = "hook-spool.draining.jsonl"


def append(data_dir: Path, entry: dict[str, Any]) -> None:
    """Add one entry with a single ``O_APPEND`` write (lines of concurrent writers never mix), on disk
    before this returns (fsync, ~3 ms): the hook then exits and the turn exists nowhere else.
    Raises OSError (a read-only data dir, say)."""
    line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(data_dir / SPOOL, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def pending(data_dir: Path) -> bool:
    return (data_dir / SPOOL).exists() or (data_dir / DRAINING).exists()


def drain(data_dir: Path, replay: Callable[[dict[str, Any]], None]) -> int:
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
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # a torn line (a writer killed mid-write): nothing to replay
                if isinstance(entry, dict):
                    replay(entry)
                    done += 1
            draining.unlink()
        return done
    finally:
        os.close(fd)
