"""The code-index scripts as processes: index_file's report, bad input, concurrent index_file runs
and an interrupted crawl (real LanceDB, the real embedding model)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contextware.settings import Settings
from contextware.storage.project import Project
from tests.conftest import SCRIPTS, run_script
from tests.unit.test_code_index import make_tree, rows


# -- the scripts -------------------------------------------------------------------------------------
def test_index_file_script_reports_and_removes(project_dir: Path, script):
    make_tree(project_dir)
    (project_dir / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    out = script("index_file", "src/models.py", "pic.png", "../elsewhere.py", "--summarizer", "local")
    assert out.returncode == 0, out.stdout + out.stderr
    data = out.json
    assert data["ok"] and data["indexed_files"] == ["src/models.py"]
    reasons = {s["path"]: s["reason"] for s in data["skipped_files"]}
    assert reasons["pic.png"] == "binary" and reasons["../elsewhere.py"] == "outside_project"

    again = script("index_file", "src/models.py", "--summarizer", "local").json
    assert again["indexed"] == 0 and again["unchanged"] == 1
    (project_dir / "src/models.py").unlink()
    removed = script("index_file", "src/models.py").json
    assert removed["removed_files"] == ["src/models.py"]
    assert script("index_file", "src/models.py").json["skipped_reasons"] == {"missing": 1}


@pytest.mark.parametrize(
    "args, code",
    [
        (("index_file",), "usage"),
        (("index_file", "a.py", "--summarizer", "bogus"), "bad_summarizer"),
        (("crawl_project", "--jobs", "0"), "bad_jobs"),
        (("crawl_project", "--summarizer", "gemini"), "gemini_unavailable"),
        (("crawl_project", "--upgrade"), "gemini_unavailable"),
        (("recall", "--query", "x", "--scope", "code", "--max-chars", "0"), "bad_max_chars"),
    ],
)
def test_bad_input_is_a_clear_error(project_dir: Path, script, args, code):
    (project_dir / "a.py").write_text("x = 1\n")
    out = script(*args)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.json["error"]["code"] == code and "Traceback" not in out.stdout + out.stderr
    assert not (project_dir / "contextware_data" / "lancedb" / "code_index.lance").exists()


def test_concurrent_index_file_runs_leave_one_row_per_file(project_dir: Path):
    files = {f"pkg/mod_{i}.py": f'"""Module {i}."""\n\ndef f_{i}():\n    return {i}\n' for i in range(4)}
    make_tree(project_dir, files)
    procs = []
    for i in range(8):  # half on the same file, half on different files, all at once
        target = "pkg/mod_0.py" if i % 2 == 0 else f"pkg/mod_{1 + i // 2 % 3}.py"
        procs.append(
            subprocess.Popen(
                [sys.executable, str(SCRIPTS / "index_file.py"), target, "--force", "--summarizer", "local"],
                cwd=project_dir,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, out + err
        assert json.loads(out)["ok"] is True
    got = rows(Project.open(project_dir, Settings.from_env(os.environ)))
    assert set(got) == set(files)


def test_interrupted_crawl_keeps_finished_batches(project_dir: Path):
    files = {
        f"gen/m{i:03}.py": f'"""Generated module {i} about topic {i % 17}."""\n\n'
        + "".join(f"def fn_{i}_{j}(x):\n    return x * {j}\n\n" for j in range(40))
        for i in range(200)  # ~6 write batches of 32: several still to come when the first lands
    }
    make_tree(project_dir, files)
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "crawl_project.py"), "--summarizer", "local", "--jobs", "1"],
        cwd=project_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 180
    kept = 0
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.3)
        try:
            kept = len(rows(Project.open(project_dir, Settings.from_env(os.environ))))
        except Exception:
            continue
        if kept:
            break
    assert proc.poll() is None, "the crawl finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    error = json.loads(out)["error"]
    assert error["code"] == "interrupted" and "Traceback" not in err
    kept = len(rows(Project.open(project_dir, Settings.from_env(os.environ))))
    assert 0 < kept < len(files)
    assert kept == error["details"]["indexed"]
    rest = run_script("crawl_project", "--summarizer", "local", cwd=project_dir, timeout=240).json
    assert rest["indexed"] == len(files) - kept and rest["unchanged"] == kept
    assert len(rows(Project.open(project_dir, Settings.from_env(os.environ)))) == len(files)
