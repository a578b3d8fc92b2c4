"""``service.py``: start, inspect or stop the project's resident service."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from contextware.cli import add_common, new_parser, open_project
from contextware.core.errors import ContextwareError

DESCRIPTION = """Start, inspect or stop the project's resident service.

The service keeps this project's database open and the embedding model loaded, so hooks and scripts
answer in milliseconds; it starts by itself on first use and exits after service_idle_minutes
(config.json, default 10) without a request. CONTEXTWARE_SERVICE=off makes every caller work
in-process and never start it.

  start    start it (if not running) and report its status
  status   running, pid, socket, version, uptime_s, requests
  stop     ask it to exit and wait until it has"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    sub.add_parser("start", help="start the service unless it runs, then report its status")
    sub.add_parser("status", help="whether it runs: pid, socket, version, uptime_s, requests")
    sub.add_parser("stop", help="stop it and wait until it has exited")
    for action in sub.choices.values():
        add_common(action)
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    from contextware.service import client
    from contextware.service.protocol import endpoint

    project = open_project(args)
    ep = endpoint(project.data_dir, project.settings)
    if args.action == "stop":
        return {"socket": str(ep.socket), **client.stop(ep)}
    if args.action == "start":
        if client.mode(project.settings) == "off":
            raise ContextwareError(
                "CONTEXTWARE_SERVICE=off: unset it (or set it to auto) to start the service.", code="service_off"
            )
        project.ensure_data_dir()
        try:
            client.ensure_running(ep)  # ServiceUnsafe (exit 1) for a folder or socket that is not private
        except client.Unavailable as exc:
            raise ContextwareError(
                f"The service did not start ({exc}); see {ep.log}.", code="service_unavailable"
            ) from None
    try:
        status = client.exchange(ep, {"op": "status"}, timeout=client.STATUS_TIMEOUT_S)
    except client.Unavailable:
        return {"mode": client.mode(project.settings), "running": False, "socket": str(ep.socket)}
    from contextware.service.protocol import code_version

    if status.get("version") != code_version():  # another version's service: this install works in-process
        status["compatible"] = False
    return {"mode": client.mode(project.settings), **{k: v for k, v in status.items() if k != "ok"}}


def render_text(result: dict[str, Any]) -> str:
    if not result.get("running"):
        return "The service is not running." if "stopped" not in result else f"Stopped: {result['stopped']}."
    line = f"Running: pid {result['pid']}, up {result['uptime_s']} s, {result['requests']} requests, socket {result['socket']}."
    if result.get("compatible") is False:
        line += (
            f" It runs version {result.get('version')}, not this install's: a newer install replaces it at its "
            "next call, an older one works in-process."
        )
    return line
