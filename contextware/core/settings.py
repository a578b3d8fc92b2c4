"""The settings a run of Contextware reads from its environment, resolved once into ``Settings``.

``Settings.from_env(environ)`` is called at each composition root (``cli.run``, the hook entry, the
MCP server, and the resident service for each request with the caller's forwarded variables); the
result travels on ``Project`` or as a parameter.  Where none is given (library callers, tests, the
installers) the parameter defaults to ``current_settings()``, this process's environment read at
that moment.  No other module of the package reads settings from ``os.environ``, but for the Gemini
CLI adapter (``CONTEXTWARE_GEMINI_BIN`` and the CLI's own variables), the installers (the hosts' own
variables) and ``NO_COLOR``: ``tests/unit/test_settings.py`` lists them.  Standard library only,
and cheap: the hook process imports it on every turn (a ``NamedTuple``, not a dataclass, whose
import costs that path ~8 ms).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NamedTuple

PREFIX = "CONTEXTWARE_"


class Settings(NamedTuple):
    """Everything the package reads from the environment; immutable.  Empty strings count as unset."""

    project_root: str | None = None  # CONTEXTWARE_PROJECT_ROOT: the project's folder (else git top level/cwd)
    data_dir: str | None = None  # CONTEXTWARE_DATA_DIR: where the memory lives (else <root>/contextware_data)
    db_uri: str | None = None  # CONTEXTWARE_DB_URI: the LanceDB database (else <data dir>/lancedb), s3:// too
    home: str | None = None  # CONTEXTWARE_HOME: per-user state (registry, hooks.log), else ~/.contextware
    service: str = "auto"  # CONTEXTWARE_SERVICE: off never uses or starts the resident service
    embed_model: str | None = None  # CONTEXTWARE_EMBED_MODEL: a fastembed model instead of the bundled one
    disable_embeddings: bool = False  # CONTEXTWARE_DISABLE_EMBEDDINGS: no model (full-text search only)
    worktrees: str | None = None  # CONTEXTWARE_WORKTREES: shared or separate memory for git worktrees
    s3_endpoint: str | None = None  # CONTEXTWARE_S3_ENDPOINT: the object store's endpoint, before the AWS ones
    aws_endpoint: str | None = None  # AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL: the standard AWS endpoint
    aws_region: str | None = None  # AWS_REGION, else AWS_DEFAULT_REGION: the object store's region
    hook_python: str | None = None  # CONTEXTWARE_HOOK_PYTHON: the Python installed hooks run with
    runtime_dir: str | None = None  # XDG_RUNTIME_DIR: where the service's socket folder goes (else /tmp)
    temp_dir: str | None = None  # TMPDIR, else TEMP or TMP: where the hooks' once-markers go (else /tmp)
    user: str | None = None  # USER, else USERNAME: who deletes a memory when git names nobody
    gemini_hook: bool = False  # GEMINI_SESSION_ID or GEMINI_CWD: Gemini CLI runs this process as its hook
    forwarded: tuple[tuple[str, str], ...] = ()  # every CONTEXTWARE_* variable, as sent to the service

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        def get(name: str) -> str | None:
            return environ.get(name) or None

        service = (environ.get(PREFIX + "SERVICE") or "auto").strip().lower()
        return cls(
            project_root=get(PREFIX + "PROJECT_ROOT"),
            data_dir=get(PREFIX + "DATA_DIR"),
            db_uri=get(PREFIX + "DB_URI"),
            home=get(PREFIX + "HOME"),
            service="off" if service in ("off", "0", "no", "false") else "auto",
            embed_model=get(PREFIX + "EMBED_MODEL"),
            disable_embeddings=bool(get(PREFIX + "DISABLE_EMBEDDINGS")),
            worktrees=get(PREFIX + "WORKTREES"),
            s3_endpoint=get(PREFIX + "S3_ENDPOINT"),
            aws_endpoint=get("AWS_ENDPOINT_URL_S3") or get("AWS_ENDPOINT_URL"),
            aws_region=get("AWS_REGION") or get("AWS_DEFAULT_REGION"),
            hook_python=get(PREFIX + "HOOK_PYTHON"),
            runtime_dir=get("XDG_RUNTIME_DIR"),
            temp_dir=get("TMPDIR") or get("TEMP") or get("TMP"),
            user=get("USER") or get("USERNAME"),
            gemini_hook=bool(get("GEMINI_SESSION_ID") or get("GEMINI_CWD")),
            forwarded=tuple(sorted((k, str(v)) for k, v in environ.items() if k.startswith(PREFIX))),
        )

    def forwarded_env(self) -> dict[str, str]:
        """The ``CONTEXTWARE_*`` variables this was read from: what a caller sends to the service,
        which builds the request's own ``Settings`` from them."""
        return dict(self.forwarded)

    @property
    def object_store_endpoint(self) -> str | None:
        return self.s3_endpoint or self.aws_endpoint

    def for_caller(self, forwarded: Mapping[str, str]) -> Settings:
        """The settings of a caller that sent its ``CONTEXTWARE_*`` variables (``forwarded``): the
        caller's own, with the others (the AWS ones, the runtime and temporary dirs) kept from this
        process."""
        caller = Settings.from_env({k: str(v) for k, v in forwarded.items() if k.startswith(PREFIX)})
        return caller._replace(
            aws_endpoint=self.aws_endpoint,
            aws_region=self.aws_region,
            runtime_dir=self.runtime_dir,
            temp_dir=self.temp_dir,
        )


def current_settings() -> Settings:
    """This process's settings, read from its environment now: the default of every parameter that
    takes ``Settings`` when the caller gives none (the composition roots always give theirs)."""
    return Settings.from_env(os.environ)
