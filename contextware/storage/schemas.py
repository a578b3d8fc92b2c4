"""Every table's schema, in one place.

Columns are only ever added (as nullable) between versions: ``db.Database`` adds the missing ones to
tables written by an older version.  ``vector`` carries the embedding model id in its field metadata
so that vectors of two models are never mixed.
"""

from __future__ import annotations

from datetime import datetime
from types import UnionType
from typing import TYPE_CHECKING, Annotated, TypedDict, Union, get_args, get_origin, get_type_hints

if TYPE_CHECKING:
    import pyarrow as pa

Int32 = Annotated[int, "int32"]
Int64 = Annotated[int, "int64"]

MODEL_KEY = b"contextware.embedding_model"
# Field metadata with which Lance marks an unenforced primary key column (what set_unenforced_primary_key writes).
PRIMARY_KEY = b"lance-schema:unenforced-primary-key:position"

# Collections searched by recall, in the order results are listed when scores tie.
MEMORY_TABLES = ("facts", "episodes", "logs")

# Column holding the text the full-text index covers, per table.
FTS_COLUMN = "search_text"

# The code index: one row per source file, keyed by its project-relative path (id == file_path).
CODE_TABLE = "code_index"

# Definition-level chunks of the indexed files (codeindex.chunks): one row per function, method, class
# or type, keyed "<file_path>#<start>-<end>", written and removed together with the file's row.
CHUNKS_TABLE = "code_chunks"

# Research offloads: one row per cached answer, session turn or session synthesis.  The files under
# <data_dir>/offloads/ are the source of truth; this table is an index rebuilt from them (sync.py).
OFFLOADS_TABLE = "offloads"

# Tables whose rows carry a vector of the configured embedding model (re-embedded together).
VECTOR_TABLES = (*MEMORY_TABLES, CODE_TABLE, CHUNKS_TABLE, OFFLOADS_TABLE)

# Id prefix per table, so `memory.py get ID` knows where to look.
ID_PREFIX = {"facts": "fact", "episodes": "episode", "logs": "log"}

# The namespaced session store (scripts/store.py): one JSON value per row, id == "<namespace>/<key>".
KV_TABLE = "kv"

# Per-row checksum column (storage.integrity), last before the vector.
CHECKSUM_COLUMN = "checksum"

# Files the code index dropped (deleted, moved away, newly ignored): one row per path, id == file_path,
# with when (``removed_at``).  Written by ``codeindex.indexer``; read by ``memory.code_links`` to say
# when a file a memory names went away.  A path indexed again is judged by its ``code_index`` row.
CODE_REMOVED_TABLE = "code_removed"

# Summaries kept per file content (``codeindex.by_content``): one row per content hash (id), so a
# checkout back to content summarised before re-uses its summary instead of asking a summariser.
SUMMARIES_TABLE = "code_summaries"

# Tables without a vector column: created without an embedding model, never re-embedded.
PLAIN_TABLES = (KV_TABLE, CODE_REMOVED_TABLE, SUMMARIES_TABLE)

# Scalar indexes per table on the columns our filters name (``text_hash`` for the duplicate check,
# ``id`` for reads by id and supersession, sessions, dates and statuses for recall's filters): BTREE
# for columns of many values, BITMAP for a few.  Every table has a BTREE on ``id`` (``storage.database``).
SCALAR_INDEXES: dict[str, tuple[tuple[str, str], ...]] = {
    "facts": (("text_hash", "BTREE"), ("created_at", "BTREE"), ("status", "BITMAP")),
    "episodes": (("text_hash", "BTREE"), ("created_at", "BTREE")),
    "logs": (("text_hash", "BTREE"), ("session_id", "BTREE"), ("created_at", "BTREE")),
    CODE_TABLE: (("file_path", "BTREE"),),
    CHUNKS_TABLE: (("file_path", "BTREE"),),
}


# Each table's row, declared once: the columns in their order with their types (the Arrow type from
# ``_ARROW``; ``Int32``/``Int64`` say which integer).  ``id`` comes first and ``checksum`` and
# ``vector`` last in every table; the rest are nullable.  A row read back holds only the columns the
# query selected, so every key may be absent (``total=False``).


class StoredRow(TypedDict, total=False):
    """The columns every table has: the key, the integrity checksum (``storage.integrity``), and the
    embedding (absent from ``PLAIN_TABLES``)."""

    id: str
    checksum: str | None
    vector: list[float] | None  # None: saved while the model could not load (`reembed` fills it)


class _Searched(TypedDict, total=False):
    text_hash: str  # the duplicate check
    search_text: str  # what the full-text index covers (``FTS_COLUMN``)


class CodeLinks(TypedDict, total=False):
    """What ties a fact or an episode to the code it names (``memory.code_links``): the linked
    project-relative paths, the content hash each had in the code index when linked, and when (null:
    never linked, which ``memory repair`` does)."""

    code_links: list[str] | None
    code_hashes: list[str] | None
    linked_at: datetime | None


class LearnedOn(TypedDict, total=False):
    """Where a fact, episode or log was learned (``memory.branches``): the git branch and HEAD commit
    (a detached HEAD: the commit only); null in rows saved before, which are everyone's.  Not in the
    checksum (like ``status``): ``memory promote --branch`` clears them in place."""

    branch: str | None
    commit: str | None


class Provenance(TypedDict, total=False):
    """Who a fact, episode or log came from (``memory.provenance``): the door, the person, the agent
    host and its session; ``imported_at`` marks a memory from a team file, and ``quarantine`` says
    why an imported memory is held back from the hooks until a person accepts it (null: not held)."""

    origin: str | None
    author: str | None
    host: str | None
    session: str | None
    imported_at: datetime | None
    quarantine: str | None


class _FactColumns(TypedDict, total=False):
    text: str
    kind: str
    topics: list[str]
    source: str
    created_at: datetime
    updated_at: datetime
    status: str
    supersedes: str | None
    superseded_by: str | None


class FactRow(StoredRow, _FactColumns, _Searched, CodeLinks, LearnedOn, Provenance, total=False):
    """A row of ``facts``: one decision, constraint, convention or other lasting fact."""


class _EpisodeColumns(TypedDict, total=False):
    goal: str
    result: str
    category: str
    summary: str
    topics: list[str]
    source: str
    created_at: datetime
    updated_at: datetime


class EpisodeRow(StoredRow, _EpisodeColumns, _Searched, CodeLinks, LearnedOn, Provenance, total=False):
    """A row of ``episodes``: one piece of work, its goal, result and summary."""


class _LogColumns(TypedDict, total=False):
    session_id: str
    role: str
    speaker: str | None  # who spoke, when a role has several people
    text: str
    chunk_index: Int32
    chunk_count: Int32
    source: str
    created_at: datetime
    updated_at: datetime


class _Answered(TypedDict, total=False):
    prompt: str | None  # an agent's answer: the user's words it answers (one exchange)


class LogRow(StoredRow, _LogColumns, _Searched, _Answered, LearnedOn, Provenance, total=False):
    """A row of ``logs``: one turn of a conversation, or one chunk of a long one."""


class CodeFileRow(StoredRow, total=False):
    """A row of ``code_index``: one source file, keyed by its project-relative path (id == file_path)."""

    file_path: str
    language: str | None
    summary: str
    symbols: list[str]
    summarizer: str
    mtime: float
    size: Int64
    content_hash: str
    indexed_at: datetime
    search_text: str
    imports: list[str] | None  # embedded_text.import_words of the content
    questions: list[str] | None  # what the file answers, from a Gemini summary


class CodeChunkRow(StoredRow, total=False):
    """A row of ``code_chunks``: one definition of an indexed file, keyed "<file_path>#<start>-<end>"."""

    file_path: str
    name: str
    kind: str
    start_line: Int32  # 1-based, inclusive
    end_line: Int32
    text: str  # what is embedded (chunks.Chunk.embedding_text)
    indexed_at: datetime
    search_text: str


class KvRow(StoredRow, total=False):
    """A row of ``kv``, the session store: one JSON value, id == "<namespace>/<key>"."""

    namespace: str
    key: str
    data: str  # the value as compact JSON text
    size: Int64  # bytes of `data` (UTF-8)
    created_at: datetime
    updated_at: datetime
    accessed_at: datetime  # last save; loads are logged beside it (see store/kvstore.py)


class SummaryRow(StoredRow, total=False):
    """A row of ``code_summaries``: a summary kept per file content, id == its content hash."""

    language: str | None
    summary: str
    symbols: list[str]
    questions: list[str] | None
    summarizer: str
    stored_at: datetime
    model: str | None  # the embedding model of ``vectors``
    vector_texts: list[str] | None  # text_hash of each embedded text (the file's, its definitions')
    vectors: list[list[float]] | None  # their vectors, in that order


class RemovedFileRow(StoredRow, total=False):
    """A row of ``code_removed``: a file the code index dropped, id == file_path, and when."""

    file_path: str
    removed_at: datetime


class OffloadRow(StoredRow, total=False):
    """A row of ``offloads``: a cached research answer, a session turn or a session synthesis."""

    prompt: str
    prompt_hash: str
    source_paths: list[str]  # project-relative POSIX files and folders
    source_hash: str | None
    source_type: str | None
    session_name: str | None
    turn_number: Int32 | None
    feature: str | None
    type: str  # offload | research | synthesis
    topics: list[str]
    model: str | None
    created_at: datetime
    summary: str
    summary_method: str  # gemini | truncated | full
    response_file: str  # relative to the data dir, POSIX
    token_count: Int64 | None
    project: str  # the project root
    search_text: str


ROW_TYPES: dict[str, type] = {
    "facts": FactRow,
    "episodes": EpisodeRow,
    "logs": LogRow,
    CODE_TABLE: CodeFileRow,
    CHUNKS_TABLE: CodeChunkRow,
    KV_TABLE: KvRow,
    SUMMARIES_TABLE: SummaryRow,
    CODE_REMOVED_TABLE: RemovedFileRow,
    OFFLOADS_TABLE: OffloadRow,
}

# The Arrow type of each Python type a row declares (``| None`` aside: every column is nullable).
_ARROW = {
    str: "string",
    list[str]: "list<string>",
    datetime: "timestamp",
    Int32: "int32",
    Int64: "int64",
    float: "float64",
    list[list[float]]: "list<list<float32>>",
}


def _column_types(row_type: type) -> list[tuple[str, str]]:
    """The columns a row type declares, in order, with their Arrow types (``id``, ``checksum`` and
    ``vector`` are placed by ``table_schema``)."""
    hints = get_type_hints(row_type, include_extras=True)
    columns = []
    for column, hint in hints.items():
        if column in StoredRow.__annotations__:
            continue
        if get_origin(hint) in (Union, UnionType):
            (hint,) = (arg for arg in get_args(hint) if arg is not type(None))
        columns.append((column, _ARROW[hint]))
    return columns


CODE_LINK_COLUMNS = _column_types(CodeLinks)


def _columns(name: str) -> list[tuple[str, str]]:
    return _column_types(ROW_TYPES[name])


def table_schema(name: str, dim: int, model_id: str) -> "pa.Schema":
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "list<string>": pa.list_(pa.string()),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "list<list<float32>>": pa.list_(pa.list_(pa.float32())),
    }
    # The unenforced primary key is declared in the schema the table is created with, so that no
    # version of a table exists without it: a writer on another machine may merge_insert into a
    # table the moment it exists (``Database.create_table`` declares it again for older tables).
    fields = [pa.field("id", pa.string(), nullable=False, metadata={PRIMARY_KEY: b"1"})]
    fields += [pa.field(col, types[kind]) for col, kind in _columns(name)]
    fields.append(pa.field(CHECKSUM_COLUMN, pa.string()))  # integrity.checksum: null in older rows
    fields.append(pa.field("vector", pa.list_(pa.float32(), dim), metadata={MODEL_KEY: model_id.encode()}))
    return pa.schema(fields)


def plain_table_schema(name: str) -> "pa.Schema":
    """The schema of a table of ``PLAIN_TABLES``: the columns without a vector."""
    if name not in PLAIN_TABLES:
        raise KeyError(f"{name} is a table with vectors: give its dimension and model")
    schema = table_schema(name, 1, "")
    return schema.remove(schema.get_field_index("vector"))
