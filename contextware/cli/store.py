"""``store.py``: the namespaced session store (JSON values an agent wants back next session)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from contextware.cli import add_common, new_parser, open_project
from contextware.cli.declared_args import add_params, values_of
from contextware.core.errors import UsageError
from contextware.core.system import MAX_INPUT_BYTES, read_limited
from contextware.operations.store import STORE

DESCRIPTION = STORE.summary


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    add_params(p, STORE)
    add_common(p)
    return p


def read_data(value: str, limit: int = MAX_INPUT_BYTES) -> tuple[str, str]:
    """The JSON text given to ``--data`` and a name for it in error messages; at most ``limit``
    bytes are read from a file or standard input (``@/dev/zero`` never ends)."""
    if value == "-":
        raw, source = read_limited(sys.stdin.buffer, limit, "Standard input"), "Standard input"
    elif value.startswith("@"):
        path = value[1:]
        if not path:
            raise UsageError("--data @ needs a file name, e.g. --data @schema.json.", code="bad_data")
        from contextware.core.inputs import read_input_file

        raw = read_input_file(path, f"--data {value}: the file {path}", limit=limit, code="bad_data")
        source = f"The file {path}"
    else:
        return value, "--data"
    try:
        return raw.decode("utf-8-sig"), source
    except UnicodeDecodeError:
        raise UsageError(f"{source} is not UTF-8 text; nothing was saved.", code="bad_encoding") from None


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    from contextware.store import kvstore

    values = values_of(args, STORE)
    request = STORE.check(values)  # everything is checked before the database or the value is read
    project = open_project(args)
    if isinstance(request.data, str):  # the command line's text: JSON, @FILE or - (standard input)
        # Pretty-printed JSON may shrink when compacted: read up to 4x the limit, kvstore.save decides.
        raw, source = read_data(request.data, 4 * kvstore.settings(project).max_bytes)
        request = replace(request, data=kvstore.parse_json(raw, source))
    return STORE.run(project, request, values)


def render_text(result: dict[str, Any]) -> str:
    if "data" in result:
        from contextware.cli.render import paint

        head = f"{result['namespace']}/{result['key']} ({result['size']} bytes, updated {result.get('updated_at')})"
        return paint(head, "bold") + "\n" + json.dumps(result["data"], indent=2, ensure_ascii=False)
    if "evicted" in result:
        verb = "Saved" if result["created"] else "Replaced"
        lines = [f"{verb} {result['namespace']}/{result['key']} ({result['size']} bytes)."]
        for e in result["evicted"]:
            lines.append(f"  evicted {e['namespace']}/{e['key']} ({e['size']} bytes): {e['reason']}, {e['policy']}")
        return "\n".join(lines)
    if "deleted" in result:
        lines = [f"Deleted {result['count']} value(s), {result['bytes_freed']} bytes."]
        lines += [f"  {d['namespace']}/{d['key']} ({d['size']} bytes)" for d in result["deleted"]]
        return "\n".join(lines)
    if "keys" in result and isinstance(result["keys"], list):
        if not result["keys"]:
            return "The store is empty." if result["namespace"] == "*" else f"Namespace {result['namespace']} is empty."
        lines = [f"{'NAMESPACE/KEY':40} {'BYTES':>9}  {'UPDATED':20}  ACCESSED"]
        for k in result["keys"]:
            lines.append(
                f"{k['namespace'] + '/' + k['key']:40} {k['size']:>9}  {k['updated_at'] or '':20}  {k['accessed_at'] or ''}"
            )
        return "\n".join(lines)
    lines = [
        f"{result['keys']} value(s), {result['bytes']} of {result['max_bytes']} bytes ({result['used']:.1%}); "
        f"at most {result['max_keys_per_namespace']} keys per namespace; eviction {result['eviction']}."
    ]
    if result.get("oldest"):
        o = result["oldest"]
        lines.append(
            f"Oldest value: {o['namespace']}/{o['key']} ({o['updated_at']}); last write {result['last_write']}."
        )
    for n in result["namespaces"]:
        lines.append(
            f"  {n['namespace']:24} {n['keys']:>3} keys {n['bytes']:>10} bytes  {n['eviction']:6}  last write {n['last_write']}"
        )
    return "\n".join(lines)
