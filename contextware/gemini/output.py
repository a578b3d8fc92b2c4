"""Reading what Gemini CLI prints: the ``-o json`` result of a turn, and its failures (exit code and
the error JSON on stderr, among the CLI's noise) as one :class:`GeminiError` with a ``code``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from contextware.core.errors import GeminiError
from contextware.core.json_types import JsonObject, JsonValue
from contextware.core.text import cut_at_word

TOKEN_KEYS = ("input", "prompt", "candidates", "total", "cached", "thoughts", "tool")
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NOISE_PREFIXES = ("Warning: 256-color", "Ripgrep is not available", "[STARTUP]", "at ", "}", "{")
_EXIT_CODES = {
    41: "auth",
    42: "bad_request",
    44: "sandbox",
    52: "config",
    53: "turn_limit",
    54: "tool_error",
    55: "untrusted_folder",
    173: "rate_limited",
}
_CODE_PREFIX = {
    "auth": "Gemini CLI is not authenticated",
    "bad_request": "Gemini CLI rejected the request",
    "unknown_session": "Gemini CLI does not know that session",
    "session_exists": "A Gemini CLI session with that id already exists",
    "sandbox": "Gemini CLI's sandbox failed",
    "config": "Gemini CLI's configuration is invalid",
    "turn_limit": "Gemini CLI hit its session turn limit",
    "tool_error": "A Gemini CLI tool failed",
    "untrusted_folder": "Gemini CLI refused to run in an untrusted folder",
    "rate_limited": "The Gemini API is rate limiting requests",
    "api_error": "The Gemini API returned an error",
    "gemini_failed": "Gemini CLI failed",
    "interrupted": "Gemini CLI was stopped by a signal",
}


@dataclass
class GeminiResult:
    response: str
    session_id: str | None
    tokens: dict[str, int]
    models: list[str] = field(default_factory=list)
    raw: JsonObject = field(default_factory=dict, repr=False)  # the CLI's whole result document

    @property
    def prompt_tokens(self) -> int:
        return self.tokens.get("prompt", 0)


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes."""
    return _ANSI_RE.sub("", text)


def meaningful_lines(text: str) -> list[str]:
    """The lines of the CLI's output that say something: colour codes, blank lines and known noise
    ("Ripgrep is not available", "[STARTUP] ...", stray JSON braces) left out."""
    lines = [strip_ansi(ln).strip() for ln in text.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith(_NOISE_PREFIXES)]


def json_objects(text: str) -> list[JsonObject]:
    """Top-level JSON objects embedded in ``text`` (other text around them is skipped)."""
    decoder, pos = json.JSONDecoder(), 0
    out: list[JsonObject] = []
    while (start := text.find("{", pos)) != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            pos = start + 1
            continue
        if isinstance(obj, dict):
            out.append(obj)
        pos = end
    return out


def _unwrap_message(message: JsonValue) -> str:
    """The innermost human message: API errors arrive as JSON inside the CLI's message string."""
    for _ in range(4):
        if not isinstance(message, str) or not message.strip().startswith(("{", "[")):
            break
        try:
            inner = json.loads(message)
        except ValueError:
            break
        if isinstance(inner, list) and inner:
            inner = inner[0]
        if isinstance(inner, dict) and isinstance(inner.get("error"), dict):
            inner = inner["error"]
        if not isinstance(inner, dict) or "message" not in inner:
            break
        message = inner["message"]
    return one_sentence(str(message))


def one_sentence(text: str, limit: int = 300) -> str:
    """The first two lines of ``text`` as one line, colour codes removed, cut at a word."""
    text = strip_ansi(text).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    text = " ".join(lines[:2]) if lines else ""
    return cut_at_word(text, limit)


def sentence(prefix: str, detail: str) -> str:
    """``prefix: detail.`` (or ``prefix.`` with no detail), ending in one full stop."""
    detail = detail.strip()
    if not detail:
        return prefix + "."
    return f"{prefix}: {detail}" + ("" if detail[-1] in ".!?" else ".")


def stderr_error(stderr: str) -> tuple[str, JsonValue]:
    """(message, code field) from the error JSON on stderr, else the first meaningful line."""
    tail = stderr[-65536:]
    for obj in reversed(json_objects(tail)):
        err = obj.get("error")
        if isinstance(err, dict) and err.get("message"):
            return _unwrap_message(err["message"]), err.get("code")
    lines = meaningful_lines(tail)
    return (one_sentence(lines[0]) if lines else ""), None


def _http_status(exit_code: int, field_code: JsonValue) -> int | None:
    if isinstance(field_code, int) and 400 <= field_code <= 599:
        return field_code
    if 144 <= exit_code <= 255:  # the CLI exits with the HTTP status & 0xFF
        return exit_code + 256
    return None


def failure(exit_code: int, stderr: str) -> GeminiError:
    """The error of a run that exited ``exit_code``: its code from the exit code and the message."""
    message, field_code = stderr_error(stderr)
    code = _EXIT_CODES.get(exit_code)
    details: dict[str, int] = {"exit_code": exit_code}
    lowered = message.lower()
    if exit_code == 42 and ("invalid session identifier" in lowered or "no previous sessions" in lowered):
        code = "unknown_session"
    elif exit_code == 42 and "already exists" in lowered:
        code = "session_exists"
    elif code is None and (exit_code < 0 or 128 < exit_code < 144):  # killed by a signal
        code = "interrupted"
    elif code is None and exit_code == 1:
        code = "api_error" if "Error when talking to Gemini API" in stderr else "gemini_failed"
    elif code is None:
        code = "api_error" if exit_code >= 128 else "gemini_failed"
    status = _http_status(exit_code, field_code)
    if status and code in ("api_error", "rate_limited"):
        details["http_status"] = status
    prefix = _CODE_PREFIX.get(code, "Gemini CLI failed")
    if code == "untrusted_folder":  # the CLI's text is a paragraph of advice; say it in one line
        message = "pass --skip-trust or set GEMINI_CLI_TRUST_WORKSPACE=true to trust it"
    if status and code == "api_error":
        prefix += f" (HTTP {status})"
    text = sentence(prefix, message) if message else f"{prefix} (exit code {exit_code})."
    return GeminiError(text, code=code, details=details)


def parse_output(stdout: str) -> GeminiResult:
    """Parse a successful (exit 0) ``-o json`` run; raises GeminiError when it is not a success."""
    if not stdout.strip():
        raise GeminiError("Gemini CLI stopped without output (it was interrupted).", code="interrupted")
    docs = [d for d in json_objects(stdout) if {"response", "session_id", "error"} & d.keys()]
    if not docs:
        raise GeminiError(
            "Gemini CLI printed no JSON result.", code="invalid_response", details={"stdout": one_sentence(stdout)}
        )
    doc = docs[-1]
    response = doc.get("response")
    err = doc.get("error")
    err_msg = _unwrap_message(err.get("message", "")) if isinstance(err, dict) else ""
    if not isinstance(response, str) or not response.strip():
        raise GeminiError(sentence("The model returned an empty response", err_msg), code="empty_response")
    if err is not None:
        raise GeminiError(sentence("Gemini CLI reported an error", err_msg or str(err)), code="invalid_response")
    tokens = dict.fromkeys(TOKEN_KEYS, 0)
    models = _object(_object(doc.get("stats")).get("models"))
    for stats in models.values():
        for key, value in _object(_object(stats).get("tokens")).items():
            if key in tokens and isinstance(value, (int, float)):
                tokens[key] += int(value)
    session_id = doc.get("session_id")
    return GeminiResult(
        response=response,
        session_id=session_id if isinstance(session_id, str) else None,
        tokens=tokens,
        models=list(models),
        raw=doc,
    )


def _object(value: JsonValue) -> JsonObject:
    """``value`` when the CLI's document holds an object there, else an empty one."""
    return value if isinstance(value, dict) else {}
