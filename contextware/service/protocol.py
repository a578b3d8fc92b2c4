"""Where a project's service listens, how that place is checked, and what travels over the socket.

The socket lives in a short private folder, ``$XDG_RUNTIME_DIR`` (else ``/tmp``) /
``contextware-<uid>-<hash of the data dir>``: Unix socket paths are limited to ~104-108 bytes, so
the data dir itself (anywhere, any length) cannot hold it.  The folder must be the user's own with
mode 0700 and the socket 0600; anything else is refused rather than used.

One request, one answer: a JSON object on one line each way.  Every request carries ``version``
(the protocol number plus a fingerprint of the package's files), so a service left running from
older code answers ``version_mismatch`` and is replaced.
"""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path
from typing import Any

from contextware.errors import ContextwareError
from contextware.settings import Settings, current_settings

PROTOCOL = 1
MAX_MESSAGE = 64 * 1024 * 1024  # a saved log may be a few MB; stdin travels inside the request
SOCKET_NAME = "sock"


class ServiceUnsafe(ContextwareError):
    """The runtime folder or socket is not private to this user: never used."""

    code = "service_unsafe"


class ProtocolError(Exception):
    """The other side closed the connection or sent something that is not one JSON object."""


class Endpoint:
    """The runtime folder of one data dir's service and the files in it."""

    def __init__(self, data_dir: Path, folder: Path) -> None:
        self.data_dir = data_dir
        self.folder = folder

    @property
    def socket(self) -> Path:
        return self.folder / SOCKET_NAME

    @property
    def start_lock(self) -> Path:
        return self.folder / "start.lock"

    @property
    def server_lock(self) -> Path:
        return self.folder / "server.lock"

    @property
    def log(self) -> Path:
        return self.data_dir / "service.log"


def runtime_base(settings: Settings | None = None) -> Path:
    """``$XDG_RUNTIME_DIR`` (``settings.runtime_dir``; by default this process's), else ``/tmp``.
    ``TMPDIR`` is not followed on purpose: callers of one project with different temp dirs (a host
    gives its hooks its own) must meet at one socket.  A runtime dir too long to hold a socket path
    (Linux allows 107 bytes) gives way to ``/tmp`` too."""
    raw = (settings or current_settings()).runtime_dir
    if raw and os.path.isdir(raw) and len(os.fsencode(raw)) <= MAX_RUNTIME_BASE:
        return Path(raw)
    return Path("/tmp")


# What a socket path may spend on the runtime dir: 107 bytes less "/contextware-<uid>-<16 hex>/<socket>".
MAX_RUNTIME_BASE = 107 - len(f"/contextware-{2**32}-{'0' * 16}/") - 16


def _sha1(data: bytes = b"") -> Any:
    """SHA-1 from CPython's built-in module when it has one: ``hashlib`` loads OpenSSL first (~2 ms
    of every hook start); the digest is the same."""
    try:
        from _sha1 import sha1
    except ImportError:
        from hashlib import sha1
    return sha1(data)


def endpoint(data_dir: Path, settings: Settings | None = None) -> Endpoint:
    """The service endpoint of ``data_dir``, under the runtime dir of ``settings`` (the caller's)."""
    digest = _sha1(str(data_dir).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return Endpoint(data_dir, runtime_base(settings) / f"contextware-{os.getuid()}-{digest}")


def _private(path: Path, st: os.stat_result, kind: str) -> None:
    if st.st_uid != os.getuid():
        raise ServiceUnsafe(f"The service {kind} {path} belongs to another user (uid {st.st_uid}); it is not used.")
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise ServiceUnsafe(
            f"The service {kind} {path} has mode {stat.S_IMODE(st.st_mode):04o}, open to other users; it is not used "
            "(remove it to let Contextware recreate it)."
        )


def check_folder(ep: Endpoint, create: bool) -> bool:
    """True when the private folder exists (created 0700 when ``create``); ServiceUnsafe when it is
    not a directory of ours with mode 0700 (a symlink counts as not ours)."""
    try:
        st = os.lstat(ep.folder)
    except FileNotFoundError:
        if not create:
            return False
        try:
            os.mkdir(ep.folder, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(ep.folder)
    if not stat.S_ISDIR(st.st_mode):
        raise ServiceUnsafe(f"The service folder {ep.folder} is not a directory; it is not used.")
    _private(ep.folder, st, "folder")
    return True


def check_socket(ep: Endpoint) -> bool:
    """True when the socket file exists and is private; ServiceUnsafe when it is someone else's."""
    try:
        st = os.lstat(ep.socket)
    except FileNotFoundError:
        return False
    if not stat.S_ISSOCK(st.st_mode):
        raise ServiceUnsafe(f"{ep.socket} is not a socket; it is not used.")
    _private(ep.socket, st, "socket")
    return True


def code_version() -> str:
    """The protocol number and a fingerprint of the package's source files (names, sizes, mtimes):
    an edited or upgraded checkout never talks to a service still running the old code.  ~1 ms."""
    package = Path(__file__).resolve().parents[1]
    digest = _sha1()
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                digest.update(f"{folder[len(str(package)) :]}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return f"{PROTOCOL}-{digest.hexdigest()[:16]}"


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")


def receive(sock: socket.socket) -> dict[str, Any]:
    """One JSON object ending with a newline; ProtocolError on EOF, garbage or an oversized message."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ProtocolError("the connection closed before a whole message arrived")
        size += len(chunk)
        if size > MAX_MESSAGE:
            raise ProtocolError("the message is too large")
        if chunk.endswith(b"\n"):
            chunks.append(chunk)
            break
        chunks.append(chunk)
    try:
        message = json.loads(b"".join(chunks))
    except ValueError:
        raise ProtocolError("the message is not JSON") from None
    if not isinstance(message, dict):
        raise ProtocolError("the message is not a JSON object")
    return message
