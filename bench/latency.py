"""Latency of save_fact, recall, context and the BeforeAgent hook: cold processes (start to output)
and warm in-process calls.

    uv run bench/latency.py [--runs 7] [--memories 300]

Cold runs go through `uv run` exactly as an agent calls the scripts, through `uv run --no-sync`
(skips uv's environment check; see README), and straight through the environment's python.
Prints medians in milliseconds as one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 1)


def cold(cmd_prefix: list[str], root: Path, runs: int) -> dict:
    hook_event = json.dumps(
        {
            "session_id": "bench",
            "transcript_path": "",
            "cwd": str(root),
            "hook_event_name": "BeforeAgent",
            "timestamp": "2026-01-01T00:00:00Z",
            "prompt": "when does the export job run?",
        }
    )
    out = {}
    for name, script, args, stdin in (
        ("save_fact", "save_fact", ["Cold-start fact {i}: the export job runs nightly at {i} am."], None),
        ("recall", "recall", ["--query", "when does the export job run?"], None),
        ("context", "context", [], None),
        ("hook_before_agent", "hook", [], hook_event),
    ):
        samples = []
        for i in range(runs):
            argv = [a.format(i=i) for a in args]
            t = time.perf_counter()
            proc = subprocess.run(
                [*cmd_prefix, str(REPO / "scripts" / f"{script}.py"), *argv],
                cwd=root,
                capture_output=True,
                text=True,
                input=stdin,
            )
            samples.append(time.perf_counter() - t)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            if script == "hook":
                assert "hookSpecificOutput" in proc.stdout, proc.stdout + proc.stderr
            else:
                assert json.loads(proc.stdout)["ok"], proc.stdout + proc.stderr
        out[name] = _median_ms(samples)
    return out


def warm(root: Path, runs: int) -> dict:
    from contextware.memory import records
    from contextware.memory.recall import recall
    from contextware.settings import Settings
    from contextware.storage.project import Project

    project = Project.open(root, Settings.from_env(os.environ))
    recall(project, "warm up")
    saves, recalls = [], []
    for i in range(runs * 5):
        t = time.perf_counter()
        records.save_fact(project, f"Warm fact {i}: worker {i} drains queue {i % 13}.")
        saves.append(time.perf_counter() - t)
        t = time.perf_counter()
        recall(project, f"which worker drains queue {i % 13}?")
        recalls.append(time.perf_counter() - t)
    return {"save_fact": _median_ms(saves), "recall": _median_ms(recalls)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--memories", type=int, default=300, help="facts in the table before measuring")
    args = parser.parse_args()
    uv = shutil.which("uv")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["CONTEXTWARE_HOME"] = str(root / ".home")
        from contextware.memory import records
        from contextware.settings import Settings
        from contextware.storage.project import Project

        project = Project.open(root, Settings.from_env(os.environ))
        for i in range(args.memories):
            records.save_fact(
                project, f"Seed fact {i}: service s{i} is owned by team t{i % 17} and deploys on day {i % 7}."
            )
        report = {
            "memories": args.memories,
            "cold_uv_run_ms": cold([uv, "run", "--project", str(REPO)], root, args.runs) if uv else None,
            "cold_uv_run_no_sync_ms": cold([uv, "run", "--no-sync", "--project", str(REPO)], root, args.runs)
            if uv
            else None,
            "cold_python_ms": cold([sys.executable], root, args.runs),
            "warm_in_process_ms": warm(root, args.runs),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
