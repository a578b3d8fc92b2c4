"""Bounded doors, as real processes (issue 35, items 3 and 4): the MCP front refuses a 300 MB message
and an argument over its bound with one error naming the parameter, and its peak memory stays under
600 MB; ``import`` of a file holding one 60 MB line is one error, in bounded memory; the merge driver
answers a named pipe, an endless device, a folder or a missing file with one JSON error and exit 2,
never blocks and never replaces OURS.  Peak memory is the process's own, from ``/usr/bin/time -v``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support.repo import SCRIPTS
from tests.support.service_helpers import OFF

PEAK_MB = 600
TIME = "/usr/bin/time"
pytestmark = pytest.mark.skipif(not os.path.exists(TIME), reason="needs /usr/bin/time")


def _measured(args: list[str], cwd: Path, feed: object, timeout: float = 300) -> tuple[str, int, int]:
    """(stdout, exit code, peak resident MB) of ``args`` run under ``/usr/bin/time -v``; ``feed``
    writes its standard input (a callable given the pipe) or is the bytes to write."""
    report = cwd / "time.txt"
    proc = subprocess.Popen(
        [TIME, "-v", "-o", str(report), *args],
        cwd=cwd,
        env={**os.environ, **OFF},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def write() -> None:
        try:
            feed(proc.stdin) if callable(feed) else proc.stdin.write(feed)  # type: ignore[union-attr]
        finally:
            proc.stdin.close()  # type: ignore[union-attr]

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    out = proc.stdout.read().decode("utf-8", errors="replace")
    code = proc.wait(timeout=timeout)
    writer.join(timeout)
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", report.read_text()).group(1))  # type: ignore[union-attr]
    return out, code, peak_kb // 1024


def _call(id_: int, name: str, arguments: dict) -> bytes:
    message = {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return json.dumps(message).encode() + b"\n"


def test_the_mcp_front_refuses_a_300_mb_query_in_bounded_memory(project_dir: Path):
    def feed(pipe) -> None:
        head = (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": "'
        )
        pipe.write(head)
        chunk = b"x" * (1024 * 1024)
        for _ in range(300):
            pipe.write(chunk)
        pipe.write(b'"}}}\n')
        pipe.write(_call(2, "recall", {"query": "y" * 2_000_000}))  # under the message bound, over the query's
        pipe.write(_call(3, "recall", {"query": "port", "limit": True}))
        pipe.write(_call(4, "save_fact", {"content": "x", "topics": ["t"] * 20_000}))
        pipe.write(b'{"jsonrpc": "2.0", "id": 5, "method": "ping"}\n')

    out, code, peak = _measured([sys.executable, str(SCRIPTS / "mcp_server.py")], project_dir, feed)
    answers = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(answers) == 5, out[:2000]
    assert answers[0]["id"] is None and "over the" in answers[0]["error"]["message"]
    by_id = {a["id"]: a for a in answers[1:]}
    errors = {i: by_id[i]["result"]["structuredContent"]["error"] for i in (2, 3, 4)}
    assert errors[2]["code"] == "too_large" and "query holds 2,000,000 characters" in errors[2]["message"]
    assert errors[3]["code"] == "bad_arguments" and "limit must be a number" in errors[3]["message"]
    assert errors[4]["code"] == "too_large" and "topics has 20,000 items" in errors[4]["message"]
    assert by_id[5]["result"] == {}
    print(f"peak {peak} MB")
    assert peak < PEAK_MB, f"peak {peak} MB"
    assert not (project_dir / "contextware_data").exists()


def test_import_of_a_60_mb_line_is_one_error_in_bounded_memory(project_dir: Path):
    path = project_dir / "memory.jsonl"
    with path.open("w") as f:
        f.write('{"format": "contextware-memory", "version": 2}\n')
        fact = {"id": "fact-0123456789ab", "kind": "note", "text": "x" * (60 * 1024 * 1024)}
        f.write(json.dumps({**fact, "created_at": "2026-01-01T00:00:00Z"}) + "\n")
    out, code, peak = _measured([sys.executable, str(SCRIPTS / "import.py"), str(path)], project_dir, b"")
    error = json.loads(out)["error"]
    assert code == 2 and error["code"] == "bad_import" and error["message"].startswith("Line 2"), out[:500]
    print(f"peak {peak} MB")
    assert peak < PEAK_MB, f"peak {peak} MB"


HEADER = '{"format": "contextware-memory", "version": 2}\n'


@pytest.mark.parametrize("side", ["base", "ours", "theirs"])
@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "missing"])
def test_the_merge_driver_answers_every_bad_input_with_one_error(tmp_path: Path, side: str, kind: str):
    paths = {name: tmp_path / name for name in ("base", "ours", "theirs")}
    for path in paths.values():
        path.write_text(HEADER)
    bad = paths[side]
    bad.unlink()
    if kind == "fifo":
        os.mkfifo(bad)
    elif kind == "device":
        bad = paths[side] = Path("/dev/urandom")  # endless, like /dev/zero
    elif kind == "folder":
        bad.mkdir()
    ours_before = paths["ours"].read_bytes() if paths["ours"].is_file() else None
    done = subprocess.run(
        [sys.executable, "-m", "contextware.cli", "merge-driver", *(str(paths[n]) for n in ("base", "ours", "theirs"))],
        cwd=tmp_path,
        env={**os.environ, **OFF},
        capture_output=True,
        text=True,
        timeout=60,
    )
    error = json.loads(done.stdout)["error"]  # one JSON document
    assert done.returncode == 2 and side.upper() in error["message"], done.stdout + done.stderr
    assert error["code"] in ("bad_merge_input", "file_not_found") and "Traceback" not in done.stderr
    if ours_before is not None:
        assert paths["ours"].read_bytes() == ours_before  # git keeps its own conflict
    elif kind == "fifo":
        assert paths["ours"].is_fifo()  # never replaced by the merged file
    assert Path("/dev/urandom").is_char_device()
