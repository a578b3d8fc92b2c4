"""The LanceDB layer: connection, tables, the cross-process write lock, retries and maintenance.

Facts verified for lancedb 0.40: connections need ``read_consistency_interval=0`` to
see other processes' writes; ``merge_insert`` needs a non-nullable key declared with
``set_unenforced_primary_key``; concurrent commits can fail and must be retried; every write is a
new version and fragment, so tables are compacted as they grow.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar, cast

from contextware.core.errors import (
    DamagedDataError,
    ModelMismatchError,
    StorageError,
    disk_full,
    first_line,
    is_disk_full,
)
from contextware.core.settings import Settings, current_settings
from contextware.storage.layout import is_local_uri
from contextware.storage.schemas import FTS_COLUMN, MODEL_KEY, SCALAR_INDEXES, plain_table_schema, table_schema

if TYPE_CHECKING:
    from pathlib import Path

    import pyarrow as pa
    from lancedb.table import LanceTable, Table

    from contextware.storage.config import Config

T = TypeVar("T")

LOCK_TIMEOUT_S = 120.0
# The bound on rows that a write may leave outside a table's indexes: past it the writer folds them in
# (``Database._maintain``) before it returns.  A search scans its unindexed rows (~5 ms per 1,000 in
# the full-text search), so a bulk write (an import, a crawl, a long log) is indexed at once rather than
# after ``compact_after_fragments`` more writes.
MAX_UNINDEXED_ROWS = 1000
SCHEMA_TTL_S = 2.0
# Old versions kept after a compaction on an object store (see Database._keep_versions).
OBJECT_STORE_KEEP_MINUTES = 15
_RETRYABLE = ("conflict", "too many concurrent writers", "retryable", "commit", "temporarily")
RECOVERY_HINT = "run `uv run scripts/memory.py repair` (or `contextware memory repair`)"
# What an object store's client says when it cannot be reached or refuses the credentials.
_UNREACHABLE_SIGNS = (
    "generic s3 error",
    "generic gcs error",
    "generic microsoftazure error",
    "failed to resolve region",
    "error sending request",
    "dns error",
    "connection refused",
    "access denied",
    "accessdenied",
    "invalidaccesskeyid",
    "signaturedoesnotmatch",
    "credential",
)

# What Lance says when a data file or manifest is not one it wrote (truncated, overwritten, a flipped
# bit in its metadata, foreign); collected by damaging real tables (tests/unit/test_damaged_data.py).
_DAMAGE_SIGNS = (
    "not appear to be a lance file",
    "invalid magic",
    "lanceerror(io)",
    "lanceerror(schema)",
    "corrupt",
    "protobuf",
    "tail read position",
    "is outside file",
    "does not have sufficient data",
    "_indices/",  # an index file that is missing or unreadable (a damaged one reads as "legacy")
)


# What follows each write in this process, under the table's write lock: (after the write, answering
# a token; after a compaction that followed, given that token).  ``table_search.keep_snapshots`` sets
# it, so that the storage layer below it never imports it.
_follower: tuple[Callable[..., Any], Callable[..., None]] | None = None


def follow_writes(follower: tuple[Callable[..., Any], Callable[..., None]] | None) -> None:
    global _follower
    _follower = follower


def storage_options(settings: Settings | None = None) -> dict[str, str]:
    """Object-store settings from the standard AWS variables plus an endpoint override (``settings``:
    the project's, by default this process's)."""
    opts: dict[str, str] = {}
    settings = settings or current_settings()
    endpoint = settings.object_store_endpoint
    if endpoint:
        opts["endpoint"] = endpoint
        if endpoint.startswith("http://"):
            opts["allow_http"] = "true"
    region = settings.aws_region
    if region:
        opts["region"] = region
    return opts


def _is_retryable(exc: Exception) -> bool:
    if is_disk_full(exc):  # no retry frees space
        return False
    text = str(exc).lower()
    return any(marker in text for marker in _RETRYABLE)


def with_retries(fn: Callable[[], T], attempts: int = 8) -> T:
    for attempt in range(attempts):
        try:
            return fn()
        except Exception as exc:
            if attempt == attempts - 1 or not _is_retryable(exc):
                raise
            time.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))
    raise AssertionError("unreachable")


def vector_model(schema: "pa.Schema") -> str | None:
    field = schema.field("vector") if "vector" in schema.names else None
    if field is None or not field.metadata:
        return None
    raw = field.metadata.get(MODEL_KEY)
    return raw.decode() if raw else None


def vector_dim(schema: "pa.Schema") -> int | None:
    if "vector" not in schema.names:
        return None
    return getattr(schema.field("vector").type, "list_size", None)


class FragmentStats(TypedDict, total=False):
    num_fragments: int
    num_small_fragments: int


class NativeStats(TypedDict, total=False):
    """What ``Table.stats()`` hands back: a dict, whatever lancedb's annotation says."""

    total_bytes: int
    fragment_stats: FragmentStats


def native_stats(table: "Table") -> NativeStats:
    return cast(NativeStats, table.stats())


class DatabaseOwner(Protocol):
    """What the database needs of its project (``storage.project.Project``), named here so that the
    project imports the database and never the other way round."""

    db_uri: str
    settings: Settings

    @property
    def lock_dir(self) -> Path: ...

    @property
    def config(self) -> "Config": ...

    def ensure_data_dir(self) -> Path: ...


class Database:
    """One project's database.  Cheap to construct; connects on first use."""

    def __init__(self, project: DatabaseOwner) -> None:
        self.project = project
        self.uri = project.db_uri
        self._conn = None
        self._tables: dict[str, Any] = {}
        self._schemas: dict[int, tuple[Any, float, Any]] = {}  # id(table) -> (table, asked at, schema)
        self._indexed: set[str] = set()  # tables found with every index of ``wanted_indexes``

    # -- connection -----------------------------------------------------------------------------
    @property
    def conn(self) -> Any:
        if self._conn is None:
            from contextware.storage.lancedb_import import import_lancedb

            lancedb = import_lancedb()
            if is_local_uri(self.uri) and os.path.exists(self.uri) and not os.path.isdir(self.uri):
                raise DamagedDataError(f"The database path {self.uri} is not a directory; {RECOVERY_HINT}.")
            try:
                self._conn = lancedb.connect(
                    self.uri,
                    read_consistency_interval=timedelta(0),
                    storage_options=None if is_local_uri(self.uri) else storage_options(self.project.settings),
                )
            except Exception as exc:  # noqa: BLE001
                raise StorageError(f"Cannot open the database at {self.uri}: {first_line(exc)}.") from None
        return self._conn

    def _absent(self) -> bool:
        """A local database that was never written: reads answer "nothing" without creating it."""
        return self._conn is None and is_local_uri(self.uri) and not os.path.exists(self.uri)

    def table_names(self) -> list[str]:
        if self._absent():
            return []
        try:
            result = self.conn.list_tables()
            names = getattr(result, "tables", result)
            return sorted(names)
        except Exception as exc:  # noqa: BLE001
            raise StorageError(f"Cannot list the tables at {self.uri}: {first_line(exc)}.") from None

    # -- locking --------------------------------------------------------------------------------
    @contextmanager
    def write_lock(self, name: str) -> Iterator[None]:
        """Serialise writers of one table across processes (LanceDB's own commit retries give up
        past ~8 busy writers).  The lock sits in the local data dir, also for object-store URIs."""
        from filelock import FileLock, Timeout

        lock_dir = self.project.lock_dir
        try:
            lock_dir.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise StorageError(
                f"{lock_dir} is a file where the write-lock folder belongs; move it aside and try again."
            ) from None
        except PermissionError:
            raise StorageError(f"Cannot create the write-lock folder {lock_dir}: permission denied.") from None
        lock = FileLock(str(lock_dir / f"{name}.lock"), timeout=LOCK_TIMEOUT_S)
        try:
            lock.acquire()
        except Timeout:
            raise StorageError(
                f"Timed out after {LOCK_TIMEOUT_S:.0f} s waiting for the write lock on {name}.", code="lock_timeout"
            ) from None
        except OSError as exc:  # a read-only data dir: its lock file cannot be opened for writing
            raise StorageError(f"Cannot take the write lock on {name} in {lock_dir}: {exc.strerror}.") from None
        try:
            yield
        finally:
            lock.release()

    # -- tables ---------------------------------------------------------------------------------
    def open_table(self, name: str) -> "Table | None":
        """The table, or None when it was never created.  Adds columns that a newer version of the
        schema has (schema evolution).  A local table's files are checked by type first
        (``table_files.check``): a FIFO or a symlink where a data file belongs is damage, never opened."""
        if is_local_uri(self.uri) and not self._absent():
            from contextware.storage.table_files import check

            check(os.path.join(self.uri, f"{name}.lance"), name, RECOVERY_HINT)
        if name in self._tables:
            return self._tables[name]
        if self._absent() or self._never_created(name):
            return None
        try:
            table = self.conn.open_table(name)
        except StorageError:
            raise  # the database itself cannot be opened or reached: not a damaged table
        except Exception as exc:  # noqa: BLE001
            text = str(exc).lower()
            if is_unreachable(exc):
                raise StorageError(f"Cannot reach the {name} table at {self.uri}: {first_line(exc)}.") from None
            missing = (
                isinstance(exc, (ValueError, FileNotFoundError)) or "not found" in text or "does not exist" in text
            )
            if missing and not self._has_table_files(name):
                return None
            if missing:
                raise DamagedDataError(
                    f"The {name} table has data files but no readable manifest (its version history is gone); {RECOVERY_HINT}."
                ) from None
            raise DamagedDataError(f"The {name} table is damaged ({first_line(exc)}); {RECOVERY_HINT}.") from None
        if describes_nothing(table):
            raise DamagedDataError(
                f"The {name} table's newest manifest is unreadable (it describes no columns); {RECOVERY_HINT}."
            )
        self._evolve(name, table)
        self._tables[name] = table
        return table

    def _never_created(self, name: str) -> bool:
        """A local database folder without the table's folder: no need to ask LanceDB (a failed open
        costs ~3 ms, and recall asks for every table of its scope on every call)."""
        return (
            is_local_uri(self.uri)
            and os.path.isdir(self.uri)
            and not os.path.lexists(os.path.join(self.uri, f"{name}.lance"))
        )

    def _has_table_files(self, name: str) -> bool:
        """A local table folder holding data but no manifest: the manifests were lost, not never
        written (an empty table is not what it holds)."""
        if not is_local_uri(self.uri):
            return False
        folder = os.path.join(self.uri, f"{name}.lance")
        for sub in ("data", "_transactions"):
            try:
                if os.listdir(os.path.join(folder, sub)):
                    return True
            except OSError:
                continue
        return False

    def create_table(self, name: str, dim: int | None = None, model_id: str | None = None) -> "Table":
        """Open or create (under the lock) a table for vectors of ``model_id``; without ``dim`` a
        table of ``schemas.PLAIN_TABLES``, which has no vector."""
        table = self.open_table(name)
        if table is not None:
            return table
        self.project.ensure_data_dir()
        schema = plain_table_schema(name) if dim is None else table_schema(name, dim, model_id or "")
        with self.write_lock(name):
            table = self.open_table(name)  # a concurrent creator may have won the race
            if table is not None:
                return table
            try:
                table = with_retries(lambda: self.conn.create_table(name, schema=schema))
            except Exception as exc:  # noqa: BLE001
                if is_disk_full(exc):
                    raise disk_full(exc, f"the creation of the {name} table") from None
                # On an object store another machine (whose lock folder is not ours) may have won.
                table = self.open_table(name) if "already exists" in str(exc).lower() else None
                if table is not None:
                    return table
                raise StorageError(f"Cannot create the {name} table: {first_line(exc)}.") from None
            _declare_key_and_index(table)
        self._tables[name] = table
        return table

    def replace_table(self, name: str, data: "pa.Table") -> "Table":
        """Replace a table's rows and schema in one commit (a crash leaves the old or the new
        table, never neither).  Call with the write lock held."""
        table = with_retries(
            # on_bad_vectors: rows whose vector is missing (not embedded yet) stay null, as in ``add``.
            lambda: self.conn.create_table(name, data=data, schema=data.schema, mode="overwrite", on_bad_vectors="null")
        )
        _declare_key_and_index(table)
        self._tables[name] = table
        return table

    def _evolve(self, name: str, table: "Table") -> None:
        import pyarrow as pa

        current = table.schema
        wanted = table_schema(name, vector_dim(current) or 1, vector_model(current) or "")
        missing = [f for f in wanted if f.name not in current.names and f.name != "vector"]
        if not missing:
            return
        with self.write_lock(name):
            table.checkout_latest()
            still_missing = [f for f in missing if f.name not in table.schema.names]
            if still_missing:
                with_retries(lambda: table.add_columns(pa.schema([f.with_nullable(True) for f in still_missing])))

    def schema(self, table: "Table") -> "pa.Schema":
        """The table's schema, asked of LanceDB at most every ``SCHEMA_TTL_S`` seconds per table: each
        ask is a round trip through LanceDB's event loop (a recall asked it about ten times, ~15 ms
        under load).  Schemas only ever gain nullable columns, so a second-old answer is safe."""
        now = time.monotonic()
        cached = self._schemas.get(id(table))
        if cached is not None and cached[0] is table and now - cached[1] < SCHEMA_TTL_S:
            return cached[2]
        schema = table.schema
        self._schemas[id(table)] = (table, now, schema)
        return schema

    def check_model(self, name: str, table: "Table", model_id: str, dim: int) -> None:
        schema = self.schema(table)
        stored = vector_model(schema)
        if stored and (stored != model_id or vector_dim(schema) != dim):
            raise ModelMismatchError(
                f"The {name} vectors were made with {stored}, but the configured model is {model_id}; "
                "run `uv run scripts/memory.py reembed` to rebuild them with the configured model.",
            )

    # -- writes ---------------------------------------------------------------------------------
    def write(
        self,
        name: str,
        fn: Callable[[Any], T],
        *,
        dim: int | None = None,
        model_id: str | None = None,
        maintain: bool = True,
    ) -> T:
        """Run ``fn(table)`` under the table's write lock, retrying commit conflicts, then keep the
        table compact (``maintain`` False: a bulk writer's chunk, maintained once by its last write).
        ``fn`` must do its own read-check-write inside (dedup, supersession).
        ``dim``/``model_id`` are left out only for a table without vectors (``schemas.PLAIN_TABLES``)
        or one that exists already (a delete needs no model)."""
        table = self.create_table(name, dim, model_id)
        with self.write_lock(name):
            with _damage_reported():
                table.checkout_latest()
                result = with_retries(lambda: fn(table))
            # The write is committed: a failure to compact (a full disk, say) must not report it failed.
            try:
                self._after_write(name, table, maintain=maintain)
            except Exception:  # noqa: BLE001 - compaction is retried on the next write
                pass
        return result

    def _after_write(self, name: str, table: "Table", force: bool = False, maintain: bool = True) -> None:
        """Let this process's in-memory view of the table follow the write (``follow_writes``: the
        resident service's snapshots, so that its next recall costs what a recall costs), then
        maintain the table; a compaction only re-keys the view (same rows)."""
        follower = _follower
        followed = None
        if follower is not None:
            try:
                followed = follower[0](self, name, table)
            except Exception:  # noqa: BLE001 - the next search reads the table afresh
                followed = None
        if maintain and self._maintain(table, force=force) and follower is not None and followed is not None:
            follower[1](self, name, table, followed)

    def _maintain(self, table: "Table", force: bool = False) -> bool:
        """Compact small fragments, drop old versions and fold new rows into the indexes once a table
        has accumulated enough writes or more than ``MAX_UNINDEXED_ROWS`` rows outside an index.
        Called with the write lock held.

        On local disk old versions are dropped at once (``cleanup_older_than=0``): our writers are
        serialised by the lock, and a reader that loses a file to a concurrent cleanup retries
        (``Database.read``). Keeping minutes of versions would let a burst of saves grow the table
        25-fold. On an object store they are kept for a while (``_keep_versions``)."""
        import warnings

        threshold = self.project.config.compact_after_fragments
        self._ensure_indexes(table)
        if not force:
            try:
                stats = native_stats(table)
            except Exception:  # noqa: BLE001
                return False
            small = stats.get("fragment_stats", {}).get("num_small_fragments", 0)
            if small < threshold and unindexed_rows(table) <= MAX_UNINDEXED_ROWS:
                return False
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*cleanup_older_than.*")
            with_retries(lambda: table.optimize(cleanup_older_than=self._keep_versions()))
        return True

    def _ensure_indexes(self, table: "Table") -> None:
        """Create the indexes a table lacks (one written by an older version); they are filled by the
        ``optimize`` that follows or by a later one.  Checked once per table and process."""
        name = getattr(table, "name", "")
        if name in self._indexed:
            return
        try:
            have = {i.columns[0] for i in table.list_indices() if i.columns}
        except Exception:  # noqa: BLE001 - tried again on the next write
            return
        if _create_indexes(table, skip=have):
            self._indexed.add(name)

    def _keep_versions(self) -> timedelta:
        """How long old versions outlive a compaction.  On an object store, writers on other machines
        share no lock with us and may be reading or committing on top of a version for a while
        (measured: deleting its files at once broke their commits with "Not found")."""
        return timedelta(0) if is_local_uri(self.uri) else timedelta(minutes=OBJECT_STORE_KEEP_MINUTES)

    def compact(self, name: str) -> dict[str, Any]:
        table = self.open_table(name)
        if table is None:
            return {"table": name, "compacted": False}
        before = native_stats(table)
        with self.write_lock(name):
            table.checkout_latest()
            self._after_write(name, table, force=True)
        after = native_stats(table)
        return {
            "table": name,
            "bytes_before": before.get("total_bytes"),
            "bytes_after": after.get("total_bytes"),
            "fragments_before": before.get("fragment_stats", {}).get("num_fragments"),
            "fragments_after": after.get("fragment_stats", {}).get("num_fragments"),
        }

    # -- reads ----------------------------------------------------------------------------------
    def read(self, fn: Callable[[], T]) -> T:
        """Run a query, retrying once if a concurrent compaction removed a file under it."""
        with _damage_reported():
            try:
                return fn()
            except Exception as exc:
                text = str(exc).lower()
                if "not found" in text or "no such file" in text or "object at location" in text:
                    time.sleep(0.05)
                    return fn()
                raise


def describes_nothing(table: "Table") -> bool:
    """A manifest overwritten with NUL bytes reads as a version-0 table with no columns: every table
    of ours has columns, so that is damage (adding the missing columns to it failed as an internal
    error in every door)."""
    try:
        return len(table.schema) == 0
    except Exception:  # noqa: BLE001 - a schema that cannot be read is the same damage
        return True


def is_unreachable(exc: BaseException) -> bool:
    """Does the error say that an object store could not be reached or refused us (network, region,
    credentials)?  Lance reports those as ``LanceError(IO)`` too, which alone reads as damage."""
    text = str(exc).lower()
    return any(sign in text for sign in _UNREACHABLE_SIGNS)


def is_damage(exc: BaseException) -> bool:
    """Does Lance's error say that a file is not what it wrote?"""
    return not is_unreachable(exc) and any(sign in str(exc).lower() for sign in _DAMAGE_SIGNS)


@contextmanager
def _damage_reported() -> Iterator[None]:
    """A data file that is not what Lance wrote becomes ``damaged_data`` naming the recovery command;
    a full disk becomes ``disk_full`` (Lance commits atomically: nothing was written)."""
    try:
        yield
    except StorageError:
        raise
    except Exception as exc:
        if is_disk_full(exc):
            raise disk_full(exc) from None
        if is_damage(exc):
            raise DamagedDataError(f"The data files are damaged ({first_line(exc)}); {RECOVERY_HINT}.") from None
        raise


def wanted_indexes(table: "Table") -> list[tuple[str, str]]:
    """(column, type) of every index the table should have: FTS on the search text, BTREE on ``id``
    and the scalar indexes of ``schemas.SCALAR_INDEXES``, for the columns its schema has."""
    names = set(table.schema.names)
    wanted = [("id", "BTREE")]
    if FTS_COLUMN in names:  # tables without text to search (kv) have no FTS index
        wanted.append((FTS_COLUMN, "FTS"))
    wanted += [(c, kind) for c, kind in SCALAR_INDEXES.get(getattr(table, "name", ""), ()) if c in names]
    return wanted


def unindexed_rows(table: "Table") -> int:
    """The most rows any index of the table does not cover yet (0 when it has no index)."""
    worst = 0
    try:
        for index in table.list_indices():
            stats = table.index_stats(index.name)
            if stats is not None:
                worst = max(worst, int(stats.num_unindexed_rows))
    except Exception:  # noqa: BLE001 - an unreadable index is found by the search that needs it
        return 0
    return worst


def _create_indexes(table: "Table", skip: set[str] = frozenset()) -> bool:  # type: ignore[assignment]
    """Create the table's ``wanted_indexes`` not in ``skip``; True when none failed."""
    from lancedb.index import FTS, Bitmap, BTree

    configs: dict[str, Callable[[], FTS | BTree | Bitmap]] = {
        "FTS": lambda: FTS(with_position=False),
        "BTREE": BTree,
        "BITMAP": Bitmap,
    }
    ok = True
    for column, kind in wanted_indexes(table):
        if column in skip:
            continue

        def create(column: str = column, kind: str = kind) -> None:
            return table.create_index(column, config=configs[kind](), replace=False)

        try:
            with_retries(create)
        except Exception as exc:  # noqa: BLE001 - done already by a concurrent creator
            ok = ok and "already exists" in str(exc).lower()
    return ok


def _declare_key_and_index(table: "Table") -> None:
    """The primary key makes concurrent ``merge_insert`` safe; the indexes are created on the empty
    table so that every later fragment is covered and compaction can merge them all."""
    try:
        cast("LanceTable", table).set_unenforced_primary_key("id")
    except Exception:  # noqa: BLE001 - done already by a concurrent creator
        pass
    _create_indexes(table)
