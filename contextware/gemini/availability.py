"""Is Gemini CLI there, and does it look signed in: finding the binary, its home, its credentials
(files and environment only: no process is started), and the empty folder project-less calls run in.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from contextware.core.errors import GeminiError
from contextware.core.system import contextware_home


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


GEMINI_WORKDIR = "contextware-gemini-summaries"


def gemini_workdir(home: Path | None = None) -> Path:
    """An empty working folder for Gemini calls that need no project (file summaries, summaries of
    answers): run in the project, Gemini CLI would add the project's file tree and GEMINI.md to every
    request and list each call among the user's sessions.  ``home``: ``system.contextware_home`` of
    the caller's settings (by default this process's)."""
    path = (home or contextware_home()) / GEMINI_WORKDIR
    path.mkdir(parents=True, exist_ok=True)
    return path
