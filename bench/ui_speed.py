"""The memory browser's speed (issue 25's targets: first page < 1 s, a search < 200 ms p50 on
20,000 rows, the code map of a 5,000-file project < 1 s), and what ``--explain`` costs recall.

    uv run bench/ui_speed.py                         # 3,000 log rows + 200 facts, 5,000 files
    uv run bench/ui_speed.py --rows 20000            # the issue's store size (the import takes long)
    uv run bench/ui_speed.py --keep /tmp/cw-ui       # keep the store; then --reuse measures it again

The store is ``bench/scale.py``'s generated export, imported by ``scripts/import.py`` (real
embeddings).  The code index gets ``--files`` real files on disk (nested folders, 5-400 lines) and
one ``code_index`` row each with its real path, size, mtime and checksum but no vector: the map
reads only those columns, and embedding 5,000 summaries would take minutes.  Then, with the real
server (``contextware.browser.server``) in this process and real HTTP over loopback:

- ``first_page``: ``scripts/ui.py --no-browser`` started as a person does, to its dashboard answered
  (process start included), over ``--cold-runs`` runs: without a resident service (the process
  imports LanceDB and opens the tables itself) and with a warm one (it answers the first figures);
- warm p50/p95 of the dashboard, the memory list, a search (the real recall), the explanation page,
  the code map's root and one folder, one memory;
- ``recall`` in-process, A against B on the same questions, interleaved: default vs ``explain=True``;
  and the prompt hook's recall without and with its decision record (explanation, entry, append).

Prints one JSON document; progress on stderr.  Numbers depend on machine load."""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from scale import _import, _stats, export_file  # noqa: E402

QUESTIONS = [
    "why does the billing migration time out?",
    "which service uses Kafka for its queue?",
    "how do we retry failed exports?",
    "what did we decide about the auth cache?",
    "the scheduler deadlocks on Postgres",
    "where does the mailer store attachments?",
    "who changed the gateway timeouts?",
    "reports slow down after the ingest change",
]


def _log(msg: str) -> None:
    sys.stderr.write(f"[ui_speed] {msg}\n")
    sys.stderr.flush()


def write_code_files(project: Any, files: int, seed: int = 11) -> None:
    """``files`` source files under nested folders, each with its code_index row (no vector)."""
    import pyarrow as pa

    from contextware.storage.integrity import stamp
    from contextware.storage.schemas import CODE_TABLE

    rng = random.Random(seed)
    rows = []
    for i in range(files):
        folder = f"src/pkg{i % 25}/mod{(i // 25) % 8}" + (f"/sub{i % 3}" if i % 5 == 0 else "")
        path = project.root / folder / f"file_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [f"def f_{i}_{n}(x):\n    return x + {n}\n" for n in range(rng.randrange(2, 200))]
        path.write_text(f'"""Module {i}."""\n' + "".join(lines))
        st = path.stat()
        rel = path.relative_to(project.root).as_posix()
        rows.append(
            {
                "id": rel,
                "file_path": rel,
                "language": "python",
                "summary": f"Module {i}: small helper functions.",
                "symbols": [f"f_{i}_0"],
                "summarizer": "local",
                "mtime": st.st_mtime,
                "size": st.st_size,
                "content_hash": f"{i:064x}",
                "indexed_at": None,
                "search_text": rel,
                "imports": [],
                "questions": [],
                "vector": None,
            }
        )
    stamp(CODE_TABLE, rows)
    embedder = project.embedder

    def add(tbl: Any) -> None:
        tbl.add(pa.Table.from_pylist(rows, schema=tbl.schema))

    project.db.write(CODE_TABLE, add, dim=embedder.dim, model_id=embedder.model_id)


def build(root: Path, env: dict[str, str], rows: int, files: int) -> None:
    from contextware.core.settings import Settings
    from contextware.storage.project import Project

    export = root.parent / "export.jsonl"
    export_file(export, rows)
    _log(f"importing {rows} log rows + 200 facts (real embeddings) ...")
    took, _, report = _import(root, env, export)
    _log(f"imported in {took:.0f} s: {report.get('added', report)}")
    project = Project.open(root, Settings.from_env(env))
    _log(f"writing {files} files and their code_index rows ...")
    write_code_files(project, files)


def first_page(root: Path, env: dict[str, str], runs: int) -> list[float]:
    from tests.support.browser import request

    out = []
    for _ in range(runs):
        t = time.perf_counter()
        proc = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "python"), str(REPO / "scripts" / "ui.py"), "--no-browser"],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        url = ""
        while not url:
            line = proc.stderr.readline()
            if not line:
                raise SystemExit(f"ui.py exited: {proc.wait()}")
            if "token=" in line:
                url = line.strip()
        port, token = int(url.split(":")[2].split("/")[0]), url.split("token=")[1]
        answer = request(port, "/", token=token)
        out.append(time.perf_counter() - t)
        assert answer.status == 200, answer.text[:300]
        proc.terminate()
        proc.communicate(timeout=30)
    return out


def timed(fn: Any, runs: int) -> dict[str, float]:
    samples = []
    for i in range(runs):
        t = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - t)
    return _stats(samples)


def hook_record_cost(project: Any, queries: list[Any], runs: int) -> dict[str, Any]:
    """What the prompt hook's record adds to a turn: its recall as before against recall with
    ``explain`` plus ``decisions.entry`` and ``decisions.record`` (one JSON line appended)."""
    from contextware.memory.recall import parse_query, recall
    from contextware.memory.turns import decisions

    # As the hook asks (hosts/hooks/handlers.py before_agent): no logs, its gate and margin.
    hook = [
        parse_query(q.text, scope="all", limit=8, without=("logs",), min_confidence=0.25, margin=0.2) for q in queries
    ]
    before: list[float] = []
    after: list[float] = []
    for i in range(runs * 2):
        q = hook[i % len(hook)]
        for recorded in (False, True) if i % 2 else (True, False):
            t = time.perf_counter()
            result = recall(project, q, explain=recorded)
            if recorded:
                ids = [r["id"] for r in result.results]
                decisions.record(project, decisions.entry("BeforeAgent", "bench", q.text, result, ids))
            (after if recorded else before).append(time.perf_counter() - t)
    return {"without": _stats(before), "with": _stats(after)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=3000, help="log rows in the store (default 3000; the issue: 20000)")
    parser.add_argument("--files", type=int, default=5000, help="files in the code index (default 5000)")
    parser.add_argument("--runs", type=int, default=30, help="warm requests per page (default 30)")
    parser.add_argument("--cold-runs", type=int, default=3, help="ui.py starts to first page (default 3)")
    parser.add_argument("--keep", metavar="DIR", help="build the store in DIR and keep it")
    parser.add_argument("--reuse", action="store_true", help="with --keep: measure the store built there before")
    args = parser.parse_args()

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="cw-ui-speed-"))
    root = work / "proj"
    env = {
        **os.environ,
        "CONTEXTWARE_HOME": str(work / "home"),
        "CONTEXTWARE_SERVICE": "off",
        "CONTEXTWARE_PROJECT_ROOT": str(root),
    }
    os.environ.update({k: env[k] for k in ("CONTEXTWARE_HOME", "CONTEXTWARE_SERVICE", "CONTEXTWARE_PROJECT_ROOT")})
    if not args.reuse:
        root.mkdir(parents=True, exist_ok=True)
        build(root, env, args.rows, args.files)

    from contextware.core.settings import Settings
    from contextware.memory.recall import parse_query, recall
    from contextware.storage.project import Project
    from tests.support.browser import request, served_browser

    project = Project.open(root, Settings.from_env(env))
    _log("first page, no service ...")
    cold = first_page(root, env, args.cold_runs)
    _log("first page, warm service ...")
    on = {**env, "CONTEXTWARE_SERVICE": "auto"}
    service = [str(REPO / ".venv" / "bin" / "python"), str(REPO / "scripts" / "service.py")]
    subprocess.run([*service, "start"], cwd=root, env=on, capture_output=True, check=True, timeout=120)
    for warm_up in (["memory", "stats"], ["context"], ["recall", "warm up"]):  # warm: its tables open, its model loaded
        script = REPO / "scripts" / f"{warm_up[0]}.py"
        subprocess.run([service[0], str(script), *warm_up[1:]], cwd=root, env=on, capture_output=True, timeout=300)
    try:
        warm = first_page(root, on, args.cold_runs)
    finally:
        subprocess.run([*service, "stop"], cwd=root, env=on, capture_output=True, timeout=120)
    out: dict[str, Any] = {
        "rows": args.rows,
        "files": args.files,
        "load_avg": os.getloadavg()[0],
        "first_page_ms": {
            "no_service": [round(s * 1000) for s in cold],
            "warm_service": [round(s * 1000) for s in warm],
        },
    }
    with served_browser(project) as served:

        def get(path: str) -> None:
            answer = request(served.port, path, token=served.token)
            assert answer.status == 200, (path, answer.text[:300])

        get("/memories?q=warm+up")  # the model and the tables, once
        some_id = "fact-" + "0" * 12
        pages = {
            "dashboard": lambda i: get("/"),
            "memory_list": lambda i: get("/memories"),
            "memory_list_page_10": lambda i: get("/memories?page=10"),
            "search": lambda i: get("/memories?q=" + quote(QUESTIONS[i % len(QUESTIONS)])),
            "explain": lambda i: get("/explain?q=" + quote(QUESTIONS[i % len(QUESTIONS)])),
            "code_map_root": lambda i: get("/code"),
            "code_map_folder": lambda i: get("/code?folder=src/pkg3/mod1"),
            "one_memory": lambda i: get(f"/memory/{some_id}"),
        }
        for name, fn in pages.items():
            _log(name)
            out[name] = timed(fn, args.runs)
    queries = [parse_query(q) for q in QUESTIONS]
    _log("recall, default against explain")
    for q in queries:
        recall(project, q)
    plain: list[float] = []
    explained: list[float] = []
    for i in range(args.runs * 2):  # interleaved, alternating which goes first: load drifts apart
        q = queries[i % len(queries)]
        for explain in (False, True) if i % 2 else (True, False):
            t = time.perf_counter()
            recall(project, q, explain=explain)
            (explained if explain else plain).append(time.perf_counter() - t)
    out["recall_default"] = _stats(plain)
    out["recall_explain"] = _stats(explained)
    out["prompt_hook_record"] = hook_record_cost(project, queries, args.runs)
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
