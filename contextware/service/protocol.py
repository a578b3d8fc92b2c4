"""Where a project's service listens, how that place is checked, and what travels over the socket.

The socket lives in a short private folder, ``$XDG_RUNTIME_DIR`` (else ``/tmp``) /
``contextware-<uid>-<hash of the data dir>``: Unix socket paths are limited to ~104-108 bytes, so
the data dir itself (anywhere, any length) cannot hold it.  The folder must be the user's own with
mode 0700 and the socket 0600; anything else is refused rather than used.

One request, one answer: a JSON object on one line each way.  Every request carries ``version``
(the protocol number and the package's version), so a service of another version answers
``version_mismatch``: a newer caller replaces it, an older one works in-process (``supersedes``).
"""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from contextware.core.errors import ContextwareError
from contextware.core.json_types import JsonObject
from contextware.core.settings import Settings, current_settings
from contextware.service.messages import ServiceReply

if TYPE_CHECKING:
    from hashlib import _Hash

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


def _sha1(data: bytes = b"") -> _Hash:
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
    """The protocol number and the package's version, ``"1-0.1.0"``: what decides whether a caller and a
    service can talk.  Two installs of one version (a clone's environment and ``uv tool install`` of
    it) share the project's one service; a service from another version is replaced by a newer caller
    and left alone by an older one (see :func:`supersedes`).  No file is read: hooks pay this on every
    start."""
    from contextware import __version__

    return f"{PROTOCOL}-{__version__}"


def _version_key(version: object) -> tuple[tuple[int, ...], str] | None:
    """``"1-0.1.0"`` -> ((1, 0, 1, 0), "") for ordering; None for anything else (an older build's
    ``"1-<16 hex digits>"`` fingerprint among them: it has no dot)."""
    import re

    match = re.fullmatch(r"(\d+)-(\d+(?:\.\d+)+)(.*)", version) if isinstance(version, str) else None
    if match is None:
        return None
    return (int(match[1]), *(int(n) for n in match[2].split("."))), match[3]


def supersedes(ours: str, theirs: object) -> bool:
    """Whether a caller of version ``ours`` should replace a service running ``theirs``: only when
    ours is newer (or theirs cannot be read, as an older build's fingerprint cannot), so two installs
    of different versions never take turns restarting one service: the older answers in-process."""
    mine, other = _version_key(ours), _version_key(theirs)
    if other is None:
        return mine is not None
    if mine is None:
        return False
    # A release sorts after its pre-releases and local builds ("0.2.0" > "0.2.0rc1"): no suffix wins.
    return (mine[0], mine[1] == "", mine[1]) > (other[0], other[1] == "", other[1])


def send(sock: socket.socket, message: ServiceReply) -> None:
    sock.sendall(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")


MAX_DEPTH = 32  # our frames nest 3 deep; an MCP tool's arguments a few more
MAX_BRACKETS = 200_000  # brackets and quotes in one frame: far above a real one (stdin is base64)
FRAME_DEADLINE_S = 5.0  # a whole request frame, however it trickles in (a caller sends it at once)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def too_deep(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON ``data`` nests deeper than ``limit``, found by scanning its brackets outside
    strings, never by parsing: ``json.loads`` recurses once per level and a frame 100,000 deep
    raises RecursionError inside it.  Escapes go first (``\\\\`` then ``\\"``); every other piece
    between quotes is then outside a string.  A frame with more than ``MAX_BRACKETS`` brackets,
    backslashes or quotes counts as too deep: no caller sends one (it works in-process when refused), and the
    scan stays a few C-speed passes whatever the frame holds."""
    opening = data.count(b"[") + data.count(b"{")
    if opening <= limit:
        return False
    if opening > MAX_BRACKETS or data.count(b"\\") > MAX_BRACKETS:
        return True
    plain = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    if plain.count(b'"') > MAX_BRACKETS:
        return True
    brackets = b"".join(plain.split(b'"')[::2]).translate(None, _NOT_BRACKETS)
    depth = 0
    for byte in brackets:
        depth += 1 if byte in b"[{" else -1
        if depth > limit:
            return True
    return False


def parse(data: bytes) -> JsonObject:
    """One JSON object from a frame's bytes; ProtocolError for anything else (too deep, not JSON,
    not UTF-8, not an object)."""
    if too_deep(data):
        raise ProtocolError(f"the message nests deeper than {MAX_DEPTH} levels")
    try:
        message = json.loads(data)
    except (ValueError, RecursionError):
        raise ProtocolError("the message is not JSON") from None
    if not isinstance(message, dict):
        raise ProtocolError("the message is not a JSON object")
    return message


def receive(sock: socket.socket, deadline: float | None = None, first: bytes = b"") -> JsonObject:
    """One JSON object ending with a newline; ProtocolError on EOF, garbage, an oversized or too deep
    message.  ``deadline`` (``time.monotonic()``) bounds the whole message, however slowly its bytes
    come (a per-read timeout alone lets a sender hold us one byte at a time); TimeoutError past it.
    ``first``: bytes already read (the service's acknowledgement)."""
    import time

    chunks: list[bytes] = [first.lstrip()] if first.strip() else []
    size = len(first)
    if first.endswith(b"\n") and chunks:
        return parse(b"".join(chunks))
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the message did not arrive in time")
            sock.settimeout(left)
        try:
            chunk = sock.recv(1 << 16)
        except TimeoutError:
            raise TimeoutError("the message did not arrive in time") from None
        if not chunk:
            raise ProtocolError("the connection closed before a whole message arrived")
        size += len(chunk)
        if size > MAX_MESSAGE:
            raise ProtocolError("the message is too large")
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return parse(b"".join(chunks))
