"""Project settings: defaults overridden by ``<data_dir>/config.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import ConfigError

DEFAULTS: dict[str, Any] = {
    # Memory
    "max_fact_chars": 4000,
    "max_episode_chars": 8000,
    "log_chunk_chars": 1500,
    "max_log_chars": 2_000_000,
    "similar_threshold": 0.80,
    # Retrieval (calibrated on bench/data/memory_eval.json, see bench/recall_quality.py)
    "recall_candidates": 30,
    # Storage maintenance: compact when a table has this many small fragments.
    "compact_after_fragments": 24,
}


def load_config(data_dir: Path) -> dict[str, Any]:
    path = data_dir / "config.json"
    config = dict(DEFAULTS)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return config
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None
    try:
        user = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid JSON (line {exc.lineno}); fix it or delete it to use the defaults.",
            code="damaged_config",
        ) from None
    if not isinstance(user, dict):
        raise ConfigError(f"{path} must hold a JSON object; fix it or delete it to use the defaults.", code="damaged_config")
    config.update(user)
    return config
