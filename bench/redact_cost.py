"""What the redaction layer costs and what it gets wrong.

    uv run bench/redact_cost.py                 # stdlib corpus (bench/stdlib_corpus.py) + this repo
    uv run bench/redact_cost.py --show 20       # also print the first 20 false redactions

Prints one JSON document:
- ``corpus``: the planted secrets of tests/support/secret_corpus.py (inline shapes and secret files) and
  how many leaked through ``redact`` (target 0);
- ``false_redactions``: masks ``redact`` puts into real code that holds no secret (the Python
  standard library selection of bench/stdlib_corpus.py plus this repository's own package),
  per file count and total (target <= 1 over 300 files);
- ``cost_ms``: per-text cost on the warm path (detectors loaded), median and p95, for a fact-sized
  text, a log-sized text, a hook answer (shapes only, as the hooks run it) and a whole source file,
  and the one-time load of detect-secrets.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median": round(statistics.median(ordered) * 1000, 3),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 3),
        "n": len(ordered),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", type=int, default=0, help="print this many false redactions with their line")
    args = parser.parse_args()

    started = time.perf_counter()
    from contextware.core import redact as r

    r._detect_secrets()
    load_s = time.perf_counter() - started

    from tests.support import secret_corpus as sc

    leaked = {k: sc.leaks(r.redact_text(t)) for k, t in {**sc.INLINE, **sc.SECRET_FILES}.items()}
    leaked = {k: v for k, v in leaked.items() if v}

    from stdlib_corpus import select, stdlib_dir

    stdlib = stdlib_dir()
    texts = [(rel, (stdlib / rel).read_text(encoding="utf-8", errors="replace")) for rel in select(stdlib)]
    texts += [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted((ROOT / "contextware").rglob("*.py"))]
    false: list[dict] = []
    file_costs = []
    for rel, text in texts:
        t0 = time.perf_counter()
        clean, found = r.redact(text)
        file_costs.append(time.perf_counter() - t0)
        if found:
            before, after = text.splitlines(), clean.splitlines()
            lines = [a for b, a in zip(before, after, strict=False) if a != b]
            false.append({"file": rel, "found": found, "lines": [x.strip()[:160] for x in lines[:3]]})

    fact = "Constraint: never push to main directly; open a pull request and wait for CI (pytest, ruff)."
    log = (ROOT / "README.md").read_text()[:1500]
    costs = {}
    for name, text in (("fact_100_chars", fact), ("log_1500_chars", log)):
        samples = []
        for _ in range(300):
            t0 = time.perf_counter()
            r.redact(text)
            samples.append(time.perf_counter() - t0)
        costs[name] = _ms(samples)
    hook_body = "\n".join(f"- [CONSTRAINT] {fact} (fact-{i:012x})" for i in range(16))  # ~1600 chars
    samples = []
    for _ in range(300):
        t0 = time.perf_counter()
        r.redact(hook_body, library=False)
        samples.append(time.perf_counter() - t0)
    costs["hook_answer_shapes_only"] = _ms(samples)
    costs["source_file"] = _ms(file_costs)
    costs["source_file"]["mean_chars"] = sum(len(t) for _, t in texts) // len(texts)
    costs["detect_secrets_load_once_ms"] = {"once": round(load_s * 1000, 1)}

    out = {
        "corpus": {"shapes": len(sc.INLINE) + len(sc.SECRET_FILES), "secrets": len(sc.SECRETS), "leaked": leaked},
        "false_redactions": {
            "files_scanned": len(texts),
            "files_with_redactions": len(false),
            "total": sum(sum(f["found"].values()) for f in false),
            "examples": false[: args.show],
        },
        "cost_ms": costs,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
