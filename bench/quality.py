"""Recall quality on public development sets with frozen test splits, beside plain baselines in the
same run: every set's test split, recall next to plain BM25 (Okapi), plain cosine (the same model)
and their reciprocal-rank fusion (RRF, k 60).

    uv run bench/quality.py                    # test splits; writes the table into docs/benchmarks.md
    uv run bench/quality.py --split train      # the split to tune on (never written to the docs)
    uv run bench/quality.py --only engineering # one set (engineering, locomo)
    uv run bench/quality.py --smoke            # the tiny sets of bench/data/smoke_*: seconds, for the tests
    uv run bench/quality.py --noise-turns 5000 # also the engineering set beside 5,000 captured turns
    uv run bench/quality.py --history-turns 5000   # ... and beside 5,000 turns of a real project's history

Sets (docs/benchmarks.md describes them; split by source, whole projects or whole conversations):

- ``engineering``: ``bench/data/eng_memory.json``, memories an agent would save, rewritten from the
  FAQ and troubleshooting pages and the changelogs' deprecation notes of public projects (sources in
  the file), questions in other words, supersession pairs with their real dates (the newer saved
  later, unlinked), on-topic questions nothing answers.  All projects of a split share one store.
- ``locomo``: LoCoMo (Maharana et al., ACL 2024), ten long conversations between two people over
  months, turn-level: every turn is a log row with its session's real date, ``Speaker: text``;
  questions of categories 1-4 with their evidence turns; category 5 (adversarial: not in the
  conversation) as the unanswerable ones.  Its licence is not stated, so it is not in this
  repository: bench/README.md says how to fill ``~/.cache/contextware/bench/locomo10.json``.
  One store per conversation (questions are about their own conversation).

Metrics: R@k, an evidence row among the first k; MRR within the first 10; ``hook``: what the prompt
hook would inject (``contextware.memory.recall.prompt.for_prompt``, the hook's own selection): the
share of answerable questions whose answer is injected, the mean items injected, the share of
unanswerable questions it stays silent on; ``AUC``: the best confidence of answerable against
unanswerable questions (recall's gate; for the baselines their best score).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
import zipfile
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from contextware.memory.recall import ask  # noqa: E402
from contextware.memory.team.memfile import render  # noqa: E402
from contextware.memory.team.share import import_memory  # noqa: E402
from contextware.storage.config import DEFAULTS as CONFIG_DEFAULTS  # noqa: E402
from contextware.storage.project import Project  # noqa: E402

DATA = Path(__file__).parent / "data"
ENG = DATA / "eng_memory.json"
SMOKE_ENG = DATA / "smoke_eng_memory.json"
SMOKE_LOCOMO = DATA / "smoke_locomo.json"
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- quality.py:start -->", "<!-- quality.py:end -->"
LIMIT = 10
RRF_K = 60
BASELINES = ("bm25", "cosine", "rrf")


def locomo_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "contextware" / "bench" / "locomo10.json"


# -- baselines ----------------------------------------------------------------------------------------
_TOKEN = re.compile(r"[a-z0-9]+")


class BM25:
    """Okapi BM25 (k1 1.2, b 0.75), lower-cased alphanumeric words, no stemming, no stop words."""

    def __init__(self, ids: list[str], texts: list[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.ids, self.k1, self.b = ids, k1, b
        self.tf = [Counter(_TOKEN.findall(t.lower())) for t in texts]
        self.len = [sum(c.values()) for c in self.tf]
        self.avg = sum(self.len) / max(1, len(self.len))
        df: Counter[str] = Counter()
        for c in self.tf:
            df.update(c.keys())
        n = len(texts)
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}

    def scores(self, query: str) -> list[float]:
        out = [0.0] * len(self.ids)
        for w in set(_TOKEN.findall(query.lower())):
            idf = self.idf.get(w)
            if idf is None:
                continue
            for i, tf in enumerate(self.tf):
                f = tf.get(w)
                if f:
                    out[i] += idf * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * self.len[i] / self.avg))
        return out


def _order(scores: Any) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def baselines(ids: list[str], texts: list[str], vecs: Any, question: str, qvec: Any, bm: BM25) -> dict[str, tuple]:
    """Each baseline's ranking (ids, best first, at most LIMIT) and its best score."""
    import numpy as np

    lex = bm.scores(question)
    cos = vecs @ np.asarray(qvec, dtype=np.float32)
    by_lex = [i for i in _order(lex) if lex[i] > 0]
    by_cos = _order(list(cos))
    rrf: dict[int, float] = {}
    for ranking in (by_lex[:100], by_cos[:100]):
        for r, i in enumerate(ranking, 1):
            rrf[i] = rrf.get(i, 0.0) + 1.0 / (RRF_K + r)
    by_rrf = sorted(rrf, key=lambda i: (-rrf[i], i))
    return {
        "bm25": ([ids[i] for i in by_lex[:LIMIT]], lex[by_lex[0]] if by_lex else 0.0),
        "cosine": ([ids[i] for i in by_cos[:LIMIT]], float(cos[by_cos[0]])),
        "rrf": ([ids[i] for i in by_rrf[:LIMIT]], rrf[by_rrf[0]] if by_rrf else 0.0),
    }


def read_rows(project: Project, table_name: str) -> tuple[list[str], list[str], Any]:
    import numpy as np

    table = project.db.open_table(table_name)
    if table is None:
        return [], [], np.zeros((0, 0), dtype=np.float32)
    data = project.db.read(lambda: table.search().select(["id", "text", "vector"]).limit(None).to_arrow())
    vecs = np.asarray(data.column("vector").to_pylist(), dtype=np.float32)
    vecs /= np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None)
    return data.column("id").to_pylist(), data.column("text").to_pylist(), vecs


# -- metrics ------------------------------------------------------------------------------------------
def rank_of(found: list[str], evidence: set[str]) -> int | None:
    return next((i + 1 for i, rid in enumerate(found) if rid in evidence), None)


def summarize(ranks: list[int | None]) -> dict[str, float]:
    n = max(1, len(ranks))
    out = {f"R@{k}": sum(1 for r in ranks if r is not None and r <= k) / n for k in (1, 3, 10)}
    out["MRR"] = sum(1 / r for r in ranks if r is not None and r <= LIMIT) / n
    return {k: round(v, 3) for k, v in out.items()}


def auc(pos: list[float], neg: list[float]) -> float | None:
    """The chance that an answerable question's score beats an unanswerable one's (ties half)."""
    if not pos or not neg:
        return None
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return round(wins / (len(pos) * len(neg)), 3)


def _iso(d: datetime) -> str:
    return d.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


DEFAULT_HOOK_GATE = CONFIG_DEFAULTS["hook_min_confidence"]
DEFAULT_RECALL_GATE = CONFIG_DEFAULTS["recall_min_confidence"]
RECALL_GATES = (0.0, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2)  # recall's gate swept (the report's JSON)
HOOK_GATES = (0.0, 0.15, 0.25, 0.35, 0.45, 0.55)  # the trade-off table's gates (the default is config's)


def _hook(project: Project, question: str, gate: float | None = None) -> list[str]:
    """The ids the prompt hook would inject for this prompt (its own selection) at ``gate``."""
    from contextware.memory.recall.prompt import for_prompt

    return [r["id"] for r in for_prompt(project, question, gate=gate).results]


def score_questions(
    project: Project, questions: list[dict], table_names: tuple[str, ...], scope: str, hook: bool
) -> dict[str, Any]:
    """Recall and the baselines over the store's rows of ``table_names``, for ``questions`` (each
    ``q`` and ``evidence``, a list of row ids: empty for an unanswerable one)."""
    ids: list[str] = []
    texts: list[str] = []
    parts = []
    for name in table_names:
        i, t, v = read_rows(project, name)
        ids, texts = ids + i, texts + t
        if len(i):
            parts.append(v)
    import numpy as np

    vecs = np.concatenate(parts) if parts else np.zeros((0, 384), dtype=np.float32)
    bm = BM25(ids, texts)
    qvecs: Any = project.embedder.embed([q["q"] for q in questions]) if questions else []
    per = []
    ms: list[float] = []
    for q, qv in zip(questions, qvecs, strict=True):
        t0 = time.perf_counter()
        out = ask(project, q["q"], scope=scope, limit=LIMIT, min_confidence=0)
        ms.append((time.perf_counter() - t0) * 1000)
        found = {
            "recall": ([r["id"] for r in out["results"]], max((r["confidence"] for r in out["results"]), default=0.0))
        }
        found |= baselines(ids, texts, vecs, q["q"], qv, bm)
        ev = set(q["evidence"])
        row: dict[str, Any] = {
            "answerable": bool(ev),
            "ranks": {m: rank_of(f[0], ev) for m, f in found.items()},
            "top": {m: f[1] for m, f in found.items()},
        }
        if hook:
            injected = _hook(project, q["q"])
            row["hook"] = {"items": len(injected), "answer": bool(ev & set(injected))}
            row["sweep"] = [
                {"items": len(got), "answer": bool(ev & set(got))}
                for got in (_hook(project, q["q"], gate) for gate in HOOK_GATES)
            ]
        per.append(row)
    return {"per": per, "ms": ms}


def report(per: list[dict], ms: list[float]) -> dict[str, Any]:
    ans = [p for p in per if p["answerable"]]
    una = [p for p in per if not p["answerable"]]
    methods = ("recall", *BASELINES)
    out: dict[str, Any] = {
        "questions": {"answerable": len(ans), "unanswerable": len(una)},
        "methods": {m: summarize([p["ranks"][m] for p in ans]) for m in methods},
        "auc": {m: auc([p["top"][m] for p in ans], [p["top"][m] for p in una]) for m in methods},
        "recall_ms_p50": round(sorted(ms)[len(ms) // 2], 1) if ms else None,
        # answerable questions that recall, at its default gate, answers with nothing
        "silenced_answerable": round(sum(p["top"]["recall"] < DEFAULT_RECALL_GATE for p in ans) / max(1, len(ans)), 3),
        "recall_tradeoff": [
            {
                "gate": gate,
                "silenced_answerable": round(sum(p["top"]["recall"] < gate for p in ans) / max(1, len(ans)), 3),
                "silent_unanswerable": round(sum(p["top"]["recall"] < gate for p in una) / len(una), 3)
                if una
                else None,
            }
            for gate in RECALL_GATES
        ],
    }
    if per and "hook" in per[0]:
        out["hook"] = {
            "answer_injected": round(sum(p["hook"]["answer"] for p in ans) / max(1, len(ans)), 3),
            "items_mean": round(sum(p["hook"]["items"] for p in per) / max(1, len(per)), 2),
            "items_mean_answerable": round(sum(p["hook"]["items"] for p in ans) / max(1, len(ans)), 2),
            "silent_unanswerable": round(sum(p["hook"]["items"] == 0 for p in una) / max(1, len(una)), 3)
            if una
            else None,
        }
        out["hook_tradeoff"] = [
            {
                "gate": gate,
                "answer_injected": round(sum(p["sweep"][i]["answer"] for p in ans) / max(1, len(ans)), 3),
                "items_mean": round(sum(p["sweep"][i]["items"] for p in per) / max(1, len(per)), 2),
                "silent_unanswerable": round(sum(p["sweep"][i]["items"] == 0 for p in una) / len(una), 3)
                if una
                else None,
            }
            for i, gate in enumerate(HOOK_GATES)
        ]
    return out


# -- engineering memory -------------------------------------------------------------------------------
def eng_rows(projects: list[dict]) -> tuple[list[dict], dict[str, str]]:
    """Memory lines (facts, unlinked, with their dates) and key -> fact id."""
    import hashlib

    rows, ids = [], {}
    for p in projects:
        for m in p["memories"]:
            key = f"{p['name']}/{m['key']}"
            fid = "fact-" + hashlib.sha256(key.encode()).hexdigest()[:12]
            ids[key] = fid
            rows.append(
                {
                    "id": fid,
                    "kind": m.get("kind", "note"),
                    "text": m["text"],
                    "topics": [p["name"].lower()],
                    "created_at": m["date"] + "T12:00:00Z",
                }
            )
    rows.sort(key=lambda r: (r["created_at"], r["id"]))
    return rows, ids


def noise_turns(count: int, locomo: Path | None) -> list[dict]:
    """``count`` captured turns that answer no engineering question: LoCoMo's conversations in
    order (real people's chat, real dates), as log rows."""
    rows: list[dict] = []
    for index, sample in enumerate(load_locomo(locomo or locomo_path())):
        rows += locomo_rows(index, sample)[0]
        if len(rows) >= count:
            break
    if len(rows) < count:
        raise SystemExit(f"LoCoMo holds {len(rows)} turns, fewer than --noise-turns {count}.")
    return rows[:count]


def history_turns(count: int) -> list[dict]:
    """``count`` captured turns of a real project's history, closer to a coding agent's than
    LoCoMo's chat: HarfBuzz's commits (``bench/long_horizon.py``: Debian's changelog, cached), each
    commit's subject the user's turn and its message the agent's, with their real dates."""
    from long_horizon import changelog_text, commit_rows, parse_log

    rows: list[dict] = []
    for commit in parse_log(changelog_text()):
        rows += commit_rows(commit)
        if len(rows) >= count:
            break
    if len(rows) < count:
        raise SystemExit(f"HarfBuzz's history holds {len(rows)} turns, fewer than --history-turns {count}.")
    return rows[:count]


def run_engineering(path: Path, split: str, noise: list[dict] | None = None) -> dict[str, Any]:
    """The engineering set's ``split``; with ``noise`` (log rows), those captured turns are stored
    beside the memories and recall searches both (scope all), as do the baselines."""
    data = json.loads(path.read_text(encoding="utf-8"))
    projects = [p for p in data["projects"] if split == "all" or p["split"] == split]
    rows, ids = eng_rows(projects)
    questions: list[dict] = []
    pairs = []
    for p in projects:
        name = p["name"]
        for q in p["questions"]:
            questions.append({"q": q["q"], "evidence": [ids[f"{name}/{k}"] for k in q["answers"]]})
        questions += [{"q": q, "evidence": []} for q in p["unanswerable"]]
        pairs += [(ids[f"{name}/{s['older']}"], ids[f"{name}/{s['newer']}"], s["q"]) for s in p.get("supersede", [])]
    with tempfile.TemporaryDirectory() as tmp:
        project = Project.open(tmp)
        import_memory(project, render(rows), source="eng_memory.json")
        if noise:
            import_memory(project, render(noise), source="captured-turns")
        tables, scope = (("facts", "logs"), "all") if noise else (("facts",), "facts")
        scored = score_questions(project, questions, tables, scope, hook=True)
        out = report(scored["per"], scored["ms"])
        newer_first = older_listed = 0
        for older, newer, q in pairs:
            got = [r["id"] for r in ask(project, q, scope="facts", limit=5, min_confidence=0)["results"]]
            rn, ro = rank_of(got, {newer}), rank_of(got, {older})
            newer_first += rn is not None and (ro is None or rn < ro)
            older_listed += ro is not None
    out["projects"] = [p["name"] for p in projects]
    out["memories"] = len(rows)
    if noise:
        out["turns"] = len(noise)
    out["supersession"] = {"pairs": len(pairs), "newer_above_older": newer_first, "older_in_top5": older_listed}
    return out


# -- LoCoMo -------------------------------------------------------------------------------------------
def load_locomo(path: Path) -> list[dict]:
    """The ten conversations in locomo10.json's layout (a list of samples with ``sample_id``,
    ``conversation`` and ``qa``); the repository's zip (one file per conversation) is read as well."""
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as z:
            names = sorted(n for n in z.namelist() if n.endswith(".json"))
            return [
                {"sample_id": f"conv-{Path(n).stem}", "conversation": (d := json.loads(z.read(n))), "qa": d["qa"]}
                for n in names
            ]
    return json.loads(path.read_text(encoding="utf-8"))


def _session_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def locomo_rows(index: int, sample: dict) -> tuple[list[dict], dict[str, str]]:
    """Every turn a log row (``Speaker: text``, an image's caption appended, and the speaker in its
    own column, as a chat of several people is saved) with its session's date (a minute per turn);
    the first speaker is the ``user``.  dia_id -> row id."""
    conv = sample["conversation"]
    rows, ids = [], {}
    sessions = sorted(
        (int(k.split("_")[1]), k) for k in conv if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list)
    )
    for n, key in sessions:
        start = _session_date(conv[f"{key}_date_time"])
        for t, turn in enumerate(conv[key]):
            rid = f"log-{index:04x}{n:04x}{t:04x}"
            ids[turn["dia_id"]] = rid
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            role = "user" if turn["speaker"] == conv["speaker_a"] else "agent"
            rows.append(
                {
                    "id": rid,
                    "session_id": f"{sample['sample_id']}-s{n}",
                    "role": role,
                    "speaker": turn["speaker"],
                    "text": text,
                    "created_at": _iso(start + timedelta(minutes=t)),
                }
            )
    return rows, ids


def locomo_split(samples: list[dict], split: str) -> list[tuple[int, dict]]:
    """Train: the first half of the conversations by id; test: the second (frozen)."""
    ordered = sorted(enumerate(samples), key=lambda p: p[1]["sample_id"])
    half = (len(ordered) + 1) // 2
    return ordered if split == "all" else ordered[:half] if split == "train" else ordered[half:]


def run_locomo(path: Path, split: str, max_questions: int | None = None) -> dict[str, Any]:
    samples = load_locomo(path)
    per: list[dict] = []
    ms: list[float] = []
    turns = 0
    chosen = locomo_split(samples, split)
    for index, sample in chosen:
        rows, ids = locomo_rows(index, sample)
        turns += len(rows)
        questions = []
        for qa in sample["qa"]:
            if qa.get("category") in (1, 2, 3, 4):
                ev = [ids[e] for e in qa.get("evidence", []) if e in ids]
                if ev:
                    questions.append({"q": qa["question"], "evidence": ev})
            elif qa.get("category") == 5:
                questions.append({"q": qa["question"], "evidence": []})
        questions = questions[:max_questions] if max_questions else questions
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            project = Project.open(tmp)
            import_memory(project, render(rows), source=sample["sample_id"])
            print(f"{sample['sample_id']}: {len(rows)} turns in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            scored = score_questions(project, questions, ("logs",), "logs", hook=False)
        per += scored["per"]
        ms += scored["ms"]
    out = report(per, ms)
    out["conversations"] = [s["sample_id"] for _, s in chosen]
    out["turns"] = turns
    return out


# -- rendering ----------------------------------------------------------------------------------------
def table(name: str, r: dict[str, Any]) -> list[str]:
    q = r["questions"]
    lines = [
        f"**{name}** ({q['answerable']} answerable, {q['unanswerable']} unanswerable questions"
        + (f", {r['memories']} memories" if "memories" in r else "")
        + (f", {r['turns']} turns" if "turns" in r else "")
        + ")",
        "",
        "| method | R@1 | R@3 | R@10 | MRR | gate AUC | hook: answer injected | hook: items | hook: silent on unanswerable |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in ("recall", *BASELINES):
        s = r["methods"][m]
        h = r.get("hook") if m == "recall" else None
        hook = (
            f"{h['answer_injected']:.3f} | {h['items_mean']:.2f} | "
            + (f"{h['silent_unanswerable']:.3f}" if h["silent_unanswerable"] is not None else "-")
            if h
            else "- | - | -"
        )
        a = r["auc"][m]
        lines.append(
            f"| {m} | {s['R@1']:.3f} | {s['R@3']:.3f} | {s['R@10']:.3f} | {s['MRR']:.3f} | "
            f"{a if a is not None else '-'} | {hook} |"
        )
    if r.get("hook_tradeoff"):
        lines += [
            "",
            "The prompt hook's trade-off: its gate (`hook_min_confidence`, default "
            f"{DEFAULT_HOOK_GATE}) against answers injected, items and silence.",
            "",
            "| hook gate | answer injected | items | silent on unanswerable |",
            "|---|---|---|---|",
        ]
        for t in r["hook_tradeoff"]:
            silent = f"{t['silent_unanswerable']:.3f}" if t["silent_unanswerable"] is not None else "-"
            lines.append(f"| {t['gate']:.2f} | {t['answer_injected']:.3f} | {t['items_mean']:.2f} | {silent} |")
    if "silenced_answerable" in r:
        at = next((t for t in r.get("recall_tradeoff", []) if t["gate"] == DEFAULT_RECALL_GATE), None)
        quiet = at["silent_unanswerable"] if at else None
        lines += [
            "",
            f"Recall at its default gate (`recall_min_confidence` {DEFAULT_RECALL_GATE}) answers nothing to "
            f"{r['silenced_answerable']:.3f} of the answerable questions"
            + (f" and to {quiet:.3f} of the unanswerable ones." if quiet is not None else "."),
        ]
    if "supersession" in r:
        s = r["supersession"]
        lines += [
            "",
            f"Unlinked supersession: the newer fact above the older in {s['newer_above_older']} of {s['pairs']} "
            f"pairs; the older still in the top 5 in {s['older_in_top5']} of {s['pairs']}.",
        ]
    return [*lines, ""]


def render_report(results: dict[str, Any], split: str, options: str = "") -> str:
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    out = [f"`uv run bench/quality.py{options}` ({split} split, {when}):", ""]
    for name, r in results.items():
        out += table(name, r) if "methods" in r else [f"**{name}**: {r['skipped']}", ""]
    return "\n".join(out)


def write_docs(text: str) -> None:
    doc = DOCS.read_text(encoding="utf-8")
    if START in doc and END in doc:
        head, rest = doc.split(START, 1)
        doc = head + START + "\n" + text + "\n" + END + rest.split(END, 1)[1]
    else:
        doc = doc.rstrip("\n") + "\n\n## Public development sets\n\n" + START + "\n" + text + "\n" + END + "\n"
    DOCS.write_text(doc, encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("train", "test", "all"), default="test")
    ap.add_argument("--only", choices=("engineering", "locomo"), action="append")
    ap.add_argument("--locomo", type=Path, default=None, help="locomo10.json or locomo10.zip (default: the cache)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks.md")
    ap.add_argument("--smoke", action="store_true", help="the tiny smoke sets (never written to the docs)")
    ap.add_argument(
        "--noise-turns",
        type=int,
        default=0,
        metavar="N",
        help="also the engineering set with N captured turns of LoCoMo beside its memories (recall over both)",
    )
    ap.add_argument(
        "--history-turns",
        type=int,
        default=0,
        metavar="N",
        help="also the engineering set beside N turns of HarfBuzz's commit history (engineering talk)",
    )
    args = ap.parse_args(argv)
    sets = args.only or ["engineering", "locomo"]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as home:
        os.environ["CONTEXTWARE_HOME"] = home
        os.environ["CONTEXTWARE_SERVICE"] = "off"
        if "engineering" in sets:
            eng, split = (SMOKE_ENG, "all") if args.smoke else (ENG, args.split)
            results["engineering"] = run_engineering(eng, split)
            if args.noise_turns > 0:
                noise = noise_turns(args.noise_turns, SMOKE_LOCOMO if args.smoke else args.locomo)
                results[f"engineering + {len(noise):,} captured turns"] = run_engineering(eng, split, noise)
            if args.history_turns > 0 and not args.smoke:
                noise = history_turns(args.history_turns)
                results[f"engineering + {len(noise):,} turns of a project's history"] = run_engineering(
                    eng, split, noise
                )
        if "locomo" in sets:
            path = SMOKE_LOCOMO if args.smoke else (args.locomo or locomo_path())
            if path.is_file():
                results["locomo"] = run_locomo(path, "all" if args.smoke else args.split)
            else:
                results["locomo"] = {"skipped": f"no data at {path} (bench/README.md says how to fetch it)"}
    options = f" --noise-turns {args.noise_turns}" if args.noise_turns > 0 else ""
    options += f" --history-turns {args.history_turns}" if args.history_turns > 0 and not args.smoke else ""
    text = render_report(results, "smoke" if args.smoke else args.split, options)
    print(json.dumps(results, indent=1) if args.json else text)
    if args.split == "test" and not args.smoke and not args.no_docs and not args.only:
        write_docs(text)


if __name__ == "__main__":
    main()
