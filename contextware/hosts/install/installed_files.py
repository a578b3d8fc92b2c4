"""The files an installer writes into a host's folders, recorded so that uninstall undoes exactly them.

An install is a list of :class:`Edit` (a JSON settings file merged with our hooks and/or MCP server,
or a whole text file such as the skill), planned before anything is written (so a file we cannot
parse stops the install with nothing changed), then recorded in the manifest entry under its label
and written.  ``undo`` gives a file nobody changed since our write its original bytes back (or
deletes it when we created it), removes only our entries from one that was edited, and keeps an
edited text file.  Used by every host's installer (Gemini CLI, Claude Code, MCP-only hosts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextware.core.errors import ContextwareError
from contextware.core.json_types import JsonObject, JsonValue
from contextware.core.text import iso, utcnow
from contextware.hosts.install import jsonc, settings_merge
from contextware.hosts.install.shared import NAME, put_text


@dataclass
class Edit:
    """One file an install writes: ``kind`` "json" (merged) or "text" (the whole file)."""

    label: str
    path: Path
    kind: str
    current: str | None
    new_text: str
    ours_before: bool
    created_keys: list[str] = field(default_factory=list)
    mcp_previous: JsonValue = None
    mcp_key: str = "mcpServers"

    def record(self, prev: dict[str, Any]) -> dict[str, Any]:
        rec = {
            "path": str(self.path),
            "kind": self.kind,
            **settings_merge.baseline(prev, self.current, self.ours_before),
            "written_sha256": settings_merge.sha256_text(self.new_text),
        }
        if self.kind == "json":
            rec["created_keys"] = sorted(set(prev.get("created_keys", [])) | set(self.created_keys))
            rec["mcp_previous"] = (
                prev.get("mcp_previous") if settings_merge.is_our_mcp_server(self.mcp_previous) else self.mcp_previous
            )
            rec["mcp_key"] = self.mcp_key
        return rec


def json_edit(
    label: str,
    path: Path,
    *,
    hooks: dict[str, JsonObject] | None = None,
    mcp: JsonObject | None = None,
    mcp_key: str = "mcpServers",
) -> Edit:
    """Our hook definitions and/or MCP server merged into the JSON file at ``path`` (kept otherwise)."""
    current = settings_merge.read_text(path)
    data = settings_merge.parse_settings(path, current)
    new_data, created, previous = settings_merge.merge(data, hooks or {}, NAME, mcp, path, mcp_key)
    if current is not None and new_data == data:
        new_text = current
    elif settings_merge.is_plain(current):
        new_text = settings_merge.dump_like(new_data, current)
    else:  # JSON with comments: our entry set as text, the user's comments and layout kept
        new_text = _jsonc_edit(
            path, current or "", lambda text: jsonc.set_member(text, mcp_key, NAME, mcp), bool(hooks)
        )
    return Edit(
        label,
        path,
        "json",
        current,
        new_text,
        settings_merge.has_ours(data, NAME, mcp_key),
        created,
        previous,
        mcp_key,
    )


def looks_like_our_skill(text: str | None) -> bool:
    return text is not None and text.startswith(f"---\nname: {NAME}\n")


def text_edit(
    label: str, path: Path, text: str, looks_ours: Callable[[str | None], bool] = looks_like_our_skill
) -> Edit:
    current = settings_merge.read_text(path)
    return Edit(label, path, "text", current, text, looks_ours(current))


def record_and_write(
    installs: dict[str, Any], key: str, edits: list[Edit], fields: dict[str, Any], show: Callable[[Path], str]
) -> list[str]:
    """Record ``edits`` in ``installs[key]`` (first: a write that fails half-way is still undone),
    then write them; returns what was written, as ``show`` names it."""
    prev = installs.get(key) or {}
    created_dirs = [d for d in prev.get("created_dirs", []) if Path(d).is_dir()]
    installs[key] = {
        **fields,
        **{e.label: e.record(prev.get(e.label) or {}) for e in edits},
        "created_dirs": created_dirs,
        "installed_at": prev.get("installed_at") or iso(utcnow()),
    }
    return [show(e.path) for e in edits if put_text(e.path, e.new_text, created_dirs)]  # created_dirs grows in place


def _restore(path: Path, rec: dict[str, Any]) -> str:
    """Put back the text from before our first write ('written'), or delete the file we created ('removed')."""
    if rec.get("original") is None:
        path.unlink()
        return "removed"
    put_text(path, rec["original"], [])
    return "written"


def undo_json(path: Path, rec: dict[str, Any], known: bool, mcp_key: str = "mcpServers") -> str | None:
    """Take our entries out of one JSON file; 'written', 'removed' or None (nothing of ours there)."""
    current = settings_merge.read_text(path)
    if current is None:
        return None
    if known and "original" in rec and settings_merge.sha256_text(current) == rec.get("written_sha256"):
        return _restore(path, rec)
    data = settings_merge.parse_settings(path, current)
    mcp_key = rec.get("mcp_key") or mcp_key
    if not settings_merge.has_ours(data, NAME, mcp_key):
        return None
    new = settings_merge.unmerge(data, rec.get("created_keys", []), NAME, rec.get("mcp_previous"), mcp_key)
    if not new and known and "original" in rec and rec["original"] is None:
        path.unlink()
        return "removed"
    if settings_merge.is_plain(current):
        put_text(path, settings_merge.dump_like(new, current), [])
    else:
        previous = rec.get("mcp_previous")
        edit = _jsonc_edit(path, current, lambda text: _jsonc_undo(text, mcp_key, previous), False, expected=new)
        put_text(path, edit, [])
    return "written"


def _jsonc_undo(text: str, mcp_key: str, previous: JsonValue) -> str:
    if previous is not None:
        return jsonc.set_member(text, mcp_key, NAME, previous)
    return jsonc.remove_member(text, mcp_key, NAME)


def _jsonc_edit(path: Path, text: str, edit: Callable[[str], str], hooks: bool, expected: JsonValue = None) -> str:
    """``edit(text)`` of a JSON file with comments (only our MCP server is edited as text: hooks are
    not), giving ``expected`` when given, or a clear refusal (nothing changed)."""
    if not hooks:
        try:
            new = edit(text)
            if expected is None or jsonc.loads(new) == expected:
                return new
        except jsonc.JsoncError:
            pass
    raise ContextwareError(
        f"{path} has comments or trailing commas and Contextware could not edit it without losing them; "
        "add Contextware's entry by hand (`contextware install mcp --host print` shows it). Nothing was changed.",
        code="settings_unreadable",
    )


def undo_text(path: Path, rec: dict[str, Any], known: bool, expected: str | None) -> str | None:
    """Restore or delete a text file we wrote; 'kept' when it was changed since, None when absent."""
    current = settings_merge.read_text(path)
    if current is None:
        return None
    if settings_merge.sha256_text(current) == rec.get("written_sha256") or (not known and current == expected):
        return _restore(path, rec)
    return "kept" if known else None


def undo(
    installs: dict[str, Any],
    key: str,
    defaults: Mapping[str, tuple[Path, str, str | None]],
    show: Callable[[Path], str],
    fallback_dirs: tuple[Path, ...] = (),
) -> tuple[dict[str, list[str]], list[str]]:
    """Undo every file of ``installs[key]`` (or, with no record, the ``defaults``: label -> (path, kind,
    the text we would have written, or for JSON the key of its MCP servers)), remove the folders the install created when empty, and drop the entry.
    Returns ({"written", "removed", "kept"}: names) and warnings."""
    entry = installs.get(key) or {}
    out: dict[str, list[str]] = {"written": [], "removed": [], "kept": []}
    warnings: list[str] = []
    labels = list(dict.fromkeys([*defaults, *(k for k, v in entry.items() if isinstance(v, dict) and "kind" in v)]))
    for label in labels:
        rec = entry.get(label) or {}
        path, kind, expected = defaults.get(label, (Path(rec.get("path", "")), rec.get("kind", "text"), None))
        path = Path(rec["path"]) if rec.get("path") else path
        kind = rec.get("kind") or kind
        if kind == "json":  # for a JSON file, the third default is the servers' key ("mcpServers" if None)
            done = undo_json(path, rec, bool(entry), expected or "mcpServers")
        else:
            done = undo_text(path, rec, bool(entry), expected)
        if done:
            out[done].append(show(path))
        if done == "kept":
            warnings.append(f"{path} was changed after it was installed: left in place.")
    dirs = entry.get("created_dirs") or [str(d) for d in fallback_dirs]
    for d in sorted(dirs, key=len, reverse=True):
        try:
            Path(d).rmdir()  # only when empty
        except OSError:
            pass
    installs.pop(key, None)
    return out, warnings
