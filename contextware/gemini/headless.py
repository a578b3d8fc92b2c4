"""One headless Gemini CLI turn (``gemini -p ... -o json``): the command line, the checks on its input,
the rate limit and the retries of a rate-limited call.  Every failure is a :class:`GeminiError`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from contextware.errors import GeminiError, UsageError
from contextware.gemini.availability import resolve_binary
from contextware.gemini.output import GeminiResult, failure, parse_output
from contextware.gemini.process import RateLimiter, cancelled, pause, run_process
from contextware.gemini.sessions import SESSION_ID_RE

MAX_STDIN_BYTES = 8 * 1024 * 1024  # the CLI's own limit on piped input
DEFAULT_RATE_LIMIT_PER_MINUTE = 50


def escape_at(text: str) -> str:
    """Gemini CLI expands ``@path`` anywhere in its input but skips an ``@`` preceded by a
    backslash.  Applied to file content and piped context, never to the user's prompt."""
    return text.replace("@", "\\@")


def build_command(
    binary: str,
    prompt: str,
    *,
    model: str | None = None,
    include_dirs: Sequence[str] = (),
    session_id: str | None = None,
    resume: str | None = None,
    trust_workspace: bool = True,
    policy: Path | None = None,
) -> list[str]:
    cmd = [binary, "-o", "json"]
    if trust_workspace:
        cmd.append("--skip-trust")
    if policy is not None:  # admin tier: above the user's own policy rules
        cmd += ["--admin-policy", str(policy)]
    if model:
        cmd += ["-m", model]
    if include_dirs:
        cmd += ["--include-directories", ",".join(str(d) for d in include_dirs)]
    if session_id:
        cmd += ["--session-id", session_id]
    if resume:
        cmd += ["--resume", resume]
    # One argument: a prompt that starts with "-" is never read as an option (``-p --yolo`` was).
    return [*cmd, f"--prompt={prompt}"]


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
    policy: Path | None = None,
) -> GeminiResult:
    """Run one headless Gemini CLI turn and return its parsed result (raises GeminiError).  ``policy``:
    a policy file (TOML) of what the CLI's tools may not do, at the admin tier.  Setting
    ``cancel`` from another thread stops the call, or the wait before it, within a fraction of a
    second (GeminiError ``interrupted``)."""
    if not prompt or not prompt.strip():
        raise UsageError("The prompt for Gemini CLI is empty.")
    if session_id and resume:
        raise UsageError("Give either a new session id or a session to resume, not both.")
    if session_id and not SESSION_ID_RE.match(session_id):
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
            policy=policy,
        )
        rc, out, err = run_process(cmd, stdin_text=stdin_text, cwd=cwd, env=env, timeout=timeout, cancel=cancel)
        try:
            if rc != 0:
                raise failure(rc, err)
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
            if pause(delay, cancel):
                raise cancelled() from None
