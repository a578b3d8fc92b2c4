"""Running a helper program (Gemini CLI, uv, git) in its own process group with a timeout that
stops the whole group: launchers such as ``gemini`` ignore SIGTERM and wait for their children."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

KILL_GRACE_SECONDS = 3.0


def kill_group(proc: subprocess.Popen, grace: float = KILL_GRACE_SECONDS) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left."""
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
        return


def run_in_group(cmd: list[str], *, timeout: float, stdin: bytes | None = None, cwd: str | Path | None = None,
                 env: Mapping[str, str] | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr).  Raises OSError when the program cannot start and
    ``subprocess.TimeoutExpired`` (with the group's ``pid``) after stopping the group when it runs
    past ``timeout``; an
    interruption (Ctrl-C) stops the group too."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=dict(env) if env is not None else None, start_new_session=True,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(input=stdin, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        kill_group(proc)
        proc.communicate()
        exc.pid = proc.pid  # type: ignore[attr-defined]  # lets callers check that the group is gone
        raise
    except BaseException:
        kill_group(proc, grace=1.0)
        raise
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
