"""What an offload reads: ``--files`` (their text goes to Gemini on stdin), ``--include-dirs`` (Gemini
reads them itself through ``--include-directories``) and piped context; how they are hashed, and when
a cached answer about them is stale.

Every file an answer depends on (the given files and the files under the given folders, by the
project's ignore rules) is recorded with its mtime, size and sha256.  A later look-up stats them:
an unchanged stat means unchanged content without reading it; a changed stat is settled by the
content hash (a ``touch`` does not make an answer stale); a file added or removed under a folder does.

An offload sends only what a crawl could index (``check_source``): every given file and folder must
be inside the project (its real path, symlinks resolved), not ignored (``.gitignore``,
``.contextwareignore``), not in the data dir or a VCS folder, and not a secret-bearing file
(``SECRET_FILE_PATTERNS`` and the ``secret_files`` config, as a crawl); a refusal is a UsageError
naming the path and why.  What is sent is redacted like a crawl's Gemini summaries (``redact_sent``).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.core.errors import FieldError, UsageError
from contextware.gemini.headless import MAX_STDIN_BYTES, escape_at

if TYPE_CHECKING:
    from contextware.codeindex.files import IgnoreRules
    from contextware.storage.project import Project


@dataclass
class TrackedFile:
    path: str  # project-relative POSIX, or absolute POSIX outside the project
    abs_path: Path
    mtime: float
    size: int
    sha256: str | None = None

    def digest(self) -> str:
        if self.sha256 is None:
            self.sha256 = file_sha256(self.abs_path)
        return self.sha256

    def manifest(self) -> dict[str, Any]:
        return {"path": self.path, "mtime": self.mtime, "size": self.size, "sha256": self.digest()}


@dataclass
class Sources:
    files: list[TrackedFile] = field(default_factory=list)  # --files
    dirs: list[str] = field(default_factory=list)  # --include-dirs, as shown
    dir_paths: list[Path] = field(default_factory=list)  # --include-dirs, absolute
    dir_files: list[TrackedFile] = field(default_factory=list)  # the files under them
    extra: str | None = None  # piped standard input

    @property
    def source_paths(self) -> list[str]:
        return [f.path for f in self.files] + self.dirs

    @property
    def tracked(self) -> list[TrackedFile]:
        seen: dict[str, TrackedFile] = {}
        for f in [*self.files, *self.dir_files]:
            seen.setdefault(f.path, f)
        return [seen[p] for p in sorted(seen)]

    @property
    def source_type(self) -> str:
        kinds = [k for k, present in (("files", self.files), ("dirs", self.dirs), ("stdin", self.extra)) if present]
        return "+".join(kinds) or "prompt"

    def manifest(self) -> list[dict[str, Any]]:
        return [f.manifest() for f in self.tracked]

    def source_hash(self) -> str:
        """sha256 over every tracked file's path and content hash, and the piped context."""
        body = {
            "files": [[f.path, f.digest()] for f in self.tracked],
            "stdin": text_sha256(self.extra) if self.extra else None,
        }
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    def key_material(self) -> dict[str, Any]:
        """What, besides prompt and model, names a cache entry: the given paths and the piped context
        (content hashes are checked against the entry, see ``stale_reason``)."""
        return {
            "files": sorted(f.path for f in self.files),
            "dirs": sorted(self.dirs),
            "stdin": text_sha256(self.extra) if self.extra else None,
        }


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _show(project: "Project", path: Path) -> str:
    try:
        rel = path.relative_to(project.root).as_posix()
    except ValueError:
        return path.as_posix()
    return rel or "."


def _stat(project: "Project", path: Path, shown: str | None = None) -> TrackedFile:
    st = path.stat()
    return TrackedFile(shown or _show(project, path), path, st.st_mtime, st.st_size)


def _locate(project: "Project", raw: str) -> Path:
    """A given path: absolute; else relative to the working directory when that is inside the
    project and holds it (a command run from a subfolder), else relative to the project root."""
    path = Path(os.path.expanduser(raw))
    if path.is_absolute():
        return Path(os.path.abspath(path))
    here = Path(os.path.abspath(path))
    root = Path(os.path.abspath(project.root))
    if here.exists() and (here == root or root in here.parents):
        return here
    there = Path(os.path.abspath(root / path))
    return there if there.exists() else here


# Why a crawl leaves a path out, for the reasons that also keep it from Gemini: what a user or a
# prompt-injected agent names must not carry secrets or anything from outside the project.  The other
# built-in classes (lock files, build output, dependencies...) are left out of the index for being
# noise, not for being private, so an offload may still send them.
_REFUSED = {
    "secrets": ("secret_file", "is a secret-bearing file (by the secret-file rules of the code index)"),
    "ignored": ("ignored_file", "is ignored by the project's .gitignore"),
    "contextwareignore": ("ignored_file", "is ignored by .contextwareignore"),
    "data_dir": ("ignored_file", "is in Contextware's data folder"),
    "vcs": ("ignored_file", "is version-control metadata"),
}


def check_source(
    project: "Project", rules: "IgnoreRules | None", field: str, raw: str, path: Path, is_dir: bool
) -> None:
    """Refuse (UsageError) a given file or folder that a crawl would not read: outside the project
    (by its real path), ignored, or secret.  Both the name as given and its real path are judged, so
    a link named ``notes.txt`` to ``.env`` and one named ``x.env`` to a plain file are refused.
    ``field`` names the input (``files``, ``include_dirs``), worded by each front end; ``rules``:
    the project's, when the caller has them loaded already."""
    rules = rules or _rules(project)
    real = path.resolve()
    real_rel = rules.relative(real)
    if real_rel is None:
        raise FieldError(
            f"{{field}}: {raw} is outside the project ({project.root}); an offload sends only the project's files.",
            field=field,
            code="outside_project",
        )
    given_rel = rules.relative(path)
    for rel in dict.fromkeys(r for r in (given_rel, real_rel) if r):
        reason = rules.reason(rel, is_dir)
        if reason in _REFUSED:
            code, why = _REFUSED[reason]
            raise FieldError(f"{{field}}: {raw} {why}; it is never sent to Gemini.", field=field, code=code)


def _rules(project: "Project") -> "IgnoreRules":
    from contextware.codeindex.files import IgnoreRules, restored_reasons

    return IgnoreRules.load(project.root, project.data_dir, restored_reasons(project.config))


def redact_sent(counts: dict[str, int], text: str) -> str:
    """``text`` with its secrets masked (``redact.redact``), adding what was masked to ``counts``:
    what goes to Gemini is redacted like a crawl's summaries."""
    from contextware.core.redact import redact

    clean, found = redact(text)
    for kind, n in found.items():
        counts[kind] = counts.get(kind, 0) + n
    return clean


def resolve_sources(
    project: "Project", files: Sequence[str] = (), include_dirs: Sequence[str] = (), extra: str | None = None
) -> Sources:
    """Check and stat the given files and folders (relative paths: to the working directory, else to
    the project root).  Bad paths, and paths a crawl would not read (``check_source``), are a
    UsageError; nothing is read here."""
    sources = Sources(extra=extra if extra and extra.strip() else None)
    rules = _rules(project) if files or include_dirs else None
    for raw in files:
        path = _locate(project, raw)
        if not path.exists():
            raise FieldError(f"{{field}}: {raw} does not exist.", field="files", code="file_not_found")
        check_source(project, rules, "files", raw, path, False)
        if not path.is_file():
            raise FieldError(
                f"{{field}}: {raw} is not a file (a folder goes among the folders Gemini may read).",
                field="files",
                code="not_a_file",
            )
        if not os.access(path, os.R_OK):
            raise FieldError(f"{{field}}: {raw} is not readable.", field="files", code="unreadable")
        tracked = _stat(project, path.resolve())
        if tracked.path not in {f.path for f in sources.files}:
            sources.files.append(tracked)
    limit = project.config.offload_max_source_files
    listed: set[str] = set()
    for raw in include_dirs:
        path = _locate(project, raw)
        if not path.exists():
            raise FieldError(f"{{field}}: {raw} does not exist.", field="include_dirs", code="dir_not_found")
        if not path.is_dir():
            raise FieldError(
                f"{{field}}: {raw} is not a folder (a file goes among the files Gemini reads).",
                field="include_dirs",
                code="not_a_dir",
            )
        check_source(project, rules, "include_dirs", raw, path, True)
        path = path.resolve()
        shown = _show(project, path)
        if shown in sources.dirs:
            continue
        sources.dirs.append(shown)
        sources.dir_paths.append(path)
        for f in list_dir_files(project, path):  # folders may overlap: each file counts once
            if f.path not in listed:
                listed.add(f.path)
                sources.dir_files.append(f)
        if len(sources.dir_files) > limit:
            raise FieldError(
                f"{{field}} covers more than {limit} files; give narrower folders "
                "(or raise offload_max_source_files in config.json).",
                field="include_dirs",
                code="too_many_files",
            )
    return sources


def list_dir_files(project: "Project", path: Path) -> list[TrackedFile]:
    """The files under ``path`` that an answer depends on, by the project's ignore rules (a folder
    outside the project is listed by its own rules)."""
    from contextware.codeindex.files import list_project_files
    from contextware.codeindex.source_text import is_utf8_name

    inside = _show(project, path) != path.as_posix() or path == project.root
    if inside:
        candidates, _ = list_project_files(project.root, project.data_dir, [str(path)])
    else:
        candidates, _ = list_project_files(path, project.data_dir, None)
    named = [c for c in candidates if is_utf8_name(c.path)]  # a name that is not UTF-8 cannot be sent
    if len(named) < len(candidates):
        sys.stderr.write(f"warning: left out {len(candidates) - len(named)} file(s) whose name is not valid UTF-8.\n")
    candidates = named
    if inside:
        return [TrackedFile(c.path, Path(c.abs_path), c.mtime, c.size) for c in candidates]
    return [TrackedFile((path / c.path).as_posix(), Path(c.abs_path), c.mtime, c.size) for c in candidates]


def current_files(
    project: "Project", manifest: Sequence[dict[str, Any]], dirs: Sequence[str]
) -> list[TrackedFile] | str:
    """Stat the files an entry depends on now: its given files (from the manifest) plus a fresh
    listing of its folders.  A string when a file is gone (the stale reason)."""
    out: dict[str, TrackedFile] = {}
    for d in dirs:
        path = Path(d) if os.path.isabs(d) else project.root / d
        if not path.is_dir():
            return f"{d} is no longer a folder"
        for f in list_dir_files(project, path.resolve()):
            out[f.path] = f
    for m in manifest:
        p = m["path"]
        if p in out or _under_any(p, dirs):
            continue
        path = Path(p) if os.path.isabs(p) else project.root / p
        try:
            out[p] = _stat(project, path, p)
        except OSError:
            return f"{p} was deleted"
    return [out[p] for p in sorted(out)]


def _under_any(path: str, dirs: Sequence[str]) -> bool:
    return any(d == "." or path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


def stale_reason(manifest: Sequence[dict[str, Any]], current: Sequence[TrackedFile]) -> tuple[str | None, list[str]]:
    """(why the recorded files no longer match, paths whose stat changed but content did not)."""
    old = {m["path"]: m for m in manifest}
    now = {f.path: f for f in current}
    added = sorted(set(now) - set(old))
    removed = sorted(set(old) - set(now))
    if removed:
        return f"{removed[0]} was deleted" + (f" (and {len(removed) - 1} more)" if len(removed) > 1 else ""), []
    if added:
        return f"{added[0]} was added" + (f" (and {len(added) - 1} more)" if len(added) > 1 else ""), []
    touched = []
    for path, f in now.items():
        m = old[path]
        if m.get("mtime") == f.mtime and m.get("size") == f.size:
            continue
        try:
            digest = f.digest()
        except OSError:
            return f"{path} is unreadable", []
        if digest != m.get("sha256"):
            return f"{path} changed", []
        touched.append(path)
    return None, touched


def read_file_texts(sources: Sources) -> dict[str, str]:
    """The text of every ``--files`` file (and its hash as read); binary files are a UsageError."""
    from contextware.codeindex.source_text import Candidate, read_source

    texts: dict[str, str] = {}
    for f in sources.files:
        text, digest, reason = read_source(Candidate(f.path, f.abs_path, f.mtime, f.size), MAX_STDIN_BYTES)
        if reason == "too_large":
            raise FieldError(
                f"{{field}}: {f.path} is larger than Gemini CLI's 8 MB input limit; give its folder "
                "as an included folder instead.",
                field="files",
                code="too_large",
            )
        if reason or text is None:
            what = "binary" if reason == "binary" else (reason or "unreadable")
            raise FieldError(f"{{field}}: {f.path} is {what}, not text.", field="files", code="not_text")
        f.sha256 = digest
        texts[f.path] = text
    return texts


def build_stdin(sources: Sources, texts: dict[str, str], *, lead: str = "") -> str | None:
    """The context Gemini gets on stdin (before the prompt): ``lead``, the piped context, then each
    file between delimiter lines carrying a random nonce.  None when there is nothing."""
    from contextware.core.redact import redact_text

    parts = [lead.strip()] if lead.strip() else []
    if sources.extra:
        parts.append(escape_at(sources.extra.strip()))
    if texts:
        nonce = secrets.token_hex(4)
        parts.append(
            f"The request below comes with {len(texts)} file(s), each between a line "
            f'"===== FILE {nonce}: <path> =====" and a line "===== END FILE {nonce}: <path> =====".'
        )
        for path, text in texts.items():
            body = escape_at(text.replace("\r\n", "\n"))
            if not body.endswith("\n"):
                body += "\n"
            shown = escape_at(redact_text(path))  # a file's name can carry a secret too
            parts.append(f"===== FILE {nonce}: {shown} =====\n{body}===== END FILE {nonce}: {shown} =====")
    if not parts:
        return None
    stdin = "\n\n".join(parts)
    if len(stdin.encode("utf-8")) > MAX_STDIN_BYTES:
        raise UsageError(
            "The files and piped context exceed Gemini CLI's 8 MB input limit; give large folders "
            "as included folders so that Gemini reads them itself.",
            code="too_large",
        )
    return stdin
