"""One project's memory: its root, data dir, database and settings, resolved once per command."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from contextware.core.errors import UsageError, disk_full, is_disk_full
from contextware.core.json_types import JsonValue
from contextware.core.private import private_umask
from contextware.core.settings import Settings, current_settings
from contextware.core.system import contextware_home, relative_posix, write_atomic
from contextware.storage import layout
from contextware.storage.config import Config, load_config

if TYPE_CHECKING:
    from contextware.storage.database import Database
    from contextware.storage.embeddings import Embedder

GITIGNORE = "# Contextware memory: local to this machine unless you choose to share it.\n*\n"

# Projects kept open by a long-lived process (the resident service): the database connection, its
# open tables and the model stay warm across requests.  None in ordinary, one-shot processes.
_open_projects: dict[tuple[str, str, str], "Project"] | None = None


def keep_projects_open() -> None:
    global _open_projects
    _open_projects = {}


def forget_open_projects() -> None:
    if _open_projects is not None:
        _open_projects.clear()


@dataclass
class Project:
    root: Path
    data_dir: Path
    db_uri: str
    # Resolved once by the caller's composition root; a Project built without them has this process's.
    settings: Settings = field(default_factory=current_settings)
    _embedder: "Embedder | None" = field(default=None, repr=False)
    # The root is only the working directory: no --project-root, no CONTEXTWARE_PROJECT_ROOT or
    # _DATA_DIR, no git repository (see ``ensure_data_dir``).
    guessed: bool = False

    @classmethod
    def open(cls, project_root: str | os.PathLike[str] | None = None, settings: Settings | None = None) -> "Project":
        """The project at ``project_root`` (else as ``layout.resolve_project_root`` finds it), with the
        caller's ``settings`` (by default this process's, read now)."""
        private_umask()  # what the process creates from now on is its user's alone (0600/0700)
        settings = settings or current_settings()
        root = layout.resolve_project_root(project_root, settings)
        data_dir = layout.resolve_data_dir(root, settings)
        if data_dir.exists() and not data_dir.is_dir():
            raise UsageError(
                f"The data directory {data_dir} is a file, not a directory; move it away.", code="not_writable"
            )
        db_uri = layout.resolve_db_uri(data_dir, settings)
        guessed = (
            not (project_root or settings.project_root or settings.data_dir) and layout.find_git_root(root) is None
        )
        if _open_projects is None:
            return cls(root=root, data_dir=data_dir, db_uri=db_uri, settings=settings, guessed=guessed)
        key = (str(root), str(data_dir), db_uri)
        project = _open_projects.get(key)
        if project is None:
            project = _open_projects[key] = cls(root, data_dir, db_uri, settings, guessed=guessed)
        project.guessed = guessed
        project.settings = settings  # this call's (a kept project serves callers one after another)
        project.__dict__.pop("config", None)  # honour edits of config.json
        return project

    @cached_property
    def config(self) -> Config:
        """The project's settings (``config.json`` over the defaults), read once per open."""
        return load_config(self.data_dir)

    def configure(self, **values: JsonValue) -> None:
        """Settings for this process only, checked as ``config.json``'s are (``config.json`` is
        unchanged): for a library caller or a test that runs one project differently."""
        self.__dict__["config"] = self.config.with_values(values)

    def ensure_data_dir(self) -> Path:
        """Create the data dir (with a .gitignore) on first write; refuse unwritable places."""
        created = not self.data_dir.exists()
        if created and self.guessed and self.root in (Path.home().resolve(), Path("/")):
            raise UsageError(
                f"{self.root} is not a project (a git repository, or a folder you name), so no memory was "
                "created there; run this inside your project, or name its folder (`--project-root DIR` "
                "or CONTEXTWARE_PROJECT_ROOT).",
                code="no_project",
            )
        private_umask()
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            gitignore = self.data_dir / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text(GITIGNORE, encoding="utf-8")
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full(exc, "the creation of the data directory") from None
            raise UsageError(
                f"Cannot create the data directory {self.data_dir}: {exc.strerror}.", code="not_writable"
            ) from None
        if not os.access(self.data_dir, os.W_OK | os.X_OK):
            raise UsageError(f"The data directory {self.data_dir} is not writable.", code="not_writable")
        if created:
            register_project(self)
        return self.data_dir

    @property
    def lock_dir(self) -> Path:
        return self.data_dir / "locks"

    @cached_property
    def db(self) -> "Database":
        from contextware.storage.database import Database

        return Database(self)

    @property
    def embedder(self) -> "Embedder":
        if self._embedder is None:
            from contextware.storage.embeddings import get_embedder

            self._embedder = get_embedder(self.settings)
        return self._embedder

    @property
    def id(self) -> str:
        """Stable across sessions and machines' checkouts of the same path: folder name plus a hash of the root."""
        import hashlib

        return f"{self.root.name}-{hashlib.sha1(str(self.root).encode()).hexdigest()[:8]}"

    def relpath(self, path: Path) -> str:
        return relative_posix(path, self.root)


def register_project(project: Project) -> None:
    """Record the project in the per-user registry (used by ``--global`` searches). Best effort."""
    home = contextware_home(project.settings)
    registry = home / "projects.json"
    try:
        home.mkdir(parents=True, exist_ok=True)
        from filelock import FileLock

        with FileLock(str(registry) + ".lock", timeout=5):
            try:
                data = json.loads(registry.read_text(encoding="utf-8"))
            except (FileNotFoundError, json.JSONDecodeError):
                data = {}
            data.setdefault("projects", {})[str(project.root)] = {
                "data_dir": str(project.data_dir),
                "db_uri": project.db_uri,
                "registered_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            write_atomic(registry, json.dumps(data, indent=2))
    except Exception:  # noqa: BLE001 - the registry is a convenience; never fail a save over it
        pass


def registered_projects(settings: "Settings | None" = None) -> list[Project]:
    """Every project this machine has registered (``$CONTEXTWARE_HOME/projects.json``) whose root and
    data still exist, sorted by root, each opened with ``settings`` (by default this process's).  Used
    by ``recall.py --global``."""
    from contextware.storage.layout import is_local_uri

    settings = settings or current_settings()

    try:
        data = json.loads((contextware_home(settings) / "projects.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    entries = data.get("projects") if isinstance(data, dict) else None
    out = []
    for root, info in sorted((entries or {}).items()):
        info = info if isinstance(info, dict) else {}
        root_path = Path(root)
        data_dir = Path(info.get("data_dir") or root_path / "contextware_data")
        db_uri = str(info.get("db_uri") or data_dir / "lancedb")
        if not root_path.is_dir() or (is_local_uri(db_uri) and not data_dir.is_dir()):
            continue
        out.append(Project(root=root_path, data_dir=data_dir, db_uri=db_uri, settings=settings))
    return out
