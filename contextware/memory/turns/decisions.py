"""What the prompt hook decided, turn by turn: a small, bounded, redacted record so a person can
ask "why did the agent not know X in that turn?" (the memory browser's Turns page).

One JSON line per prompt in ``<data_dir>/hook_decisions.jsonl`` (private like every file there):
when, the session, the start of the prompt (redacted as a table's row is: every detector, over
the text's normal form), the gate's verdict, what was injected
and the best candidates held back, each with the number that decided it.  Only ids, scores and
verdicts are kept, never a memory's text.  At ``MAX_BYTES`` the file is cut to its newest
``KEEP`` lines (written atomically; a line appended by another process during that rewrite may be
lost: this is a diagnostic record, not memory).  Writing never fails a turn."""

from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING, TypedDict, cast

if TYPE_CHECKING:
    from contextware.memory.recall.types import RecallResult
    from contextware.storage.project import Project

FILE_NAME = "hook_decisions.jsonl"
KEEP = 200  # decisions kept after a cut
MAX_BYTES = 256_000  # the file is cut back to KEEP lines past this
PROMPT_CHARS = 160
PROMPT_SOURCE_CHARS = 65_536  # of the prompt read for the preview
_BLANKS = re.compile(r"[ \t\f\v]+")
_BLANK_LINES = re.compile(r"\s*\n\s*")
HELD_SHOWN = 3  # best candidates held back, per turn


class Injected(TypedDict):
    """A memory that went into the context (``None``: the result lacked the key)."""

    id: object
    collection: object
    score: object
    confidence: object


class HeldBack(TypedDict):
    """One of the best candidates left out, and why."""

    id: str
    collection: str
    score: float
    confidence: float
    why: str


class TurnDecision(TypedDict):
    """One line of ``decisions.jsonl``: what the prompt hook injected on a turn and what it held back."""

    at: str
    event: str
    session: str | None
    prompt: str  # redacted and shortened
    verdict: str | None
    gate: float
    injected: list[Injected]
    held: list[HeldBack]


def entry(event: str, session_id: str, prompt: str, result: RecallResult, injected: list[str]) -> TurnDecision:
    """One turn's decision for the host's ``event`` (its name) in ``session_id``: ``injected`` are
    the ids that went into the context."""
    from contextware.core.redact import redact_text
    from contextware.core.text import cut_at_word

    # Redacted like a table's row: the full detector set over the normal form, before the cut.  The
    # window is taken after blank runs are squeezed, so whitespace cannot bring a secret cut at the
    # window's edge into the kept start (a secret crossing the edge would have to be > 300 characters).
    squeezed = _BLANKS.sub(" ", _BLANK_LINES.sub("\n", prompt[:PROMPT_SOURCE_CHARS]))
    preview = redact_text(squeezed[: PROMPT_CHARS * 3])
    session = redact_text(session_id[:128], library=False) or None
    why = result.explanation
    shown = {r["id"]: r for r in result.results}
    held = [c for c in (why.candidates if why is not None else ()) if c.id not in injected][:HELD_SHOWN]
    return {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "event": event or "BeforeAgent",
        "session": session,
        "prompt": cut_at_word(" ".join(preview.split()), PROMPT_CHARS),
        "verdict": why.verdict if why is not None else None,
        "gate": result.min_confidence,
        "injected": [
            {
                "id": shown[i].get("id"),
                "collection": shown[i].get("collection"),
                "score": shown[i].get("score"),
                "confidence": shown[i].get("confidence"),
            }
            for i in injected
            if i in shown
        ],
        "held": [
            {
                "id": c.id,
                "collection": c.collection,
                "score": round(c.score, 4),
                "confidence": round(c.confidence, 4),
                "why": c.decided_by
                if c.shown is None
                else "shown by recall, left out of the context (budget or files)",
            }
            for c in held
        ],
    }


def record(project: "Project", decision: TurnDecision) -> None:
    """Append one decision; cut the file back when it grew past ``MAX_BYTES``.  Never raises."""
    try:
        path = project.data_dir / FILE_NAME
        if not project.data_dir.is_dir():
            return
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(decision, ensure_ascii=False) + "\n")
        if path.stat().st_size > MAX_BYTES:
            from contextware.core.system import write_atomic

            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-KEEP:]
            write_atomic(path, "\n".join(lines) + "\n")
    except Exception:  # noqa: BLE001 - a diagnostic record must never fail a turn
        pass


def recent(project: "Project", limit: int = KEEP) -> list[TurnDecision]:
    """The newest decisions first (lines that do not parse as an object are skipped; the file is
    ours, written by ``record``, so an object is taken as a ``TurnDecision``)."""
    try:
        text = (project.data_dir / FILE_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[TurnDecision] = []
    for line in reversed(text.splitlines()):
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append(cast(TurnDecision, item))
        if len(out) >= limit:
            break
    return out
