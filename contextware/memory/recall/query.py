"""What a recall asks: one frozen ``RecallQuery``, parsed and checked once by the front end that
received it (CLI, MCP tool, hook).  Errors name the input (``FieldError``) and each front end words
that name its own way."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from contextware.core.errors import FieldError, UsageError
from contextware.core.text import check_unicode, parse_since, parse_topics, sql_str, sql_time
from contextware.memory.branches import check_branch
from contextware.memory.records import FACT_KINDS, RESULTS, check_choice, check_slug
from contextware.storage.schemas import CODE_TABLE, MEMORY_TABLES, OFFLOADS_TABLE

TOPIC_TABLES = ("facts", "episodes", OFFLOADS_TABLE)
MODES = ("summary", "exact")
SCOPES: dict[str, tuple[str, ...]] = {
    "all": (*MEMORY_TABLES, CODE_TABLE, OFFLOADS_TABLE),
    "code": (CODE_TABLE,),
    "offloads": (OFFLOADS_TABLE,),
    "memory": ("facts",),
    "facts": ("facts",),
    "episodes": ("episodes",),
    "logs": ("logs",),
}


@dataclass(frozen=True)
class RecallFilters:
    """Narrowing filters; a filter on a field only some collections have narrows the search to them."""

    since: datetime | None = None
    topic: str | None = None
    kind: str | None = None
    result: str | None = None
    category: str | None = None
    include_superseded: bool = False
    source: str | None = None  # offloads whose sources include this path
    session: str | None = None  # offloads of this session
    branch: str = "current"  # whose memories: current (HEAD's view), any, or a branch's (memory.branches)

    def narrow(self, tables: tuple[str, ...]) -> tuple[str, ...]:
        if self.kind:
            tables = tuple(t for t in tables if t == "facts")
        if self.result or self.category:
            tables = tuple(t for t in tables if t == "episodes")
        if self.topic:
            tables = tuple(t for t in tables if t in TOPIC_TABLES)
        if self.source or self.session:
            tables = tuple(t for t in tables if t == OFFLOADS_TABLE)
        return tables

    def where(self, table: str, root: Path | None = None) -> str | None:
        """The SQL filter of one table (LanceDB / DataFusion), None when nothing narrows it."""
        parts: list[str] = []
        if self.since is not None:
            column = "indexed_at" if table == CODE_TABLE else "created_at"
            parts.append(f"{column} >= {sql_time(self.since.replace(microsecond=0))}")  # to the second
        if self.topic and table in TOPIC_TABLES:
            parts.append(f"array_has(topics, {sql_str(self.topic)})")
        if table == OFFLOADS_TABLE:
            from contextware.offload.table import offload_where

            if where := offload_where(source=self.source, session=self.session, root=root):
                parts.append(where)
        if table == "facts":
            if not self.include_superseded:
                parts.append("(status IS NULL OR status = 'active')")
            if self.kind:
                parts.append(f"kind = {sql_str(self.kind)}")
        if table == "episodes":
            if self.result:
                parts.append(f"result = {sql_str(self.result)}")
            if self.category:
                parts.append(f"category = {sql_str(self.category)}")
        return " AND ".join(parts) or None


@dataclass(frozen=True)
class RecallQuery:
    """``text`` as asked; ``min_confidence`` None means the project's ``recall_min_confidence``;
    ``without`` leaves collections out of the scope (the prompt hook searches no logs)."""

    text: str
    scope: str = "all"
    limit: int = 5
    mode: str = "summary"
    filters: RecallFilters = field(default_factory=RecallFilters)
    max_chars: int | None = None
    all_projects: bool = False
    without: tuple[str, ...] = ()
    min_confidence: float | None = None
    margin: float | None = None  # drop memories this far below the best (the prompt hook's trim)

    @property
    def question(self) -> str:
        return self.text.strip()

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(t for t in self.filters.narrow(SCOPES[self.scope]) if t not in self.without)


def parse_query(
    text: str | None,
    *,
    scope: str = "all",
    limit: int = 5,
    mode: str = "summary",
    since: str | None = None,
    topic: str | None = None,
    kind: str | None = None,
    result: str | None = None,
    category: str | None = None,
    include_superseded: bool = False,
    source: str | None = None,
    session: str | None = None,
    max_chars: int | None = None,
    all_projects: bool = False,
    without: tuple[str, ...] = (),
    min_confidence: float | None = None,
    margin: float | None = None,
    branch: str | None = None,
) -> RecallQuery:
    """Check every input once; a bad one is a ``FieldError`` naming it (exit 2, nothing read)."""
    if text is None or not text.strip():
        raise FieldError("The {field} is empty; ask a question.", field="query", code="empty_query")
    check_unicode(text, "query")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
        raise FieldError("{field} must be between 1 and 100.", field="limit")
    if mode not in MODES:
        raise FieldError(f"Unknown {{field}} {mode!r}: use summary or exact.", field="mode")
    if max_chars is not None and max_chars < 1:
        raise FieldError("{field} must be a positive number of characters.", field="max_chars")
    if scope not in SCOPES:
        raise FieldError(f"Unknown {{field}} {scope!r}: use one of {', '.join(SCOPES)}.", field="scope")
    topics = parse_topics(topic)
    filters = RecallFilters(
        since=parse_since(since) if since else None,
        topic=topics[0] if topics else None,
        kind=check_choice(kind, FACT_KINDS, "kind"),
        result=check_choice(result, RESULTS, "result"),
        category=check_slug(category, "category"),
        include_superseded=include_superseded,
        source=source.strip() if source and source.strip() else None,
        session=session.strip() if session and session.strip() else None,
        branch=check_branch(branch),
    )
    _check_applies(filters, scope)
    return RecallQuery(
        text=text,
        scope=scope,
        limit=limit,
        mode=mode,
        filters=filters,
        max_chars=max_chars,
        all_projects=all_projects,
        without=tuple(without),
        min_confidence=None if min_confidence is None else check_min_confidence(min_confidence),
        margin=margin,
    )


# Which collections each filter can narrow; a filter none of the scope's collections has is refused.
_APPLIES = {
    "kind": ("facts",),
    "result": ("episodes",),
    "category": ("episodes",),
    "topic": TOPIC_TABLES,
    "source": (OFFLOADS_TABLE,),
    "session": (OFFLOADS_TABLE,),
}


def _check_applies(filters: RecallFilters, scope: str) -> None:
    """A filter that cannot apply to the scope is a usage error, never an empty "nothing known"."""
    tables = SCOPES[scope]
    for name, owners in _APPLIES.items():
        if getattr(filters, name) and not set(owners) & set(tables):
            raise FieldError(
                f"{{field}} does not apply to scope {scope!r}: only {', '.join(owners)} have it; "
                "choose another scope or leave the filter out.",
                field=name,
                code="filter_not_applicable",
            )
    if scope in SCOPES and not filters.narrow(tables):
        raise FieldError(
            f"These filters together leave nothing to search in scope {scope!r}; leave one out.",
            field="scope",
            code="filter_not_applicable",
        )


def check_min_confidence(value: Any, what: str | None = None) -> float:
    """A gate in [0, 1]; ``what`` names a setting (a config key) instead of the input."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(value, bool) or not 0.0 <= v <= 1.0:
        if what:
            raise UsageError(f"{what} must be a number from 0 to 1, not {value!r}.", code="bad_min_confidence")
        raise FieldError(f"{{field}} must be a number from 0 to 1, not {value!r}.", field="min_confidence")
    return v
