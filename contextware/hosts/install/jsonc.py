"""JSON with comments and trailing commas (JSONC: VS Code's ``mcp.json``, often Cursor's), read and
edited in place: one member of one object is set or removed as text, so the user's comments, order
and layout stay as they were.  Every edit is checked by parsing its result: an edit that would not
give exactly the intended data is refused (``JsoncError``), never written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextware.core.json_types import JsonValue


class JsoncError(ValueError):
    """The text is not JSONC, or an edit could not be made exactly."""


@dataclass
class _Token:
    kind: str  # one of { } [ ] , : or "s" (string) or "v" (number, true, false, null)
    start: int
    end: int


@dataclass
class _Member:
    key: str
    key_start: int
    value_start: int
    value_end: int
    comma: int | None = None  # position of the comma after the value, if any


@dataclass
class _Object:
    start: int  # position of "{"
    end: int  # position of "}"
    members: list[_Member] = field(default_factory=list)


_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n\ufeff":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise JsoncError("a /* comment is never closed")
            i = end + 2
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                raise JsoncError("a string is never closed")
            out.append(_Token("s", i, j + 1))
            i = j + 1
        elif c in "{}[],:":
            out.append(_Token(c, i, i + 1))
            i += 1
        else:
            m = _SCALAR.match(text, i)
            if not m:
                raise JsoncError(f"unexpected character at offset {i}")
            out.append(_Token("v", i, m.end()))
            i = m.end()
    return out


def _plain(text: str, tokens: list[_Token]) -> str:
    """The tokens as plain JSON: comments dropped, trailing commas dropped."""
    parts = []
    for k, t in enumerate(tokens):
        if t.kind == "," and k + 1 < len(tokens) and tokens[k + 1].kind in "}]":
            continue
        parts.append(text[t.start : t.end])
    return " ".join(parts)


def loads(text: str) -> "JsonValue":
    """The value of a JSONC text (JsoncError when it is not JSONC)."""
    tokens = _tokens(text)
    try:
        return json.loads(_plain(text, tokens)) if tokens else None
    except (ValueError, RecursionError) as exc:
        raise JsoncError(str(exc)) from None


def _object_at(text: str, tokens: list[_Token], k: int) -> tuple[_Object, int]:
    """The object whose "{" is ``tokens[k]``, and the index just past its "}"."""
    obj = _Object(tokens[k].start, -1)
    k += 1
    while tokens[k].kind != "}":
        if tokens[k].kind != "s" or tokens[k + 1].kind != ":":
            raise JsoncError("an object member is not a key and a value")
        key = json.loads(text[tokens[k].start : tokens[k].end])
        first = k + 2
        k = _skip_value(tokens, first)
        member = _Member(key, tokens[first - 2].start, tokens[first].start, tokens[k - 1].end)
        if tokens[k].kind == ",":
            member.comma = tokens[k].start
            k += 1
        obj.members.append(member)
    obj.end = tokens[k].start
    return obj, k + 1


def _skip_value(tokens: list[_Token], k: int) -> int:
    """The index just past the value starting at ``tokens[k]``."""
    depth = 0
    while True:
        kind = tokens[k].kind
        if kind in "{[":
            depth += 1
        elif kind in "}]":
            depth -= 1
        k += 1
        if depth == 0:
            return k


def _find(text: str, key: str | None) -> tuple[_Object, list[_Token]]:
    """The top-level object, or the object under its member ``key``."""
    tokens = _tokens(text)
    if not tokens or tokens[0].kind != "{":
        raise JsoncError("the file does not hold an object")
    top, _ = _object_at(text, tokens, 0)
    if key is None:
        return top, tokens
    member = next((m for m in top.members if m.key == key), None)
    if member is None:
        raise KeyError(key)
    k = next(i for i, t in enumerate(tokens) if t.start == member.value_start)
    if tokens[k].kind != "{":
        raise JsoncError(f"{key} is not an object")
    return _object_at(text, tokens, k)[0], tokens


def _indent_at(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    return re.match(r"[ \t]*", text[line_start:]).group(0)  # type: ignore[union-attr]


def _insert(text: str, obj: _Object, key: str, value: "JsonValue") -> str:
    """``text`` with ``"key": value`` added as the last member of ``obj``, on a line of its own after
    the last member's line (a comment ending that line stays with it)."""
    if not obj.members:
        indent = _indent_at(text, obj.start) + "  "
        member = f"{json.dumps(key)}: {_dump(value, indent)}"
        return text[: obj.start + 1] + f"\n{indent}{member}" + text[obj.start + 1 :]
    last = obj.members[-1]
    indent = _indent_at(text, last.key_start)
    member = f"{json.dumps(key)}: {_dump(value, indent)}"
    trailing = last.comma is not None  # the file's style: keep it
    if last.comma is None:
        text = text[: last.value_end] + "," + text[last.value_end :]
        after = last.value_end + 1
    else:
        after = last.comma + 1
    line_end = text.find("\n", after)
    rest = text[after : line_end if line_end >= 0 else len(text)].strip()
    at = line_end if line_end >= 0 and (not rest or rest.startswith("//")) else after
    return text[:at] + f"\n{indent}{member}" + ("," if trailing else "") + text[at:]


def _dump(value: "JsonValue", indent: str) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)


def set_member(text: str, outer: str, name: str, value: "JsonValue") -> str:
    """``text`` with ``text[outer][name] = value`` (``outer`` created when missing), everything else
    as it was; checked by parsing the result."""
    expected = loads(text)
    if not isinstance(expected, dict):
        raise JsoncError("the file does not hold an object")
    try:
        obj, _ = _find(text, outer)
    except KeyError:
        top, _ = _find(text, None)
        new = _insert(text, top, outer, {name: value})
    else:
        member = next((m for m in obj.members if m.key == name), None)
        if member is None:
            new = _insert(text, obj, name, value)
        else:
            indent = _indent_at(text, member.key_start)
            new = text[: member.value_start] + _dump(value, indent) + text[member.value_end :]
    inner = expected.get(outer)
    servers = dict(inner) if isinstance(inner, dict) else {}
    servers[name] = value
    return _checked(new, {**expected, outer: servers})


def remove_member(text: str, outer: str, name: str) -> str:
    """``text`` without ``text[outer][name]`` (the line it was on, with its comma), checked."""
    expected = loads(text)
    obj, _ = _find(text, outer)
    index = next((i for i, m in enumerate(obj.members) if m.key == name), None)
    if index is None:
        return text
    member = obj.members[index]
    line = text.rfind("\n", 0, member.key_start)
    start = line if line > obj.start and not text[line + 1 : member.key_start].strip() else member.key_start
    if member.comma is not None:
        end = member.comma + 1
    elif index > 0 and obj.members[index - 1].comma is not None:  # the last member: drop the comma before it
        prev = obj.members[index - 1]
        start, end = prev.comma, member.value_end  # type: ignore[assignment]
    else:
        end = member.value_end
    new = text[:start] + text[end:]
    inner = expected.get(outer) if isinstance(expected, dict) else None
    if not isinstance(expected, dict) or not isinstance(inner, dict):
        raise JsoncError(f"{outer} is not an object")
    servers = {k: v for k, v in inner.items() if k != name}
    return _checked(new, {**expected, outer: servers})


def _checked(new: str, expected: "JsonValue") -> str:
    if loads(new) != expected:
        raise JsoncError("the edit would not give the intended settings")
    return new
