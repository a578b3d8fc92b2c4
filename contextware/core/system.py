"""The operating system, as every domain needs it: child processes, signals and files.

- ``run_in_group``: a helper program (Gemini CLI, uv, git) in its own process group with a timeout
  that stops the whole group (launchers such as ``gemini`` ignore SIGTERM and wait for their children);
- ``stop_on_signals``: SIGINT/SIGTERM turned into a flag, for long runs (crawl, watch) that must stop
  between steps rather than in the middle of a write;
- ``write_atomic``: files that readers see whole or not at all;
- ``contextware_home``: the per-user state folder.

Standard library only: hooks import it on their warm path.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

from contextware.core.settings import Settings, current_settings

KILL_GRACE_SECONDS = 3.0
CANCEL_POLL_SECONDS = 0.2


class Cancelled(Exception):
    """``run_in_group``'s ``cancel`` event was set: the group was stopped before it finished."""


GROUP_GONE_WAIT_SECONDS = 2.0


def kill_group(proc: subprocess.Popen[bytes], grace: float = KILL_GRACE_SECONDS) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left, and wait (briefly) until the
    members are reaped: a SIGKILLed grandchild lives on as a zombie until its new parent reaps it,
    and a caller that returns "stopped" should mean nothing of the group is left."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:  # the leader is gone; make sure no group member survives
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        break
    _wait_group_gone(proc.pid)


def _wait_group_gone(pgid: int, limit: float = GROUP_GONE_WAIT_SECONDS) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.02)


def run_in_group(
    cmd: list[str],
    *,
    timeout: float,
    stdin: bytes | None = None,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
) -> tuple[int, str, str]:
    """(exit code, stdout, stderr).  Raises OSError when the program cannot start and
    ``subprocess.TimeoutExpired`` (with the group's ``pid``) after stopping the group when it runs
    past ``timeout``.  An interruption (Ctrl-C) stops the group too, and so does setting ``cancel``
    (from another thread: a crawl's worker threads cannot receive signals), which raises Cancelled."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        start_new_session=True,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + timeout
    try:
        while True:
            if cancel is not None and cancel.is_set():
                kill_group(proc, grace=1.0)
                proc.communicate()
                raise Cancelled(f"stopped {cmd[0]} on request")
            left = deadline - time.monotonic()
            try:
                # communicate() may be called again after a timeout without losing output (the
                # input is given once: the retry goes on sending what is left of it)
                out, err = proc.communicate(
                    input=stdin, timeout=max(0.0, min(left, CANCEL_POLL_SECONDS) if cancel is not None else left)
                )
                break
            except subprocess.TimeoutExpired:
                stdin = None
                if time.monotonic() < deadline:
                    continue
                raise
    except subprocess.TimeoutExpired as exc:
        kill_group(proc)
        proc.communicate()
        exc.pid = proc.pid  # type: ignore[attr-defined]  # lets callers check that the group is gone
        raise
    except BaseException:
        if proc.poll() is None:
            kill_group(proc, grace=1.0)
        raise
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


# -- signals ------------------------------------------------------------------------------------


def stop_on_signals(stop: threading.Event) -> Callable[[], None]:
    """Make SIGINT and SIGTERM set ``stop`` and return the function that restores the previous
    handlers.  Only the main thread can install handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, lambda _signum, _frame: stop.set())

    def restore() -> None:
        for s, handler in previous.items():
            signal.signal(s, handler)

    return restore


# -- files --------------------------------------------------------------------------------------
def contextware_home(settings: Settings | None = None) -> Path:
    """Per-user state: the registry of known projects, ``settings.home`` (``CONTEXTWARE_HOME``), else
    ``~/.contextware``; ``settings``: the caller's, by default this process's."""
    home = (settings or current_settings()).home
    return Path(home).expanduser() if home else Path.home() / ".contextware"


def relative_posix(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


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


# The most bytes a command reads from standard input or an ``@file`` unless told less: above every
# text limit (max_log_chars is 2,000,000 characters, at most 4 bytes each).
MAX_INPUT_BYTES = 8 * 1024 * 1024


def read_limited(stream: BinaryIO, limit: int, what: str) -> bytes:
    """Read ``stream`` to its end, but never more than ``limit`` bytes (``/dev/zero`` has no end):
    more is a UsageError saying so, and nothing is kept."""
    from contextware.core.errors import UsageError

    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = stream.read(min(1 << 20, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    raise UsageError(f"{what} is larger than the {limit}-byte limit; nothing was saved.", code="too_large")


def fewer_heaps() -> None:
    """At most two glibc heaps (``M_ARENA_MAX``) for the process's threads (LanceDB's runtime,
    onnxruntime, requests): each thread that allocates otherwise gets a heap of its own, up to 8 per
    core, each keeping what it freed.  For the resident service and bulk writers; call it before those
    threads start.  Measured at 50,000 log rows: a warm service held 524-605 MB with a heap per thread,
    429-446 MB with two, recall as fast."""
    import sys

    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL("libc.so.6").mallopt(-8, 2)  # M_ARENA_MAX
        except (OSError, AttributeError):  # not glibc (musl): one heap already
            pass
