"""How code-index hits are shown to an agent: freshness against the file on disk, and in exact mode
the files' content within a character budget (the most relevant line ranges of a file too large
for it)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.codeindex.exclusions import SecretFiles
from contextware.core.text import iso
from contextware.core.words import STOP_WORDS, pieces, stem
from contextware.storage.candidate import Excerpt, RecalledItem

if TYPE_CHECKING:
    from contextware.storage.candidate import Candidate
    from contextware.storage.project import Project

STALE_NOTE = "[STALE] File changed since it was indexed; read it directly."
DELETED_NOTE = "[STALE] File was deleted since it was indexed."
CHANGED_NOTE = "Not shown: {path} changed since it was indexed (its content no longer matches); read it directly."
SUMMARY_SYMBOLS = 40
CONTEXT_LINES = 6
MIN_USEFUL_CHARS = 200
CODE_STEM = 5  # letters a word is cut to when code is matched (names, lines)


def freshness(project: "Project", row: dict[str, Any]) -> str | None:
    """None when the file's mtime and size still match its row, else the note to show."""
    try:
        st = os.stat(project.root / row["file_path"])
    except OSError:
        return DELETED_NOTE
    if st.st_mtime != row.get("mtime") or st.st_size != row.get("size"):
        return STALE_NOTE
    return None


def render_code_hit(project: "Project", hit: "Candidate", score: float, mode: str) -> RecalledItem:
    """A code result as recall shows it: the file's row, its freshness and the definition it matched."""
    row = hit.row
    symbols = list(row.get("symbols") or [])
    note = freshness(project, row)
    out: RecalledItem = {
        "collection": hit.collection,
        "id": row["id"],
        "score": round(score, 4),
        "file_path": row["file_path"],
        "language": row.get("language"),
        "summary": row.get("summary"),
        "symbols": symbols if mode == "exact" else symbols[:SUMMARY_SYMBOLS],
        "summarizer": row.get("summarizer"),
        "indexed_at": iso(row.get("indexed_at")),
        "stale": note is not None,
    }
    if mode == "exact":  # for attach_content, which compares it with the file and drops it
        out["_content_hash"] = row.get("content_hash")
    if hit.lines:  # the definition that matched best (codeindex.search)
        out["lines"] = list(hit.lines)
        out["symbol"] = hit.symbol
    if mode != "exact" and len(symbols) > SUMMARY_SYMBOLS:
        out["symbols_total"] = len(symbols)
    if note:
        out["note"] = note
    return out


def query_terms(query: str) -> set[str]:
    """The query's content words as code is matched: identifier pieces, stemmed to five letters."""
    return {stem(w, CODE_STEM) for w in pieces(query) if len(w) >= 3 and w not in STOP_WORDS}


def relevant_ranges(lines: list[str], query: str, budget: int) -> list[tuple[int, int]]:
    """1-based inclusive line ranges around the lines that share the most words with the query,
    best first until ``budget`` characters are used, returned in file order."""
    terms = query_terms(query)
    scored = []
    for i, line in enumerate(lines):
        hits = len(terms & {stem(w, CODE_STEM) for w in pieces(line)})
        if hits:
            scored.append((-hits, i))
    if not scored:
        scored = [(0, CONTEXT_LINES)]  # nothing matches: the head of the file
    chosen: list[tuple[int, int]] = []
    used = 0
    for _, i in sorted(scored):
        lo, hi = max(0, i - CONTEXT_LINES), min(len(lines) - 1, i + CONTEXT_LINES)
        if any(a <= i <= b for a, b in chosen):
            continue
        cost = sum(len(lines[j]) + 1 for j in range(lo, hi + 1))
        if used + cost > budget:
            if chosen:
                break
            while hi > lo and used + cost > budget:  # a first window that alone is too big: shrink it
                cost -= len(lines[hi]) + 1
                hi -= 1
        chosen.append((lo, hi))
        used += cost
    merged: list[list[int]] = []
    for lo, hi in sorted(chosen):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [(lo + 1, hi + 1) for lo, hi in merged]


def read_indexed_file(
    root: Path,
    rel_path: str,
    max_bytes: int,
    secrets: "SecretFiles | None" = None,
    indexed_hash: str | None = None,
) -> tuple[str | None, str | None]:
    """(text, None) of an indexed file for exact mode, redacted; or (None, why it was not read).

    With ``indexed_hash`` (the content hash stored at indexing), a file whose bytes no longer match
    it is not shown: an edit that kept the size and the modification time passes the stat check.

    The file is read only when its real path (links resolved) is inside the project root, is not a
    secret-bearing file, and is a regular file within the size limit: a link swapped in after
    indexing (``src/util.py -> /etc/passwd``) is refused, never followed.  The file is opened with
    ``O_NOFOLLOW`` on its resolved path, so a link swapped in between the check and the read fails."""
    from contextware.core.redact import redact_text

    secrets = secrets or SecretFiles()
    root_real = os.path.realpath(root)
    real = os.path.realpath(os.path.join(root_real, rel_path))
    inside = os.path.relpath(real, root_real)
    if inside == os.pardir or inside.startswith(os.pardir + os.sep) or os.path.isabs(inside):
        return None, f"Not read: {rel_path} now leads outside the project (a link changed since indexing)."
    if secrets(inside.replace(os.sep, "/")):
        return None, f"Not read: {rel_path} now leads to a secret-bearing file."
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None, None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None, f"Not read: {rel_path} is no longer a regular file."
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        return None, f"Not read: {rel_path} is over the {max_bytes}-byte limit; read it directly."
    if indexed_hash and hashlib.sha256(data).hexdigest() != indexed_hash:
        return None, CHANGED_NOTE.format(path=rel_path)
    return redact_text(data.decode("utf-8", errors="replace")), None


def attach_content(project: "Project", results: list[RecalledItem], query: str, max_chars: int) -> None:
    """Exact mode: give each code result its file's content while ``max_chars`` lasts."""
    from contextware.codeindex.files import secret_files

    remaining = max_chars
    secrets = secret_files(project.data_dir)
    for r in results:
        if r.get("collection") != "code_index":
            continue
        root = Path(r["project"]) if r.get("project") else project.root  # --global: the result's own project
        indexed_hash = r.pop("_content_hash", None)
        max_bytes = project.config.max_file_bytes
        text, refused = read_indexed_file(root, r["file_path"], max_bytes, secrets, indexed_hash)
        if text is None:
            if refused:
                r["content_note"] = refused
            if refused == CHANGED_NOTE.format(path=r["file_path"]):
                r["stale"], r["note"] = True, STALE_NOTE
            continue
        if len(text) <= remaining:
            r["content"] = text
            remaining -= len(text)
            continue
        lines = text.splitlines()
        if remaining < MIN_USEFUL_CHARS:
            r["content_note"] = f"Over the --max-chars budget: read {r['file_path']} ({len(lines)} lines) directly."
            continue
        ranges = relevant_ranges(lines, query, remaining)
        if r.get("lines"):  # the matched definition first, as much of it as the budget allows
            ranges = _with_definition(lines, r["lines"], ranges, remaining)
        excerpts: list[Excerpt] = [{"lines": f"{a}-{b}", "text": "\n".join(lines[a - 1 : b])} for a, b in ranges]
        remaining -= sum(len(e["text"]) + 1 for e in excerpts)
        r["excerpts"] = excerpts
        r["content_note"] = (
            f"{r['file_path']} has {len(lines)} lines, more than the --max-chars budget allows; these are the "
            "line ranges most relevant to the query. Read the rest of the file yourself."
        )


def _with_definition(
    lines: list[str], span: list[int], ranges: list[tuple[int, int]], budget: int
) -> list[tuple[int, int]]:
    """``span`` (1-based, inclusive; cut to ``budget``), then those of ``ranges`` that still fit
    and do not overlap it, in file order."""
    a, b = max(1, span[0]), min(len(lines), span[1])
    used = 0
    for i in range(a, b + 1):
        if used + len(lines[i - 1]) + 1 > budget:
            b = max(a, i - 1)
            break
        used += len(lines[i - 1]) + 1
    chosen = [(a, b)]
    for lo, hi in ranges:
        cost = sum(len(lines[j - 1]) + 1 for j in range(lo, hi + 1))
        if hi < a or lo > b:
            if used + cost > budget:
                continue
            chosen.append((lo, hi))
            used += cost
    return sorted(chosen)
