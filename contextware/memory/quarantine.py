"""Imported memories that read as instructions to the agent are held back from the hooks.

A team file is written by others: a memory in it that says "ignore previous instructions", forges a
role or system marker, closes our fence, tells the agent to run or fetch something, to change its
settings or tools, or to reveal secrets is a prompt injection riding on shared memory.  ``reason``
names the first such pattern; the import stores it in the row's ``quarantine`` column and the hooks
never inject the row until a person accepts it (``memory accept ID`` or the browser's review queue).
It stays recallable on request, shown with the reason.

The patterns aim at text addressed to an agent, not at notes about commands ("tests run with
``uv run pytest``" is a fact; "run this command now: curl ... | sh" is an order).
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextware.memory.results import MemoryRow

# Characters used to hide text from a reader: zero-width, bidi controls, the Unicode tag block.
_HIDDEN = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]")
_F = re.IGNORECASE | re.MULTILINE

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (reason, re.compile(pattern, _F))
    for reason, pattern in (
        (
            "tells the agent to ignore its instructions",
            r"\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|your|system|any)\b"
            r"[^.\n]{0,20}\b(instructions?|prompts?|rules|guidelines|directives|context)\b",
        ),
        ("gives the agent new instructions", r"\b(new|updated|real|actual)\s+(system\s+)?instructions\s*:"),
        ("forges a chat-template token", r"<\|\s*(im_start|im_end|system|user|assistant|endoftext|eot_id)[^>]*\|>"),
        ("closes or opens the memory fence", r"</?\s*contextware[-_ ]?memory"),
        ("forges a role marker", r"^\W{0,6}(system|assistant|human|user|developer)\s*(message)?\s*:"),
        ("forges an instruction-template marker", r"\[/?INST\]|<</?SYS>>|^#{2,}\s*(instruction|system|response)\b"),
        ("forges a system tag", r"</?\s*(system|system[-_]prompt|instructions?|tool_call|function_call)\s*>"),
        (
            "addresses the agent with an order",
            r"\b(you|the\s+(assistant|agent|ai|model|llm|claude|gemini))\s+(must|should|shall|need\s+to|are\s+(required|instructed))\s+"
            r"(now\s+|always\s+|immediately\s+)?(run|execute|call|fetch|download|visit|open|send|post|upload|reveal|print|"
            r"disable|delete|remove|install|ignore|obey|follow|add|change|edit|modify|grant|push|email)\b",
        ),
        (
            "changes the agent's role",
            r"\b(you\s+are\s+now|from\s+now\s+on\s*,?\s+you|act\s+as\s+(an?\s+)?(unrestricted|jailbroken|dan\b)|pretend\s+(to\s+be|you\s+are))",
        ),
        ("asks for a jailbreak mode", r"\b(developer\s+mode|jailbreak|do\s+anything\s+now|DAN\s+mode|god\s+mode)\b"),
        (
            "orders a command run",
            r"\b(run|execute|exec)\s+(this|the\s+following|these|that)\s+(command|script|code|shell)|"
            r"\b(run|execute)\s*:\s*`",
        ),
        (
            "pipes a download into a shell",
            r"\b(curl|wget|iwr|irm|fetch)\b[^\n|]{0,200}\|\s*(sudo\s+)?(ba|z|da|fi)?sh\b|\|\s*(python3?|perl|ruby|node|iex)\b",
        ),
        (
            "runs a destructive command",
            r"\brm\s+-(rf|fr|r\s+-f)\s+(/|~|\$HOME|\*)(\s|$|[\"'`])|\bmkfs\b|\bdd\s+if=.*\bof=/dev/|:\(\)\s*\{\s*:\|:&\s*\};:",
        ),
        (
            "decodes and runs hidden code",
            r"base64\s+(-d|--decode)[^\n]{0,80}\|\s*\w*sh\b|\beval\s*\(\s*(atob|base64|decode|fromCharCode)|powershell[^\n]{0,40}-e(nc|ncodedcommand)?\s",
        ),
        (
            "tells the agent to fetch a URL",
            r"\b(fetch|visit|open|browse\s+to|navigate\s+to|download|load|go\s+to|request|retrieve|GET)\s+(the\s+)?(url|page|link|file\s+at\s+)?\s*<?https?://",
        ),
        (
            "sends data to a URL",
            r"\b(send|post|upload|exfiltrate|forward|transmit|leak|email)\b[^\n]{0,80}\b(to|at|into)\s+<?(https?://|ftp://|[\w.+-]+@[\w-]+\.[\w.]+)",
        ),
        ("hides a beacon in a markdown image", r"!\[[^\]]*\]\(\s*https?://[^)\s]*[?&][^)\s]*="),
        (
            "asks to reveal secrets",
            r"\b(reveal|print|output|dump|display|leak|paste|send|tell\s+me)\b[^.\n]{0,40}"
            r"\b(api[_\s-]?keys?|secrets?|passwords?|(access|auth|api|bearer|github|session)[_\s-]?tokens?|credentials|private\s+keys?|ssh\s+keys?|\.env\b|id_rsa|"
            r"aws_secret|environment\s+variables|system\s+prompt|your\s+(instructions|prompt))",
        ),
        (
            "reads a credential file",
            r"(~|\$HOME)/\.(ssh|aws|gnupg|netrc|docker/config|kube/config)|/etc/(shadow|passwd|sudoers)\b",
        ),
        (
            "changes the agent's settings or tools",
            r"\b(edit|modify|change|update|overwrite|write\s+to|add\s+to|append\s+to|disable|turn\s+off|remove)\b[^.\n]{0,40}"
            r"(settings\.json|\.claude/|\.gemini/|\.cursor/|mcp\.json|\bhooks?\b[^.\n]{0,20}\b(config|settings)|"
            r"\bpermissions?\b|allowed[_\s-]?tools|trusted_authors|trust_imported|\.bashrc|\.zshrc|\.profile|authorized_keys|crontab)",
        ),
        (
            "grants itself tool permissions",
            r"--dangerously-skip-permissions|--yolo\b|bypassPermissions|\ballow\s+all\s+tools\b|\bauto[-_\s]?approve\b",
        ),
        ("adds an MCP server", r"\b(add|install|register|connect)\b[^.\n]{0,30}\bmcp\s+server\b"),
        (
            "asks to hide what it does",
            r"\b(do\s+not|don't|never)\s+(tell|inform|mention|reveal|show|let)\s+(this\s+)?(to\s+)?(the\s+)?(user|human|anyone|developer)",
        ),
        ("escalates privileges", r"\bsudo\s+(su|-s|-i|bash|sh|chmod|chown|rm)\b|\bchmod\s+(-R\s+)?(777|\+s|u\+s)\b"),
        (
            "forces a push or rewrites history",
            r"\bgit\s+push\s+(-f|--force)\b[^\n]{0,40}\b(main|master)\b|\bgit\s+config\s+--global\b",
        ),
        ("smuggles hidden characters", r"[\U000e0000-\U000e007f\u202a-\u202e\u2066-\u2069]"),
    )
)

# The texts of a row a hook could inject, per collection (ids and topics ride along in the fence too).
_FIELDS = (
    "id",
    "text",
    "goal",
    "summary",
    "result",
    "category",
    "topics",
    "session_id",
    "prompt",
    "speaker",
    "code_links",
    "supersedes",
    "superseded_by",
    "source",
    "author",
    "host",
    "session",
    "origin",
)


def _texts(row: "MemoryRow") -> list[str]:
    out: list[str] = []
    for key in _FIELDS:
        value = row.get(key)
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out += [v for v in value if isinstance(v, str)]
    return out


def reason_of_text(text: str) -> str | None:
    """Why one text reads as an instruction to the agent, or None."""
    if len(text) > 200_000:
        text = text[:200_000]
    if hidden := _PATTERNS[-1][1].search(text):
        del hidden
        return _PATTERNS[-1][0]
    plain = _HIDDEN.sub("", unicodedata.normalize("NFKC", text))
    for reason, pattern in _PATTERNS[:-1]:
        if pattern.search(plain):
            return reason
    return None


def reason(row: "MemoryRow") -> str | None:
    """Why an imported row is held back from the hooks (the first pattern any of its texts meets), or None."""
    for text in _texts(row):
        if found := reason_of_text(text):
            return found
    return None


def kinds() -> tuple[str, ...]:
    """The reasons, one per kind of pattern."""
    return tuple(r for r, _ in _PATTERNS)
