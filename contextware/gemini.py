"""The one wrapper around headless Gemini CLI (``gemini -p ... -o json``).

Used by the code summariser and by research offloads.  Every failure is a :class:`GeminiError` whose
``code`` says what went wrong (``auth``, ``untrusted_folder``, ``rate_limited``, ``timeout``, ...) and
whose message is one sentence.  The behaviour relied on was verified against Gemini CLI 0.61.0, and the
integration tests run the real CLI against a local fake of its API (``tests/fake_gemini_api.py``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextware.errors import GeminiError, UsageError
from contextware.system import Cancelled, run_in_group, write_atomic
from contextware.text import cut_at_word

TOKEN_KEYS = ("input", "prompt", "candidates", "total", "cached", "thoughts", "tool")
MAX_STDIN_BYTES = 8 * 1024 * 1024  # the CLI's own limit on piped input
DEFAULT_RATE_LIMIT_PER_MINUTE = 50
RATE_WINDOW_SECONDS = 60.0
_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9_-]+$")
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_SESSION_LINE_RE = re.compile(r"^\s*(\d+)\.\s+(.*?)\s+\(([^()]*)\)\s+\[([^\]\s]+)\]\s*$")
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
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def prompt_tokens(self) -> int:
        return self.tokens.get("prompt", 0)


@dataclass
class GeminiSession:
    index: int
    title: str
    age: str
    session_id: str


# -- binary -------------------------------------------------------------------------------------
def _find_binary(binary: str | None) -> str | None:
    candidate = binary or os.environ.get("CONTEXTWARE_GEMINI_BIN") or "gemini"
    if os.sep in candidate or (os.altsep and os.altsep in candidate):
        path = Path(candidate).expanduser()
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(candidate)


def resolve_binary(binary: str | None = None) -> str:
    found = _find_binary(binary)
    if not found:
        wanted = binary or os.environ.get("CONTEXTWARE_GEMINI_BIN") or "gemini"
        raise GeminiError(
            f"Gemini CLI was not found ({wanted}); install @google/gemini-cli or set CONTEXTWARE_GEMINI_BIN.",
            code="gemini_not_installed",
        )
    return found


def gemini_available(binary: str | None = None) -> bool:
    """True when the Gemini CLI binary can be found (no process is started)."""
    return _find_binary(binary) is not None


_AUTH_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS")
_SELECTED_TYPE_RE = re.compile(r'"(?:selectedType|selectedAuthType)"\s*:\s*"([^"]+)"')


def gemini_home() -> Path:
    """The folder holding the CLI's ``.gemini`` directory (the CLI honours GEMINI_CLI_HOME first)."""
    return Path(os.environ.get("GEMINI_CLI_HOME") or os.environ.get("HOME") or Path.home())


def _settings_auth_type(path: Path) -> str | None:
    """``security.auth.selectedType`` (or the older top-level ``selectedAuthType``) of a settings file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        data = json.loads(text)
    except ValueError:  # the CLI accepts comments in settings.json; look for the key itself
        match = _SELECTED_TYPE_RE.search(text)
        return match.group(1) if match else None
    if not isinstance(data, dict):
        return None
    security = data.get("security")
    auth = security.get("auth") if isinstance(security, dict) else None
    value = auth.get("selectedType") if isinstance(auth, dict) else None
    value = value or data.get("selectedAuthType")
    return value if isinstance(value, str) and value.strip() else None


def _env_file_has_key(path: Path) -> bool:
    """A ``.env`` file the CLI loads (``~/.gemini/.env``, ``~/.env``) that sets an API key."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(r"^\s*(export\s+)?(GEMINI_API_KEY|GOOGLE_API_KEY)\s*=\s*\S", text, re.M) is not None


def gemini_auth_configured() -> bool:
    """True when some Gemini CLI authentication looks configured (files and environment only)."""
    env = os.environ
    if any(env.get(name, "").strip() for name in _AUTH_ENV):
        return True
    if (
        env.get("GOOGLE_GENAI_USE_VERTEXAI", "").strip().lower() in ("1", "true")
        and env.get("GOOGLE_CLOUD_PROJECT", "").strip()
    ):
        return True
    home = gemini_home()
    gemini_dir = home / ".gemini"
    if (gemini_dir / "oauth_creds.json").is_file() or _settings_auth_type(gemini_dir / "settings.json"):
        return True
    return _env_file_has_key(gemini_dir / ".env") or _env_file_has_key(home / ".env")


def gemini_ready(binary: str | None = None) -> bool:
    """Cheap check (no subprocess, no network) that Gemini CLI is installed and looks authenticated.

    It cannot tell whether the credentials work: a run can still fail with ``auth``.
    """
    return gemini_available(binary) and gemini_auth_configured()


# -- output parsing -----------------------------------------------------------------------------
def json_objects(text: str) -> list[dict]:
    """Top-level JSON objects embedded in ``text`` (other text around them is skipped)."""
    decoder, out, pos = json.JSONDecoder(), [], 0
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


def _unwrap_message(message: Any) -> str:
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
    return _one_sentence(str(message))


def _one_sentence(text: str, limit: int = 300) -> str:
    text = _ANSI_RE.sub("", text).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    text = " ".join(lines[:2]) if lines else ""
    return cut_at_word(text, limit)


def _sentence(prefix: str, detail: str) -> str:
    detail = detail.strip()
    if not detail:
        return prefix + "."
    return f"{prefix}: {detail}" + ("" if detail[-1] in ".!?" else ".")


def _stderr_error(stderr: str) -> tuple[str, Any]:
    """(message, code field) from the error JSON on stderr, else the first meaningful line."""
    tail = stderr[-65536:]
    for obj in reversed(json_objects(tail)):
        err = obj.get("error")
        if isinstance(err, dict) and err.get("message"):
            return _unwrap_message(err["message"]), err.get("code")
    lines = [_ANSI_RE.sub("", ln).strip() for ln in tail.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith(_NOISE_PREFIXES)]
    return (_one_sentence(lines[0]) if lines else ""), None


def _http_status(exit_code: int, field_code: Any) -> int | None:
    if isinstance(field_code, int) and 400 <= field_code <= 599:
        return field_code
    if 144 <= exit_code <= 255:  # the CLI exits with the HTTP status & 0xFF
        return exit_code + 256
    return None


def _failure(exit_code: int, stderr: str) -> GeminiError:
    message, field_code = _stderr_error(stderr)
    code = _EXIT_CODES.get(exit_code)
    details: dict[str, Any] = {"exit_code": exit_code}
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
    text = _sentence(prefix, message) if message else f"{prefix} (exit code {exit_code})."
    return GeminiError(text, code=code, details=details)


def parse_output(stdout: str) -> GeminiResult:
    """Parse a successful (exit 0) ``-o json`` run; raises GeminiError when it is not a success."""
    if not stdout.strip():
        raise GeminiError("Gemini CLI stopped without output (it was interrupted).", code="interrupted")
    docs = [d for d in json_objects(stdout) if {"response", "session_id", "error"} & d.keys()]
    if not docs:
        raise GeminiError(
            "Gemini CLI printed no JSON result.", code="invalid_response", details={"stdout": _one_sentence(stdout)}
        )
    doc = docs[-1]
    response = doc.get("response")
    err = doc.get("error")
    err_msg = _unwrap_message(err.get("message", "")) if isinstance(err, dict) else ""
    if not isinstance(response, str) or not response.strip():
        raise GeminiError(_sentence("The model returned an empty response", err_msg), code="empty_response")
    if err is not None:
        raise GeminiError(_sentence("Gemini CLI reported an error", err_msg or str(err)), code="invalid_response")
    tokens = dict.fromkeys(TOKEN_KEYS, 0)
    models = (doc.get("stats") or {}).get("models") or {}
    for stats in models.values():
        for key, value in ((stats or {}).get("tokens") or {}).items():
            if key in tokens and isinstance(value, (int, float)):
                tokens[key] += int(value)
    return GeminiResult(
        response=response, session_id=doc.get("session_id"), tokens=tokens, models=list(models), raw=doc
    )


# -- process control ----------------------------------------------------------------------------
def _run(
    cmd: list[str],
    *,
    stdin_text: str | None,
    cwd: str | Path | None,
    env: dict[str, str],
    timeout: float,
    cancel: threading.Event | None = None,
) -> tuple[int, str, str]:
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
        raise _cancelled() from None
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


def _cancelled() -> GeminiError:
    return GeminiError("Gemini CLI was stopped because the run was interrupted.", code="interrupted")


def _pause(seconds: float, cancel: threading.Event | None) -> bool:
    """Sleep; True when ``cancel`` was set meanwhile."""
    if cancel is None:
        time.sleep(seconds)
        return False
    return cancel.wait(seconds)


def escape_at(text: str) -> str:
    """Gemini CLI expands ``@path`` anywhere in its input but skips an ``@`` preceded by a
    backslash.  Applied to file content and piped context, never to the user's prompt."""
    return text.replace("@", "\\@")


# -- rate limiting ------------------------------------------------------------------------------
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
            if _pause(min(max(wait, 0.01), 1.0), cancel):
                raise _cancelled()


# -- public API ---------------------------------------------------------------------------------
def build_command(
    binary: str,
    prompt: str,
    *,
    model: str | None = None,
    include_dirs: Sequence[str] = (),
    session_id: str | None = None,
    resume: str | None = None,
    trust_workspace: bool = True,
) -> list[str]:
    cmd = [binary, "-o", "json"]
    if trust_workspace:
        cmd.append("--skip-trust")
    if model:
        cmd += ["-m", model]
    if include_dirs:
        cmd += ["--include-directories", ",".join(str(d) for d in include_dirs)]
    if session_id:
        cmd += ["--session-id", session_id]
    if resume:
        cmd += ["--resume", resume]
    return [*cmd, "-p", prompt]


def run_gemini(
    prompt: str,
    *,
    stdin_text: str | None = None,
    model: str | None = None,
    include_dirs: Sequence[str] = (),
    session_id: str | None = None,
    resume: str | None = None,
    cwd: str | Path | None = None,
    timeout: float = 300,
    binary: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    rate_limit_per_minute: int | None = None,
    state_dir: Path | None = None,
    rate_limit_retries: int = 2,
    rate_limit_backoff: float = 10.0,
    rate_limit_max_wait: float = 60.0,
    trust_workspace: bool = True,
    cancel: threading.Event | None = None,
) -> GeminiResult:
    """Run one headless Gemini CLI turn and return its parsed result (raises GeminiError).  Setting
    ``cancel`` from another thread stops the call, or the wait before it, within a fraction of a
    second (GeminiError ``interrupted``)."""
    if not prompt or not prompt.strip():
        raise UsageError("The prompt for Gemini CLI is empty.")
    if session_id and resume:
        raise UsageError("Give either a new session id or a session to resume, not both.")
    if session_id and not _SESSION_ID_RE.match(session_id):
        raise UsageError(f"Invalid Gemini session id {session_id!r}: use letters, digits, '-' or '_'.")
    if stdin_text is not None and len(stdin_text.encode("utf-8")) > MAX_STDIN_BYTES:
        raise GeminiError("The input for Gemini CLI is larger than its 8 MB limit.", code="input_too_large")
    exe = resolve_binary(binary)
    env = dict(os.environ)  # the child's environment (ours, as the user's own `gemini` would get)
    env.update(extra_env or {})
    limiter = None
    if state_dir is not None:
        limiter = RateLimiter(Path(state_dir), rate_limit_per_minute or DEFAULT_RATE_LIMIT_PER_MINUTE)
    waited, attempt, new_id = 0.0, 0, session_id
    while True:
        if limiter is not None:
            limiter.acquire(cancel)
        cmd = build_command(
            exe,
            prompt,
            model=model,
            include_dirs=include_dirs,
            session_id=session_id,
            resume=resume,
            trust_workspace=trust_workspace,
        )
        rc, out, err = _run(cmd, stdin_text=stdin_text, cwd=cwd, env=env, timeout=timeout, cancel=cancel)
        try:
            if rc != 0:
                raise _failure(rc, err)
            return parse_output(out)
        except GeminiError as exc:
            delay = rate_limit_backoff * (2**attempt)
            if exc.code != "rate_limited" or attempt >= rate_limit_retries or waited + delay > rate_limit_max_wait:
                raise
            attempt += 1
            waited += delay
            if new_id:
                # The refused attempt left a session holding only the prompt: the CLI will neither
                # start that id again ("already exists") nor resume it (it lists no such session).
                # A new id that keeps the first 8 characters (chat files are named after them).
                session_id = f"{new_id}_r{attempt}"
            if _pause(delay, cancel):
                raise _cancelled() from None


def list_sessions(
    cwd: str | Path | None = None,
    binary: str | None = None,
    timeout: float = 60,
    extra_env: Mapping[str, str] | None = None,
) -> list[GeminiSession]:
    """The Gemini CLI sessions recorded for the project at ``cwd`` (oldest first)."""
    env = {**os.environ, **(extra_env or {})}  # the child's environment
    rc, out, err = _run(
        [resolve_binary(binary), "--skip-trust", "--list-sessions"], stdin_text=None, cwd=cwd, env=env, timeout=timeout
    )
    if rc != 0:
        raise _failure(rc, err)
    sessions = []
    for line in _ANSI_RE.sub("", out).splitlines():
        if m := _SESSION_LINE_RE.match(line):
            sessions.append(GeminiSession(int(m[1]), m[2], m[3], m[4]))
    return sessions


def delete_session(
    id_or_index: str | int,
    cwd: str | Path | None = None,
    binary: str | None = None,
    timeout: float = 60,
    extra_env: Mapping[str, str] | None = None,
) -> None:
    """Delete one session; the CLI always exits 0, so success is read from its output."""
    env = {**os.environ, **(extra_env or {})}  # the child's environment
    rc, out, err = _run(
        [resolve_binary(binary), "--skip-trust", "--delete-session", str(id_or_index)],
        stdin_text=None,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )
    if rc != 0:
        raise _failure(rc, err)
    if "Deleted session" in out:
        return
    message, _ = _stderr_error(err)
    lowered = message.lower()
    code = (
        "unknown_session"
        if ("invalid session identifier" in lowered or "no sessions found" in lowered)
        else "delete_failed"
    )
    raise GeminiError(_sentence(f"Gemini CLI could not delete session {id_or_index}", message), code=code)


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
            lines = [_ANSI_RE.sub("", ln).strip() for ln in text.splitlines()]
            lines = [ln for ln in lines if ln and not ln.startswith(_NOISE_PREFIXES)]
            if lines:
                return _one_sentence(lines[-1])
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
    rc, out, err = _run([resolve_binary(binary), *args], stdin_text=None, cwd=cwd, env=env, timeout=timeout)
    return CliRun(rc, out, err)


GEMINI_WORKDIR = "contextware-gemini-summaries"


def gemini_workdir(home: Path) -> Path:
    """An empty working folder for Gemini calls that need no project (file summaries, summaries of
    answers): run in the project, Gemini CLI would add the project's file tree and GEMINI.md to every
    request and list each call among the user's sessions.  ``home``: ``system.contextware_home``."""
    path = home / GEMINI_WORKDIR
    path.mkdir(parents=True, exist_ok=True)
    return path


__all__ = [
    "CliRun",
    "GeminiResult",
    "GeminiSession",
    "RateLimiter",
    "build_command",
    "delete_session",
    "gemini_auth_configured",
    "gemini_available",
    "gemini_home",
    "gemini_ready",
    "gemini_workdir",
    "list_sessions",
    "parse_output",
    "resolve_binary",
    "run_cli",
    "run_gemini",
]
