"""``ui.py``: browse the project's memory in a local web page."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from contextware.cli import add_common, new_parser, open_project

if TYPE_CHECKING:
    from contextware.browser.models import ServedSummary

DESCRIPTION = """Serve this project's memory as local web pages and open them in the browser.

Pages: a dashboard (rows per table, disk, model, service, last crawl, what went stale), memories
with filters and search, one memory with its supersession chain and the code it names (edit,
supersede, delete with a confirmation), session timelines, the code index as a map, and "Why":
how recall ranked and gated every candidate of a question.

It listens on 127.0.0.1 only, at a free port, and every request needs this run's random token:
open the URL printed on stderr. Ctrl-C or SIGTERM stops it; the address is then printed as JSON."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    p.add_argument("--no-browser", action="store_true", help="print the URL but do not open a browser")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: a free one)")
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> "ServedSummary":
    import sys

    from contextware.browser.server import Served, serve
    from contextware.core.errors import UsageError

    if not 0 <= args.port <= 65535:
        raise UsageError("--port must be between 0 and 65535.", code="bad_port")
    project = open_project(args)

    def announce(served: Served) -> None:
        sys.stderr.write(f"Contextware memory browser for {project.root}:\n  {served.url}\n(Ctrl-C stops it.)\n")
        sys.stderr.flush()

    try:
        return serve(project, announce=announce, open_browser=not args.no_browser, port=args.port)
    except OSError as exc:
        raise UsageError(f"Cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}.", code="port_busy") from None
