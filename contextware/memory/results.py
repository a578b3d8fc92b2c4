"""What memory's commands return: each result's keys, declared once.

The rows they read are the tables' own (``storage.schemas``); a memory shown to a reader is a
``PublicRecord`` (``records.public_row``: its times as ISO text, the internal columns dropped).
Each result is a plain dict at run time, rendered as JSON by the front ends.
"""

from __future__ import annotations

from typing import Any, TypeAlias, TypedDict

from contextware.memory.turns.usage import UseSummary
from contextware.storage.schemas import EpisodeRow, FactRow, LogRow, Provenance

# A row of any memory table (facts, episodes, logs), as read back or about to be written.
MemoryRow: TypeAlias = FactRow | EpisodeRow | LogRow

# A row of a table whose memories are tied to code (``code_links.LINKED_COLLECTIONS``).
LinkedRow: TypeAlias = FactRow | EpisodeRow


class PublicRecord(TypedDict, total=False):
    """A memory as shown (``records.public_row``): its table, the columns of its row that are
    not internal (times as ISO text), and what ``get`` and ``list --stale`` add."""

    collection: str
    id: str
    # facts
    text: str
    kind: str
    status: str
    supersedes: str | None
    superseded_by: str | None
    # episodes
    goal: str
    result: str
    category: str
    summary: str
    # logs
    session_id: str
    role: str
    speaker: str | None
    chunk_index: int
    chunk_count: int
    prompt: str | None
    # every table
    topics: list[str]
    source: str
    created_at: str | None
    updated_at: str | None
    code_links: list[str] | None
    branch: str | None
    commit: str | None
    origin: str | None
    author: str | None
    host: str | None
    session: str | None
    imported_at: str | None
    quarantine: str | None
    has_vector: bool  # ``get``: whether the row has its embedding
    may_be_stale: str  # why code it names changed since (``code_links.FLAG``)


class Similar(TypedDict):
    """A saved memory near a new one (at or over ``similar_threshold``)."""

    id: str
    text: str
    score: float


class _Written(TypedDict):
    id: str
    written: int


class Written(_Written, total=False):
    """What one write of new rows did: the id kept, how many rows were written, and the copy it
    duplicates or the fact it superseded."""

    duplicate_of: str
    superseded: str


class _Saved(TypedDict):
    collection: str
    id: str
    written: int


class Saved(_Saved, total=False):
    """``save``'s result: the write (``Written``), the secrets redacted (kind -> count), similar
    memories, a degraded embedding and, for a log, its chunks' ids."""

    duplicate_of: str
    superseded: str
    redacted: dict[str, int]
    similar: list[Similar]
    degraded: str
    vector: str  # when the embedding waits for ``reembed``
    ids: list[str]
    chunks: int


class Got(TypedDict):
    """``get``'s result."""

    record: PublicRecord


class Listed(TypedDict):
    """``list``'s result: the page of memories, newest first, and how many match in all."""

    count: int
    total: int
    records: list[PublicRecord]


class _Updated(TypedDict):
    id: str
    collection: str
    updated: list[str]  # the fields changed
    record: PublicRecord


class Updated(_Updated, total=False):
    """``update``'s result, with the secrets redacted and a degraded embedding when so."""

    redacted: dict[str, int]
    degraded: str


class Confirmed(TypedDict):
    """``confirm``'s result: the stale note it cleared (None: it was not stale) and the links now."""

    id: str
    collection: str
    confirmed: bool
    was_stale: str | None
    code_links: list[str]


class _Deleted(TypedDict):
    id: str
    collection: str
    deleted: bool


class Deleted(_Deleted, total=False):
    """``delete``'s result; ``reactivated``: the fact a deleted fact had superseded."""

    reactivated: str


class History(TypedDict):
    """``history``'s result: the chain oldest first, its active fact, and the ids a link names
    that no longer exist."""

    id: str
    collection: str
    current: str | None
    chain: list[PublicRecord]
    missing: list[str]


class Whose(Provenance, total=False):
    """The provenance columns of one memory (``trust.rows_of``), what trust is judged by."""

    id: str | None


class Queued(TypedDict):
    """A quarantined memory in the review queue (``trust.review_queue``)."""

    id: str
    collection: str
    reason: str
    author: str | None
    origin: str | None
    text: str


class Accepted(TypedDict):
    """``accept``'s result: the quarantine reason the memory was released from."""

    id: str
    collection: str
    accepted: bool
    was: str


class Promoted(TypedDict):
    """``promote``'s result: the memories of the branch made everyone's, per table and in all."""

    ok: bool
    branch: str
    promoted: dict[str, int]
    total: int


class GoneBranch(TypedDict):
    """A branch deleted unmerged (``branches.gone_branches``): its memories, newest (ISO text), and
    whether its changes reached HEAD by a squash merge."""

    branch: str
    memories: int
    newest: str
    squashed: bool


# -- the session briefing (``briefing.session_context``) ---------------------------------------------
class LastSession(TypedDict):
    id: str
    at: str | None


class BriefedProject(TypedDict, total=False):
    """The briefing's head: the project, the branch its memories are seen from, its sessions."""

    id: str
    name: str
    root: str
    branch: str | None
    session_count: int
    last_session: LastSession | None


class BriefFact(TypedDict, total=False):
    """An active fact in the briefing (flagged when code it names changed)."""

    id: str
    text: str
    kind: str  # while kept per table version (``briefing._Memory``)
    code_links: list[str] | None  # carried until judged (``may_be_stale``), then dropped
    code_hashes: list[str] | None
    may_be_stale: str


class BriefEpisode(TypedDict, total=False):
    """An episode in the briefing: an open failure (``lesson``) or recent work (``summary``)."""

    id: str
    goal: str
    result: str
    category: str | None
    lesson: str
    summary: str
    at: str | None
    code_links: list[str] | None  # carried until judged (``may_be_stale``), then dropped
    code_hashes: list[str] | None
    may_be_stale: str


class _CentralFile(TypedDict):
    file_path: str
    mentioned_by: int  # how many indexed files import it


class CentralFile(_CentralFile, total=False):
    """A file many others import, with the first sentence of its summary."""

    summary: str


class _CodeIndexBrief(TypedDict):
    files_indexed: int
    stale: int
    last_crawl: str | None


class CodeIndexBrief(_CodeIndexBrief, total=False):
    """The code index in the briefing: its figures and its central files."""

    central_files: list[CentralFile]


class OffloadBrief(TypedDict):
    """An offload session in the briefing, with the start of its summary."""

    name: str
    turns: int
    updated_at: str | None
    summary: str


class StoreBrief(TypedDict):
    """A namespace of the session store and how many keys it holds."""

    namespace: str
    keys: int


class _Briefing(TypedDict):
    project: BriefedProject


class Briefing(_Briefing, total=False):
    """The session briefing: the sections that fit the token budget, in priority order, the ones
    a damaged table cost (``unavailable``: section -> why) and what it came to."""

    constraints: list[BriefFact]
    preferences: list[BriefFact]
    decisions: list[BriefFact]
    conventions: list[BriefFact]
    environment: list[BriefFact]
    notes: list[BriefFact]
    failures: list[BriefEpisode]
    recent_episodes: list[BriefEpisode]
    code_index: CodeIndexBrief
    offload_sessions: list[OffloadBrief]
    store: list[StoreBrief]
    unavailable: dict[str, str]
    budget_tokens: int
    tokens: int
    truncated: bool


# -- upkeep (``maintenance``, ``cleanup``) ----------------------------------------------------------
class Reembedded(TypedDict):
    """One table's re-embedding: rows given a new vector, rows in all, whether the model changed."""

    reembedded: int
    rows: int
    model_changed: bool


class ReembedReport(TypedDict):
    """``reembed``'s result: the model now, and each vector table's re-embedding."""

    model: str
    tables: dict[str, Reembedded]


class CleanedLogs(TypedDict):
    """``clean_injected_logs``'s result: turns checked, rewritten without an injected block, removed."""

    checked: int
    cleaned: int
    removed: int


class Scrubbed(TypedDict):
    """``scrub_secrets``'s result: rows (files) changed per table."""

    facts: int
    episodes: int
    logs: int
    kv: int
    code_index_removed: int
    offload_files: int


class TableStats(TypedDict, total=False):
    """One table in ``stats``: rows, versions, when last written, its model and size on disk, the
    rows without a vector (and superseded facts), and what of it is damaged (only ``damaged`` when
    the table cannot be read)."""

    rows: int
    versions: int
    version: int
    last_write: str | None
    model: str | None
    disk_bytes: int | None
    missing_vectors: int
    superseded: int
    damaged_rows: int
    damaged_ids: list[str]
    damaged: str


class DigestBudget(TypedDict):
    """Today's use of Gemini for digests (UTC day), against ``digest_daily_tokens``."""

    day: str
    tokens: int
    calls: int
    skipped: int  # digests not made by Gemini: the estimate would pass the limit
    limit: int


class _Retained(TypedDict):
    older_than_days: float
    cutoff: str | None
    dry_run: bool
    sessions: int
    turns: int


class RetainReport(_Retained, total=False):
    """``memory retain``: the sessions folded into their digests and archived (with ``dry_run``, the
    ones that would be), and where the archive is."""

    retained: list[dict[str, Any]]
    archive: str


class RetentionStats(TypedDict):
    """Retention in ``memory stats``: the policy, today's digest budget, what is archived."""

    digest_summarizer: str
    digest_tokens_today: DigestBudget
    log_retention_days: float
    archived_sessions: int
    archived_rows: int
    last_run: object


class Stats(TypedDict):
    """``stats``' result: where the memory lives and where that was resolved from, each table, and
    the retention policy's and the use feedback's figures (``memory.turns``)."""

    project_root: str
    project_root_from: str
    data_dir: str
    data_dir_from: str
    db_uri: str
    model: str
    tables: dict[str, TableStats]
    disk_bytes: int | None
    last_write: str | None
    retention: RetentionStats
    use: UseSummary
