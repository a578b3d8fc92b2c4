"""Definition-level chunks of a source file: one per function, method, class or type that the
tree-sitter extractor of ``local_summary`` finds, with its 1-based line range.

A chunk is embedded on its own (``embedding_text``: the name split into words, the signature, the
docstring or the comment above, and the first lines of the body, kept short: the model's cost grows
with the sequence length) and full-text indexed (``search_text``: the path, the name and the same
head with identifiers split; recall searches it only without vectors, since the file's own BM25
already covers the body), so that a question about one behaviour inside a function finds that
function, and the file's hit can point at its lines.  Rows live in ``schemas.CHUNKS_TABLE``,
keyed ``<path>#<start>-<end>``, and are written, replaced and removed with their file's row by
``indexer``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextware.codeindex.local_summary import Parsed, _Def, _Extractor

from contextware.storage.embedded_text import identifier_words, split_identifiers

# Per file: the largest definitions; the file's own row covers the rest (a file with a single definition
# gets none: its own row is that definition).  3 keeps the first crawl within 2x the CPU of one without
# chunks for one tune question of 145; the measurements are in docs/retrieval.md (definition chunks).
MAX_CHUNKS = 3
MIN_LINES = 3  # one- and two-line definitions (accessors, aliases) are left to the file's row
EMBED_CHARS = 120  # ~30 tokens: name, doc or signature, first lines (the cost grows with length)
_DOC_CHARS = 200
_SKIP_KINDS = frozenset({"const", "mod", "namespace"})


@dataclass
class Chunk:
    name: str
    kind: str
    start: int  # 1-based, inclusive
    end: int
    embedding_text: str
    search_text: str


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def file_chunks(path: str, text: str, language: str | None, parsed: "Parsed | None" = None) -> list[Chunk]:
    """The definition chunks of one file (none for a language without a grammar, or on any parser
    surprise: chunks add to the file's row, they never cost it).  ``parsed``: the ``(definitions,
    extractor)`` that ``local_summary.summarize_parsed`` already made of this text (no second parse)."""
    from contextware.codeindex.languages import GRAMMARS
    from contextware.codeindex.local_summary import _extract

    if not language or language not in GRAMMARS or not text.strip():
        return []
    if parsed is None:
        try:
            _, defs, ex = _extract(language, text.replace("\r\n", "\n").replace("\r", "\n"))
        except Exception:  # noqa: BLE001
            return []
    else:
        defs, ex = parsed
    if ex is None:
        return []
    try:
        return _chunks(path, language, defs, ex)
    except Exception:  # noqa: BLE001
        return []


def _chunks(path: str, language: str, defs: "list[_Def]", ex: "_Extractor") -> list[Chunk]:
    from contextware.codeindex.local_summary import _comment_above, _markers

    lines = ex.lines
    spans = []
    for d in defs:
        if d.kind in _SKIP_KINDS or d.node is None:
            continue
        start, end = d.node.start_point[0], d.node.end_point[0]
        if end - start + 1 < MIN_LINES:
            continue
        spans.append((d, start, end))
    if len(spans) < 2:
        return []  # the file is one definition (or none): its own row already is that definition
    spans.sort(key=lambda s: s[1] - s[2])  # largest first when there are too many
    path_words = identifier_words(path)
    chunks: list[Chunk] = []
    seen: set[str] = set()
    for d, start, end in spans:
        if len(chunks) == MAX_CHUNKS:
            break
        body = lines[start : end + 1]
        head = _squash(" ".join(body[:12]))  # the signature, and a docstring that sits inside the body
        above = "" if d.doc is not None else _squash(_comment_above(lines, start, _markers(language)))[:_DOC_CHARS]
        lead = f"{identifier_words(d.name)} ({d.kind}). {above}"
        embedding_text = f"{lead} {head}"[:EMBED_CHARS]
        if embedding_text in seen:  # overloads, platform variants: one vector says it
            continue
        seen.add(embedding_text)
        chunks.append(
            Chunk(
                name=d.name,
                kind=d.kind,
                start=start + 1,
                end=end + 1,
                embedding_text=embedding_text,
                search_text=f"{path_words} {lead} {split_identifiers(head)}",
            )
        )
    chunks.sort(key=lambda c: c.start)
    return chunks
