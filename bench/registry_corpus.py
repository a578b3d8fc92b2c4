"""Real open-source corpora for the code-search benchmark, fetched with each registry's own client
into a cache directory (never committed): the question sets bench/data/code_eval_<language>.json
name their package, version and which files form the corpus.

    uv run bench/registry_corpus.py python DEST     # copy the corpus of one set into DEST

* ``pypi``: ``pip download --no-deps --no-binary :all: NAME==VERSION`` (the sdist), unpacked;
* ``npm``: ``npm pack NAME@VERSION``, unpacked (its ``package/`` folder);
* ``debian``: ``apt-get install -y PACKAGE`` (needs root and an ``apt-get update`` once), whose
  sources sit under ``source_dir`` (/usr/share/gocode, /usr/share/cargo/registry); the installed
  version must be the set's.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

DATA = Path(__file__).parent / "data"
CACHE = Path(os.environ.get("CONTEXTWARE_BENCH_CACHE", Path.home() / ".cache" / "contextware-bench"))
LANGUAGES = ("python", "javascript", "go", "rust")


def load_set(language: str) -> dict:
    return json.loads((DATA / f"code_eval_{language}.json").read_text(encoding="utf-8"))


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"registry_corpus: {' '.join(cmd)} failed: {(done.stderr or done.stdout).strip()[-400:]}")
    return done.stdout


def _unpack(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")


def source_root(meta: dict) -> Path:
    """The unpacked (or installed) package folder of a set, fetched on first use."""
    name, version, registry = meta["package"], meta["version"], meta["registry"]
    if registry == "debian":
        root = Path(meta["source_dir"])
        status = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True)
        if status.returncode != 0 or not root.is_dir():
            _run(["apt-get", "install", "-y", "-qq", name])
            status = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True)
        if status.stdout.strip() != version:
            print(
                f"warning: {name} is {status.stdout.strip()}, the questions were written for {version}", file=sys.stderr
            )
        return root
    cache = CACHE / registry / f"{name}-{version}"
    marker = cache / ".complete"
    if not marker.exists():
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        if registry == "pypi":
            pip = shutil.which("pip") or shutil.which("pip3")
            if pip is None:
                sys.exit("registry_corpus: pip is needed to fetch the PyPI corpus")
            _run([pip, "download", "--no-deps", "--no-binary", ":all:", "-d", str(cache), f"{name}=={version}"])
        elif registry == "npm":
            _run(["npm", "pack", f"{name}@{version}", "--silent"], cwd=cache)
        else:
            sys.exit(f"registry_corpus: unknown registry {registry!r}")
        archive = next(p for p in cache.iterdir() if p.name.endswith((".tar.gz", ".tgz")))
        _unpack(archive, cache / "src")
        marker.write_text(version)
    src = cache / "src"
    return src / "package" if registry == "npm" else next(p for p in src.iterdir() if p.is_dir())


def _matches(rel: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, p.replace("**/", "")) for p in patterns)


def corpus_files(meta: dict, root: Path) -> list[str]:
    files = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and _matches(rel, meta["include"]) and not _matches(rel, meta.get("exclude", [])):
            files.append(rel)
    return files


def build_corpus(language: str, dest: Path) -> list[str]:
    """Copy the set's corpus files into ``dest`` (relative paths kept); returns them."""
    meta = load_set(language)
    root = source_root(meta)
    files = corpus_files(meta, root)
    for rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, dest / rel)
    return files


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in LANGUAGES:
        sys.exit(f"usage: registry_corpus.py {{{'|'.join(LANGUAGES)}}} DEST")
    copied = build_corpus(sys.argv[1], Path(sys.argv[2]))
    print(json.dumps({"files": len(copied), "dest": sys.argv[2]}))
