"""The caller's situation, re-created around one piece of work done on its behalf: its working
directory, its ``CONTEXTWARE_*`` settings and its standard input.  Used by the resident service for
each request and by whoever drains the hook spool.  Not thread-safe by design: the service runs one
request at a time."""

from __future__ import annotations

import base64
import io
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def caller_context(cwd: str | None, env: Mapping[str, str] | None, stdin_b64: str | None = None) -> Iterator[None]:
    """Run the body as if in the caller's process; everything is restored afterwards."""
    saved_env = {k: v for k, v in os.environ.items() if k.startswith("CONTEXTWARE_")}
    saved_stdin = sys.stdin
    try:
        saved_cwd: str | None = os.getcwd()
    except OSError:
        saved_cwd = None
    try:
        if env is not None:
            for key in saved_env:
                if key not in env:
                    del os.environ[key]
            os.environ.update({k: str(v) for k, v in env.items() if k.startswith("CONTEXTWARE_")})
        if cwd and os.path.isdir(cwd):
            os.chdir(cwd)
        data = base64.b64decode(stdin_b64) if stdin_b64 else b""
        sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
        yield
    finally:
        sys.stdin = saved_stdin
        for key in [k for k in os.environ if k.startswith("CONTEXTWARE_")]:
            if key not in saved_env:
                del os.environ[key]
        os.environ.update(saved_env)
        if saved_cwd is not None:
            try:
                os.chdir(saved_cwd)
            except OSError:
                pass
