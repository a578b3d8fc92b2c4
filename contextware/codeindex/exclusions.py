"""Built-in exclusions of the code index: folders and files that are never a project's own source
(dependencies, virtualenvs, caches, build output, lock files, minified and binary files, secrets),
judged by name alone so a walk can prune without reading anything."""

from __future__ import annotations

import os
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
# Secrets never belong in an index that may be shared; `.env.example` and friends document settings.
_SECRET_NAMES = frozenset({"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".netrc", ".pgpass", ".htpasswd"})
_SECRET_EXT = frozenset({"pem", "key", "p12", "pfx", "jks", "keystore"})
_ENV_DOC_SUFFIXES = frozenset({"example", "sample", "template", "dist", "defaults", "schema"})


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
    if name in _SECRET_NAMES or ext in _SECRET_EXT:
        return "secrets"
    if lower == ".env" or (lower.startswith(".env.") and ext not in _ENV_DOC_SUFFIXES):
        return "secrets"
    if ext in _BINARY_EXT or name in _BINARY_NAMES:
        return "binary"
    return None


def looks_like_env(abs_dir: str, name: str) -> bool:
    """A virtualenv or conda env under any name (one or two stats per folder)."""
    markers = _ENV_MARKERS + _OLD_ENV_MARKERS if name == "env" else _ENV_MARKERS
    return any(os.path.exists(os.path.join(abs_dir, m)) for m in markers)
