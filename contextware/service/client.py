"""Ask the project's resident service, start it on demand, and say when to work in-process instead.

``run_command`` is what a script or the ``contextware`` command calls before doing the work itself:
it returns the exit code after printing the service's answer, or None when the caller must run the
command in-process (``CONTEXTWARE_SERVICE=off``, a command that is not quick, no data dir yet,
nothing answering, a service that died mid-request).  A read is then simply run again; a write is
safe to run again because every save is keyed by its content (``memory.records`` answers an exact
duplicate with the existing row and writes nothing), and the session store's saves are upserts.

A service killed with -9 is not gone at once: its process shows as a zombie while its other threads
exit, and until the last one has, its socket still takes connections (then closes them unanswered)
and its server lock is still held.  A replacement is therefore started only once that lock is free:
by ``ensure_running`` (which waits for it) and, after a death mid-request, by ``replace_dead``.
"""

from __future__ import annotations

import base64
import fcntl
import io
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from contextware.core.json_types import JsonObject, JsonValue
from contextware.core.settings import Settings, current_settings
from contextware.service.messages import ServiceRequest, StopResult
from contextware.service.protocol import (
    Endpoint,
    ProtocolError,
    ServiceUnsafe,
    check_folder,
    check_socket,
    code_version,
    endpoint,
    receive,
    supersedes,
)

CONNECT_TIMEOUT_S = 0.1
FIRST_BYTE_S = 3.0  # a service acknowledges a connection when it takes it; one that does not is busy or wedged
START_WAIT_S = 10.0  # a cold start binds its socket in ~50 ms; the first answer waits for the warm-up
COMMAND_TIMEOUT_S = 300.0  # writes wait up to 120 s for the table lock
STATUS_TIMEOUT_S = 60.0  # a service answers once warmed up (seconds on a busy machine)
MAX_LOG_BYTES = 1 << 20
MAX_STDIN_BYTES = 32 << 20  # above every command's own limit on standard input (8-10 MB)

# Commands answered by the service: quick work on an open database.  Crawls, watch, offloads, index
# runs and installs stay in the caller's process (long, or they spawn Gemini CLI with its environment).
QUICK = {"save", "recall", "context", "store"}
QUICK_MEMORY_ACTIONS = {"list", "get", "update", "delete", "stats"}
READS_STDIN = {"save", "memory", "store"}  # commands that take "-" for standard input


class Unavailable(Exception):
    """No usable service: the caller works in-process."""


class VersionMismatch(Unavailable):
    def __init__(self, answer: JsonObject) -> None:
        super().__init__(f"the service runs version {answer.get('version')}")
        self.answer = answer


class DiedMidRequest(Unavailable):
    pass


class Busy(Unavailable):
    """The service took no notice of the connection in time (busy with a long request, or wedged):
    the caller works in-process rather than wait."""


def mode(settings: Settings | None = None) -> str:
    """``CONTEXTWARE_SERVICE``: ``off`` never uses or starts a service; ``auto`` (default) does."""
    return (settings or current_settings()).service


def forwarded_env(settings: Settings | None = None) -> dict[str, str]:
    """The caller's ``CONTEXTWARE_*`` variables, from which the service builds the request's settings."""
    return (settings or current_settings()).forwarded_env()


def names_a_file(argv: Sequence[str]) -> bool:
    """Whether an argument is an ``@file`` (``--data @x.json``, ``--data=@x``): the caller reads it,
    never the service (``@/dev/stdin`` or ``/proc/self/...`` would be the service's own)."""
    return any(a.startswith("@") or (a.startswith("--") and "=@" in a) for a in argv)


def routed(command: str, argv: Sequence[str]) -> bool:
    if any(a in ("-h", "--help") for a in argv):
        return False  # answered in milliseconds here, without a database
    if names_a_file(argv):
        return False  # read by this process, with its own stdin and files
    if command == "memory":
        action = next((a for a in argv if not a.startswith("-")), None)
        return action in QUICK_MEMORY_ACTIONS
    if command == "recall" and "--refresh-stale" in argv:
        return False  # re-indexing may run Gemini CLI, with the caller's environment
    return command in QUICK


def project_root_arg(argv: Sequence[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg == "--project-root" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--project-root="):
            return arg.split("=", 1)[1]
    return None


def data_dir_for(explicit_root: str | None = None, settings: Settings | None = None) -> Path | None:
    """The data dir a call in this process would use, or None when the project cannot be resolved
    (the in-process path then reports the error in its own words)."""
    from contextware.core.errors import ContextwareError
    from contextware.storage.layout import resolve_data_dir, resolve_project_root

    try:
        return resolve_data_dir(resolve_project_root(explicit_root, settings), settings)
    except (ContextwareError, OSError):
        return None


# -- talking to a running service -------------------------------------------------------------------
def _connect(ep: Endpoint) -> socket.socket:
    """A connected socket, or Unavailable (no socket file, nobody listening, a stale socket)."""
    if not check_folder(ep, create=False) or not check_socket(ep):
        raise Unavailable("no service")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT_S)
    try:
        sock.connect(str(ep.socket))
    except OSError as exc:
        sock.close()
        raise Unavailable(f"nobody answers on {ep.socket}: {exc}") from None
    return sock


def _frame(message: ServiceRequest) -> bytes:
    """The request's bytes; Unavailable when it holds text that is not UTF-8 (a non-UTF-8 argument,
    working directory or variable): the in-process path reports it in the command's own words."""
    try:
        return (json.dumps({"version": code_version(), **message}, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        raise Unavailable("the request holds text that is not UTF-8") from None


def exchange(ep: Endpoint, message: ServiceRequest, timeout: float, first_byte: float | None = None) -> JsonObject:
    """Send one request and read its answer.  Busy when the service does not acknowledge the
    connection within ``first_byte`` seconds (``call`` waits ``FIRST_BYTE_S`` for a running service;
    by default, ``timeout``); DiedMidRequest when it goes away after taking the
    request; VersionMismatch when it runs other code."""
    data = _frame(message)
    sock = _connect(ep)
    try:
        try:
            sock.sendall(data)
            wait = timeout if first_byte is None else min(first_byte, timeout)
            sock.settimeout(wait)
            first = sock.recv(1 << 16)
        except TimeoutError:
            raise Busy(f"the service did not take the request within {wait:.1f} s") from None
        except OSError as exc:
            raise DiedMidRequest(str(exc)) from None
        try:
            if not first:
                raise ProtocolError("the connection closed before a whole message arrived")
            answer = receive(sock, deadline=time.monotonic() + timeout, first=first)
        except (OSError, ProtocolError) as exc:
            raise DiedMidRequest(str(exc)) from None
    finally:
        sock.close()
    error = answer.get("error")
    if isinstance(error, dict) and error.get("code") == "version_mismatch":
        raise VersionMismatch(answer)
    return answer


def notify(ep: Endpoint, message: ServiceRequest) -> None:
    """Send a request without waiting for its answer (Unavailable when nobody listens)."""
    data = _frame(message)
    sock = _connect(ep)
    try:
        sock.sendall(data)
    except OSError as exc:
        raise Unavailable(str(exc)) from None
    finally:
        sock.close()


# -- starting and stopping -----------------------------------------------------------------------
def _open_log(ep: Endpoint) -> int:
    """The service's log in the data dir (rotated past 1 MB); OSError when the dir is not writable."""
    try:
        if ep.log.stat().st_size > MAX_LOG_BYTES:
            os.replace(ep.log, ep.log.with_suffix(".log.1"))
    except FileNotFoundError:
        pass
    return os.open(ep.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)


def spawn(ep: Endpoint) -> None:
    """Start the service detached (its own session, stdio to its log).  Raises Unavailable.

    A ``/bin/sh`` in between starts it in the background and exits at once, so the service is never
    our child: a long-lived caller (the MCP front) would otherwise keep a stopped service as a zombie,
    which every other process sees as still running (``service stop`` waited 10 s for it)."""
    if not os.access(ep.data_dir, os.W_OK | os.X_OK):
        raise Unavailable(f"the data dir {ep.data_dir} is not writable")
    try:
        log = _open_log(ep)
    except OSError as exc:
        raise Unavailable(f"cannot open {ep.log}: {exc}") from None
    import subprocess

    try:
        launcher = subprocess.Popen(
            ["/bin/sh", "-c", '"$@" &', "sh", sys.executable, "-m", "contextware.resident", str(ep.data_dir)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=str(ep.data_dir),
            start_new_session=True,
            close_fds=True,
        )
        launcher.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"cannot start the service: {exc}") from None
    finally:
        os.close(log)


def _wait_for_socket(ep: Endpoint, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            _connect(ep).close()
            return
        except Unavailable:
            time.sleep(0.01)
    raise Unavailable("the service did not start in time")


def start_detached(ep: Endpoint) -> None:
    """Start a service without waiting for it (unless another caller is starting one right now).
    Raises Unavailable or ServiceUnsafe."""
    check_folder(ep, create=True)
    fd = _take_start_lock(ep, None)
    if fd is None:
        return
    try:
        spawn(ep)
    finally:
        os.close(fd)


def _server_lock_free(ep: Endpoint) -> bool:
    """True when no service process holds the data dir's server lock: none runs, none is starting
    and none is still dying.  A service killed with -9 shows as a zombie while its other threads
    exit, and until the last one has, its listening socket still accepts connections and its lock
    is still held: a replacement started then would find the lock taken and leave at once."""
    try:
        fd = os.open(ep.server_lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return True  # the service itself will say why it cannot start
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # releases the probe's lock at once
    return True


def _take_start_lock(ep: Endpoint, deadline: float | None) -> int | None:
    """The start lock's fd (held), or None when another caller holds it past ``deadline`` (at once
    when ``deadline`` is None)."""
    fd = os.open(ep.start_lock, os.O_RDWR | os.O_CREAT, 0o600)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if deadline is None or time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.01)


def ensure_running(ep: Endpoint, wait_s: float = START_WAIT_S) -> None:
    """Make sure a service answers on ``ep`` (starting one under a lock, so that callers arriving
    together start one service).  Raises Unavailable, or ServiceUnsafe for a folder that is not ours."""
    check_folder(ep, create=True)
    try:
        _connect(ep).close()
        return
    except Unavailable:
        pass
    deadline = time.monotonic() + wait_s
    fd = _take_start_lock(ep, deadline)
    if fd is None:
        raise Unavailable("another caller is starting the service")
    try:
        while True:
            try:
                _connect(ep).close()  # started by the caller that held the lock before us
                return
            except Unavailable:
                pass
            if _server_lock_free(ep):
                break
            if time.monotonic() > deadline:  # a service that holds its lock but never listens
                raise Unavailable("a service holds the data dir's lock but does not answer")
            time.sleep(0.01)  # one starting (lock taken, socket not bound yet) or one still dying
        spawn(ep)
        _wait_for_socket(ep, deadline)
    finally:
        os.close(fd)  # releases the lock


def replace_dead(ep: Endpoint, wait_s: float = 2.0) -> None:
    """After a service died under a request: start its replacement for the next caller, without
    waiting for it to answer.  Waits (up to ``wait_s``) for the dead one to release its lock, which a
    service killed with -9 holds for a moment; gives up quietly when another caller is starting one
    or the lock stays held (then the service was not dead, only slow)."""
    deadline = time.monotonic() + wait_s
    try:
        fd = _take_start_lock(ep, None)
        if fd is None:
            return
        try:
            while not _server_lock_free(ep):
                if time.monotonic() > deadline:
                    return
                time.sleep(0.01)
            spawn(ep)
        finally:
            os.close(fd)
    except (OSError, Unavailable, ServiceUnsafe):
        pass


def stop(ep: Endpoint, wait_s: float = 10.0) -> StopResult:
    """Ask the service to exit and wait until it is gone; kill it when it does not go."""
    try:
        status = exchange(ep, {"op": "status"}, timeout=STATUS_TIMEOUT_S)
    except VersionMismatch as exc:
        status = exc.answer
    except Unavailable:
        return {"was_running": False, "stopped": False}
    pid = status.get("pid")
    try:
        notify(ep, {"op": "stop"})
    except Unavailable:
        pass
    stopped = _wait_gone(pid, wait_s)
    if not stopped and isinstance(pid, int):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        stopped = _wait_gone(pid, 2.0)
    return {"was_running": True, "stopped": stopped, "pid": pid}


def _wait_gone(pid: JsonValue, wait_s: float) -> bool:
    if not isinstance(pid, int):
        return True
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        _reap(pid)
        time.sleep(0.02)
    return False


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)  # our own child (started by this process): collect its status
    except ChildProcessError:
        pass


def replace_older(ep: Endpoint, mismatch: VersionMismatch) -> None:
    """Stop a service of an older version (once, after an upgrade); Unavailable for a newer one,
    which keeps running while this caller works in-process: two versions never take turns."""
    if not supersedes(code_version(), mismatch.answer.get("version")):
        raise Unavailable(f"the service runs newer version {mismatch.answer.get('version')}")
    stop(ep)


def call(data_dir: Path, message: ServiceRequest, timeout: float, settings: Settings | None = None) -> JsonObject:
    """Ask the service of ``data_dir``, starting it (or replacing one of an older version) when needed.
    Raises Unavailable when the caller should work in-process."""
    ep = endpoint(data_dir, settings)
    try:
        try:
            try:
                return exchange(ep, message, timeout, first_byte=FIRST_BYTE_S)
            except VersionMismatch as exc:
                replace_older(ep, exc)  # or Unavailable: a newer service is left running
            except (DiedMidRequest, Busy):
                raise
            except Unavailable:
                pass  # nothing listens, or a stale socket (its service was killed)
            ensure_running(ep)
            return exchange(ep, message, timeout)  # a fresh service answers once warmed up
        except DiedMidRequest:
            replace_dead(ep)  # the caller retries in-process; the next one finds a service again
            raise
    except ServiceUnsafe as exc:
        warn(exc.message)
        raise Unavailable(exc.message) from None


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return "/"


def warn(message: str) -> None:
    try:
        sys.stderr.write(f"contextware: {message} Working in-process.\n")
    except (OSError, ValueError):
        pass


# -- the commands' entry -----------------------------------------------------------------------------
def run_command(command: str, argv: Sequence[str], prog: str, settings: Settings | None = None) -> int | None:
    """Run one command through the service: its stdout/stderr are printed here and its exit code
    returned.  None: the caller runs the command in-process (standard input, if read, is put back).
    ``settings``: the caller's (``cli.run_served``), by default this process's."""
    settings = settings or current_settings()
    if mode(settings) == "off" or not routed(command, argv):
        return None
    data_dir = data_dir_for(project_root_arg(argv), settings)
    if data_dir is None or not data_dir.is_dir():
        return None  # nothing saved yet: the first write creates the data dir in-process
    stdin = None
    if "-" in argv and command in READS_STDIN:
        data = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1) if sys.stdin is not None else b""
        sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")  # the in-process retry reads it again
        if len(data) > MAX_STDIN_BYTES:
            return None  # far over every command's limit: refused in-process, in the command's words
        stdin = base64.b64encode(data).decode("ascii")
    message: ServiceRequest = {
        "op": "run",
        "id": os.urandom(8).hex(),
        "command": command,
        "argv": list(argv),
        "prog": prog,
        "cwd": _cwd(),
        "env": forwarded_env(settings),
        "stdin": stdin,
    }
    try:
        answer = call(data_dir, message, COMMAND_TIMEOUT_S, settings)
    except Unavailable:
        return None
    code, out, err = answer.get("exit"), answer.get("stdout"), answer.get("stderr")
    if not answer.get("ok") or not isinstance(code, int):
        return None
    sys.stderr.write(str(err or ""))
    sys.stdout.write(str(out or ""))
    sys.stdout.flush()
    return int(code)
