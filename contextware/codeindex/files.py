"""Which files of a project the code index covers.

In a git work tree the list is ``git ls-files --cached --others --exclude-standard`` (tracked plus
untracked-not-ignored), so git's own ignore rules apply exactly; elsewhere, or when git is missing or
fails, a walk applies every ``.gitignore`` it meets (each anchored at its own folder).  In both modes
``.contextwareignore`` at the root (gitignore syntax) and the built-in exclusions below apply, to
tracked files too.  A ``!pattern`` in ``.contextwareignore`` re-includes a built-in exclusion, except
the data dir, VCS folders and Contextware's own files (``exclusions.own_file``).

Listing costs one ``lstat`` per candidate (plus up to two per folder for virtualenv markers) and reads
no content; ``read_source`` reads each file once.  Every path handed out is project-relative POSIX.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from contextware.codeindex.attributes import Attributes
from contextware.codeindex.exclusions import (
    EXCLUDED_DIRS,
    VCS_DIRS,
    SecretFiles,
    file_reason,
    looks_like_env,
    own_file,
)
from contextware.codeindex.source_text import DEFAULT_MAX_BYTES, SNIFF_BYTES, Candidate, looks_binary
from contextware.storage.config import Config, load_config
from contextware.storage.layout import DATA_DIR_NAME, find_git_root

if TYPE_CHECKING:
    from subprocess import CompletedProcess

    from pathspec import GitIgnoreSpec

GIT_TIMEOUT = 30.0

# Environment that would point git at another repository or change how pathspecs are read.
_GIT_ENV_DROP = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_LITERAL_PATHSPECS",
        "GIT_GLOB_PATHSPECS",
        "GIT_NOGLOB_PATHSPECS",
        "GIT_ICASE_PATHSPECS",
    }
)


def _load_spec(path: Path) -> GitIgnoreSpec | None:
    """A gitignore-syntax file as a spec, or None when absent, unreadable or without patterns."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    from pathspec import GitIgnoreSpec

    spec = GitIgnoreSpec.from_lines(lines)
    return spec if any(p.include is not None for p in spec.patterns) else None


def _rel_to(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` as POSIX ("" for the root itself), or None when outside."""
    if path == root:
        return ""
    prefix = root if root.endswith(os.sep) else root + os.sep
    if not path.startswith(prefix):
        return None
    rel = path[len(prefix) :]
    return rel.replace(os.sep, "/") if os.sep != "/" else rel


def _clean_rel(rel_path: str) -> str:
    rel = rel_path.replace("\\", "/").strip("/")
    while rel.startswith("./"):
        rel = rel[2:]
    return "" if rel == "." else rel


# Exclusions that config can bring back (config key -> reason), see docs/how-it-works.md (Code index).
RESTORABLE = {"index_generated": "generated", "index_vendored": "vendored", "index_minified": "minified"}


def restored_reasons(config: Config) -> frozenset[str]:
    """The exclusion classes a project's config brings back into the index."""
    return frozenset(reason for key, reason in RESTORABLE.items() if getattr(config, key) is True)


# -- rules --------------------------------------------------------------------------------------
class IgnoreRules:
    """Built once per run from the project root and data dir.

    Folder verdicts and nested ``.gitignore`` files are cached, so build a new one per run (a watch
    process: per batch of changes) to see edited ignore files.
    """

    def __init__(
        self,
        root: Path,
        data_rel: str | None,
        contextwareignore: GitIgnoreSpec | None,
        git: bool,
        secrets: SecretFiles | None = None,
        restored: frozenset[str] = frozenset(),
    ) -> None:
        self.root = root
        self.secrets = secrets or SecretFiles()
        self.restored = restored  # exclusion classes config brings back (``restored_reasons``)
        self.excluded: Counter[str] = Counter()  # files a listing left out, per reason
        self._attributes = Attributes(root)
        self.git = git  # list with git; switched off for the run when git fails
        self._root_str = str(root)
        self._data_rel = data_rel
        self._cw = contextwareignore
        negates = contextwareignore is not None and any(p.include is False for p in contextwareignore.patterns)
        # Let git skip untracked dependency/venv/cache/build folders instead of listing them all
        # (not when .contextwareignore re-includes something: git would hide it).
        self._git_prune = (
            ()
            if negates
            else tuple(arg for name in sorted({*EXCLUDED_DIRS, DATA_DIR_NAME}) for arg in ("-x", name + "/"))
        )
        self._static_dirs: dict[str, str | None] = {}
        self._ignored_dirs: dict[str, bool] = {}
        self._gitignores: dict[str, GitIgnoreSpec | None] = {}
        self._git_verdicts: dict[str, bool] = {}  # rel -> ignored, from ``ask_git``

    @classmethod
    def load(cls, root: Path, data_dir: Path, restored: frozenset[str] = frozenset()) -> "IgnoreRules":
        root = Path(root).resolve()
        data_rel = _rel_to(str(Path(data_dir).resolve()), str(root))
        return cls(
            root,
            data_rel or None,
            _load_spec(root / ".contextwareignore"),
            git=find_git_root(root) is not None,
            secrets=secret_files(Path(data_dir)),
            restored=restored,
        )

    def reason(self, rel_path: str, is_dir: bool = False) -> str | None:
        """Why this project-relative path is excluded ("ignored", "data_dir", "vcs", "contextware", "virtualenv",
        "dependencies", "cache", "editor", "build_output", "lock_file", "minified", "secrets",
        "binary", "generated", "vendored", "contextwareignore"), or None if included.  Looks at the path's folders too.  In
        git mode "ignored" asks ``git check-ignore`` (tracked files are never ignored)."""
        rel = _clean_rel(rel_path)
        if not rel:
            return None
        static = self._static_path_reason(rel, is_dir)
        if static:
            return static
        return "ignored" if self._ignored(rel, is_dir) else None

    def builtin_reason(self, rel_path: str, is_dir: bool = False) -> str | None:
        """``reason`` without the .gitignore rules: cheap enough for every file-system event."""
        rel = _clean_rel(rel_path)
        return self._static_path_reason(rel, is_dir) if rel else None

    # paths: where things are
    def relative(self, path: str | os.PathLike[str]) -> str | None:
        """A user-given path (absolute or relative to the cwd) as project-relative POSIX, or None
        when outside the root.  Folders are resolved, the last component is not, so a symlink inside
        the project keeps its own path."""
        absolute = os.path.abspath(os.fspath(path))
        head, tail = os.path.split(absolute)
        real = os.path.join(os.path.realpath(head), tail) if tail else os.path.realpath(absolute)
        rel = _rel_to(real, self._root_str)
        if rel is None and os.path.realpath(absolute) == self._root_str:
            return ""
        return rel

    def abs_path(self, rel: str) -> str:
        return os.path.join(self._root_str, rel) if rel else self._root_str

    # built-in and .contextwareignore verdicts
    def _static_reason(self, rel: str, name: str, is_dir: bool) -> str | None:
        if is_dir and (rel == self._data_rel or name == DATA_DIR_NAME):
            return "data_dir"
        if name in VCS_DIRS:
            return "vcs"
        if own_file(rel, is_dir):
            return "contextware"  # never brought back (like the data dir): our files are not the project's code
        if self._cw is not None:
            hit = self._cw.check_file(rel + "/" if is_dir else rel).include
            if hit:
                return "contextwareignore"
            if hit is False:
                return None  # an explicit `!pattern` re-includes a built-in exclusion
        if not is_dir:
            if self.secrets(rel):
                return "secrets"  # never brought back by the index_* switches (secret_files_allowed does)
            reason = file_reason(name) or self._attributes.reason(rel)  # .gitattributes: linguist-*
            return None if reason in self.restored else reason
        if name in EXCLUDED_DIRS:
            return EXCLUDED_DIRS[name]
        if name.endswith(".egg-info"):
            return "build_output"
        return "virtualenv" if looks_like_env(self.abs_path(rel), name) else None

    def _static_path_reason(self, rel: str, is_dir: bool) -> str | None:
        parent, _, name = rel.rpartition("/")
        return (parent and self._static_dir_reason(parent)) or self._static_reason(rel, name, is_dir)

    def _static_dir_reason(self, rel: str) -> str | None:
        try:
            return self._static_dirs[rel]
        except KeyError:
            found = self._static_dirs[rel] = self._static_path_reason(rel, True)
            return found

    # .gitignore verdicts
    def _ignored(self, rel: str, is_dir: bool) -> bool:
        if self.git:
            ignored = self._git_check_ignore(rel)
            if ignored is not None:
                return ignored
        return self._walk_ignored_path(rel, is_dir)

    def _git_check_ignore(self, rel: str) -> bool | None:
        if rel not in self._git_verdicts:
            self.ask_git([rel])
        return self._git_verdicts.get(rel)

    def ask_git(self, rel_paths: Iterable[str]) -> None:
        """Ask ``git check-ignore`` about many paths at once (one process), so that
        ``reason``/``check_file`` on them start no process of their own (watch and index_file)."""
        if not self.git:
            return
        rels = sorted({r for r in map(_clean_rel, rel_paths) if r and r not in self._git_verdicts})
        if not rels:
            return
        # Paths on stdin: check-ignore refuses --literal-pathspecs, and stdin has no length limit.
        proc = self._git(
            ["check-ignore", "--stdin", "-z"], stdin=b"\0".join(os.fsencode(r) for r in rels), literal=False
        )
        if proc is None or proc.returncode not in (0, 1):
            self.git = False  # git fails here (e.g. "dubious ownership"): use the walk's rules
            return
        ignored = {os.fsdecode(p) for p in proc.stdout.split(b"\0") if p}
        self._git_verdicts.update((r, r in ignored) for r in rels)

    def _walk_ignored_path(self, rel: str, is_dir: bool) -> bool:
        """Walk-mode verdict: a file under an ignored folder stays ignored, whatever the negations."""
        parent = rel.rpartition("/")[0]
        return bool(parent and self._walk_ignored_dir(parent)) or self._gitignored(rel, is_dir)

    def _walk_ignored_dir(self, rel: str) -> bool:
        try:
            return self._ignored_dirs[rel]
        except KeyError:
            found = self._ignored_dirs[rel] = self._walk_ignored_path(rel, True)
            return found

    def _gitignored(self, rel: str, is_dir: bool) -> bool:
        """The deepest .gitignore with a matching pattern decides, as in git."""
        target = rel + "/" if is_dir else rel
        base = rel
        while True:
            base = base.rpartition("/")[0]
            spec = self._gitignore(base)
            if spec is not None:
                hit = spec.check_file(target[len(base) + 1 :] if base else target).include
                if hit is not None:
                    return hit
            if not base:
                return False

    def _gitignore(self, dir_rel: str) -> GitIgnoreSpec | None:
        try:
            return self._gitignores[dir_rel]
        except KeyError:
            spec = self._gitignores[dir_rel] = _load_spec(Path(self.abs_path(dir_rel), ".gitignore"))
            return spec

    # listing
    def _list_dirs(self, dirs: Sequence[str], skipped: dict[str, str]) -> list[Candidate]:
        """Candidates under these folders ("" is the whole project), whose own names were checked
        already; a folder that turns out to be ignored goes to ``skipped``."""
        if self.git:
            listed = self._git_ls(dirs)
            if listed is not None:
                for d in dirs:
                    if d and not any(p.startswith(d + "/") for p in listed) and self._ignored(d, True):
                        skipped[d] = "ignored"
                return self._from_git(listed)
            self.git = False
        out: list[Candidate] = []
        for d in dirs:
            if d and self._walk_ignored_path(d, True):
                skipped[d] = "ignored"
            else:
                self._walk(d, out)
        return out

    def _from_git(self, listed: Sequence[str]) -> list[Candidate]:
        with_attributes = {rel.rpartition("/")[0] for rel in listed if rel.rpartition("/")[2] == ".gitattributes"}
        for rel in listed:  # git listed every .gitattributes: no folder needs to be asked for one
            folder = rel.rpartition("/")[0]
            if folder not in with_attributes:
                self._attributes.known_absent(folder)
        out = []
        for rel in listed:
            reason = self._static_path_reason(rel, False)
            if reason:
                self.excluded[reason] += 1
                continue
            cand = self._candidate(rel)
            if cand is not None:
                out.append(cand)
        return out

    def _walk(self, start: str, out: list[Candidate]) -> None:
        """Walk from ``start`` without following symlinked folders, pruning excluded folders."""
        stack = [start]
        while stack:
            dir_rel = stack.pop()
            try:
                with os.scandir(self.abs_path(dir_rel)) as it:
                    entries = list(it)
            except OSError:
                continue
            if not any(e.name == ".gitignore" for e in entries):
                self._gitignores.setdefault(dir_rel, None)  # spares a failed open per folder
            if not any(e.name == ".gitattributes" for e in entries):
                self._attributes.known_absent(dir_rel)
            prefix = dir_rel + "/" if dir_rel else ""
            for entry in entries:
                rel = prefix + entry.name
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                static = self._static_reason(rel, entry.name, is_dir)
                if static and not is_dir and not self._gitignored(rel, is_dir):
                    self.excluded[static] += 1
                if static or self._gitignored(rel, is_dir):
                    continue
                if is_dir:
                    stack.append(rel)
                else:
                    cand = self._candidate(rel)
                    if cand is not None:
                        out.append(cand)

    def _candidate(self, rel: str) -> Candidate | None:
        """One lstat (two for a symlink); None unless a regular file whose target stays inside."""
        abs_path = self.abs_path(rel)
        try:
            st = os.lstat(abs_path)
            if stat.S_ISLNK(st.st_mode):
                if self._link_reason(abs_path):
                    return None
                st = os.stat(abs_path)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        return Candidate(rel, Path(abs_path), st.st_mtime, st.st_size)

    def _link_reason(self, abs_path: str) -> str | None:
        """Why a symlink inside the project must not be followed: its target is outside the project
        (or is excluded itself, e.g. in the data dir)."""
        target = _rel_to(os.path.realpath(abs_path), self._root_str)
        if target is None:
            return "outside_project"
        return self._static_path_reason(target, os.path.isdir(abs_path)) if target else None

    # explicit paths
    def _classify(self, path: str | Path) -> tuple[str | None, str]:
        """(rel_path or None, "file" | "dir" | skip reason) for one explicitly given path."""
        rel = self.relative(path)
        if rel is None:
            return None, "outside_project"
        if rel == "":
            return rel, "dir"
        abs_path = self.abs_path(rel)
        try:
            st = os.lstat(abs_path)
            if stat.S_ISLNK(st.st_mode):
                reason = self._link_reason(abs_path)
                if reason:
                    return rel, reason
                st = os.stat(abs_path)
                if stat.S_ISDIR(st.st_mode):
                    return rel, "symlinked_dir"  # walks never follow them either
        except OSError:
            return rel, "missing"
        is_dir = stat.S_ISDIR(st.st_mode)
        if not is_dir and not stat.S_ISREG(st.st_mode):
            return rel, "not_a_file"
        return rel, self._static_path_reason(rel, is_dir) or ("dir" if is_dir else "file")

    def _list_files(self, files: list[str], found: dict[str, Candidate], skipped: dict[str, str]) -> None:
        """Add explicitly given files (their names checked already) to ``found`` unless git-ignored."""
        files = [f for f in files if f not in found]
        if not files:
            return
        if self.git:
            listed = self._git_ls(files)
            if listed is not None:
                kept = set(listed)
                for c in self._from_git(listed):
                    found[c.path] = c
                for f in files:
                    if f not in kept:
                        skipped[f] = "ignored"
                return
            self.git = False
        for f in files:
            ignored = self._walk_ignored_path(f, False)
            cand = None if ignored else self._candidate(f)
            if cand is not None:
                found[f] = cand
            else:
                skipped[f] = "ignored" if ignored else "missing"

    # git
    def _git_ls(self, pathspecs: Sequence[str]) -> list[str] | None:
        args = ["ls-files", "--cached", "--others", "--exclude-standard", "-z", *self._git_prune]
        if any(pathspecs):
            args += ["--", *pathspecs]
        proc = self._git(args)
        if proc is None or proc.returncode != 0:
            return None
        # Unmerged entries are listed once per stage; nested repositories as "dir/".
        return list(dict.fromkeys(os.fsdecode(p).rstrip("/") for p in proc.stdout.split(b"\0") if p))

    def _git(self, args: list[str], stdin: bytes | None = None, literal: bool = True) -> CompletedProcess[bytes] | None:
        """``git`` run from the root, or None when it is missing, hangs or cannot start.
        ``literal=False`` for commands that refuse pathspec magic (``check-ignore``)."""
        import subprocess

        # The child's environment (not a setting): ours, less the variables that would redirect git.
        env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
        env["GIT_OPTIONAL_LOCKS"] = "0"
        flags = ["--literal-pathspecs"] if literal else []
        try:
            return subprocess.run(
                ["git", *flags, "-c", "core.quotepath=off", *args],
                cwd=self._root_str,
                env=env,
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                timeout=GIT_TIMEOUT,
            )
        except (OSError, subprocess.SubprocessError):
            return None


def secret_files(data_dir: Path) -> SecretFiles:
    """The secret-file rules with the project's ``secret_files`` / ``secret_files_allowed`` config."""
    config = load_config(data_dir)  # checked when read: lists of non-empty patterns
    return SecretFiles(list(config.secret_files), list(config.secret_files_allowed))


# -- public API ---------------------------------------------------------------------------------
def list_project_files(
    root: Path,
    data_dir: Path,
    paths: Sequence[str | Path] | None = None,
    *,
    restored: frozenset[str] = frozenset(),
    excluded: Counter[str] | None = None,
) -> tuple[list[Candidate], dict[str, str]]:
    """Every indexable candidate file under root (or under the given files/folders, which may be
    absolute or relative to the *current working directory*), sorted by path, with their stat;
    plus a dict rel_path -> reason for explicitly given paths that were skipped (outside the
    project root, ignored, not found...).  ``paths=None`` means the whole project, ``[]`` nothing.

    Size and content are not judged here (see ``read_source``).  ``restored`` are exclusion classes
    brought back (``restored_reasons``); ``excluded``, when given, receives the number of files the
    listing left out per reason (files git lists or the walk meets: a pruned folder's files are not
    counted)."""
    rules = IgnoreRules.load(root, data_dir, restored)
    if paths is None:
        found_all = _sorted(rules._list_dirs([""], {}))
        if excluded is not None:
            excluded.update(rules.excluded)
        return found_all, {}
    skipped: dict[str, str] = {}
    dirs: list[str] = []
    files: list[str] = []
    for p in paths:
        rel, kind = rules._classify(p)
        if rel is None:
            skipped[str(p)] = kind
        elif kind == "dir":
            dirs.append(rel)
        elif kind == "file":
            files.append(rel)
        else:
            skipped[rel or "."] = kind
    if "" in dirs:
        dirs, files = [""], []
    found = {c.path: c for c in rules._list_dirs(dirs, skipped)} if dirs else {}
    rules._list_files(files, found, skipped)
    if excluded is not None:
        excluded.update(rules.excluded)
    return _sorted(found.values()), skipped


def _sorted(cands: Iterable[Candidate]) -> list[Candidate]:
    return sorted(cands, key=lambda c: c.path)


def check_file(
    root: Path,
    data_dir: Path,
    path: str | Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    rules: IgnoreRules | None = None,
) -> tuple[str, Candidate | None, str | None]:
    """For one path given by a user (absolute, or relative to the cwd): (rel_path, candidate, skip_reason).

    skip_reason is "outside_project", "missing", "not_a_file", "symlinked_dir", an IgnoreRules
    reason ("ignored", "lock_file", ...), "too_large", "binary" (NUL in the first 8 KB) or
    "unreadable".  rel_path is project-relative POSIX when inside the project (even when missing, so
    the caller can delete its index row; "." for the root), else the path as given."""
    if "\x00" in str(path):  # no file has one in its name (the OS refuses the call): as missing
        return str(path).replace("\x00", "\\x00"), None, "missing"
    rules = rules or IgnoreRules.load(root, data_dir)
    rel, kind = rules._classify(path)
    if rel is None:
        return str(path), None, kind
    if kind == "dir":
        return rel or ".", None, "not_a_file"
    if kind != "file":
        return rel, None, kind
    if rules._ignored(rel, False):
        return rel, None, "ignored"
    cand = rules._candidate(rel)
    if cand is None:
        return rel, None, "missing"
    if cand.size > max_bytes:
        return rel, None, "too_large"
    try:
        with open(cand.abs_path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return rel, None, "unreadable"
    if looks_binary(head):
        return rel, None, "binary"
    return rel, cand, None
