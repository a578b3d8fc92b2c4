"""Answer an event once when two installs of one host (project and user scope) both run our hook:
the host starts both with the same event at the same moment, so the second finds the first's marker
(a file named by the event's hash and the host's process id, made with O_EXCL) and prints nothing.
A hook that had nothing to say gives its claim back (``release``): the same event sent again once
there is memory (a new project's first session start, say) is answered.  Standard library only:
this is on the hook's warm path."""

from __future__ import annotations

import hashlib
import os
import tempfile
import time

WINDOW_S = 3.0  # both installs' hooks start within this of each other; a later identical event is new
ANSWER_ONCE = frozenset({"SessionStart", "BeforeAgent", "UserPromptSubmit"})


def _marker_dir() -> str:
    return os.path.join(tempfile.gettempdir(), f"contextware-hooks-{os.getuid()}")


def _marker(data: str) -> str:
    key = hashlib.blake2b(f"{os.getppid()}\0{data}".encode("utf-8", "replace"), digest_size=12).hexdigest()
    return os.path.join(_marker_dir(), key)


def release(data: str, event: str) -> None:
    """Give back the claim of ``first_answer`` (the hook answered nothing)."""
    if event in ANSWER_ONCE:
        try:
            os.unlink(_marker(data))
        except OSError:
            pass


def first_answer(data: str, event: str) -> bool:
    """False when an identical ``event`` from the same host process was answered moments ago."""
    if event not in ANSWER_ONCE:
        return True
    try:
        where = _marker_dir()
        os.makedirs(where, mode=0o700, exist_ok=True)
        path = _marker(data)
        now = time.time()
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            if now - os.stat(path).st_mtime < WINDOW_S:
                return False
            os.utime(path)
            return True
        for name in os.listdir(where):  # old markers: a few at most, since each lives seconds
            old = os.path.join(where, name)
            if now - os.stat(old).st_mtime > 10 * WINDOW_S:
                os.unlink(old)
    except OSError:
        return True  # no marker can be kept: answer (twice rather than never)
    return True
