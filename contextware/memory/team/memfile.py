"""The team memory file (``.contextware/memory.jsonl``): its lines, their checks, their order, and how
two or three versions of it merge.  Pure functions over text: no database, no model, so the git merge
driver (``contextware merge-driver``) starts fast.  docs/memory-file.md is the format's reference.

A file is a header line ``{"format": "contextware-memory", "version": 2}`` then one JSON object a
line: a memory (a fact, an episode or, when asked for, a log chunk) or a tombstone (``deleted_at``:
a memory deleted on some clone).  Lines are sorted by ``(created_at, id)``: a new memory's line goes
at the end, an update or a deletion rewrites its line in place, so git sees one-line hunks.

Every id holds one *entry*; when two versions of an id meet, the later one wins: the greater
``tombstones.entry_key`` (the time it last changed, to the second; a tombstone beats a memory of the
same second; then the line's text), so merging is commutative, associative and idempotent and every
clone converges on the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TypedDict

from contextware.core.errors import UsageError
from contextware.core.redact import refuse_secret_name, refuse_secret_topics
from contextware.core.text import MAX_TOPICS, iso, iso_of, parse_topics, utcnow
from contextware.memory.records import FACT_KINDS, RESULTS, ROLES, check_choice, check_slug, collection_for_id
from contextware.memory.team import tombstones
from contextware.memory.team.tombstones import Tombstone, entry_key, is_tombstone, later
from contextware.storage.schemas import MEMORY_TABLES

FORMAT = "contextware-memory"
VERSION = 2  # 2: tombstones, lines sorted by (created_at, id), a log's optional speaker
DEFAULT_FILE = ".contextware/memory.jsonl"

# Where a memory was learned (``memory.branches``): written only when set, so the lines of memories
# saved before (everyone's) keep their bytes.
LEARNED = ("branch", "commit")
# Who wrote a memory, from where (``memory.provenance``): optional, kept as written by an import.
PROVENANCE = ("origin", "author", "host", "session")

# The exported fields of each collection, in the order they are written (id first).
FIELDS: dict[str, tuple[str, ...]] = {
    "facts": (
        "id",
        "kind",
        "text",
        "topics",
        "status",
        "supersedes",
        "superseded_by",
        "source",
        "created_at",
        "updated_at",
        *LEARNED,
        *PROVENANCE,
    ),
    "episodes": (
        "id",
        "goal",
        "result",
        "category",
        "summary",
        "topics",
        "source",
        "created_at",
        "updated_at",
        *LEARNED,
        *PROVENANCE,
    ),
    "logs": (
        "id",
        "session_id",
        "role",
        "speaker",
        "chunk_index",
        "chunk_count",
        "text",
        "prompt",
        "source",
        "created_at",
        "updated_at",
        *LEARNED,
        *PROVENANCE,
    ),
}
TOMBSTONE_FIELDS = ("id", "created_at", "deleted_at", "deleted_by")
REQUIRED = {"facts": ("text",), "episodes": ("goal", "result", "summary"), "logs": ("session_id", "role", "text")}
TEXT_FIELDS = ("text", "goal", "summary", "prompt")
TIME_FIELDS = ("created_at", "updated_at")
MARKERS = ("<<<<<<<", "|||||||", "=======", ">>>>>>>")

# The same bounds as ``save`` (``max_fact_chars``' default for a fact's text; an episode's and a log's
# texts, which save does not cut, at a bound far above real ones): a teammate's file cannot store more,
# and a line longer than any valid one is refused before it is parsed (a 60 MB line reached 17 GB).
MAX_TEXT_CHARS = {"facts": 4000, "episodes": 100_000, "logs": 100_000}
MAX_FIELD_CHARS = 200  # source, category, session_id, deleted_by
MAX_LINE_CHARS = 1_000_000  # every field at its bound, escaped
# Clock skew allowed to a teammate's clock: a time later than now plus this is refused (a line dated
# 2099 would outrank every later edit for ever, a tombstone dated 9999 would delete the memory again
# after every re-save).
CLOCK_SKEW = tombstones.CLOCK_SKEW

# One entry of the file by field: a memory or a tombstone, in its written form (JSON values) or, for
# a memory about to be stored, with its times as datetimes.  Its values are read through the checks
# below (``check_row``, ``check_tombstone``) and the narrowing helpers, never trusted by key.
Entry = dict[str, object]


def entry_id(entry: Mapping[str, object]) -> str:
    """A checked entry's id (``_check_id`` made sure it is a memory id)."""
    return str(entry["id"])


def text_or_none(entry: Mapping[str, object], key: str) -> str | None:
    """``entry[key]`` when it is a text, else None (a checked entry's optional text fields)."""
    value = entry.get(key)
    return value if isinstance(value, str) else None


# -- one line ---------------------------------------------------------------------------------------
def _bad(field: str | None, why: str) -> UsageError:
    """One line's problem: ``why`` names the field; ``details["field"]`` carries it for tools."""
    return UsageError(why, code="bad_import", details={"field": field} if field else None)


def _time(value: object, key: str) -> datetime:
    if not isinstance(value, str):
        raise _bad(key, f"{key} must be an ISO 8601 time such as 2026-01-31T12:00:00Z.")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _bad(key, f"{key} {value!r} is not an ISO 8601 time.") from None
    try:
        when = (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
    except (OverflowError, ValueError):
        raise _bad(key, f"{key} {value!r} is out of range.") from None
    if when > utcnow() + CLOCK_SKEW:
        raise _bad(
            key, f"{key} {iso(when)} is later than now (a clock set ahead, or a file written to outrank every edit)."
        )
    return when


def _valid_id(record_id: str) -> bool:
    from contextware.memory.records import _ID

    return bool(_ID.match(record_id))


def _check_id(raw: Mapping[str, object]) -> tuple[str, str]:
    record_id = raw.get("id")
    collection = collection_for_id(record_id) if isinstance(record_id, str) else None
    if collection is None or not isinstance(record_id, str) or len(record_id) > 64 or not _valid_id(record_id):
        shown = repr(record_id)[:80] if isinstance(record_id, str) else type(record_id).__name__
        raise _bad("id", f"id {shown} is not a memory id (fact-…, episode-… or log-…).")
    return record_id, collection


def check_row(raw: object) -> tuple[str, Entry]:
    """The collection and the row ready to store (bar vector), or a UsageError saying what is wrong."""
    if not isinstance(raw, dict):
        raise _bad(None, "it is not a JSON object.")
    _, collection = _check_id(raw)
    unknown = sorted(set(raw) - set(FIELDS[collection]))
    if unknown:
        raise _bad(
            unknown[0], f"unknown field {', '.join(unknown)} for {collection} (is the file from a newer Contextware?)."
        )
    for key in REQUIRED[collection]:
        if not (given := text_or_none(raw, key)) or not given.strip():
            raise _bad(key, f"{key} is missing or empty.")
    row: Entry = {k: raw.get(k) for k in FIELDS[collection]}
    for key in TEXT_FIELDS:
        if (given := text_or_none(row, key)) is not None and len(given) > (cap := MAX_TEXT_CHARS[collection]):
            raise _bad(key, f"{key} is {len(given):,} characters, over the {cap:,} allowed.")
    for key in ("source", "supersedes", "superseded_by", "category", "session_id", "speaker", *PROVENANCE):
        if row.get(key) is not None and not isinstance(row[key], str):
            raise _bad(key, f"{key} must be a string or null.")
        if (given := text_or_none(row, key)) is not None and len(given) > MAX_FIELD_CHARS:
            raise _bad(key, f"{key} is longer than {MAX_FIELD_CHARS} characters.")
    _check_learned(row)
    for key in PROVENANCE:
        if (given := text_or_none(row, key)) is not None:
            row[key] = given.strip()[:200] or None
    for key in ("supersedes", "superseded_by"):
        if (given := text_or_none(row, key)) is not None and (
            collection_for_id(given) != "facts" or not _valid_id(given)
        ):
            raise _bad(key, f"{key} {given!r} is not a fact id.")
    if row.get("created_at") is None:
        raise _bad("created_at", "created_at is missing.")
    row["created_at"] = _time(row["created_at"], "created_at")
    row["updated_at"] = _time(row["updated_at"], "updated_at") if row.get("updated_at") else row["created_at"]
    if "topics" in row:
        if row["topics"] is not None and not isinstance(row["topics"], list):
            raise _bad("topics", "topics must be a list of strings.")
        listed = row["topics"] if isinstance(row["topics"], list) else []
        if len(listed) > MAX_TOPICS:
            raise _bad("topics", f"{len(listed):,} topics, over the {MAX_TOPICS} one memory may have.")
        topics = [t for t in listed if isinstance(t, str)]
        if len(topics) != len(listed):
            raise _bad("topics", "topics must be a list of strings.")
        row["topics"] = parse_topics(refuse_secret_topics(topics))
    if collection == "facts":
        row["kind"] = check_choice(_choice(row, "kind") or "note", FACT_KINDS, "kind")
        row["status"] = check_choice(_choice(row, "status") or "active", ("active", "superseded"), "status")
    elif collection == "episodes":
        row["result"] = check_choice(_choice(row, "result"), RESULTS, "result")
        category = check_slug(_choice(row, "category") or "general", "category")
        row["category"] = refuse_secret_name(category or "", "category")
    else:
        row["role"] = check_choice(_choice(row, "role"), ROLES, "role")
        if (speaker := text_or_none(row, "speaker")) is not None:
            row["speaker"] = speaker.strip()[:80] or None
        for key in ("chunk_index", "chunk_count"):
            if row.get(key) is not None and (not isinstance(row[key], int) or isinstance(row[key], bool)):
                raise _bad(key, f"{key} must be an integer.")
    return collection, row


def _choice(row: Mapping[str, object], key: str) -> str | None:
    """A field that must name one of a few choices, as ``check_choice`` reads it: a value that is not
    a text (a number, a list) is refused by name like a wrong text, not taken for a missing one."""
    value = row.get(key)
    return value if value is None or isinstance(value, str) else json.dumps(value)


def _check_learned(row: Mapping[str, object]) -> None:
    from contextware.memory.branches import check_branch
    from contextware.storage.gitstate import SHA

    branch, commit = row.get("branch"), row.get("commit")
    if branch is not None and (not isinstance(branch, str) or check_branch(branch) in ("current", "any")):
        raise _bad("branch", "branch must be a git branch name or null.")
    if commit is not None and (not isinstance(commit, str) or not SHA.match(commit)):
        raise _bad("commit", "commit must be a full git commit id (40 hex digits) or null.")


def check_tombstone(raw: Mapping[str, object]) -> Tombstone:
    """A tombstone line (it has ``deleted_at``) in its written form, or a UsageError."""
    _check_id(raw)
    unknown = sorted(set(raw) - set(TOMBSTONE_FIELDS))
    if unknown:
        raise _bad(unknown[0], f"unknown field {', '.join(unknown)} for a tombstone.")
    deleted_by = text_or_none(raw, "deleted_by")
    if raw.get("deleted_by") is not None and deleted_by is None:
        raise _bad("deleted_by", "deleted_by must be a string or null.")
    if deleted_by is not None and len(deleted_by) > MAX_FIELD_CHARS:
        raise _bad("deleted_by", f"deleted_by is longer than {MAX_FIELD_CHARS} characters.")
    deleted = iso(_time(raw["deleted_at"], "deleted_at")) or ""
    created = iso(_time(raw["created_at"], "created_at")) if raw.get("created_at") is not None else None
    return {"id": entry_id(raw), "created_at": created, "deleted_at": deleted, "deleted_by": deleted_by}


def written_form(collection: str, row: Mapping[str, object]) -> Entry:
    """A stored row as its line in the file: the exported fields in order, times in ISO 8601 UTC to the second."""
    return {
        k: iso_of(row.get(k)) if k in TIME_FIELDS else row.get(k)
        for k in FIELDS[collection]
        if (k not in LEARNED and k not in PROVENANCE) or row.get(k) is not None  # optional: written when set
    }


def line_order(entry: Mapping[str, object]) -> tuple[str, str]:
    return text_or_none(entry, "created_at") or text_or_none(entry, "deleted_at") or "", entry_id(entry)


# -- a whole file -----------------------------------------------------------------------------------
MAX_REPORTED = 20  # bad lines listed in one error (all are counted)


class BadLine(TypedDict):
    """One bad line of a team file, as an import's error lists it."""

    line: int
    field: str | None
    why: str


def _problem(number: int, exc: UsageError) -> BadLine:
    field = exc.details.get("field") if exc.details else getattr(exc, "field", None)
    return {"line": number, "field": field if isinstance(field, str) else None, "why": exc.message.rstrip(".")}


def _refuse(problems: list[BadLine]) -> UsageError:
    """One error naming every bad line (line number, field, why); nothing is imported."""
    shown = "; ".join(f"Line {p['line']}{' ' if p['why'].startswith('is ') else ': '}{p['why']}" for p in problems[:5])
    more = f" (and {len(problems) - 5} more bad lines)" if len(problems) > 5 else ""
    return UsageError(
        f"{shown}{more}; nothing was imported.",
        code="bad_import",
        details={"bad_lines": problems[:MAX_REPORTED], "bad_line_count": len(problems)},
    )


def file_lines(text: str) -> Iterator[str]:
    """The file's lines, split on "\\n" only (a trailing "\\r" dropped): never on U+2028, U+2029 or the
    other breaks ``str.splitlines`` knows, which older exports left raw inside a JSON string."""
    start, end = 0, len(text)
    while start < end:
        stop = text.find("\n", start)
        stop = end if stop < 0 else stop
        yield text[start : stop - 1] if stop > start and text[stop - 1] == "\r" else text[start:stop]
        start = stop + 1


def split_conflicts(text: str) -> list[list[tuple[int, str]]]:
    """The file's numbered lines, one list per side: one side for a clean file, ``[ours, theirs]``
    for a file git left with conflict markers (the common ancestor's lines of a diff3 conflict are dropped)."""
    ours: list[tuple[int, str]] = []
    theirs: list[tuple[int, str]] = []
    state, conflicted = "both", False
    expected = {"both": ("<<<<<<<",), "ours": ("|||||||", "======="), "base": ("=======",), "theirs": (">>>>>>>",)}
    following = {"<<<<<<<": "ours", "|||||||": "base", "=======": "theirs", ">>>>>>>": "both"}
    for number, line in enumerate(file_lines(text), start=1):
        marker = next((m for m in MARKERS if line.startswith(m)), None)
        if marker is not None:
            if marker not in expected[state]:
                raise _refuse([{"line": number, "field": None, "why": f"a git conflict marker {marker} out of place"}])
            state, conflicted = following[marker], True
            continue
        if state in ("both", "ours"):
            ours.append((number, line))
        if state in ("both", "theirs"):
            theirs.append((number, line))
    if state != "both":
        raise UsageError("The file ends inside a git conflict; nothing was imported.", code="bad_import")
    return [ours, theirs] if conflicted else [ours]


def checked_lines(
    lines: Iterable[tuple[int, str]], *, stored: bool = False, repeats: bool = False
) -> Iterator[tuple[int, str, Entry]]:
    """(line number, collection or "tombstone", the row as stored or in its written form) of each line
    of one side, checked as it goes; after the last line every bad line is named in one UsageError, so
    a caller acts on what it got only once the generator is exhausted.  An id twice is a bad line,
    unless ``repeats`` (a side of a conflicted file: a line git moved on one branch can be both in the
    lines both sides share and in a conflict hunk; the caller keeps the later of the two)."""
    seen: dict[str, int] = {}
    problems: list[BadLine] = []
    for number, line in lines:
        if len(line) > MAX_LINE_CHARS:  # before parsing: a huge line never becomes a huge object
            problems.append(
                {
                    "line": number,
                    "field": None,
                    "why": f"is {len(line):,} characters, over the {MAX_LINE_CHARS:,} a memory's line can be",
                }
            )
            continue
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(
                {"line": number, "field": None, "why": f"is not valid JSON ({exc.msg}, column {exc.colno})"}
            )
            continue
        except RecursionError:  # nested past the parser's stack: a bad line like any other
            problems.append({"line": number, "field": None, "why": "is not valid JSON (nested too deeply)"})
            continue
        if isinstance(raw, dict) and "format" in raw and "id" not in raw:
            if raw.get("format") != FORMAT or not isinstance(raw.get("version"), int) or raw["version"] > VERSION:
                raise UsageError(
                    f"Line {number}: this is not a Contextware memory export this version reads "
                    f"(format {raw.get('format')!r}, version {raw.get('version')!r}); nothing was imported.",
                    code="bad_import",
                )
            continue
        try:
            if isinstance(raw, dict) and "deleted_at" in raw:
                collection, row = "tombstone", dict(check_tombstone(raw))
            else:
                collection, row = check_row(raw)
                if not stored:
                    row = written_form(collection, row)
        except UsageError as exc:
            problems.append(_problem(number, exc))
            continue
        if (rid := entry_id(row)) in seen and not repeats:
            why = f"id {rid} is already on line {seen[rid]}"
            problems.append({"line": number, "field": "id", "why": why})
            continue
        seen[rid] = number
        yield number, collection, row
    if problems:
        raise _refuse(problems)


def _parse_side(lines: Iterable[tuple[int, str]], *, repeats: bool) -> dict[str, Entry]:
    """id -> the entry in its written form for one side (with ``repeats``, the later of an id's
    lines); every bad line is named in one UsageError."""
    out: dict[str, Entry] = {}
    for _, _, row in checked_lines(lines, repeats=repeats):
        out[entry_id(row)] = later(out.get(entry_id(row)), row) or row
    return out


def read_entries(text: str) -> dict[str, Entry]:
    """Every entry of a file (memories and tombstones) in written form by id, checked; both sides of a
    file with git conflict markers, merged.  The first bad line is a UsageError naming it."""
    split = split_conflicts(text)
    sides = [_parse_side(side, repeats=len(split) == 2) for side in split]
    return merge2(*sides) if len(sides) == 2 else sides[0]


def parse_export(text: str) -> dict[str, list[Entry]]:
    """Every memory of a file by collection, as stored (times as datetimes), checked; tombstones are
    left out (:func:`read_entries` has them)."""
    by_collection: dict[str, list[Entry]] = {name: [] for name in MEMORY_TABLES}
    for entry in read_entries(text).values():
        if not is_tombstone(entry):
            collection, row = check_row(entry)
            by_collection[collection].append(row)
    return by_collection


def escape_breaks(line: str) -> str:
    """U+2028 and U+2029 escaped: ``json.dumps(ensure_ascii=False)`` leaves them raw, and readers that
    split on every Unicode line break (``str.splitlines``, editors, JavaScript) cut the line there.
    Outside strings JSON never holds them, so the escape is always inside one."""
    return line.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render(entries: Iterable[Mapping[str, object]]) -> str:
    """The file's text: the header, then each entry a line in ``(created_at, id)`` order."""
    header = json.dumps({"format": FORMAT, "version": VERSION})
    lines = [escape_breaks(json.dumps(e, ensure_ascii=False)) for e in sorted(entries, key=line_order)]
    return "".join(line + "\n" for line in [header, *lines])


# -- merging ----------------------------------------------------------------------------------------
def merge2(ours: dict[str, Entry], theirs: dict[str, Entry]) -> dict[str, Entry]:
    """Two versions with no common ancestor: every id of either, the later entry of each."""
    return {i: e for i in sorted({*ours, *theirs}) if (e := later(ours.get(i), theirs.get(i))) is not None}


def merge3(base: dict[str, Entry], ours: dict[str, Entry], theirs: dict[str, Entry]) -> dict[str, Entry]:
    """Three-way by id: a line one side left as it was in the ancestor and the other removed stays
    removed (an expired tombstone, a duplicate folded into another id); otherwise the later entry wins."""
    out: dict[str, Entry] = {}
    for i in sorted({*base, *ours, *theirs}):
        o, t, b = ours.get(i), theirs.get(i), base.get(i)
        if o is None or t is None:
            present = o or t
            if present is None or (b is not None and present == b):
                continue
            out[i] = present
        else:
            out[i] = later(o, t)  # type: ignore[assignment]
    return out


def merge_texts(base: str, ours: str, theirs: str) -> str:
    """The merged file of three versions (each may hold conflict markers itself)."""
    return render(merge3(read_entries(base), read_entries(ours), read_entries(theirs)).values())


def _read_side(path: Path, label: str) -> str:
    """One version git hands the driver: a regular file only (a FIFO is never opened, ``/dev/zero``
    never read), at most the import's size limit; anything else is one UsageError naming it."""
    from contextware.core.inputs import MAX_IMPORT_BYTES, read_input_file

    what = f"{label} ({path})"
    try:
        data = read_input_file(path, what, limit=MAX_IMPORT_BYTES, code="bad_merge_input")
    except UsageError as exc:
        exc.message = exc.message.replace("nothing was saved", "nothing was merged")
        raise
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"{what} is not UTF-8 text; nothing was merged.", code="bad_merge_input") from None


class Merged(TypedDict):
    """What the merge driver wrote: the file, and how many entries it holds."""

    merged: str
    entries: int


def merge_files(base: Path, ours: Path, theirs: Path) -> Merged:
    """git's merge driver: merge ``base`` (``%O``), ``ours`` (``%A``) and ``theirs`` (``%B``) into ``ours``."""
    from contextware.core.system import write_atomic

    texts = [_read_side(path, label) for path, label in ((base, "BASE"), (ours, "OURS"), (theirs, "THEIRS"))]
    merged = merge_texts(*texts)
    write_atomic(ours, merged)
    return {"merged": str(ours), "entries": merged.count("\n") - 1}


def with_markers(ours: Path, theirs: Path) -> None:
    """Leave ``ours`` as a conflict of both sides (what a failed driver hands back to git); when
    either side cannot be read as text, ``ours`` is left as it is (git's own conflict)."""
    from contextware.core.system import write_atomic

    try:
        mine, other = _read_side(ours, "OURS"), _read_side(theirs, "THEIRS")
    except UsageError:
        return
    if mine == other:
        return
    end = lambda t: t if not t or t.endswith("\n") else t + "\n"  # noqa: E731
    write_atomic(ours, f"<<<<<<< ours\n{end(mine)}=======\n{end(other)}>>>>>>> theirs\n")


__all__ = ["entry_key", "is_tombstone", "later"]
