"""A user turn that asks to remember something becomes a fact (issue 34 item 7).

"Please remember: release notes go in CHANGELOG.md under Unreleased" was kept only inside a session
digest, cut short.  A line of a user turn that starts with an instruction to remember ("remember …",
"please remember: …", "keep in mind …", "don't forget …", "for future reference …") or a standing
rule ("from now on …", "always …", "never …") is saved as a fact of the kind its words say
(constraint, preference or convention), with the captured turn as its ``source``: an ordinary fact,
which the browser shows and can edit or delete.

Questions and idioms are not instructions: "do you remember …?", "remember when …", "never mind",
"always the same?" save nothing.  Only a line's start counts, so an "always" in the middle of a
sentence says nothing.  Pure text functions: the hook saves what ``instructions`` finds."""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINES = 40  # lines of a turn looked at
MAX_FACTS = 3  # facts one turn can add
MIN_WORDS = 3
MAX_CHARS = 600  # a longer "instruction" is a message, not a fact

_POLITE = r"(?:(?:please|pls|ok(?:ay)?|also|and|so|hey|btw)[,\s]+)*"
_REMEMBER = re.compile(
    rf"^{_POLITE}(?:remember|memori[sz]e|keep in mind|don'?t forget|do not forget|for future reference|note for later)"
    r"(?:\s+(?:this|that|for later|for the future))?\s*(?:[:,\-–—]\s*|\s+)(?P<body>.+)$",
    re.I,
)
_RULE = re.compile(rf"^{_POLITE}(?P<cue>from now on|going forward|in future|in the future|always|never)\b", re.I)
# "remember when/what/if …" asks; "remember to …" instructs (kept: "Remember to …" is the fact).
_ASKS = re.compile(r"^(?:when|what|who|whom|whose|where|why|how|which|if|whether)\b", re.I)
_NOT_RULES = re.compile(
    r"^(?:never\s*mind|nevermind|never again\b|never heard|never seen|always the same|always has been|"
    r"always was|never was|never did|never mind that)",
    re.I,
)
_QUESTION_START = re.compile(
    r"^(?:do|did|does|can|could|would|will|should|shall|is|are|was|were|have|has)\s+(?:you|we|i)\b", re.I
)
_CONSTRAINT = re.compile(
    r"\b(?:never|don'?t|do not|must|mustn'?t|must not|may not|cannot|can'?t|only|forbidden|not allowed)\b", re.I
)
_PREFERENCE = re.compile(r"\b(?:prefer|i like|i'd rather|i would rather|i want|i don'?t like|rather than)\b", re.I)


@dataclass(frozen=True)
class Instruction:
    text: str  # the fact as it will be stored (the user's words, the "remember" cue dropped)
    kind: str  # constraint | preference | convention


def _clean(line: str) -> str:
    return " ".join(line.strip().lstrip("-*>•").split())


def _kind(text: str) -> str:
    if _PREFERENCE.search(text):
        return "preference"
    if _CONSTRAINT.search(text):
        return "constraint"
    return "convention"


def _as_fact(body: str) -> str:
    body = body.strip().strip("\"'“”").strip()
    for lead in ("that ", "to "):  # "remember that X" keeps X; "remember to run X" keeps "Run X"
        if body[: len(lead)].lower() == lead:
            body = body[len(lead) :].lstrip()
            break
    body = body[0].upper() + body[1:] if body else body
    return body if body.endswith((".", "!", ")", "`")) else body + "."


def instruction(line: str) -> Instruction | None:
    """The fact one line of a user turn asks to keep, or None for a question, an idiom or a plain line."""
    text = _clean(line)
    if not text or text.endswith("?") or len(text) > MAX_CHARS or _QUESTION_START.match(text):
        return None
    m = _REMEMBER.match(text)
    if m:
        body = m["body"].strip()
        if _ASKS.match(body) or len(body.split()) < MIN_WORDS:
            return None
        fact = _as_fact(body)
        return Instruction(fact, _kind(fact))
    m = _RULE.match(text)
    if m is None or _NOT_RULES.match(text[m.start("cue") :]) or len(text.split()) < MIN_WORDS + 1:
        return None
    fact = _as_fact(text[m.start("cue") :])
    return Instruction(fact, "constraint" if m["cue"].lower() == "never" else _kind(fact))


def instructions(turn: str) -> list[Instruction]:
    """Every instruction to remember in a user turn (at most ``MAX_FACTS``), in order."""
    out: list[Instruction] = []
    for line in turn.splitlines()[:MAX_LINES]:
        found = instruction(line)
        if found and found not in out:
            out.append(found)
        if len(out) >= MAX_FACTS:
            break
    return out
