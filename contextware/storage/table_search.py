"""The two searches of one table (nearest vectors and BM25), served from in-memory snapshots in a
long-lived process.

A one-shot process asks LanceDB for both (a brute-force cosine scan, the native full-text index).
The resident service (``keep_snapshots``) keeps per table a *snapshot*: its rows (every column but
the indexed text) as one Arrow table and its vectors as a float32 matrix, so a vector search is one
matrix-vector product; the full-text search still runs in LanceDB but fetches only ids and scores.
Filters are evaluated by LanceDB once per snapshot and kept as row masks.

A snapshot is keyed by the table's version (checked on every search, ~0.1 ms).  A write by any
process is caught up with, not reloaded: new rows live in new fragments, so the next search reads
those alone (~3 ms) and retires the rows they replace; a delete, a schema change, a table made
anew or a change to most of the table reads it afresh; this process's compaction only re-keys it
(``follow_write``).  Results equal LanceDB's own exact search on the same data.  Tables over
MAX_SNAPSHOT_ROWS rows stay in LanceDB alone.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from contextware.storage.integrity import CHECKED, verify_rows
from contextware.storage.layout import is_local_uri
from contextware.storage.schemas import FTS_COLUMN

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from lancedb.query import LanceVectorQueryBuilder
    from lancedb.table import Table

    from contextware.storage.database import Database

MAX_MASKS = 16  # filters kept per snapshot (``--since`` makes a new one per call)
LOAD_ATTEMPTS = 3  # a snapshot is re-read when a write landed while it was being read
# Larger tables are searched in LanceDB: their snapshot would hold ~1.5 KB a row in memory for good.
MAX_SNAPSHOT_ROWS = 100_000
FRAGMENT_BITS = 32  # a row address is fragment id << 32 | offset
NORM_BLOCK = 4096  # rows normed at a time when a snapshot is read

_snapshots: dict[tuple[str, str], "Snapshot"] | None = None
# What identifies a table's version (``version_key``): compared for equality, and by ``_same_table``.
VersionKey = tuple[object, ...]
_too_big: dict[tuple[str, str], VersionKey] = {}  # tables over MAX_SNAPSHOT_ROWS, at the version counted
_locks: dict[tuple[str, str], threading.Lock] = {}
_locks_guard = threading.Lock()
loads = 0  # whole tables read into snapshots (tests, benches)
_preloading = threading.Event()  # set while load_in_background reads the tables


def keep_snapshots() -> None:
    """Serve searches from in-memory snapshots from now on (the resident service calls this)."""
    global _snapshots
    if _snapshots is None:
        _snapshots = {}
    from contextware.storage.database import follow_writes

    follow_writes((follow_write, follow_compaction))


def drop_snapshots() -> None:
    """Back to LanceDB for every search (tests; a process that no longer wants the memory)."""
    global _snapshots
    _snapshots = None
    _too_big.clear()
    from contextware.storage.database import follow_writes

    follow_writes(None)


def snapshots_kept() -> bool:
    return _snapshots is not None


def columns(db: "Database", table: "Table") -> list[str]:
    """The columns a search returns: all but the indexed text (a file's can be large)."""
    return [c for c in db.schema(table).names if c != FTS_COLUMN]


# -- the searches -------------------------------------------------------------------------------------
def fts_rows(
    db: "Database", name: str, table: "Table", query: str, where: str | None, limit: int
) -> list[dict[str, Any]]:
    """The ``limit`` best BM25 rows (each with ``_score``).  Raises what LanceDB raises for a table
    without a full-text index or an unparsable query: callers decide."""
    snap = _snapshot(db, name, table)
    cols = ["id"] if snap is not None else columns(db, table)

    def run() -> "pa.Table":
        q = table.search(query, query_type="fts", fts_columns=FTS_COLUMN).select(cols).limit(limit)
        if where:
            q = q.where(where, prefilter=True)
        return q.to_arrow()

    found = db.read(run)
    if snap is None:
        return found.to_pylist()
    scores = dict(zip(found.column("id").to_pylist(), found.column("_score").to_pylist(), strict=True))
    rows = snap.rows(db, table, list(scores))
    for row in rows:
        row["_score"] = scores[row["id"]]
    return rows


def vector_rows(
    db: "Database", name: str, table: "Table", qvec: "np.ndarray | Sequence[float]", where: str | None, limit: int
) -> list[dict[str, Any]]:
    """The ``limit`` rows nearest to ``qvec`` by cosine (each with ``_distance``), best first."""
    snap = _snapshot(db, name, table)
    if snap is None:

        def run() -> list[dict[str, Any]]:
            q = (
                cast("LanceVectorQueryBuilder", table.search(qvec, vector_column_name="vector"))
                .distance_type("cosine")
                .select(columns(db, table))
                .limit(limit)
            )
            if where:
                q = q.where(where, prefilter=True)
            return q.to_list()

        return db.read(run)
    import numpy as np

    candidates = snap.allowed(db, table, where)
    if candidates.size == 0:
        return []
    sims = snap.similarities(qvec)[candidates]  # all rows at once: cheaper than copying the ones needed
    if limit < sims.size:
        top = np.argpartition(-sims, limit - 1)[:limit]
    else:
        top = np.arange(sims.size)
    top = top[np.lexsort((candidates[top], -sims[top]))]  # best first; ties in table order
    rows = snap.take([int(i) for i in candidates[top]])
    for row, sim in zip(rows, sims[top].tolist(), strict=True):
        row["_distance"] = 1.0 - sim
    return rows


# -- snapshots ----------------------------------------------------------------------------------------
def load_snapshots(db: "Database") -> None:
    """Open every table and read those with vectors into memory now, so that searches find them
    ready."""
    for name in db.table_names():
        table = db.open_table(name)
        if _snapshots is not None and table is not None and "vector" in db.schema(table).names:
            _snapshot(db, name, table, load=True)


def load_in_background(db: "Database") -> threading.Thread:
    """``load_snapshots`` in a thread (the service starts it once warmed up).  Until it is done,
    searches of a table not read yet ask LanceDB instead of waiting: the first caller of a cold
    service pays nothing for it (reading every table costs 0.1-0.4 s)."""
    _preloading.set()

    def run() -> None:
        try:
            load_snapshots(db)
        except Exception:  # noqa: BLE001 - a damaged table is reported by the search that needs it
            pass
        finally:
            _preloading.clear()

    thread = threading.Thread(target=run, name="contextware-snapshots", daemon=False)
    thread.start()
    return thread


class Snapshot:
    """One version of one table in memory: its rows (but the vectors) as Arrow, its vectors as a
    float32 matrix with each row's inverse norm, and filter masks."""

    def __init__(self, key: VersionKey, data: "pa.Table", name: str) -> None:
        import numpy as np

        self.key = key
        self.name = name
        self.frag = _last_fragment(data)
        data = data.drop_columns(["_rowaddr"]) if "_rowaddr" in data.column_names else data
        self.columns = data.column_names  # what a row holds, in the order LanceDB gives it
        self.index = {rid: i for i, rid in enumerate(data.column("id").to_pylist())}
        self._matrix, self.valid, self.scale = _matrix(data)
        self.n = data.num_rows  # rows held, retired ones included (``live`` is what the table has)
        self.live = self.n
        rows = data.drop_columns(["vector"]) if "vector" in self.columns else data
        self.data = rows.combine_chunks()  # one chunk: quicker takes
        self.usable = np.flatnonzero(self.scale)  # rows a vector search can return
        self.masks: dict[str, tuple["np.ndarray", int]] = {}  # where -> (rows, rows held when evaluated)
        self.checked = np.zeros(self.n, dtype=bool)  # rows found sound (see ``_check``)
        self._lock = threading.Lock()

    @property
    def matrix(self) -> "np.ndarray":
        """The vectors, one float32 row per row held (a view of a buffer grown by halves)."""
        return self._matrix[: self.n]

    def catch_up(self, db: "Database", table: "Table", key: VersionKey) -> "Snapshot | None":
        """This snapshot with the rows written since (those in fragments past ``frag``) appended and
        the rows they replace retired, as of version ``key``; None when only a fresh read can tell
        what the table holds.  A new object (sharing the vector buffer, whose rows past ``n`` this one
        never reads), so that searches running on this one meanwhile see it unchanged."""
        import copy

        import numpy as np
        import pyarrow as pa

        if not _same_table(self.key, key) or columns(db, table) != self.columns:
            return None
        cols = [*self.columns, "_rowaddr"]
        where = f"_rowaddr >= {(self.frag + 1) << FRAGMENT_BITS}"
        delta = db.read(lambda: table.search().where(where).select(cols).limit(None).to_arrow())
        if version_key(db, self.name, table) != key:
            return None  # another write landed meanwhile
        ids = delta.column("id").to_pylist()
        retired = [self.index[rid] for rid in ids if rid in self.index]
        live = self.live - len(retired) + len(ids)
        if live != table.count_rows() or len(ids) > max(1000, live // 2):
            return None  # rows were deleted, or most of the table is new (a compaction elsewhere)
        frag = _last_fragment(delta)
        delta = delta.drop_columns(["_rowaddr"]).combine_chunks()
        matrix, valid, scale = _matrix(delta)
        new = copy.copy(self)
        start, end = self.n, self.n + len(ids)
        if end > self._matrix.shape[0]:
            grown = np.zeros((max(end, self._matrix.shape[0] * 3 // 2 + 16), matrix.shape[1]), dtype=np.float32)
            grown[:start] = self.matrix
            new._matrix = grown
        if ids:
            new._matrix[start:end] = matrix
        new.scale = np.concatenate([self.scale, scale])
        new.valid = np.concatenate([self.valid, valid])
        new.checked = np.concatenate([self.checked, np.zeros(len(ids), dtype=bool)])
        if retired:
            new.scale[retired] = 0.0  # no search returns a retired row again
        added = delta.drop_columns(["vector"]) if "vector" in delta.column_names else delta
        data = pa.concat_tables([self.data, added.cast(self.data.schema)])
        new.data = data.combine_chunks() if data.column(0).num_chunks > 8 else data
        new.index = dict(self.index)
        for i, rid in enumerate(ids):
            new.index[rid] = start + i
        new.n, new.live, new.frag, new.key = end, live, max(self.frag, frag), key
        new.usable = np.flatnonzero(new.scale)
        with self._lock:
            new.masks = {w: (np.intersect1d(m, new.usable), at) for w, (m, at) in self.masks.items()}
        new._lock = threading.Lock()
        return new

    def rekey(self, db: "Database", table: "Table", key: VersionKey) -> "Snapshot":
        """This snapshot as of version ``key`` of a compaction: the same rows in new fragments."""
        import copy

        where = f"_rowaddr >= {(self.frag + 1) << FRAGMENT_BITS}"
        moved = db.read(lambda: table.search().where(where).select(["_rowaddr"]).limit(None).to_arrow())
        new = copy.copy(self)
        new.frag = max(self.frag, _last_fragment(moved))
        new.key = key
        return new

    def allowed(self, db: "Database", table: "Table", where: str | None) -> "np.ndarray":
        """The rows (indices, ascending) with a usable vector that pass ``where``."""
        if not where:
            return self.usable
        with self._lock:
            mask, at = self.masks.get(where, (None, 0))
        if mask is not None and at == self.n:
            return mask
        import numpy as np

        from contextware.core.text import sql_str

        # Evaluated by LanceDB, so the filter means exactly what it means in a LanceDB search; after a
        # catch-up only for the rows appended since (through the index on ``id``).  Ids unknown to
        # this snapshot belong to a newer version: the next search catches up anyway.
        condition = where
        if mask is not None:
            ids = [rid for rid, i in self.index.items() if i >= at]
            if len(ids) > 500:
                mask = None
            else:
                condition = f"({where}) AND id IN ({', '.join(sql_str(rid) for rid in ids) or 'NULL'})"

        def run() -> "pa.Table":
            return table.search().where(condition).select(["id"]).limit(None).to_arrow()

        passing = {self.index.get(rid) for rid in db.read(run).column("id").to_pylist()}
        keep = np.zeros(self.n, dtype=bool)
        keep[[i for i in passing if i is not None]] = True
        if mask is not None:
            keep[mask] = True
        mask = np.intersect1d(self.usable, np.flatnonzero(keep))
        with self._lock:
            if where not in self.masks and len(self.masks) >= MAX_MASKS:
                self.masks.pop(next(iter(self.masks)))
            self.masks[where] = (mask, self.n)
        return mask

    def similarities(self, qvec: "np.ndarray | Sequence[float]") -> "np.ndarray":
        """Cosine similarity of every row to ``qvec`` (0 for rows without a usable vector)."""
        import numpy as np

        q = np.asarray(qvec, dtype=np.float32)
        q = q / (float(np.linalg.norm(q)) or 1.0)
        # einsum, not ``@``: OpenBLAS's threads made this product 50x slower on a busy machine
        # (8 ms instead of 0.15 ms for 8,000 rows).
        with np.errstate(invalid="ignore", over="ignore"):
            sims: np.ndarray = np.einsum("ij,j->i", self.matrix, q) * self.scale[: self.n]
        return sims

    def take(self, indices: list[int]) -> list[dict[str, Any]]:
        """The rows at ``indices`` as LanceDB's ``to_list`` gives them (the vector as a list of floats,
        None when null).  The vectors come from the matrix: numpy's ``tolist`` is many times faster
        than Arrow's for a few dozen rows of 384 floats, and float32 -> float is exact either way."""
        if not indices:
            return []
        rows = self.data.take(indices).to_pylist()  # a retired row is never asked for: ``index`` moved on
        if "vector" in self.columns:
            vectors = self.matrix[indices].tolist()
            out = []
            for row, i, vec in zip(rows, indices, vectors, strict=True):
                row["vector"] = vec if self.valid[i] else None
                out.append({c: row[c] for c in self.columns})
            rows = out
        self._check(indices, rows)
        return rows

    def _check(self, indices: list[int], rows: list[dict[str, Any]]) -> None:
        """Check each row against its checksum the first time a search returns it, and mark it
        ``CHECKED`` so that the callers' ``verify_rows`` need not hash it again: the snapshot is
        read from disk once and never changes in memory, so a row found sound stays sound (a write
        makes the next search read a new snapshot, checked afresh as it is used; bytes damaged on
        disk after the read never reach the copy in memory).  Checking every row on every search
        was a fifth of a warm code search."""
        for i, row in zip(indices, rows, strict=True):
            if not self.checked[i]:
                verify_rows(self.name, [row])  # damaged_data, as the callers' own check would say
                self.checked[i] = True
            row[CHECKED] = True

    def rows(self, db: "Database", table: "Table", ids: list[str]) -> list[dict[str, Any]]:
        """The rows of ``ids`` in that order; ids written after this snapshot are read from LanceDB."""
        known = [self.index.get(rid) for rid in ids]
        if all(i is not None for i in known):
            return self.take([i for i in known if i is not None])
        from contextware.core.text import sql_str

        missing = [rid for rid, i in zip(ids, known, strict=True) if i is None]
        where = f"id IN ({', '.join(sql_str(rid) for rid in missing)})"
        cols = self.columns
        fetched = {
            r["id"]: r for r in db.read(lambda: table.search().where(where).select(cols).limit(len(missing)).to_list())
        }
        taken = iter(self.take([i for i in known if i is not None]))
        out = []
        for rid, i in zip(ids, known, strict=True):
            row = next(taken) if i is not None else fetched.get(rid)
            if row is not None:
                out.append(row)
        return out


def _matrix(data: "pa.Table") -> tuple["np.ndarray", "np.ndarray", "np.ndarray"]:
    """The ``vector`` column as an (n, dim) float32 matrix as stored (a null row is zeros), which
    rows are not null, and each row's inverse norm: 0 for a row LanceDB's cosine search skips
    (null, not finite, zero).  Filled chunk by chunk and normed in blocks, so that reading a table
    costs the matrix and little more (a whole-table float64 copy for the norms was 154 MB at 50,000
    rows, on top of two copies of the vectors)."""
    import numpy as np

    n = data.num_rows
    if "vector" not in data.column_names or n == 0:
        return np.zeros((n, 1), dtype=np.float32), np.zeros(n, dtype=bool), np.zeros(n, dtype=np.float32)
    column = data.column("vector")
    dim = column.type.list_size
    matrix = np.empty((n, dim), dtype=np.float32)
    valid = np.empty(n, dtype=bool)
    pos = 0
    for chunk in column.chunks:
        m = len(chunk)
        flat = chunk.values.to_numpy(zero_copy_only=False)[chunk.offset * dim : (chunk.offset + m) * dim]
        matrix[pos : pos + m] = np.asarray(flat, dtype=np.float32).reshape(m, dim)
        valid[pos : pos + m] = chunk.is_valid().to_numpy(zero_copy_only=False)
        pos += m
    matrix[~valid] = 0.0
    norms = np.empty(n, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for start in range(0, n, NORM_BLOCK):
            norms[start : start + NORM_BLOCK] = np.linalg.norm(
                matrix[start : start + NORM_BLOCK].astype(np.float64), axis=1
            )
        usable = valid & np.isfinite(norms) & (norms > 0)
        scale = np.where(usable, 1.0 / np.where(usable, norms, 1.0), 0.0).astype(np.float32)
    return matrix, valid, scale


def release_unused() -> None:
    """Hand back to the system what reading a whole table left cached: Arrow's allocator (the
    vector column, copied into the matrix) and glibc's heap (numpy's temporary copies, which glibc's
    growing mmap threshold keeps in the heap).  Measured on 20,000 log rows: the process kept 131 MB
    for a 40 MB snapshot, 93 MB after both."""
    import pyarrow as pa

    try:
        pa.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001 - an older pyarrow or another pool: nothing to give back
        pass
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc (musl): nothing to trim
            pass


def _last_fragment(data: "pa.Table") -> int:
    """The highest fragment id among ``data``'s rows (its ``_rowaddr`` column), -1 for none."""
    if "_rowaddr" not in data.column_names or data.num_rows == 0:
        return -1
    import pyarrow.compute as pc

    return int(pc.max(data.column("_rowaddr")).as_py()) >> FRAGMENT_BITS


def _same_table(old: VersionKey, new: VersionKey) -> bool:
    """Are two version keys of one table, ``new`` the later (not a table dropped and created again)?
    Locally: the same folders and a version number that went forward.  A re-created table may get
    the inode numbers of the one it replaced (the file system reuses them; a snapshot that trusted
    the inode alone went on serving the dropped rows), so the table folder's change time (new
    only when Lance adds a subfolder, such as the first index) and the version count too."""
    if len(old) == 4 and len(new) == 4:  # local: the folders' identity and the latest version
        was, now = old[1], new[1]
        return old[0] == new[0] and isinstance(was, int) and isinstance(now, int) and now > was
    return isinstance(old[0], int) and isinstance(new[0], int) and new[0] > old[0]


U64_MAX = (1 << 64) - 1


def _latest_version(names: tuple[str, ...]) -> int:
    """The latest version among a ``_versions`` folder's manifests (``N.manifest``, or
    ``2**64 - 1 - N`` in Lance's newer naming, where the latest sorts first)."""
    latest = 0
    for name in names:
        stem, _, ext = name.partition(".")
        if ext == "manifest" and stem.isdigit():
            n = int(stem)
            latest = max(latest, U64_MAX - n if n > 1 << 63 else n)
    return latest


def follow_write(db: "Database", name: str, table: "Table") -> VersionKey | None:
    """Called by the writer, under the table's write lock, right after a write: bring this process's
    snapshot of the table (if any) up to the new version now, and answer its key (None when there is
    no snapshot to follow), so that a compaction that follows can re-key it (``follow_compaction``)."""
    cache = _snapshots
    if cache is None or (db.uri, name) not in cache:
        return None
    snap = _snapshot(db, name, table, load=True)
    return snap.key if snap is not None else None


def follow_compaction(db: "Database", name: str, table: "Table", before: VersionKey) -> None:
    """The writer compacted the table from version ``before``: same rows, new version and fragments."""
    cache = _snapshots
    if cache is None:
        return
    slot = (db.uri, name)
    with _lock_for(slot):
        snap = cache.get(slot)
        if snap is not None and snap.key == before:
            key = version_key(db, name, table)
            if _same_table(before, key):
                cache[slot] = snap.rekey(db, table, key)


def version_key(db: "Database", name: str, table: "Table") -> VersionKey:
    """What changes with every commit and every re-creation of the table.  On local disk: the
    table and version folders' identity, the latest version, and the version folder's file names (each commit adds a manifest; a re-created table
    has a new folder), read without a round trip through LanceDB's event loop, which the searches
    running at the same time keep busy (that cost 3-4 ms a check); elsewhere the version and its
    timestamp."""
    if is_local_uri(db.uri):
        home = os.path.join(db.uri, f"{name}.lance")
        folder = os.path.join(home, "_versions")
        try:
            st = os.stat(folder)
            names = tuple(sorted(os.listdir(folder)))
            home_st = os.stat(home)
            identity = (home_st.st_ino, home_st.st_ctime_ns, st.st_ino)
            return (identity, _latest_version(names), st.st_mtime_ns, names)
        except OSError:
            return (table.version, None)
    versions = table.list_versions()
    return (table.version, str(versions[-1].get("timestamp")) if versions else None)


def _lock_for(key: tuple[str, str]) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _snapshot(db: "Database", name: str, table: "Table", load: bool | None = None) -> Snapshot | None:
    """The table's current snapshot (loaded when the table changed), or None when snapshots are off.
    ``load`` False (default: while ``load_in_background`` runs): only a snapshot already current."""
    cache = _snapshots
    if cache is None:
        return None
    slot = (db.uri, name)
    if not (load if load is not None else not _preloading.is_set()):
        snap = cache.get(slot)
        return snap if snap is not None and snap.key == version_key(db, name, table) else None
    with _lock_for(slot):  # two searches of one table at once load it once
        for _ in range(LOAD_ATTEMPTS):
            key = version_key(db, name, table)
            snap = cache.get(slot)
            if snap is not None and snap.key == key:
                return snap
            if _too_big.get(slot) == key:
                return None
            caught = snap.catch_up(db, table, key) if snap is not None else None
            if caught is not None:
                cache[slot] = caught
                return caught
            if table.count_rows() > MAX_SNAPSHOT_ROWS:
                cache.pop(slot, None)
                _too_big[slot] = key
                return None
            cols = [*columns(db, table), "_rowaddr"]

            def read_all(cols: list[str] = cols) -> "pa.Table":
                return table.search().select(cols).limit(None).to_arrow()

            data = db.read(read_all)
            if version_key(db, name, table) == key:  # no write landed while reading
                global loads
                loads += 1
                snap = cache[slot] = Snapshot(key, data, name)
                del data
                release_unused()
                return snap
    cache.pop(slot, None)
    return None  # the table is being written without pause: ask LanceDB directly this time
