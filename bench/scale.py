"""Memory at scale: the same calls on stores of 1k, 5k and 20k conversation rows (50k with ``--big``).

    uv run bench/scale.py                      # 1,000, 5,000 and 20,000 log rows (+ 200 facts each)
    uv run bench/scale.py --big                # also 50,000
    uv run bench/scale.py --sizes 1000,2000 --queries 10 --saves 10   # a quick look
    uv run bench/scale.py --keep /tmp/cw-scale            # keep the stores; then, without importing again:
    uv run bench/scale.py --keep /tmp/cw-scale --reuse    # measure the kept stores once more
    uv run bench/scale.py --keep /tmp/cw-scale --reuse --against ../main   # and main's service (A) first

For each size a temporary project (``CONTEXTWARE_HOME`` pointed away from yours) gets an export file of
N conversation log rows plus 200 facts, generated deterministically (sessions of 10-40 turns over a
year of dates, texts of 30-1,400 characters from a fixed vocabulary; no network), and then:

- ``import``: ``scripts/import.py`` in its own process without the service: rows/s (model load
  included) and the process's peak memory (``wait4``'s ``ru_maxrss``); the store's disk bytes per row;
- with a warm resident service (``scripts/service.py start``, then a warm-up): the p50/p95 wall time,
  process start to exit, of ``scripts/recall.py`` in the default, ``memory`` and ``logs`` scopes, of a
  log save (``scripts/save_fact.py --type log``), of a default recall right after a save, and of the
  BeforeAgent hook (``scripts/hook.py``); and the service's resident memory (``VmRSS``) after all that.

Prints one JSON document: per size the numbers, and the ratio of each to the smallest size's.
Progress on stderr.  Times depend on machine load (reported as the load average at each size).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV_PY = REPO / ".venv" / "bin" / "python"
FACTS = 200

COMPONENTS = [
    "billing",
    "auth",
    "search",
    "export",
    "ingest",
    "scheduler",
    "gateway",
    "storage",
    "mailer",
    "reports",
    "cache",
    "notifier",
]
TECH = ["Postgres", "Redis", "Kafka", "SQLite", "S3", "Tantivy", "gRPC", "Celery", "nginx", "Terraform", "uv", "pytest"]
VERBS = ["fails", "times out", "leaks", "retries", "deadlocks", "slows down", "crashes", "drops rows", "misreads"]
NOUNS = [
    "migration",
    "fixture",
    "queue",
    "index",
    "schema",
    "token",
    "cron",
    "job",
    "worker",
    "pool",
    "connection",
    "lock",
    "timeout",
    "snapshot",
    "config",
    "flag",
    "release",
    "branch",
    "test",
    "build",
    "cache",
    "endpoint",
    "payload",
    "header",
]
OPENERS = [
    "Can you look at why",
    "I think",
    "Looks like",
    "Next step:",
    "The logs say",
    "Fixed:",
    "We decided that",
    "Please check whether",
    "After the deploy,",
    "Reminder:",
]
QUERIES = [
    "why does the {c} {n} time out?",
    "what did we decide about {t} for {c}?",
    "how do we run the {c} tests?",
    "which {n} does the {c} service use?",
    "when did the {c} migration fail?",
]


def _sentence(rng: random.Random) -> str:
    c, t, n = rng.choice(COMPONENTS), rng.choice(TECH), rng.choice(NOUNS)
    return (
        f"{rng.choice(OPENERS)} the {c} {n} {rng.choice(VERBS)} when {t} is under load "
        f"(case {rng.randrange(10_000)}, {rng.choice(NOUNS)} {rng.randrange(1, 99)})."
    )


def _text(rng: random.Random) -> str:
    want = int(min(1400, max(30, rng.lognormvariate(5.4, 0.8))))  # median ~220 characters, a long tail
    out = _sentence(rng)
    while len(out) < want:
        out += " " + _sentence(rng)
    return out[:want].rstrip()


def export_file(path: Path, logs: int, seed: int = 7) -> None:
    """``logs`` log rows in sessions, and ``FACTS`` facts, dated over the year before 2026-11-01."""
    rng = random.Random(seed)
    end = datetime(2026, 11, 1, tzinfo=timezone.utc)
    lines = [json.dumps({"format": "contextware-memory", "version": 1})]
    for i in range(FACTS):
        created = end - timedelta(days=rng.uniform(0, 365))
        text = (
            f"Fact {i}: the {rng.choice(COMPONENTS)} service uses {rng.choice(TECH)} for its "
            f"{rng.choice(NOUNS)}, decided for {rng.choice(NOUNS)} {rng.randrange(100)}."
        )
        lines.append(
            json.dumps({"id": f"fact-{i:012x}", "kind": "decision", "text": text, "created_at": _iso(created)})
        )
    row, session = 0, 0
    while row < logs:
        turns = min(rng.randrange(10, 41), logs - row)
        start = end - timedelta(days=rng.uniform(0, 365))
        for turn in range(turns):
            created = start + timedelta(minutes=2 * turn)
            lines.append(
                json.dumps(
                    {
                        "id": f"log-{row:012x}",
                        "session_id": f"bench-{session}",
                        "role": "user" if turn % 2 == 0 else "agent",
                        "text": _text(rng),
                        "chunk_index": 0,
                        "chunk_count": 1,
                        "created_at": _iso(created),
                    }
                )
            )
            row += 1
        session += 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _iso(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _stats(samples: list[float]) -> dict:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered) * 1000, 1), "p95": round(p95 * 1000, 1)}


def _run(cmd: list[str], root: Path, env: dict, stdin: str | None = None) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, env=env, input=stdin, capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[1:3])} failed ({proc.returncode}): {proc.stdout[-500:]} {proc.stderr[-1500:]}")
    return took


def _script(name: str, repo: Path = REPO) -> str:
    return str(repo / "scripts" / f"{name}.py")


def _import(root: Path, env: dict, path: Path) -> tuple[float, float, dict]:
    """Wall seconds, peak resident MB and the report of one import in its own process."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        [str(VENV_PY), _script("import"), str(path)], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    took = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"import failed: {out[-500:]!r} {err[-1500:]!r}")
    return took, usage.ru_maxrss / 1024, json.loads(out)


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def _disk(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def measure(size: int, work: Path, base_env: dict, queries: int, saves: int, reuse: bool = False) -> dict:
    root = work / f"p{size}"
    export = work / f"export-{size}.jsonl"
    off = {**base_env, "CONTEXTWARE_SERVICE": "off"}
    result: dict = {"rows": size + FACTS, "load_average": round(os.getloadavg()[0], 1)}
    if reuse and (root / "import.json").is_file():
        result["import"] = json.loads((root / "import.json").read_text())  # measured when it was built
    else:
        (root / ".git").mkdir(parents=True)
        export_file(export, size)
        print(f"[{size}] importing {size + FACTS} rows", file=sys.stderr)
        took, peak, report = _import(root, off, export)
        assert report.get("added") == size + FACTS, report
        result["import"] = {
            "seconds": round(took, 1),
            "rows_per_s": round((size + FACTS) / took, 1),
            "peak_mb": round(peak),
            "load_average": result["load_average"],
        }
        (root / "import.json").write_text(json.dumps(result["import"]))
    db = next(p for p in root.rglob("lancedb") if p.is_dir())
    result["disk_bytes_per_row"] = round(_disk(db) / (size + FACTS))

    result.update(measure_service(size, root, base_env, queries, saves, REPO))
    return result


def measure_service(size: int, root: Path, base_env: dict, queries: int, saves: int, repo: Path) -> dict:
    """The warm service's latencies and memory on the store at ``root``, run from checkout ``repo``."""
    on = {**base_env, "CONTEXTWARE_SERVICE": "auto"}
    py = str(repo / ".venv" / "bin" / "python")
    result: dict = {"code": str(repo), "load_average": round(os.getloadavg()[0], 1)}
    rng = random.Random(size)

    def question() -> str:
        return rng.choice(QUERIES).format(c=rng.choice(COMPONENTS), t=rng.choice(TECH), n=rng.choice(NOUNS))

    def recall(scope: str | None) -> list[str]:
        return [py, _script("recall", repo), "--query", question(), *(["--scope", scope] if scope else [])]

    def save(i: int) -> list[str]:
        text = f"{_text(rng)} (bench save {size}-{i}-{time.time_ns()})"
        return [py, _script("save_fact", repo), "--type", "log", "--session", "bench-new", "--role", "user", text]

    def hook_event() -> str:
        from warm_path import mid_session  # a new session under way each run, as warm_path times it

        event = {
            "session_id": mid_session(root),
            "transcript_path": "",
            "cwd": str(root),
            "hook_event_name": "BeforeAgent",
            "timestamp": "2026-11-02T00:00:00Z",
            "prompt": question(),
        }
        return json.dumps(event)

    _run([py, _script("service", repo), "start"], root, on)
    try:
        print(f"[{size}] warming the service", file=sys.stderr)
        for scope in (None, "memory", "logs", None):
            _run(recall(scope), root, on)
        pid = json.loads(
            subprocess.run(
                [py, _script("service", repo), "status"], cwd=root, env=on, capture_output=True, text=True
            ).stdout
        )["pid"]
        result["service_mb_warm"] = _rss_mb(pid)
        for label, scope in (("recall_default", None), ("recall_memory", "memory"), ("recall_logs", "logs")):
            print(f"[{size}] {label}", file=sys.stderr)
            result[label] = _stats([_run(recall(scope), root, on) for _ in range(queries)])
        print(f"[{size}] saves and recall after save", file=sys.stderr)
        result["save_log"] = _stats([_run(save(i), root, on) for i in range(saves)])
        after = []
        for i in range(saves):
            _run(save(saves + i), root, on)
            after.append(_run(recall(None), root, on))
        result["recall_after_save"] = _stats(after)
        print(f"[{size}] hook", file=sys.stderr)
        result["hook_before_agent"] = _stats(
            [_run([py, _script("hook", repo)], root, on, hook_event()) for _ in range(queries)]
        )
        result["service_mb_end"] = _rss_mb(pid)
    finally:
        _run([py, _script("service", repo), "stop"], root, on)
    return result


RATIO_KEYS = (
    "recall_default",
    "recall_memory",
    "recall_logs",
    "save_log",
    "recall_after_save",
    "hook_before_agent",
)


def ratios(base: dict, other: dict) -> dict:
    out = {k: round(other[k]["p50"] / base[k]["p50"], 2) for k in RATIO_KEYS}
    out["import_rows_per_s"] = round(other["import"]["rows_per_s"] / base["import"]["rows_per_s"], 2)
    out["import_peak_mb"] = round(other["import"]["peak_mb"] / base["import"]["peak_mb"], 2)
    if base.get("service_mb_end") and other.get("service_mb_end"):
        out["service_mb_end"] = round(other["service_mb_end"] / base["service_mb_end"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,5000,20000", help="log rows per store, comma-separated")
    parser.add_argument("--big", action="store_true", help="also 50,000 rows")
    parser.add_argument("--queries", type=int, default=30, help="recalls per scope, and hook runs")
    parser.add_argument("--saves", type=int, default=20, help="log saves, and save-then-recall pairs")
    parser.add_argument("--keep", type=Path, help="build the stores here and keep them")
    parser.add_argument(
        "--reuse", action="store_true", help="with --keep: measure the stores built there before (no import)"
    )
    parser.add_argument(
        "--against",
        type=Path,
        help="another checkout with its .venv (say a worktree of main): its service is measured on the same "
        "stores right before this one's, as A (under against_service)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.big and 50_000 not in sizes:
        sizes.append(50_000)
    work = args.keep or Path(tempfile.mkdtemp(prefix="cw-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    home = work / "home"
    home.mkdir(exist_ok=True)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTWARE_")}
    base_env["CONTEXTWARE_HOME"] = str(home)
    report: dict = {"cpus": os.cpu_count(), "sizes": {}}
    try:
        for size in sizes:
            against = None
            if args.against is not None and args.reuse:
                against = measure_service(size, work / f"p{size}", base_env, args.queries, args.saves, args.against)
            report["sizes"][str(size)] = measure(size, work, base_env, args.queries, args.saves, args.reuse)
            if args.against is not None and against is None:  # the store was built just now
                against = measure_service(size, work / f"p{size}", base_env, args.queries, args.saves, args.against)
            if against is not None:
                report["sizes"][str(size)]["against_service"] = against
            print(json.dumps({str(size): report["sizes"][str(size)]}), file=sys.stderr)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    first = report["sizes"][str(sizes[0])]
    report["ratio_to_smallest"] = {str(s): ratios(first, report["sizes"][str(s)]) for s in sizes[1:]}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
