"""What the session store answers (``kvstore``): its limits as a value, and each call's result with
its keys declared, as the JSON every front end prints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from contextware.core.json_types import JsonValue


@dataclass(frozen=True)
class StoreLimits:
    """The store's limits and eviction policies, from ``config.json`` (checked when it is read)."""

    max_bytes: int
    max_keys_per_namespace: int
    eviction: str  # lru | oldest
    eviction_by_namespace: Mapping[str, str]

    def policy_for(self, namespace: str) -> str:
        return self.eviction_by_namespace.get(namespace, self.eviction)


class KeyRef(TypedDict):
    """One stored value, named, with its size in bytes of JSON."""

    namespace: str
    key: str
    size: int


class Evicted(KeyRef):
    """A value a save removed to keep a limit: which limit, under which policy."""

    reason: str  # max_keys_per_namespace | max_bytes
    policy: str


class _Saved(TypedDict):
    namespace: str
    key: str
    size: int
    created: bool  # false: it replaced a value
    updated_at: str | None
    evicted: list[Evicted]


class SavedValue(_Saved, total=False):
    """``store save``: the value stored, and what it evicted."""

    redacted: dict[str, int]  # secrets replaced in its strings, by kind


class LoadedValue(TypedDict):
    """``store load``: the value and when it was saved."""

    namespace: str
    key: str
    data: JsonValue
    size: int
    updated_at: str | None


class KeyInfo(KeyRef):
    """A key as ``store list`` shows it (no value)."""

    created_at: str | None
    updated_at: str | None
    accessed_at: str | None


class KeyList(TypedDict):
    """``store list``: the keys of one namespace, or of all (``*``)."""

    namespace: str
    count: int
    bytes: int
    keys: list[KeyInfo]


class DeletedKeys(TypedDict):
    """``store delete``: what was removed (``key`` ``*``: a whole namespace)."""

    namespace: str
    key: str
    count: int
    bytes_freed: int
    deleted: list[KeyRef]


class OldestValue(TypedDict):
    namespace: str
    key: str
    updated_at: str | None


class OldestKey(TypedDict):
    key: str
    updated_at: str | None


class NamespaceStats(TypedDict):
    """One namespace in ``store stats``: its size against its limit and policy."""

    namespace: str
    keys: int
    bytes: int
    max_keys: int
    eviction: str
    oldest: OldestKey | None
    last_write: str | None
    last_access: str | None


class StoreStats(TypedDict):
    """``store stats``: the project's totals against the limits, and each namespace."""

    keys: int
    bytes: int
    max_bytes: int
    used: float  # share of max_bytes
    max_keys_per_namespace: int
    eviction: str
    eviction_by_namespace: dict[str, str]
    oldest: OldestValue | None
    last_write: str | None
    namespaces: list[NamespaceStats]


# What one ``store`` call answers, by its action (save, load, list, delete, stats).
StoreAnswer = SavedValue | LoadedValue | KeyList | DeletedKeys | StoreStats
