"""Precision and recall of the use detector (``contextware.memory.turns.use``) on a labelled set of
turns in the hosts' own formats, beside a trivial baseline (any word in common, stop words aside).

    uv run bench/use_detector.py [--data bench/data/use_turns.json] [--show-errors]

Each case is one turn where the prompt hook injected one memory: a Claude Code Stop payload with its
transcript lines, or a Gemini CLI AfterAgent payload with its transcript records.  The answer and the
tool calls' inputs are read from them with the hooks' own readers, as the hook does at Stop and
AfterAgent.  Thresholds were tuned on the train split only; the test split is the figure to quote.
Prints one JSON document, with ``cost_ms``: what use feedback adds to a Stop/AfterAgent hook per
turn (median and p95 over every case, ``--repeat`` times): the injection's record at the prompt
(``usage.injected``) and, at the turn's end, reading the tool calls and judging the answer
(``usage.judge``), on a real data dir.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from contextware.hosts.hooks.claude_transcript import tool_inputs  # noqa: E402
from contextware.hosts.hooks.handlers import _gemini_tool_inputs  # noqa: E402
from contextware.memory.turns import usage  # noqa: E402
from contextware.memory.turns.use import baseline, used  # noqa: E402


def turn(case: dict[str, Any], folder: Path) -> tuple[str, list[str]]:
    """The answer and the tool inputs of a case, read as the hook reads them."""
    path = folder / f"{case['id']}.jsonl"
    path.write_text("\n".join(case["transcript"]) + "\n", encoding="utf-8")
    if case["host"] == "claude":
        return str(case["stop"]["last_assistant_message"]), tool_inputs(path)
    return str(case["after_agent"]["prompt_response"]), _gemini_tool_inputs(path)


def scores(rows: list[tuple[bool, bool]]) -> dict[str, Any]:
    tp = sum(p and t for p, t in rows)
    fp = sum(p and not t for p, t in rows)
    fn = sum(t and not p for p, t in rows)
    return {
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }


def cost(cases: list[dict[str, Any]], repeat: int) -> dict[str, Any]:
    """Milliseconds of use feedback per turn: at the prompt and at the turn's end."""
    prompt_ms: list[float] = []
    end_ms: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        for n in range(repeat):
            for c in cases:
                session = f"{c['id']}-{n}"
                t0 = time.perf_counter()
                usage.injected(data, session, {f"fact-{c['id']}": c["memory"]})
                t1 = time.perf_counter()
                reply, tools = turn(c, Path(tmp))  # the hook reads the transcript's tool calls only for this
                usage.judge(data, session, reply, tools)
                t2 = time.perf_counter()
                prompt_ms.append((t1 - t0) * 1000)
                end_ms.append((t2 - t1) * 1000)

    def stats(ms: list[float]) -> dict[str, float]:
        ms = sorted(ms)
        return {"p50": round(statistics.median(ms), 2), "p95": round(ms[int(0.95 * (len(ms) - 1))], 2)}

    return {"turns": len(prompt_ms), "prompt": stats(prompt_ms), "turn_end": stats(end_ms)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(REPO / "bench" / "data" / "use_turns.json"))
    ap.add_argument("--show-errors", action="store_true", help="list the cases each detector got wrong")
    ap.add_argument("--repeat", type=int, default=5, help="rounds of every case for the cost (default 5)")
    args = ap.parse_args(argv)
    cases = json.loads(Path(args.data).read_text(encoding="utf-8"))["cases"]
    detectors: dict[str, Callable[..., bool]] = {"detector": used, "baseline (any shared word)": baseline}
    out: dict[str, Any] = {"cases": len(cases)}
    errors: dict[str, list[str]] = {name: [] for name in detectors}
    with tempfile.TemporaryDirectory() as tmp:
        read = {c["id"]: turn(c, Path(tmp)) for c in cases}
    for split in ("train", "test"):
        part = [c for c in cases if c["split"] == split]
        out[split] = {"cases": len(part), "used": sum(c["used"] for c in part)}
        for name, detect in detectors.items():
            rows = []
            for c in part:
                reply, tools = read[c["id"]]
                guess = detect(c["memory"], reply, tools)
                rows.append((guess, bool(c["used"])))
                if guess != c["used"]:
                    errors[name].append(f"{c['id']} ({split}, labelled {'used' if c['used'] else 'not used'})")
            out[split][name] = scores(rows)
    out["cost_ms"] = cost(cases, max(1, args.repeat))
    if args.show_errors:
        out["errors"] = errors
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
