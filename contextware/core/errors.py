"""One error tree for the whole package.

Every failure a user can meet is a ``ContextwareError``; ``cli.run_command`` turns it into the JSON
error envelope and the exit code in one place.  ``exit_code`` 2 means bad input or usage (nothing was
written), 1 a runtime failure, 130 an interruption (SIGINT or SIGTERM).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from json import JSONDecodeError


class _Error(TypedDict):
    code: str  # machine-readable: bad_input, not_found, damaged_data, ...
    message: str  # one sentence for a person


class ErrorBody(_Error, total=False):
    """The ``error`` of the JSON envelope every door prints on failure."""

    details: dict[str, Any]  # facts that help a program act on it (sizes, limits, ids)


class ContextwareError(Exception):
    """Base class: ``code`` is a stable slug, the message one clear sentence."""

    code = "error"
    exit_code = 1

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details or {}

    def to_dict(self, name: Callable[[str], str] | None = None) -> ErrorBody:
        """The error body; ``name`` words the names of inputs (see ``FieldError``)."""
        err: ErrorBody = {"code": self.code, "message": self.message}
        if self.details:
            err["details"] = self.details
        return err


class UsageError(ContextwareError):
    """Bad input or usage: exit 2, nothing written."""

    code = "bad_input"
    exit_code = 2


class FieldError(UsageError):
    """A bad value of one named input (``limit``, ``scope``, ...).  The message says ``{field}`` where
    the input's name goes, so each front end words it in its own vocabulary: ``--limit`` on the
    command line (``cli.flag_name``), ``limit`` for an MCP tool's parameter (the default)."""

    def __init__(
        self, template: str, *, field: str, code: str | None = None, details: dict[str, Any] | None = None
    ) -> None:
        self.template = template
        self.field = field
        super().__init__(template.replace("{field}", field), code=code or f"bad_{field}", details=details)

    def to_dict(self, name: Callable[[str], str] | None = None) -> ErrorBody:
        self.message = self.template.replace("{field}", name(self.field) if name else self.field)
        return super().to_dict()


class NotFoundError(UsageError):
    code = "not_found"


class ConfigError(UsageError):
    """A setting that cannot be used (``config.json`` unreadable, not JSON, an unknown key, a bad
    value; a bad ``CONTEXTWARE_*`` value): bad input like any other, exit 2 from every command."""

    code = "config_error"


class StorageError(ContextwareError):
    """The database could not be opened, read or written."""

    code = "storage_error"


class ModelMismatchError(StorageError):
    code = "model_mismatch"


class DamagedDataError(StorageError):
    """Stored data is not what was written (a bad file, a lost manifest, a flipped bit): the message
    names the repair command.  Never answered with an empty or wrong result."""

    code = "damaged_data"


class DiskFullError(StorageError):
    """The disk (or a file-size limit) refused a write: nothing was committed."""

    code = "disk_full"


# What the OS, Arrow and Lance say when a write hits a full disk or a file-size limit.
_DISK_FULL_SIGNS = ("no space left on device", "os error 28", "errno 28", "file too large", "os error 27", "disk full")


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC or EFBIG, raised by the OS directly or wrapped in a Lance/Arrow error's text."""
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return any(sign in text for sign in _DISK_FULL_SIGNS)


def disk_full(exc: BaseException, what: str = "the write") -> DiskFullError:
    """The one sentence for a full disk."""
    return DiskFullError(
        f"The disk is full (or a file-size limit was reached) during {what}; nothing was saved: free some space and try again."
    )


class EmbeddingError(ContextwareError):
    """The embedding model could not be loaded or run."""

    code = "embedding_unavailable"


class GeminiError(ContextwareError):
    """A headless Gemini CLI run failed; ``code`` says how (auth, trust, rate_limit, timeout, ...)."""

    code = "gemini_error"


def load_json(text: str, bad: "Callable[[JSONDecodeError], ContextwareError]") -> Any:
    """``json.loads(text)``, or the error ``bad`` makes of the decode error (raised without the
    decoder's traceback).  ``bad`` names where the text is wrong, never quotes it: it may be a file's
    content."""
    import json  # here: every module imports this tree, few of them parse JSON

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad(exc) from None
    except RecursionError:  # nested deeper than the parser's stack: as bad as broken JSON
        raise bad(json.JSONDecodeError("nested too deeply", text[:0], 0)) from None


# Where in Lance's (Rust) sources an error was raised: "/root/.cargo/registry/src/.../utils.rs:224:20",
# "/rustc/<hash>/library/core/src/ops/function.rs:250:5".  Paths of the build machine, not the user's.
_SOURCE_LOCATION = re.compile(r"[,;:]?\s*\(?(?:at\s+)?/[^\s,;()]*\.rs:\d+(?::\d+)?\)?")


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first line of an exception's text (its type when empty), for one-sentence messages;
    without the internal source locations Lance appends (absolute paths of its build machine)."""
    text = str(exc).strip() or type(exc).__name__
    line = _SOURCE_LOCATION.sub("", text.splitlines()[0]).strip()
    return (line or type(exc).__name__).rstrip(".")[:limit]


def internal_error(exc: BaseException) -> ErrorBody:
    """The error body for an exception that is not a ContextwareError (never a traceback); a full
    disk met anywhere is ``disk_full``, not a bug."""
    if is_disk_full(exc):
        return disk_full(exc).to_dict()
    return {"code": "internal_error", "message": f"Unexpected {type(exc).__name__}: {first_line(exc)}."}
