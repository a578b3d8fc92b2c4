"""Offload failure paths the user meets through ``scripts/offload.py``: the Gemini API rate limiting
until the retries are used up, a session asked for under another feature (``feature_mismatch``) and
``--include-dirs`` covering more files than ``offload_max_source_files`` (``too_many_files``).

They run the REAL Gemini CLI against the local fake API (tests/support/fake_gemini_api.py) where a call is
made, and check the error envelope (one sentence, code, exit code, no traceback) and that nothing
was written: no cache entry, no session turn, no row in the ``offloads`` table.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from contextware.core.errors import UsageError
from contextware.offload.sources import resolve_sources
from contextware.storage.project import Project
from tests.support.fake_gemini_api import Reply
from tests.support.gemini_fixtures import update_gemini_settings
from tests.support.offload_helpers import TEST_CONFIG, table_rows, write_sources
from tests.support.scripts import ScriptResult, run_script


def _project(root: Path, **config) -> Project:
    """A project with a few sources and test settings in its config.json (read by the subprocess)."""
    write_sources(root)
    project = Project.open(root)
    project.data_dir.mkdir(parents=True, exist_ok=True)
    (project.data_dir / "config.json").write_text(json.dumps({**TEST_CONFIG, **config}))
    return project


def _offloads_written(project: Project) -> list[str]:
    """Everything under ``<data_dir>/offloads`` (temporary folders included)."""
    root = project.data_dir / "offloads"
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) if root.exists() else []


def _offloads_table(project: Project):
    return Project.open(project.root).db.open_table("offloads")  # a fresh handle: the subprocess wrote


def _assert_clean_error(res: ScriptResult, exit_code: int, code: str) -> str:
    assert res.returncode == exit_code, (res.stdout, res.stderr[-2000:])
    doc = res.json  # exactly one JSON line on stdout
    assert doc["ok"] is False and doc["error"]["code"] == code, doc
    message = doc["error"]["message"]
    assert "\n" not in message and "Traceback" not in message and "{" not in message
    assert re.fullmatch(r"\S[^\n]*[.]", message), message  # one sentence, no line breaks
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout
    return message


# ---------------------------------------------------------------- rate limit
BACKOFF = 0.2  # gemini_rate_limit_backoff_s: the retries wait 0.2 s, then 0.4 s


def test_rate_limit_until_retries_are_used_up_fails_cleanly_and_writes_nothing(real_gemini, gemini_cli_env, tmp_path):
    # The CLI itself would retry a 429 for minutes; with maxAttempts 1 it exits 173 at once, so the
    # retries under test are ours (run_gemini: 2 retries).
    update_gemini_settings(gemini_cli_env, {"general": {"maxAttempts": 1}})
    real_gemini.default_reply = Reply(status=429, error_message="Quota exceeded for requests per minute.")
    project = _project(tmp_path / "proj", gemini_rate_limit_backoff_s=BACKOFF)

    res = run_script(
        "offload",
        "--prompt",
        "How are requests routed?",
        "--files",
        "src/app.py",
        "--include-dirs",
        "docs",
        cwd=project.root,
    )

    # a runtime failure in one sentence, no traceback; nothing cached, nothing indexed
    _assert_clean_error(res, 1, "rate_limited")
    error = res.json["error"]
    assert error["message"] == "The Gemini API is rate limiting requests: Quota exceeded for requests per minute."
    assert error["details"] == {"exit_code": 173, "http_status": 429}
    assert _offloads_written(project) == []
    assert _offloads_table(project) is None
    chats = real_gemini.chat_requests()
    assert len(chats) == 3, [c.path for c in chats]  # the first try and 2 retries
    assert all("How are requests routed?" in "\n".join(c.texts()) for c in chats)


def test_one_rate_limited_try_is_retried_and_answered(real_gemini, gemini_cli_env, tmp_path):
    """A single 429, then the API answers: the retry starts a new Gemini session (the refused try
    left one the CLI can neither start again nor resume), and its id is the one recorded."""
    update_gemini_settings(gemini_cli_env, {"general": {"maxAttempts": 1}})
    real_gemini.push(
        Reply(status=429, error_message="Quota exceeded for requests per minute."),
        "Requests go through handler, then route.",
    )
    project = _project(tmp_path / "proj", gemini_rate_limit_backoff_s=BACKOFF)
    res = run_script("offload", "--prompt", "How are requests routed?", cwd=project.root)
    assert res.returncode == 0, res.stdout + res.stderr[-2000:]
    assert res.json["summary"] == "Requests go through handler, then route."
    assert len(real_gemini.chat_requests()) == 2
    assert res.json["gemini_session_id"].endswith("_r1")


def test_a_session_turn_after_a_rate_limited_try_continues_in_the_new_gemini_session(
    real_gemini, gemini_cli_env, tmp_path
):
    update_gemini_settings(gemini_cli_env, {"general": {"maxAttempts": 1}})
    real_gemini.push(
        Reply(status=429, error_message="Quota exceeded for requests per minute."), "First answer.", "Second answer."
    )
    project = _project(tmp_path / "proj", gemini_rate_limit_backoff_s=BACKOFF)
    first = run_script("offload", "--prompt", "How are requests routed?", "--session", "routing", cwd=project.root)
    assert first.returncode == 0, first.stdout + first.stderr[-2000:]
    second = run_script("offload", "--prompt", "And errors?", "--session", "routing", cwd=project.root)
    assert second.returncode == 0, second.stdout + second.stderr[-2000:]
    assert second.json["gemini_session_id"] == first.json["gemini_session_id"]
    assert first.json["gemini_session_id"].endswith("_r1") and second.json["new_gemini_session"] is False


def test_session_of_another_feature_is_feature_mismatch(real_gemini, tmp_path):
    project = _project(tmp_path / "proj")
    real_gemini.push("Auth uses JWT tokens signed with RS256.")
    first = run_script("offload", "--feature", "auth", "--prompt", "How does auth work?", cwd=project.root, input="")
    assert first.returncode == 0, (first.stdout, first.stderr[-2000:])
    assert first.json["session"] == "auth" and first.json["feature"] == "auth" and first.json["turn"] == 1
    sdir = project.data_dir / "offloads" / "sessions" / "auth"
    state_before = (sdir / "session.json").read_bytes()
    files_before = _offloads_written(project)
    rows_before = sorted(r["id"] for r in table_rows(Project.open(project.root)))
    assert len(rows_before) == 2  # the turn and the session's synthesis
    chats_before = len(real_gemini.chat_requests())

    # the user continues the session "auth" but files the question under another feature
    real_gemini.push("This answer must never be asked for.")
    res = run_script(
        "offload",
        "--session",
        "auth",
        "--feature",
        "billing",
        "--prompt",
        "When are invoices sent?",
        cwd=project.root,
        input="",
    )
    message = _assert_clean_error(res, 2, "feature_mismatch")
    assert message == "Session auth belongs to feature 'auth', not 'billing'."
    assert len(real_gemini.chat_requests()) == chats_before  # Gemini was not called
    assert (sdir / "session.json").read_bytes() == state_before  # the session is untouched
    assert _offloads_written(project) == files_before
    assert sorted(r["id"] for r in table_rows(Project.open(project.root))) == rows_before


# ---------------------------------------------------------------- too_many_files
def test_include_dirs_over_the_default_limit_is_too_many_files(real_gemini, tmp_path):
    root = tmp_path / "proj"
    write_sources(root)
    generated = root / "generated"
    generated.mkdir()
    for i in range(5001):  # offload_max_source_files defaults to 5000
        (generated / f"f{i:04d}.txt").write_text(f"line {i}\n")

    res = run_script(
        "offload", "--prompt", "Summarise the generated files.", "--include-dirs", "generated", cwd=root, input=""
    )
    message = _assert_clean_error(res, 2, "too_many_files")
    assert message == (
        "--include-dirs covers more than 5000 files; give narrower folders "
        "(or raise offload_max_source_files in config.json)."
    )
    assert real_gemini.chat_requests() == []  # refused before Gemini is asked
    assert not (root / "contextware_data").exists()  # nothing written at all


def test_include_dirs_over_the_configured_limit_counts_every_folder(real_gemini, tmp_path):
    project = _project(tmp_path / "proj", offload_max_source_files=2)
    # src holds 2 files (at the limit), docs 1 more: together over it
    res = run_script(
        "offload",
        "--prompt",
        "Explain the code and the design.",
        "--include-dirs",
        "src,docs",
        cwd=project.root,
        input="",
    )
    message = _assert_clean_error(res, 2, "too_many_files")
    assert message.startswith("--include-dirs covers more than 2 files;")
    assert real_gemini.chat_requests() == []
    assert _offloads_written(project) == [] and _offloads_table(project) is None
    assert not (project.data_dir / "locks").exists()  # refused before any lock was taken

    # the boundary: exactly the limit is accepted, one more is refused (no Gemini call either way)
    project = Project.open(project.root)
    src, docs = str(project.root / "src"), str(project.root / "docs")
    assert len(resolve_sources(project, [], [src]).dir_files) == 2
    project.configure(offload_max_source_files=3)
    assert len(resolve_sources(project, [], [src, docs]).tracked) == 3
    project.configure(offload_max_source_files=2)
    with pytest.raises(UsageError) as info:
        resolve_sources(project, [], [src, docs])
    assert info.value.code == "too_many_files"


def test_overlapping_include_dirs_count_each_file_once(tmp_path):
    project = _project(tmp_path / "proj", offload_max_source_files=3)  # the project holds 3 source files
    project = Project.open(project.root)
    root = str(project.root)
    assert len(resolve_sources(project, [], [root]).tracked) == 3
    # the root and src, a folder inside it, cover the same 3 files: within the limit
    sources = resolve_sources(project, [], [root, str(project.root / "src")])
    assert len(sources.tracked) == 3
