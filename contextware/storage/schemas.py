"""Every table's schema, in one place.

Columns are only ever added (as nullable) between versions: ``db.Database`` adds the missing ones to
tables written by an older version.  ``vector`` carries the embedding model id in its field metadata
so that vectors of two models are never mixed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

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

# Columns of facts and episodes that tie a memory to the code it names (``memory.code_links``):
# the linked project-relative paths, the content hash each had in the code index when linked, and
# when the links were made (null: never linked, which ``memory repair`` does).
CODE_LINK_COLUMNS = [("code_links", "list<string>"), ("code_hashes", "list<string>"), ("linked_at", "timestamp")]

# Where a fact, episode or log was learned (``memory.branches``): the git branch and HEAD commit it
# was saved on (a detached HEAD: the commit only); null in rows saved before, which are everyone's.
# Not in the checksum (like ``status``): ``memory promote --branch`` clears them in place.
BRANCH_COLUMNS = [("branch", "string"), ("commit", "string")]
# Provenance of facts, episodes and logs (``memory.provenance``): the door, the person, the agent
# host and its session; ``imported_at`` marks a memory that came from a team file and ``quarantine``
# says why an imported memory is held back from the hooks until a person accepts it (null: not held).
PROVENANCE_COLUMNS = [
    ("origin", "string"),
    ("author", "string"),
    ("host", "string"),
    ("session", "string"),
    ("imported_at", "timestamp"),
    ("quarantine", "string"),
]

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


def _columns(name: str) -> list[tuple[str, str]]:
    common_tail = [("text_hash", "string"), ("search_text", "string")]
    if name == "facts":
        return [
            ("text", "string"),
            ("kind", "string"),
            ("topics", "list<string>"),
            ("source", "string"),
            ("created_at", "timestamp"),
            ("updated_at", "timestamp"),
            ("status", "string"),
            ("supersedes", "string"),
            ("superseded_by", "string"),
            *common_tail,
            *CODE_LINK_COLUMNS,
            *BRANCH_COLUMNS,
            *PROVENANCE_COLUMNS,
        ]
    if name == "episodes":
        return [
            ("goal", "string"),
            ("result", "string"),
            ("category", "string"),
            ("summary", "string"),
            ("topics", "list<string>"),
            ("source", "string"),
            ("created_at", "timestamp"),
            ("updated_at", "timestamp"),
            *common_tail,
            *CODE_LINK_COLUMNS,
            *BRANCH_COLUMNS,
            *PROVENANCE_COLUMNS,
        ]
    if name == "logs":
        return [
            ("session_id", "string"),
            ("role", "string"),
            ("speaker", "string"),  # who spoke, when a role has several people (optional)
            ("text", "string"),
            ("chunk_index", "int32"),
            ("chunk_count", "int32"),
            ("source", "string"),
            ("created_at", "timestamp"),
            ("updated_at", "timestamp"),
            *common_tail,
            ("prompt", "string"),  # an agent's answer: the user's words it answers (one exchange)
            *BRANCH_COLUMNS,
            *PROVENANCE_COLUMNS,
        ]
    if name == CODE_TABLE:
        return [
            ("file_path", "string"),
            ("language", "string"),
            ("summary", "string"),
            ("symbols", "list<string>"),
            ("summarizer", "string"),
            ("mtime", "float64"),
            ("size", "int64"),
            ("content_hash", "string"),
            ("indexed_at", "timestamp"),
            ("search_text", "string"),
            ("imports", "list<string>"),  # embedded_text.import_words of the content
            ("questions", "list<string>"),  # what the file answers, from a Gemini summary
        ]
    if name == CHUNKS_TABLE:
        return [
            ("file_path", "string"),
            ("name", "string"),
            ("kind", "string"),
            ("start_line", "int32"),  # 1-based, inclusive
            ("end_line", "int32"),
            ("text", "string"),  # what is embedded (chunks.Chunk.embedding_text)
            ("indexed_at", "timestamp"),
            ("search_text", "string"),
        ]
    if name == KV_TABLE:
        return [
            ("namespace", "string"),
            ("key", "string"),
            ("data", "string"),  # the value as compact JSON text
            ("size", "int64"),  # bytes of `data` (UTF-8)
            ("created_at", "timestamp"),
            ("updated_at", "timestamp"),
            ("accessed_at", "timestamp"),  # last save; loads are logged beside it (see memory/kvstore.py)
        ]
    if name == SUMMARIES_TABLE:
        return [
            ("language", "string"),
            ("summary", "string"),
            ("symbols", "list<string>"),
            ("questions", "list<string>"),
            ("summarizer", "string"),
            ("stored_at", "timestamp"),
            ("model", "string"),  # the embedding model of ``vectors``
            ("vector_texts", "list<string>"),  # text_hash of each embedded text (the file's, its definitions')
            ("vectors", "list<list<float32>>"),  # their vectors, in that order
        ]
    if name == CODE_REMOVED_TABLE:
        return [
            ("file_path", "string"),
            ("removed_at", "timestamp"),
        ]
    if name == OFFLOADS_TABLE:
        return [
            ("prompt", "string"),
            ("prompt_hash", "string"),
            ("source_paths", "list<string>"),  # project-relative POSIX files and folders
            ("source_hash", "string"),
            ("source_type", "string"),
            ("session_name", "string"),
            ("turn_number", "int32"),
            ("feature", "string"),
            ("type", "string"),  # offload | research | synthesis
            ("topics", "list<string>"),
            ("model", "string"),
            ("created_at", "timestamp"),
            ("summary", "string"),
            ("summary_method", "string"),  # gemini | truncated | full
            ("response_file", "string"),  # relative to the data dir, POSIX
            ("token_count", "int64"),
            ("project", "string"),  # the project root
            ("search_text", "string"),
        ]
    raise KeyError(name)


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
