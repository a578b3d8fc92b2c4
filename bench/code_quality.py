"""Retrieval quality of the code index, next to a plain BM25 baseline, on five question sets:
``stdlib`` (bench/data/code_eval.json: ~100 questions over a few hundred files of the installed
standard library, bench/stdlib_corpus.py) and one real open-source project per language
(bench/data/code_eval_{python,javascript,go,rust}.json: rich from PyPI, undici from npm, gin and
hyper from Debian's golang-*-dev / librust-*-dev packages, fetched by bench/registry_corpus.py).

    uv run bench/code_quality.py                   # every set, held-out test split
    uv run bench/code_quality.py --set go          # one set
    uv run bench/code_quality.py --tune --keep /tmp/cq   # grid-search codeindex.search.WEIGHTS on the tune splits
    uv run bench/code_quality.py --split all       # or tune, or all (rows for tune, test and all)
    uv run bench/code_quality.py --misses          # also list the questions our method misses
    uv run bench/code_quality.py --keep /tmp/cq    # build + crawl once into /tmp/cq/<set>, reuse it after
    uv run bench/code_quality.py --baseline-only   # BM25 only (no contextware import, no crawl)
    uv run bench/code_quality.py --latency         # also warm recall latency against the file-only ranking
                                                   # (in a one-shot process and as the resident service)

The registry sets need pip, npm and (as root, after ``apt-get update``) apt-get; their sources are
cached under ~/.cache/contextware-bench (CONTEXTWARE_BENCH_CACHE), the Debian ones installed.

"ours": the corpus is copied into a temporary project (``CONTEXTWARE_HOME`` points into the temp dir
too, so the global registry is untouched), crawled with ``code_index.crawl(project,
summarizer="local")`` (one row per file: summary + symbols, and its definition chunks), and every
question goes through the real ``recall(project, q, scope="code", limit=10)``.

"bm25": Okapi BM25 (k1=1.2, b=0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5))) over the WHOLE text of
each file (contents only, not the path), implemented here in pure Python.  Tokenizer: runs of
letters/digits, split further at ``_`` and camelCase boundaries (``HTTPRedirectHandler`` -> http,
redirect, handler; ``parse_qsl`` -> parse, qsl), lowercased; no stemming, no stop words.

recall@k: the share of questions with an answer file among the first k results; MRR: the mean of
1/rank of the first answer file among the first 10 (0 when none).  The question sets
were written by hand with paraphrased behaviour rather than identifiers, before any tuning; in the
stdlib set ``kind`` says whether a question is about what the file is for ("summary"), one behaviour inside a function ("detail"), or
names a concept with a close word / guessed identifier ("concept").  Calibrate on ``tune``, report
``test``.

Reuse from a tuning loop (no re-crawl):

    from bench.code_quality import open_corpus, questions, evaluate, rank_ours
    project, files, _ = open_corpus(Path("/tmp/cq/go"), name="go")   # builds + crawls only the first time
    qs = questions("tune", "go")
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

import registry_corpus  # noqa: E402
from stdlib_corpus import build_corpus, select  # noqa: E402

DATA = Path(__file__).parent / "data" / "code_eval.json"
SETS = ("stdlib", *registry_corpus.LANGUAGES)
LIMIT = 5
DEPTH = 10  # ranks looked at for MRR
MARKER = "corpus.json"  # in a --keep workspace: the corpus file list, written once the crawl finished
# Settings of the surrounding shell that would point the bench at someone else's data.
_ENV_OVERRIDES = ("CONTEXTWARE_PROJECT_ROOT", "CONTEXTWARE_DATA_DIR", "CONTEXTWARE_DB_URI")


# ----------------------------------------------------------------------------------------- data


def questions(split: str = "all", name: str = "stdlib") -> list[dict]:
    if name == "stdlib":
        rows = json.loads(DATA.read_text(encoding="utf-8"))["questions"]
    else:
        rows = registry_corpus.load_set(name)["questions"]
    return rows if split == "all" else [r for r in rows if r["split"] == split]


def describe(name: str) -> str:
    if name == "stdlib":
        return f"Python {sys.version.split()[0]} standard library"
    meta = registry_corpus.load_set(name)
    return f"{meta['package']} {meta['version']} ({meta['registry']})"


def _build(name: str, root: Path) -> list[str]:
    return build_corpus(root) if name == "stdlib" else registry_corpus.build_corpus(name, root)


def _selection(name: str) -> object:
    return select() if name == "stdlib" else registry_corpus.load_set(name)["version"]


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


def open_corpus(workspace: Path, *, crawl_again: bool = False, summarizer: str = "local", name: str = "stdlib"):
    """A crawled corpus project of set ``name`` in ``workspace`` (``corpus/`` = project root,
    ``home/`` = CONTEXTWARE_HOME).  Built and crawled the first time; later calls reuse it as it is
    unless ``crawl_again`` (an incremental crawl).  Returns (project, files, crawl stats or None)."""
    crawl, Project, _ = _import_api()
    workspace = Path(workspace).resolve()
    root, marker = workspace / "corpus", workspace / MARKER
    _isolate(workspace / "home")
    done = json.loads(marker.read_text()) if marker.exists() else None
    if done and (done.get("python") != sys.version.split()[0] or done.get("selection") != _selection(name)):
        sys.exit(
            f"code_quality: {workspace} holds another corpus (Python {done.get('python')}, or an older "
            "selection). Delete it or use another --keep directory."
        )
    if done is None:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        files = _build(name, root)
    else:
        files = done["files"]
    from contextware.settings import Settings

    project = Project.open(root, Settings.from_env(os.environ))
    stats = None
    if done is None or crawl_again:
        t0 = time.perf_counter()
        stats = crawl(project, summarizer=summarizer)
        stats = {"seconds": round(time.perf_counter() - t0, 1), **counts_only(stats)}
        marker.write_text(
            json.dumps(
                {"python": sys.version.split()[0], "selection": _selection(name), "files": files, "crawl": stats}
            )
        )
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


def rank_ours(project, query: str, limit: int = DEPTH) -> list[str]:
    from contextware.memory.recall import recall

    results = recall(project, query, scope="code", limit=limit)["results"]
    return [_rel(r["file_path"], project.root) for r in results]


def features(project, qs: list[dict]) -> dict[str, list[dict]]:
    """Per question, the candidate files with the features ``codeindex.search.fuse_code`` weighs
    (for --tune: re-scoring them with other weights needs no new query)."""
    from contextware.codeindex.search import code_candidates
    from contextware.memory.recall import query_vectors

    out = {}
    for q in qs:
        qvec, plain = query_vectors(project.embedder, q["q"], q["q"])
        hits = code_candidates(project, q["q"], qvec, plain, None, 30)
        out[q["q"]] = [{"path": h["row"]["file_path"], **h["features"]} for h in hits]
    return out


def rerank(cands: list[dict], weights: dict) -> list[str]:
    from contextware.codeindex.search import fuse_code

    return [c["path"] for c in sorted(cands, key=lambda c: -fuse_code(c, weights))][:DEPTH]


# ----------------------------------------------------------------------------------------- scoring


def evaluate(rank: Callable[[str], list[str]], qs: list[dict]) -> dict:
    hits1 = hits5 = 0
    rr = 0.0
    misses = []
    for q in qs:
        order = rank(q["q"])[:DEPTH]
        answers = set(q["answers"])
        hits1 += bool(answers & set(order[:1]))
        hits5 += bool(answers & set(order[:LIMIT]))
        rr += next((1 / (i + 1) for i, f in enumerate(order) if f in answers), 0.0)
        if not answers & set(order[:1]):
            misses.append(
                {
                    "q": q["q"],
                    "answers": q["answers"],
                    "got": order[:LIMIT],
                    "at5": bool(answers & set(order[:LIMIT])),
                    "kind": q.get("kind"),
                    "split": q["split"],
                }
            )
    n = len(qs)
    return {
        "recall@1": round(hits1 / n, 3) if n else None,
        "recall@5": round(hits5 / n, 3) if n else None,
        "mrr": round(rr / n, 3) if n else None,
        "n": n,
        "misses": misses,
    }


def table(rows: list[tuple[str, str, str, dict, dict | None]]) -> str:
    """Markdown: per set and split, ours and BM25 side by side."""
    head = "| set | split | n | ours R@1 | ours R@5 | ours MRR | BM25 R@1 | BM25 R@5 | BM25 MRR |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, split, _, bm25, ours in rows:
        o = f"{ours['recall@1']:.3f} | {ours['recall@5']:.3f} | {ours['mrr']:.3f}" if ours else "- | - | -"
        lines.append(
            f"| {name} | {split} | {bm25['n']} | {o} | {bm25['recall@1']:.3f} | {bm25['recall@5']:.3f} | {bm25['mrr']:.3f} |"
        )
    return "\n".join(lines)


def latency(project, qs: list[dict], rounds: int = 3) -> dict:
    """Warm recall latency with this ranking, and what it would be with the file-only ranking it
    replaced (``recall.search_table`` over the files table): both candidate searches are timed
    interleaved on the same questions, the difference applied to the full recall's median."""
    import statistics

    from contextware.codeindex.search import code_candidates
    from contextware.memory.recall import query_vectors, recall, search_table
    from contextware.storage.schemas import CODE_TABLE

    full, new, old = [], [], []
    for _ in range(rounds):
        for q in qs:
            t0 = time.perf_counter()
            recall(project, q["q"], scope="code", limit=LIMIT)
            full.append(time.perf_counter() - t0)
            qvec, plain = query_vectors(project.embedder, q["q"], q["q"])
            t0 = time.perf_counter()
            code_candidates(project, q["q"], qvec, plain, None, 30)
            new.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            search_table(project, CODE_TABLE, q["q"], qvec, None, 30, plain)
            old.append(time.perf_counter() - t0)
    ms = {k: statistics.median(v) * 1000 for k, v in (("full", full), ("new", new), ("old", old))}
    before = ms["full"] - ms["new"] + ms["old"]
    return {
        "recall_ms": round(ms["full"], 1),
        "file_only_recall_ms": round(before, 1),
        "ratio": round(ms["full"] / before, 3),
    }


def _pooled(ms: list) -> dict | None:
    """Metrics of several sets together, each question counted once."""
    if any(m is None for m in ms):
        return None
    n = sum(m["n"] for m in ms)
    return {k: sum(m[k] * m["n"] for m in ms) / n for k in ("recall@1", "recall@5", "mrr")} | {"n": n}


def _tune(projects: dict, tune_qs: dict[str, list[dict]]) -> None:
    """Grid search of codeindex.search.WEIGHTS on the tune splits (pooled, each set weighted alike)."""
    import itertools

    feats = {name: features(projects[name], qs) for name, qs in tune_qs.items()}
    grid = {
        "file_sim": [0.6],  # the scale: only the ratios of the weights matter
        "chunk_sim": [0.4, 0.6, 0.8],
        "file_bm25": [1.0, 1.5, 2.0],
        "file_half": [8.0, 16.0],
        "chunk_sim2": [0.0, 0.1, 0.2],
        "name": [0.0, 0.1, 0.2, 0.3],
        "test": [0.0, 0.1, 0.3],
    }  # chunk_bm25 stays 0: recall no longer runs the definitions' BM25 search (see codeindex.search)
    scored = []
    for values in itertools.product(*grid.values()):
        w = dict(zip(grid, values, strict=True))
        per_set = [evaluate(lambda q, n=name, w=w: rerank(feats[n][q], w), qs) for name, qs in tune_qs.items()]
        r1 = sum(m["recall@1"] for m in per_set) / len(per_set)
        r5 = sum(m["recall@5"] for m in per_set) / len(per_set)
        mrr = sum(m["mrr"] for m in per_set) / len(per_set)
        scored.append((round(mrr, 4), round(r1, 4), round(r5, 4), w))
    scored.sort(key=lambda t: (-t[0], -t[1], -t[2]))
    for mrr, r1, r5, w in scored[:10]:
        print(f"tune mean MRR {mrr} R@1 {r1} R@5 {r5}  {json.dumps(w)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="all", choices=("all", *SETS), help="question set (default: every set)")
    parser.add_argument("--split", default="test", choices=("test", "tune", "all"), help="split to report")
    parser.add_argument("--misses", action="store_true", help="list the questions our method misses at rank 1")
    parser.add_argument(
        "--keep",
        metavar="DIR",
        type=Path,
        help="workspace to build+crawl the corpora into once and reuse on later runs",
    )
    parser.add_argument("--recrawl", action="store_true", help="with --keep: crawl the kept corpora again")
    parser.add_argument("--baseline-only", action="store_true", help="BM25 only; no contextware needed")
    parser.add_argument("--tune", action="store_true", help="grid-search the fusion weights on the tune splits")
    parser.add_argument("--latency", action="store_true", help="warm recall latency against the file-only ranking")
    args = parser.parse_args()

    names = SETS if args.set == "all" else (args.set,)
    splits = ("tune", "test", "all") if args.split == "all" else (args.split,)
    tmp = tempfile.TemporaryDirectory() if args.keep is None else None
    workspace = Path(tmp.name) if tmp else args.keep
    rows, missed, projects = [], [], {}
    try:
        for name in names:
            all_qs = questions("all", name)
            if args.baseline_only:
                root = workspace / name / "corpus"
                shutil.rmtree(root, ignore_errors=True)
                root.mkdir(parents=True)
                files, project, stats = _build(name, root), None, None
            else:
                project, files, stats = open_corpus(workspace / name, crawl_again=args.recrawl, name=name)
                root = project.root
                projects[name] = project
            missing = sorted({a for q in all_qs for a in q["answers"]} - set(files))
            if missing:
                print(
                    f"warning: {name}: answer files not in the corpus (counted as misses): {missing}", file=sys.stderr
                )
            bm25 = bm25_index(root, files)
            ranked: dict[str, dict[str, list[str]]] = {"bm25": {q["q"]: bm25.search(q["q"], DEPTH) for q in all_qs}}
            per_query_ms = None
            if project is not None:
                rank_ours(project, "warm up")
                t0 = time.perf_counter()
                ranked["ours"] = {q["q"]: rank_ours(project, q["q"]) for q in all_qs}
                per_query_ms = round((time.perf_counter() - t0) * 1000 / max(1, len(all_qs)), 1)
            print(
                f"{name}: {len(files)} files of {describe(name)}; questions {len(all_qs)} "
                f"(tune {len(questions('tune', name))}, test {len(questions('test', name))})"
                + (f"; recall {per_query_ms} ms/query" if per_query_ms is not None else "")
                + (f"; crawl {json.dumps(stats)}" if stats else "")
            )
            for split in splits:
                qs = [q for q in all_qs if split == "all" or q["split"] == split]
                res = {m: evaluate(lambda q, m=m, r=ranked: r[m][q], qs) for m in ranked}
                rows.append((name, split, len(qs), res["bm25"], res.get("ours")))
                if args.misses:
                    missed.append((name, split, res.get("ours") or res["bm25"]))
        if args.latency:
            from contextware.storage.table_search import drop_snapshots, keep_snapshots, load_snapshots

            for name, project in projects.items():
                print(
                    f"latency {name} (one-shot process: LanceDB): {json.dumps(latency(project, questions('all', name)))}"
                )
                keep_snapshots()  # as the resident service searches: the tables' in-memory snapshots
                load_snapshots(project.db)
                print(
                    f"latency {name} (resident service: snapshots): {json.dumps(latency(project, questions('all', name)))}"
                )
                drop_snapshots()
        if args.tune and projects:
            _tune(projects, {n: questions("tune", n) for n in projects})
    finally:
        if tmp is not None:
            tmp.cleanup()
    for split in splits:  # overall: each question counts once
        part = [r for r in rows if r[1] == split]
        if len(part) > 1:
            rows.append(("overall", split, 0, _pooled([r[3] for r in part]), _pooled([r[4] for r in part])))
    print(table(rows))
    for name, split, res in missed:
        print(f"\nmisses at rank 1, {name} {split} ({len(res['misses'])}; '@5' = found in the top 5):")
        for miss in res["misses"]:
            print(
                f"- [{'@5' if miss['at5'] else '  '}] {miss['q']}\n    want {miss['answers']}\n    got  {miss['got']}"
            )


if __name__ == "__main__":
    main()
