"""``contextware config``: the project's settings (defaults overridden by ``config.json``), checked."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from contextware.cli import add_common, new_parser, open_project

DESCRIPTION = """Show the project's settings: every setting with its value, the ones set in
<data_dir>/config.json marked. Both actions check config.json first: an unknown key (with the
nearest valid one) or a value of the wrong type exits 2, as it does for every command that reads
the settings.

  show    every setting and its value (default)
  check   only check config.json"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    p.add_argument("action", nargs="?", choices=("show", "check"), default="show", help="show (default) or check")
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    import json

    from contextware.storage.config import SETTINGS

    project = open_project(args)
    path = project.data_dir / "config.json"
    settings = project.config  # raises on unknown keys and wrong types
    overridden = sorted(json.loads(path.read_bytes().decode("utf-8-sig"))) if path.is_file() else []
    out = {"path": project.relpath(path), "exists": path.is_file(), "overridden": overridden}
    if args.action == "check":
        return {**out, "valid": True}
    return {
        **out,
        "settings": settings.to_json(),
        "help": {s.key: s.help for s in SETTINGS},
    }


def render_text(result: dict[str, Any]) -> str:
    from contextware.cli.render import paint, table

    where = result["path"] if result["exists"] else f"{result['path']} (absent: every setting is the default)"
    if "settings" not in result:
        return f"{where}: valid" + (f"; sets {', '.join(result['overridden'])}." if result["overridden"] else ".")
    rows = [
        {"setting": k, "value": v, "from": "config.json" if k in result["overridden"] else "default"}
        for k, v in result["settings"].items()
    ]
    return (
        paint(where, "bold")
        + "\n"
        + table(rows, ["setting", "from", "value"])
        + "\n(what each does: docs/settings.md, or the JSON output's help)"
    )
