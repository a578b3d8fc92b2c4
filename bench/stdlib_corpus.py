"""A fixed, realistic code corpus for the code-index benchmarks: a few hundred ``.py`` files of the
installed Python standard library, copied with their relative paths (``json/decoder.py``,
``http/cookies.py``, ...).

    uv run bench/stdlib_corpus.py DEST      # copy the corpus into DEST and print what was copied

The selection is a rule, not a list, so it is stable on one Python version and nearly the same on
3.10-3.13: every top-level module except the "dead batteries" removed in 3.12/3.13 (so the corpus
does not shrink by twenty files between versions) and generated ``_sysconfigdata*`` files, plus every
module of the packages in ``PACKAGES`` without their test suites.  Files a version lacks (``tomllib``
is not selected; ``re`` is one module on 3.10 and a package later) are simply absent.  On 3.11 it
is 361 files.
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

PACKAGES = (
    "asyncio",
    "collections",
    "concurrent",
    "ctypes",
    "curses",
    "dbm",
    "email",
    "html",
    "http",
    "importlib",
    "json",
    "logging",
    "multiprocessing",
    "re",
    "pathlib",
    "sqlite3",
    "sysconfig",
    "unittest",
    "urllib",
    "wsgiref",
    "xml",
    "xmlrpc",
    "zipfile",
    "zoneinfo",
)  # not "venv": the crawler skips any folder of that name as a virtualenv
# Top-level modules removed in 3.12 (PEP 594, distutils era) or 3.13, and files that are not real
# library code (frozen-module demos, per-build generated config).
EXCLUDE_MODULES = {
    "aifc",
    "asynchat",
    "asyncore",
    "binhex",
    "cgi",
    "cgitb",
    "chunk",
    "crypt",
    "imghdr",
    "imp",
    "mailcap",
    "nntplib",
    "pipes",
    "smtpd",
    "sndhdr",
    "sunau",
    "telnetlib",
    "uu",
    "xdrlib",
    "__hello__",
    "__phello__.foo",
}
SKIP_DIRS = {"test", "tests", "idle_test", "__pycache__", "site-packages", "dist-packages"}


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def select(stdlib: Path | None = None) -> list[str]:
    """The relative POSIX paths of the corpus, sorted."""
    stdlib = stdlib or stdlib_dir()
    chosen = [
        p.name for p in stdlib.glob("*.py") if p.stem not in EXCLUDE_MODULES and not p.stem.startswith("_sysconfigdata")
    ]
    for package in PACKAGES:
        root = stdlib / package
        if not root.is_dir():
            continue
        for path in root.rglob("*.py"):
            rel = path.relative_to(stdlib)
            if SKIP_DIRS.isdisjoint(rel.parts[:-1]):
                chosen.append(rel.as_posix())
    return sorted(set(chosen))


def build_corpus(dest: Path) -> list[str]:
    """Copy the selection into ``dest`` (created if needed) keeping relative paths; return those paths."""
    stdlib = stdlib_dir()
    dest = Path(dest)
    files = select(stdlib)
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(stdlib / rel, target)
    return files


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} DEST")
    files = build_corpus(Path(sys.argv[1]))
    print("\n".join(files))
    print(f"{len(files)} files from {stdlib_dir()}", file=sys.stderr)


if __name__ == "__main__":
    main()
