"""The memory browser for tests: the real server (``contextware.browser.server.build_server``) run
in a thread on a free port, or the real ``scripts/ui.py`` process, and raw HTTP requests to it with
any Host, Origin, cookie or body (``http.client``: nothing rewrites the headers a test sets)."""

from __future__ import annotations

import http.client
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from tests.support.repo import SCRIPTS

PLANTED = '<script>alert("owned")</script><img src=x onerror=alert(1)> "quotes" & ampersands'


def saved_memories(project: Any) -> dict[str, str]:
    """Real memories (saved through ``records``): facts, one superseded, one planted with markup,
    an episode and a captured turn of session ``sess-1``; their ids by name."""
    from contextware.memory import records

    def save(type_: str, text: str, **options: Any) -> str:
        return records.save(project, type_, text, **options)["id"]

    ids = {
        "tests": save("fact", "We run the tests with pytest -n 2.", kind="convention", topics="testing"),
        "deploy": save("fact", "Deploys go to Fly.io through GitHub Actions.", kind="decision"),
        "planted": save("fact", PLANTED, kind="note"),
        "episode": save(
            "episode",
            "Switched the CI cache to uv; builds went from 4 to 1 minute.",
            goal="Speed up CI",
            result="success",
        ),
    }
    ids["newer"] = save("fact", "Deploys go to Render since March.", kind="decision", supersedes=ids["deploy"])
    ids["log"] = save("log", "Where do deploys go now?", session_id="sess-1", role="user")
    return ids


# Each server's secret path prefix (``guard.run_prefix``), by port: ``request`` sends its paths
# under it and shows its answers without it, as a person sees the pages at the URL they opened;
# ``raw=True`` sends and shows exactly what travels.
PREFIXES: dict[int, str] = {}


def run_prefix(token: str) -> str:
    from contextware.browser.guard import run_prefix as prefix_of

    return prefix_of(token)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    text: str


@contextmanager
def served_browser(project: Any) -> Iterator[Any]:
    """The real server of ``project`` in a thread; yields its ``Served`` (port, token)."""
    from contextware.browser.server import build_server

    server, served, sock = build_server(project)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "the browser's server did not start"
    PREFIXES[served.port] = run_prefix(served.token)
    try:
        yield served
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


def request(
    port: int,
    path: str,
    *,
    method: str = "GET",
    token: str | None = None,
    host: str | None = None,
    origin: str | None = None,
    form: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    raw: bool = False,
) -> Answer:
    """One request; ``token`` goes in the cookie the server sets (as a browser sends it back)."""
    prefix = "" if raw else PREFIXES.get(port, "")
    path = prefix + path if path.startswith("/") else path
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    sent = {"Host": f"127.0.0.1:{port}" if host is None else host, **(headers or {})}
    if token is not None:
        sent["Cookie"] = f"contextware_{port}={token}"
    if origin is not None:
        sent["Origin"] = origin
    body = None
    if form is not None:
        body = urlencode(form).encode()
        sent["Content-Type"] = "application/x-www-form-urlencoded"
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for key, value in sent.items():
        conn.putheader(key, value)
    if body is not None:
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    resp = conn.getresponse()
    answer = Answer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read().decode("utf-8", "replace"))
    conn.close()
    if prefix:
        if answer.headers.get("location", "").startswith(prefix + "/"):
            answer.headers["location"] = answer.headers["location"][len(prefix) :]
        answer.text = re.sub(rf'(href|action|src)="{re.escape(prefix)}/', r'\1="/', answer.text)
    return answer


def listening_addresses(port: int) -> list[str]:
    """The local addresses (IPv4 and IPv6, as in /proc/net/tcp*) listening on ``port``."""
    found = []
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            addr, _, hex_port = fields[1].rpartition(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.append(addr)
    return found


@contextmanager
def ui_process(
    project_dir: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen, str]]:
    """``scripts/ui.py --no-browser`` in ``project_dir``: yields the process and the URL it printed."""
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "ui.py"), "--no-browser", *args],
        cwd=project_dir,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        url = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            if m := re.search(r"http://127\.0\.0\.1:(\d+)(/cw-[0-9a-f]{16})?/\?token=\S+", line):
                url = m.group(0)
                PREFIXES[int(m.group(1))] = m.group(2) or ""
                break
        assert url, f"ui.py printed no URL (exit {proc.poll()})"
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def form_token(page: str) -> str:
    m = re.search(r'name="token" value="([^"]+)"', page)
    assert m, "the page has no form token"
    return m.group(1)
