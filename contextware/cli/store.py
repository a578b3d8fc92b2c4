"""``store.py``: the namespaced session store (JSON values an agent wants back next session)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from contextware.cli import add_common, new_parser, open_project
from contextware.core.errors import UsageError
from contextware.core.system import MAX_INPUT_BYTES, read_limited

DESCRIPTION = """Keep structured state between sessions: JSON values under a namespace and a key
(baselines, inferred API schemas, noise rules, ...).

  save   --namespace N --key K --data JSON|@FILE|-   store a value (replaces an existing one)
  load   --namespace N --key K                       the value, as JSON
  list   [--namespace N]                             keys with size and times (no values)
  delete --namespace N --key K                       delete one key; --key '*' clears the namespace,
                                                     --namespace '*' clears the whole store
  stats  [--namespace N]                             size and keys per namespace, oldest value, last write

Limits (config.json in the data dir): store_max_bytes (10 MB of JSON per project),
store_max_keys_per_namespace (50). A save that would exceed one evicts other values in the same
write, by the namespace's policy: store_eviction "lru" (least recently loaded or saved first, the
default) or "oldest" (saved longest ago first), per namespace with store_eviction_by_namespace,
e.g. {"baselines": "oldest"}. Every eviction is listed under "evicted". A value larger than
store_max_bytes is refused.

Names: a namespace is 1-64 letters, digits, '_', '.', ':' or '-'; a key is 1-256 printable
characters without '*'. Exit codes: 0 ok; 2 bad input (invalid JSON, bad name, too-large value:
nothing is written) and also a key that does not exist (load/delete, error code not_found);
1 a runtime failure."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    ns_help = "namespace, e.g. baselines"
    s = sub.add_parser("save", help="store a JSON value under a namespace and key")
    s.add_argument("--namespace", required=True, help=ns_help)
    s.add_argument("--key", required=True, help="key within the namespace")
    s.add_argument(
        "--data",
        required=True,
        metavar="JSON|@FILE|-",
        help="the value: JSON text, @path to read a JSON file, or - to read standard input",
    )
    ld = sub.add_parser("load", help="print a stored value (missing key: exit 2, code not_found)")
    ld.add_argument("--namespace", required=True, help=ns_help)
    ld.add_argument("--key", required=True, help="key within the namespace")
    ls = sub.add_parser("list", help="keys with size, updated_at and accessed_at (no values)")
    ls.add_argument("--namespace", help="only this namespace (default: every namespace)")
    d = sub.add_parser("delete", help="delete a key, a namespace (--key '*') or everything (--namespace '*')")
    d.add_argument("--namespace", required=True, help="namespace, or '*' for the whole store")
    d.add_argument("--key", help="key to delete, or '*' for every key of the namespace")
    st = sub.add_parser("stats", help="size and keys per namespace, oldest value, last write, limits")
    st.add_argument("--namespace", help="show only this namespace (totals stay the project's)")
    for action in sub.choices.values():
        add_common(action)
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


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from contextware.store import kvstore

    action = args.action
    if action == "save":
        # Validate everything before touching the database: bad input writes nothing.
        kvstore.check_namespace(args.namespace)
        kvstore.check_key(args.key)
        project = open_project(args)
        # Pretty-printed JSON may shrink when compacted: read up to 4x the limit, kvstore.save decides.
        text, source = read_data(args.data, 4 * kvstore.settings(project)["max_bytes"])
        value = kvstore.parse_json(text, source)
        return kvstore.save(project, args.namespace, args.key, value)
    if action == "load":
        kvstore.check_namespace(args.namespace)
        kvstore.check_key(args.key)
        return kvstore.load(open_project(args), args.namespace, args.key)
    if action == "list":
        return kvstore.list_keys(open_project(args), args.namespace)
    if action == "delete":
        return kvstore.delete(open_project(args), args.namespace, args.key)
    return kvstore.stats(open_project(args), args.namespace)


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
