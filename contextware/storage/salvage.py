"""Repair of a damaged local table: keep every row that can still be read, drop nothing else.

1. **Manifests.**  A table whose newest manifest cannot be read is rolled back to the newest one that
   can: the unreadable manifests are moved aside (under ``<data_dir>/damaged/``) newest first, so
   Lance opens the newest readable version.  A table with no readable manifest at all cannot be read
   by anyone: its folder is moved aside whole.
2. **Rows.**  At the newest readable version, the rows are read by offset, halving a failing range
   down to single rows, so one damaged fragment (or page) costs only its own rows.  A row that cannot
   be read whole is read without its vector (re-embedded afterwards).  Each row read is checked
   against its checksum (``integrity.row_problem``): damaged content is lost, a damaged vector is
   dropped and re-embedded.
3. **Rewrite.**  The table folder is copied aside first (nothing is ever deleted by a repair), then
   the salvaged rows replace the table in one commit and the old versions are cleaned up.

Counts per table: ``kept`` (read intact), ``recovered`` (kept without their damaged vector, re-embedded
later), ``lost`` (known to exist but unreadable; ``None`` when unknown, as for versions whose manifest
is gone).  Polluted-log cleaning, if added, is a separate step of ``memory.maintenance.repair``.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.core.errors import DamagedDataError, disk_full, first_line, is_disk_full
from contextware.storage.database import describes_nothing, is_damage
from contextware.storage.integrity import VECTOR_COLUMN, row_problem
from contextware.storage.schemas import FTS_COLUMN
from contextware.storage.table_files import copy_aside, move_irregular

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.database import Database

_U64 = 2**64 - 1


def manifest_version(file_name: str) -> int | None:
    """The version of a manifest file: ``N.manifest`` (v1 names) or ``(2^64-1-N).manifest`` (v2)."""
    stem, dot, ext = file_name.partition(".")
    if ext != "manifest" or not dot or not stem.isdigit():
        return None
    number = int(stem)
    return _U64 - number if number > 2**63 else number


def _manifests(folder: Path) -> list[tuple[int, Path]]:
    """(version, path) of every manifest, newest first."""
    try:
        names = os.listdir(folder / "_versions")
    except OSError:
        return []
    found = [(v, folder / "_versions" / n) for n in names if (v := manifest_version(n)) is not None]
    return sorted(found, reverse=True)


def _move_aside(path: Path, aside: Path) -> None:
    aside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(path), str(aside))


def _open(db: "Database", name: str) -> "Table":
    db._tables.pop(name, None)
    return db.conn.open_table(name)


def _read(table: "Table", offsets: list[int], columns: list[str]) -> list[dict[str, Any]]:
    return table.take_offsets(offsets).select(columns).to_arrow().to_pylist()


def _salvage_rows(table: "Table", count: int, columns: list[str]) -> tuple[list[dict[str, Any]], int]:
    """Every readable row (by range, halving failing ranges) and how many rows could not be read."""
    rows: list[dict[str, Any]] = []
    lost = 0
    without_vector = [c for c in columns if c != VECTOR_COLUMN]
    pending = [(0, count)]
    while pending:
        start, stop = pending.pop()
        try:
            rows += _read(table, list(range(start, stop)), columns)
            continue
        except Exception:  # noqa: BLE001 - a damaged page: narrow down
            pass
        if stop - start > 1:
            mid = (start + stop) // 2
            pending += [(mid, stop), (start, mid)]
            continue
        try:
            row = _read(table, [start], without_vector)[0]
            row[VECTOR_COLUMN] = None
            row["_vector_lost"] = True
            rows.append(row)
        except Exception:  # noqa: BLE001
            lost += 1
    return rows, lost


def _index_works(table: "Table") -> bool:
    """Does the full-text index answer?  A damaged index file fails every search that uses it."""
    if FTS_COLUMN not in table.schema.names:
        return True
    try:
        table.search("repair", query_type="fts", fts_columns=FTS_COLUMN).limit(1).to_list()
    except Exception as exc:  # noqa: BLE001
        return not is_damage(exc)
    return True


def repair_table(db: "Database", name: str, damaged_dir: Path) -> dict[str, Any]:
    """Repair one local table in place (see the module docstring); returns its report.  Call with
    the table's write lock held."""
    import pyarrow as pa

    folder = Path(db.uri) / f"{name}.lance"
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside = damaged_dir / f"{name}-{stamp}"
    report: dict[str, Any] = {"status": "ok", "kept": 0, "recovered": 0, "lost": 0}

    if folder.is_symlink():  # the whole table elsewhere: never followed, its link moved aside
        target = aside.with_suffix(".lance")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(folder, target)
        db._tables.pop(name, None)
        return {**report, "status": "moved", "lost": None, "moved_to": str(target), "reason": "a symlink, not a table"}

    # 0. Files that are not regular files (a FIFO, a device, a symlink) are moved aside unopened.
    irregular = move_irregular(folder, aside) if folder.is_dir() and not folder.is_symlink() else []
    if irregular:
        report.update(status="repaired", irregular_moved_aside=irregular, moved_to=str(aside))

    # 1. Roll back past unreadable manifests.
    dropped: list[int] = []
    table = None
    while table is None:
        manifests = _manifests(folder)
        if not manifests:
            target = aside.with_suffix(".lance")
            _move_aside(folder, target)
            db._tables.pop(name, None)
            return {
                "status": "moved",
                "kept": 0,
                "recovered": 0,
                "lost": None,
                "versions_dropped": len(dropped),
                "moved_to": str(target),
                "reason": "no readable manifest: the table's rows cannot be read, its files are kept aside",
            }
        try:
            table = _open(db, name)
            if describes_nothing(table):  # a manifest of NUL bytes opens as a table without columns
                table = None
                raise DamagedDataError("the newest manifest describes no columns")
        except Exception as exc:
            if not (is_damage(exc) or isinstance(exc, (ValueError, FileNotFoundError, DamagedDataError))):
                raise
            version, path = manifests[0]
            _move_aside(path, aside / "_versions" / path.name)
            dropped.append(version)
    if dropped:
        report.update(status="rolled_back", version=table.version, versions_dropped=len(dropped), lost=None)
        report["moved_to"] = str(aside)

    # 2. Read every row that can be read, and check it.
    columns = list(table.schema.names)
    count = table.count_rows()
    try:
        rows = table.to_arrow().to_pylist()
        unreadable = 0
    except Exception:  # noqa: BLE001
        rows, unreadable = _salvage_rows(table, count, columns)
    kept: list[dict[str, Any]] = []
    recovered = bad = 0
    for row in rows:
        vector_lost = row.pop("_vector_lost", False)
        problem = row_problem(name, row)
        if problem == "content":
            bad += 1
            continue
        if problem == "vector" or vector_lost:
            row[VECTOR_COLUMN] = None
            recovered += 1
        kept.append(row)
    report["kept"] = len(kept) - recovered
    report["recovered"] = recovered
    if report["lost"] is not None:
        report["lost"] = unreadable + bad
    index_broken = not _index_works(table)
    if index_broken:
        report["index_rebuilt"] = True
    if not (unreadable or bad or recovered or index_broken or irregular):
        return report

    # 3. Keep a copy of everything, then replace the table with what was salvaged.
    backup = aside.with_suffix(".lance")
    report["backup_bytes"] = copy_aside(folder, backup)  # regular files only, bounded by their sizes
    data = pa.Table.from_pylist(kept, schema=table.schema)
    try:
        fresh = db.replace_table(name, data)
        db._maintain(fresh, force=True)
    except Exception as exc:  # noqa: BLE001
        if is_disk_full(exc):
            raise disk_full(exc, f"the repair of the {name} table") from None
        raise DamagedDataError(
            f"repair could not rewrite the {name} table ({first_line(exc)}); a copy is kept at {backup}."
        ) from None
    report.update(status="repaired" if not dropped else "rolled_back", backup=str(backup))
    return report


def verify_readable(db: "Database", name: str) -> None:
    """Raise ``damaged_data`` unless every row of the table reads back intact."""
    from contextware.storage.integrity import verify_rows

    try:
        table = _open(db, name)
        rows = table.to_arrow().to_pylist()
    except Exception as exc:  # noqa: BLE001
        raise DamagedDataError(
            f"The {name} table is still unreadable after repair ({first_line(exc)}); restore it from a backup."
        ) from None
    verify_rows(name, rows)
    if not _index_works(table):
        raise DamagedDataError(f"The full-text index of the {name} table is still damaged after repair.")
