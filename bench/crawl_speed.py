"""Crawl speed of the code index on the standard-library corpus (bench/stdlib_corpus.py): the first
crawl, a re-crawl with nothing changed, and a re-crawl after the content of 5 files changed.

    uv run bench/crawl_speed.py [--runs 3] [--mode both|in-process|subprocess]

Each run copies the corpus into a new temporary project (``CONTEXTWARE_HOME`` in the temp dir too)
and times, with the local (tree-sitter) summariser:
  (a) the first crawl,
  (b) a re-crawl with no change (target: at most 5% of (a)),
  (c) a re-crawl after appending a function to 5 files.
"in-process" calls ``code_index.crawl(project, summarizer="local")`` (the embedding model stays
loaded after the first run, as in a long-lived process); "subprocess" runs ``uv run --no-sync
scripts/crawl_project.py --summarizer local`` in the corpus directory, as an agent or hook would,
so every step pays interpreter start, imports and model load.  Prints medians in seconds, the ratio
(b)/(a), and the counts the crawl returned on the last run.

    uv run bench/crawl_speed.py --chunks-cost [--runs 3]

compares instead the first in-process crawl with definition chunks against the same crawl with
chunking switched off (``codeindex.chunks.file_chunks`` answering none: no chunk extraction, rows or
embeddings), the two run alternately in one process so that both see the same machine load; it
prints CPU seconds (all threads) and wall seconds of each, and their ratios (target: at most 2x).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from code_quality import counts_only  # noqa: E402
from stdlib_corpus import build_corpus  # noqa: E402

SCRIPT = REPO / "scripts" / "crawl_project.py"
STEPS = ("first", "unchanged", "5_changed")
TOUCHED = 5
_ENV_OVERRIDES = ("CONTEXTWARE_PROJECT_ROOT", "CONTEXTWARE_DATA_DIR", "CONTEXTWARE_DB_URI")


def touch_files(root: Path, files: list[str], run: int, n: int = TOUCHED) -> list[str]:
    """Change the content of ``n`` files spread evenly over the sorted corpus (append a function)."""
    chosen = [files[i * len(files) // n] for i in range(n)]
    for i, rel in enumerate(chosen):
        with open(root / rel, "a", encoding="utf-8") as fh:
            fh.write(
                f"\n\ndef _crawl_speed_touched_{run}_{i}():\n"
                f'    """Added by bench/crawl_speed.py to change this file."""\n    return {i}\n'
            )
    return chosen


def _new_corpus(tmp: Path) -> tuple[Path, list[str]]:
    root = tmp / "corpus"
    files = build_corpus(root)
    return root, files


def run_in_process(tmp: Path, run: int) -> tuple[dict, dict]:
    try:
        from contextware.codeindex.indexer import crawl
        from contextware.settings import Settings
        from contextware.storage.project import Project
    except ImportError as exc:
        sys.exit(f"crawl_speed: cannot import contextware.codeindex.indexer.crawl ({exc}); the code index is needed.")
    os.environ["CONTEXTWARE_HOME"] = str(tmp / "home")
    root, files = _new_corpus(tmp)
    project = Project.open(root, Settings.from_env(os.environ))
    times, counts = {}, {}
    for step in STEPS:
        if step == "5_changed":
            touch_files(root, files, run)
        t, cpu = time.perf_counter(), time.process_time()
        counts[step] = counts_only(crawl(project, summarizer="local"))
        times[step] = time.perf_counter() - t
        counts[step]["cpu_s"] = round(time.process_time() - cpu, 2)  # all threads: robust to a busy machine
    return times, counts


def run_subprocess(tmp: Path, run: int, prefix: list[str]) -> tuple[dict, dict]:
    root, files = _new_corpus(tmp)
    env = {**os.environ, "CONTEXTWARE_HOME": str(tmp / "home"), "CONTEXTWARE_PROJECT_ROOT": str(root)}
    times, counts = {}, {}
    for step in STEPS:
        if step == "5_changed":
            touch_files(root, files, run)
        t = time.perf_counter()
        proc = subprocess.run(
            [*prefix, str(SCRIPT), "--summarizer", "local"], cwd=root, env=env, capture_output=True, text=True
        )
        times[step] = time.perf_counter() - t
        try:
            out = json.loads(proc.stdout)
        except json.JSONDecodeError:
            out = None
        if proc.returncode != 0 or not out or not out.get("ok", True):
            sys.exit(
                f"crawl_speed: {' '.join(prefix)} scripts/crawl_project.py failed (exit {proc.returncode}):\n"
                f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            )
        counts[step] = counts_only({k: v for k, v in out.items() if k != "ok"})
    return times, counts


def first_crawl_cost(tmp: Path, chunks: bool) -> dict:
    """CPU and wall seconds of one first crawl of a fresh copy of the corpus, with or without chunks."""
    import contextware.codeindex.chunks as chunking
    from contextware.codeindex.indexer import crawl
    from contextware.settings import Settings
    from contextware.storage.project import Project

    os.environ["CONTEXTWARE_HOME"] = str(tmp / "home")
    root, _ = _new_corpus(tmp)
    project = Project.open(root, Settings.from_env(os.environ))
    project.embedder.embed(["warm up"])  # the model loads once per process, not in either timing
    real = chunking.file_chunks
    if not chunks:
        chunking.file_chunks = lambda *a, **k: []  # type: ignore[assignment]
    try:
        t, cpu = time.perf_counter(), time.process_time()
        out = crawl(project, summarizer="local")
        return {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - t, "indexed": out["indexed"]}
    finally:
        chunking.file_chunks = real


def chunks_cost(runs: int) -> None:
    samples: dict[bool, list[dict]] = {True: [], False: []}
    for run in range(runs):
        for chunks in (run % 2 == 0, run % 2 == 1):  # alternate which goes first
            with tempfile.TemporaryDirectory() as tmp:
                samples[chunks].append(first_crawl_cost(Path(tmp), chunks))
            print(f"run {run + 1} chunks={chunks}: {samples[chunks][-1]}", file=sys.stderr)
    med = {c: {k: statistics.median(s[k] for s in v) for k in ("cpu_s", "wall_s")} for c, v in samples.items()}
    n = samples[True][0]["indexed"]
    print(f"first crawl of {n} standard-library files, medians of {runs} runs (in-process, local summaries)")
    print("| crawl | CPU s | wall s |\n|---|---|---|")
    print(f"| without chunks | {med[False]['cpu_s']:.1f} | {med[False]['wall_s']:.1f} |")
    print(f"| with chunks | {med[True]['cpu_s']:.1f} | {med[True]['wall_s']:.1f} |")
    print(
        f"| ratio | {med[True]['cpu_s'] / med[False]['cpu_s']:.2f}x | {med[True]['wall_s'] / med[False]['wall_s']:.2f}x |"
    )


def summarize(samples: list[dict]) -> dict:
    med = {step: round(statistics.median(s[step] for s in samples), 2) for step in STEPS}
    first = statistics.median(s["first"] for s in samples)
    med["ratio_unchanged_to_first"] = round(statistics.median(s["unchanged"] for s in samples) / first, 3)
    med["ratio_5_changed_to_first"] = round(statistics.median(s["5_changed"] for s in samples) / first, 3)
    return med


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mode", default="both", choices=("both", "in-process", "subprocess"))
    parser.add_argument("--chunks-cost", action="store_true", help="first crawl with against without chunks")
    args = parser.parse_args()
    for name in _ENV_OVERRIDES:
        os.environ.pop(name, None)
    if args.chunks_cost:
        chunks_cost(args.runs)
        return

    uv = shutil.which("uv")
    prefix = [uv, "run", "--no-sync", "--project", str(REPO)] if uv else [sys.executable]
    modes = ("in-process", "subprocess") if args.mode == "both" else (args.mode,)
    if "subprocess" in modes and not SCRIPT.exists():
        print(f"note: {SCRIPT.relative_to(REPO)} does not exist; skipping the subprocess mode", file=sys.stderr)
        modes = tuple(m for m in modes if m != "subprocess")

    results, last_counts, n_files = {}, {}, None
    for mode in modes:
        samples = []
        for run in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                tmp = Path(tmp)
                if mode == "in-process":
                    times, counts = run_in_process(tmp, run)
                else:
                    times, counts = run_subprocess(tmp, run, prefix)
                n_files = n_files or sum(1 for p in (tmp / "corpus").rglob("*.py"))
            samples.append(times)
            print(f"{mode} run {run + 1}: " + ", ".join(f"{k} {v:.2f}s" for k, v in times.items()), file=sys.stderr)
        results[mode] = summarize(samples)
        last_counts[mode] = counts

    label = {
        "in-process": 'in-process `crawl(project, summarizer="local")`',
        "subprocess": f"`{'uv run --no-sync' if uv else 'python'} scripts/crawl_project.py --summarizer local`",
    }
    print(
        f"corpus: {n_files} files of the Python {sys.version.split()[0]} standard library; "
        f"medians of {args.runs} runs, seconds"
    )
    print("| path | (a) first crawl | (b) no change | (c) 5 files changed | (b)/(a) | (c)/(a) |")
    print("|---|---|---|---|---|---|")
    for mode, m in results.items():
        print(
            f"| {label[mode]} | {m['first']:.2f} | {m['unchanged']:.2f} | {m['5_changed']:.2f} | "
            f"{m['ratio_unchanged_to_first']:.1%} | {m['ratio_5_changed_to_first']:.1%} |"
        )
    print("crawl counts of the last run: " + json.dumps(last_counts, default=str))


if __name__ == "__main__":
    main()
