"""Answer an event once when two installs of one host (project and user scope) both run our hook:
the host starts both with the same event at the same moment, so the second finds the first's marker
(a file named by the event's hash and the host's process id, made with O_EXCL, holding the first's
start time) and prints nothing.  Start times are the processes' own (``/proc/self/stat``, where
there is one): a loaded machine may let one hook reach this check seconds after the other, but
both were started together.  A hook that had nothing to say gives its claim back (``release``):
the same event sent again once there is memory (a new project's first session start, say) is
answered.  Standard library only, and not ``hashlib`` or ``tempfile`` (OpenSSL's library, ``shutil``
and ``random``: ~6 ms a process): this is on the hook's warm path."""

from __future__ import annotations

import os
import time

try:  # the BLAKE2 that hashlib itself hands out, without loading OpenSSL for it
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

WINDOW_S = 3.0  # both installs' hooks start within this of each other; a later identical event is new
ANSWER_ONCE = frozenset({"SessionStart", "BeforeAgent", "UserPromptSubmit"})


def _marker_dir(temp_dir: str | None) -> str:
    """The markers' folder in ``temp_dir`` (``Settings.temp_dir``: TMPDIR, TEMP or TMP, as
    ``tempfile.gettempdir`` looks first), else in /tmp."""
    root = os.path.abspath(temp_dir) if temp_dir and os.path.isdir(temp_dir) else "/tmp"
    return os.path.join(root, f"contextware-hooks-{os.getuid()}")


def _marker(data: str, temp_dir: str | None) -> str:
    key = blake2b(f"{os.getppid()}\0{data}".encode("utf-8", "replace"), digest_size=12).hexdigest()
    return os.path.join(_marker_dir(temp_dir), key)


def release(data: str, event: str, temp_dir: str | None = None) -> None:
    """Give back the claim of ``first_answer`` (the hook answered nothing)."""
    if event in ANSWER_ONCE:
        try:
            os.unlink(_marker(data, temp_dir))
        except OSError:
            pass


def started() -> str:
    """When this process started: ``proc:<seconds since boot>`` from ``/proc/self/stat``, else
    ``wall:<now>`` (the moment of the check, where there is no ``/proc``)."""
    try:
        with open("/proc/self/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return f"proc:{int(fields[19]) / os.sysconf('SC_CLK_TCK'):.2f}"
    except (OSError, ValueError, IndexError):
        return f"wall:{time.time():.2f}"


def _same_moment(mine: str, theirs: str, age: float) -> bool:
    """Were both hooks started within ``WINDOW_S``?  A marker without a comparable start time
    (half written, or by an older version) is judged by its age, as the marker was made."""
    kind, _, value = mine.partition(":")
    other_kind, _, other = theirs.partition(":")
    try:
        if kind == other_kind:
            return abs(float(value) - float(other)) < WINDOW_S
    except ValueError:
        pass
    return age < WINDOW_S


def first_answer(data: str, event: str, temp_dir: str | None = None) -> bool:
    """False when an identical ``event`` from the same host process was answered by a hook started
    at the same moment.  ``temp_dir``: where the markers go (``_marker_dir``)."""
    if event not in ANSWER_ONCE:
        return True
    try:
        where = _marker_dir(temp_dir)
        os.makedirs(where, mode=0o700, exist_ok=True)
        path = _marker(data, temp_dir)
        now, mine = time.time(), started()
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            with open(path, encoding="ascii", errors="replace") as f:
                theirs = f.read(64)
            if _same_moment(mine, theirs, now - os.stat(path).st_mtime):
                return False
            with open(path, "w", encoding="ascii") as f:  # a later identical event: answered, and marked
                f.write(mine)
            return True
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(mine)
        for name in os.listdir(where):  # old markers: a few at most, since each lives seconds
            old = os.path.join(where, name)
            if now - os.stat(old).st_mtime > 10 * WINDOW_S:
                os.unlink(old)
    except OSError:
        return True  # no marker can be kept: answer (twice rather than never)
    return True
