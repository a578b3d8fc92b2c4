"""Retrieval quality of recall on bench/data/memory_eval.json: hybrid recall next to plain vector
search and plain BM25 (the native full-text index alone), the confidence gate on questions whose
answer is not in memory, and supersession (a newer fact that replaced an older one).

    uv run bench/recall_quality.py                # report on the held-out test split
    uv run bench/recall_quality.py --split all    # or tune, or all
    uv run bench/recall_quality.py --tune         # calibrate the constants on the tune split
    uv run bench/recall_quality.py --tune-confidence   # only the confidence weights and gates

Every number comes from the real code path: memories are saved with ``records.save_*`` (so what
``storage/embedded_text.py`` decides is embedded and indexed), candidates come from recall's
``search.search_table`` with recall's own filters, and hybrid results from ``fusion.select`` (the
fusion, floor, margin, gate and ordering that ``recall()`` applies), each run with a
``RecallParams`` value of its own: nothing is patched.  The baselines search the plain
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
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataclasses import fields, replace
from typing import Any

from contextware.memory import records
from contextware.memory.recall import DEFAULT_PARAMS, RecallFilters, RecallParams
from contextware.memory.recall.confidence import FEATURES, assign, signals
from contextware.memory.recall.fusion import fuse_all, select
from contextware.memory.recall.params import ConfidenceWeights
from contextware.memory.recall.search import query_vectors, search_table
from contextware.storage.candidate import Candidate
from contextware.storage.config import DEFAULTS
from contextware.storage.embedded_text import expand_query
from contextware.storage.project import Project

DATA = Path(__file__).parent / "data" / "memory_eval.json"
TABLES = ("facts", "episodes")
LOGS = False  # search captured turns too (--echoes, --conversation)
LIMIT = 5
CANDIDATES = 30  # recall's default (config recall_candidates, and at least 3 x limit)
RIDGE = 0.3  # L2 on the confidence weights: ~400 training rows, six features; 0.01 let them swing by fold
Cands = dict[str, list[Candidate]]


def with_fusion(params: RecallParams, **changes: Any) -> RecallParams:
    return replace(params, fusion=replace(params.fusion, **changes))


def with_weights(params: RecallParams, weights: dict[str, float]) -> RecallParams:
    return replace(params, confidence=replace(params.confidence, weights=ConfidenceWeights(**weights)))


def load_memory(project: Project, items: list[dict], linked: bool = True) -> dict[str, str]:
    """Save the items in order; ``linked`` False saves a replacing fact without naming the fact it
    replaces (the agent did not know of it): both stay active, the newer saved later."""
    ids: dict[str, str] = {}
    by_key: dict[str, str] = {}
    for item in items:
        if item["type"] == "fact":
            old = by_key.get(item.get("supersedes", "")) if linked else None
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


def search(project: Project, query: str, qvec, plain=None, logs: bool | None = None) -> list[Candidate]:
    hits: list[Candidate] = []
    for name in TABLES + (("logs",) if (LOGS if logs is None else logs) else ()):
        hits += search_table(project, name, query, qvec, RecallFilters().where(name), CANDIDATES, plain)
    return hits


def hybrid_candidates(
    project: Project, questions: list[str], params: RecallParams = DEFAULT_PARAMS, logs: bool | None = None
) -> Cands:
    """What recall() searches with: the widened question and the blended query vector (``logs``
    False: the facts and episodes alone, whatever else is stored)."""
    return {
        q: search(project, expand_query(q), *query_vectors(project.embedder, q, expand_query(q), params.fusion), logs)
        for q in questions
    }


def plain_candidates(project: Project, questions: list[str]) -> Cands:
    vecs = project.embedder.embed(questions)
    return {q: search(project, q, v) for q, v in zip(questions, vecs, strict=False)}


def ranking(
    hits: list[Candidate], method: str, query: str = "", params: RecallParams = DEFAULT_PARAMS, min_confidence=None
) -> list[str]:
    if method == "hybrid":
        gate = DEFAULTS["recall_min_confidence"] if min_confidence is None else min_confidence
        return [h.id for h in select(hits, query, LIMIT, params, min_confidence=gate)]
    key = "similarity" if method == "vector" else "bm25"
    scored = [h for h in hits if getattr(h, key) is not None and (method == "vector" or h.bm25 > 0)]
    return [h.id for h in sorted(scored, key=lambda h: -getattr(h, key))][:LIMIT]


def evaluate(
    cands: Cands,
    questions: list[dict],
    no_answer: list[dict],
    ids: dict,
    method: str,
    params: RecallParams = DEFAULT_PARAMS,
    min_confidence: float | None = None,
) -> dict:
    hits = [0, 0, 0]
    for q in questions:
        order = [ids.get(i, i) for i in ranking(cands[q["q"]], method, q["q"], params, min_confidence)]
        for j, k in enumerate((1, 3, 5)):
            hits[j] += bool(set(q["answers"]) & set(order[:k]))
    empty = sum(not ranking(cands[q["q"]], method, q["q"], params, min_confidence) for q in no_answer)
    n = len(questions)
    return {
        "recall@1": round(hits[0] / n, 3),
        "recall@3": round(hits[1] / n, 3),
        "recall@5": round(hits[2] / n, 3),
        "no_answer_empty": round(empty / len(no_answer), 3) if no_answer else None,
    }


def supersession(cands: Cands, pairs: list[dict], ids: dict) -> dict:
    """A question about a fact that was superseded: right when the newer fact comes first and the
    older one is not shown at all."""
    right = 0
    for p in pairs:
        order = [ids.get(i, i) for i in ranking(cands[p["q"]], "hybrid", p["q"], min_confidence=0.0)]
        right += bool(order) and order[0] == p["answer"] and p["superseded"] not in order
    return {"supersession_right": f"{right}/{len(pairs)}"}


def newer_first(cands: Cands, pairs: list[dict], ids: dict) -> dict:
    """Pairs saved unlinked (``--unlinked``): the newer fact above the older one, both shown or the
    older one not shown."""
    right = 0
    for p in pairs:
        order = [ids.get(i, i) for i in ranking(cands[p["q"]], "hybrid", p["q"], min_confidence=0.0)]
        if p["answer"] in order:
            right += p["superseded"] not in order or order.index(p["answer"]) < order.index(p["superseded"])
    return {"newer_first_unlinked": f"{right}/{len(pairs)}"}


def fit_confidence(
    cands: Cands, qs: list[dict], na: list[dict], ids: dict, params: RecallParams = DEFAULT_PARAMS, top: int = 3
) -> dict[str, float]:
    """Logistic regression (Newton's method, a little L2) of "this candidate is an answer" on the
    confidence signals of the first ``top`` candidates of every tune question: answers are
    positives; other candidates, and every candidate of an unanswerable question, negatives."""
    import numpy as np

    xs, ys = [], []
    for q in qs + na:
        hits = fuse_all(cands[q["q"]], q["q"], params)
        feats = signals(hits, q["q"], params.confidence.gap_field)
        for h, f in sorted(zip(hits, feats, strict=True), key=lambda p: -p[0].score)[:top]:
            xs.append([1.0, *(getattr(f, k) for k in FEATURES)])
            ys.append(float(ids[h.id] in q.get("answers", ())))
    x, y = np.array(xs), np.array(ys)
    w = np.zeros(x.shape[1])
    ridge = RIDGE * np.diag([0.0] + [1.0] * (x.shape[1] - 1))
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ w))
        grad = x.T @ (p - y) + ridge @ w
        hess = (x * (p * (1 - p))[:, None]).T @ x + ridge
        w -= np.linalg.solve(hess, grad)
    return {"bias": round(float(w[0]), 3), **{k: round(float(v), 3) for k, v in zip(FEATURES, w[1:], strict=True)}}


def _gate_outcomes(cands: Cands, qs: list[dict], na: list[dict], ids: dict, params: RecallParams) -> list[tuple]:
    """Per question, with ``params``' weights: (answerable?, the confidence the gate judges (-1 when
    the floor already silences it), an answer in the first three when it passes?)."""
    out = []
    for q in qs + na:
        order = select(cands[q["q"]], q["q"], LIMIT, params, min_confidence=0.0)
        judged = assign(fuse_all(cands[q["q"]], q["q"], params), q["q"], params.confidence)
        best = max(h.confidence for h in judged) if order else -1.0
        found = [ids[h.id] for h in order[:3]]
        out.append(("answers" in q, best, bool(set(q.get("answers", ())) & set(found))))
    return out


def gate_auc(cands: Cands, qs: list[dict], na: list[dict], params: RecallParams = DEFAULT_PARAMS) -> float | None:
    """ROC AUC of the best confidence as a test of "memory holds an answer": the chance that an
    answerable question's best confidence is above an unanswerable one's (ties count half)."""
    if not qs or not na:
        return None

    def best(q: dict) -> float:
        judged = assign(fuse_all(cands[q["q"]], q["q"], params), q["q"], params.confidence)
        return max((h.confidence for h in judged if not h.echo), default=0.0)  # echoes never answer

    yes, no = [best(q) for q in qs], [best(q) for q in na]
    wins = sum((a > b) + 0.5 * (a == b) for a in yes for b in no)
    return round(wins / (len(yes) * len(no)), 3)


def cv_gate_curve(cands: Cands, qs: list[dict], na: list[dict], ids: dict, folds: int = 5) -> list[tuple]:
    """The gate's trade-off with weights fitted without the question judged (``folds``-fold
    cross-validation by question over the tune split): for a cost of 2, 5, 10, 20 and 30 points of
    recall@3, the largest share of unanswerable questions silenced at some gate."""
    import random

    every = qs + na
    order = list(range(len(every)))
    random.Random(1).shuffle(order)
    outcomes: list[tuple[bool, float, bool]] = []
    for f in range(folds):
        held = [every[i] for i in order[f::folds]]
        names = {q["q"] for q in held}
        train = [q for q in every if q["q"] not in names]
        fitted = fit_confidence(
            cands, [q for q in train if "answers" in q], [q for q in train if "answers" not in q], ids
        )
        outcomes += _gate_outcomes(
            cands,
            [q for q in held if "answers" in q],
            [q for q in held if "answers" not in q],
            ids,
            with_weights(DEFAULT_PARAMS, fitted),
        )
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
    """Stage 1: the expansion weight for recall@3 (then @1, @5) with no floor (the memories' scores
    are the fitted ranker's, ``bench/fit_ranker.py``).
    Stage 2: the floor, two standard deviations below the mean best relevance of the answerable tune
    questions, so that it silences only questions unlike anything in memory (docs/retrieval.md says
    why not a floor tuned for the trade-off).  Stage 3: the tightest margin costing no recall@5.
    Stage 4: the confidence weights (``fit_confidence``), then the gates (``tune_gates``)."""
    texts = [q["q"] for q in qs + na]
    best: Any = None
    for lam in (0.0, 0.3, 0.5, 0.7, 1.0, 1.5):
        cands = hybrid_candidates(project, texts, with_fusion(DEFAULT_PARAMS, expansion_weight=lam))
        trial = with_fusion(DEFAULT_PARAMS, floor=-1.0, margin=9.0)
        m = evaluate(cands, qs, na, ids, "hybrid", trial, min_confidence=0.0)
        key = (m["recall@3"], m["recall@1"], m["recall@5"])
        if best is None or key > best[0]:
            best = (key, lam, cands)
    (r3, _, r5), lam, cands = best
    fixed = with_fusion(DEFAULT_PARAMS, margin=9.0)
    curve = []
    for f in [x / 200 for x in range(30, 91)]:
        m = evaluate(cands, qs, na, ids, "hybrid", with_fusion(fixed, floor=f), min_confidence=0.0)
        curve.append((f, m["recall@3"], m["no_answer_empty"]))
    tops = [max(h.relevance or 0.0 for h in cands[q["q"]]) for q in qs]
    mean = sum(tops) / len(tops)
    sd = (sum((b - mean) ** 2 for b in tops) / (len(tops) - 1)) ** 0.5
    floor = int((mean - 2 * sd) * 200) / 200  # rounded down to the grid
    floored = with_fusion(fixed, floor=floor)
    r5_floor = evaluate(cands, qs, na, ids, "hybrid", floored, min_confidence=0.0)["recall@5"]
    margin = 9.0
    for mg in (0.5, 0.4, 0.3, 0.25, 0.2, 0.15, 0.12, 0.1, 0.08, 0.06, 0.04):
        m = evaluate(cands, qs, na, ids, "hybrid", with_fusion(floored, margin=mg), min_confidence=0.0)
        if m["recall@5"] < r5_floor:
            break
        margin = mg
    gates = tune_gates(cands, qs, na, ids, with_fusion(floored, margin=margin), cv=False)
    return {
        "tuned_on": "tune",
        "expansion_weight": lam,
        "floor": floor,
        "margin": margin,
        **gates,
        "unfloored": {"recall@3": r3, "recall@5": r5},
        "floor_curve (floor, recall@3, no_answer_empty)": curve,
    }


def tune_gates(
    cands: Cands, qs: list[dict], na: list[dict], ids: dict, params: RecallParams = DEFAULT_PARAMS, cv: bool = True
) -> dict:
    """Stage 4 alone (``--tune-confidence``, with ``params``' fusion): the confidence weights, then
    recall's default gate (the highest costing at most 2.5 points of recall@3 on tune) and the
    prompt hook's (at most 10 points: it injects unasked, so silence is cheap there)."""
    weights = fit_confidence(cands, qs, na, ids, params)
    fitted = with_weights(params, weights)
    gate_curve = []
    for g in [x / 200 for x in range(0, 121, 5)]:
        m = evaluate(cands, qs, na, ids, "hybrid", fitted, min_confidence=g)
        gate_curve.append((g, m["recall@3"], m["no_answer_empty"]))
    top_r3 = gate_curve[0][1]
    recall_gate = max(g for g, r, _ in gate_curve if r >= top_r3 - 0.025)
    hook_gate = max(g for g, r, _ in gate_curve if r >= top_r3 - 0.10)
    final = evaluate(cands, qs, na, ids, "hybrid", fitted, min_confidence=recall_gate)
    return {
        "confidence_weights": weights,
        "recall_min_confidence": recall_gate,
        "hook_min_confidence": hook_gate,
        **final,
        "gate_curve (min_confidence, recall@3, no_answer_empty)": gate_curve,
        "cross_validated (recall@3 cost, no_answer_empty)": cv_gate_curve(cands, qs, na, ids) if cv else None,
    }


def load_conversation(project: Project, rows: int) -> None:
    """The newest ``rows`` log rows of the long-horizon history (commits as coding-session turns,
    real dates), imported the way ``contextware import`` does; the built store is cached like
    bench/long_horizon.py's (keyed by the rows and the storage code)."""
    import hashlib
    import shutil

    import long_horizon

    from contextware.memory.team.memfile import render
    from contextware.memory.team.share import import_memory

    commits = [c for c in long_horizon.parse_log(long_horizon.changelog_text()) if not c.merge]
    out: list[dict] = []
    for c in commits:
        out += long_horizon.commit_rows(c)
        if len(out) >= rows:
            break
    text = render(out[:rows])
    key = hashlib.sha256((text + long_horizon.code_version()).encode()).hexdigest()[:20]
    cached = long_horizon.cache_dir() / "conversation" / key
    t0 = time.perf_counter()
    if (cached / "done").is_file():
        shutil.copytree(cached / "data", project.data_dir, dirs_exist_ok=True)
    else:
        import_memory(project, text, source="harfbuzz-history")
        shutil.rmtree(cached, ignore_errors=True)
        shutil.copytree(project.data_dir, cached / "data")
        (cached / "done").write_text(str(rows), encoding="utf-8")
    print(f"stored {min(rows, len(out))} conversation rows in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tune", action="store_true", help="calibrate the constants on the tune split")
    parser.add_argument(
        "--tune-confidence", action="store_true", help="calibrate only the confidence weights and gates"
    )
    parser.add_argument("--split", default="test", choices=("test", "tune", "all"), help="split to report")
    parser.add_argument("--smoke", action="store_true", help="a quick run on a few items (the fast tests use it)")
    parser.add_argument(
        "--echoes",
        type=int,
        default=0,
        metavar="N",
        help="each question was asked N times before (captured as user turns in N sessions); answers still "
        "count only as the facts and episodes that hold them",
    )
    parser.add_argument(
        "--unlinked",
        action="store_true",
        help="save each replacing fact without naming the one it replaces; report newer-first per pair",
    )
    parser.add_argument(
        "--conversation",
        type=int,
        default=0,
        metavar="N",
        help="also store N log rows of HarfBuzz's history as conversation with real dates (bench/long_horizon.py) "
        "and report recall on the memories alone beside recall among them",
    )
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    if args.smoke:
        keep = {i["key"] for i in data["items"][:20]}
        data["items"] = data["items"][:20]
        data["questions"] = [q for q in data["questions"] if set(q["answers"]) <= keep][:5]
        data["no_answer"] = data["no_answer"][:3]
        data["supersession"] = [p for p in data.get("supersession", []) if {p["answer"], p["superseded"]} <= keep]

    def pick(rows: list[dict], split: str) -> list[dict]:
        return rows if split == "all" or args.smoke else [r for r in rows if r.get("split") == split]

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CONTEXTWARE_HOME"] = str(Path(tmp) / "home")
        project = Project.open(tmp)
        t0 = time.perf_counter()
        if args.conversation:  # first: the cached conversation store is copied into the empty project
            load_conversation(project, args.conversation)
        ids = load_memory(project, data["items"], linked=not args.unlinked)
        load_s = time.perf_counter() - t0
        global LOGS
        LOGS = bool(args.echoes or args.conversation)
        if args.echoes:
            for q in data["questions"] + data["no_answer"]:
                for n in range(args.echoes):
                    records.save_log(project, q["q"], session_id=f"asked-{n}", role="user")
        gates = {k: DEFAULTS[k] for k in ("recall_min_confidence", "hook_min_confidence")}
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
        alone = hybrid_candidates(project, texts, logs=False) if LOGS else None
    fusion = DEFAULT_PARAMS.fusion
    report = {
        "split": args.split,
        "echoes": args.echoes,
        "conversation_rows": args.conversation,
        "questions": len(qs),
        "no_answer_questions": len(na),
        "memories": len(data["items"]),
        "load_seconds": round(load_s, 2),
        "hybrid_search_ms_per_query": round(per_query_ms, 1),
        "fusion": {k: getattr(fusion, k) for k in ("expansion_weight", "floor", "margin")},
        "min_confidence": gates,
        "confidence_weights": {
            f.name: getattr(DEFAULT_PARAMS.confidence.weights, f.name) for f in fields(ConfidenceWeights)
        },
        "hybrid": {
            **evaluate(hybrid, qs, na, ids, "hybrid", min_confidence=gates["recall_min_confidence"]),
            **(newer_first(hybrid, pairs, ids) if args.unlinked else supersession(hybrid, pairs, ids)),
        },
        "hybrid_hook": evaluate(hybrid, qs, na, ids, "hybrid", min_confidence=gates["hook_min_confidence"]),
        **(
            {
                "hybrid_memories_alone": evaluate(
                    alone, qs, na, ids, "hybrid", min_confidence=gates["recall_min_confidence"]
                )
            }
            if alone
            else {}
        ),
        "hybrid_ungated": evaluate(hybrid, qs, na, ids, "hybrid", min_confidence=0.0),
        "gate_auc": gate_auc(hybrid, qs, na),
        "vector": evaluate(plain, qs, na, ids, "vector"),
        "bm25": evaluate(plain, qs, na, ids, "bm25"),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
