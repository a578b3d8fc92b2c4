"""Bounded reads (issue 23, item 4): every ``@file``, import file and standard input a command reads is
size-limited, and a named pipe, a device or a symlink to one is refused by its ``stat`` before it is
opened.  Real FIFOs (``os.mkfifo``), real devices and real subprocesses of our scripts, with the
resident service on and off: each refusal is exit 2 in one sentence, at once, and never a hang."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contextware.core.inputs import MAX_IMPORT_BYTES
from tests.support.repo import SCRIPTS
from tests.support.service_helpers import OFF, ON, run, status, wait_for

QUICK_S = 10.0  # a CLI start on a loaded machine; the failure this guards against is a hang forever


def _refused(res, code: str, elapsed: float, *named: str) -> None:
    assert res.returncode == 2, (res.stdout, res.stderr[-1000:])
    error = res.json["error"]
    assert error["code"] == code, error
    assert "\n" not in error["message"] and all(n in error["message"] for n in named), error
    assert "Traceback" not in res.stderr
    assert elapsed < QUICK_S, elapsed


def _timed(*args, **kw):
    start = time.monotonic()
    res = run(*args, **kw)
    return res, time.monotonic() - start


@pytest.mark.parametrize("mode", ["off", "on"])
def test_store_data_from_a_fifo_or_a_device_is_refused_at_once(project_dir: Path, services, mode):
    env = OFF if mode == "off" else ON
    saved = run("store", "save", "--namespace", "n", "--key", "k", "--data", "1", cwd=project_dir, env=env)
    assert saved.returncode == 0, saved.stdout
    fifo = project_dir / "pipe"
    os.mkfifo(fifo)
    (project_dir / "zero-link").symlink_to("/dev/zero")
    (project_dir / "fifo-link").symlink_to(fifo)
    for target in ("pipe", str(fifo), "fifo-link", "zero-link", "/dev/zero", "/dev/null"):
        res, elapsed = _timed(
            "store", "save", "--namespace", "n", "--key", "k", "--data", f"@{target}", cwd=project_dir, env=env
        )
        _refused(res, "bad_data", elapsed, target, "not a regular file")
    # the store is untouched and still answers at once (the service was never blocked)
    res, elapsed = _timed("store", "load", "--namespace", "n", "--key", "k", cwd=project_dir, env=env)
    assert res.returncode == 0 and res.json["data"] == 1 and elapsed < QUICK_S


def test_a_store_data_file_over_the_limit_is_refused_by_its_size(project_dir: Path):
    big = project_dir / "big.json"
    with open(big, "wb") as f:  # sparse: the size is all that is looked at
        f.truncate(200 * 1024 * 1024)
    res, elapsed = _timed("store", "save", "--namespace", "n", "--key", "k", "--data", "@big.json", cwd=project_dir)
    _refused(res, "too_large", elapsed, "big.json", "limit")


def test_import_refuses_devices_fifos_and_huge_files_at_once(project_dir: Path):
    fifo = project_dir / "memory.fifo"
    os.mkfifo(fifo)
    export = project_dir / ".contextware"
    export.mkdir()
    (export / "memory.jsonl").symlink_to("/dev/zero")  # a committed export that points at a device
    for args, named in (
        (("/dev/zero",), "/dev/zero"),
        ((str(fifo),), "memory.fifo"),
        ((), "memory.jsonl"),  # the default file, as the post-merge hook imports it
    ):
        res, elapsed = _timed("import", *args, cwd=project_dir, env=OFF)
        _refused(res, "bad_import", elapsed, named, "not a regular file")
    huge = project_dir / "huge.jsonl"
    with open(huge, "wb") as f:
        f.truncate(MAX_IMPORT_BYTES + 1)
    res, elapsed = _timed("import", "huge.jsonl", cwd=project_dir, env=OFF)
    _refused(res, "too_large", elapsed, "huge.jsonl")
    # standard input is bounded too: /dev/zero piped in stops at the limit
    start = time.monotonic()
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run(
            [sys.executable, str(SCRIPTS / "import.py"), "-"],
            cwd=project_dir,
            env={**os.environ, **OFF},
            stdin=zero,
            capture_output=True,
            timeout=120,
        )
    assert proc.returncode == 2 and b'"too_large"' in proc.stdout, proc.stdout[-500:]
    assert time.monotonic() - start < 60


@pytest.mark.parametrize("mode", ["off", "on"])
def test_a_config_file_that_is_a_fifo_or_a_device_is_a_clear_error_not_a_hang(project_dir: Path, services, mode):
    env = OFF if mode == "off" else ON
    assert run("save_fact", "The API listens on port 8080.", cwd=project_dir, env=OFF).returncode == 0
    config = project_dir / "contextware_data" / "config.json"
    for make in (lambda: os.mkfifo(config), lambda: config.symlink_to("/dev/zero")):
        make()
        res, elapsed = _timed("recall", "--query", "port", cwd=project_dir, env=env)
        assert res.returncode != 0 and res.json["error"]["code"] == "damaged_config", res.stdout
        assert "not a regular file" in res.json["error"]["message"] and elapsed < QUICK_S
        config.unlink()
    res, elapsed = _timed("recall", "--query", "port", cwd=project_dir, env=env)
    assert res.returncode == 0 and elapsed < 60, res.stdout


def test_an_at_file_is_read_by_the_caller_never_by_the_service(project_dir: Path, services):
    """``--data @/dev/stdin`` is the caller's standard input and ``@/proc/self/...`` the caller's
    process: the service (whose stdin is /dev/null and whose /proc/self is its own) never reads one."""
    for _ in range(2):  # the first creates the data dir in-process, the second starts the service
        first = run("store", "save", "--namespace", "n", "--key", "k", "--data", "1", cwd=project_dir, env=ON)
        assert first.returncode == 0, first.stdout
    served = run("service", "status", cwd=project_dir).json["requests"]
    given = project_dir / "value.json"
    given.write_text('{"from": "the caller"}')
    with open(given, "rb") as stdin:  # a regular file as standard input: /dev/stdin names it
        proc = subprocess.run(
            [
                sys.executable,
                str(SCRIPTS / "store.py"),
                "save",
                "--namespace",
                "n",
                "--key",
                "k",
                "--data",
                "@/dev/stdin",
            ],
            cwd=project_dir,
            env={**os.environ, **ON},
            stdin=stdin,
            capture_output=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stdout
    loaded = run("store", "load", "--namespace", "n", "--key", "k", cwd=project_dir, env=ON)
    assert loaded.json["data"] == {"from": "the caller"}
    environ = run(
        "store", "save", "--namespace", "n", "--key", "e", "--data=@/proc/self/environ", cwd=project_dir, env=ON
    )
    assert environ.returncode == 2 and "Traceback" not in environ.stderr
    # the save by @file and the environ read were not the service's: only the status and the load were
    assert run("service", "status", cwd=project_dir).json["requests"] == served + 2


def test_the_service_refuses_a_run_request_naming_an_at_file(project_dir: Path, services):
    from contextware.service import client

    for _ in range(2):  # the first creates the data dir in-process, the second starts the service
        saved = run("store", "save", "--namespace", "n", "--key", "k", "--data", "1", cwd=project_dir, env=ON)
        assert saved.returncode == 0, saved.stdout
    wait_for(lambda: status(project_dir)["running"])
    ep = client.endpoint((project_dir / "contextware_data").resolve())
    request = {
        "op": "run",
        "id": "x",
        "command": "store",
        "prog": "store",
        "cwd": str(project_dir),
        "env": {},
        "argv": ["save", "--namespace", "n", "--key", "k", "--data", "@/proc/self/environ"],
        "stdin": None,
    }
    answer = client.exchange(ep, request, timeout=30)
    assert answer["ok"] is False and answer["error"]["code"] == "bad_request", answer
