"""Per memory: how often the prompt hook injected it and how often the agent then used it (issue 33).

One small JSON file in the data dir, ``use.json`` (0600, rewritten whole through a temporary file):

- ``memories``: ``{id: {"injected", "used", "fetched", "last_injected", "last_used"}}``, at most
  ``MAX_IDS`` ids (those injected or used longest ago go first);
- ``pending``: per session, the hashed keys (``use.hashed``, never a memory's words) of what the
  prompt hook injected into the session's latest prompt, at most ``MAX_PENDING`` sessions; the
  session's AfterAgent/Stop judges the answer against them (``judge``) and drops them.

``used`` counts turns whose answer or tool calls used the memory (``use.decide``); ``fetched``
counts reads of it by id (MCP ``get_memory``).  A file that does not parse is ignored and
rewritten.  Two hooks writing at the same moment may lose one count: this is feedback, not memory.
Standard library only: this runs on the hooks' path.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from contextware.memory.turns import use

FILE = "use.json"
MAX_IDS = 2_000
MAX_PENDING = 50
MAX_BYTES = 2_000_000  # a larger file is not read (and is rewritten)
MAX_ID = 128
OFTEN = 5  # injections for "injected often, never used"; uses for "used often"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _empty() -> dict[str, Any]:
    return {"memories": {}, "pending": {}}


def load(data_dir: Path) -> dict[str, Any]:
    """The file's content; empty when it is missing, too large or does not parse as ours."""
    try:
        with open(data_dir / FILE, encoding="utf-8") as f:
            doc = json.loads(f.read(MAX_BYTES + 1) or "null")
    except (OSError, ValueError, RecursionError):
        return _empty()
    if not isinstance(doc, dict) or not isinstance(doc.get("memories"), dict):
        return _empty()
    memories = {
        str(k)[:MAX_ID]: v
        for k, v in doc["memories"].items()
        if isinstance(v, dict) and all(isinstance(v.get(n, 0), int) for n in ("injected", "used", "fetched"))
    }
    pending = doc.get("pending")
    if not isinstance(pending, dict):
        pending = {}
    return {"memories": memories, "pending": {str(k): v for k, v in pending.items() if isinstance(v, dict)}}


def _save(data_dir: Path, doc: dict[str, Any]) -> None:
    memories: dict[str, Any] = doc["memories"]
    if len(memories) > MAX_IDS:
        newest = sorted(
            memories,
            key=lambda i: max(str(memories[i].get("last_used") or ""), str(memories[i].get("last_injected") or "")),
        )[-MAX_IDS:]
        doc["memories"] = {i: memories[i] for i in newest}
    pending: dict[str, Any] = doc["pending"]
    if len(pending) > MAX_PENDING:
        doc["pending"] = dict(sorted(pending.items(), key=lambda kv: str(kv[1].get("at") or ""))[-MAX_PENDING:])
    path = data_dir / FILE
    tmp = data_dir / f".{FILE}.{os.getpid()}.{os.urandom(4).hex()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")))
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _entry(doc: dict[str, Any], memory_id: str) -> dict[str, Any]:
    entry: dict[str, Any] = doc["memories"].setdefault(memory_id[:MAX_ID], {"injected": 0, "used": 0, "fetched": 0})
    return entry


def injected(data_dir: Path, session: str, texts: dict[str, str]) -> None:
    """The prompt hook injected these memories (``{id: the line injected}``) into ``session``'s
    prompt: count them and keep their hashed keys for the answer."""
    if not texts or not data_dir.is_dir():
        return
    doc = load(data_dir)
    now = _now()
    for memory_id in texts:
        entry = _entry(doc, memory_id)
        entry["injected"] = int(entry.get("injected", 0)) + 1
        entry["last_injected"] = now
    if session:
        keys = {i[:MAX_ID]: use.hashed(use.keys(t)) for i, t in texts.items()}
        doc["pending"][session[:MAX_ID]] = {
            "at": now,
            "keys": {i: {"m": sorted(k.marks), "r": sorted(k.rare)} for i, k in keys.items()},
        }
    _save(data_dir, doc)


def judge(data_dir: Path, session: str, reply: str, tool_inputs: Iterable[str] = ()) -> list[str]:
    """The answer to ``session``'s latest prompt: count the memories injected into it that the
    reply or the tool calls used; returns their ids.  Nothing pending: nothing read or written
    beyond the file."""
    if not session or not data_dir.is_dir():
        return []
    doc = load(data_dir)
    turn = doc["pending"].pop(session[:MAX_ID], None)
    if not isinstance(turn, dict) or not isinstance(turn.get("keys"), dict):
        return []
    answer = use.hashed(use.reply_keys(reply, tool_inputs))
    found = []
    now = _now()
    for memory_id, k in turn["keys"].items():
        if not isinstance(k, dict):
            continue
        memory = use.Keys(frozenset(map(str, k.get("m") or ())), frozenset(map(str, k.get("r") or ())))
        if use.decide(memory, answer):
            entry = _entry(doc, memory_id)
            entry["used"] = int(entry.get("used", 0)) + 1
            entry["last_used"] = now
            found.append(memory_id)
    _save(data_dir, doc)
    return found


def fetched(data_dir: Path, memory_id: str) -> None:
    """The memory was read by its id (MCP ``get_memory``)."""
    if not memory_id or not data_dir.is_dir():
        return
    doc = load(data_dir)
    entry = _entry(doc, memory_id)
    entry["fetched"] = int(entry.get("fetched", 0)) + 1
    entry["last_used"] = _now()
    _save(data_dir, doc)


def summary(data_dir: Path) -> dict[str, Any]:
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


def queues(data_dir: Path, often: int = OFTEN, limit: int = 50) -> dict[str, list[dict[str, Any]]]:
    """The review queue's two lists: injected ``often`` times or more and never used, and used
    (in turns or by id) ``often`` times or more; ``{"id", "injected", "used", "fetched", "last_used"}``."""
    rows = [
        {"id": i, **{k: m.get(k) for k in ("injected", "used", "fetched", "last_used")}}
        for i, m in load(data_dir)["memories"].items()
    ]
    never = [r for r in rows if int(r["injected"] or 0) >= often and not r["used"] and not r["fetched"]]
    never.sort(key=lambda r: -int(r["injected"] or 0))
    busy = [r for r in rows if int(r["used"] or 0) + int(r["fetched"] or 0) >= often]
    busy.sort(key=lambda r: -(int(r["used"] or 0) + int(r["fetched"] or 0)))
    return {"unused": never[:limit], "used_often": busy[:limit]}
