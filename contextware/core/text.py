"""Small text helpers shared by saving and recall."""

from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata
from collections.abc import Iterable
from datetime import datetime, timezone

from contextware.core.errors import FieldError, UsageError

_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    """The form used to detect exact duplicates: NFKC, case-folded, whitespace collapsed."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()


def text_hash(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(normalise(p) for p in parts).encode()).hexdigest()


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(6)}"


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def iso_of(value: object) -> str | None:
    """A stored time (a datetime) in ISO 8601 UTC to the second; None for anything else (no time)."""
    return iso(value) if isinstance(value, datetime) else None


def parse_iso(value: object) -> datetime | None:
    """An ISO 8601 date or time (``Z`` accepted) as an aware UTC-based datetime; None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def parse_since(raw: str) -> datetime:
    """``--since``: an ISO date or datetime, or a relative age such as ``7d``, ``12h``, ``30m``."""
    value = raw.strip()
    rel = re.fullmatch(r"(\d+)\s*([smhdw])", value)
    if rel:
        from datetime import timedelta

        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[rel.group(2)]
        try:
            since = utcnow() - timedelta(**{unit: int(rel.group(1))})
        except (OverflowError, ValueError):
            since = None
        if since is None or since.year < 1970:
            raise FieldError(
                f"{{field}} {raw!r} reaches back before 1970; give a smaller age such as 365d.", field="since"
            ) from None
        return since
    parsed = parse_iso(value)
    if parsed is None:
        raise FieldError(
            f"{{field}} {raw!r} is not a date: use YYYY-MM-DD, an ISO 8601 time, or an age like 7d or 12h.",
            field="since",
        )
    if not 1970 <= parsed.year <= 9999 or parsed.year > utcnow().year + 1:
        raise FieldError(
            f"{{field}} {raw!r} is out of range: give a date from 1970 to next year, or an age like 30d.",
            field="since",
        )
    return parsed


# Terminal control sequences: CSI (colours, cursor moves), OSC (titles, hyperlinks, clipboard),
# other two-byte ESC sequences, and the C0/C1 control characters other than tab, newline and CR.
_TERMINAL_CONTROLS = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]"
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
)

_ANY_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # one class: a fast scan for the rest


def strip_terminal_controls(text: str) -> str:
    """Text without the escape sequences and control characters a terminal would act on (stored
    colour codes replayed by ``--format text`` could retitle, move or clear the user's terminal)."""
    return _TERMINAL_CONTROLS.sub("", text) if _ANY_CONTROL.search(text) else text


# Characters a reader does not see that can split or reorder what is shown: soft hyphen, combining
# grapheme joiner, Arabic letter mark, Hangul fillers, Khmer inherent vowels, Mongolian separators,
# zero-width spaces and joiners, LRM/RLM, bidi embeddings, overrides and isolates, word joiner and
# invisible operators, variation selectors, the BOM and the tag characters (hidden ASCII).
INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f]"
)


def plain_text(text: str) -> str:
    """The one normal form that redaction and the fence read: invisible and bidi characters removed,
    terminal escapes and control characters removed (tab, newline and CR kept), compatibility forms
    folded (NFKC: full-width letters, ligatures, ``＜``).  So ``gh\u200bp_…``, an ANSI-coloured token
    or ``ＡＫＩＡ…`` reads as what a terminal or a model would make of it.  ASCII text costs one scan."""
    if text.isascii():
        return strip_terminal_controls(text)
    text = strip_terminal_controls(INVISIBLE.sub("", text))
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


def check_unicode(text: str, what: str) -> str:
    """Refuse text holding a lone surrogate: what Python makes of bytes that are not UTF-8 on a
    command line, or a ``"\\ud800"`` escape in JSON.  It could be neither stored nor printed."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"The {what} is not valid Unicode text (it holds bytes that are not UTF-8 or a lone surrogate); give UTF-8 text.",
            code="bad_encoding",
        ) from None
    return text


def chunk_text(text: str, size: int) -> list[str]:
    """Split long text at paragraph, then sentence, then word boundaries into pieces of at most
    ``size`` characters."""
    text = text.strip()
    if len(text) <= size:
        return [text]
    chunks: list[str] = []
    rest = text
    while len(rest) > size:
        window = rest[:size]
        cut = -1
        for sep in ("\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " "):
            pos = window.rfind(sep)
            if pos >= size // 3:
                cut = pos + len(sep)
                break
        if cut <= 0:
            cut = size
        chunks.append(rest[:cut].strip())
        rest = rest[cut:].lstrip()
    if rest:
        chunks.append(rest)
    return [c for c in chunks if c]


CHARS_PER_TOKEN = 4  # the one token estimate: about four characters of English or code per token


def approx_tokens(text: str) -> int:
    """Tokens of ``text`` as models count them, estimated (rounded up) without a tokenizer."""
    return -(-len(text) // CHARS_PER_TOKEN)


def cut_at_word(text: str, limit: int) -> str:
    """The one text shortener: cut at a word boundary so that the result, ellipsis included, fits in
    ``limit`` characters."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if cut.rfind(" ") > limit * 0.6:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:—-") + "…"


def sql_str(value: str) -> str:
    """A SQL string literal for LanceDB filters."""
    return "'" + value.replace("'", "''") + "'"


def sql_time(moment: datetime) -> str:
    """A SQL timestamp literal for LanceDB filters, to the microsecond (UTC, as times are stored)."""
    return f"timestamp '{moment.strftime('%Y-%m-%d %H:%M:%S.%f')}'"


def split_list(raw: str | Iterable[str] | None) -> list[str]:
    """``a,b`` (or a list of such strings) -> ``["a", "b"]``."""
    if raw is None:
        return []
    items = [raw] if isinstance(raw, str) else list(raw)
    return [part.strip() for item in items for part in str(item).split(",") if part.strip()]


MAX_TOPICS = 50  # topics on one memory, through every door (save, update, import, offload)


def parse_topics(raw: str | Iterable[str] | None) -> list[str]:
    """Topics as stored: lower case, each a short word or phrase, at most ``MAX_TOPICS`` distinct."""
    if raw is None:
        return []
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    topics: list[str] = []
    for item in items:
        t = item.strip().lower()
        if not t:
            continue
        if len(topics) >= MAX_TOPICS and t not in topics:
            raise FieldError(
                f"{{field}}: more than {MAX_TOPICS} topics; one memory may have at most {MAX_TOPICS}.",
                field="topics",
                code="bad_topic",
            )
        if len(t) > 40 or not re.match(r"^[\w][\w .\-/+#]*$", t):
            raise UsageError(
                f"Topic {item!r} must be a short word or phrase (letters, digits, - _ . / + #).", code="bad_topic"
            )
        if t not in topics:
            topics.append(t)
    return topics
