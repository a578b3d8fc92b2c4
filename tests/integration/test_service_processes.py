"""The resident service, with real processes: started on demand, stopped, idled out, replaced when
stale or running other code, killed mid-request, shared by many writers, and its socket folder
refused when it is not private."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.repo import REPO
from tests.support.service_helpers import OFF, alive, log_text, pid_from_log, rows, run, status, wait_for, write_config


def _endpoint(project_dir: Path):
    from contextware.service.protocol import endpoint

    return endpoint((project_dir / "contextware_data").resolve())


def test_started_on_demand_answers_like_in_process_and_stops(project_dir, services):
    saved = run("save_fact", "We run the tests with pytest -q", cwd=project_dir)
    assert saved.returncode == 0 and saved.json["written"] == 1
    assert status(project_dir)["running"] is False  # the first write made the data dir, in-process

    served = run("recall", "--query", "how do we run the tests", cwd=project_dir)
    info = status(project_dir)
    assert info["running"] is True and info["requests"] >= 1 and alive(info["pid"])
    assert set(info) >= {"pid", "socket", "version", "uptime_s", "requests"}
    local = run("recall", "--query", "how do we run the tests", cwd=project_dir, env=OFF)
    assert served.returncode == local.returncode == 0
    assert served.json == local.json and served.json["results"][0]["id"] == saved.json["id"]

    second = run("save_fact", "Releases are tagged from main", "--kind", "convention", cwd=project_dir)
    assert second.returncode == 0 and second.json["written"] == 1
    assert status(project_dir)["requests"] > info["requests"]
    assert log_text(project_dir).count("listening on") == 1  # one warm service answered them all
    bad = run("save_fact", "x", "--kind", "nonsense", cwd=project_dir)  # errors travel back unchanged
    assert bad.returncode == 2 and bad.json["error"]["code"] == "bad_kind"

    stopped = run("service", "stop", cwd=project_dir)
    assert stopped.json["stopped"] is True and not alive(info["pid"])
    assert status(project_dir)["running"] is False and not Path(info["socket"]).exists()


def test_stdin_and_project_root_travel_with_the_request(tmp_path, project_dir, services):
    run("save_fact", "first", cwd=project_dir, env=OFF)
    assert run("service", "start", cwd=project_dir).json["running"] is True
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = run("save_fact", "-", "--project-root", str(project_dir), cwd=elsewhere, input="Read from stdin, über")
    assert out.returncode == 0, out.stdout
    assert status(project_dir)["requests"] >= 2
    assert any(r["text"] == "Read from stdin, über" for r in rows(project_dir, "facts"))
    assert not (elsewhere / "contextware_data").exists()


def test_off_never_starts_a_service(project_dir, services):
    run("save_fact", "first", cwd=project_dir, env=OFF)
    assert run("recall", "--query", "first", cwd=project_dir, env=OFF).returncode == 0
    assert status(project_dir)["running"] is False and log_text(project_dir) == ""
    refused = run("service", "start", cwd=project_dir, env=OFF)
    assert refused.returncode == 1 and refused.json["error"]["code"] == "service_off"


def test_idle_service_exits_by_itself(project_dir, services):
    write_config(project_dir, service_idle_minutes=0.02)  # 1.2 s
    pid = run("service", "start", cwd=project_dir).json["pid"]
    wait_for(lambda: not alive(pid), timeout=60)
    assert "idle for" in log_text(project_dir)
    assert status(project_dir)["running"] is False and not _endpoint(project_dir).socket.exists()


def test_stale_socket_after_kill_9_is_replaced(project_dir, services):
    run("save_fact", "We deploy on Fridays", cwd=project_dir, env=OFF)
    old = run("service", "start", cwd=project_dir).json["pid"]
    os.kill(old, signal.SIGKILL)
    wait_for(lambda: not alive(old))  # a zombie counts as gone, though its threads may still be exiting
    assert _endpoint(project_dir).socket.exists()  # left behind: nobody listens on it
    out = run("recall", "--query", "when do we deploy", cwd=project_dir)
    assert out.returncode == 0 and out.json["results"]
    new = wait_for(lambda: status(project_dir).get("running") and status(project_dir), timeout=20)
    assert new["running"] is True and new["pid"] != old
    assert log_text(project_dir).count("listening on") == 2


# A service killed with -9 while its other threads are still exiting: its socket still accepts a
# connection (the request is sent, then the connection closes unanswered) or already refuses while its
# lock is still held.  Played by a process that holds both for a second, then exits like the killed one.
DYING = """
import fcntl, os, socket, sys, time
folder, mode = sys.argv[1], sys.argv[2]
lock = os.open(os.path.join(folder, "server.lock"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(lock, fcntl.LOCK_EX)
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
os.umask(0o077)
sock.bind(os.path.join(folder, "sock"))
if mode == "listening":
    sock.listen(8)
print("ready", flush=True)
time.sleep(1.5)
os._exit(0)  # the socket file stays behind, as after kill -9
"""


@pytest.mark.parametrize("mode", ["listening", "refusing"])
def test_a_dying_service_is_replaced_once_it_is_gone(project_dir, services, mode):
    from contextware.service.protocol import check_folder

    run("save_fact", "We deploy on Fridays", cwd=project_dir, env=OFF)
    ep = _endpoint(project_dir)
    check_folder(ep, create=True)
    dying = subprocess.Popen([sys.executable, "-c", DYING, str(ep.folder), mode], stdout=subprocess.PIPE, text=True)
    try:
        assert dying.stdout is not None and dying.stdout.readline() == "ready\n"
        out = run("recall", "--query", "when do we deploy", cwd=project_dir)
        assert out.returncode == 0 and out.json["results"][0]["text"] == "We deploy on Fridays"
        assert dying.wait(timeout=30) == 0
    finally:
        if dying.poll() is None:
            dying.kill()
            dying.wait()
    new = wait_for(lambda: status(project_dir).get("running") and status(project_dir), timeout=20)
    assert new["pid"] != dying.pid and "another service already runs" not in log_text(project_dir)


def _copy_of_the_package(where: Path, version: str | None = None) -> dict[str, str]:
    """A copy of the package (new mtimes), optionally of another version: the environment to run it."""
    shutil.copytree(REPO / "contextware", where / "contextware", copy_function=shutil.copyfile)
    if version is not None:
        init = where / "contextware" / "__init__.py"
        init.write_text(init.read_text().replace('__version__ = "', f'__version__ = "{version}"  # was "'))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(where), os.environ.get("PYTHONPATH", "")])}


def _start_service(project_dir: Path, env: dict[str, str]) -> subprocess.Popen:
    data_dir = str((project_dir / "contextware_data").resolve())
    return subprocess.Popen(
        [sys.executable, "-m", "contextware.resident", data_dir], env=env, start_new_session=True, cwd=data_dir
    )


def test_a_service_of_an_older_version_is_replaced(tmp_path, project_dir, services):
    """A service started from an older version of the package answers version_mismatch: the caller
    stops it and starts one of its own."""
    run("save_fact", "Dependencies are managed with uv", cwd=project_dir, env=OFF)
    old = _start_service(project_dir, _copy_of_the_package(tmp_path / "old", "0.0.1"))
    try:
        before = wait_for(lambda: status(project_dir).get("pid") == old.pid and status(project_dir))
        out = run("recall", "--query", "how are dependencies managed", cwd=project_dir)
        assert out.returncode == 0 and out.json["results"]
        assert old.wait(timeout=30) == 0  # told to stop
        after = wait_for(lambda: status(project_dir).get("pid") not in (None, old.pid) and status(project_dir))
        assert after["running"] is True and after["pid"] != old.pid and after["version"] != before["version"]
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()


@pytest.mark.parametrize("version", [None, "99.0.0"])
def test_a_service_of_the_same_or_a_newer_version_keeps_running(tmp_path, project_dir, services, version):
    """Another install of the same version (other files, other mtimes) shares the running service;
    an older caller than the service answers in-process and leaves the newer service alone."""
    run("save_fact", "Dependencies are managed with uv", cwd=project_dir, env=OFF)
    other = _start_service(project_dir, _copy_of_the_package(tmp_path / "other", version))
    try:
        running = wait_for(lambda: status(project_dir).get("pid") == other.pid and status(project_dir))
        requests = running["requests"]
        for _ in range(3):
            out = run("recall", "--query", "how are dependencies managed", cwd=project_dir)
            assert out.returncode == 0 and out.json["results"][0]["text"] == "Dependencies are managed with uv"
        assert other.poll() is None  # still running: nobody stopped it
        served = run("service", "status", cwd=project_dir).json
        assert served["running"] is True and served["pid"] == other.pid
        if version is None:
            assert served["requests"] >= requests + 3 and "compatible" not in served
        else:  # status says whose it is
            assert served["compatible"] is False and served["version"] == "1-99.0.0"
        assert not log_text(project_dir)  # no service of this caller's was started (it runs logging there)
    finally:
        if other.poll() is None:
            other.terminate()
            other.wait(timeout=30)


def test_a_service_whose_files_are_edited_exits_after_its_next_request(tmp_path, project_dir, services):
    """Same version, so callers keep using it; but a service notices its own files changed (an edited
    checkout) and exits after answering, so the next call runs the new code."""
    run("save_fact", "Dependencies are managed with uv", cwd=project_dir, env=OFF)
    other = _start_service(project_dir, _copy_of_the_package(tmp_path / "edited"))
    try:
        wait_for(lambda: status(project_dir).get("pid") == other.pid)
        edited = tmp_path / "edited" / "contextware" / "core" / "text.py"
        edited.write_text(edited.read_text() + "\n# edited\n")
        time.sleep(2.5)  # past the service's check interval
        out = run("recall", "--query", "how are dependencies managed", cwd=project_dir)
        assert out.returncode == 0 and out.json["results"]
        assert other.wait(timeout=30) == 0
        out = run("recall", "--query", "how are dependencies managed", cwd=project_dir)
        assert out.returncode == 0 and out.json["results"]
        assert wait_for(lambda: status(project_dir).get("pid") not in (None, other.pid))
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()


def _kill_when(project_dir: Path, marker: str, after: int = 0) -> int:
    """Kill the service that logs ``marker`` (in the log past line ``after``) as soon as it does."""

    def line() -> str | None:
        return next((ln for ln in log_text(project_dir).splitlines()[after:] if marker in ln), None)

    pid = int(wait_for(line, step=0.005).split("[", 1)[1].split("]", 1)[0])
    os.kill(pid, signal.SIGKILL)
    return pid


@pytest.mark.parametrize("moment", ["warm-up", "request"])
def test_service_killed_mid_request(project_dir, services, moment):
    """The read is answered in-process (and a service that died under it is replaced); the write
    lands exactly once."""
    run("save_fact", "Logs rotate daily", cwd=project_dir, env=OFF)
    if moment == "request":
        run("service", "start", cwd=project_dir)
    marker = "listening on" if moment == "warm-up" else "run "
    with ThreadPoolExecutor(1) as pool:
        read = pool.submit(run, "recall", "--query", "how often do logs rotate", cwd=project_dir)
        killed = _kill_when(project_dir, marker)
        out = read.result()
    assert out.returncode == 0 and out.json["results"][0]["text"] == "Logs rotate daily"
    assert not alive(killed)
    if moment == "request":  # died under the request: replaced for the next caller
        assert wait_for(lambda: status(project_dir).get("pid") not in (None, killed))

    run("service", "stop", cwd=project_dir)
    lines = len(log_text(project_dir).splitlines())
    if moment == "request":
        run("service", "start", cwd=project_dir)
    with ThreadPoolExecutor(1) as pool:
        write = pool.submit(run, "save_fact", "Backups run at 02:00", cwd=project_dir)
        _kill_when(project_dir, "run save" if moment == "request" else "listening on", after=lines)
        out = write.result()
    assert out.returncode == 0, out.stdout
    assert [r["text"] for r in rows(project_dir, "facts")].count("Backups run at 02:00") == 1


@pytest.mark.slow
def test_eight_writers_mixing_service_and_in_process_land_every_save_once(project_dir, services):
    run("save_fact", "seed", cwd=project_dir, env=OFF)
    run("service", "start", cwd=project_dir)
    driver = (
        "import sys\n"
        "from contextware.cli import run_served\n"
        "w = sys.argv[1]\n"
        "for i in range(25):\n"
        "    run_served('save', [f'writer {w} saved fact number {i} about subsystem {w}-{i}'], 'save_fact.py')\n"
    )

    def writer(w: int) -> list[dict]:
        env = {**os.environ, "CONTEXTWARE_SERVICE": "off" if w % 2 else "auto"}
        proc = subprocess.run(
            [sys.executable, "-c", driver, str(w)], cwd=project_dir, env=env, capture_output=True, timeout=600
        )
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        return [json.loads(line) for line in proc.stdout.decode().splitlines()]

    with ThreadPoolExecutor(8) as pool:
        results = [r for out in pool.map(writer, range(8)) for r in out]
    assert len(results) == 200 and all(r["ok"] and r["written"] == 1 for r in results)
    texts = [r["text"] for r in rows(project_dir, "facts") if r["text"] != "seed"]
    assert len(texts) == 200 and len(set(texts)) == 200
    # The four served writers' saves mostly go through the service; under load a caller that waits
    # over 3 s for a busy service runs its save itself (the service then skips it: "caller gone").
    assert status(project_dir)["requests"] >= 50


@pytest.mark.parametrize("flaw", ["mode", "owner"])
def test_a_socket_folder_that_is_not_private_is_refused(project_dir, services, flaw):
    run("save_fact", "Secrets stay local", cwd=project_dir, env=OFF)
    ep = _endpoint(project_dir)
    ep.folder.mkdir(mode=0o700)
    try:
        if flaw == "mode":
            ep.folder.chmod(0o755)
        elif os.geteuid() == 0:
            os.chown(ep.folder, 1000, 1000)
        else:
            pytest.skip("only root can give a folder to another user")
        refused = run("service", "start", cwd=project_dir)
        assert refused.returncode == 1 and refused.json["error"]["code"] == "service_unsafe"
        assert str(ep.folder) in refused.json["error"]["message"]
        out = run("recall", "--query", "where do secrets stay", cwd=project_dir)  # in-process instead
        assert out.returncode == 0 and out.json["results"] and "Working in-process" in out.stderr
        assert not ep.socket.exists() and pid_from_log(project_dir) is None
    finally:
        shutil.rmtree(ep.folder, ignore_errors=True)
