"""Hostile frames sent to a real resident service by another local process: nested 100,000 deep,
fields of the wrong type, bad base64, a ``run`` of ``watch`` or ``ui``, a frame trickled in one byte
at a time, a service that never takes the connection.  The service answers an error or closes, never
dies, runs only what it is meant to run, and the next recall is answered at once."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.support.service_helpers import OFF, alive, log_text, rows, run, status, wait_for


def _endpoint(project_dir: Path):
    from contextware.service.protocol import endpoint

    return endpoint((project_dir / "contextware_data").resolve())


def _version() -> str:
    from contextware.service.protocol import code_version

    return code_version()


def _send_raw(sock_path: Path, data: bytes, timeout: float = 10.0) -> bytes:
    """Send raw bytes, read until the service closes; what it answered (b"" when it closed)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(sock_path))
        try:
            sock.sendall(data)
        except OSError:
            return b""
        got = b""
        while True:
            try:
                chunk = sock.recv(1 << 16)
            except OSError:
                return got
            if not chunk:
                return got
            got += chunk


def _malformed(version: str) -> list[bytes]:
    def frame(message: object) -> bytes:
        return json.dumps(message).encode() + b"\n"

    run_of = {"op": "run", "version": version, "prog": "x", "cwd": "/", "env": {}, "stdin": None, "id": "x"}
    return [
        b"[" * 100_000 + b"]" * 100_000 + b"\n",
        b'{"op": ' + b"[" * 3_000 + b"]" * 3_000 + b"}\n",
        b'{"op": "status", "x": ' + b'{"a":' * 5_000 + b"1" + b"}" * 5_000 + b"}\n",
        frame({"op": ["run"], "version": version}),
        frame({**run_of, "command": "recall", "argv": ["--query", "x"], "cwd": ["/"]}),
        frame({**run_of, "command": "recall", "argv": ["--query", "x"], "cwd": {"a": 1}}),
        frame({**run_of, "command": "save", "argv": ["-"], "stdin": 42}),
        frame({**run_of, "command": "save", "argv": ["-"], "stdin": "!!! not base64 ???"}),
        frame({**run_of, "command": "recall", "argv": "--query x"}),
        frame({**run_of, "command": "recall", "argv": ["--query", 7]}),
        frame({**run_of, "command": "recall", "argv": ["--query", "x"], "env": {"CONTEXTWARE_X": ["y"]}}),
        frame({**run_of, "command": "watch", "argv": []}),
        frame({**run_of, "command": "ui", "argv": ["--port", "0"]}),
        frame({**run_of, "command": "index", "argv": ["."]}),
        frame({"op": "hook", "version": version, "stdin": {"a": 1}, "cwd": "/"}),
        frame({"op": "mcp", "version": version, "tool": ["recall"], "arguments": {}}),
        frame({"op": "mcp", "version": version, "tool": "recall", "arguments": []}),
        frame({"op": "nonsense"}),
        frame([1, 2, 3]),
        b"\xff\xfe not utf-8\n",
        b"not json at all\n",
        b'{"op": "status"' + b"\n",
        b"\n",
    ]


def test_a_thousand_malformed_frames_then_a_recall_answered_at_once(project_dir, services):
    saved = run("save_fact", "Deploys go out from the release branch on Tuesdays", cwd=project_dir, env=OFF)
    assert saved.returncode == 0
    started = run("service", "start", cwd=project_dir).json
    pid, sock_path = started["pid"], _endpoint(project_dir).socket
    run("recall", "--query", "warm up", cwd=project_dir)  # the first search reads the tables
    frames = _malformed(_version())
    answers: dict[bytes, bytes] = {}
    for i in range(1_000):
        data = frames[i % len(frames)]
        answers[data] = _send_raw(sock_path, data)
    assert alive(pid), log_text(project_dir)[-2000:]
    for data, answer in answers.items():  # an error frame (or a quiet close), never an answer
        assert b'"ok": true' not in answer, (data[:80], answer[:200])
        if answer.strip():
            assert json.loads(answer)["error"]["code"] == "bad_request", (data[:80], answer[:200])
    assert "run watch" not in log_text(project_dir) and "run ui" not in log_text(project_dir)

    began = time.monotonic()
    out = run("recall", "--query", "when do deploys go out", cwd=project_dir)
    took = time.monotonic() - began
    assert out.returncode == 0 and out.json["results"][0]["id"] == saved.json["id"]
    info = status(project_dir)
    assert info["pid"] == pid and info["requests"] >= 2
    # The script's own start (Python, imports) is most of it; the service answered at once.
    assert took < 5.0, took
    from contextware.service import client

    began = time.monotonic()
    message = {"op": "run", "command": "recall", "argv": ["--query", "deploys"], "prog": "recall"}
    message["cwd"] = str(project_dir)
    message |= {"env": {}, "stdin": None, "id": "t"}
    answer = client.exchange(_endpoint(project_dir), message, timeout=30, first_byte=1.0)
    assert answer["ok"] is True and answer["exit"] == 0 and time.monotonic() - began < 1.0


def test_a_frame_trickled_one_byte_at_a_time_is_cut_off(project_dir, services):
    run("save_fact", "The cache lives in Redis", cwd=project_dir, env=OFF)
    pid = run("service", "start", cwd=project_dir).json["pid"]
    sock_path = _endpoint(project_dir).socket
    closed_after: list[float] = []

    def trickle() -> None:
        began = time.monotonic()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(sock_path))
            try:
                for byte in b'{"op": "status", "padding": "' + b"x" * 100:
                    sock.sendall(bytes([byte]))
                    time.sleep(0.5)
            except OSError:
                pass
        closed_after.append(time.monotonic() - began)

    slow = threading.Thread(target=trickle)
    slow.start()
    time.sleep(0.3)
    began = time.monotonic()
    out = run("recall", "--query", "where is the cache", cwd=project_dir)
    took = time.monotonic() - began
    slow.join(timeout=120)
    assert out.returncode == 0 and out.json["results"]
    assert took < 12.0, took  # without a deadline for the whole frame: 50 s (101 bytes, 0.5 s each)
    assert closed_after and closed_after[0] < 15.0, closed_after
    assert alive(pid) and "did not arrive in time" in log_text(project_dir)


WEDGED = """
import os, socket, sys, time
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
os.umask(0o077)
sock.bind(sys.argv[1])
sock.listen(8)
print("ready", flush=True)
time.sleep(120)  # listens, never accepts: a service wedged on one request
"""


def test_a_wedged_service_costs_a_caller_seconds_not_minutes(project_dir, services):
    run("save_fact", "Builds run on the big runner", cwd=project_dir, env=OFF)
    ep = _endpoint(project_dir)
    from contextware.service.protocol import check_folder

    check_folder(ep, create=True)
    wedged = subprocess.Popen([sys.executable, "-c", WEDGED, str(ep.socket)], stdout=subprocess.PIPE, text=True)
    try:
        assert wedged.stdout is not None and wedged.stdout.readline().strip() == "ready"
        began = time.monotonic()
        out = run("recall", "--query", "where do builds run", cwd=project_dir)
        took = time.monotonic() - began
        assert out.returncode == 0 and out.json["results"], out.stdout
        assert took < 15.0, took  # was 300 s: the client's whole-command timeout
    finally:
        wedged.kill()
        wedged.wait()


def test_non_utf8_text_in_a_request_runs_in_process_with_a_clear_error(project_dir, services):
    run("save_fact", "first", cwd=project_dir, env=OFF)
    run("service", "start", cwd=project_dir)
    script = Path(__file__).resolve().parents[2] / "scripts" / "recall.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--query", b"caf\xe9".decode("utf-8", "surrogateescape")],
        cwd=project_dir,
        capture_output=True,
        timeout=120,
        env={**__import__("os").environ, "CONTEXTWARE_SERVICE": "auto"},
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert json.loads(proc.stdout)["error"]["code"] and b"Traceback" not in proc.stderr


def test_base64_stdin_still_travels(project_dir, services):
    """The frame checks refuse bad base64, not good: stdin read by the service is the caller's."""
    assert base64.b64encode(b"x").decode() == "eA=="
    run("save_fact", "first", cwd=project_dir, env=OFF)
    out = run("save_fact", "-", cwd=project_dir, input="Read from standard input")
    assert out.returncode == 0 and out.json["written"] == 1
    assert status(project_dir)["requests"] >= 1


def test_a_fifo_planted_under_a_running_service_is_damage_never_a_hang(project_dir, services):
    import os

    from tests.support.service_helpers import hook

    run("save_fact", "We deploy on Fridays", cwd=project_dir, env=OFF)
    pid = run("service", "start", cwd=project_dir).json["pid"]
    assert run("recall", "--query", "deploy", cwd=project_dir).json["results"]  # tables open in the service
    data = project_dir / "contextware_data" / "lancedb" / "facts.lance" / "data"
    victim = next(data.iterdir())
    victim.unlink()
    os.mkfifo(victim)
    began = time.monotonic()
    out = run("recall", "--query", "when do we deploy", cwd=project_dir)
    assert (
        out.returncode == 1 and out.json["error"]["code"] == "damaged_data" and "FIFO" in out.json["error"]["message"]
    )
    turn = json.dumps({"hook_event_name": "BeforeAgent", "prompt": "when do we deploy", "session_id": "s1"})
    assert hook(turn, project_dir).returncode == 0
    assert time.monotonic() - began < 30 and alive(pid) and status(project_dir)["pid"] == pid


def test_a_request_whose_caller_gave_up_waiting_is_not_run_by_the_service(project_dir, services):
    """A caller waits ``first_byte`` seconds for a busy service to take its connection, then runs
    the request itself; its frame is still in the socket's buffer.  The service, free again, found
    it there and ran it a second time (eight writers on a loaded machine: a save answered
    ``duplicate_of`` itself).  Now the caller's close is seen and the request is not run."""
    from contextware.service import client

    run("save_fact", "Deploys go out on Tuesdays", cwd=project_dir, env=OFF)
    run("service", "start", cwd=project_dir)
    ep = _endpoint(project_dir)
    run("recall", "--query", "warm up", cwd=project_dir)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as hold:  # keeps the service reading a frame
        hold.connect(str(ep.socket))
        hold.sendall(b'{"op": "status", "padding": "')
        time.sleep(0.3)
        message = {"op": "run", "command": "save", "argv": ["Given up on: never saved by the service"]}
        message |= {"prog": "save_fact.py", "cwd": str(project_dir), "env": {}, "stdin": None, "id": "gave-up"}
        message["version"] = _version()
        try:
            client.exchange(ep, message, timeout=30, first_byte=1.0)
            raise AssertionError("the service took the connection while busy with another")
        except client.Busy:
            pass
    handled = wait_for(lambda: [x for x in ("caller gone", "run save gave-up") if x in log_text(project_dir)])
    texts = [r["text"] for r in rows(project_dir, "facts")]
    assert "Given up on: never saved by the service" not in texts and "Deploys go out on Tuesdays" in texts
    assert handled == ["caller gone"]
