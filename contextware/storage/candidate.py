"""One row a search found for a question, with every score the searches gave it: the value that
recall's stages (search, fuse, gate, present) pass along instead of a loose dict; and what recall
shows of it (``RecalledItem``).  Standard library only; the code index fills the code-only fields
(``codeindex.search``, ``codeindex.hits``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

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


class Excerpt(TypedDict):
    """Lines of a code file recall shows in exact mode: ``lines`` "12-30" and their text."""

    lines: str
    text: str


# "from" is a keyword, so it is declared apart: who a memory is from when not the user's own
# (``memory.trust.annotate``: "alice@example.com, imported").
_Whose = TypedDict("_Whose", {"from": str}, total=False)


class RecalledItem(_Whose, total=False):
    """One recall result as every front end shows it (``present.present_hit``): where it is and how
    sure, then its collection's public columns, dates as ISO text.  A memory (facts, episodes,
    logs) carries its row's columns (summary mode drops ``source``, ``updated_at``, ``chunk_count``);
    a code file its summary, freshness and best definition (exact mode: its content or excerpts);
    an offload its summary and where the full answer is."""

    collection: str
    id: str
    score: float
    confidence: float
    project: str  # --global: the project it came from; an offload: the project it was asked in
    created_at: str
    summary: str | None
    topics: list[str]
    prompt: str | None  # a captured answer's question; an offload's question, shortened
    # facts, episodes and logs (their public row: storage.schemas' FactRow, EpisodeRow, LogRow)
    text: str
    kind: str
    status: str
    supersedes: str | None
    superseded_by: str | None
    goal: str
    result: str
    category: str
    session_id: str
    role: str
    speaker: str
    chunk_index: int
    chunk_count: int
    source: str
    updated_at: str
    code_links: list[str]
    branch: str
    commit: str
    origin: str
    author: str
    host: str
    session: str
    imported_at: str
    quarantine: str  # why an imported memory is held back from the hooks
    repeats: int  # other captured turns with the same words, folded into this one
    may_be_stale: str  # memory.code_links: the code it names changed since
    branch_note: str  # memory.branches: "from feature/x, not merged"
    # code files (codeindex.hits)
    file_path: str
    language: str | None
    symbols: list[str]
    symbols_total: int
    summarizer: str | None
    indexed_at: str | None
    stale: bool
    note: str
    lines: list[int]
    symbol: str | None
    content: str
    content_note: str
    excerpts: list[Excerpt]
    _content_hash: str | None  # exact mode, until attach_content compares it with the file
    # offloads (offload.table.public_offload)
    source_paths: list[str]
    session_name: str | None
    full_response_path: str | None
    type: str | None
    turn_number: int | None
    feature: str | None
    model: str | None
    token_count: int | None
