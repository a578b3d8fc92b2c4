"""Per memory: how often the prompt hook injected it and how often the agent then used it (issue 33).

Three small private files (0600) in the data dir, so that the hooks' path only appends a line or
handles one small file:

- ``use_events.jsonl``: one line per event, ``{"at", "injected"|"used"|"fetched": [ids]}``;
  past ``MAX_EVENTS_BYTES`` it is folded into ``use.json`` (renamed first, so one process folds it).
- ``use.json``: ``{"memories": {id: {"injected", "used", "fetched", "last_injected", "last_used"}}}``,
  at most ``MAX_IDS`` ids (those injected or used longest ago go first), rewritten whole through a
  temporary file.
- ``use_pending/<hash of the session>``: the hashed keys (``use.hashed``, never a memory's words) of
  what the prompt hook injected into the session's latest prompt, at most ``MAX_PENDING`` sessions;
  the session's AfterAgent/Stop judges the answer against them (``judge``) and removes the file.

``used`` counts turns whose answer or tool calls used the memory (``use.decide``) and the times a
person or agent confirmed it or superseded it (``relied_on``); ``fetched`` counts reads of it by
id (MCP ``get_memory``).  ``priors`` turns the counts into recall's bounded tie-break.  A file or
line that does not parse is ignored (and rewritten at the next fold).  Appends and folds take an
advisory lock (``fcntl.flock``: shared to append, exclusive to fold), so concurrent hooks lose no
count.  Standard library only: this runs on the hooks' path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypedDict, cast

from contextware.memory.turns import use

FILE = "use.json"
EVENTS = "use_events.jsonl"
PENDING = "use_pending"
MAX_IDS = 2_000
MAX_PENDING = 50
MAX_EVENTS_BYTES = 64_000  # the events are folded into FILE past this
MAX_BYTES = 2_000_000  # a larger file is not read
MAX_ID = 128
LOCK = "use.lock"
PRIOR_EVIDENCE = 5.0  # injections at which the prior has half its weight
OFTEN = 5  # injections for "injected often, never used"; uses for "used often"
_COUNTS = ("injected", "used", "fetched")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _private_write(path: Path, text: str) -> None:
    """``text`` to ``path`` through a temporary file, mode 0600."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _read_json(path: Path) -> object:
    try:
        with open(path, encoding="utf-8") as f:
            return json.loads(f.read(MAX_BYTES + 1) or "null")
    except (OSError, ValueError, RecursionError):
        return None


class UseCounts(TypedDict, total=False):
    """One memory's counts in ``use.json``: injected, used in a turn, fetched by id, and when."""

    injected: int
    used: int
    fetched: int
    last_injected: str
    last_used: str


class UseFile(TypedDict):
    memories: dict[str, UseCounts]


class UseSummary(TypedDict):
    memories_injected: int
    memories_used: int
    injections: int
    uses: int
    fetches: int
    use_rate: float | None


class QueueRow(TypedDict):
    id: str
    injected: int | None
    used: int | None
    fetched: int | None
    last_used: str | None


def _base(data_dir: Path) -> dict[str, UseCounts]:
    """The folded counts of ``use.json``; empty when it is missing or not ours."""
    doc = _read_json(data_dir / FILE)
    memories = doc.get("memories") if isinstance(doc, dict) else None
    if not isinstance(memories, dict):
        return {}
    return {
        str(k)[:MAX_ID]: cast(UseCounts, v)
        for k, v in memories.items()
        if isinstance(v, dict) and all(isinstance(v.get(n, 0), int) for n in _COUNTS)
    }


def _fold(memories: dict[str, UseCounts], text: str) -> None:
    for line in text.split("\n"):
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(event, dict):
            continue
        at = str(event.get("at") or "")
        for what in _COUNTS:
            ids = event.get(what)
            for memory_id in ids if isinstance(ids, list) else ():
                entry = memories.setdefault(str(memory_id)[:MAX_ID], {"injected": 0, "used": 0, "fetched": 0})
                counts = cast("dict[str, int | str]", entry)  # ``what`` is one of _COUNTS: an int
                seen = counts.get(what, 0)
                counts[what] = (seen if isinstance(seen, int) else 0) + 1
                counts["last_injected" if what == "injected" else "last_used"] = at


def load(data_dir: Path) -> UseFile:
    """``{"memories": {id: counts}}``: ``use.json`` with the events not folded yet."""
    with _locked(data_dir, exclusive=False):  # not in the middle of a fold: nothing counted twice
        memories = _base(data_dir)
        try:
            with open(data_dir / EVENTS, encoding="utf-8", errors="replace") as f:
                _fold(memories, f.read(MAX_BYTES))
        except OSError:
            pass
    return {"memories": memories}


@contextlib.contextmanager
def _locked(data_dir: Path, exclusive: bool) -> Iterator[None]:
    """An advisory lock over the events and ``use.json`` (none where ``fcntl`` is missing or the
    lock file cannot be opened: a read-only data dir is still read)."""
    try:
        import fcntl

        fd = os.open(data_dir / LOCK, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def fold(data_dir: Path) -> None:
    """The events into ``use.json`` (kept within ``MAX_IDS``), the events file emptied."""
    with _locked(data_dir, exclusive=True):  # no append lands in the file while it is read
        try:
            with open(data_dir / EVENTS, encoding="utf-8", errors="replace") as f:
                text = f.read(MAX_BYTES)
        except OSError:
            return
        memories = _base(data_dir)
        _fold(memories, text)
        if len(memories) > MAX_IDS:
            last = {
                i: max(str(m.get("last_used") or ""), str(m.get("last_injected") or "")) for i, m in memories.items()
            }
            memories = {i: memories[i] for i in sorted(memories, key=last.__getitem__)[-MAX_IDS:]}
        _private_write(data_dir / FILE, json.dumps({"memories": memories}, ensure_ascii=False, separators=(",", ":")))
        (data_dir / EVENTS).unlink(missing_ok=True)


def _event(data_dir: Path, what: str, ids: list[str]) -> None:
    """One line appended to the events; folded when the file grew past ``MAX_EVENTS_BYTES``."""
    line = json.dumps({"at": _now(), what: [i[:MAX_ID] for i in ids]}, ensure_ascii=False) + "\n"
    with _locked(data_dir, exclusive=False):
        fd = os.open(data_dir / EVENTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(line)
            size = f.tell()
    if size > MAX_EVENTS_BYTES:
        fold(data_dir)


def _pending(data_dir: Path, session: str) -> Path:
    return data_dir / PENDING / hashlib.blake2b(session.encode("utf-8", "replace"), digest_size=12).hexdigest()


def injected(data_dir: Path, session: str, texts: dict[str, str]) -> None:
    """The prompt hook injected these memories (``{id: the line injected}``) into ``session``'s
    prompt: count them and keep their hashed keys for the answer."""
    if not texts or not data_dir.is_dir():
        return
    _event(data_dir, "injected", list(texts))
    if not session:
        return
    keys = {i[:MAX_ID]: use.hashed(use.keys(t)) for i, t in texts.items()}
    folder = data_dir / PENDING
    folder.mkdir(mode=0o700, exist_ok=True)
    body = {i: {"m": sorted(k.marks), "r": sorted(k.rare)} for i, k in keys.items()}
    _private_write(_pending(data_dir, session), json.dumps(body, separators=(",", ":")))
    waiting = list(folder.iterdir())
    if len(waiting) > MAX_PENDING:  # sessions that never answered: the oldest go
        waiting.sort(key=lambda p: p.stat().st_mtime if p.exists() else 0)
        for old in waiting[: len(waiting) - MAX_PENDING]:
            old.unlink(missing_ok=True)


def is_pending(data_dir: Path, session: str) -> bool:
    """Whether the prompt hook injected memories into ``session``'s latest prompt, not judged yet."""
    return bool(session) and _pending(data_dir, session).is_file()


def judge(data_dir: Path, session: str, reply: str, tool_inputs: Iterable[str] = ()) -> list[str]:
    """The answer to ``session``'s latest prompt: count the memories injected into it that the
    reply or the tool calls used; returns their ids.  Nothing pending: nothing else read."""
    if not session:
        return []
    path = _pending(data_dir, session)
    if not path.is_file():
        return []
    turn = _read_json(path)
    path.unlink(missing_ok=True)
    if not isinstance(turn, dict):
        return []
    answer = use.hashed(use.reply_keys(reply, tool_inputs))
    found = []
    for memory_id, k in turn.items():
        if not isinstance(k, dict):
            continue
        memory = use.Keys(frozenset(map(str, k.get("m") or ())), frozenset(map(str, k.get("r") or ())))
        if use.decide(memory, answer):
            found.append(str(memory_id))
    if found:
        _event(data_dir, "used", found)
    return found


def fetched(data_dir: Path, memory_id: str) -> None:
    """The memory was read by its id (MCP ``get_memory``)."""
    if memory_id and data_dir.is_dir():
        _event(data_dir, "fetched", [memory_id])


def relied_on(data_dir: Path, memory_ids: Iterable[str]) -> None:
    """A person or agent confirmed these memories or superseded them: each counts as a use."""
    ids = [i for i in memory_ids if i]
    if ids and data_dir.is_dir():
        _event(data_dir, "used", ids)


def priors(data_dir: Path) -> dict[str, float]:
    """Per memory with feedback, recall's tie-break in [-1, 1]: its use rate against one half,
    weighted by how often it was injected (``PRIOR_EVIDENCE`` injections give half the weight), so
    a memory injected once and not used moves nothing, one injected fifty times and never used
    sinks below its ties.  Uses by id (fetched) or by confirming count as uses.  Memories without
    feedback are absent: with none recorded, recall orders exactly as without this."""
    stamp = tuple(_stamp(data_dir / name) for name in (FILE, EVENTS))
    if stamp == (None, None):
        return {}
    cached = _PRIORS.get(str(data_dir))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    out: dict[str, float] = {}
    for memory_id, m in load(data_dir)["memories"].items():
        injected = int(m.get("injected", 0))
        used = int(m.get("used", 0)) + int(m.get("fetched", 0))
        seen = max(injected, used)
        if seen:
            rate = min(used, seen) / seen
            out[memory_id] = (2.0 * rate - 1.0) * seen / (seen + PRIOR_EVIDENCE)
    if len(_PRIORS) > 16:
        _PRIORS.clear()
    _PRIORS[str(data_dir)] = (stamp, out)
    return out


_PRIORS: dict[str, tuple[tuple[object, ...], dict[str, float]]] = {}  # the service's recalls: parsed once per change


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def summary(data_dir: Path) -> UseSummary:
    """For ``memory stats``: memories injected and used, injections, uses and the use rate (uses
    in turns / injections; None before any injection)."""
    memories = load(data_dir)["memories"].values()
    injections = sum(int(m.get("injected", 0)) for m in memories)
    uses = sum(min(int(m.get("used", 0)), int(m.get("injected", 0))) for m in memories)
    return {
        "memories_injected": sum(1 for m in memories if m.get("injected")),
        "memories_used": sum(1 for m in memories if m.get("used") or m.get("fetched")),
        "injections": injections,
        "uses": uses,
        "fetches": sum(int(m.get("fetched", 0)) for m in memories),
        "use_rate": round(uses / injections, 3) if injections else None,
    }


def queues(data_dir: Path, often: int = OFTEN, limit: int = 50) -> dict[str, list[QueueRow]]:
    """The review queue's two lists: injected ``often`` times or more and never used, and used
    (in turns or by id) ``often`` times or more; ``{"id", "injected", "used", "fetched", "last_used"}``."""
    rows: list[QueueRow] = [
        {
            "id": i,
            "injected": m.get("injected"),
            "used": m.get("used"),
            "fetched": m.get("fetched"),
            "last_used": m.get("last_used"),
        }
        for i, m in load(data_dir)["memories"].items()
    ]
    never = [r for r in rows if int(r["injected"] or 0) >= often and not r["used"] and not r["fetched"]]
    never.sort(key=lambda r: -int(r["injected"] or 0))
    busy = [r for r in rows if int(r["used"] or 0) + int(r["fetched"] or 0) >= often]
    busy.sort(key=lambda r: -(int(r["used"] or 0) + int(r["fetched"] or 0)))
    return {"unused": never[:limit], "used_often": busy[:limit]}
