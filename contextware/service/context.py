"""The caller's situation, re-created around one piece of work done on its behalf: its working
directory and its standard input.  Its settings are not re-created here: the caller sends its
``CONTEXTWARE_*`` variables and the work gets the ``Settings`` built from them as a parameter
(``Settings.for_caller``), so the process environment is never touched.  Used by the resident
service for each request and by whoever drains the hook spool.  Not thread-safe by design: the
service runs one request at a time."""

from __future__ import annotations

import base64
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def caller_context(cwd: str | None, stdin_b64: str | None = None) -> Iterator[None]:
    """Run the body in the caller's working directory, with its standard input; both are restored
    afterwards."""
    saved_stdin = sys.stdin
    try:
        saved_cwd: str | None = os.getcwd()
    except OSError:
        saved_cwd = None
    try:
        if cwd and os.path.isdir(cwd):
            os.chdir(cwd)
        data = base64.b64decode(stdin_b64) if stdin_b64 else b""
        sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
        yield
    finally:
        sys.stdin = saved_stdin
        if saved_cwd is not None:
            try:
                os.chdir(saved_cwd)
            except OSError:
                pass
