"""hook.py with the resident service: context events answered by the service exactly as in-process,
finished turns spooled when no service can take them and saved once later, and fast failures (a
read-only data dir) that end with a clear exit code, never SIGABRT."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextware.service import spool
from tests.support.hook_events import event
from tests.support.repo import SCRIPTS
from tests.support.service_helpers import ON, as_plain_user, hook, rows, run, status, wait_for


def _data_dir(project_dir: Path) -> Path:
    return project_dir / "contextware_data"


def test_before_agent_through_the_service_matches_in_process(project_dir, services):
    run(
        "save_fact",
        "Never deploy on Fridays",
        "--kind",
        "constraint",
        cwd=project_dir,
        env={"CONTEXTWARE_SERVICE": "off"},
    )

    def payload(n: int) -> str:
        # Three prompts of three sessions: one prompt sent twice by one host process within seconds
        # is answered once (hooks/once.py), and this test's process is the host of every call.
        # (Claude's host: a Gemini session's first prompt also carries its briefing.)
        return event(
            "BeforeAgent", project_dir, prompt="can we deploy on friday?", contextware_host="claude", session_id=f"s{n}"
        )

    served = hook(payload(1), project_dir)
    info = status(project_dir)
    assert info["running"] is True and info["requests"] >= 1
    local = hook(payload(2), project_dir, env={"CONTEXTWARE_SERVICE": "off"})
    assert served.returncode == local.returncode == 0 and served.stderr == ""
    assert served.stdout == local.stdout and "Never deploy on Fridays" in served.stdout
    again = hook(payload(3), project_dir)
    assert again.stdout == served.stdout and status(project_dir)["requests"] > info["requests"]


def test_after_agent_with_the_service_down_is_spooled_then_saved_once(project_dir, services):
    run("save_fact", "seed", cwd=project_dir, env={"CONTEXTWARE_SERVICE": "off"})
    data_dir = _data_dir(project_dir)
    from contextware.service.protocol import check_folder, endpoint

    ep = endpoint(data_dir.resolve())
    check_folder(ep, create=True)
    with open(ep.server_lock, "w") as held:  # a service that cannot start: the lock is taken
        fcntl.flock(held, fcntl.LOCK_EX)
        turn = event(
            "AfterAgent", project_dir, prompt="rename the cache module", prompt_response="Renamed it to store."
        )
        out = hook(turn, project_dir)
        assert (out.returncode, out.stdout) == (0, "")
        lines = (data_dir / spool.SPOOL).read_text().splitlines()
        assert len(lines) == 1 and json.loads(json.loads(lines[0])["stdin"])["prompt"] == "rename the cache module"
        assert rows(project_dir, "logs") == []
    started = run("service", "start", cwd=project_dir)
    assert started.returncode == 0, started.stdout
    wait_for(lambda: len(rows(project_dir, "logs")) == 2)
    assert not spool.pending(data_dir)
    # A drainer that died half-way left its file, and the same turn is spooled again: saved once.
    (data_dir / spool.DRAINING).write_text(lines[0] + "\n")
    (data_dir / spool.SPOOL).write_text(lines[0] + "\n")
    nxt = event("AfterAgent", project_dir, prompt="and the tests?", prompt_response="Updated them too.")
    assert hook(nxt, project_dir).returncode == 0
    wait_for(lambda: len(rows(project_dir, "logs")) == 4)
    texts = sorted(r["text"] for r in rows(project_dir, "logs"))
    assert texts == sorted(["rename the cache module", "Renamed it to store.", "and the tests?", "Updated them too."])
    assert not spool.pending(data_dir)


def test_in_process_hook_drains_the_spool(project_dir):
    run("save_fact", "seed", cwd=project_dir, env={"CONTEXTWARE_SERVICE": "off"})
    data_dir = _data_dir(project_dir)
    left = event("AfterAgent", project_dir, prompt="left in the spool", prompt_response="saved later")
    spool.append(data_dir, {"id": "x1", "stdin": left, "cwd": str(project_dir), "env": {}})
    now = event("AfterAgent", project_dir, prompt="this turn", prompt_response="saved now")
    assert hook(now, project_dir, env={"CONTEXTWARE_SERVICE": "off"}).returncode == 0
    assert sorted(r["text"] for r in rows(project_dir, "logs")) == sorted(
        ["left in the spool", "saved later", "this turn", "saved now"]
    )
    assert not spool.pending(data_dir)


def _read_only_data_dir(project_dir: Path) -> Path:
    run("save_fact", "seed", cwd=project_dir, env={"CONTEXTWARE_SERVICE": "off"})
    data_dir = _data_dir(project_dir)
    for path in [data_dir, *data_dir.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    return data_dir


@pytest.fixture
def writable_again(project_dir):
    yield
    for path in [project_dir, *project_dir.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.mark.parametrize("service", ["auto", "off"])
def test_read_only_data_dir_fails_clearly_never_sigabrt(project_dir, services, writable_again, service):
    prefix = as_plain_user()
    _read_only_data_dir(project_dir)
    env = {"CONTEXTWARE_SERVICE": service}
    for _ in range(3):
        turn = event("AfterAgent", project_dir, prompt="a turn", prompt_response="an answer")
        out = hook(turn, project_dir, env=env, prefix=prefix)
        assert (out.returncode, out.stdout) == (0, ""), out.stderr
        saved = run("save_fact", "cannot land", cwd=project_dir, env=env, prefix=prefix)
        assert saved.returncode == 2 and saved.json["error"]["code"] == "not_writable", saved.stdout + saved.stderr


@pytest.mark.slow
def test_twenty_fast_failures_never_abort(project_dir, writable_again):
    prefix = as_plain_user()
    _read_only_data_dir(project_dir)
    codes = []
    for i in range(20):
        turn = event("AfterAgent", project_dir, prompt=f"turn {i}", prompt_response="answer")
        codes.append(hook(turn, project_dir, env={"CONTEXTWARE_SERVICE": "off"}, prefix=prefix).returncode)
        codes.append(run("save_fact", "x", "--kind", "bogus", cwd=project_dir, prefix=prefix).returncode)
    assert 134 not in codes and set(codes) <= {0, 2}


HEAVY = ("lancedb", "pyarrow", "numpy", "onnxruntime", "tokenizers", "fastembed", "pandas", "polars")
# Standard modules the hook process leaves out: ~13 ms a prompt together (dataclasses loads inspect;
# hashlib loads OpenSSL's library; tempfile loads shutil and random).
SLOW_FOR_A_HOOK = ("dataclasses", "inspect", "_hashlib", "tempfile")


@pytest.mark.parametrize("script, argv", [("hook", []), ("recall", ["--query", "can we deploy on friday?"])])
def test_warm_path_imports_only_the_standard_library(project_dir, services, script, argv):
    run("save_fact", "Never deploy on Fridays", cwd=project_dir, env={"CONTEXTWARE_SERVICE": "off"})
    assert run("service", "start", cwd=project_dir).json["running"] is True
    code = (
        "import runpy, sys\n"
        f"sys.argv = [{str(SCRIPTS / (script + '.py'))!r}, *{argv!r}]\n"
        "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\nexcept SystemExit:\n    pass\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        f"slow = sorted(m for m in sys.modules if m in {SLOW_FOR_A_HOOK!r})\n"
        "sys.stderr.write('SLOW=' + ','.join(slow) + 'HEAVY=' + ','.join(heavy))\n"
    )
    payload = event("BeforeAgent", project_dir, prompt="can we deploy on friday?") if script == "hook" else None
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=payload,
        capture_output=True,
        text=True,
        cwd=project_dir,
        env={**os.environ, **ON},
        timeout=120,
    )
    assert "Never deploy on Fridays" in out.stdout
    assert out.stderr.split("HEAVY=")[-1].strip() == ""
    if script == "hook":
        assert out.stderr.split("SLOW=")[-1].split("HEAVY=")[0] == ""
    assert status(project_dir)["requests"] >= 1


def _poisoned_spool(project_dir: Path) -> Path:
    """Two real turns in the spool with a 200,000-deep JSON line and a line of the wrong shape
    between them: the first crashed json.loads with RecursionError in every drain."""
    run("save_fact", "seed", cwd=project_dir, env={"CONTEXTWARE_SERVICE": "off"})
    data_dir = _data_dir(project_dir)
    first = event("AfterAgent", project_dir, prompt="before the poison", prompt_response="kept one")
    spool.append(data_dir, {"id": "p1", "stdin": first, "cwd": str(project_dir), "env": {}})
    with open(data_dir / spool.SPOOL, "ab") as f:
        f.write(b"[" * 200_000 + b"]" * 200_000 + b"\n")
        f.write(json.dumps({"id": "p2", "stdin": "x", "cwd": ["not", "a", "path"], "env": {}}).encode() + b"\n")
    later = event("AfterAgent", project_dir, prompt="after the poison", prompt_response="kept two")
    spool.append(data_dir, {"id": "p3", "stdin": later, "cwd": str(project_dir), "env": {}})
    return data_dir


def test_a_poisoned_spool_line_is_quarantined_and_the_rest_saved_in_process(project_dir):
    data_dir = _poisoned_spool(project_dir)
    now = event("AfterAgent", project_dir, prompt="this turn", prompt_response="saved now")
    assert hook(now, project_dir, env={"CONTEXTWARE_SERVICE": "off"}).returncode == 0
    texts = {r["text"] for r in rows(project_dir, "logs")}
    assert {"before the poison", "kept one", "after the poison", "kept two", "this turn"} <= texts
    assert not spool.pending(data_dir)
    bad = (data_dir / spool.QUARANTINE).read_bytes().splitlines()
    assert len(bad) == 2 and bad[0].startswith(b"[[[[") and b'"p2"' in bad[1]


def test_a_service_starts_and_drains_past_a_poisoned_spool_line(project_dir, services):
    data_dir = _poisoned_spool(project_dir)
    started = run("service", "start", cwd=project_dir)
    assert started.returncode == 0 and started.json["running"] is True
    wait_for(lambda: not spool.pending(data_dir), timeout=60)
    assert status(project_dir)["pid"] == started.json["pid"]
    texts = {r["text"] for r in rows(project_dir, "logs")}
    assert {"before the poison", "kept one", "after the poison", "kept two"} <= texts
    assert (data_dir / spool.QUARANTINE).exists()
