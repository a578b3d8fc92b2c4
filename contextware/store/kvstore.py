"""The namespaced session store: structured JSON state an agent wants back next session (baselines,
inferred API schemas, noise rules, ...).

One row of the ``kv`` table per (namespace, key); its id is ``"<namespace>/<key>"`` (a namespace
cannot contain ``/``, so the id is unambiguous).  ``data`` is the value as compact JSON and ``size``
its UTF-8 bytes.

Limits hold after every save: at most ``store_max_keys_per_namespace`` keys in a namespace and
``store_max_bytes`` of values in the project.  The save that would break one evicts, in the same
locked commit as the save itself, following each namespace's policy (``lru``: least recently loaded
or saved first; ``oldest``: the value saved longest ago first), and reports every eviction.  Under
the byte limit the candidates of all namespaces are ordered together, each by its own policy's time.
A value larger than ``store_max_bytes`` is refused.

Loads are frequent, so a load never writes the table (a Lance update rewrites the whole row, value
included, and adds a version): it appends one line to ``<data_dir>/kv-access.log``.  A row's
effective ``accessed_at`` is the later of its column (set by saves) and its last line in that log;
saves fold the log down when it grows.  A load never imports the embedding model.  These plain
functions are what the CLI, the hooks and the MCP server call; each returns a JSON-ready dict and
every failure is a ``ContextwareError``.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING, NoReturn, cast

from contextware.core.errors import ConfigError, FieldError, NotFoundError, StorageError, UsageError
from contextware.core.json_types import JsonValue
from contextware.core.redact import redact_json, refuse_secret_name
from contextware.core.system import write_atomic
from contextware.core.text import cut_at_word, iso, sql_str, utcnow
from contextware.storage.integrity import checksum, verify_rows
from contextware.storage.schemas import KV_TABLE, KvRow
from contextware.store.results import (
    DeletedKeys,
    Evicted,
    KeyInfo,
    KeyList,
    KeyRef,
    LoadedValue,
    NamespaceStats,
    OldestValue,
    SavedValue,
    StoreLimits,
    StoreStats,
)

if TYPE_CHECKING:
    from filelock import FileLock
    from lancedb.table import Table

    from contextware.storage.project import Project

ALL = "*"
POLICIES = ("lru", "oldest")
MAX_NAMESPACE_CHARS = 64
MAX_KEY_CHARS = 256
_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]*$")
ACCESS_LOG = "kv-access.log"
ACCESS_LOCK = "kv-access.lock"
ACCESS_LOG_FOLD_BYTES = 64 * 1024
META_COLUMNS = ["id", "namespace", "key", "size", "created_at", "updated_at", "accessed_at"]
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


# -- validation -----------------------------------------------------------------------------------
def _show(value: str, limit: int = 60) -> str:
    return repr(cut_at_word(value, limit))


def check_namespace(value: str | None, *, allow_all: bool = False) -> str:
    """A namespace: 1-64 letters, digits, ``_ . : -``; ``*`` (every namespace) where allowed."""
    if value is None or value == "":
        raise FieldError("A namespace is required: give {field}, e.g. baselines.", field="namespace")
    if value == ALL:
        if allow_all:
            return value
        raise FieldError("{field} '*' (every namespace) only works with delete, list and stats.", field="namespace")
    if len(value) > MAX_NAMESPACE_CHARS or not _NAMESPACE.match(value):
        raise UsageError(
            f"The namespace {_show(value)} is not valid: use 1-{MAX_NAMESPACE_CHARS} letters, digits, '_', '.', ':' "
            "or '-', starting with a letter or digit.",
            code="bad_namespace",
        )
    return refuse_secret_name(value, "The namespace")


def check_key(value: str | None, *, allow_all: bool = False) -> str:
    """A key: 1-256 printable characters, no surrounding spaces, no ``*`` (``*`` alone means every
    key where allowed)."""
    if value is None or value == "":
        raise FieldError("A key is required: give {field}.", field="key")
    if value == ALL:
        if allow_all:
            return value
        raise FieldError("{field} '*' (every key of the namespace) only works with delete.", field="key")
    if len(value) > MAX_KEY_CHARS:
        raise UsageError(
            f"The key {_show(value)} is {len(value)} characters long; the limit is {MAX_KEY_CHARS}.", code="bad_key"
        )
    if not value.isprintable() or value != value.strip():
        raise UsageError(
            f"The key {_show(value)} is not valid: use printable characters (no tabs or newlines) with no "
            "leading or trailing spaces.",
            code="bad_key",
        )
    if ALL in value:
        raise UsageError(
            f"The key {_show(value)} contains '*', which is reserved: '*' alone (with delete) means every key.",
            code="bad_key",
        )
    return refuse_secret_name(value, "The key")


def record_id(namespace: str, key: str) -> str:
    return f"{namespace}/{key}"


def parse_json(text: str, source: str = "--data") -> JsonValue:
    """Parse a JSON value, or raise ``UsageError`` saying where ``source`` is wrong."""
    if not text.strip():
        raise UsageError(
            f'{source} is empty; give a JSON value such as {{"a": 1}}, [1, 2] or "text". Nothing was saved.',
            code="bad_json",
        )

    def no_constant(name: str) -> NoReturn:
        raise ValueError(f"{name} is not valid JSON (use null, a number or a string)")

    try:
        return json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        # The message never quotes the text: it may be a file's content (`--data @/etc/shadow`).
        raise UsageError(
            f"{source} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}; nothing was saved.",
            code="bad_json",
            details={"line": exc.lineno, "column": exc.colno, "position": exc.pos},
        ) from None
    except ValueError as exc:
        raise UsageError(f"{source} is not valid JSON: {exc}; nothing was saved.", code="bad_json") from None
    except RecursionError:
        raise UsageError(f"{source} is nested too deeply to read; nothing was saved.", code="bad_json") from None


def encode(value: JsonValue) -> str:
    """Compact JSON text of a value (what is stored and what ``size`` counts)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:  # a lone surrogate (from "\ud800" in the input): keep it escaped
        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"The value cannot be stored as JSON ({exc}); nothing was saved.", code="bad_json") from None
    except RecursionError:
        raise UsageError("The value is nested too deeply to store; nothing was saved.", code="bad_json") from None


# -- settings -------------------------------------------------------------------------------------
def settings(project: "Project") -> StoreLimits:
    """The store's limits and policies from the project's config, checked."""
    cfg = project.config
    where = f"in {project.data_dir / 'config.json'}"

    def positive(name: str) -> int:
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} {where} must be a whole number of at least 1, not {value!r}.", code="bad_config")
        return value

    def policy(name: str, value: object) -> str:
        if not isinstance(value, str) or value not in POLICIES:
            raise ConfigError(f'{name} {where} must be "lru" or "oldest", not {value!r}.', code="bad_config")
        return value

    by_ns = cfg.store_eviction_by_namespace
    if not isinstance(by_ns, dict):
        raise ConfigError(
            f'store_eviction_by_namespace {where} must be an object such as {{"baselines": "oldest"}}.',
            code="bad_config",
        )
    return StoreLimits(
        max_bytes=positive("store_max_bytes"),
        max_keys_per_namespace=positive("store_max_keys_per_namespace"),
        eviction=policy("store_eviction", cfg.store_eviction),
        eviction_by_namespace={str(k): policy(f"store_eviction_by_namespace[{k!r}]", v) for k, v in by_ns.items()},
    )


def _human(size: int) -> str:
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


# -- access log (cheap LRU bookkeeping for loads) -------------------------------------------------
def _us(value: datetime | None) -> int:
    if value is None:
        return 0
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _from_us(value: int) -> datetime:
    from datetime import timedelta

    return _EPOCH + timedelta(microseconds=value)


def _access_lock(project: "Project") -> "FileLock":
    from filelock import FileLock

    project.lock_dir.mkdir(parents=True, exist_ok=True)
    return FileLock(str(project.lock_dir / ACCESS_LOCK), timeout=2)


def _touch(project: "Project", rid: str) -> None:
    """Record a load.  Best effort: LRU bookkeeping never fails a load."""
    line = json.dumps([rid, _us(utcnow())], ensure_ascii=False) + "\n"
    try:
        if not project.data_dir.is_dir():
            project.ensure_data_dir()
        with _access_lock(project), open(project.data_dir / ACCESS_LOG, "a", encoding="utf-8") as fh:
            fh.write(line)
    except Exception:  # noqa: BLE001
        pass


def _read_access(project: "Project") -> dict[str, int]:
    """id -> time (µs since the epoch) of its last logged load."""
    try:
        text = (project.data_dir / ACCESS_LOG).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    last: dict[str, int] = {}
    for line in text.splitlines():
        try:
            rid, when = json.loads(line)
        except (ValueError, TypeError):
            continue  # a line cut short by a crash
        if isinstance(rid, str) and isinstance(when, int) and when > last.get(rid, 0):
            last[rid] = when
    return last


def _fold_access_log(project: "Project", column: dict[str, int]) -> None:
    """Drop log lines that no longer matter (row gone, or a later save).  Called under the kv write
    lock with ``column`` = id -> accessed_at of every row now in the table."""
    path = project.data_dir / ACCESS_LOG
    try:
        if path.stat().st_size < ACCESS_LOG_FOLD_BYTES:
            return
        with _access_lock(project):
            keep = [[rid, when] for rid, when in _read_access(project).items() if when > column.get(rid, when)]
            write_atomic(path, "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in keep))
    except Exception:  # noqa: BLE001 - the log only refines LRU order
        pass


# -- reading --------------------------------------------------------------------------------------
def _meta_rows(table: "Table", where: str | None = None) -> list[KvRow]:
    query = table.search().select(META_COLUMNS)
    if where:
        query = query.where(where)
    return cast("list[KvRow]", query.limit(None).to_arrow().to_pylist())


def _read_meta(project: "Project", where: str | None = None) -> list[KvRow]:
    table = project.db.open_table(KV_TABLE)
    if table is None:
        return []
    return project.db.read(lambda: _meta_rows(table, where))


def _accessed(row: KvRow, access: dict[str, int]) -> int:
    return max(_us(row.get("accessed_at")), access.get(row["id"], 0))


def _public(row: KvRow, access: dict[str, int]) -> KeyInfo:
    return {
        "namespace": row["namespace"],
        "key": row["key"],
        "size": row["size"],
        "created_at": iso(row.get("created_at")),
        "updated_at": iso(row.get("updated_at")),
        "accessed_at": iso(_from_us(_accessed(row, access))),
    }


# -- the API --------------------------------------------------------------------------------------
def save(project: "Project", namespace: str, key: str, value: JsonValue) -> SavedValue:
    """Store a JSON value under (namespace, key), evicting by policy to keep the limits."""
    import pyarrow as pa

    namespace = check_namespace(namespace)
    key = check_key(key)
    redacted: dict[str, int] = {}
    try:
        value = redact_json(value, redacted)  # secrets in string leaves never reach the table
    except RecursionError:  # a value handed over already parsed (MCP) can be nested past the stack
        raise UsageError("The value is nested too deeply to store; nothing was saved.", code="bad_json") from None
    text = encode(value)
    size = len(text.encode("utf-8"))
    limits = settings(project)
    if size > limits.max_bytes:
        raise UsageError(
            f"The value is {_human(size)}{f' ({size} bytes)' if size >= 1024 else ''}, more than the whole store may hold "
            f"({_human(limits.max_bytes)}, store_max_bytes in config.json); nothing was saved.",
            code="value_too_large",
            details={"size": size, "max_bytes": limits.max_bytes},
        )
    rid = record_id(namespace, key)
    project.ensure_data_dir()

    def write(table: "Table") -> tuple[bool, datetime, list[Evicted]]:
        others = {r["id"]: r for r in _meta_rows(table)}
        existing = others.pop(rid, None)
        access = _read_access(project)
        now = utcnow()
        latest = max(
            (_us(r.get("updated_at")) for r in [*others.values(), *([existing] if existing else [])]), default=0
        )
        if _us(now) <= latest:  # keep save order == time order even if the clock steps back
            now = _from_us(latest + 1)
        row: KvRow = {
            "id": rid,
            "namespace": namespace,
            "key": key,
            "data": text,
            "size": size,
            "created_at": existing["created_at"] if existing and existing.get("created_at") else now,
            "updated_at": now,
            "accessed_at": now,
        }
        row["checksum"] = checksum(KV_TABLE, row)
        evicted = _plan_evictions(list(others.values()), namespace, size, limits, access)
        merge = table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        if evicted:
            doomed = ", ".join(sql_str(r["id"]) for r, _ in evicted)
            merge = merge.when_not_matched_by_source_delete(f"id IN ({doomed})")
        # One commit inserts or replaces the value and removes the evicted ones: the limits never
        # appear broken to a reader, and a crash leaves the store before or after the save.
        merge.execute(pa.Table.from_pylist([row], schema=table.schema))
        gone = {r["id"] for r, _ in evicted}
        column = {i: _us(r.get("accessed_at")) for i, r in others.items() if i not in gone}
        column[rid] = _us(now)
        _fold_access_log(project, column)
        gone_values: list[Evicted] = [
            {
                "namespace": r["namespace"],
                "key": r["key"],
                "size": r["size"],
                "reason": reason,
                "policy": limits.policy_for(r["namespace"]),
            }
            for r, reason in evicted
        ]
        return existing is None, now, gone_values

    created, now, gone_values = project.db.write(KV_TABLE, write)
    saved: SavedValue = {
        "namespace": namespace,
        "key": key,
        "size": size,
        "created": created,
        "updated_at": iso(now),
        "evicted": gone_values,
    }
    if redacted:
        saved["redacted"] = redacted
    return saved


def _plan_evictions(
    others: list[KvRow], namespace: str, size: int, limits: StoreLimits, access: dict[str, int]
) -> list[tuple[KvRow, str]]:
    """Which rows to remove so that, with the new value in ``namespace``, every limit holds."""

    def _rank(row: KvRow) -> tuple[int, int, str]:
        when = _accessed(row, access) if limits.policy_for(row["namespace"]) == "lru" else _us(row.get("updated_at"))
        return (when, _us(row.get("created_at")), row["id"])

    remaining = sorted(others, key=_rank)
    evicted: list[tuple[KvRow, str]] = []
    counts: dict[str, int] = {}
    for row in remaining:
        counts[row["namespace"]] = counts.get(row["namespace"], 0) + 1
    counts[namespace] = counts.get(namespace, 0) + 1
    max_keys = limits.max_keys_per_namespace
    for row in list(remaining):
        if counts[row["namespace"]] > max_keys:
            counts[row["namespace"]] -= 1
            evicted.append((row, "max_keys_per_namespace"))
            remaining.remove(row)
    total = size + sum(int(r["size"] or 0) for r in remaining)
    for row in list(remaining):
        if total <= limits.max_bytes:
            break
        total -= int(row["size"] or 0)
        evicted.append((row, "max_bytes"))
        remaining.remove(row)
    return evicted


def load(project: "Project", namespace: str, key: str, *, touch: bool = True) -> LoadedValue:
    """The value under (namespace, key); ``NotFoundError`` when there is none.  Records the access
    for LRU eviction unless ``touch`` is false."""
    namespace = check_namespace(namespace)
    key = check_key(key)
    rid = record_id(namespace, key)
    table = project.db.open_table(KV_TABLE)
    rows: list[KvRow] = []
    if table is not None:

        def _query() -> list[KvRow]:
            return cast(
                "list[KvRow]",
                table.search()
                .where(f"id = {sql_str(rid)}")
                .select(["id", "namespace", "key", "data", "size", "updated_at", "checksum"])
                .limit(1)
                .to_arrow()
                .to_pylist(),
            )

        rows = project.db.read(_query)
        verify_rows(KV_TABLE, rows)
    if not rows:
        raise NotFoundError(f"Nothing is stored under key {_show(key)} in namespace {_show(namespace)}.")
    row = rows[0]
    try:
        value = json.loads(row["data"])
    except (TypeError, ValueError):
        raise StorageError(
            f"The value under {_show(key)} in {_show(namespace)} is damaged; save it again.", code="damaged_data"
        ) from None
    if touch:
        _touch(project, rid)
    return {
        "namespace": namespace,
        "key": key,
        "data": value,
        "size": row["size"],
        "updated_at": iso(row["updated_at"]),
    }


def list_keys(project: "Project", namespace: str | None = None) -> KeyList:
    """The keys (without values) of one namespace, or of all of them (``None`` or ``*``)."""
    ns = None if namespace in (None, ALL) else check_namespace(namespace)
    rows = _read_meta(project, f"namespace = {sql_str(ns)}" if ns else None)
    access = _read_access(project) if rows else {}
    keys = sorted((_public(r, access) for r in rows), key=lambda r: (r["namespace"], r["key"]))
    return {"namespace": ns or ALL, "count": len(keys), "bytes": sum(k["size"] for k in keys), "keys": keys}


def delete(project: "Project", namespace: str, key: str | None) -> DeletedKeys:
    """Delete one key; ``key='*'`` clears a namespace; ``namespace='*'`` clears the whole store."""
    ns = check_namespace(namespace, allow_all=True)
    if ns == ALL:
        if key not in (None, "", ALL):
            raise FieldError("With every namespace ('*') leave out the {field} or give '*'.", field="key")
        key, where = ALL, "id IS NOT NULL"
    else:
        key = check_key(key, allow_all=True)
        where = f"namespace = {sql_str(ns)}" if key == ALL else f"id = {sql_str(record_id(ns, key))}"
    deleted: list[KeyRef] = []
    if project.db.open_table(KV_TABLE) is not None:

        def _write(table: "Table") -> list[KeyRef]:
            doomed = _meta_rows(table, where)
            if doomed:
                table.delete(where)
            return [{"namespace": r["namespace"], "key": r["key"], "size": r["size"]} for r in doomed]

        deleted = project.db.write(KV_TABLE, _write)
    if key != ALL and not deleted:
        raise NotFoundError(f"Nothing is stored under key {_show(key)} in namespace {_show(ns)}; nothing was deleted.")
    deleted.sort(key=lambda r: (r["namespace"], r["key"]))
    return {
        "namespace": ns,
        "key": key,
        "count": len(deleted),
        "bytes_freed": sum(r["size"] for r in deleted),
        "deleted": deleted,
    }


def stats(project: "Project", namespace: str | None = None) -> StoreStats:
    """Size and entries per namespace, the oldest value and the last write, against the limits.
    The totals are the project's; ``namespace`` only narrows the per-namespace list."""
    limits = settings(project)
    ns_filter = None if namespace in (None, ALL) else check_namespace(namespace)
    rows = _read_meta(project)
    access = _read_access(project) if rows else {}
    groups: dict[str, list[KvRow]] = {}
    for row in rows:
        groups.setdefault(row["namespace"], []).append(row)
    if ns_filter:
        groups = {ns_filter: groups.get(ns_filter, [])}

    def _oldest(items: list[KvRow]) -> OldestValue | None:
        if not items:
            return None
        row = min(items, key=lambda r: (_us(r.get("updated_at")), r["id"]))
        return {"namespace": row["namespace"], "key": row["key"], "updated_at": iso(row.get("updated_at"))}

    def _newest(items: list[KvRow], column: str) -> str | None:
        times = [_accessed(r, access) if column == "accessed_at" else _us(r.get("updated_at")) for r in items]
        return iso(_from_us(max(times))) if times else None

    namespaces: list[NamespaceStats] = []
    for name in sorted(groups):
        items = groups[name]
        first = _oldest(items)
        namespaces.append(
            {
                "namespace": name,
                "keys": len(items),
                "bytes": sum(r["size"] for r in items),
                "max_keys": limits.max_keys_per_namespace,
                "eviction": limits.policy_for(name),
                "oldest": {"key": first["key"], "updated_at": first["updated_at"]} if first else None,
                "last_write": _newest(items, "updated_at"),
                "last_access": _newest(items, "accessed_at"),
            }
        )
    total = sum(r["size"] for r in rows)
    return {
        "keys": len(rows),
        "bytes": total,
        "max_bytes": limits.max_bytes,
        "used": round(total / limits.max_bytes, 4),
        "max_keys_per_namespace": limits.max_keys_per_namespace,
        "eviction": limits.eviction,
        "eviction_by_namespace": dict(limits.eviction_by_namespace),
        "oldest": _oldest(rows),
        "last_write": _newest(rows, "updated_at"),
        "namespaces": namespaces,
    }
