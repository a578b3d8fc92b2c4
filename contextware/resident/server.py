"""The service loop: one data dir, one socket, one request at a time.

Start-up: take the data dir's server lock (a second service exits at once), bind the socket in its
private folder (0700 folder, 0600 socket), then warm up (import LanceDB, load the model, open the
tables) and drain the hook spool.  Requests queue in the socket's backlog meanwhile, so the first
caller waits for the warm-up instead of paying for its own.  Once the first request is answered, a
thread reads the tables into memory for searches (``storage.table_search``); searches do not wait
for it, and the first caller of a cold service does not share the machine with it.

Each request runs with the caller's ``Settings`` (built from the ``CONTEXTWARE_*`` variables it sent,
passed as a parameter: the service's own environment is never changed), in the caller's working
directory and with its standard input, through the same functions an in-process call uses:
``contextware.cli.run`` for a command, ``contextware.hosts.hooks.handlers.run_hook`` for a hook event,
``contextware.hosts.mcp.server.call_tool`` for an MCP tool call forwarded by ``hosts.mcp.front``.  The loop exits after
``service_idle_minutes`` without a request, on ``stop``, on SIGTERM/SIGINT, or when its data dir or
socket disappears; it removes its socket on the way out.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, cast

from contextware.core.settings import Settings, current_settings
from contextware.core.system import fewer_heaps
from contextware.service import spool
from contextware.service.client import names_a_file
from contextware.service.context import caller_context
from contextware.service.frames import problem
from contextware.service.messages import ServiceReply, ServiceRequest, ServiceStatus
from contextware.service.protocol import (
    FRAME_DEADLINE_S,
    Endpoint,
    ProtocolError,
    check_folder,
    code_version,
    endpoint,
    receive,
    send,
)
from contextware.storage.table_search import release_unused

if TYPE_CHECKING:
    from contextware.storage.database import Database

ACCEPT_POLL_S = 0.5
READ_TIMEOUT_S = 10.0
VERSIONED_OPS = {"run", "hook", "drain", "mcp"}
SOURCE_CHECK_S = 2.0


def source_fingerprint() -> str:
    """Names, sizes and mtimes of the package's source files (~1 ms).  Callers are matched by version
    (``code_version``); this only lets a service notice that its own files were edited, so that a
    developer's change takes effect at the next call rather than at the idle exit."""
    import hashlib

    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha1()
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                with contextlib.suppress(OSError):
                    st = os.stat(os.path.join(folder, name))
                    digest.update(f"{folder[len(str(package)) :]}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()


def log(message: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} [{os.getpid()}] {message}\n")
    sys.stderr.flush()


def caller_gone(conn: socket.socket) -> bool:
    """Whether the caller closed its end before its request was run.  A caller waits only
    ``FIRST_BYTE_S`` for the service to take its connection, then runs the request in its own
    process; its request is still in the socket's buffer, and run here too it would be done twice
    (a save answered ``duplicate_of`` itself, an offload paid twice).  Its close is seen as the end of
    the stream after the frame; a caller that is still waiting has sent nothing more."""
    timeout = conn.gettimeout()
    conn.settimeout(0.0)  # a socket with a timeout would wait for data first, then time out
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except (BlockingIOError, InterruptedError):
        return False  # nothing to read, and the stream is open: the caller waits for its answer
    except OSError:
        return True  # reset: gone
    finally:
        conn.settimeout(timeout)


class Service:
    def __init__(self, data_dir: Path, settings: Settings | None = None) -> None:
        self.data_dir = data_dir
        self.settings = settings or current_settings()  # the service's own, resolved once at start
        self.ep: Endpoint = endpoint(data_dir, self.settings)
        self.version = code_version()
        self._sources, self._sources_checked = source_fingerprint(), time.monotonic()
        self.started = time.monotonic()
        self.last_request = self.started
        self.requests = 0
        self.stopping = False
        self.idle_s = self._idle_seconds()
        self._listener: socket.socket | None = None
        self._inode: int | None = None
        self._db: Database | None = None  # the project's database, until its tables are read into memory

    def _idle_seconds(self) -> float:
        from contextware.storage.config import Config, load_config

        try:
            minutes = load_config(self.data_dir).service_idle_minutes
        except Exception:  # noqa: BLE001 - a damaged config.json must not keep the service from idling out
            minutes = Config().service_idle_minutes
        return max(1.0, minutes * 60.0)

    # -- life cycle --------------------------------------------------------------------------------
    def bind(self) -> bool:
        """Take the server lock and bind the socket; False when another service holds the lock."""
        check_folder(self.ep, create=True)
        self._lock_fd = os.open(self.ep.server_lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.ep.socket)  # stale: its service is gone (we hold the lock)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)
        try:
            listener.bind(str(self.ep.socket))
        finally:
            os.umask(old)
        os.chmod(self.ep.socket, 0o600)
        listener.listen(128)
        listener.settimeout(ACCEPT_POLL_S)
        self._listener = listener
        self._inode = os.stat(self.ep.socket).st_ino
        return True

    def warm_up(self) -> None:
        """Import and load what requests need, once.  Failures are left for the requests to report."""
        try:
            from contextware.storage.embeddings import preload_in_background
            from contextware.storage.lancedb_import import import_lancedb
            from contextware.storage.project import Project

            with caller_context(str(self.data_dir.parent)):
                project = Project.open(None, self.settings)
            thread = preload_in_background(project.embedder)
            import_lancedb()
            if project.data_dir == self.data_dir:
                for name in project.db.table_names():
                    project.db.open_table(name)
            if thread is not None:
                thread.join()
            if project.data_dir == self.data_dir:
                self._db = project.db  # read into memory once the first caller has its answer
        except Exception as exc:  # noqa: BLE001
            log(f"warm-up incomplete: {exc}")

    def drain_spool(self) -> None:
        from contextware.hosts.hooks.entry import replay

        try:
            count = spool.drain(self.data_dir, lambda entry: replay(entry, self.settings))
        except Exception as exc:  # noqa: BLE001 - a start or a drain never dies on the spool
            log(f"cannot drain the hook spool: {type(exc).__name__}: {str(exc)[:200]}")
            return
        if count:
            log(f"saved {count} spooled hook event(s)")

    def still_ours(self) -> bool:
        try:
            return self.data_dir.is_dir() and os.stat(self.ep.socket).st_ino == self._inode
        except OSError:
            return False

    def code_changed(self) -> bool:
        """Whether this service's own source files changed since it started (an edited or updated
        checkout of the same version): checked after a request, at most every few seconds."""
        now = time.monotonic()
        if now - self._sources_checked < SOURCE_CHECK_S:
            return False
        self._sources_checked = now
        return source_fingerprint() != self._sources

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
        if self.still_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.ep.socket)

    def serve(self) -> None:
        assert self._listener is not None
        self.last_request = time.monotonic()  # idle time counts from being ready
        while not self.stopping:
            if not self.still_ours():
                log("the data dir or the socket is gone: exiting")
                return
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                if time.monotonic() - self.last_request > self.idle_s:
                    log(f"idle for {self.idle_s:.0f} s: exiting")
                    return
                continue
            except OSError as exc:
                log(f"accept failed: {exc}")
                continue
            with conn:
                self.handle_safely(conn)
            release_unused()  # the caller has its answer: what the request left cached goes back
            if self.code_changed():
                log("the package's files changed on disk: exiting (the next caller starts the new code)")
                return
            if self._db is not None:
                from contextware.storage.table_search import load_in_background

                load_in_background(self._db)  # the tables' rows and vectors in memory, for searches
                self._db = None

    # -- requests ------------------------------------------------------------------------------------
    def handle_safely(self, conn: socket.socket) -> None:
        """One connection, whatever it sends: a frame that breaks a request is answered with an
        error frame (its caller works in-process), never the end of the service."""
        try:
            self.handle(conn)
        except Exception as exc:  # noqa: BLE001 - one caller's frame must not stop the service
            log(f"request failed: {type(exc).__name__}: {str(exc)[:200]}")
            message = "The service could not answer this request; run it in-process."
            self._reply(conn, {"ok": False, "error": {"code": "bad_request", "message": message}})

    def handle(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(b" ")  # accepted: the caller's short first-byte wait is over (JSON allows it)
        try:
            frame = receive(conn, deadline=time.monotonic() + FRAME_DEADLINE_S)
        except (OSError, ProtocolError) as exc:
            if "closed before" not in str(exc):  # a caller checking that we listen
                log(f"bad request: {exc}")
                if isinstance(exc, ProtocolError):
                    self._reply(conn, {"ok": False, "error": {"code": "bad_request", "message": f"Bad frame: {exc}."}})
            return
        op = frame.get("op")
        self.last_request = time.monotonic()
        why = problem(frame)
        if why is not None:
            log(f"bad request: {why}")
            self._reply(conn, {"ok": False, "error": {"code": "bad_request", "message": why}})
            return
        request = cast(ServiceRequest, frame)  # problem() checked the type of each field it holds
        if op in VERSIONED_OPS and request.get("version") != self.version:
            self._reply(conn, {"ok": False, "error": {"code": "version_mismatch"}, **self.status()})
            return
        if op in ("run", "mcp") and caller_gone(conn):
            log(f"caller gone: {request.get('command') or request.get('tool')!s:.60} {request.get('id')!s:.40} not run")
            return  # it gave up waiting (busy service) and ran the request itself: never run it twice
        self.requests += 1
        if op == "status":
            self._reply(conn, {"ok": True, **self.status()})
        elif op == "stop":
            self._reply(conn, {"ok": True, "stopping": True})
            log("stop requested")
            self.stopping = True
        elif op == "drain":
            self._reply(conn, {"ok": True})
            conn.close()  # the hook that poked us is gone already
            self.drain_spool()
        elif op == "run":
            log(f"run {request.get('command')} {request.get('id')!s:.40}")
            self._reply(conn, self.run(request))
            log(f"done {request.get('id')!s:.40} in {(time.monotonic() - self.last_request) * 1000:.0f} ms")
        elif op == "mcp":
            log(f"mcp {request.get('tool')!s:.60} {request.get('id')!s:.40}")
            self._reply(conn, self.mcp(request))
            log(f"mcp {request.get('tool')!s:.60} answered in {(time.monotonic() - self.last_request) * 1000:.0f} ms")
        elif op == "hook":
            self._reply(conn, self.hook(request))
            log(f"hook answered in {(time.monotonic() - self.last_request) * 1000:.0f} ms")
            conn.close()
            if spool.pending(self.data_dir):
                self.drain_spool()  # turns a poke missed: saved after the answer, off the turn's path
        else:
            self._reply(conn, {"ok": False, "error": {"code": "bad_request", "message": f"Unknown op {op!r}."}})
        self.last_request = time.monotonic()

    def _reply(self, conn: socket.socket, message: ServiceReply) -> None:
        try:
            conn.settimeout(READ_TIMEOUT_S)
            send(conn, message)
        except OSError:
            pass  # the caller went away; it works in-process

    def status(self) -> ServiceStatus:
        return {
            "running": True,
            "pid": os.getpid(),
            "socket": str(self.ep.socket),
            "data_dir": str(self.data_dir),
            "version": self.version,
            "uptime_s": round(time.monotonic() - self.started, 1),
            "requests": self.requests,
            "idle_exit_s": self.idle_s,
        }

    def run(self, request: ServiceRequest) -> ServiceReply:
        from contextware.cli import COMMANDS, run

        command = request.get("command")
        argv = request.get("argv")
        if command not in COMMANDS or not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            return {"ok": False, "error": {"code": "bad_request", "message": "Malformed run request."}}
        if names_a_file(argv):  # the caller reads its @files (a client that sent one runs in-process)
            return {"ok": False, "error": {"code": "bad_request", "message": "An @file is read by the caller."}}
        out, err = io.StringIO(), io.StringIO()
        settings = self.caller_settings(request)
        with (
            caller_context(request.get("cwd"), request.get("stdin")),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            code = run(command, argv, prog=str(request.get("prog") or command), settings=settings)
        self._forget_on_storage_error(out.getvalue())
        return {"ok": True, "exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()}

    def hook(self, request: ServiceRequest) -> ServiceReply:
        from contextware.hosts.hooks.handlers import run_hook

        with caller_context(request.get("cwd")):
            out = run_hook(str(request.get("stdin") or ""), self.caller_settings(request))
        return {"ok": True, "stdout": out}

    def mcp(self, request: ServiceRequest) -> ServiceReply:
        """One MCP ``tools/call`` forwarded by the stdio front (``hosts.mcp.front``)."""
        from contextware.hosts.mcp.server import call_tool

        tool, arguments = request.get("tool"), request.get("arguments")
        if not isinstance(tool, str) or not isinstance(arguments, dict):
            return {"ok": False, "error": {"code": "bad_request", "message": "Malformed mcp request."}}
        with caller_context(request.get("cwd")):
            return {"ok": True, "result": call_tool(tool, arguments, self.caller_settings(request))}

    def caller_settings(self, request: ServiceRequest) -> Settings:
        """The settings of the request's caller, from the ``CONTEXTWARE_*`` variables it sent."""
        env = request.get("env")
        return self.settings.for_caller(env if isinstance(env, dict) else {})

    @staticmethod
    def _forget_on_storage_error(stdout: str) -> None:
        """Tables rebuilt or deleted under a long-lived process: reopen the project next time."""
        if '"ok": false' in stdout and ("storage_error" in stdout or "damaged_data" in stdout):
            from contextware.storage.project import forget_open_projects
            from contextware.storage.table_search import drop_snapshots, keep_snapshots

            forget_open_projects()
            drop_snapshots()
            keep_snapshots()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m contextware.resident DATA_DIR\n")
        return 2
    fewer_heaps()  # before LanceDB's and onnxruntime's threads start
    data_dir = Path(argv[0]).resolve()
    from contextware.storage.embeddings import without_arena
    from contextware.storage.project import keep_projects_open
    from contextware.storage.table_search import keep_snapshots

    service = Service(data_dir, Settings.from_env(os.environ))  # the service's composition root
    if not service.bind():
        log("another service already runs for this data dir")
        return 0

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log(f"listening on {service.ep.socket} for {data_dir} (version {service.version})")
    try:
        keep_projects_open()
        keep_snapshots()
        without_arena()
        service.warm_up()
        service.drain_spool()
        service.serve()
    finally:
        service.close()
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join(timeout=30)
    return 0
