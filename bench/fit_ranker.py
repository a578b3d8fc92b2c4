"""Fit recall's ranker (``contextware/memory/recall/ranker.py``) and its confidence on the TRAIN
splits of the public sets at once, and write the weights into
``contextware/memory/recall/ranker_weights.py``.

    uv run bench/fit_ranker.py              # train splits; prints the cross-validation, writes the weights
    uv run bench/fit_ranker.py --dry-run    # the same, writes nothing
    uv run bench/fit_ranker.py --smoke --out PATH   # the tiny smoke sets (seconds; the tests run it)

Questions (the candidates of each come from recall's own search stage, once):

- ``engineering``: the train projects of ``bench/data/eng_memory.json`` (facts only);
- ``ledgerly``: the tune split of ``bench/data/memory_eval.json`` (facts and episodes of one
  fictional project, written here; its questions borrow their answers' words more than the public
  sets' do, so it only trains, and weighs as one set of five);
- ``locomo``: the train conversations of LoCoMo (turns only; ``bench/quality.py`` says where the
  data comes from);
- ``mixed_facts`` and ``mixed_turns``: the engineering train projects' facts stored beside the
  first train conversation's turns, asked the engineering questions and that conversation's: what
  sets captured turns against other memories, both ways.

Every evidence row is a positive.  The model is a pairwise logistic regression (every answer
against every other candidate of its question, each question weighing 1, each set the same in
total), L2-regularised, fitted by Newton's method on features scaled to unit spread; its strength
is chosen by leave-one-source-out cross-validation (a whole project or conversation held out at a
time), on the mean of the three sets' MRR.  The hand-set fusion it replaced is printed beside it,
on the same candidates.  Then the confidence model (``confidence.combine``'s weights) is refitted on
the fitted scores: a logistic regression of "this candidate answers" over the first three
candidates of every train question, unanswerable ones included (all negatives).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from contextware.memory.recall.params import (  # noqa: E402
    DEFAULT_PARAMS,
    ConfidenceWeights,
    RankerParams,
    RankerWeights,
    RecallParams,
)
from contextware.memory.recall.ranker import FEATURES, features  # noqa: E402
from contextware.memory.team.memfile import render  # noqa: E402
from contextware.memory.team.share import import_memory  # noqa: E402
from contextware.storage.project import Project  # noqa: E402

WEIGHTS_FILE = REPO / "contextware" / "memory" / "recall" / "ranker_weights.py"
LAMBDAS = (0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1)
DESIGNS = ("split", "shared", "turns")
# ``turns``: the memories other than captured turns keep this scoring (the hand-set fusion before the
# ranker: cosine + 0.2 x saturated BM25) and only the turns' weights are fitted, against it.
FIXED_MEMORY = RankerWeights(cosine=1.0, bm25=0.2)
TURN_WEIGHT = 0.9  # a turn's cosine against a fact's (the hand-set value before the fit)
SETS = ("engineering", "ledgerly", "locomo", "mixed_facts", "mixed_turns")
LEDGERLY = quality.DATA / "memory_eval.json"
CONFIDENCE_TOP = 3
CONFIDENCE_RIDGE = 1.0
D = len(FEATURES)  # per family; the captured turns' family has a bias as well


@dataclass
class Question:
    name: str  # the set
    source: str  # the fold: a project or a conversation
    text: str
    evidence: set[str]
    candidates: list[Any]  # storage.candidate.Candidate
    x: Any  # features, one row per candidate
    logs: Any  # bool per candidate: a captured turn


def collect(project: Project, questions: list[dict], scope: str, name: str) -> list[Question]:
    """The candidates of every question, from recall's own search stage, with their features."""
    import numpy as np

    from contextware.memory.recall.query import parse_query
    from contextware.memory.recall.search import candidates

    out = []
    for q in questions:
        query = parse_query(q["q"], scope=scope, limit=quality.LIMIT, min_confidence=0)
        found = candidates(project, query, DEFAULT_PARAMS.fusion, {}).candidates
        x = np.asarray(features(found, q["q"], DEFAULT_PARAMS.fusion), dtype=np.float64).reshape(len(found), D)
        logs = np.asarray([c.collection == "logs" for c in found], dtype=bool)
        out.append(Question(name, q["source"], q["q"], set(q["evidence"]), found, x, logs))
    return out


def engineering_questions(path: Path, split: str) -> tuple[list[dict], list[dict]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    projects = [p for p in data["projects"] if split == "all" or p["split"] == split]
    rows, ids = quality.eng_rows(projects)
    questions = []
    for p in projects:
        for q in p["questions"]:
            ev = [ids[f"{p['name']}/{k}"] for k in q["answers"]]
            questions.append({"q": q["q"], "evidence": ev, "source": p["name"]})
        questions += [{"q": q, "evidence": [], "source": p["name"]} for q in p["unanswerable"]]
    return rows, questions


def locomo_questions(index: int, sample: dict) -> tuple[list[dict], list[dict]]:
    rows, ids = quality.locomo_rows(index, sample)
    questions = []
    for qa in sample["qa"]:
        if qa.get("category") in (1, 2, 3, 4):
            ev = [ids[e] for e in qa.get("evidence", []) if e in ids]
            if ev:
                questions.append({"q": qa["question"], "evidence": ev, "source": sample["sample_id"]})
        elif qa.get("category") == 5:
            questions.append({"q": qa["question"], "evidence": [], "source": sample["sample_id"]})
    return rows, questions


def ledgerly(smoke: bool) -> list[Question]:
    """The tune split of memory_eval.json (recall_quality.py's set), saved as recall_quality.py saves it."""
    from recall_quality import load_memory

    data = json.loads(LEDGERLY.read_text(encoding="utf-8"))
    items = data["items"][:20] if smoke else data["items"]
    keys = {i["key"] for i in items}
    qs = [q for q in data["questions"] if (smoke or q.get("split") == "tune") and set(q["answers"]) <= keys]
    na = [q for q in data["no_answer"] if smoke or q.get("split") == "tune"]
    qs, na = (qs[:5], na[:3]) if smoke else (qs, na)
    with tempfile.TemporaryDirectory() as tmp:
        project = Project.open(tmp)
        ids = load_memory(project, items)
        by_key = {k: i for i, k in ids.items()}
        questions = [{"q": q["q"], "evidence": [by_key[k] for k in q["answers"]], "source": "ledgerly"} for q in qs]
        questions += [{"q": q["q"], "evidence": [], "source": "ledgerly"} for q in na]
        return collect(project, questions, "all", "ledgerly")


def gather(smoke: bool, locomo: Path | None) -> list[Question]:
    out: list[Question] = ledgerly(smoke)
    eng_rows, eng_qs = engineering_questions(quality.SMOKE_ENG if smoke else quality.ENG, "all" if smoke else "train")
    with tempfile.TemporaryDirectory() as tmp:
        project = Project.open(tmp)
        import_memory(project, render(eng_rows), source="eng_memory.json")
        out += collect(project, eng_qs, "facts", "engineering")
    path = quality.SMOKE_LOCOMO if smoke else (locomo or quality.locomo_path())
    chosen = quality.locomo_split(quality.load_locomo(path), "all" if smoke else "train") if path.is_file() else []
    for n, (index, sample) in enumerate(chosen):
        rows, qs = locomo_questions(index, sample)
        with tempfile.TemporaryDirectory() as tmp:
            project = Project.open(tmp)
            import_memory(project, render(rows), source=sample["sample_id"])
            out += collect(project, qs, "logs", "locomo")
            if n == 0:  # the mixed sets: the engineering facts beside this conversation's turns
                import_memory(project, render(eng_rows), source="eng_memory.json")
                out += collect(project, eng_qs, "all", "mixed_facts")
                out += collect(project, qs, "all", "mixed_turns")
        print(f"{sample['sample_id']}: {len(rows)} turns, {len(qs)} questions", file=sys.stderr)
    return out


# -- the pairwise model --------------------------------------------------------------------------------
def design(q: Question, kind: str) -> Any:
    """Each candidate's row of the model.  ``split``: the memory family's features, then the
    turns' (and their bias), two models in one; ``shared``: every candidate's features, then the
    turns' again (their departure from the shared weights, penalised like the rest) and bias."""
    import numpy as np

    n = len(q.candidates)
    out = np.zeros((n, 2 * D + 1))
    mem = ~q.logs if kind != "shared" else np.ones(n, dtype=bool)
    if kind != "turns":  # turns: the memories' score is fixed (``fixed``)
        out[mem, :D] = q.x[mem]
    out[q.logs, D : 2 * D] = q.x[q.logs]
    out[q.logs, 2 * D] = 1.0
    return out


def fixed(q: Question, kind: str) -> Any:
    """The part of each candidate's score the fit does not change (``turns``: the memories')."""
    import numpy as np

    if kind != "turns":
        return np.zeros(len(q.candidates))
    w = np.asarray([getattr(FIXED_MEMORY, k) for k in FEATURES])
    return np.where(q.logs, 0.0, q.x @ w)


def pairs(qs: list[Question], kind: str) -> tuple[Any, Any, Any]:
    """Differences answer - other candidate, each pair's weight (a question weighs 1 in all,
    every set the same in total) and its fixed offset."""
    import numpy as np

    per_set = {s: sum(1 for q in qs if q.name == s and _positives(q).any()) for s in SETS}
    diffs, weights, offsets = [], [], []
    for q in qs:
        pos = _positives(q)
        if not pos.any() or pos.all():
            continue
        z, f = design(q, kind), fixed(q, kind)
        d = (z[pos][:, None, :] - z[~pos][None, :, :]).reshape(-1, z.shape[1])
        diffs.append(d)
        offsets.append((f[pos][:, None] - f[~pos][None, :]).reshape(-1))
        weights.append(np.full(len(d), 1.0 / (len(d) * per_set[q.name])))
    return np.concatenate(diffs), np.concatenate(weights), np.concatenate(offsets)


def _positives(q: Question) -> Any:
    import numpy as np

    return np.asarray([c.id in q.evidence for c in q.candidates], dtype=bool)


def fit_pairs(diffs: Any, weights: Any, offsets: Any, scale: Any, lam: float) -> Any:
    """Weights of ``score = w . z`` (z unscaled) minimising the weighted pairwise logistic loss plus
    ``lam / 2 * |w * scale|^2`` (the penalty on the scaled features' weights)."""
    import numpy as np

    x = diffs / scale
    w = np.zeros(x.shape[1])
    total = weights.sum()
    for _ in range(30):
        m = x @ w + offsets
        p = 1.0 / (1.0 + np.exp(np.clip(m, -40, 40)))  # sigmoid(-m)
        grad = -(x.T @ (weights * p)) / total + lam * w
        hess = (x * (weights * p * (1 - p))[:, None]).T @ x / total + lam * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w / scale


def spread(qs: list[Question], kind: str) -> Any:
    import numpy as np

    z = np.concatenate([design(q, kind) for q in qs])
    s = z.std(axis=0)
    s[s < 1e-6] = 1.0
    return s


def rank_of_answer(scores: Any, q: Question) -> int | None:
    """The answer's rank as recall shows it: best score first, echoes after every other memory, an
    older fact a newer one restates left out (``fusion.decide``)."""
    echo, restated = FEATURES.index("echo"), FEATURES.index("restated")
    order = sorted(
        (i for i in range(len(scores)) if not q.x[i, restated]), key=lambda i: (bool(q.x[i, echo]), -scores[i], i)
    )
    return next((r for r, i in enumerate(order[: quality.LIMIT], 1) if q.candidates[i].id in q.evidence), None)


def metrics(ranks: list[int | None]) -> dict[str, float]:
    return quality.summarize(ranks)


def hand_set(q: Question) -> list[float]:
    """The hand-set fusion the ranker replaced (FusionParams before it), on the same candidates, for
    comparison only: cosine + 0.2 x saturated BM25 (half 8); captured turns (cosine + 0.5 x saturated
    BM25) x 0.9, x 0.3 for an echo, minus 0.7 x the median of the other turns but the best."""
    from contextware.memory.recall.signals import is_echo

    f = DEFAULT_PARAMS.fusion
    out = []
    for c in q.candidates:
        cos = c.similarity or 0.0
        if c.collection == "logs":
            s = (cos + 0.5 * c.bm25 / (c.bm25 + 8.0)) * 0.9 * (0.3 if is_echo(c, f) else 1.0)
        else:
            s = cos + 0.2 * c.bm25 / (c.bm25 + 8.0)
        out.append(s)
    logs = sorted(s for c, s in zip(q.candidates, out, strict=True) if c.collection == "logs")[:-1]
    if logs:
        noise = 0.7 * statistics.median(logs)
        out = [s - noise if c.collection == "logs" else s for c, s in zip(q.candidates, out, strict=True)]
    return out


def evaluate(qs: list[Question], score: Any) -> dict[str, dict[str, float]]:
    by_set: dict[str, list[int | None]] = {}
    for q in qs:
        if q.evidence:
            by_set.setdefault(q.name, []).append(rank_of_answer(score(q), q))
    return {s: metrics(r) for s, r in sorted(by_set.items())}


def cross_validate(qs: list[Question], lam: float, kind: str) -> dict[str, dict[str, float]]:
    """Leave one source out: each project or conversation ranked by weights fitted without it."""
    sources = sorted({q.source for q in qs})
    ranks: dict[str, list[int | None]] = {}
    for held in sources:
        train = [q for q in qs if q.source != held]
        test = [q for q in qs if q.source == held and q.evidence]
        if not test or not any(q.evidence for q in train):
            continue
        w = fit_pairs(*pairs(train, kind), spread(train, kind), lam)
        for q in test:
            ranks.setdefault(q.name, []).append(rank_of_answer(design(q, kind) @ w + fixed(q, kind), q))
    return {s: metrics(r) for s, r in sorted(ranks.items())}


def mean_mrr(result: dict[str, dict[str, float]]) -> float:
    return sum(m["MRR"] for m in result.values()) / max(1, len(result))


def to_params(w: Any, kind: str) -> RankerParams:
    """The fitted vector as the two families' weights, in a cosine's units (the memories' cosine
    weight 1), rounded: what ``ranker_weights.py`` holds."""
    unit = w[0] if w[0] > 0 and kind != "turns" else 1.0
    v = w / unit
    memory = {k: round(float(v[i]), 4) for i, k in enumerate(FEATURES)}
    if kind == "turns":
        memory = {k: getattr(FIXED_MEMORY, k) for k in FEATURES}
        # The turns in a cosine's units x TURN_WEIGHT, set against other memories by
        # ``RankerParams.turn_baseline`` (their median) rather than by a fitted bias and noise: the
        # mixed set has no turns that resemble a question without answering it.
        unit = v[D] / TURN_WEIGHT if v[D] > 0 else 1.0
        v = v.copy()
        v[D : 2 * D + 1] /= unit
        v[D + FEATURES.index("noise")] = v[2 * D] = 0.0
    shared = 1.0 if kind == "shared" else 0.0
    logs = {k: round(float(v[D + i] + shared * v[i]), 4) for i, k in enumerate(FEATURES)}
    logs["bias"] = round(float(v[2 * D]), 4)
    return RankerParams(memory=RankerWeights(**memory), logs=RankerWeights(**logs))


# -- the confidence ------------------------------------------------------------------------------------
def judged(q: Question, params: RecallParams) -> list[Any]:
    from contextware.memory.recall.fusion import judge

    return judge(q.candidates, q.text, params)


def fit_confidence(qs: list[Question], params: RecallParams) -> ConfidenceWeights:
    """``confidence.combine``'s weights: "this candidate answers" over the first ``CONFIDENCE_TOP``
    non-echo candidates of every question (each set weighing the same)."""
    import numpy as np

    from contextware.memory.recall.confidence import FEATURES as SIGNALS

    xs, ys, ws = [], [], []
    per_set = {s: sum(1 for q in qs if q.name == s) for s in SETS}
    for q in qs:
        hits = [h for h in judged(q, params) if not h.echo]
        for h in sorted(hits, key=lambda h: -h.score)[:CONFIDENCE_TOP]:
            xs.append([1.0, *(getattr(h.signals, k) for k in SIGNALS)])
            ys.append(float(h.id in q.evidence))
            ws.append(1.0 / per_set[q.name])
    x, y, sw = np.array(xs), np.array(ys), np.array(ws) / sum(ws) * len(ws)
    w = np.zeros(x.shape[1])
    ridge = CONFIDENCE_RIDGE * np.diag([0.0] + [1.0] * (x.shape[1] - 1))
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -40, 40)))
        grad = x.T @ (sw * (p - y)) + ridge @ w
        hess = (x * (sw * p * (1 - p))[:, None]).T @ x + ridge
        w -= np.linalg.solve(hess, grad)
    return ConfidenceWeights(
        **{"bias": round(float(w[0]), 3)} | {k: round(float(v), 3) for k, v in zip(SIGNALS, w[1:], strict=True)}
    )


def mean_auc(result: dict[str, float | None]) -> float:
    values = [v for v in result.values() if v is not None]
    return sum(values) / max(1, len(values))


def gate_auc(qs: list[Question], params: RecallParams) -> dict[str, float | None]:
    """Per set, the chance an answerable question's best confidence beats an unanswerable one's."""
    out = {}
    for s in SETS:
        best = {True: [], False: []}  # type: dict[bool, list[float]]
        for q in qs:
            if q.name == s:
                conf = [h.confidence for h in judged(q, params) if not h.echo]
                best[bool(q.evidence)].append(max(conf, default=0.0))
        out[s] = quality.auc(best[True], best[False])
    return out


# -- output --------------------------------------------------------------------------------------------
def render_weights(ranker: RankerParams, confidence: ConfidenceWeights | None, note: str) -> str:
    """The weights module; ``CONFIDENCE`` empty when the refit is not kept (``ConfidenceWeights``'
    own values stay)."""

    def block(w: Any) -> str:
        if w is None:
            return "{}"
        return "{\n" + "".join(f'    "{f.name}": {getattr(w, f.name)!r},\n' for f in fields(w)) + "}"

    return (
        '"""The fitted ranker\'s and confidence\'s weights.  Written by ``uv run bench/fit_ranker.py``\n'
        f"({note}); never edited by hand: refit instead.  ``params.RankerParams`` and\n"
        '``params.ConfidenceParams`` read them."""\n\n'
        f"MEMORY: dict[str, float] = {block(ranker.memory)}\n\n"
        f"LOGS: dict[str, float] = {block(ranker.logs)}\n\n"
        f"CONFIDENCE: dict[str, float] = {block(confidence)}\n"
    )


def table(rows: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = ["| model | set | R@1 | R@3 | R@10 | MRR |", "|---|---|---|---|---|---|"]
    for name, result in rows.items():
        for s, m in result.items():
            lines.append(f"| {name} | {s} | {m['R@1']:.3f} | {m['R@3']:.3f} | {m['R@10']:.3f} | {m['MRR']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="the tiny smoke sets (every project and conversation)")
    ap.add_argument("--locomo", type=Path, default=None, help="locomo10.json (default: the cache)")
    ap.add_argument("--out", type=Path, default=None, help=f"where to write the weights (default {WEIGHTS_FILE})")
    ap.add_argument("--cache", type=Path, default=None, help="keep (or reuse) the collected candidates here")
    ap.add_argument(
        "--design",
        choices=("turns", "cv", *DESIGNS),
        default="turns",
        help="the model's design; cv: the best of all by cross-validation (default turns: docs/retrieval.md 16)",
    )
    ap.add_argument("--dry-run", action="store_true", help="print the cross-validation, write nothing")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as home:
        os.environ["CONTEXTWARE_HOME"] = home
        os.environ["CONTEXTWARE_SERVICE"] = "off"
        if args.cache is not None and args.cache.is_file():
            import pickle

            qs = pickle.loads(args.cache.read_bytes())
        else:
            qs = gather(args.smoke, args.locomo)
            if args.cache is not None:
                import pickle

                args.cache.write_bytes(pickle.dumps(qs))
        print(
            f"{len(qs)} questions: " + ", ".join(f"{s} {sum(q.name == s for q in qs)}" for s in SETS), file=sys.stderr
        )
        cv = {(kind, lam): cross_validate(qs, lam, kind) for kind in DESIGNS for lam in LAMBDAS}
        for (kind, lam), result in cv.items():
            print(f"{kind}, lambda {lam}: mean CV MRR {mean_mrr(result):.4f}", file=sys.stderr)
        if args.design != "cv":
            cv = {k: v for k, v in cv.items() if k[0] == args.design}
        kind, lam = max(cv, key=lambda k: (round(mean_mrr(cv[k]), 4), k[1]))  # ties: the stronger penalty
        w = fit_pairs(*pairs(qs, kind), spread(qs, kind), lam)
        ranker = to_params(w, kind)
        params = replace(DEFAULT_PARAMS, ranker=ranker)
        fitted_in = evaluate(
            qs, lambda q: [s.score for s in judged(q, replace(params, confidence=DEFAULT_PARAMS.confidence))]
        )
        kept = replace(params, confidence=replace(params.confidence, weights=ConfidenceWeights()))
        refit = fit_confidence(qs, params)
        params = replace(params, confidence=replace(params.confidence, weights=refit))
        auc_kept, auc_refit = gate_auc(qs, kept), gate_auc(qs, params)
        confidence: ConfidenceWeights | None = refit if mean_auc(auc_refit) > mean_auc(auc_kept) else None
        report = {
            "questions": {s: sum(q.name == s for q in qs) for s in SETS},
            "design": kind,
            "lambda": lam,
            "cv_mean_mrr": {f"{k[0]} {k[1]}": round(mean_mrr(v), 4) for k, v in cv.items()},
            "gate_auc_kept_confidence": auc_kept,
            "gate_auc_refit_confidence": auc_refit,
            "confidence": "refit"
            if confidence
            else "kept (params.ConfidenceWeights: the refit does not raise the AUC)",
        }
    print(
        table(
            {
                "hand-set fusion (before)": evaluate(qs, hand_set),
                f"fitted, leave-one-source-out CV ({kind}, lambda {lam})": cv[kind, lam],
                "fitted, in sample": fitted_in,
            }
        )
    )
    print(json.dumps(report, indent=1))
    print(render_weights(ranker, confidence, "smoke sets" if args.smoke else "train splits"))
    if not args.dry_run:
        out = args.out or WEIGHTS_FILE
        out.write_text(
            render_weights(ranker, confidence, "smoke sets" if args.smoke else "train splits"), encoding="utf-8"
        )
        print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
