"""Redaction of obvious secrets before anything is stored."""

from __future__ import annotations

import re
from collections import Counter

# (name, pattern, group to replace or 0 for the whole match)
_PATTERNS: list[tuple[str, re.Pattern[str], int]] = [
    (
        "private_key",
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|$)"),
        0,
    ),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), 0),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b"), 0),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), 0),
    ("openai_key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}\b"), 0),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}\b"), 0),
    ("slack_token", re.compile(r"\bxox[abposr]-[0-9A-Za-z\-]{10,}\b"), 0),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\b"), 0),
    ("bearer_token", re.compile(r"(?i)\b(?:bearer|token)\s+([A-Za-z0-9._~+/\-]{16,}=*)"), 1),
    ("url_password", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:([^\s@/]+)@"), 1),
    (
        "password_assignment",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token|client[_-]?secret)"
            r"\s*[:=]\s*[\"']?([^\s\"',;]{6,})"
        ),
        1,
    ),
]

MASK = "[REDACTED]"


def redact(text: str) -> tuple[str, dict[str, int]]:
    """Return the text with secrets masked, and how many of each kind were masked."""
    found: Counter[str] = Counter()
    for name, pattern, group in _PATTERNS:

        def _sub(match: re.Match[str], name: str = name, group: int = group) -> str:
            if MASK in match.group(0) and group == 0:
                return match.group(0)
            found[name] += 1
            if group == 0:
                return f"[REDACTED:{name}]"
            start, end = match.span(group)
            offset = match.start(0)
            whole = match.group(0)
            return whole[: start - offset] + MASK + whole[end - offset :]

        text = pattern.sub(_sub, text)
    return text, dict(found)
