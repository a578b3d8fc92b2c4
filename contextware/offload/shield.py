"""What Gemini CLI's own tools may not read during an offload.

An offload runs Gemini CLI in the project (its sessions belong to the project's folder), and the
model may call the CLI's tools on anything in its workspace.  Gemini CLI 0.61 itself blocks only a
path component named exactly ``.env``: ``read_file(".env.production")``, ``read_file("keys/id_ed25519")``
or ``grep_search("AKIA")`` were answered with the secrets.  Each offload's Gemini process therefore
gets an admin-tier policy (``--admin-policy``, above the user's own rules) that denies:

- content search (``grep_search``: its results come from any file) and the shell;
- ``read_file``, ``glob`` and ``list_directory`` on a path matching a secret-file pattern a crawl
  skips (``codeindex.exclusions.SECRET_FILE_PATTERNS`` plus ``secret_files``), the data dir, or a
  ``..`` component;
- with no ``--include-dirs``, every file tool (the ``--files`` texts are on stdin already); with
  some, ``read_file`` outside them.

Known limit: a symlink with an innocent name inside an include dir still reads its target (the
policy sees arguments, not files); ``--files`` and ``--include-dirs`` themselves refuse such links.
Gemini CLI ignores ``--admin-policy`` when system policies exist (it says so on stderr).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from contextware.codeindex.exclusions import SECRET_FILE_PATTERNS
from contextware.core.system import write_atomic

if TYPE_CHECKING:
    from contextware.storage.project import Project

DENY_MESSAGE = (
    "Contextware's offload does not let Gemini read this: it may hold secrets or lies outside what was shared."
)
SEARCH_TOOLS = ("grep_search", "search_file_content", "read_many_files", "run_shell_command")
FILE_TOOLS = ("read_file", "glob", "list_directory")
_PATH_KEYS = r'"(?:file_path|dir_path|path|pattern)":"'


def _glob_regex(glob: str) -> str:
    """A JS regular expression for one glob over a path's last components, case-insensitive (JS
    has no inline flag: letters become classes)."""
    out = []
    for ch in glob.strip().strip("/"):
        if ch == "*":
            out.append(r'[^/"]*')
        elif ch == "?":
            out.append(r'[^/"]')
        elif ch.isalpha():
            out.append(f"[{ch.lower()}{ch.upper()}]")
        else:
            out.append("\\" + ch if not ch.isalnum() else ch)
    return "".join(out)


def _prefix_regex(path: str) -> str:
    """A path (absolute, or relative to the project) as a literal at the start of a value."""
    return "".join("\\" + c if not (c.isalnum() or c in "/_-") else c for c in path.rstrip("/"))


def _rule(tools: Sequence[str], priority: int, pattern: str | None = None) -> str:
    lines = ["[[rule]]", f"toolName = {json.dumps(list(tools))}", 'decision = "deny"', f"priority = {priority}"]
    if pattern is not None:
        lines.append(f"argsPattern = {json.dumps(pattern)}")  # a JSON string is a TOML basic string
    lines.append(f"denyMessage = {json.dumps(DENY_MESSAGE)}")
    return "\n".join(lines) + "\n"


def policy_text(secret_globs: Sequence[str], root: Path, data_dir: Path, include_dirs: Sequence[Path]) -> str:
    """The TOML policy for one offload (see the module docstring).  Gemini CLI drops a pattern over
    2,048 characters or with a quantified group (its ReDoS guard), so none has one: a path
    component starts after the value's opening quote or a ``/``."""
    start = _PATH_KEYS[:-1] + '(?:"|"[^"]*/)'  # the value's start, or any component's
    rules = [_rule(SEARCH_TOOLS, 990)]
    chunk: list[str] = []
    for glob in [g for g in secret_globs if g.strip()] + [""]:
        regex = _glob_regex(glob) if glob else ""
        if chunk and (not glob or sum(len(r) + 1 for r in chunk) + len(regex) > 1800):
            rules.append(_rule(FILE_TOOLS, 980, start + "(?:" + "|".join(chunk) + ')(?:"|/)'))
            chunk = []
        if regex:
            chunk.append(regex)
    rules.append(_rule(FILE_TOOLS, 970, start + r'\.\.(?:"|/)'))
    data = [_prefix_regex(str(data_dir))]
    try:
        rel = _prefix_regex(data_dir.resolve().relative_to(root.resolve()).as_posix())
        data += [rel, "\\./" + rel]
    except ValueError:
        pass
    rules.append(_rule(FILE_TOOLS, 960, _PATH_KEYS + "(?:" + "|".join(data) + ')(?:"|/)'))
    if not include_dirs:
        rules.append(_rule(FILE_TOOLS, 950))
    else:
        allowed = []
        for d in include_dirs:
            allowed.append(_prefix_regex(str(d)))
            try:
                rel = _prefix_regex(d.resolve().relative_to(root.resolve()).as_posix())
                allowed += [rel, "\\./" + rel]
            except ValueError:
                pass
        rules.append(_rule(["read_file"], 950, '"file_path":"(?!(?:' + "|".join(allowed) + ")/)"))
    return "# Written by Contextware for one offload: what Gemini CLI may not read.\n\n" + "\n".join(rules)


def offload_policy(project: "Project", include_dirs: Sequence[Path]) -> Path:
    """The policy file of an offload that may read ``include_dirs`` (absolute), written under
    ``<data_dir>/gemini/`` and named by its content (concurrent offloads never share a half-written one)."""
    text = policy_text(
        [*SECRET_FILE_PATTERNS, *project.config.secret_files], project.root, project.data_dir, include_dirs
    )
    folder = project.data_dir / "gemini"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"offload-policy-{hashlib.sha256(text.encode()).hexdigest()[:12]}.toml"
    if not path.exists():
        write_atomic(path, text)
    return path
