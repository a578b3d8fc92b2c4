"""Per-row checksums and vector checks: a flipped bit becomes ``damaged_data``, never a wrong answer.

Lance keeps no checksum of its own: a byte changed in a data file is read back as a different value
(tried: 34 of 40 single-bit flips in a table's data file were read back silently).  Every row we
write therefore carries ``checksum``: two BLAKE2b digests, ``<content>:<vector>``, over the columns
a reader trusts (``GUARDED``) and over the vector's float32 bytes.  Two halves let ``repair`` keep a
row whose text is intact and only re-embed its damaged vector.  Rows written before the column
existed have a null checksum and are accepted; their vectors are still checked (finite, unit length)
so that a damaged one cannot return a score of 1.6e24.

Columns changed by partial updates (``status``, ``superseded_by``, timestamps, ``accessed_at``) are
not guarded, so such an update never needs to re-stamp the row.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from contextware.core.errors import DamagedDataError
from contextware.storage.database import RECOVERY_HINT
from contextware.storage.schemas import CHECKSUM_COLUMN

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.schemas import StoredRow

VECTOR_COLUMN = "vector"
# Set (True) on a row already checked: the resident service's in-memory table snapshots check each
# row once, the first time a search returns it, instead of on every search (``table_search``).
CHECKED = "_checked"
UNIT_TOLERANCE = 1e-2  # the models' vectors are L2-normalised in float32: |norm - 1| ~ 1e-6

# The columns each table's checksum covers (besides the vector), in order.
GUARDED: dict[str, tuple[str, ...]] = {
    "facts": ("id", "text", "kind", "topics", "source", "supersedes"),
    "episodes": ("id", "goal", "result", "category", "summary", "topics", "source"),
    "logs": ("id", "session_id", "role", "text", "chunk_index", "chunk_count", "source"),
    "code_index": ("id", "file_path", "language", "summary", "symbols", "content_hash"),
    "code_chunks": ("id", "file_path", "name", "kind", "start_line", "end_line", "text"),
    "offloads": (
        "id",
        "prompt",
        "prompt_hash",
        "source_paths",
        "session_name",
        "turn_number",
        "summary",
        "response_file",
    ),
    "kv": ("id", "namespace", "key", "data", "size"),
    "code_summaries": ("id", "language", "summary", "symbols", "questions", "summarizer"),
}


def _encode(value: object) -> bytes:
    if value is None:
        return b"\x00"
    if isinstance(value, str):
        return b"s" + value.encode("utf-8", "surrogatepass")
    if isinstance(value, (list, tuple)):
        return b"l" + b"\x1e".join(_encode(v) for v in value)
    return b"v" + repr(value).encode()


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


# Columns added to a table later: in the digest only when set, so older rows' checksums still hold.
# Provenance is guarded too: whose memory it is and whether it is quarantined decide what the hooks
# inject, so a row edited behind our back to look trusted fails its check like an edited text.
_PROVENANCE = ("origin", "author", "host", "session", "quarantine")  # imported_at: a time, not hashed
GUARDED_WHEN_SET: dict[str, tuple[str, ...]] = {
    "facts": _PROVENANCE,
    "episodes": _PROVENANCE,
    "logs": ("prompt", *_PROVENANCE),
    "code_summaries": ("model", "vector_texts", "vectors"),
}


def hashed_columns(name: str) -> tuple[str, ...]:
    """Every column the writer hashed into a row's content digest: what a reader must select to
    check a row (``GUARDED`` alone misses the columns added later, such as an agent turn's prompt)."""
    return (*GUARDED.get(name, ()), *GUARDED_WHEN_SET.get(name, ()))


def content_digest(name: str, row: Mapping[str, object]) -> str:
    data = b"\x1f".join(_encode(row.get(col)) for col in GUARDED[name])
    for col in GUARDED_WHEN_SET.get(name, ()):
        if row.get(col) is not None:
            data += b"\x1d" + col.encode() + b"=" + _encode(row[col])
    return _digest(data)


def vector_digest(vector: Any) -> str:
    if vector is None:
        return ""
    import numpy as np

    return _digest(np.asarray(vector, dtype="<f4").tobytes())


def checksum(name: str, row: Mapping[str, object]) -> str | None:
    if name not in GUARDED:
        return None
    return f"{content_digest(name, row)}:{vector_digest(row.get(VECTOR_COLUMN))}"


def stamp(name: str, rows: "Iterable[StoredRow] | Iterable[dict[str, Any]]") -> None:
    """Set each row's checksum (call after the row's final content and vector are set)."""
    if name not in GUARDED:
        return
    for row in rows:
        row["checksum"] = checksum(name, row)  # CHECKSUM_COLUMN


def vector_problem(vector: Any) -> str | None:
    """Why a stored vector cannot be right (not finite, not of unit length), or None."""
    if vector is None:
        return None
    import numpy as np

    values = np.asarray(vector, dtype=np.float64)
    if not np.isfinite(values).all():
        return "not finite"
    if abs(math.sqrt(float(values @ values)) - 1.0) > UNIT_TOLERANCE:
        return "not of unit length"
    return None


def row_problem(name: str, row: Mapping[str, object]) -> str | None:
    """``"content"`` when a guarded column differs from what was written, ``"vector"`` when only the
    vector is damaged, None for a sound row.  The content is judged only when the query selected
    every hashed column: a row read without one of them cannot be told from a damaged one."""
    stored = row.get(CHECKSUM_COLUMN)
    has_vector = VECTOR_COLUMN in row
    if isinstance(stored, str) and stored and name in GUARDED:
        content, _, vec = stored.partition(":")
        if all(col in row for col in hashed_columns(name)) and content != content_digest(name, row):
            return "content"
        if has_vector and vec != vector_digest(row[VECTOR_COLUMN]):
            return "vector"
        return None
    if has_vector and vector_problem(row[VECTOR_COLUMN]):
        return "vector"
    return None


def verify_rows(name: str, rows: Iterable[Mapping[str, object]]) -> None:
    """Raise ``damaged_data`` naming the repair command if any row read back is not what was written
    (rows marked ``CHECKED`` were checked when they were read)."""
    for row in rows:
        if row.get(CHECKED) is True:
            continue
        problem = row_problem(name, row)
        if problem:
            what = "its vector" if problem == "vector" else "its content"
            raise DamagedDataError(
                f"A row of the {name} table ({row.get('id')!s:.80}) is damaged: {what} does not match "
                f"what was written; {RECOVERY_HINT}."
            )


def damaged_rows(name: str, table: "Table", batch_rows: int = 2048) -> list[str]:
    """The ids of every row of ``table`` whose checksum (or vector) does not match what was written,
    read by offsets, a batch at a time (bounded memory on a large table; ~1 s for 20,000 rows).  A data file Lance cannot read raises
    ``damaged_data`` (see ``Database.read``)."""
    bad: list[str] = []
    total = table.count_rows()
    for start in range(0, total, batch_rows):
        rows = table.take_offsets(list(range(start, min(total, start + batch_rows)))).to_arrow().to_pylist()
        bad.extend(str(row.get("id")) for row in rows if row_problem(name, row))
    return bad
