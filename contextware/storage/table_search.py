"""The two searches of one table (nearest vectors and BM25), served from in-memory snapshots in a
long-lived process.

A one-shot process asks LanceDB for both: a brute-force cosine scan of the ``vector`` column and
the native full-text index, each returning the rows with every column but the indexed text.

The resident service (``keep_snapshots``) keeps, per table, a *snapshot*: the table's rows (every
column but the indexed text) as one Arrow table, and its vectors as a float32 matrix with each row's
inverse norm.  A vector search is then one matrix-vector product; the full-text search still runs in
LanceDB (its BM25 is what recall is calibrated on) but fetches only ids and scores, the rows coming
from the snapshot.  Filters (``where``) are evaluated by LanceDB once per snapshot and kept as row masks.

A snapshot is keyed by the table's version folder (its identity and the manifests in it; the version
and its timestamp on an object store), checked on every search (~0.1 ms): a write by any process (a
new version), a compaction, or a table dropped and created again (its versions start over at 1; the
folder is new) makes the next search load a fresh snapshot.  The result equals LanceDB's own (exact,
brute-force) search on the same data: the same candidates in the same order, up to ties in float
rounding.  Tables over MAX_SNAPSHOT_ROWS rows stay in LanceDB alone (memory), as does every search in
a one-shot process (reading a whole table costs more than one search of it).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from contextware.storage.integrity import CHECKED, verify_rows
from contextware.storage.layout import is_local_uri
from contextware.storage.schemas import FTS_COLUMN

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from contextware.storage.database import Database

MAX_MASKS = 16  # filters kept per snapshot (``--since`` makes a new one per call)
LOAD_ATTEMPTS = 3  # a snapshot is re-read when a write landed while it was being read
# Larger tables are searched in LanceDB: their snapshot would hold ~1.5 KB a row in memory for good.
MAX_SNAPSHOT_ROWS = 100_000

_snapshots: dict[tuple[str, str], "Snapshot"] | None = None
_too_big: dict[tuple[str, str], tuple] = {}  # tables over MAX_SNAPSHOT_ROWS, at the version counted
_locks: dict[tuple[str, str], threading.Lock] = {}
_locks_guard = threading.Lock()
_preloading = threading.Event()  # set while load_in_background reads the tables


def keep_snapshots() -> None:
    """Serve searches from in-memory snapshots from now on (the resident service calls this)."""
    global _snapshots
    if _snapshots is None:
        _snapshots = {}


def drop_snapshots() -> None:
    """Back to LanceDB for every search (tests; a process that no longer wants the memory)."""
    global _snapshots
    _snapshots = None
    _too_big.clear()


def snapshots_kept() -> bool:
    return _snapshots is not None


def columns(db: "Database", table: Any) -> list[str]:
    """The columns a search returns: all but the indexed text (a file's can be large)."""
    return [c for c in db.schema(table).names if c != FTS_COLUMN]


# -- the searches -------------------------------------------------------------------------------------
def fts_rows(db: "Database", name: str, table: Any, query: str, where: str | None, limit: int) -> list[dict]:
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


def vector_rows(db: "Database", name: str, table: Any, qvec: Any, where: str | None, limit: int) -> list[dict]:
    """The ``limit`` rows nearest to ``qvec`` by cosine (each with ``_distance``), best first."""
    snap = _snapshot(db, name, table)
    if snap is None:

        def run() -> list[dict]:
            q = (
                table.search(qvec, vector_column_name="vector")
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

    def __init__(self, key: tuple, data: "pa.Table", name: str) -> None:
        import numpy as np

        self.key = key
        self.name = name
        self.columns = data.column_names  # what a row holds, in the order LanceDB gives it
        self.index = {rid: i for i, rid in enumerate(data.column("id").to_pylist())}
        self.matrix, self.valid, self.scale = _matrix(data)
        self.data = data.drop_columns(["vector"]) if "vector" in self.columns else data
        self.usable = np.flatnonzero(self.scale)  # rows a vector search can return
        self.masks: dict[str, "np.ndarray"] = {}
        self.checked = np.zeros(len(self.index), dtype=bool)  # rows found sound (see ``_check``)
        self._lock = threading.Lock()

    def allowed(self, db: "Database", table: Any, where: str | None) -> "np.ndarray":
        """The rows (indices, ascending) with a usable vector that pass ``where``."""
        if not where:
            return self.usable
        with self._lock:
            mask = self.masks.get(where)
        if mask is not None:
            return mask
        import numpy as np

        def run() -> "pa.Table":
            return table.search().where(where).select(["id"]).limit(None).to_arrow()

        # Evaluated by LanceDB, so the filter means exactly what it means in a LanceDB search.  Ids
        # unknown to this snapshot belong to a newer version: the next search reloads anyway.
        passing = {self.index.get(rid) for rid in db.read(run).column("id").to_pylist()}
        keep = np.zeros(len(self.index), dtype=bool)
        keep[[i for i in passing if i is not None]] = True
        mask = np.intersect1d(self.usable, np.flatnonzero(keep))
        with self._lock:
            if len(self.masks) >= MAX_MASKS:
                self.masks.pop(next(iter(self.masks)))
            self.masks[where] = mask
        return mask

    def similarities(self, qvec: Any) -> "np.ndarray":
        """Cosine similarity of every row to ``qvec`` (0 for rows without a usable vector)."""
        import numpy as np

        q = np.asarray(qvec, dtype=np.float32)
        q = q / (float(np.linalg.norm(q)) or 1.0)
        # einsum, not ``@``: OpenBLAS's threads made this product 50x slower on a busy machine
        # (8 ms instead of 0.15 ms for 8,000 rows).
        with np.errstate(invalid="ignore", over="ignore"):
            sims: np.ndarray = np.einsum("ij,j->i", self.matrix, q) * self.scale
        return sims

    def take(self, indices: list[int]) -> list[dict]:
        """The rows at ``indices`` as LanceDB's ``to_list`` gives them (the vector as a list of floats,
        None when null).  The vectors come from the matrix: numpy's ``tolist`` is many times faster
        than Arrow's for a few dozen rows of 384 floats, and float32 -> float is exact either way."""
        if not indices:
            return []
        rows = self.data.take(indices).to_pylist()
        if "vector" in self.columns:
            vectors = self.matrix[indices].tolist()
            out = []
            for row, i, vec in zip(rows, indices, vectors, strict=True):
                row["vector"] = vec if self.valid[i] else None
                out.append({c: row[c] for c in self.columns})
            rows = out
        self._check(indices, rows)
        return rows

    def _check(self, indices: list[int], rows: list[dict]) -> None:
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

    def rows(self, db: "Database", table: Any, ids: list[str]) -> list[dict]:
        """The rows of ``ids`` in that order; ids written after this snapshot are read from LanceDB."""
        known = [self.index.get(rid) for rid in ids]
        if all(i is not None for i in known):
            return self.take([i for i in known if i is not None])
        from contextware.text import sql_str

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
    (null, not finite, zero)."""
    import numpy as np

    n = data.num_rows
    if "vector" not in data.column_names or n == 0:
        return np.zeros((n, 1), dtype=np.float32), np.zeros(n, dtype=bool), np.zeros(n, dtype=np.float32)
    col = data.column("vector").combine_chunks()
    dim = col.type.list_size
    flat = col.values.to_numpy(zero_copy_only=False)[col.offset * dim : (col.offset + n) * dim]
    matrix = np.asarray(flat, dtype=np.float32).reshape(n, dim).copy()
    valid = col.is_valid().to_numpy(zero_copy_only=False)
    matrix[~valid] = 0.0
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
        usable = valid & np.isfinite(norms) & (norms > 0)
        scale = np.where(usable, 1.0 / np.where(usable, norms, 1.0), 0.0).astype(np.float32)
    return matrix, valid, scale


def version_key(db: "Database", name: str, table: Any) -> tuple:
    """What changes with every commit and every re-creation of the table.  On local disk: the
    version folder's identity and its file names (each commit adds a manifest; a re-created table
    has a new folder), read without a round trip through LanceDB's event loop, which the searches
    running at the same time keep busy (that cost 3-4 ms a check); elsewhere the version and its
    timestamp."""
    if is_local_uri(db.uri):
        folder = os.path.join(db.uri, f"{name}.lance", "_versions")
        try:
            st = os.stat(folder)
            return (st.st_ino, st.st_mtime_ns, tuple(sorted(os.listdir(folder))))
        except OSError:
            return (table.version, None)
    versions = table.list_versions()
    return (table.version, str(versions[-1].get("timestamp")) if versions else None)


def _lock_for(key: tuple[str, str]) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _snapshot(db: "Database", name: str, table: Any, load: bool | None = None) -> Snapshot | None:
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
            if table.count_rows() > MAX_SNAPSHOT_ROWS:
                cache.pop(slot, None)
                _too_big[slot] = key
                return None
            data = db.read(lambda: table.search().select(columns(db, table)).limit(None).to_arrow())
            if version_key(db, name, table) == key:  # no write landed while reading
                snap = cache[slot] = Snapshot(key, data.combine_chunks(), name)  # one chunk: quicker takes
                return snap
    cache.pop(slot, None)
    return None  # the table is being written without pause: ask LanceDB directly this time
