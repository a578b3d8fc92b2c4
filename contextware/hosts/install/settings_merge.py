"""Putting Contextware's hooks and MCP server into a host's JSON settings (Gemini CLI's and Claude
Code's ``settings.json``, ``.mcp.json``, Cursor's and VS Code's ``mcp.json``, ...) and taking exactly
them out again (used by the installers).

Everything else in the file stays as it was: other settings, other hooks (ours are recognised by
their ``name``, ``contextware-*``), key order, indentation and the final newline.  A file that is not
plain JSON (the CLI also accepts comments) is refused rather than rewritten without its comments.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path

from contextware.core.errors import ContextwareError
from contextware.core.json_types import JsonObject, JsonValue

HOOK_NAME_PREFIX = "contextware-"
MCP_SCRIPT = "scripts/mcp_server.py"


def hook_name(event: str) -> str:
    """Our hook's ``name`` for an event (``SessionStart`` -> ``contextware-session-start``): how we know it."""
    return HOOK_NAME_PREFIX + "".join("-" + c.lower() if c.isupper() else c for c in event).lstrip("-")


def sha256_text(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist."""
    try:
        return path.read_bytes().decode("utf-8")  # bytes as they are: no newline translation
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ContextwareError(
            f"Cannot read {path}: {getattr(exc, 'strerror', None) or exc}.", code="settings_unreadable"
        ) from None


def parse_settings(path: Path, text: str | None) -> JsonObject:
    """The settings object in ``text``: plain JSON, or JSON with comments and trailing commas (JSONC,
    as VS Code's ``mcp.json``; ``is_plain`` tells them apart, so an edit can keep the comments)."""
    from contextware.hosts.install import jsonc

    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        try:
            data = jsonc.loads(text)
        except jsonc.JsoncError as exc:
            raise ContextwareError(
                f"{path} is neither JSON nor JSON with comments ({exc}); fix it, or add Contextware's entry "
                "by hand. Nothing was changed.",
                code="settings_unreadable",
            ) from None
    if not isinstance(data, dict):
        raise ContextwareError(f"{path} does not hold a JSON object; nothing was changed.", code="settings_unreadable")
    return data


def is_plain(text: str | None) -> bool:
    """Whether ``text`` is plain JSON (else JSONC: its comments are kept by editing it as text)."""
    if text is None or not text.strip():
        return True
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def dump_like(data: Mapping[str, object], original: str | None) -> str:
    """JSON text of ``data`` in the layout of ``original`` (indent, final newline); 2 spaces for a new file."""
    indent: int | str | None = 2
    newline = True
    if original is not None and original.strip():
        newline = original.endswith("\n")
        m = re.search(r"\n([ \t]+)\S", original)
        if m:
            indent = m.group(1) if "\t" in m.group(1) else len(m.group(1))
        elif "\n" not in original.strip():
            indent = None
    if indent is None:
        compact = original is not None and re.search(r'":\s', original) is None
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":") if compact else None)
    else:
        text = json.dumps(data, ensure_ascii=False, indent=indent)
    text += "\n" if newline else ""
    return text.replace("\n", "\r\n") if original and "\r\n" in original else text


def is_our_hook_definition(definition: object) -> bool:
    hooks = definition.get("hooks") if isinstance(definition, dict) else None
    return (
        bool(hooks)
        and isinstance(hooks, list)
        and all(isinstance(h, dict) and str(h.get("name") or "").startswith(HOOK_NAME_PREFIX) for h in hooks)
    )


def is_our_mcp_server(config: object) -> bool:
    if not isinstance(config, dict):
        return False
    words = [str(config.get("command") or "")] + [str(a) for a in config.get("args") or []]
    if len(words) >= 2 and words[0].replace("\\", "/").rsplit("/", 1)[-1] == "contextware" and words[1] == "mcp":
        return True  # the portable form: the console command found on PATH
    if words[1:4] == ["-I", "-m", "contextware.hosts.mcp.front"]:
        return True  # an installed package's own Python (no scripts/ outside a clone)
    return any(w.replace("\\", "/").endswith(MCP_SCRIPT) for w in words)


def _object(parent: JsonObject, key: str, where: str, created: list[str], path: Path) -> JsonObject:
    """``parent[key]``, a JSON object (created, and ``where`` noted in ``created``, when missing)."""
    value = parent.get(key)
    if value is None:
        parent[key] = value = {}
        created.append(where)
    if not isinstance(value, dict):
        raise _not_a(path, where, "object")
    return value


def _array(parent: JsonObject, key: str, where: str, created: list[str], path: Path) -> list[JsonValue]:
    """``parent[key]``, a JSON array (created, and ``where`` noted in ``created``, when missing)."""
    value = parent.get(key)
    if value is None:
        parent[key] = value = []
        created.append(where)
    if not isinstance(value, list):
        raise _not_a(path, where, "array")
    return value


def _not_a(path: Path, where: str, kind: str) -> ContextwareError:
    return ContextwareError(f"{path}: {where} is not a JSON {kind}; nothing was changed.", code="settings_unreadable")


def merge(
    data: JsonObject,
    hooks: dict[str, JsonObject],
    mcp_name: str,
    mcp_config: JsonObject | None,
    path: Path,
    mcp_key: str = "mcpServers",
) -> tuple[JsonObject, list[str], JsonValue]:
    """``data`` with our hook definitions (one per event, replacing earlier ones of ours, never
    duplicated) and ``<mcp_key>[mcp_name]``.  Returns (new data, keys created, previous MCP value)."""
    new = copy.deepcopy(data)
    created: list[str] = []
    hook_obj = _object(new, "hooks", "hooks", created, path) if hooks else {}
    for event, definition in hooks.items():
        defs = _array(hook_obj, event, f"hooks.{event}", created, path)
        ours = [i for i, d in enumerate(defs) if is_our_hook_definition(d)]
        if not ours:
            defs.append(definition)
            continue
        defs[ours[0]] = definition
        for i in reversed(ours[1:]):
            del defs[i]
    previous: JsonValue = None
    if mcp_config is not None:
        servers = _object(new, mcp_key, mcp_key, created, path)
        previous = servers.get(mcp_name)
        servers[mcp_name] = mcp_config
    return new, created, previous


def unmerge(
    data: JsonObject, created: list[str], mcp_name: str, mcp_previous: JsonValue = None, mcp_key: str = "mcpServers"
) -> JsonObject:
    """``data`` without our hook definitions and MCP server; containers we created are dropped when
    they end up empty, and an MCP entry we replaced gets its old value back."""
    new = copy.deepcopy(data)
    hook_obj = new.get("hooks")
    if isinstance(hook_obj, dict):
        for event in list(hook_obj):
            defs = hook_obj[event]
            if not isinstance(defs, list):
                continue
            defs[:] = [d for d in defs if not is_our_hook_definition(d)]
            if not defs and f"hooks.{event}" in created:
                del hook_obj[event]
        if not hook_obj and "hooks" in created:
            del new["hooks"]
    servers = new.get(mcp_key)
    if isinstance(servers, dict):
        if is_our_mcp_server(servers.get(mcp_name)):
            if mcp_previous is not None:
                servers[mcp_name] = mcp_previous
            else:
                del servers[mcp_name]
        if not servers and mcp_key in created:
            del new[mcp_key]
    return new


def has_ours(data: Mapping[str, object], mcp_name: str, mcp_key: str = "mcpServers") -> bool:
    hook_obj = data.get("hooks")
    hooked = isinstance(hook_obj, dict) and any(
        isinstance(defs, list) and any(is_our_hook_definition(d) for d in defs) for defs in hook_obj.values()
    )
    servers = data.get(mcp_key)
    return hooked or (isinstance(servers, dict) and is_our_mcp_server(servers.get(mcp_name)))


def baseline(previous: JsonObject | None, current: str | None, current_is_ours: bool) -> JsonObject:
    """What uninstall may restore: ``{"original": text}`` (None: the file did not exist) when the text
    before our first write is known, ``{}`` when it is not (then only our entries are removed)."""
    if previous and "original" in previous and previous.get("written_sha256") == sha256_text(current):
        return {"original": previous["original"]}
    if not current_is_ours:
        return {"original": current}
    return {}
