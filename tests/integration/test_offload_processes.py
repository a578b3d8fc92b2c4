"""One-shot offloads (contextware.offload.run / scripts/offload.py) against the REAL Gemini CLI talking to
the local fake API: cache hits, staleness by edit and by TTL, errors never cached, the summary and
its fallback, the script's envelope and bad input.  Each real CLI run costs ~2 s, so each test
checks several things.  Sessions: test_offload_sessions.py; sync, --global and concurrency (with a
fake `gemini` executable): test_offload_sync.py.
"""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest

from contextware.core.errors import GeminiError, UsageError
from contextware.core.text import approx_tokens, iso, utcnow
from contextware.offload.run import offload
from tests.support.fake_gemini_api import Reply
from tests.support.offload_helpers import table_rows, user_text, varied_text, write_sources


def _entries(project) -> list[Path]:
    root = project.data_dir / "offloads" / "cache"
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []


# ---------------------------------------------------------------- real CLI
def test_miss_writes_files_and_index_then_hit_returns_at_once(real_gemini, make_project):
    project = make_project(offload_summarizer="gemini", summary_max_tokens=100)
    long_answer = varied_text(120)
    real_gemini.push(long_answer, "Summary: handler routes requests through route().")
    out = offload(project, "How are requests routed?", files="src/app.py", include_dirs="docs", topic="routing")

    assert out["cached"] is False
    assert out["summary"] == "Summary: handler routes requests through route()."
    assert out["summary_method"] == "gemini" and out["indexed"] is True
    assert "Finding 100" not in json.dumps(out)  # never the full response
    entry = _entries(project)[0]
    assert out["full_response_path"] == f"contextware_data/offloads/cache/{entry.name}/full_response.md"
    assert (entry / "full_response.md").read_text() == long_answer
    assert (entry / "summary.md").read_text() == out["summary"]
    meta = json.loads((entry / "metadata.json").read_text())
    assert meta["source_paths"] == ["src/app.py", "docs"] and meta["source_type"] == "files+dirs"
    assert [s["path"] for s in meta["sources"]] == ["docs/design.md", "src/app.py"]
    assert meta["type"] == "offload" and meta["topics"] == ["routing"] and meta["model"] == "gemini-2.5-pro"
    assert meta["project"] == str(project.root) and meta["session_name"] is None
    assert meta["token_count"] == out["tokens"] > 0 and meta["summary_method"] == "gemini"
    assert meta["gemini_session_id"].startswith("cw_offload_")

    research, summary_call = real_gemini.chat_requests()
    assert research.model == "gemini-2.5-pro" and summary_call.model == "gemini-2.5-flash"
    sent = user_text(research)
    assert "UNIQUE-APP-CONTENT" in sent and "How are requests routed?" in sent
    assert str(project.root / "docs") in sent  # --include-directories reached the workspace
    summary_sent = user_text(summary_call)
    assert "Finding 100" in summary_sent and str(project.root) not in summary_sent  # neutral folder

    rows = table_rows(project)
    assert len(rows) == 1
    row = rows[0]
    assert row["id"] == meta["id"] and row["summary"] == out["summary"] and row["type"] == "offload"
    assert row["source_paths"] == ["src/app.py", "docs"] and row["topics"] == ["routing"]
    assert row["response_file"] == f"offloads/cache/{entry.name}/full_response.md"
    assert row["prompt_hash"] == meta["prompt_hash"] and row["source_hash"] == meta["source_hash"]

    # a hit: no Gemini call, same answer; a touch (same bytes) keeps it fresh and refreshes the stat
    os.utime(project.root / "src" / "app.py", (time.time() + 5, time.time() + 5))
    started = time.monotonic()
    hit = offload(project, "How are requests routed?", files="src/app.py", include_dirs="docs")
    assert time.monotonic() - started < 3.0  # no Gemini start (~2 s); the request count below is the proof
    assert hit["cached"] is True and hit["summary"] == out["summary"] and hit["id"] == out["id"]
    assert hit["full_response_path"] == out["full_response_path"] and hit["tokens"] == out["tokens"]
    assert len(real_gemini.chat_requests()) == 2
    meta2 = json.loads((entry / "metadata.json").read_text())
    assert meta2["sources"][1]["mtime"] == (project.root / "src" / "app.py").stat().st_mtime


def test_stale_by_edit_by_ttl_and_refresh(real_gemini, make_project):
    project = make_project(cache_ttl_days=1)
    real_gemini.push("First answer.", "Second answer.", "Third answer.", "Fourth answer.")
    ask = lambda **kw: offload(project, "What does util do?", files="src/util.py", **kw)  # noqa: E731
    first = ask()
    assert first["cached"] is False and first["summary"] == "First answer." and first["summary_method"] == "full"

    (project.root / "src" / "util.py").write_text("def route(event):\n    return event['route']\n")
    second = ask()
    assert second["cached"] is False and second["stale_reason"] == "src/util.py changed"
    assert second["summary"] == "Second answer." and second["key"] == first["key"] and second["id"] == first["id"]
    assert "event['route']" in user_text(real_gemini.chat_requests()[-1])
    assert ask()["cached"] is True

    meta_path = _entries(project)[0] / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["created_at"] = iso(utcnow() - timedelta(days=2))
    meta_path.write_text(json.dumps(meta))
    third = ask()
    assert third["cached"] is False and "days old" in third["stale_reason"] and third["summary"] == "Third answer."

    fourth = ask(refresh=True)
    assert fourth["cached"] is False and fourth["stale_reason"] == "--refresh was given"
    assert len(_entries(project)) == 1 and len(real_gemini.chat_requests()) == 4
    rows = table_rows(project)
    assert [r["summary"] for r in rows] == ["Fourth answer."]  # one row per entry, updated in place


def test_errors_are_never_cached_and_summary_falls_back(real_gemini, make_project):
    project = make_project(offload_summarizer="gemini", summary_max_tokens=40)
    real_gemini.push(Reply(status=400, error_message="Request is malformed."))
    with pytest.raises(GeminiError) as info:
        offload(project, "Explain the design.", include_dirs="docs")
    assert info.value.code == "api_error" and "malformed" in info.value.message
    assert _entries(project) == [] and project.db.open_table("offloads") is None

    answer = varied_text(12)
    real_gemini.push(answer, Reply(status=400, error_message="Summary model down."))
    out = offload(project, "Explain the design.", include_dirs="docs")
    assert out["cached"] is False and out["summary_method"] == "truncated"
    assert "Summary model down" in out["summary_error"]
    assert answer.startswith(out["summary"]) and out["summary"].endswith("widgets.")  # a sentence boundary
    assert approx_tokens(out["summary"]) <= 40
    assert json.loads((_entries(project)[0] / "metadata.json").read_text())["summary_method"] == "truncated"


def test_script_envelope_stdin_and_bad_input(real_gemini, tmp_path, script, project_dir):
    write_sources(project_dir)
    real_gemini.push("The piped context says hello.")
    args = ("--prompt", "What does the context say?", "--files", "src/app.py", "--topic", "ctx")
    first = script("offload", *args, input="PIPED-CONTEXT-42")
    assert first.returncode == 0, first.stderr[-2000:]
    doc = first.json
    assert doc["ok"] is True and doc["cached"] is False
    assert {"summary", "full_response_path", "tokens"} <= doc.keys()
    assert doc["full_response_path"].startswith("contextware_data/offloads/cache/")
    assert "PIPED-CONTEXT-42" in user_text(real_gemini.chat_requests()[0])
    again = script("offload", *args, input="PIPED-CONTEXT-42")
    assert again.json["cached"] is True and len(real_gemini.chat_requests()) == 1
    text = script("offload", *args, "--format", "text", input="PIPED-CONTEXT-42")
    assert text.stdout.startswith("Cached answer") and "The piped context says hello." in text.stdout

    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("x")
    bad = [
        (("--prompt", "  "), "empty_prompt"),
        (("--prompt", "q", "--files", "missing.py"), "file_not_found"),
        (("--prompt", "q", "--include-dirs", "a.txt"), "not_a_dir"),
        (("--prompt", "q", "--session", "bad name!"), "bad_session"),
        (("--prompt", "q", "--session", "s1", "--refresh"), "bad_option"),
        (("--prompt", "q", "--resume-id", "no spaces allowed"), "bad_resume_id"),
        (("sessions", "show", "nope"), "unknown_session"),
        (("sessions", "list", "--prompt", "q"), "bad_option"),
        (("bogus",), "usage"),
    ]
    for argv, code in bad:
        res = script("offload", *argv, cwd=other, input="")
        assert res.returncode == 2, (argv, res.stdout, res.stderr[-500:])
        assert res.json["error"]["code"] == code, argv
        assert "\n" not in res.json["error"]["message"]
    assert not (other / "contextware_data").exists()  # nothing written
    listed = script("offload", "sessions", "list", input="")
    assert listed.json == {"ok": True, "count": 0, "sessions": []}


def test_binary_file_is_bad_input(fake_gemini, make_project):
    project = make_project()
    (project.root / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    with pytest.raises(UsageError) as info:
        offload(project, "q", files=str(project.root / "blob.bin"))
    assert info.value.code == "not_text" and fake_gemini.calls() == []
    assert not (project.data_dir / "offloads").exists()


def test_secrets_are_redacted_before_storage(fake_gemini, make_project):
    project = make_project()
    out = offload(project, "Why does login with password=hunter2secret fail?")
    assert out["redacted"] == {"password_assignment": 1}  # the prompt, masked before Gemini saw it
    sent = fake_gemini.calls()[0]["argv"][-1]
    assert "hunter2secret" not in sent and "password=[REDACTED:password_assignment]" in sent
    entry = _entries(project)[0]
    stored = [(entry / n).read_text() for n in ("metadata.json", "full_response.md", "summary.md")]
    stored.append(json.dumps(table_rows(project), default=str))
    assert all("hunter2secret" not in text for text in stored) and "[REDACTED:password_assignment]" in stored[1]
    # the cache still finds it (the key is made from the prompt as sent)
    assert offload(project, "Why does login with password=hunter2secret fail?")["cached"] is True
