"""``.gitattributes`` files read the way git reads them, for the two attributes that say a file is
not the project's own source: ``linguist-generated`` (protobuf stubs, generated API clients) and
``linguist-vendored`` (third-party code checked in).

Git's rules, as implemented here: every ``.gitattributes`` applies to the folder it sits in and
below; a pattern without a slash matches a file's name at any depth, one with a slash is anchored at
that folder (a leading slash is dropped); ``*`` and ``?`` stop at ``/``, ``**`` crosses folders,
``[...]`` is a class; a pattern ending in ``/`` matches no file; negative patterns (``!x``) are not
allowed and are ignored.  Within a file the last matching line decides; a deeper ``.gitattributes``
overrides a shallower one.  ``attr``, ``attr=true`` and anything but ``false`` set it; ``-attr`` and
``attr=false`` unset it; ``!attr`` makes it unspecified again.  Macros (``[attr]``) are not expanded.

Each ``.gitattributes`` is read once per ``Attributes`` (one listing run).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

WATCHED = ("linguist-generated", "linguist-vendored")
REASONS = {"linguist-generated": "generated", "linguist-vendored": "vendored"}
FILE_NAME = ".gitattributes"

Rule = tuple[re.Pattern[str], dict[str, bool | None]]


def _translate(pattern: str) -> str:
    """A gitattributes glob as a regular expression over a path relative to its folder."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("/.*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pattern.find("]", i + 2)
            if j < 0:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1 : j]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _value(token: str) -> tuple[str, bool | None]:
    if token.startswith("-"):
        return token[1:], False
    if token.startswith("!"):
        return token[1:], None
    name, _, value = token.partition("=")
    return name, value.lower() != "false"


def parse(text: str) -> list[Rule]:
    """The lines of one ``.gitattributes`` that say anything about the watched attributes."""
    rules: list[Rule] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("[attr]"):
            continue
        pattern, *tokens = line.split()
        if pattern.startswith('"') and pattern.endswith('"') and len(pattern) > 1:
            pattern = pattern[1:-1]
        if pattern.startswith("!") or pattern.endswith("/"):
            continue  # refused by git / matches folders only
        attrs = dict(_value(t) for t in tokens)
        attrs = {k: v for k, v in attrs.items() if k in WATCHED}
        if not attrs:
            continue
        if "/" in pattern.lstrip("/") or pattern.startswith("/"):
            regex = _translate(pattern.lstrip("/"))
        else:
            regex = "(?:.*/)?" + _translate(pattern)  # a bare name matches at any depth
        try:
            rules.append((re.compile(regex + r"\Z", re.S), attrs))
        except re.error:
            continue
    return rules


class Attributes:
    """The watched attributes of paths under one root, reading each folder's ``.gitattributes`` at
    most once."""

    def __init__(self, root: Path) -> None:
        self._root = str(root)
        self._files: dict[str, list[Rule]] = {}

    def _rules(self, dir_rel: str) -> list[Rule]:
        try:
            return self._files[dir_rel]
        except KeyError:
            path = os.path.join(self._root, dir_rel, FILE_NAME) if dir_rel else os.path.join(self._root, FILE_NAME)
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    rules = parse(f.read())
            except OSError:
                rules = []
            self._files[dir_rel] = rules
            return rules

    def known_absent(self, dir_rel: str) -> None:
        """A walk saw the folder's entries and no ``.gitattributes``: spare the open."""
        self._files.setdefault(dir_rel, [])

    def reason(self, rel: str) -> str | None:
        """Why the file stays out: generated or vendored when marked so (generated wins), else None."""
        state: dict[str, bool | None] = {}
        parts = rel.split("/")
        for depth in range(len(parts)):  # root first: deeper files override
            base = "/".join(parts[:depth])
            rules = self._rules(base)
            if not rules:
                continue
            sub = "/".join(parts[depth:])
            for regex, attrs in rules:
                if regex.match(sub):
                    state.update(attrs)
        for attr in WATCHED:
            if state.get(attr):
                return REASONS[attr]
        return None
