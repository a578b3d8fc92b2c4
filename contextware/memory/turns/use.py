"""Whether an injected memory was used in the turn it was injected into (issue 33, use feedback).

Pure functions, standard library only (they run on the hooks' path).  ``keys`` reads what is telling
in a memory's text: *marks* (paths, file names, identifiers such as ``snake_case``, ``camelCase``,
``dotted.names`` or ``--flags``, and numbers of two digits or more) and *rare words* (words of four
letters or more that are neither stop words nor words every engineering turn uses).  ``used`` says
whether the agent's reply and its tool calls' inputs carry them: one mark, or at least
``RARE_NEEDED`` rare words that are also ``RARE_SHARE`` of the memory's rare words.  Work is
bounded: at most ``MAX_TEXT`` characters of the memory and ``MAX_REPLY`` of the reply are read.

Keys can be kept hashed (``hashed``): the hook keeps a turn's keys between the prompt and the
answer without keeping any memory's words.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from contextware.core.words import STOP_WORDS, stem

MAX_TEXT = 4_000  # characters of a memory read
MAX_REPLY = 200_000  # characters of a reply and its tool inputs read
MAX_KEYS = 48  # marks and rare words kept per memory
RARE_NEEDED = 2  # rare words that must appear when no mark does
RARE_SHARE = 0.34  # ... and this share of the memory's rare words
MIN_WORD = 4

_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./:+#-]*[A-Za-z0-9_+#]|[A-Za-z0-9]")
_LABEL = re.compile(r"^\s*-\s*(?:\[[A-Z0-9 :_-]+\]|file)\s*")  # the hook line's "- [NOTE] ", "- file "
_FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][A-Za-z0-9-]+")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
_NUMBER = re.compile(r"\d[\d.:,]*\d")

# Words an engineering turn says whatever it is about: sharing them is not use.
_COMMON_TEXT = """
    about above after again agent also always answer anything around back because been before being
    below best better between both build built call called calls case change changed changes check
    checked code come command commands config could data default does done each edit either else
    error errors even every example expect fail failed fails failing file files first find fine
    first following from function functions give good have help here however into issue item just
    keep kept know last later like line lines list look looks make makes many memory more most much
    must need needs never next note only open other output over part pass passes passing path please
    project read really right same save should show since some something start still sure take test
    tested tests than that their them then there these they thing things this those through time
    today true false turn under update updated upon used user uses using value values very want were
    what when where which while will with without work works would write wrote your yours yes fix
    fixed fixes added adds remove removed run runs running new old now use next value okay done
    version versions return returns returned string number true none null name names type types
    class method module script step steps result results tool tools task tasks plan current
    past success failure partial research convention decision lesson stale full indexed session summary
    ones earlier such another often already instead
"""
COMMON = frozenset(_COMMON_TEXT.split())


@dataclass(frozen=True)
class Keys:
    """What marks a memory: ``marks`` (paths, identifiers, numbers) and ``rare`` (rare word stems)."""

    marks: frozenset[str]
    rare: frozenset[str]


def _is_mark(token: str) -> bool:
    if "/" in token or "_" in token or "::" in token:
        return len(token) >= 3
    if "." in token.strip("."):
        head, _, tail = token.rpartition(".")
        return bool(head) and (tail.isalpha() or tail.isdigit()) and len(token) >= 4
    if _CAMEL.search(token):
        return True
    return bool(_NUMBER.fullmatch(token)) or (token.isdigit() and len(token) >= 2)


def _marks_of(token: str) -> list[str]:
    """A mark and the shorter forms a reply may use: a path's file name, a dotted name's last part."""
    low = token.lower().rstrip(".:")
    out = [low]
    if "/" in low:
        tail = low.rsplit("/", 1)[1]
        if len(tail) >= 4:
            out.append(tail)
    return out


def _word_ok(word: str) -> bool:
    return len(word) >= MIN_WORD and word.isalpha() and word not in STOP_WORDS and word not in COMMON


def keys(text: str) -> Keys:
    """The marks and rare words of a memory's text (at most ``MAX_KEYS`` of each)."""
    text = _LABEL.sub("", text[:MAX_TEXT])
    marks: dict[str, None] = {}
    rare: dict[str, None] = {}
    for flag in _FLAG.findall(text):
        marks.setdefault(flag.lower(), None)
    for token in _TOKEN.findall(text):
        if _is_mark(token):
            for m in _marks_of(token):
                marks.setdefault(m, None)
        else:  # a hyphenated word counts by its parts ("re-appended": appended)
            for low in token.lower().split("-"):
                if _word_ok(low):
                    rare.setdefault(stem(low), None)
    return Keys(frozenset(list(marks)[:MAX_KEYS]), frozenset(list(rare)[:MAX_KEYS]))


def reply_keys(reply: str, tool_inputs: Iterable[str] = ()) -> Keys:
    """Everything in the reply and the tool calls' inputs a memory's keys can meet (bounded)."""
    parts, left = [], MAX_REPLY
    for part in (reply, *tool_inputs):
        if left <= 0:
            break
        parts.append(part[:left])
        left -= len(parts[-1])
    text = "\n".join(parts)
    marks: set[str] = {f.lower() for f in _FLAG.findall(text)}
    rare: set[str] = set()
    for token in _TOKEN.findall(text):
        low = token.lower().rstrip(".:")
        marks.update(_marks_of(token))
        if "/" in low:  # a path's pieces: a memory naming a folder meets a file in it
            marks.update(p for p in low.split("/") if p)
        rare.update(stem(w) for w in low.split("-") if w.isalpha())
    return Keys(frozenset(marks), frozenset(rare))


def decide(memory: Keys, reply: Keys) -> bool:
    """Used: a mark of the memory appears, or enough of its rare words do."""
    if memory.marks & reply.marks:
        return True
    if not memory.rare:
        return False
    met = len(memory.rare & reply.rare)
    return met >= RARE_NEEDED and met >= RARE_SHARE * len(memory.rare)


def used(memory_text: str, reply: str, tool_inputs: Iterable[str] = ()) -> bool:
    """Whether the agent's reply or its tool calls' inputs use the memory."""
    return decide(keys(memory_text), reply_keys(reply, tool_inputs))


def _h(word: str) -> str:
    return hashlib.blake2b(word.encode("utf-8"), digest_size=6).hexdigest()


def hashed(k: Keys) -> Keys:
    """The keys hashed (12 hex digits each): what the hook keeps between prompt and answer."""
    return Keys(frozenset(map(_h, k.marks)), frozenset(map(_h, k.rare)))


def baseline(memory_text: str, reply: str, tool_inputs: Iterable[str] = ()) -> bool:
    """The trivial detector the bench compares with: any word (not a stop word) in common."""
    seen = set(re.findall(r"[a-z0-9]+", "\n".join([reply, *tool_inputs])[:MAX_REPLY].lower()))
    return any(w not in STOP_WORDS and w in seen for w in re.findall(r"[a-z0-9]+", memory_text[:MAX_TEXT].lower()))
