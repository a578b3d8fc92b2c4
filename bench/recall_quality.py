"""Retrieval quality of recall on bench/data/memory_eval.json: hybrid recall next to plain vector
search and plain BM25 (the native full-text index alone).

    uv run bench/recall_quality.py            # report on the held-out test split
    uv run bench/recall_quality.py --tune     # grid-search the fusion constants on the tune split

recall@k: the share of answerable questions with an answer among the first k results.
no-answer: the share of unanswerable questions for which recall returns nothing (the floor).
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

from contextware import memory, recall as recall_mod  # noqa: E402
from contextware.project import Project  # noqa: E402

DATA = Path(__file__).parent / "data" / "memory_eval.json"


def load_memory(project: Project, items: list[dict]) -> dict[str, str]:
    ids: dict[str, str] = {}
    for item in items:
        if item["type"] == "fact":
            out = memory.save_fact(project, item["text"], kind=item["kind"], topics=item.get("topics"))
        else:
            out = memory.save_episode(project, item["summary"], goal=item["goal"], result=item["result"],
                                      category=item["category"], topics=item.get("topics"))
        ids[out["id"]] = item["key"]
    return ids


def candidates(project: Project, query: str) -> list[dict]:
    qvec = project.embedder.embed([query])[0]
    hits = []
    for name in ("facts", "episodes"):
        where = "(status IS NULL OR status = 'active')" if name == "facts" else None
        hits += recall_mod.search_table(project, name, query, qvec, where, 30)
    return hits


def ranked(hits: list[dict], key: str, weight: float, half: float) -> list[tuple[float, str]]:
    scored = []
    for h in hits:
        if key == "vector":
            s = h["similarity"] if h["similarity"] is not None else -1
        elif key == "bm25":
            s = h["bm25"] if h["bm25"] > 0 else -1
        else:
            lex = weight * h["bm25"] / (h["bm25"] + half) if h["bm25"] > 0 else 0.0
            s = (h["similarity"] or 0.0) + lex
        if s >= 0:
            scored.append((s, h["row"]["id"]))
    return sorted(scored, reverse=True)


def evaluate(cands: dict, questions: list[dict], no_answer: list[dict], ids: dict, method: str,
             weight: float, half: float, floor: float) -> dict:
    hits1 = hits3 = hits5 = 0
    for q in questions:
        order = [ids[i] for s, i in ranked(cands[q["q"]], method, weight, half) if method != "hybrid" or s >= floor]
        answers = set(q["answers"])
        hits1 += bool(answers & set(order[:1]))
        hits3 += bool(answers & set(order[:3]))
        hits5 += bool(answers & set(order[:5]))
    empty = 0
    if method == "hybrid":
        for q in no_answer:
            empty += not [s for s, _ in ranked(cands[q["q"]], method, weight, half) if s >= floor]
    n = len(questions)
    return {"recall@1": round(hits1 / n, 3), "recall@3": round(hits3 / n, 3), "recall@5": round(hits5 / n, 3),
            "no_answer_empty": round(empty / len(no_answer), 3) if method == "hybrid" else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tune", action="store_true", help="grid-search weight, half and floor on the tune split")
    parser.add_argument("--split", default="test", help="split to report (test, tune or all)")
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CONTEXTWARE_HOME"] = str(Path(tmp) / "home")
        project = Project.open(tmp)
        t0 = time.perf_counter()
        ids = load_memory(project, data["items"])
        load_s = time.perf_counter() - t0
        allq = data["questions"] + data["no_answer"]
        cands = {q["q"]: candidates(project, q["q"]) for q in allq}

    def pick(rows: list[dict], split: str) -> list[dict]:
        return rows if split == "all" else [r for r in rows if r.get("split") == split]

    if args.tune:
        qs, na = pick(data["questions"], "tune"), pick(data["no_answer"], "tune")
        best = None
        for weight, half, floor in itertools.product((0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7), (1, 2, 4, 8),
                                                     [x / 100 for x in range(20, 61, 2)]):
            m = evaluate(cands, qs, na, ids, "hybrid", weight, half, floor)
            # Recall first; among equals, the floor that silences the most unanswerable questions.
            key = (m["recall@3"], m["no_answer_empty"] if m["recall@3"] >= 0.9 else 0, m["recall@1"])
            if best is None or key > best[0]:
                best = (key, weight, half, floor, m)
        print(json.dumps({"tuned_on": "tune", "weight": best[1], "half": best[2], "floor": best[3], **best[4]}))
        return
    qs, na = pick(data["questions"], args.split), pick(data["no_answer"], args.split)
    w, h, f = recall_mod.BM25_WEIGHT, recall_mod.BM25_HALF, recall_mod.FLOOR
    report = {
        "split": args.split, "questions": len(qs), "no_answer_questions": len(na), "memories": len(data["items"]),
        "load_seconds": round(load_s, 2),
        "hybrid": evaluate(cands, qs, na, ids, "hybrid", w, h, f),
        "vector": evaluate(cands, qs, na, ids, "vector", w, h, f),
        "bm25": evaluate(cands, qs, na, ids, "bm25", w, h, f),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
