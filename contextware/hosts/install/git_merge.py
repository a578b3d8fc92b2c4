"""The memory file's git merge driver, set up by every ``install ... --project`` and taken out again.

Install adds ``.contextware/memory.jsonl merge=contextware`` to the project's ``.gitattributes``
(committed: every clone merges the file with the driver once it has the driver) and to the
repository's own config (``git config --local``, one per clone, never committed)
``merge.contextware.name`` and ``merge.contextware.driver = contextware merge-driver %O %A %B``.
A clone without the driver falls back to git's line merge; ``contextware import`` then reads the
conflict markers.  What was there before is recorded in the install manifest under
``git:project:<root>`` so that uninstall (when no other host's project install of this root remains)
removes our line (the file too when we created it and it is empty again) and restores the config.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from contextware.hosts.install.settings_merge import read_text
from contextware.hosts.install.shared import put_text

ATTRIBUTE = ".contextware/memory.jsonl merge=contextware"
KEYS = ("merge.contextware.name", "merge.contextware.driver")
NAME = "Contextware memory: merge by id (docs/memory-file.md)"


def driver_command() -> str:
    """``contextware merge-driver %O %A %B``, with the command's full path when it can be found
    (git runs drivers with whatever PATH the git process has)."""
    exe = shutil.which("contextware") or str(Path(sys.executable).with_name("contextware"))
    if not Path(exe).is_file():
        exe = "contextware"
    return f"{shlex.quote(exe)} merge-driver %O %A %B"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None


def _config_get(root: Path, key: str) -> str | None:
    out = _git(root, "config", "--local", "--get", key)
    return out.stdout.rstrip("\n") if out is not None and out.returncode == 0 else None


def _is_repo(root: Path) -> bool:
    out = _git(root, "rev-parse", "--git-dir")
    return out is not None and out.returncode == 0


def install(installs: dict[str, Any], root: Path) -> tuple[list[str], list[str]]:
    """Register the driver for ``root``; (what was written, warnings).  ``installs`` is the manifest."""
    key = f"git:project:{root}"
    prev = installs.get(key) or {}
    written: list[str] = []
    warnings: list[str] = []
    path = root / ".gitattributes"
    current = read_text(path)
    lines = (current or "").splitlines()
    record = {
        "scope": "project",
        "project_root": str(root),
        "gitattributes_created": prev.get("gitattributes_created", current is None),
        "gitattributes_line_added": prev.get("gitattributes_line_added", ATTRIBUTE not in lines),
        "config_previous": prev.get("config_previous"),
    }
    if ATTRIBUTE not in lines:
        text = (current or "") + ("" if not current or current.endswith("\n") else "\n") + ATTRIBUTE + "\n"
        if put_text(path, text, []):
            written.append(".gitattributes")
    if not _is_repo(root):
        warnings.append(
            f"{root} is not a git repository: the merge driver is not registered (run install again there)."
        )
    else:
        values = {KEYS[0]: NAME, KEYS[1]: driver_command()}
        if "config_previous" not in prev:
            record["config_previous"] = {k: _config_get(root, k) for k in KEYS}
        for k, v in values.items():
            if _config_get(root, k) != v:
                out = _git(root, "config", "--local", k, v)
                if out is None or out.returncode != 0:
                    warnings.append(f"git config {k} failed: {(out.stderr if out else '').strip()}")
                else:
                    written.append(f"git config {k}")
    installs[key] = record
    return written, warnings


def still_installed(installs: dict[str, Any], root: Path) -> bool:
    """Whether some host's project install of ``root`` is still recorded."""
    return any(k.endswith(f":project:{root}") and not k.startswith("git:") for k in installs)


def uninstall(installs: dict[str, Any], root: Path) -> list[str]:
    """Take out what :func:`install` added (nothing when another project install of ``root`` remains)."""
    key = f"git:project:{root}"
    if still_installed(installs, root):
        return []
    rec = installs.pop(key, None) or {}
    removed: list[str] = []
    path = root / ".gitattributes"
    current = read_text(path)
    if current is not None and rec.get("gitattributes_line_added", True) and ATTRIBUTE in current.splitlines():
        rest = "".join(line + "\n" for line in current.splitlines() if line != ATTRIBUTE)
        if not rest.strip() and rec.get("gitattributes_created", False):
            path.unlink()
        else:
            put_text(path, rest, [])
        removed.append(".gitattributes")
    if _is_repo(root):
        previous = rec.get("config_previous") or {}
        for k in KEYS:
            now = _config_get(root, k)
            if now is None or (not rec and "merge-driver" not in now and k == KEYS[1]):
                continue
            if previous.get(k) is not None:
                _git(root, "config", "--local", k, previous[k])
            else:
                _git(root, "config", "--local", "--unset", k)
            removed.append(f"git config {k}")
        if not any(_config_get(root, k) for k in KEYS):
            _git(root, "config", "--local", "--remove-section", "merge.contextware")
    return removed
