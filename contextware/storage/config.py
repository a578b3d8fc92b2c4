"""Project settings: each declared once, as a typed field of ``Config`` with its default, help,
choices and bounds (``setting``); ``<data_dir>/config.json`` overrides the defaults and is checked
against the declarations when it is read, so code reads ``project.config.<key>`` as a checked value
of its type.  ``config show``/``check`` and docs/settings.md are built from the same declarations."""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from contextware.core.errors import ConfigError, load_json
from contextware.core.json_types import JsonValue


@dataclass(frozen=True)
class Setting:
    """One key of ``config.json``: its default (whose type is the setting's), what it does, and the
    values it may take beyond its type: ``choices``; a ``floor`` it must reach (``above``: it must
    pass it, for a duration of 0 that would never end); a ``ceiling``; ``nullable``.  Numbers are
    finite (JSON's NaN and Infinity are refused).  ``config show``, ``config check`` and the README's
    settings are built from these declarations."""

    key: str
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    floor: float | None = None
    above: bool = False
    ceiling: float | None = None
    nullable: bool = False

    @property
    def kind(self) -> type:
        return type(self.default)


DAY_LIMIT = 36_500.0  # a hundred years: more is a typo, and would overflow date arithmetic
COUNT_LIMIT = 10**9  # far above any real count or size, far below what overflows a C integer


def setting(
    default: object,
    help: str,
    *,
    choices: tuple[str, ...] | None = None,
    floor: float | None = None,
    above: bool = False,
    ceiling: float | None = None,
    nullable: bool = False,
) -> Any:
    """A field of ``Config`` with its declaration (``Setting``).  A list default is held as a tuple
    and an object as a dict (the field's value); ``Setting.default`` keeps the JSON form."""
    rule = Setting("", default, help, choices, floor, above, ceiling, nullable)
    if isinstance(default, list):
        return field(default=tuple(default), metadata={"setting": rule})
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata={"setting": rule})
    return field(default=default, metadata={"setting": rule})


@dataclass(frozen=True)
class Config:
    """Every setting of ``<data_dir>/config.json`` with its type, read once when a project is opened
    (``load_config``) and checked against its declaration: code reads ``project.config.max_fact_chars``
    and gets an ``int`` within its bounds."""

    # Memory
    max_fact_chars: int = setting(4000, "longest fact, in characters", floor=1, ceiling=COUNT_LIMIT)
    max_episode_chars: int = setting(8000, "longest episode summary, in characters", floor=1, ceiling=COUNT_LIMIT)
    log_chunk_chars: int = setting(1500, "characters per stored chunk of a long log", floor=1, ceiling=COUNT_LIMIT)
    max_log_chars: int = setting(2_000_000, "longest log text, in characters", floor=1, ceiling=COUNT_LIMIT)
    log_retention_days: float = setting(
        0.0,
        "captured turns of a session idle longer than this are folded into its digest and archived; 0 keeps every turn",
        floor=0,
        ceiling=DAY_LIMIT,
    )
    digest_summarizer: str = setting(
        "local",
        "who writes the digest of a folded session: local (extractive) or gemini (headless, metered)",
        choices=("local", "gemini"),
    )
    digest_daily_tokens: int = setting(200_000, "Gemini tokens a UTC day for digests", floor=0, ceiling=COUNT_LIMIT)
    hook_turn_chars: int = setting(
        40_000, "a hook turn longer than this is cut to it (the rest noted as cut)", floor=1, ceiling=COUNT_LIMIT
    )
    similar_threshold: float = setting(0.80, "cosine at which a saved memory is listed as similar", floor=0, ceiling=1)
    # Retrieval (calibrated on bench/data/memory_eval.json, see bench/recall_quality.py)
    recall_candidates: int = setting(30, "candidates each ranker gives the fusion", floor=1, ceiling=10_000)
    recall_min_confidence: float = setting(
        0.1, "confidence the best result must reach, else answerable: false", floor=0, ceiling=1
    )
    hook_min_confidence: float = setting(0.25, "the prompt hook's stricter gate", floor=0, ceiling=1)
    trusted_authors: tuple[str, ...] = setting(
        [], "authors (git user.email or name) whose imported memories the hooks inject like your own"
    )
    trust_imported: bool = setting(
        False, "inject every imported memory unasked (an instruction-like one stays quarantined until `memory accept`)"
    )
    # Code index
    summarizer: str = setting(
        "auto", "who summarises files: auto, gemini or local", choices=("auto", "gemini", "local")
    )
    max_file_bytes: int = setting(1_000_000, "largest file indexed, in bytes", floor=1, ceiling=COUNT_LIMIT)
    crawl_jobs: int = setting(0, "files summarised in parallel; 0: one per CPU (at most 8)", floor=0, ceiling=256)
    secret_files: tuple[str, ...] = setting(
        [], "more secret-bearing file patterns to skip (codeindex/exclusions.py has the defaults)"
    )
    secret_files_allowed: tuple[str, ...] = setting(
        [], "patterns of the default list to index anyway (their text is still redacted)"
    )
    index_generated: bool = setting(False, "index files marked linguist-generated")
    index_vendored: bool = setting(False, "index files marked linguist-vendored")
    index_minified: bool = setting(False, "index minified files (.min.js, long lines)")
    code_index_keep_days: float = setting(
        30.0,
        "summaries kept per file content that no indexed file has now are pruned by a full crawl after this many days; 0: never",
        floor=0,
        ceiling=DAY_LIMIT,
    )
    # Gemini CLI (code summaries and offloads)
    gemini_model: str = setting("gemini-2.5-flash", "model of file summaries")
    gemini_timeout_s: float = setting(180.0, "seconds a summary call may take", floor=0, above=True, ceiling=DAY_LIMIT)
    gemini_requests_per_minute: int = setting(
        50, "Gemini calls a minute (the free tier allows 60)", floor=1, ceiling=COUNT_LIMIT
    )
    gemini_rate_limit_backoff_s: float = setting(
        10.0, "a rate-limited call is retried twice, after this and twice this", floor=0, ceiling=DAY_LIMIT
    )
    gemini_batch_files: int = setting(8, "files per summary call", floor=1, ceiling=COUNT_LIMIT)
    gemini_batch_chars: int = setting(60_000, "characters per summary call", floor=1, ceiling=COUNT_LIMIT)
    # Offloads (scripts/offload.py): research handed to Gemini, answered with a summary
    offload_model: str = setting("gemini-2.5-pro", "the research call's model (1M-token context)")
    offload_summary_model: str = setting("gemini-2.5-flash", "a fast model for summaries")
    offload_summarizer: str = setting(
        "gemini",
        "who shortens an answer: gemini (falls back to truncation) or truncate",
        choices=("gemini", "truncate"),
    )
    summary_max_tokens: int = setting(500, "longest offload summary, in tokens", floor=20, ceiling=COUNT_LIMIT)
    cache_ttl_days: float | None = setting(
        30.0,
        "a cached answer older than this is asked again; 0 or null: never",
        floor=0,
        ceiling=DAY_LIMIT,
        nullable=True,
    )
    offload_timeout_s: float = setting(
        600.0, "seconds a research call may take", floor=0, above=True, ceiling=DAY_LIMIT
    )
    offload_max_source_files: int = setting(5000, "files tracked under --include-dirs", floor=1, ceiling=COUNT_LIMIT)
    offload_max_errors: int = setting(
        3, "consecutive errors or timeouts before a session is dropped", floor=1, ceiling=COUNT_LIMIT
    )
    offload_retry_backoff_s: float = setting(10.0, "wait error count x this before a retry", floor=0, ceiling=DAY_LIMIT)
    offload_session_max_tokens: int = setting(
        350_000, "context (prompt tokens of the latest call) that starts a new session", floor=1, ceiling=COUNT_LIMIT
    )
    offload_recovery_days: float = setting(
        7.0, "Gemini sessions this recent are considered when our state is lost", floor=0, ceiling=DAY_LIMIT
    )
    # Hooks: token budgets of the session briefing and of the memories added to a prompt
    hook_session_tokens: int = setting(1000, "tokens of the session briefing", floor=0, ceiling=COUNT_LIMIT)
    hook_prompt_tokens: int = setting(400, "tokens of the memories added to a prompt", floor=0, ceiling=COUNT_LIMIT)
    # Team memory file
    tombstone_days: float = setting(
        90.0, "a deletion's tombstone is exported and kept this many days; 0: never dropped", floor=0, ceiling=DAY_LIMIT
    )
    worktrees: str = setting(
        "shared",
        "linked git worktrees use the main checkout's memory (shared) or their own (separate)",
        choices=("shared", "separate"),
    )
    branch_memory: str = setting(
        "hide",
        'memories of a branch not merged into HEAD: left out of recall ("hide") or shown marked "not merged" ("show")',
        choices=("hide", "show"),
    )
    branch_memory_days: float = setting(
        30.0,
        "a branch deleted without being merged is listed in the review queue after this many days",
        floor=0,
        ceiling=DAY_LIMIT,
    )
    # Storage maintenance
    compact_after_fragments: int = setting(
        24, "compact a table with this many small fragments", floor=1, ceiling=COUNT_LIMIT
    )
    # Session store (scripts/store.py): limits enforced by eviction on every save
    store_max_bytes: int = setting(
        10 * 1024 * 1024, "JSON bytes of all values in the project", floor=1, ceiling=COUNT_LIMIT * 1024
    )
    store_max_keys_per_namespace: int = setting(50, "keys per namespace", floor=1, ceiling=COUNT_LIMIT)
    store_eviction: str = setting(
        "lru",
        "lru (least recently loaded or saved first) or oldest (saved longest ago first)",
        choices=("lru", "oldest"),
    )
    store_eviction_by_namespace: dict[str, str] = setting({}, 'per-namespace eviction, e.g. {"baselines": "oldest"}')
    # Resident service
    service_idle_minutes: float = setting(
        10.0,
        "the resident service exits after this many idle minutes",
        floor=0,
        above=True,
        ceiling=DAY_LIMIT * 24 * 60,
    )

    def to_json(self) -> dict[str, JsonValue]:
        """The settings as ``config.json`` would hold them (lists as lists)."""
        return {s.key: _json_form(getattr(self, s.key)) for s in SETTINGS}

    def with_values(self, values: Mapping[str, JsonValue], source: str | Path = "the settings") -> Config:
        """A copy with ``values`` applied, each checked as when ``config.json`` is read (a
        ``ConfigError`` naming ``source`` otherwise): for a caller that sets them in process."""
        user = dict(values)
        check_unknown_keys(user, source)
        check_types(user, source)
        check_values(user, source)
        typed: dict[str, Any] = {key: _typed(BY_KEY[key], value) for key, value in user.items()}
        return replace(self, **typed)


def _json_form(value: object) -> JsonValue:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value  # type: ignore[return-value]  # a setting's value is a JSON scalar otherwise


def _typed(rule: Setting, value: JsonValue) -> object:
    """A checked JSON value as its field holds it: a number of a float setting as a float, a list as
    a tuple."""
    if value is None:
        return None
    if rule.kind is float and isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return tuple(value)
    return value


SETTINGS: tuple[Setting, ...] = tuple(
    replace(f.metadata["setting"], key=f.name) for f in fields(Config) if "setting" in f.metadata
)
BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}
DEFAULT_CONFIG = Config()  # frozen: every project without a config.json shares it
DEFAULTS: dict[str, Any] = {s.key: s.default for s in SETTINGS}


MAX_CONFIG_BYTES = 1024 * 1024  # far above any real config.json


def load_config(data_dir: Path) -> Config:
    """The project's settings: the defaults, overridden by ``config.json`` when there is one."""
    path = data_dir / "config.json"
    config = DEFAULT_CONFIG
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
        raw = path.read_bytes()
    except FileNotFoundError:
        return config
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None
    try:
        text = raw.decode("utf-8-sig")  # a UTF-8 byte-order mark is harmless
    except UnicodeDecodeError:
        raise ConfigError(
            f"{path} is not UTF-8 text (saved as UTF-16?); save it as UTF-8 or delete it to use the defaults.",
            code="damaged_config",
        ) from None
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
    return config.with_values(user, path)


def check_unknown_keys(user: Mapping[str, JsonValue], path: str | Path) -> None:
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


_TYPE_NAMES = {int: "a whole number", float: "a number", str: "a string", dict: "an object", list: "a list"}


def check_types(user: Mapping[str, JsonValue], path: str | Path) -> None:
    """Each known setting must have the type of its default (a number where a number is expected:
    ``"500"`` is refused, not compared as text later).  Unknown keys are left to their own check."""
    for key, value in user.items():
        setting = BY_KEY.get(key)
        if setting is None or (value is None and setting.nullable):
            continue
        kind = setting.kind
        if kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, kind)
        if not ok:
            _bad_value(key, path, f"{_TYPE_NAMES.get(kind, kind.__name__)} like {json.dumps(setting.default)}", value)


def _bad_value(key: str, path: str | Path, rule: str, value: JsonValue) -> None:
    shown = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    raise ConfigError(
        f"{key} in {path} must be {rule}, not {shown[:80]}; fix it or remove the key to use the default.",
        code="bad_config",
    )


def check_values(user: Mapping[str, JsonValue], path: str | Path) -> None:
    """Each known setting of the right type (``check_types``) must also hold a value it can take, as
    its declaration says: one of its choices, a list of patterns, or a finite number within its floor
    and ceiling.  Checked when the file is read, so a bad value is the same error (exit 2) from
    every command, not only from the one that uses the setting."""
    for key, value in user.items():
        setting = BY_KEY.get(key)
        if setting is None or value is None:
            continue
        if setting.choices and value not in setting.choices:
            _bad_value(key, path, " or ".join(json.dumps(c) for c in setting.choices), value)
        elif isinstance(value, list) and not all(isinstance(v, str) and v for v in value):
            _bad_value(key, path, 'a list of file patterns such as ["*.pem"]', value)
        elif key == "store_eviction_by_namespace" and not (
            isinstance(value, dict) and all(v in (BY_KEY["store_eviction"].choices or ()) for v in value.values())
        ):
            _bad_value(key, path, 'an object of "lru" or "oldest" per namespace', value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            _check_number(setting, value, path)


def _check_number(setting: Setting, value: float, path: str | Path) -> None:
    floor, ceiling = setting.floor, setting.ceiling
    if isinstance(value, float) and not math.isfinite(value):
        bound = f" of at most {ceiling:g}" if ceiling is not None else ""
        _bad_value(setting.key, path, f"a finite number{bound}", value)
    if floor is not None and (value < floor or (setting.above and value <= floor)):
        _bad_value(setting.key, path, f"{'more than' if setting.above else 'at least'} {floor:g}", value)
    if ceiling is not None and value > ceiling:
        _bad_value(setting.key, path, f"at most {ceiling:g}", value)


def settings_markdown() -> str:
    """docs/settings.md: every setting from its declaration (``python -m contextware.storage.config``
    writes it; tests/unit/test_settings.py fails when it is stale)."""

    def allowed(s: Setting) -> str:
        if s.choices:
            return " or ".join(f"`{c}`" for c in s.choices)
        if s.kind in (int, float) and s.floor is not None:
            low = f"{'>' if s.above else '≥'} {s.floor:g}"
            return low + (f", ≤ {s.ceiling:g}" if s.ceiling is not None else "") + (", or null" if s.nullable else "")
        return {list: "list of patterns", dict: "object", bool: "true or false"}.get(s.kind, "text")

    rows = [f"| `{s.key}` | `{json.dumps(s.default)}` | {allowed(s)} | {s.help} |" for s in SETTINGS]
    return (
        "# Settings\n\n"
        "Generated from the declarations in `contextware/storage/config.py` by "
        "`uv run python -m contextware.storage.config`: do not edit.\n\n"
        "Each key of `contextware_data/config.json`, its default, the values it may take, and what it does. "
        "A key that is not a setting, or a value outside these, makes every command and tool exit 2.\n\n"
        "| setting | default | allowed | what it does |\n|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )


if __name__ == "__main__":
    target = Path(__file__).resolve().parents[2] / "docs" / "settings.md"
    target.write_text(settings_markdown(), encoding="utf-8")
    print(f"wrote {target}")
