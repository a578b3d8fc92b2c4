"""The one reader of files a user names as input (``--data @file``, ``import FILE``): bounded in size,
and only regular files.

A named pipe, a socket or a device (``/dev/zero``, a FIFO, a symlink to either) is refused by its
``stat`` *before* it is opened, so nothing blocks on a writer that never comes or reads forever; the
open itself is non-blocking and re-checked, in case the path changed in between.  A file larger than
the limit is refused by its size, and the read stops at the limit anyway (``/proc`` files report 0).
Standard input is bounded by ``system.read_limited``.
"""

from __future__ import annotations

import os
import stat

from contextware.core.errors import UsageError
from contextware.core.system import MAX_INPUT_BYTES, read_limited

# An export file read by ``import``: far above a real project's memory (facts are capped at a few
# thousand characters), far below what would exhaust memory while it is parsed.
MAX_IMPORT_BYTES = 64 * 1024 * 1024

_NOT_REGULAR = "a named pipe, socket or device is never read"


def read_input_file(path: str | os.PathLike[str], what: str, *, limit: int = MAX_INPUT_BYTES, code: str) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them.  ``what`` names it in the
    one-sentence UsageError (exit 2) that refuses anything else; ``code`` is the error code of a path
    that is not a readable regular file (a missing one is ``file_not_found``, a large one
    ``too_large``)."""
    try:
        st = os.stat(path)  # follows a symlink: its target is judged
    except (FileNotFoundError, NotADirectoryError):
        raise UsageError(f"{what} does not exist; nothing was saved.", code="file_not_found") from None
    except OSError as exc:
        raise UsageError(f"Cannot read {what} ({exc.strerror or exc}); nothing was saved.", code=code) from None
    _check_regular(st, what, code)
    if st.st_size > limit:
        raise UsageError(f"{what} is larger than the {limit}-byte limit; nothing was saved.", code="too_large")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise UsageError(f"Cannot read {what} ({exc.strerror or exc}); nothing was saved.", code=code) from None
    with os.fdopen(fd, "rb") as f:
        _check_regular(os.fstat(fd), what, code)  # replaced between the stat and the open
        try:
            return read_limited(f, limit, what)
        except OSError as exc:
            raise UsageError(f"Cannot read {what} ({exc.strerror or exc}); nothing was saved.", code=code) from None


def _check_regular(st: os.stat_result, what: str, code: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{what} is a directory, not a file; nothing was saved.", code=code)
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{what} is not a regular file ({_NOT_REGULAR}); nothing was saved.", code=code)
