"""The view models ``views`` builds and ``bodies`` and ``pages`` render: one ``TypedDict`` per page's
values, declared once.  Rows that other folders own (a memory as ``memory.records.public_row``
shows it, an offload as ``offload.table.public_offload`` shows it, a turn the prompt hook recorded)
are passed through as those folders return them (``dict[str, Any]`` until they declare theirs)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

from contextware.memory.results import PublicRecord, Stats


class _IndexedPath(TypedDict):
    file_path: str


class IndexedFile(_IndexedPath, total=False):
    """A ``code_index`` row as the browser reads it: the columns it asked for (``storage.schemas``)."""

    id: str
    language: str | None
    summary: str | None
    symbols: list[str] | None
    summarizer: str | None
    mtime: float | None
    size: int | None
    content_hash: str | None
    indexed_at: datetime | None
    checksum: str | None
    search_text: str | None
    imports: list[str] | None
    questions: list[str] | None


class _ServiceMode(TypedDict):
    mode: str


class ServiceStatus(_ServiceMode, total=False):
    """The resident service's mode and, when it answers, its ``status`` (never started to ask)."""

    running: bool
    pid: int
    socket: str
    data_dir: str
    version: str
    uptime_s: float
    requests: int
    idle_exit_s: float


class CodeFigures(TypedDict):
    """The code index on the dashboard: files indexed, changed on disk (None while unknown), last crawl."""

    files: int
    stale: int | None
    last_crawl: str | None


class Dashboard(Stats):
    """``memory stats`` (its keys, as that command prints them) plus the dashboard's own figures."""

    service: ServiceStatus
    code: CodeFigures
    stale_memories: int
    from_service: bool


class Definition(TypedDict, total=False):
    """One definition of a file (a ``code_chunks`` row): what the file page lists."""

    name: str
    kind: str
    start_line: int
    end_line: int


class CodeFile(TypedDict):
    """One indexed file: its index row's figures, its definitions and the memories naming it."""

    file_path: str
    language: str | None
    summary: str
    symbols: list[str]
    summarizer: str | None
    indexed_at: str | None
    size: int | None
    state: str
    lines: int | None
    definitions: list[Definition]
    memories: list[PublicRecord]


class Session(TypedDict):
    """One captured session: its turns and first and last time (ISO)."""

    session_id: str
    turns: int
    first: str | None
    last: str | None


class Timeline(TypedDict):
    """One session in order: its turns (at most ``MAX_TIMELINE``), their count and its digests."""

    session_id: str
    turns: list[PublicRecord]
    total: int
    digests: list[PublicRecord]


class DuplicatePair(TypedDict):
    """Two active facts that say nearly the same, and their cosine."""

    older: PublicRecord
    newer: PublicRecord
    score: float


class UseRow(TypedDict, total=False):
    """A memory of a use queue (``memory.turns.usage.queues``) with its text when still stored."""

    id: str
    injected: int
    used: int
    fetched: int
    last_used: str | None
    text: str | None


class ReviewQueues(TypedDict):
    """The review page's queues, each cut to ``MAX_QUEUE`` with its full count beside it."""

    unused: list[UseRow]
    used_often: list[UseRow]
    stale: list[PublicRecord]
    stale_total: int
    duplicates: list[DuplicatePair]
    duplicates_total: int
    keep: list[PublicRecord]
    keep_total: int


class OffloadPage(TypedDict):
    """One page of offloads, newest first, and how many there are."""

    total: int
    offloads: list[dict[str, Any]]


class ServedSummary(TypedDict):
    """What ``contextware ui`` prints on exit: the address without the token, how long it served."""

    url: str
    served_s: float
    stopped: bool


class OffloadView(TypedDict, total=False):
    """One offload's page: its row as ``offload.table.public_offload`` shows it (keys left out when
    empty), its whole prompt, and its full answer or a note saying why the page does not show it."""

    id: str
    prompt: str | None
    summary: str
    source_paths: list[str]
    session_name: str
    full_response_path: str
    type: str
    topics: list[str]
    turn_number: int
    feature: str
    model: str
    token_count: int
    created_at: str
    project: str
    answer: str | None
    note: str | None
