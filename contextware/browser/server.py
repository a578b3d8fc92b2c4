"""Start the browser: a socket bound to 127.0.0.1 at a free port (never another interface), a
fresh token per run, uvicorn serving the guarded pages until Ctrl-C or SIGTERM (requests in flight
finish; the signal is not raised again afterwards: the command ends with its JSON and exit 0).
Access logs are off: a URL can carry the token."""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

from contextware.browser.guard import Guard, run_prefix
from contextware.browser.models import ServedSummary

if TYPE_CHECKING:
    from contextware.browser.pages import Pages
    from contextware.storage.project import Project

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Served:
    port: int
    token: str

    @property
    def address(self) -> str:
        """The server's address without its secret path: what the CLI prints when it stops."""
        return f"http://{HOST}:{self.port}/"

    @property
    def base(self) -> str:
        """This run's pages: under a secret prefix, the only path its cookie is sent to (``guard``)."""
        return f"http://{HOST}:{self.port}{run_prefix(self.token)}/"

    @property
    def url(self) -> str:
        """What the person opens: the token is in it once, then in a cookie."""
        return f"{self.base}?token={self.token}"


def make_app(project: "Project", token: str, port: int) -> tuple[Guard, "Pages"]:
    """The guarded ASGI app of one project's pages, and the pages (their ``warm_up``)."""
    from starlette.applications import Starlette

    from contextware.browser.pages import Pages

    pages = Pages(project, token)
    return Guard(Starlette(routes=pages.routes()), token, port), pages


def bind(port: int = 0) -> socket.socket:
    """A listening socket on the loopback interface only (port 0: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(128)
    return sock


def _server_class() -> Any:
    import contextlib
    import signal

    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, stopped by SIGINT/SIGTERM without re-raising the signal at the end
        (uvicorn does, which would kill the process before the command prints its result)."""

        warm_up: Callable[[], None] = staticmethod(lambda: None)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return

            def stop(_sig: int, _frame: FrameType | None) -> None:
                if self.should_exit:
                    self.force_exit = True  # a second Ctrl-C: do not wait for requests in flight
                self.should_exit = True

            before = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in before.items():
                    signal.signal(sig, handler)

    return Server


def build_server(project: "Project", port: int = 0) -> tuple[Any, Served, socket.socket]:
    """The uvicorn server of one project's pages, its address and token, and its bound socket
    (``server.run(sockets=[sock])`` serves; tests run it in a thread)."""
    import uvicorn

    sock = bind(port)
    served = Served(sock.getsockname()[1], secrets.token_urlsafe(32))
    app, pages = make_app(project, served.token, served.port)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        proxy_headers=False,
        timeout_graceful_shutdown=5,
    )
    server = _server_class()(config)
    server.warm_up = pages.warm_up
    return server, served, sock


def open_privately(served: Served) -> None:
    """Open the browser without the token on a command line (``ps`` shows every user's): it opens
    a redirecting page in a private folder (0700, the file 0600), removed once the server stops."""
    import atexit
    import shutil
    import tempfile
    import webbrowser
    from html import escape
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="contextware-ui-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    page = folder / "open.html"
    target = escape(served.url, quote=True)
    fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(
            f'<!doctype html><meta charset=utf-8><meta http-equiv="refresh" content="0;url={target}">'
            f'<title>Contextware</title><a href="{target}">Open the Contextware memory browser</a>'
        )
    webbrowser.open(page.as_uri())


def serve(
    project: "Project",
    *,
    announce: Callable[[Served], None],
    open_browser: bool = True,
    port: int = 0,
) -> ServedSummary:
    """Serve until stopped; ``announce`` is told the URL once the server listens.  Returns what
    the CLI prints on exit (the address without the token)."""
    server, served, sock = build_server(project, port)
    started = time.monotonic()
    warming = threading.Thread(target=server.warm_up, name="contextware-ui-warm", daemon=True)

    def when_ready() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.02)
        if server.started:
            warming.start()
            announce(served)
            if open_browser:
                open_privately(served)

    threading.Thread(target=when_ready, name="contextware-ui-ready", daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        if warming.is_alive():  # never exit under a thread inside LanceDB's native code
            warming.join(60)
    return {"url": served.address, "served_s": round(time.monotonic() - started, 1), "stopped": True}
