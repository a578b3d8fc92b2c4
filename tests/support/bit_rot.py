"""Bit rot for tests: damage stored bytes in a table's data files, as a failing disk would."""

from __future__ import annotations

from contextware.storage.project import Project


def flip_stored(project: Project, table: str, needle: bytes, offset: int, bit: int = 1) -> int:
    """Flip one bit ``offset`` bytes into every copy of ``needle`` in the table's data files (a text
    can be stored in more than one column); returns how many copies were damaged (asserted > 0)."""
    flipped = 0
    for path in (project.root / "contextware_data" / "lancedb" / f"{table}.lance" / "data").iterdir():
        raw = bytearray(path.read_bytes())
        at = raw.find(needle)
        while at >= 0:
            raw[at + offset] ^= 1 << bit
            flipped += 1
            at = raw.find(needle, at + 1)
        if flipped:
            path.write_bytes(bytes(raw))
    assert flipped, f"{needle!r} is not stored in {table}"
    return flipped
