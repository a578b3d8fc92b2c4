"""Retrieval quality of recall on bench/data/memory_eval.json: hybrid recall next to plain vector
search and plain BM25 (the native full-text index alone), the confidence gate on questions whose
answer is not in memory, and supersession (a newer fact that replaced an older one).

    uv run bench/recall_quality.py                # report on the held-out test split
    uv run bench/recall_quality.py --split all    # or tune, or all
    uv run bench/recall_quality.py --tune         # calibrate the constants on the tune split
    uv run bench/recall_quality.py --tune-confidence --token-alignment u3min   # experiment (not used
                                                  # by recall): see TokenAlignment and confidence.py

Every number comes from the real code path: memories are saved with ``memory.save_*`` (so the views
of ``contextware/views.py`` are what is embedded and indexed), candidates come from
``recall.search_table`` with recall's own filters, and hybrid results from ``recall.select`` (the
fusion, floor, margin and ordering that ``recall()`` applies).  The baselines search the plain
question: "vector" ranks by cosine similarity alone, "bm25" by the full-text score alone.

recall@k: the share of answerable questions with an answer among the first k results.
no_answer_empty: the share of unanswerable questions for which nothing is returned (hybrid: the
floor and the confidence gate at recall's default ``recall_min_confidence``; "hybrid_hook": at the
prompt hook's ``hook_min_confidence``; vector: never; bm25: no word of the question is in the index).
supersession_right: questions about a fact that superseded another, answered by the newer fact first
(the older one is never shown).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contextware.memory import confidence as confidence_mod
from contextware.memory import recall as recall_mod
from contextware.memory import records
from contextware.settings import Settings
from contextware.storage.config import DEFAULTS
from contextware.storage.embedded_text import expand_query
from contextware.storage.project import Project

DATA = Path(__file__).parent / "data" / "memory_eval.json"
TABLES = ("facts", "episodes")
LIMIT = 5
CANDIDATES = 30  # recall's default (config recall_candidates, and at least 3 x limit)
RIDGE = 0.3  # L2 on the confidence weights: ~400 training rows, six features; 0.01 let them swing by fold
ALIGN_TOP = 3  # token alignment (--token-alignment) is computed for this many best-scored candidates


class TokenAlignment:
    """BERTScore-style token alignment from the embedding model's own token states (experiment,
    ``--token-alignment``): every content word of the question (stop words and punctuation
    dropped, word pieces averaged) is scored by its best cosine against the tokens of a memory's
    embedded text; the word scores are pooled into one number.  Only the ``ALIGN_TOP``
    best-scored candidates are aligned (what a prompt hook could afford); the others get 0.

    Variants (comma-separated names, each one feature added to the confidence model):
    ``min``/``q25``/``mean``/``idf`` pool the question's words against the candidate itself
    (``idf``: weighted by log inverse document frequency of the word among the memories);
    ``u3min``/``u3q25``/``u3idf`` pool them against the union of the top candidates' tokens, the
    same for every candidate of the question ("is every word found somewhere?")."""

    def __init__(self, embedder, variants: list[str], corpus: list[str]) -> None:
        import numpy as np

        self.np = np
        self.embedder = embedder
        self.variants = variants
        self.cache: dict[str, tuple] = {}
        states = self.states(corpus)
        df: dict[str, int] = {}
        for st in states:
            for w in {w for w, _ in self.words(st)}:
                df[w] = df.get(w, 0) + 1
        self.idf = {w: float(np.log((len(corpus) + 1) / (n + 1)) + 1) for w, n in df.items()}
        self.idf_unseen = float(np.log(len(corpus) + 1) + 1)

    def states(self, texts: list[str]) -> list[tuple]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.embedder.token_states(missing), strict=True))
        return [self.cache[t] for t in texts]

    @staticmethod
    def words(states: tuple) -> list[tuple[str, list[int]]]:
        tokens, word_ids, _ = states
        groups: dict[int, list[int]] = {}
        for i, w in enumerate(word_ids):
            groups.setdefault(w, []).append(i)
        return [("".join(tokens[i].removeprefix("##") for i in idx), idx) for idx in groups.values()]

    def content(self, states: tuple) -> list[tuple[str, list[int]]]:
        every = self.words(states)
        kept = [(w, idx) for w, idx in every if w.isalnum() and len(w) > 1 and w not in confidence_mod.STOP_WORDS]
        return kept or every

    def word_scores(self, q: tuple, rows: list[tuple]):
        np = self.np
        best = (q[2] @ np.concatenate([r[2] for r in rows]).T).max(axis=1)
        return [(w, float(best[idx].mean())) for w, idx in self.content(q)]

    def pool(self, kind: str, scored: list[tuple[str, float]]) -> float:
        np = self.np
        a = np.array([s for _, s in scored])
        if kind == "min":
            return float(a.min())
        if kind == "q25":
            return float(np.quantile(a, 0.25))
        if kind == "mean":
            return float(a.mean())
        w = np.array([self.idf.get(word, self.idf_unseen) for word, _ in scored])
        return float((a * w).sum() / w.sum())

    def wrap(self, features):
        """``confidence.features`` with the alignment variants added to every candidate's signals."""

        def with_alignment(hits, query):
            out = features(hits, query)
            if not hits:
                return out
            from contextware.storage.embedded_text import embedding_text

            top = sorted(range(len(hits)), key=lambda i: -hits[i]["score"])[:ALIGN_TOP]
            q, *rows = self.states([query, *(embedding_text(hits[i]["collection"], hits[i]["row"]) for i in top)])
            union = self.word_scores(q, rows)
            own = {i: self.word_scores(q, [r]) for i, r in zip(top, rows, strict=True)}
            for i, f in enumerate(out):
                for v in self.variants:
                    if v.startswith("u3"):
                        f["align_" + v] = self.pool(v[2:], union)
                    else:
                        f["align_" + v] = self.pool(v, own[i]) if i in own else 0.0
            return out

        return with_alignment

    def install(self) -> None:
        confidence_mod.features = self.wrap(confidence_mod.features)
        confidence_mod.FEATURES = (*confidence_mod.FEATURES, *("align_" + v for v in self.variants))
        confidence_mod.WEIGHTS.update({"align_" + v: 0.0 for v in self.variants})


def load_memory(project: Project, items: list[dict]) -> dict[str, str]:
    ids: dict[str, str] = {}
    by_key: dict[str, str] = {}
    for item in items:
        if item["type"] == "fact":
            old = by_key.get(item.get("supersedes", ""))
            out = records.save_fact(project, item["text"], kind=item["kind"], topics=item.get("topics"), supersedes=old)
        else:
            out = records.save_episode(
                project,
                item["summary"],
                goal=item["goal"],
                result=item["result"],
                category=item["category"],
                topics=item.get("topics"),
            )
        ids[out["id"]] = item["key"]
        by_key[item["key"]] = out["id"]
    return ids


def search(project: Project, query: str, qvec, plain=None) -> list[dict]:
    hits: list[dict] = []
    for name in TABLES:
        where = recall_mod._filters(
            name, since=None, topic=None, kind=None, result=None, category=None, include_superseded=False
        )
        hits += recall_mod.search_table(project, name, query, qvec, where, CANDIDATES, plain)
    return hits


def hybrid_candidates(project: Project, questions: list[str]) -> dict[str, list[dict]]:
    """What recall() searches with: the widened question and the blended query vector."""
    return {
        q: search(project, expand_query(q), *recall_mod.query_vectors(project.embedder, q, expand_query(q)))
        for q in questions
    }


def plain_candidates(project: Project, questions: list[str]) -> dict[str, list[dict]]:
    vecs = project.embedder.embed(questions)
    return {q: search(project, q, v) for q, v in zip(questions, vecs, strict=False)}


def ranking(hits: list[dict], method: str, query: str = "", **params) -> list[str]:
    if method == "hybrid":
        params.setdefault("min_confidence", DEFAULTS["recall_min_confidence"])
        return [h["row"]["id"] for h in recall_mod.select([dict(h) for h in hits], LIMIT, query=query, **params)]
    key = "similarity" if method == "vector" else "bm25"
    scored = [h for h in hits if h[key] is not None and (method == "vector" or h[key] > 0)]
    return [h["row"]["id"] for h in sorted(scored, key=lambda h: -h[key])][:LIMIT]


def evaluate(cands: dict, questions: list[dict], no_answer: list[dict], ids: dict, method: str, **params) -> dict:
    hits = [0, 0, 0]
    for q in questions:
        order = [ids[i] for i in ranking(cands[q["q"]], method, q["q"], **params)]
        for j, k in enumerate((1, 3, 5)):
            hits[j] += bool(set(q["answers"]) & set(order[:k]))
    empty = sum(not ranking(cands[q["q"]], method, q["q"], **params) for q in no_answer)
    n = len(questions)
    return {
        "recall@1": round(hits[0] / n, 3),
        "recall@3": round(hits[1] / n, 3),
        "recall@5": round(hits[2] / n, 3),
        "no_answer_empty": round(empty / len(no_answer), 3) if no_answer else None,
    }


def supersession(cands: dict, pairs: list[dict], ids: dict) -> dict:
    """A question about a fact that was superseded: right when the newer fact comes first and the
    older one is not shown at all."""
    right = 0
    for p in pairs:
        order = [ids[i] for i in ranking(cands[p["q"]], "hybrid", p["q"], min_confidence=0.0)]
        right += bool(order) and order[0] == p["answer"] and p["superseded"] not in order
    return {"supersession_right": f"{right}/{len(pairs)}"}


def fit_confidence(cands: dict, qs: list[dict], na: list[dict], ids: dict, top: int = 3) -> dict[str, float]:
    """Logistic regression (Newton's method, a little L2) of "this candidate is an answer" on the
    confidence signals of the first ``top`` candidates of every tune question: answers are
    positives; other candidates, and every candidate of an unanswerable question, negatives."""
    import numpy as np

    xs, ys = [], []
    for q in qs + na:
        hits = [dict(h) for h in cands[q["q"]]]
        for h in hits:
            h["score"] = recall_mod.fuse(h["similarity"], h["bm25"])
        feats = confidence_mod.features(hits, q["q"])
        for h, f in sorted(zip(hits, feats, strict=True), key=lambda p: -p[0]["score"])[:top]:
            xs.append([1.0, *(f[k] for k in confidence_mod.FEATURES)])
            ys.append(float(ids[h["row"]["id"]] in q.get("answers", ())))
    x, y = np.array(xs), np.array(ys)
    w = np.zeros(x.shape[1])
    ridge = RIDGE * np.diag([0.0] + [1.0] * (x.shape[1] - 1))
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ w))
        grad = x.T @ (p - y) + ridge @ w
        hess = (x * (p * (1 - p))[:, None]).T @ x + ridge
        w -= np.linalg.solve(hess, grad)
    return {
        "bias": round(float(w[0]), 3),
        **{k: round(float(v), 3) for k, v in zip(confidence_mod.FEATURES, w[1:], strict=True)},
    }


def _gate_outcomes(cands: dict, qs: list[dict], na: list[dict], ids: dict) -> list[tuple[bool, float, bool]]:
    """Per question, with the current weights: (answerable?, the confidence the gate judges (-1 when
    the floor already silences it), an answer in the first three when it passes?)."""
    out = []
    for q in qs + na:
        hits = [dict(h) for h in cands[q["q"]]]
        order = recall_mod.select(hits, LIMIT, query=q["q"], min_confidence=0.0)
        best = max(h["confidence"] for h in hits) if order else -1.0
        found = [ids[h["row"]["id"]] for h in order[:3]]
        out.append(("answers" in q, best, bool(set(q.get("answers", ())) & set(found))))
    return out


def cv_gate_curve(cands: dict, qs: list[dict], na: list[dict], ids: dict, folds: int = 5) -> list[tuple]:
    """The gate's trade-off with weights fitted without the question judged (``folds``-fold
    cross-validation by question over the tune split): for a cost of 2, 5, 10, 20 and 30 points of
    recall@3, the largest share of unanswerable questions silenced at some gate."""
    import random

    every = qs + na
    order = list(range(len(every)))
    random.Random(1).shuffle(order)
    saved = dict(confidence_mod.WEIGHTS)
    outcomes: list[tuple[bool, float, bool]] = []
    for f in range(folds):
        held = [every[i] for i in order[f::folds]]
        names = {q["q"] for q in held}
        train = [q for q in every if q["q"] not in names]
        confidence_mod.WEIGHTS.update(
            fit_confidence(cands, [q for q in train if "answers" in q], [q for q in train if "answers" not in q], ids)
        )
        outcomes += _gate_outcomes(
            cands, [q for q in held if "answers" in q], [q for q in held if "answers" not in q], ids
        )
    confidence_mod.WEIGHTS.update(saved)
    answerable = [o for o in outcomes if o[0]]
    unanswerable = [o for o in outcomes if not o[0]]
    points = []
    for g in sorted({0.0, *(o[1] for o in outcomes)}):
        r3 = sum(hit and conf >= g for _, conf, hit in answerable) / len(answerable)
        points.append((r3, sum(conf < g for _, conf, _ in unanswerable) / len(unanswerable)))
    top = points[0][0]
    return [
        (cost, round(max(s for r, s in points if r >= top - cost - 1e-9), 3)) for cost in (0.02, 0.05, 0.1, 0.2, 0.3)
    ]


def tune(project: Project, qs: list[dict], na: list[dict], ids: dict) -> dict:
    """Stage 1: expansion weight and BM25 weight/half for recall@3 (then @1, @5) with no floor.
    Stage 2: the floor, two standard deviations below the mean best relevance of the answerable tune
    questions, so that it silences only questions unlike anything in memory (a floor chosen for the
    best recall/no-answer trade-off on tune, or just below the least relevant answerable tune
    question, did not carry over to the test split: unanswerable questions about the same project
    resemble its memories as much as hard paraphrases do; see the printed curve).  Stage 3: the
    tightest margin costing no recall@5.  Stage 4: the confidence weights (``fit_confidence``),
    then the gates: recall's default costs at most 2.5 points of recall@3 on tune, the prompt
    hook's at most 10 (it injects unasked: silence is cheap there)."""
    texts = [q["q"] for q in qs + na]
    saved = recall_mod.EXPANSION_WEIGHT
    best = None
    for lam in (0.0, 0.3, 0.5, 0.7, 1.0, 1.5):
        recall_mod.EXPANSION_WEIGHT = lam
        cands = hybrid_candidates(project, texts)
        for weight, half in itertools.product((0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5), (1, 2, 4, 8, 16, 32)):
            m = evaluate(
                cands, qs, na, ids, "hybrid", weight=weight, half=half, floor=-1.0, margin=9.0, min_confidence=0.0
            )
            key = (m["recall@3"], m["recall@1"], m["recall@5"])
            if best is None or key > best[0]:
                best = (key, lam, weight, half, cands)
    recall_mod.EXPANSION_WEIGHT = saved
    (r3, _, r5), lam, weight, half, cands = best
    fixed = {"weight": weight, "half": half, "min_confidence": 0.0}
    curve = []
    for f in [x / 200 for x in range(30, 91)]:
        m = evaluate(cands, qs, na, ids, "hybrid", floor=f, margin=9.0, **fixed)
        curve.append((f, m["recall@3"], m["no_answer_empty"]))
    best = [max(h["relevance"] for h in cands[q["q"]]) for q in qs]
    mean = sum(best) / len(best)
    sd = (sum((b - mean) ** 2 for b in best) / (len(best) - 1)) ** 0.5
    floor = int((mean - 2 * sd) * 200) / 200  # rounded down to the grid
    r5_floor = evaluate(cands, qs, na, ids, "hybrid", floor=floor, margin=9.0, **fixed)["recall@5"]
    margin = 9.0
    for mg in (0.5, 0.4, 0.3, 0.25, 0.2, 0.15, 0.12, 0.1, 0.08, 0.06, 0.04):
        m = evaluate(cands, qs, na, ids, "hybrid", floor=floor, margin=mg, **fixed)
        if m["recall@5"] < r5_floor:
            break
        margin = mg
    fixed.pop("min_confidence")
    gates = tune_gates(cands, qs, na, ids, floor=floor, margin=margin, **fixed)
    return {
        "tuned_on": "tune",
        "EXPANSION_WEIGHT": lam,
        "BM25_WEIGHT": weight,
        "BM25_HALF": half,
        "FLOOR": floor,
        "MARGIN": margin,
        **gates,
        "unfloored": {"recall@3": r3, "recall@5": r5},
        "floor_curve (floor, recall@3, no_answer_empty)": curve,
    }


def tune_gates(cands: dict, qs: list[dict], na: list[dict], ids: dict, cv: bool = True, **params) -> dict:
    """Stage 4 alone (``--tune-confidence``, with the fusion constants as they are): the confidence
    weights, then recall's default gate (the highest costing at most 2.5 points of recall@3 on tune)
    and the prompt hook's (at most 10 points: it injects unasked, so silence is cheap there)."""
    weights = fit_confidence(cands, qs, na, ids)
    saved_weights = dict(confidence_mod.WEIGHTS)
    confidence_mod.WEIGHTS.update(weights)
    gate_curve = []
    for g in [x / 200 for x in range(0, 121, 5)]:
        m = evaluate(cands, qs, na, ids, "hybrid", min_confidence=g, **params)
        gate_curve.append((g, m["recall@3"], m["no_answer_empty"]))
    top_r3 = gate_curve[0][1]
    recall_gate = max(g for g, r, _ in gate_curve if r >= top_r3 - 0.025)
    hook_gate = max(g for g, r, _ in gate_curve if r >= top_r3 - 0.10)
    final = evaluate(cands, qs, na, ids, "hybrid", min_confidence=recall_gate, **params)
    cv_curve = cv_gate_curve(cands, qs, na, ids) if cv and not params else None
    confidence_mod.WEIGHTS.clear()
    confidence_mod.WEIGHTS.update(saved_weights)
    return {
        "confidence.WEIGHTS": weights,
        "recall_min_confidence": recall_gate,
        "hook_min_confidence": hook_gate,
        **final,
        "gate_curve (min_confidence, recall@3, no_answer_empty)": gate_curve,
        "cross_validated (recall@3 cost, no_answer_empty)": cv_curve,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tune", action="store_true", help="calibrate the constants on the tune split")
    parser.add_argument(
        "--tune-confidence", action="store_true", help="calibrate only the confidence weights and gates"
    )
    parser.add_argument("--split", default="test", choices=("test", "tune", "all"), help="split to report")
    parser.add_argument(
        "--token-alignment",
        metavar="VARIANTS",
        help="experiment: add token-alignment features (comma-separated: min, q25, mean, idf, u3min, u3q25, "
        "u3idf; see TokenAlignment) to the confidence model; the report then refits the weights and "
        "gates on the tune split first",
    )
    args = parser.parse_args()
    data = json.loads(DATA.read_text())

    def pick(rows: list[dict], split: str) -> list[dict]:
        return rows if split == "all" else [r for r in rows if r.get("split") == split]

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CONTEXTWARE_HOME"] = str(Path(tmp) / "home")
        project = Project.open(tmp, Settings.from_env(os.environ))
        t0 = time.perf_counter()
        ids = load_memory(project, data["items"])
        load_s = time.perf_counter() - t0
        gates = {k: DEFAULTS[k] for k in ("recall_min_confidence", "hook_min_confidence")}
        if args.token_alignment:
            from contextware.storage.embedded_text import embedding_text

            corpus = [embedding_text("facts" if i["type"] == "fact" else "episodes", i) for i in data["items"]]
            TokenAlignment(project.embedder, args.token_alignment.split(","), corpus).install()
            if not (args.tune or args.tune_confidence):
                tq, tna = pick(data["questions"], "tune"), pick(data["no_answer"], "tune")
                fitted = tune_gates(hybrid_candidates(project, [q["q"] for q in tq + tna]), tq, tna, ids, cv=False)
                confidence_mod.WEIGHTS.update(fitted["confidence.WEIGHTS"])
                gates = {k: fitted[k] for k in gates}
        if args.tune or args.tune_confidence:
            qs, na = pick(data["questions"], "tune"), pick(data["no_answer"], "tune")
            if args.tune:
                result = tune(project, qs, na, ids)
            else:
                result = tune_gates(hybrid_candidates(project, [q["q"] for q in qs + na]), qs, na, ids)
            print(json.dumps(result))
            return
        qs, na = pick(data["questions"], args.split), pick(data["no_answer"], args.split)
        pairs = data.get("supersession", [])
        texts = [q["q"] for q in qs + na + pairs]
        t0 = time.perf_counter()
        hybrid = hybrid_candidates(project, texts)
        per_query_ms = (time.perf_counter() - t0) * 1000 / len(texts)
        plain = plain_candidates(project, texts)
    report = {
        "split": args.split,
        "questions": len(qs),
        "no_answer_questions": len(na),
        "memories": len(data["items"]),
        "load_seconds": round(load_s, 2),
        "hybrid_search_ms_per_query": round(per_query_ms, 1),
        "constants": {
            k: getattr(recall_mod, k) for k in ("EXPANSION_WEIGHT", "BM25_WEIGHT", "BM25_HALF", "FLOOR", "MARGIN")
        },
        "min_confidence": gates,
        "confidence.WEIGHTS": dict(confidence_mod.WEIGHTS),
        "hybrid": {
            **evaluate(hybrid, qs, na, ids, "hybrid", min_confidence=gates["recall_min_confidence"]),
            **supersession(hybrid, pairs, ids),
        },
        "hybrid_hook": evaluate(hybrid, qs, na, ids, "hybrid", min_confidence=gates["hook_min_confidence"]),
        "hybrid_ungated": evaluate(hybrid, qs, na, ids, "hybrid", min_confidence=0.0),
        "vector": evaluate(plain, qs, na, ids, "vector"),
        "bm25": evaluate(plain, qs, na, ids, "bm25"),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
