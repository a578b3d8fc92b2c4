"""The code index's Gemini path end to end: ``crawl`` / ``index_files`` / ``crawl_project.py`` with the
REAL Gemini CLI (0.61.0) talking to tests/support/fake_gemini_api.py (``summaries_responder``), real LanceDB
and the real embedding model.

Each real CLI run costs 1-3 s, so every test checks several things at once and small trees go in
one batch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from contextware.codeindex.indexer import crawl, index_files
from contextware.core.errors import UsageError
from contextware.gemini.availability import gemini_ready
from contextware.storage.project import Project
from tests.support.code_index import make_tree, rows
from tests.support.fake_gemini_api import FakeGeminiAPI, Reply, fake_summary, fake_symbols, summaries_responder
from tests.support.gemini_fixtures import GEMINI_TEST_SETTINGS, write_gemini_home
from tests.support.scripts import run_script

MODEL = "gemini-2.5-flash"  # the config default: passed as -m, so the CLI makes no router call


def _module(i: int) -> str:
    return (
        f'"""Billing step {i}: computes part {i} of the monthly invoice."""\n\n'
        f"class Step{i}:\n    def run(self, invoice):\n        return invoice\n\n"
        f"    def undo(self, invoice):\n        return None\n\n\n"
        f"def helper_{i}(value):\n    return value * {i}\n"
    )


TEN = {f"billing/step_{i:02}.py": _module(i) for i in range(8)}
TEN["README.md"] = "# Billing\n\nMonthly invoices, computed step by step.\n"
TEN["web/app.js"] = "// Checkout page routes.\nexport function start(port) { return port; }\n"

FOUR = {
    "src/models.py": '"""Data models: Invoice and Customer."""\n\nclass Invoice:\n    def total(self):\n'
    "        return 0\n\n\nclass Customer:\n    pass\n",
    "src/http_client.py": '"""Retrying HTTP client."""\n\ndef fetch_with_retry(url):\n    return url\n',
    "src/jobs.py": '"""Nightly jobs."""\n\ndef nightly():\n    pass\n\n\ndef weekly():\n    pass\n',
    "docs/notes.md": "# Notes\n\nHow the shop sends invoices.\n",
}


# ---------------------------------------------------------------- fixtures and helpers
@pytest.fixture
def gemini_env(gemini_process_env: dict[str, str], gemini_bin: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This process's environment is the fake API's, with CONTEXTWARE_GEMINI_BIN = the real CLI
    (so ``gemini_ready()`` is true and the code index runs it)."""
    monkeypatch.setenv("CONTEXTWARE_GEMINI_BIN", gemini_bin)
    return {**gemini_process_env, "CONTEXTWARE_GEMINI_BIN": gemini_bin}


def open_project(root: Path, files: dict[str, str], **config) -> Project:
    """Write ``files`` under root and ``config`` to ``<data_dir>/config.json``, then open the project."""
    make_tree(root, files)
    data_dir = Project.open(root).data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.json").write_text(json.dumps(config))
    return Project.open(root)


def expected_gemini(path: str, text: str) -> tuple[str, list[str]]:
    return fake_summary(path, text), fake_symbols(text)


def all_request_text(api: FakeGeminiAPI) -> str:
    """Everything the CLI sent to the fake API (bodies of every request, chat and utility)."""
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in api.requests)


def summarizers(project: Project) -> dict[str, str]:
    return {path: row["summarizer"] for path, row in rows(project).items()}


# ---------------------------------------------------------------- crawl --summarizer gemini
def test_crawl_with_gemini_batches_files_and_stores_its_summaries(
    project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI
):
    project = open_project(project_dir, TEN, gemini_batch_files=4)
    fake_gemini_api.handler = responder = summaries_responder()
    out = crawl(project, summarizer="gemini")

    assert out["indexed"] == 10 and out["failed"] == 0 and out["scanned"] == 10, out
    assert out["summarizers"] == {"gemini": 10}
    assert "gemini_fallbacks" not in out and "gemini_error" not in out
    # 3 batches (4 + 4 + 2 files, in path order), one chat request each, all with -m MODEL
    chats = fake_gemini_api.chat_requests()
    assert len(chats) == 3 and {c.model for c in chats} == {MODEL}
    ordered = sorted(TEN)
    assert sorted(responder.batches) == sorted([ordered[0:4], ordered[4:8], ordered[8:10]])

    indexed = rows(project)
    assert set(indexed) == set(TEN)
    for path, text in TEN.items():
        row = indexed[path]
        assert row["summarizer"] == "gemini"
        assert (row["summary"], row["symbols"]) == expected_gemini(path, text), path
    assert indexed["billing/step_03.py"]["symbols"] == ["Step3", "Step3.run", "Step3.undo", "helper_3"]
    assert indexed["billing/step_03.py"]["language"] == "python"
    assert indexed["web/app.js"]["language"] == "javascript"

    # the CLI ran in the neutral folder, not in the project
    sent = all_request_text(fake_gemini_api)
    assert str(project_dir) not in sent


# ---------------------------------------------------------------- auto: per-file fallback
def test_auto_falls_back_to_local_per_file(project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI):
    project = open_project(project_dir, FOUR)  # default batch size: one request for the 4 files
    assert gemini_ready()
    fake_gemini_api.handler = summaries_responder(
        {"src/jobs.py": None, "src/http_client.py": {"symbols": "fetch_with_retry"}}
    )
    out = crawl(project, summarizer="auto")

    assert out["indexed"] == 4 and out["failed"] == 0, out
    assert out["summarizers"] == {"gemini": 2, "local": 2}
    assert out["gemini_fallbacks"] == 2
    assert out["gemini_error"] in (
        "Gemini's reply has no result for src/jobs.py.",
        "Gemini's result for src/http_client.py has symbols that are not a list.",
    )
    assert len(fake_gemini_api.chat_requests()) == 1
    assert summarizers(project) == {
        "src/jobs.py": "local",
        "src/http_client.py": "local",
        "src/models.py": "gemini",
        "docs/notes.md": "gemini",
    }
    indexed = rows(project)
    assert indexed["src/jobs.py"]["symbols"] == ["nightly", "weekly"]  # the local summariser's
    assert "by Gemini" not in indexed["src/jobs.py"]["summary"]
    assert "by Gemini" not in indexed["src/http_client.py"]["summary"]
    assert (indexed["src/models.py"]["summary"], indexed["src/models.py"]["symbols"]) == expected_gemini(
        "src/models.py", FOUR["src/models.py"]
    )


def test_auto_without_credentials_stays_local(
    project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI, monkeypatch: pytest.MonkeyPatch
):
    """Binary installed, no API key and no auth type in settings: gemini_ready() is false, so `auto` is
    local without starting the CLI and `gemini` is refused."""
    monkeypatch.delenv("GEMINI_API_KEY")
    write_gemini_home(Path(gemini_env["HOME"]), {k: v for k, v in GEMINI_TEST_SETTINGS.items() if k != "security"})
    project = open_project(project_dir, FOUR)
    assert not gemini_ready()
    fake_gemini_api.handler = summaries_responder()

    out = crawl(project, summarizer="auto")
    assert out["summarizers"] == {"local": 4} and "gemini_fallbacks" not in out and "gemini_error" not in out
    assert set(summarizers(project).values()) == {"local"}
    with pytest.raises(UsageError) as exc:
        crawl(project, summarizer="gemini", force=True)
    assert exc.value.code == "gemini_unavailable"
    assert fake_gemini_api.requests == []


def test_auto_with_an_auth_failure_falls_back_for_every_file(
    project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI, monkeypatch: pytest.MonkeyPatch
):
    """settings.json selects the API key but none is set: gemini_ready() cannot tell, the CLI exits 41."""
    monkeypatch.delenv("GEMINI_API_KEY")
    project = open_project(project_dir, FOUR)
    assert gemini_ready()
    out = crawl(project, summarizer="auto")
    assert out["indexed"] == 4 and out["failed"] == 0
    assert out["summarizers"] == {"local": 4} and out["gemini_fallbacks"] == 4
    assert out["gemini_error"].startswith("Gemini CLI is not authenticated")
    assert fake_gemini_api.chat_requests() == []


def test_auto_with_a_failing_api_falls_back_for_every_file(
    project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI
):
    project = open_project(project_dir, FOUR, gemini_batch_files=2)  # two batches, both fail
    fake_gemini_api.default_reply = Reply(status=400, error_message="Scripted bad request.")
    out = crawl(project, summarizer="auto")

    assert out["indexed"] == 4 and out["failed"] == 0 and out["failures"] == []
    assert out["summarizers"] == {"local": 4} and out["gemini_fallbacks"] == 4
    assert "HTTP 400" in out["gemini_error"] and "Scripted bad request" in out["gemini_error"]
    assert len(fake_gemini_api.chat_requests()) == 2  # an API error is not persistent: each batch tries
    assert set(summarizers(project).values()) == {"local"}


def test_auto_stops_asking_a_hanging_api_after_two_timeouts_in_a_row(
    project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI
):
    """Every call would wait out gemini_timeout_s: after two in a row the rest go local at once."""
    import time

    project = open_project(project_dir, FOUR, gemini_batch_files=1, gemini_timeout_s=6)  # four batches
    fake_gemini_api.default_reply = Reply(delay=100)
    started = time.monotonic()
    out = crawl(project, summarizer="auto", jobs=1)
    elapsed = time.monotonic() - started

    assert out["indexed"] == 4 and out["summarizers"] == {"local": 4} and out["gemini_fallbacks"] == 4
    assert "did not finish within 6 seconds" in out["gemini_error"]
    calls = json.loads((project.data_dir / "gemini" / "gemini_rate.json").read_text())  # one stamp per call
    assert len(calls) == 2 and len(fake_gemini_api.chat_requests()) <= 2
    assert elapsed < 2 * (6 + 3) + 5, elapsed


def test_gemini_with_a_failing_api_reports_failures_and_keeps_old_rows(
    project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI
):
    project = open_project(project_dir, FOUR)
    crawl(project, summarizer="local")
    before = rows(project)
    (project_dir / "src/models.py").write_text(FOUR["src/models.py"] + "\n\nclass Refund:\n    pass\n")
    (project_dir / "src/new.py").write_text("def brand_new():\n    pass\n")
    fake_gemini_api.default_reply = Reply(status=400, error_message="Scripted bad request.")

    out = crawl(project, summarizer="gemini")
    assert out["indexed"] == 0 and out["indexed_files"] == [] and out["summarizers"] == {}
    assert out["failed"] == 2 and out["unchanged"] == 3
    assert sorted(f["path"] for f in out["failures"]) == ["src/models.py", "src/new.py"]
    assert all("HTTP 400" in f["error"] for f in out["failures"])
    assert "gemini_fallbacks" not in out
    assert len(fake_gemini_api.chat_requests()) == 1
    after = rows(project)
    assert "src/new.py" not in after  # not indexed
    assert after == before  # the old row of the changed file is kept as it was (hash, stat, summary)
    assert "Refund" not in after["src/models.py"]["symbols"]


# ---------------------------------------------------------------- --upgrade
def test_upgrade_replaces_local_summaries_once(project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI):
    project = open_project(project_dir, FOUR)
    first = crawl(project, summarizer="local")
    assert first["summarizers"] == {"local": 4}
    local_rows = rows(project)
    fake_gemini_api.handler = responder = summaries_responder()

    up = crawl(project, upgrade=True)
    assert up["indexed"] == 4 and up["summarizers"] == {"gemini": 4} and up["failed"] == 0
    assert len(fake_gemini_api.chat_requests()) == 1 and sorted(responder.paths) == sorted(FOUR)
    upgraded = rows(project)
    for path, text in FOUR.items():
        assert upgraded[path]["summarizer"] == "gemini"
        assert (upgraded[path]["summary"], upgraded[path]["symbols"]) == expected_gemini(path, text)
        assert upgraded[path]["content_hash"] == local_rows[path]["content_hash"]

    again = crawl(project, upgrade=True)
    assert again["indexed"] == 0 and again["unchanged"] == 4 and again["summarizers"] == {}
    assert len(fake_gemini_api.chat_requests()) == 1  # no new request
    assert rows(project) == upgraded


# ---------------------------------------------------------------- index_files
def test_index_one_file_with_gemini(project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI):
    project = open_project(project_dir, FOUR)
    fake_gemini_api.handler = responder = summaries_responder()
    out = index_files(project, [project_dir / "src/models.py"], summarizer="gemini")

    assert out["indexed_files"] == ["src/models.py"] and out["summarizers"] == {"gemini": 1}
    assert len(fake_gemini_api.chat_requests()) == 1 and responder.batches == [["src/models.py"]]
    row = rows(project)["src/models.py"]
    assert row["summarizer"] == "gemini"
    assert (row["summary"], row["symbols"]) == expected_gemini("src/models.py", FOUR["src/models.py"])
    assert row["symbols"] == ["Invoice", "Invoice.total", "Customer"]
    assert set(rows(project)) == {"src/models.py"}


# ---------------------------------------------------------------- the script
def test_crawl_script_with_gemini_runs_the_cli_outside_the_project(
    project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI
):
    """Run in the project, Gemini CLI would send the project's folder listing and its GEMINI.md with
    every request (verified against 0.61.0); the summaries must not carry either."""
    marker = "GEMINI-MD-MARKER-5f0c2e91"
    listed_only = "zz_listing_only_7d41"  # a folder the crawl ignores but a CLI listing would show
    make_tree(project_dir, FOUR)
    (project_dir / "GEMINI.md").write_text(f"# Project memory\n\n{marker}\n")
    (project_dir / listed_only).mkdir()
    (project_dir / listed_only / "thing.py").write_text("x = 1\n")
    # glob patterns: the ignore file is indexed itself, so it must not spell out the markers
    (project_dir / ".contextwareignore").write_text("G*.md\nzz_*/\n")
    fake_gemini_api.handler = responder = summaries_responder()

    out = run_script("crawl_project", "--summarizer", "gemini", cwd=project_dir, env=gemini_env, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    data = out.json
    indexed = sorted([*FOUR, ".contextwareignore"])
    assert data["ok"] is True and data["indexed_files"] == indexed and data["failed"] == 0
    assert data["summarizers"] == {"gemini": len(indexed)} and "gemini_error" not in data
    assert sorted(responder.paths) == indexed
    assert set(summarizers(Project.open(project_dir)).values()) == {"gemini"}

    sent = all_request_text(fake_gemini_api)
    assert marker not in sent  # GEMINI.md was neither indexed nor loaded as CLI context
    assert listed_only not in sent and str(project_dir) not in sent  # no folder listing of the project
    neutral = Path(os.environ["CONTEXTWARE_HOME"]) / "contextware-gemini-summaries"
    assert str(neutral) in sent  # the CLI's workspace was the empty summaries folder
    assert not any(neutral.iterdir())
    chats = Path(os.environ["GEMINI_CLI_HOME"]) / ".gemini" / "tmp" / "contextware-gemini-summaries" / "chats"
    assert chats.is_dir() and not any(chats.iterdir())  # the CLI recorded the calls; each record was removed


def _summary_processes() -> list[str]:
    """Command lines of live processes running a summary call (their session ids end in _cw_summary)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if "_cw_summary" in cmdline:
            found.append(cmdline)
    return found


def test_ctrl_c_stops_a_gemini_crawl_at_once_not_after_the_timeout(
    project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI
):
    """The CLI waits on a stalled API (the timeout is 120 s): SIGINT kills it and the crawl stops
    within seconds, with the interrupted error, no CLI process left and no local fallback."""
    import signal
    import subprocess
    import sys
    import time

    from tests.support.repo import SCRIPTS

    open_project(project_dir, FOUR, gemini_timeout_s=120)
    fake_gemini_api.default_reply = Reply(delay=100)
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "crawl_project.py"), "--summarizer", "auto"],
        cwd=project_dir,
        env={**os.environ, **gemini_env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not fake_gemini_api.chat_requests() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert fake_gemini_api.chat_requests(), "the CLI never reached the API"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        stopped_after = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    error = json.loads(out)["error"]
    assert error["code"] == "interrupted" and "Traceback" not in err
    assert stopped_after < 8, stopped_after
    assert _summary_processes() == []
    assert rows(Project.open(project_dir)) == {}  # nothing summarised locally behind the user's back
