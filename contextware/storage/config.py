"""Project settings: defaults overridden by ``<data_dir>/config.json``."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from contextware.errors import ConfigError, load_json

DEFAULTS: dict[str, Any] = {
    # Memory
    "max_fact_chars": 4000,
    "max_episode_chars": 8000,
    "log_chunk_chars": 1500,
    "max_log_chars": 2_000_000,
    # Captured turns of a session whose last turn is older than this many days are folded into the
    # session's digest and archived under archive/logs/ (memory/retention.py). 0: keep every turn.
    "log_retention_days": 0.0,
    # Who writes the digest of a session that retention folds: local (extractive) | gemini (headless
    # Gemini CLI, at most digest_daily_tokens tokens a UTC day, metered; memory/gemini_digest.py).
    "digest_summarizer": "local",
    "digest_daily_tokens": 200_000,
    # A hook turn (prompt or answer) over this many characters is cut to it, the rest noted as cut:
    # a 40 MB turn would otherwise be thousands of rows to embed on the hook's path.
    "hook_turn_chars": 40_000,
    "similar_threshold": 0.80,
    # Retrieval (calibrated on bench/data/memory_eval.json, see bench/recall_quality.py)
    "recall_candidates": 30,
    # Confidence (0-1) the best result must reach, else recall answers "answerable": false with no
    # results (contextware/memory/confidence.py); the prompt hook, which injects unasked, is stricter.
    "recall_min_confidence": 0.15,
    "hook_min_confidence": 0.25,
    # Shared memory (memory/trust.py): imported memories of these authors (git user.email or name)
    # are injected by the hooks like your own; true trusts every imported author.  The others are
    # recalled on request only.  An imported memory that reads as an instruction is quarantined
    # (never injected) whatever these say, until `memory accept ID`.
    "trusted_authors": [],
    "trust_imported": False,
    # Code index
    "summarizer": "auto",  # auto | gemini | local
    "max_file_bytes": 1_000_000,
    "crawl_jobs": 0,  # 0: one per CPU (at most 8)
    "secret_files": [],  # more secret-bearing file patterns to skip (codeindex/exclusions.py has the defaults)
    "secret_files_allowed": [],  # patterns of the default list to index anyway (their text is still redacted)
    # Left out of the code index by default; true brings the class back: files marked
    # linguist-generated / linguist-vendored in .gitattributes, minified files (.min.js, long lines).
    "index_generated": False,
    "index_vendored": False,
    "index_minified": False,
    # Gemini CLI (code summaries and offloads)
    "gemini_model": "gemini-2.5-flash",
    "gemini_timeout_s": 180.0,
    "gemini_requests_per_minute": 50,  # the free tier allows 60
    "gemini_rate_limit_backoff_s": 10.0,  # a rate-limited call is retried twice, after this and twice this
    "gemini_batch_files": 8,
    "gemini_batch_chars": 60_000,
    # Offloads (scripts/offload.py): research handed to Gemini, answered with a summary
    "offload_model": "gemini-2.5-pro",  # the research call (1M-token context)
    "offload_summary_model": "gemini-2.5-flash",  # a fast model for summaries
    "offload_summarizer": "gemini",  # gemini (falls back to truncation) | truncate
    "summary_max_tokens": 500,
    "cache_ttl_days": 30.0,  # a cached answer older than this is re-queried; 0 or null: never
    "offload_timeout_s": 600.0,
    "offload_max_source_files": 5000,  # files tracked under --include-dirs
    "offload_max_errors": 3,  # consecutive errors or timeouts before a session is dropped
    "offload_retry_backoff_s": 10.0,  # wait error_count x this before a retry
    "offload_session_max_tokens": 350_000,  # context (prompt tokens of the latest call) that starts a new session
    "offload_recovery_days": 7.0,  # Gemini sessions this recent are considered when our state is lost
    # Gemini CLI hooks: token budgets of the session briefing and of the memories added to a prompt
    "hook_session_tokens": 1000,
    "hook_prompt_tokens": 400,
    # Team memory file: a deletion's tombstone is exported (and kept) this many days, then dropped;
    # a clone that has not exchanged memory for longer may bring the memory back. 0: never dropped.
    "tombstone_days": 90.0,
    # Linked git worktrees use the main checkout's memory ("shared") or their own ("separate"); read from
    # the main checkout's config.json (or $CONTEXTWARE_WORKTREES) by storage.layout.
    "worktrees": "shared",
    # Storage maintenance: compact when a table has this many small fragments.
    "compact_after_fragments": 24,
    # Session store (scripts/store.py): limits enforced by eviction on every save.
    "store_max_bytes": 10 * 1024 * 1024,  # JSON bytes of all values in the project
    "store_max_keys_per_namespace": 50,
    "store_eviction": "lru",  # lru (least recently loaded or saved first) | oldest (saved longest ago first)
    "store_eviction_by_namespace": {},  # per-namespace override, e.g. {"baselines": "oldest"}
    # Resident service (contextware.resident): exits after this many minutes without a request.
    "service_idle_minutes": 10.0,  # a number: fractions allowed
}


MAX_CONFIG_BYTES = 1024 * 1024  # far above any real config.json


def load_config(data_dir: Path) -> dict[str, Any]:
    path = data_dir / "config.json"
    config = dict(DEFAULTS)
    try:
        # judged by its stat before it is opened: a named pipe or a device there would hang or
        # never end every command and hook of the project
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"{path} is not a regular file of at most {MAX_CONFIG_BYTES // 1024} KB; fix it or delete it to "
                "use the defaults.",
                code="damaged_config",
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return config
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None
    user = load_json(
        text,
        lambda exc: ConfigError(
            f"{path} is not valid JSON (line {exc.lineno}); fix it or delete it to use the defaults.",
            code="damaged_config",
        ),
    )
    if not isinstance(user, dict):
        raise ConfigError(
            f"{path} must hold a JSON object; fix it or delete it to use the defaults.", code="damaged_config"
        )
    check_unknown_keys(user, path)
    check_types(user, path)
    check_values(user, path)
    config.update(user)
    return config


def check_unknown_keys(user: dict[str, Any], path: Path) -> None:
    """A key that is not a setting (a typo would otherwise be ignored silently) is bad input: exit 2,
    naming the nearest valid key."""
    import difflib

    for key in user:
        if key not in DEFAULTS:
            close = difflib.get_close_matches(key, list(DEFAULTS), n=1, cutoff=0.6)
            hint = (
                f"did you mean {close[0]!r}? Fix the key or remove it."
                if close
                else "`contextware config` lists the settings."
            )
            raise ConfigError(f"{path}: unknown setting {key!r}; {hint}", code="unknown_setting")


# Settings that may also be null (see DEFAULTS' comments).
NULLABLE = frozenset({"cache_ttl_days"})
_TYPE_NAMES = {int: "a whole number", float: "a number", str: "a string", dict: "an object", list: "a list"}


def check_types(user: dict[str, Any], path: Path) -> None:
    """Each known setting must have the type of its default (a number where a number is expected:
    ``"500"`` is refused, not compared as text later).  Unknown keys are left to their own check."""
    for key, value in user.items():
        if key not in DEFAULTS:
            continue
        default = DEFAULTS[key]
        if value is None and key in NULLABLE:
            continue
        kind = type(default)
        if kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, kind)
        if not ok:
            _bad_value(key, path, f"{_TYPE_NAMES.get(kind, kind.__name__)} like {json.dumps(default)}", value)


# The values each setting may take beyond its type: checked when the file is read, so a bad value
# is the same error (exit 2) from every command, not only from the one that uses the setting.
CHOICES: dict[str, tuple[str, ...]] = {
    "summarizer": ("auto", "gemini", "local"),
    "offload_summarizer": ("gemini", "truncate"),
    "store_eviction": ("lru", "oldest"),
    "worktrees": ("shared", "separate"),
    "digest_summarizer": ("local", "gemini"),
}
AT_LEAST: dict[str, float] = {
    "summary_max_tokens": 20,
    **dict.fromkeys(("crawl_jobs", "hook_session_tokens", "hook_prompt_tokens", "tombstone_days"), 0),
    **dict.fromkeys(("cache_ttl_days", "offload_retry_backoff_s", "gemini_rate_limit_backoff_s"), 0),
    **dict.fromkeys(("offload_recovery_days", "log_retention_days", "digest_daily_tokens"), 0),
}
FRACTIONS = ("similar_threshold", "recall_min_confidence", "hook_min_confidence")
STRING_LISTS = ("secret_files", "secret_files_allowed", "trusted_authors")


def _bad_value(key: str, path: Path, rule: str, value: Any) -> None:
    raise ConfigError(
        f"{key} in {path} must be {rule}, not {json.dumps(value)}; fix it or remove the key to use the default.",
        code="bad_config",
    )


def check_values(user: dict[str, Any], path: Path) -> None:
    """Each known setting of the right type (``check_types``) must also hold a value it can take:
    one of its choices, a fraction, a list of patterns, or a number above its floor (at least 1,
    or more than 0 for a duration, unless ``AT_LEAST`` says otherwise)."""
    for key, value in user.items():
        if key not in DEFAULTS or value is None:
            continue
        if key in CHOICES and value not in CHOICES[key]:
            _bad_value(key, path, " or ".join(json.dumps(c) for c in CHOICES[key]), value)
        elif key in FRACTIONS and not 0 <= value <= 1:
            _bad_value(key, path, "a number from 0 to 1", value)
        elif key in STRING_LISTS and not all(isinstance(v, str) and v for v in value):
            _bad_value(key, path, 'a list of file patterns such as ["*.pem"]', value)
        elif key == "store_eviction_by_namespace" and not all(v in CHOICES["store_eviction"] for v in value.values()):
            _bad_value(key, path, 'an object of "lru" or "oldest" per namespace', value)
        elif isinstance(DEFAULTS[key], (int, float)) and not isinstance(DEFAULTS[key], bool):
            floor = AT_LEAST.get(key, 1 if isinstance(DEFAULTS[key], int) else 0)
            strict = key not in AT_LEAST and isinstance(DEFAULTS[key], float)  # a duration of 0 never ends
            if value < floor or (strict and value <= floor):
                _bad_value(key, path, f"{'more than' if strict else 'at least'} {floor}", value)
