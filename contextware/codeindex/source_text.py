"""Reading one source file for the index: its text (UTF-8, UTF-16 with a BOM, or legacy single-byte
text) and content hash in one read, or why it is not text."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_BYTES = 1_000_000
SNIFF_BYTES = 8192
# Latin-1/cp1252 fallback only when at most this share of the bytes are C0 control characters
# (tab, newlines and form feed excepted): legacy-encoded text has almost none, random binary ~10%.
MAX_CONTROL_SHARE = 0.005
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@dataclass
class Candidate:
    path: str  # project-relative POSIX path
    abs_path: Path
    mtime: float  # st_mtime
    size: int


def is_utf8_name(rel: str) -> bool:
    """Is a file name valid UTF-8?  ``os.fsdecode`` turns the bytes of one that is not into lone
    surrogates, which can be neither stored nor printed as text."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable_name(rel: str) -> str:
    """A file name fit for a report: bytes that are not UTF-8 shown as ``\\xNN`` escapes."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


def looks_binary(head: bytes) -> bool:
    """A NUL byte in a file's first bytes, unless they open UTF-16 text."""
    return b"\0" in head and not head.startswith(UTF16_BOMS)


_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13)) + b"\x7f"


def read_source(c: Candidate, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str | None, str | None, str | None]:
    """(text, content_hash, skip_reason), reading the file once.

    skip_reason is "too_large", "binary", "missing" or "unreadable".  content_hash (sha256 hex of the
    raw bytes) is given whenever the whole file was read, binary included.  Text is UTF-8 (a BOM is
    dropped), or UTF-16 with a BOM; otherwise, with no NUL byte and at most MAX_CONTROL_SHARE control
    characters, legacy single-byte text: cp1252 when it decodes, else latin-1.  Anything else, or a
    NUL in the first 8 KB, is binary."""
    if c.size > max_bytes:
        return None, None, "too_large"
    try:
        with open(c.abs_path, "rb") as f:
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        return None, None, "missing"
    except OSError:
        return None, None, "unreadable"
    if len(data) > max_bytes:
        return None, None, "too_large"
    digest = hashlib.sha256(data).hexdigest()
    text = _decode_text(data)
    return (text, digest, None) if text is not None else (None, digest, "binary")


def _decode_text(data: bytes) -> str | None:
    """The text of a file's bytes, or None when they look binary (see ``read_source``)."""
    if data.startswith(UTF16_BOMS):
        return _decode_utf16(data)
    if b"\0" in data[:SNIFF_BYTES]:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    controls = len(data) - len(data.translate(None, _CONTROL_BYTES))
    if b"\0" in data or controls > MAX_CONTROL_SHARE * len(data):
        return None
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _decode_utf16(data: bytes) -> str | None:
    try:
        text = data.decode("utf-16")
    except UnicodeDecodeError:
        return None
    controls = sum(1 for ch in text if (ch < " " and ch not in "\t\n\v\f\r") or ch == "\x7f")
    return None if "\0" in text or controls > MAX_CONTROL_SHARE * max(len(text), 1) else text
