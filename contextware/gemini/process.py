"""Starting Gemini CLI: one process group per run (the launcher ignores signals, so stopping a run
kills the group), stdin always given and closed, a timeout and a cancel event; management subcommands
(``run_cli``); and the sliding-window rate limit shared by every process of a data dir.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from contextware.core.errors import GeminiError
from contextware.core.system import Cancelled, run_in_group, write_atomic
from contextware.gemini.availability import resolve_binary
from contextware.gemini.output import meaningful_lines, one_sentence

RATE_WINDOW_SECONDS = 60.0


def run_process(
    cmd: list[str],
    *,
    stdin_text: str | None,
    cwd: str | Path | None,
    env: dict[str, str],
    timeout: float,
    cancel: threading.Event | None = None,
) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of one Gemini CLI process in its own group; a missing binary, a
    timeout or ``cancel`` raise GeminiError (``gemini_not_installed``, ``timeout``, ``interrupted``)."""
    try:
        return run_in_group(
            cmd,
            stdin=stdin_text.encode("utf-8") if stdin_text is not None else None,
            cwd=cwd,
            env=env,
            timeout=timeout,
            cancel=cancel,
        )
    except Cancelled:
        raise cancelled() from None
    except OSError as exc:
        raise GeminiError(
            f"Gemini CLI could not be started: {exc.strerror or exc}.", code="gemini_not_installed"
        ) from None
    except subprocess.TimeoutExpired as exc:
        raise GeminiError(
            f"Gemini CLI did not finish within {timeout:g} seconds and was stopped.",
            code="timeout",
            details={"timeout": timeout, "pid": getattr(exc, "pid", None)},
        ) from None


def cancelled() -> GeminiError:
    """The error of a run stopped by its cancel event."""
    return GeminiError("Gemini CLI was stopped because the run was interrupted.", code="interrupted")


def pause(seconds: float, cancel: threading.Event | None) -> bool:
    """Sleep; True when ``cancel`` was set meanwhile."""
    if cancel is None:
        time.sleep(seconds)
        return False
    return cancel.wait(seconds)


class RateLimiter:
    """A sliding-window limit shared by every process using ``state_dir`` (file + file lock)."""

    def __init__(self, state_dir: Path, per_minute: int, window: float | None = None) -> None:
        self.state_dir = Path(state_dir)
        self.limit = max(1, int(per_minute))
        self.window = RATE_WINDOW_SECONDS if window is None else window
        self.path = self.state_dir / "gemini_rate.json"
        self.lock_path = self.state_dir / "gemini_rate.lock"

    def _load(self) -> list[float]:
        try:
            stamps = json.loads(self.path.read_text())
            return sorted(float(s) for s in stamps if isinstance(s, (int, float)))
        except (OSError, ValueError, TypeError):
            return []

    def acquire(self, cancel: threading.Event | None = None) -> float:
        """Block until a call may start (or ``cancel`` is set: GeminiError); returns the seconds waited."""
        from filelock import FileLock

        self.state_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        while True:
            with FileLock(str(self.lock_path)):
                now = time.time()
                stamps = [s for s in self._load() if now - s < self.window and s <= now + 1]
                if len(stamps) < self.limit:
                    stamps.append(now)
                    write_atomic(self.path, json.dumps(stamps))
                    return time.monotonic() - started
                wait = stamps[len(stamps) - self.limit] + self.window - now
            if pause(min(max(wait, 0.01), 1.0), cancel):
                raise cancelled()


@dataclass
class CliRun:
    """The outcome of a non-prompt subcommand such as ``gemini extensions link DIR``."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def message(self) -> str:
        """The CLI's last meaningful line (its error, or its confirmation), without noise."""
        for text in (self.stderr, self.stdout):
            lines = meaningful_lines(text)
            if lines:
                return one_sentence(lines[-1])
        return ""


def run_cli(
    args: Sequence[str],
    *,
    cwd: str | Path | None = None,
    binary: str | None = None,
    timeout: float = 120,
    extra_env: Mapping[str, str] | None = None,
) -> CliRun:
    """Run ``gemini ARGS...`` (a management subcommand, not a prompt) with stdin from /dev/null, in its
    own process group, stopped after ``timeout`` seconds.  A non-zero exit is returned, not raised;
    a missing binary (``gemini_not_installed``) or a timeout (``timeout``) raise GeminiError."""
    env = {**os.environ, **(extra_env or {})}  # the child's environment
    rc, out, err = run_process([resolve_binary(binary), *args], stdin_text=None, cwd=cwd, env=env, timeout=timeout)
    return CliRun(rc, out, err)
