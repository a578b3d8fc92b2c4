"""The resident service's client side, in-process: where the socket lives and how that place is
checked, what is routed to the service, the caller's context around a request, the hook spool."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest

from contextware.core.settings import Settings
from contextware.service import client, spool
from contextware.service.context import caller_context
from contextware.service.protocol import ProtocolError, ServiceUnsafe, check_folder, check_socket, endpoint, receive


def test_socket_path_is_short_and_keyed_by_the_data_dir(tmp_path):
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 12) / "contextware_data"
    ep = endpoint(deep)
    assert len(str(ep.socket).encode()) < 100 < len(str(deep))
    assert endpoint(deep).socket == ep.socket and endpoint(tmp_path / "other").socket != ep.socket


@pytest.fixture
def short_runtime_dir(monkeypatch):
    """A runtime dir as short as a real one (a test's tmp_path can be too long to bind a socket in)."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="cw-rt-", dir="/tmp")
    monkeypatch.setenv("XDG_RUNTIME_DIR", folder)
    yield Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


def test_folder_and_socket_must_be_private(tmp_path, short_runtime_dir):
    ep = endpoint(tmp_path / "data")
    assert check_folder(ep, create=False) is False
    assert check_folder(ep, create=True) is True and (ep.folder.stat().st_mode & 0o777) == 0o700
    ep.folder.chmod(0o750)
    with pytest.raises(ServiceUnsafe, match="mode 0750"):
        check_folder(ep, create=False)
    ep.folder.chmod(0o700)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(ep.socket))
    try:
        ep.socket.chmod(0o666)
        with pytest.raises(ServiceUnsafe, match="open to other users"):
            check_socket(ep)
        ep.socket.chmod(0o600)
        assert check_socket(ep) is True
    finally:
        listener.close()
    ep.socket.unlink()
    ep.folder.rmdir()
    ep.folder.symlink_to(tmp_path)  # someone else's folder planted under our name
    with pytest.raises(ServiceUnsafe, match="not a directory"):
        check_folder(ep, create=True)


def test_a_connection_that_is_refused_or_missing_is_unavailable(tmp_path, short_runtime_dir):
    ep = endpoint(tmp_path / "data")
    with pytest.raises(client.Unavailable):
        client.exchange(ep, {"op": "status"}, timeout=1)
    check_folder(ep, create=True)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(ep.socket))  # bound, never listening: what a killed service leaves
    dead.close()
    ep.socket.chmod(0o600)
    with pytest.raises(client.Unavailable, match="nobody answers"):
        client.exchange(ep, {"op": "status"}, timeout=1)


def test_receive_refuses_garbage_and_early_close():
    for payload in (b"not json\n", b"[1, 2]\n", b'{"half": '):
        a, b = socket.socketpair()
        a.sendall(payload)
        a.close()
        with pytest.raises(ProtocolError):
            receive(b)
        b.close()


@pytest.mark.parametrize(
    "command, argv, routed",
    [
        ("recall", ["--query", "x"], True),
        ("recall", ["--query", "x", "--refresh-stale"], False),
        ("recall", ["--help"], False),
        ("save", ["text"], True),
        ("memory", ["list"], True),
        ("memory", ["reembed"], False),
        ("crawl", [], False),
        ("offload", ["--prompt", "x"], False),
        ("service", ["status"], False),
    ],
)
def test_only_quick_commands_are_routed(command, argv, routed):
    assert client.routed(command, argv) is routed


def test_off_and_auto(monkeypatch):
    monkeypatch.setenv("CONTEXTWARE_SERVICE", "off")
    assert client.mode() == "off" and client.run_command("recall", ["--query", "x"], "recall.py") is None
    monkeypatch.setenv("CONTEXTWARE_SERVICE", "auto")
    assert client.mode() == "auto"
    monkeypatch.delenv("CONTEXTWARE_SERVICE")
    assert client.mode() == "auto"


def test_caller_context_is_restored(tmp_path, monkeypatch):
    """The caller's cwd and stdin around a request; its settings travel as a value (the caller's
    CONTEXTWARE_* variables, nothing else) and the process environment is left alone."""
    monkeypatch.setenv("CONTEXTWARE_KEEP", "mine")
    monkeypatch.setenv("CONTEXTWARE_DROP_ME", "x")
    before_cwd, before_stdin, before_env = os.getcwd(), sys.stdin, dict(os.environ)
    import base64

    caller = Settings.from_env(os.environ).for_caller({"CONTEXTWARE_KEEP": "theirs", "PATH": "/evil"})
    with caller_context(str(tmp_path), base64.b64encode(b"hi").decode()):
        assert os.getcwd() == str(tmp_path)
        assert (
            caller.forwarded_env()["CONTEXTWARE_KEEP"] == "theirs"
            and "CONTEXTWARE_DROP_ME" not in caller.forwarded_env()
        )
        assert "PATH" not in caller.forwarded_env()  # only CONTEXTWARE_* settings travel
        assert sys.stdin.buffer.read() == b"hi"
        assert dict(os.environ) == before_env
    assert os.getcwd() == before_cwd and sys.stdin is before_stdin
    assert os.environ["CONTEXTWARE_KEEP"] == "mine" and os.environ["CONTEXTWARE_DROP_ME"] == "x"


def test_spool_replays_each_line_once_and_skips_torn_lines(tmp_path):
    spool.append(tmp_path, {"id": "a"})
    (tmp_path / spool.DRAINING).write_text(json.dumps({"id": "left"}) + "\n" + '{"id": "torn', encoding="utf-8")
    seen: list[str] = []
    assert spool.drain(tmp_path, lambda e: seen.append(e["id"])) == 2
    assert seen == ["left", "a"] and not spool.pending(tmp_path)
    assert spool.drain(tmp_path, lambda e: seen.append(e["id"])) == 0 and seen == ["left", "a"]


def test_a_runtime_dir_too_long_for_a_socket_gives_way_to_tmp(tmp_path, monkeypatch):
    long_dir = tmp_path.joinpath(*["runtime-dir-of-a-deep-home"] * 5)
    long_dir.mkdir(parents=True)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(long_dir))
    ep = endpoint(tmp_path / "data")
    assert str(ep.folder).startswith("/tmp/contextware-") and len(os.fsencode(str(ep.socket))) < 108


def test_spool_keeps_a_turn_from_a_non_utf8_folder_and_quarantines_a_failing_replay(tmp_path):
    spool.append(tmp_path, {"id": "odd", "cwd": "/tmp/d\udce9"})  # raised UnicodeEncodeError: turn lost
    spool.append(tmp_path, {"id": "boom"})
    spool.append(tmp_path, {"id": "fine"})
    seen: list[str] = []

    def replay(entry: dict) -> None:
        if entry["id"] == "boom":
            raise RuntimeError("a replay that fails")
        seen.append(entry["id"])

    assert spool.drain(tmp_path, replay) == 2 and seen == ["odd", "fine"]
    assert b'"boom"' in (tmp_path / spool.QUARANTINE).read_bytes() and not spool.pending(tmp_path)


def test_frames_are_checked_before_the_service_acts():
    from contextware.service.frames import problem
    from contextware.service.protocol import too_deep

    assert too_deep(b"[" * 100_000 + b"]" * 100_000) and too_deep(b"[" * 33 + b"]" * 33)
    assert not too_deep(b"[" * 32 + b"]" * 32)
    assert not too_deep(b'{"argv": ["' + b"[" * 5_000 + b'"]}')  # brackets inside a string do not count
    assert not too_deep(b'{"a": "\\\\", "b": "\\"' + b"[" * 50 + b'"}')
    ok = {"op": "run", "command": "recall", "argv": ["--query", "x"], "cwd": "/", "env": {}, "stdin": None}
    assert problem(ok) is None
    for bad in (
        {**ok, "op": ["run"]},
        {**ok, "cwd": ["/"]},
        {**ok, "cwd": {"a": 1}},
        {**ok, "stdin": 42},
        {**ok, "stdin": "!!!"},
        {**ok, "argv": ["--query", 7]},
        {**ok, "argv": ["--query", "caf\udce9"]},
        {**ok, "env": {"CONTEXTWARE_X": 1}},
        {**ok, "command": "watch", "argv": []},
        {**ok, "command": "ui", "argv": []},
        {**ok, "command": "memory", "argv": ["repair"]},
        {"op": "hook", "stdin": {"a": 1}},
        {"op": "mcp", "tool": "recall", "arguments": []},
    ):
        assert problem(bad), bad
