"""Retrieval quality of the code index on bench/data/code_eval.json: ~100 questions a coding agent
asks about an unfamiliar codebase, over a few hundred files of the installed standard library
(bench/stdlib_corpus.py), next to a plain BM25 baseline.

    uv run bench/code_quality.py                   # held-out test split
    uv run bench/code_quality.py --split all       # or tune, or all (rows for tune, test and all)
    uv run bench/code_quality.py --misses          # also list the questions our method misses
    uv run bench/code_quality.py --keep /tmp/cq    # build + crawl once into /tmp/cq, reuse it after
    uv run bench/code_quality.py --baseline-only   # BM25 only (no contextware import, no crawl)

"ours": the corpus is copied into a temporary project (``CONTEXTWARE_HOME`` points into the temp dir
too, so the global registry is untouched), crawled with ``code_index.crawl(project,
summarizer="local")`` (one row per file: summary + symbols), and every question goes through the
real ``recall(project, q, scope="code", limit=5)``.

"bm25": Okapi BM25 (k1=1.2, b=0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5))) over the WHOLE text of
each file (contents only, not the path), implemented here in pure Python.  Tokenizer: runs of
letters/digits, split further at ``_`` and camelCase boundaries (``HTTPRedirectHandler`` -> http,
redirect, handler; ``parse_qsl`` -> parse, qsl), lowercased; no stemming, no stop words.

recall@k: the share of questions with an answer file among the first k results.  The question set
was written by hand with paraphrased behaviour rather than identifiers; ``kind`` says whether a
question is about what the file is for ("summary"), one behaviour inside a function ("detail"), or
names a concept with a close word / guessed identifier ("concept").  Calibrate on ``tune``, report
``test``.

Reuse from a tuning loop (no re-crawl):

    from bench.code_quality import open_corpus, questions, evaluate, rank_ours
    project, files = open_corpus(Path("/tmp/cq"))              # builds + crawls only the first time
    qs = questions("tune")
    print(evaluate(lambda q: rank_ours(project, q), qs))
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from stdlib_corpus import build_corpus, select  # noqa: E402

DATA = Path(__file__).parent / "data" / "code_eval.json"
LIMIT = 5
MARKER = "corpus.json"  # in a --keep workspace: the corpus file list, written once the crawl finished
# Settings of the surrounding shell that would point the bench at someone else's data.
_ENV_OVERRIDES = ("CONTEXTWARE_PROJECT_ROOT", "CONTEXTWARE_DATA_DIR", "CONTEXTWARE_DB_URI")


# ----------------------------------------------------------------------------------------- data


def questions(split: str = "all") -> list[dict]:
    rows = json.loads(DATA.read_text(encoding="utf-8"))["questions"]
    return rows if split == "all" else [r for r in rows if r["split"] == split]


# ----------------------------------------------------------------------------------------- BM25

_WORD = re.compile(r"[A-Za-z0-9]+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def tokenize(text: str) -> list[str]:
    """Letters/digit runs (so ``_`` and punctuation split), then camelCase parts, lowercased."""
    return [p.lower() for w in _WORD.findall(text) for p in _PART.findall(w)]


class BM25:
    def __init__(self, docs: dict[str, str], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.tf = {name: Counter(tokenize(text)) for name, text in docs.items()}
        self.length = {name: sum(tf.values()) for name, tf in self.tf.items()}
        self.avg = sum(self.length.values()) / max(1, len(self.length))
        df = Counter(t for tf in self.tf.values() for t in tf)
        n = len(self.tf)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}

    def search(self, query: str, limit: int = LIMIT) -> list[str]:
        terms = [t for t in set(tokenize(query)) if t in self.idf]
        scores = {}
        for name, tf in self.tf.items():
            norm = self.k1 * (1 - self.b + self.b * self.length[name] / self.avg)
            s = sum(self.idf[t] * tf[t] * (self.k1 + 1) / (tf[t] + norm) for t in terms if t in tf)
            if s > 0:
                scores[name] = s
        return sorted(scores, key=lambda k: (-scores[k], k))[:limit]


def bm25_index(root: Path, files: Iterable[str]) -> BM25:
    return BM25({f: (root / f).read_text(encoding="utf-8", errors="replace") for f in files})


# ----------------------------------------------------------------------------------------- ours


def _import_api():
    try:
        from contextware.codeindex.indexer import crawl
        from contextware.memory.recall import recall
        from contextware.storage.project import Project
    except ImportError as exc:  # the code index is not there (yet), or is broken
        sys.exit(
            f"code_quality: cannot import the code-index API ({exc}). It needs "
            "contextware.codeindex.indexer.crawl(project, summarizer=...) and recall(..., scope='code'); "
            "use --baseline-only for the BM25 numbers alone."
        )
    return crawl, Project, recall


def _isolate(home: Path) -> None:
    os.environ["CONTEXTWARE_HOME"] = str(home)
    for name in _ENV_OVERRIDES:
        os.environ.pop(name, None)


def open_corpus(workspace: Path, *, crawl_again: bool = False, summarizer: str = "local"):
    """A crawled corpus project in ``workspace`` (``corpus/`` = project root, ``home/`` =
    CONTEXTWARE_HOME).  Built and crawled the first time; later calls reuse it as it is unless
    ``crawl_again`` (an incremental crawl).  Returns (project, files, crawl stats or None)."""
    crawl, Project, _ = _import_api()
    workspace = Path(workspace).resolve()
    root, marker = workspace / "corpus", workspace / MARKER
    _isolate(workspace / "home")
    done = json.loads(marker.read_text()) if marker.exists() else None
    if done and (done.get("python") != sys.version.split()[0] or done.get("files") != select()):
        sys.exit(
            f"code_quality: {workspace} holds another corpus (Python {done.get('python')}, or an older "
            f"selection); this is {sys.version.split()[0]}. Delete it or use another --keep directory."
        )
    if done is None:
        shutil.rmtree(root, ignore_errors=True)
        files = build_corpus(root)
    else:
        files = done["files"]
    project = Project.open(root)
    stats = None
    if done is None or crawl_again:
        t0 = time.perf_counter()
        stats = crawl(project, summarizer=summarizer)
        stats = {"seconds": round(time.perf_counter() - t0, 1), **counts_only(stats)}
        marker.write_text(json.dumps({"python": sys.version.split()[0], "files": files, "crawl": stats}))
    return project, files, stats


def counts_only(stats: dict | None) -> dict:
    """The crawl's counts without its (long) per-file lists."""
    return {k: v for k, v in (stats or {}).items() if not isinstance(v, (list, tuple))}


def _rel(path: str, root: Path) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            return p.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return p.as_posix()
    return p.as_posix().removeprefix("./")


def rank_ours(project, query: str, limit: int = LIMIT) -> list[str]:
    from contextware.memory.recall import recall

    results = recall(project, query, scope="code", limit=limit)["results"]
    return [_rel(r["file_path"], project.root) for r in results]


# ----------------------------------------------------------------------------------------- scoring


def evaluate(rank: Callable[[str], list[str]], qs: list[dict]) -> dict:
    hits1 = hits5 = 0
    misses = []
    for q in qs:
        order = rank(q["q"])[:LIMIT]
        answers = set(q["answers"])
        hits1 += bool(answers & set(order[:1]))
        hits5 += bool(answers & set(order))
        if not answers & set(order[:1]):
            misses.append(
                {
                    "q": q["q"],
                    "answers": q["answers"],
                    "got": order,
                    "at5": bool(answers & set(order)),
                    "kind": q.get("kind"),
                    "split": q["split"],
                }
            )
    n = len(qs)
    return {
        "recall@1": round(hits1 / n, 3) if n else None,
        "recall@5": round(hits5 / n, 3) if n else None,
        "n": n,
        "misses": misses,
    }


def table(rows: list[tuple[str, str, dict]], kind_col: bool = False) -> str:
    """Markdown rows; a group named ``split:kind`` fills the kind column."""
    head = "| method | split |" + (" kind |" if kind_col else "") + " recall@1 | recall@5 | n |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for method, group, m in rows:
        split, _, kind = group.partition(":")
        lines.append(
            f"| {method} | {split} |"
            + (f" {kind or 'all'} |" if kind_col else "")
            + f" {m['recall@1']:.3f} | {m['recall@5']:.3f} | {m['n']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="test", choices=("test", "tune", "all"), help="split to report")
    parser.add_argument("--misses", action="store_true", help="list the questions our method misses at rank 1")
    parser.add_argument(
        "--keep", metavar="DIR", type=Path, help="workspace to build+crawl the corpus into once and reuse on later runs"
    )
    parser.add_argument("--recrawl", action="store_true", help="with --keep: crawl the kept corpus again")
    parser.add_argument("--baseline-only", action="store_true", help="BM25 only; no contextware needed")
    parser.add_argument("--by-kind", action="store_true", help="also break the numbers down by question kind")
    args = parser.parse_args()

    splits = ("tune", "test", "all") if args.split == "all" else (args.split,)
    all_qs = questions("all")
    groups = {s: [q for q in all_qs if s == "all" or q["split"] == s] for s in splits}
    if args.by_kind:
        for s in splits:
            for kind in ("summary", "detail", "concept"):
                groups[f"{s}:{kind}"] = [q for q in groups[s] if q.get("kind") == kind]
    needed = [q for q in all_qs if any(q in g for g in groups.values())]

    tmp = None
    if args.baseline_only:
        tmp = tempfile.TemporaryDirectory()
        root, files = Path(tmp.name), build_corpus(Path(tmp.name))
        project = stats = None
    else:
        workspace = args.keep
        if workspace is None:
            tmp = tempfile.TemporaryDirectory()
            workspace = Path(tmp.name)
        project, files, stats = open_corpus(workspace, crawl_again=args.recrawl)
        root = project.root
    try:
        missing = sorted({a for q in needed for a in q["answers"]} - set(files))
        if missing:
            print(f"warning: answer files not in this Python's corpus (counted as misses): {missing}", file=sys.stderr)
        bm25 = bm25_index(root, files)
        ranked: dict[str, dict[str, list[str]]] = {"bm25": {q["q"]: bm25.search(q["q"]) for q in needed}}
        per_query_ms = None
        if project is not None:
            rank_ours(project, "warm up")
            t0 = time.perf_counter()
            ranked["ours"] = {q["q"]: rank_ours(project, q["q"]) for q in needed}
            per_query_ms = round((time.perf_counter() - t0) * 1000 / max(1, len(needed)), 1)
    finally:
        if tmp is not None:
            tmp.cleanup()

    results = {m: {g: evaluate(lambda q, m=m: ranked[m][q], qs) for g, qs in groups.items() if qs} for m in ranked}
    print(
        f"corpus: {len(files)} files of the Python {sys.version.split()[0]} standard library; "
        f"questions: {len(all_qs)} ({', '.join(f'{s} {len(questions(s))}' for s in ('tune', 'test'))})"
    )
    if stats:
        print(f"crawl (local summariser): {json.dumps(stats)}")
    if per_query_ms is not None:
        print(f"recall per query: {per_query_ms} ms")
    rows = [(m, g, r) for m in ("ours", "bm25") if m in results for g, r in results[m].items()]
    print(table(rows, kind_col=args.by_kind))
    if args.misses:
        method = "ours" if "ours" in results else "bm25"
        for s in splits:
            res = results[method][s]
            print(f"\nmisses at rank 1 of {method}, split {s} ({len(res['misses'])}; '@5' = found in the top 5):")
            for miss in res["misses"]:
                print(
                    f"- [{'@5' if miss['at5'] else '  '}] {miss['q']}\n    want {miss['answers']}\n    got  {miss['got']}"
                )


if __name__ == "__main__":
    main()
