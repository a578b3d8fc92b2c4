"""Recall on a store whose memories were learned on 20 branches, against the same store without branches.

    uv run bench/branches.py                       # 20,000 rows (18,000 logs, 2,000 facts), 30 queries
    uv run bench/branches.py --rows 5000 --queries 10

A real git repository gets ``main`` and 19 feature branches (each one or two commits; every other
one merged into ``main`` with a merge commit).  Two stores get the same rows (texts from
``bench/scale.py``'s generator; vectors random unit vectors, so no hour of embedding: the filter's
cost does not depend on what the vectors mean): store A with no branch, store B with each row learned
on one of the 20 branches at one of its commits.  Both are searched in one warm process as the
resident service does (in-memory table snapshots, the model loaded), with the default ``current``
branch on ``main``: the p50/p95 of a default recall (every collection) and of the prompt hook's
recall (facts and episodes, its gate).  Prints one JSON document; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import COMPONENTS, NOUNS, TECH, _text

BRANCHES = 20


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(root: Path) -> dict[str, list[str]]:
    """``main`` and 19 feature branches; the commits of each (every other feature merged)."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "bench")
    git(root, "config", "user.email", "bench@example.com")
    (root / "README").write_text("bench\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    commits: dict[str, list[str]] = {"main": [git(root, "rev-parse", "HEAD")]}
    for b in range(1, BRANCHES):
        name = f"feature/b{b}"
        git(root, "checkout", "-q", "-b", name, "main")
        commits[name] = []
        for c in range(1 + b % 2):
            (root / f"f{b}_{c}.txt").write_text(f"{b} {c}\n")
            git(root, "add", ".")
            git(root, "commit", "-q", "-m", f"{name} {c}")
            commits[name].append(git(root, "rev-parse", "HEAD"))
        git(root, "checkout", "-q", "main")
        if b % 2 == 0:
            git(root, "merge", "-q", "--no-ff", "-m", f"merge {name}", name)
            commits["main"].append(git(root, "rev-parse", "HEAD"))
    return commits


def fill(project: Any, rows: int, commits: dict[str, list[str]] | None, seed: int = 7) -> None:
    import numpy as np
    import pyarrow as pa

    from contextware.core.text import text_hash
    from contextware.storage.embedded_text import search_text
    from contextware.storage.integrity import stamp

    rng = random.Random(seed)
    vec_rng = np.random.default_rng(seed)
    emb = project.embedder
    end = datetime(2026, 11, 1, tzinfo=timezone.utc)
    names = sorted(commits) if commits else []
    facts = rows // 10
    for table, count in (("facts", facts), ("logs", rows - facts)):
        batch: list[dict] = []
        vectors = vec_rng.standard_normal((count, emb.dim)).astype("float32")
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for i in range(count):
            created = end - timedelta(days=rng.uniform(0, 365))
            if table == "facts":
                text = (
                    f"Fact {i}: the {rng.choice(COMPONENTS)} service uses {rng.choice(TECH)} for its "
                    f"{rng.choice(NOUNS)}, decided for {rng.choice(NOUNS)} {rng.randrange(100)}."
                )
                row: dict[str, Any] = {
                    "id": f"fact-{i:012x}",
                    "text": text,
                    "kind": "decision",
                    "topics": [],
                    "status": "active",
                }
            else:
                row = {
                    "id": f"log-{i:012x}",
                    "session_id": f"bench-{i // 20}",
                    "role": "user" if i % 2 == 0 else "agent",
                    "text": _text(rng),
                    "chunk_index": 0,
                    "chunk_count": 1,
                }
            row.update(source="bench", created_at=created, updated_at=created, text_hash=text_hash(row["text"]))
            if commits:
                branch = names[i % len(names)]
                row.update(branch=branch, commit=rng.choice(commits[branch]))
            row["search_text"] = search_text(table, row)
            row["vector"] = vectors[i].tolist()
            batch.append(row)
        stamp(table, batch)
        for start in range(0, len(batch), 5000):
            part = batch[start : start + 5000]
            project.db.write(
                table,
                lambda t, p=part: t.add(pa.Table.from_pylist(p, schema=t.schema)),
                dim=emb.dim,
                model_id=emb.model_id,
            )
        project.db.compact(table)


def timed(projects: dict[str, Any], questions: list[str], **inputs: Any) -> dict[str, dict]:
    """p50/p95 of ``ask`` per store, the stores asked in turn for each question (the machine's load
    drifts: measuring one store after the other would time them under different loads)."""
    from contextware.memory.recall.pipeline import ask

    for project in projects.values():
        for q in questions[:3]:
            ask(project, q, **inputs)  # warm: snapshots, masks, ancestry
    samples: dict[str, list[float]] = {label: [] for label in projects}
    for q in questions:
        for label, project in projects.items():
            t0 = time.perf_counter()
            ask(project, q, **inputs)
            samples[label].append((time.perf_counter() - t0) * 1000)
    out = {}
    for label, got in samples.items():
        got.sort()
        out[label] = {"p50_ms": round(statistics.median(got), 1), "p95_ms": round(got[int(0.95 * (len(got) - 1))], 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()

    from contextware.storage import table_search
    from contextware.storage.project import Project

    table_search.keep_snapshots()
    work = Path(tempfile.mkdtemp(prefix="cw-branches-"))
    root = work / "repo"
    commits = make_repo(root)
    stores = {}
    for label, learned in (("without_branches", None), ("on_20_branches", commits)):
        data = work / label
        project = Project(root=root, data_dir=data, db_uri=str(data / "lancedb"))
        project.ensure_data_dir()
        print(f"filling {label} ...", file=sys.stderr)
        fill(project, args.rows, learned)
        stores[label] = project
    rng = random.Random(3)
    questions = [
        f"what did we decide about {rng.choice(TECH)} for the {rng.choice(COMPONENTS)} {rng.choice(NOUNS)}?"
        for _ in range(args.queries)
    ]
    out: dict = {"rows": args.rows, "branches": BRANCHES, "queries": args.queries, "results": {}}
    print("measuring ...", file=sys.stderr)
    calls = {"recall": {}, "hook_recall": {"without": ("logs",), "min_confidence": 0.25, "limit": 3}}
    for call, inputs in calls.items():
        for label, numbers in timed(stores, questions, **inputs).items():
            out["results"].setdefault(label, {})[call] = numbers
    base, other = out["results"]["without_branches"], out["results"]["on_20_branches"]
    out["ratio_p50"] = {k: round(other[k]["p50_ms"] / base[k]["p50_ms"], 2) for k in base}
    from contextware.storage import gitstate

    out["git_processes"] = gitstate.runs
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
