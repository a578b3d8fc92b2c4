"""Loaded by every Python subprocess the tests start (via PYTHONPATH): refuse and record any
connection to a non-loopback address, so the run fails if our code touches the network."""

from __future__ import annotations

import ipaddress
import os
import sys


def _loopback(host: object) -> bool:
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        return True  # AF_UNIX paths and the like
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _hook(event: str, args: tuple) -> None:
    if event not in ("socket.connect", "socket.getaddrinfo"):
        return
    if event == "socket.connect":
        if getattr(args[0], "family", None) == getattr(__import__("socket"), "AF_UNIX", None):
            return  # a local socket (the resident service's): no network
        address = args[1]
        host = address[0] if isinstance(address, tuple) else address
    else:
        host = args[0]
    if _loopback(host):
        return
    log = os.environ.get("CONTEXTWARE_NETGUARD_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {event} {host!r} {' '.join(sys.argv)[:200]}\n")
    raise ConnectionRefusedError(f"network access to {host!r} is forbidden in tests")


sys.addaudithook(_hook)
