"""One error tree for the whole package.

Every failure a user can meet is a ``ContextwareError``; ``cli.run_command`` turns it into the JSON
error envelope and the exit code in one place.  ``exit_code`` 2 means bad input or usage (nothing was
written), 1 a runtime failure, 130 an interruption (SIGINT or SIGTERM).
"""

from __future__ import annotations

from typing import Any


class ContextwareError(Exception):
    """Base class: ``code`` is a stable slug, the message one clear sentence."""

    code = "error"
    exit_code = 1

    def __init__(self, message: str, *, code: str | None = None, details: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details or {}

    def to_dict(self) -> dict:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            err["details"] = self.details
        return err


class UsageError(ContextwareError):
    """Bad input or usage: exit 2, nothing written."""

    code = "bad_input"
    exit_code = 2


class NotFoundError(UsageError):
    code = "not_found"


class ConfigError(ContextwareError):
    code = "config_error"


class StorageError(ContextwareError):
    """The database could not be opened, read or written."""

    code = "storage_error"


class ModelMismatchError(StorageError):
    code = "model_mismatch"


class EmbeddingError(ContextwareError):
    """The embedding model could not be loaded or run."""

    code = "embedding_unavailable"


class GeminiError(ContextwareError):
    """A headless Gemini CLI run failed; ``code`` says how (auth, trust, rate_limit, timeout, ...)."""

    code = "gemini_error"


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first line of an exception's text (its type when empty), for one-sentence messages."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0].rstrip(".")[:limit]


def internal_error(exc: BaseException) -> dict:
    """The error body for an exception that is not a ContextwareError (never a traceback)."""
    return {"code": "internal_error", "message": f"Unexpected {type(exc).__name__}: {first_line(exc)}."}
