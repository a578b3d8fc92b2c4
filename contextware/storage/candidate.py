"""One row a search found for a question, with every score the searches gave it: the value that
recall's stages (search, fuse, gate, present) pass along instead of a loose dict.  Standard library
only; the code index fills the code-only fields (``codeindex.search``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextware.storage.project import Project

Row = dict[str, Any]  # a table row as LanceDB returns it (the columns read, ``vector`` included)


@dataclass(frozen=True)
class Candidate:
    """``similarity``: cosine of the search vector (the question nudged toward its widened form) and
    the row; ``relevance``: cosine of the plain question and the row (what floors are judged on);
    both None without vectors.  ``bm25``: the full-text score, 0 when the full-text search did not
    find it.  Code files also carry their rankers' ``features`` and the best definition's ``lines``
    and ``symbol``; ``project`` is set on a search across projects."""

    row: Row
    collection: str
    similarity: float | None
    relevance: float | None
    bm25: float = 0.0
    features: Mapping[str, float] | None = None
    lines: tuple[int, int] | None = None
    symbol: str | None = None
    project: Project | None = None

    @property
    def id(self) -> str:
        return str(self.row["id"])
