"""The long-horizon benchmark runs end to end on a few dozen rows (``--smoke``), so a change to recall
or to the import path cannot break it unnoticed (real LanceDB, the real model, real dated rows of
HarfBuzz's history from its Debian package)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "long_horizon.py"


@pytest.mark.slow  # over 7 s: the full suite runs it, the fast subset does not
def test_long_horizon_smoke_reports_every_method_and_the_gate(tmp_path):
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--json"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["store"]["logs"] >= 20
    assert report["questions"]["answerable"] >= 1
    assert report["questions"]["unanswerable"] >= 1
    for method in ("recall_logs", "recall_all", "bm25", "bm25_lancedb", "cosine"):
        scores = report["methods"][method]
        assert 0.0 <= scores["R@1"] <= scores["R@5"] <= scores["R@10"] <= 1.0
        assert 0.0 <= scores["MRR"] <= 1.0
    assert 0.0 <= report["gate"]["answerable_silenced"] <= 1.0
    assert report["gate"]["auc"]["recall_all"] is not None
    assert "details" not in report  # per-question lines only on request, and only for tune


@pytest.mark.slow
def test_long_horizon_keeps_test_questions_out_of_details(tmp_path):
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--split", "test", "--details"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode == 2
    assert "tune split only" in out.stderr
