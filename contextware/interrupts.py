"""Turning SIGINT/SIGTERM into a flag, for long runs (crawl, watch) that must stop between steps
rather than in the middle of a write."""

from __future__ import annotations

import signal
import threading
from typing import Callable


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
