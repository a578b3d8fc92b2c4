"""The retrieval benchmark runs end to end on a few items (``--smoke``), so a change to recall's
stages or parameters cannot break it unnoticed (real LanceDB, the real model)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # over 7 s: the full suite runs it, the fast subset does not
def test_recall_quality_smoke_runs_and_reports_every_method(tmp_path):
    out = subprocess.run(
        [sys.executable, str(REPO / "bench" / "recall_quality.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    for method in ("hybrid", "hybrid_hook", "hybrid_ungated", "vector", "bm25"):
        assert 0.0 <= report[method]["recall@3"] <= 1.0
    assert report["fusion"]["floor"] > 0


@pytest.mark.slow  # over 7 s: the full suite runs it, the fast subset does not
def test_quality_smoke_runs_both_public_set_layouts_beside_the_baselines(tmp_path):
    """bench/quality.py on its tiny sets: the engineering layout and a conversation in LoCoMo's
    layout (the real LoCoMo is never in the repository), recall beside BM25, cosine and RRF."""
    out = subprocess.run(
        [sys.executable, str(REPO / "bench" / "quality.py"), "--smoke", "--json", "--noise-turns", "8"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    for name in ("engineering", "locomo"):
        for method in ("recall", "bm25", "cosine", "rrf"):
            assert 0.0 <= report[name]["methods"][method]["R@3"] <= 1.0
    assert report["engineering"]["hook"]["items_mean"] >= 0
    assert report["engineering"]["supersession"]["pairs"] == 2
    noisy = report["engineering + 8 captured turns"]  # the same questions, the turns searched too
    assert noisy["turns"] == 8 and noisy["questions"] == report["engineering"]["questions"]
    assert [t["gate"] for t in noisy["hook_tradeoff"]] == [t["gate"] for t in report["engineering"]["hook_tradeoff"]]
