"""Built-in exclusions of the code index: folders and files that are never a project's own source
(dependencies, virtualenvs, caches, build output, lock files, minified and binary files, secrets),
judged by name alone so a walk can prune without reading anything."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj"})


def _reasons(reason: str, names: Iterable[str]) -> dict[str, str]:
    return dict.fromkeys(names, reason)


# Folder names excluded wherever they appear.  `.vscode` is deliberately absent: its few small JSON
# files are hand-edited project config (how to run, debug, lint) rather than generated output, while
# `.idea` is mostly machine-written workspace state.  `env` is only a virtualenv when it looks like
# one (see looks_like_env): it is also a common name for real config folders.
EXCLUDED_DIRS: dict[str, str] = {
    **_reasons("virtualenv", (".venv", "venv", ".tox", ".nox", ".direnv", ".conda")),
    **_reasons(
        "dependencies",
        (
            "node_modules",
            "bower_components",
            "jspm_packages",
            "web_modules",
            ".yarn",
            ".pnpm-store",
            "__pypackages__",
            ".terraform",
        ),
    ),
    **_reasons(
        "cache",
        (
            "__pycache__",
            ".mypy_cache",
            ".pytest_cache",
            ".ruff_cache",
            ".hypothesis",
            ".gradle",
            ".cache",
            ".parcel-cache",
            ".turbo",
            ".sass-cache",
            ".ipynb_checkpoints",
            ".pyre",
            ".pytype",
        ),
    ),
    **_reasons("editor", (".idea",)),
    **_reasons(
        "build_output",
        (
            "build",
            "dist",
            "target",
            "out",
            "_build",
            ".next",
            ".nuxt",
            ".svelte-kit",
            ".output",
            ".eggs",
            "coverage",
            "htmlcov",
        ),
    ),
}
_ENV_MARKERS = ("pyvenv.cfg", "conda-meta")
_OLD_ENV_MARKERS = ("bin/activate", "Scripts/activate.bat")

_LOCK_FILES = frozenset(
    {
        "uv.lock",
        "poetry.lock",
        "Pipfile.lock",
        "pdm.lock",
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "bun.lock",
        "Cargo.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
        "flake.lock",
        "Package.resolved",
        "packages.lock.json",
        "gradle.lockfile",
        "mix.lock",
        "pubspec.lock",
        "Podfile.lock",
        "deno.lock",
    }
)
_MINIFIED = (".min.js", ".min.mjs", ".min.css", ".map")
_BINARY_EXT = frozenset(
    [
        "png",
        "jpg",
        "jpeg",
        "gif",
        "bmp",
        "ico",
        "icns",
        "webp",
        "tif",
        "tiff",
        "psd",
        "xcf",
        "heic",
        "heif",
        "avif",
        "zip",
        "tar",
        "gz",
        "tgz",
        "bz2",
        "xz",
        "lz",
        "lzma",
        "zst",
        "7z",
        "rar",
        "jar",
        "war",
        "ear",
        "whl",
        "egg",
        "apk",
        "aab",
        "ipa",
        "deb",
        "rpm",
        "dmg",
        "iso",
        "msi",
        "cab",
        "ttf",
        "otf",
        "woff",
        "woff2",
        "eot",
        "pyc",
        "pyo",
        "pyd",
        "so",
        "o",
        "a",
        "obj",
        "lib",
        "dll",
        "dylib",
        "exe",
        "class",
        "wasm",
        "bin",
        "elc",
        "beam",
        "db",
        "sqlite",
        "sqlite3",
        "db3",
        "lance",
        "parquet",
        "arrow",
        "feather",
        "avro",
        "orc",
        "npy",
        "npz",
        "pkl",
        "pickle",
        "joblib",
        "h5",
        "hdf5",
        "mat",
        "onnx",
        "pt",
        "pth",
        "safetensors",
        "ckpt",
        "tflite",
        "gguf",
        "pb",
        "mp3",
        "mp4",
        "m4a",
        "m4v",
        "wav",
        "ogg",
        "oga",
        "flac",
        "aac",
        "mov",
        "avi",
        "mkv",
        "webm",
        "wmv",
        "flv",
        "swf",
        "pdf",
        "doc",
        "docx",
        "xls",
        "xlsx",
        "ppt",
        "pptx",
        "odt",
        "ods",
        "odp",
    ]
)
_BINARY_NAMES = frozenset({".DS_Store", ".coverage"})


# -- Contextware's own files ------------------------------------------------------------------------
# What Contextware writes into a project is never its code: the team file and anything else under
# `.contextware/` (a folder of that name anywhere), the skill and host settings an install writes
# (project-relative, at the root), the Gemini CLI extension it links when the project is the home dir.
OWN_DIR = ".contextware"
_OWN_FILES = frozenset({".gemini/settings.json", ".claude/settings.json", ".claude/settings.local.json", ".mcp.json"})
_OWN_TREES = (".gemini/skills/contextware", ".claude/skills/contextware", ".gemini/extensions/contextware")


def own_file(rel: str, is_dir: bool = False) -> bool:
    """Whether a project-relative POSIX path is one of Contextware's own files or folders."""
    if rel.rpartition("/")[2] == OWN_DIR and is_dir:
        return True
    if not is_dir and rel in _OWN_FILES:
        return True
    return any(rel == tree or rel.startswith(tree + "/") for tree in _OWN_TREES)


# Git's own settings files: they say how to treat other files, and are not source themselves.
_GIT_FILES = frozenset({".gitattributes"})


def file_reason(name: str) -> str | None:
    """The built-in exclusion of a file, judged by its name alone."""
    lower = name.lower()
    if name in _GIT_FILES:
        return "vcs"
    if name in _LOCK_FILES or lower.endswith(".lock"):
        return "lock_file"
    if lower.endswith(_MINIFIED):
        return "minified"
    ext = lower.rpartition(".")[2] if "." in lower else ""
    if ext in _BINARY_EXT or name in _BINARY_NAMES:
        return "binary"
    return None


def looks_like_env(abs_dir: str, name: str) -> bool:
    """A virtualenv or conda env under any name (one or two stats per folder)."""
    markers = _ENV_MARKERS + _OLD_ENV_MARKERS if name == "env" else _ENV_MARKERS
    return any(os.path.exists(os.path.join(abs_dir, m)) for m in markers)


# -- secret-bearing files ---------------------------------------------------------------------------
# Files that hold credentials by their usual names; never read, summarised or sent anywhere.  A pattern
# without "/" matches a file name, one with "/" the path's last components (``.aws/credentials``
# anywhere).  Case-insensitive.  Config: ``secret_files`` adds patterns, ``secret_files_allowed``
# indexes matching files anyway (their text still goes through redaction).
SECRET_FILE_PATTERNS: tuple[str, ...] = (
    # environment files
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    # keys and certificates
    "*.pem",
    "*.key",
    "*.crt",
    "*.cer",
    "*.der",
    "*.p12",
    "*.pfx",
    "*.p8",
    "*.jks",
    "*.keystore",
    "*.ppk",
    "*.asc",
    "*.kdbx",
    # SSH keys
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*_rsa",
    "*_dsa",
    "*_ecdsa",
    "*_ed25519",
    "deploy_key*",
    ".ssh/*",
    # login and package-manager credentials
    ".netrc",
    "_netrc",
    ".pgpass",
    ".my.cnf",
    ".htpasswd",
    ".git-credentials",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".gem/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".docker/config.json",
    ".dockercfg",
    ".composer/auth.json",
    ".vault-token",
    ".s3cfg",
    ".passwd-s3fs",
    "rclone.conf",
    "gh/hosts.yml",
    ".config/hub",
    # cloud credentials
    ".aws/credentials",
    ".aws/config",
    ".azure/*",
    "gcloud/*",
    "application_default_credentials.json",
    "client_secret*.json",
    "service-account*.json",
    "service_account*.json",
    "*firebase-adminsdk*.json",
    ".boto",
    "credentials.json",
    "secrets.json",
    "secrets.yml",
    "secrets.yaml",
    # Terraform variables and state
    "*.tfvars",
    "*.tfvars.json",
    "*.tfstate",
    "*.tfstate.*",
    ".terraformrc",
    "terraform.rc",
    # Kubernetes
    "kubeconfig",
    "kubeconfig.*",
    "*.kubeconfig",
    ".kube/config",
)
# A file whose last extension says it documents a setting (`.env.example`) holds no secret.
_DOC_SUFFIXES = frozenset({"example", "sample", "template", "tmpl", "dist", "defaults", "schema"})


# A name can hold a secret only with a long token in it or a secret-sounding word: the shapes run
# on those names alone, so listing a large project stays cheap.
_NAME_HINT = re.compile(r"[A-Za-z0-9_\-]{20,}|pass|secret|token|pwd", re.IGNORECASE)


def secret_in_name(rel: str) -> bool:
    """Whether a project-relative path holds a secret by its shape (``redact``, shapes only)."""
    from contextware.core.text import plain_text

    if not _NAME_HINT.search(plain_text(rel)):  # a token split by an invisible character counts too
        return False
    from contextware.core.redact import redact

    return bool(redact(rel, library=False)[1])


class SecretFiles:
    """Which project-relative paths are secret-bearing files (``SECRET_FILE_PATTERNS`` plus config).

    Every listed file is asked, so the patterns are compiled into one regular expression per number
    of path components they span (a loop over 65 globs per file tripled the cost of listing)."""

    def __init__(self, extra: Iterable[str] = (), allowed: Iterable[str] = ()) -> None:
        self._patterns = _Globs((*SECRET_FILE_PATTERNS, *extra))
        self._allowed = _Globs(allowed)

    def __call__(self, rel: str) -> bool:
        if secret_in_name(rel):
            return True  # a token in a file's name: the name itself would carry it (into the index, to Gemini)
        lower = rel.lower()
        if lower.rpartition(".")[2] in _DOC_SUFFIXES and "." in lower.rpartition("/")[2].lstrip("."):
            return False
        parts = lower.split("/")
        return self._patterns.match(parts) and not self._allowed.match(parts)


class _Globs:
    """Case-insensitive globs over a path's last components: ``*.pem`` matches a file name,
    ``.aws/credentials`` the last two components, anywhere in the project."""

    def __init__(self, patterns: Iterable[str]) -> None:
        by_length: dict[int, list[str]] = {}
        for pattern in patterns:
            components = [c for c in pattern.strip().lower().strip("/").split("/") if c]
            if components:
                by_length.setdefault(len(components), []).append(fnmatch.translate("/".join(components)))
        self._by_length = {n: re.compile("|".join(f"(?:{rx})" for rx in rxs)) for n, rxs in by_length.items()}

    def match(self, parts: list[str]) -> bool:
        # A "*" could cross a "/" only if the tail had more separators than the pattern: it has exactly as many.
        return any(len(parts) >= n and rx.match("/".join(parts[-n:])) for n, rx in self._by_length.items())
