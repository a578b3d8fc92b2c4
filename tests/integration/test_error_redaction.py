"""Error texts pass through the redaction layer before they reach stdout, stderr, a JSON answer or a
log.  The trigger is real: the data dir's path holds a token-shaped folder name, and where a table's
lock file belongs there is a folder, so the first save fails with an exception we did not
map (``internal_error``) that quotes the path; a database path that is a file fails as ``damaged_data``,
quoting it too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.hook_events import event
from tests.support.mcp_client import SERVER, handshake, read_message, send
from tests.support.scripts import run_script
from tests.support.service_helpers import hook

TOKEN = "ghp_" + "Zq8pLm3Rt6Vx9Nb2Kc5Hd7Fg1Js4Wy0AeUo"  # a GitHub token's shape


def _broken_data_dir(tmp_path: Path) -> dict[str, str]:
    data = tmp_path / "home" / TOKEN / "contextware_data"
    data.mkdir(parents=True)
    for table in ("facts", "logs"):  # a folder where each lock file belongs
        (data / "locks" / f"{table}.lock").mkdir(parents=True)
    return {"CONTEXTWARE_DATA_DIR": str(data)}


def _assert_clean(text: str) -> None:
    assert TOKEN not in text and TOKEN[4:] not in text, text[-2000:]


def test_internal_and_storage_errors_are_redacted_in_json_and_text(tmp_path: Path, project_dir: Path):
    env = _broken_data_dir(tmp_path)
    for fmt in ((), ("--format", "text")):
        out = run_script("save_fact", "The nightly backup runs at 02:00.", *fmt, cwd=project_dir, env=env)
        assert out.returncode == 1
        _assert_clean(out.stdout + out.stderr)
        assert "[REDACTED" in out.stdout and "Traceback" not in out.stdout + out.stderr
        if not fmt:
            # a lock that is a folder is a clear storage error now (issue 35), still quoting the path
            assert out.json["error"]["code"] == "storage_error", out.stdout
            assert "Is a directory" in out.json["error"]["message"]

    db_file = tmp_path / TOKEN / "lancedb"
    db_file.parent.mkdir()
    db_file.write_text("not a database\n")
    out = run_script("recall", "backup", cwd=project_dir, env={"CONTEXTWARE_DB_URI": str(db_file)})
    assert out.returncode == 1 and out.json["error"]["code"] == "damaged_data"
    _assert_clean(out.stdout + out.stderr)


def test_errors_answered_by_the_service_are_redacted(tmp_path: Path, project_dir: Path, services):
    env = {**_broken_data_dir(tmp_path), "CONTEXTWARE_SERVICE": "auto"}
    for _ in range(2):  # answered by the service or, when it cannot start here, in-process: redacted both ways
        out = run_script("save_fact", "The nightly backup runs at 02:00.", cwd=project_dir, env=env)
        assert out.returncode == 1 and out.json["error"]["code"] == "storage_error", out.stdout
        _assert_clean(out.stdout + out.stderr)


def test_mcp_error_answers_and_the_logged_traceback_are_redacted(tmp_path: Path, project_dir: Path):
    env = {**os.environ, **_broken_data_dir(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, str(SERVER)],
        cwd=project_dir,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        handshake(proc)
        call = {"name": "save_fact", "arguments": {"content": "The nightly backup runs at 02:00."}}
        send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        answer = read_message(proc)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result = answer["result"]
    assert result["isError"] is True and result["structuredContent"]["error"]["code"] == "storage_error"
    assert "[REDACTED" in result["structuredContent"]["error"]["message"]
    _assert_clean(json.dumps(answer))
    stderr = err.decode()
    assert "Is a directory" in stderr and "[REDACTED" in stderr, stderr[-3000:]  # what the server logs
    _assert_clean(stderr)


def test_a_failed_hook_logs_a_redacted_line(tmp_path: Path, project_dir: Path):
    env = _broken_data_dir(tmp_path)
    stdin = event("AfterAgent", project_dir, prompt="when do backups run?", prompt_response="At 02:00 nightly.")
    proc = hook(stdin, project_dir, env={**env, "CONTEXTWARE_SERVICE": "off"})
    assert (proc.returncode, proc.stdout) == (0, "")
    _assert_clean(proc.stderr)
    log = (Path(env["CONTEXTWARE_DATA_DIR"]) / "hooks.log").read_text()
    assert "AfterAgent failed" in log and "[REDACTED" in log, log
    _assert_clean(log)
