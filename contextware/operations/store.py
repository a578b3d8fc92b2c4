"""Store: the namespaced session store of JSON values (``store.kvstore``), one action per call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from contextware.operations.spec import ABSENT, Absent, Operation, Param, text_of

if TYPE_CHECKING:
    from contextware.core.json_types import JsonValue
    from contextware.storage.project import Project
    from contextware.store.results import StoreAnswer

ACTIONS = ("save", "load", "list", "delete", "stats")
# The inputs each action takes besides itself.
TAKES = {
    "save": ("namespace", "key", "data"),
    "load": ("namespace", "key"),
    "list": ("namespace",),
    "delete": ("namespace", "key"),
    "stats": ("namespace",),
}

SUMMARY = """Keep structured state between sessions: JSON values under a namespace and a key
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

TOOL_SUMMARY = """Keep structured state between sessions: JSON values under a namespace and a key (a test or
    performance baseline, an API schema you inferred, noise rules). Not searched by recall; load the key
    you need. save replaces an existing value and may evict others to keep the limits (10 MB per project,
    50 keys per namespace by default; least recently used or oldest first), each listed under evicted.
    load returns data; a missing key is error not_found. list gives keys with size and times (no values),
    stats the size and keys per namespace, the oldest value, the last write and the limits."""

PARAMS = (
    Param(
        "action",
        str,
        "save, load, list, delete or stats",
        choices=ACTIONS,
        mcp_help="save, load, list, delete or stats.",
        positional="ACTION",
        positional_help="save, load, list, delete or stats",
        positional_only=True,
        required=True,
    ),
    Param(
        "data",
        object,
        "save: the value: JSON text, @path to read a JSON file, or - to read standard input",
        default=ABSENT,
        metavar="JSON|@FILE|-",
        mcp_help="save: the JSON value to store (any JSON: object, array, string, number, true/false, null).",
    ),
    Param(
        "namespace",
        str,
        "namespace, e.g. baselines ('*': every namespace, for delete); optional for list and stats",
        mcp_help="The namespace, e.g. baselines: 1-64 letters, digits, '_', '.', ':' or '-'. Required by save, load and delete ('*' deletes the whole store); optional for list and stats.",
    ),
    Param(
        "key",
        str,
        "key within the namespace (delete: '*' for every key of the namespace)",
        mcp_help="The key within the namespace: 1-256 printable characters without '*'. Required by save and load; delete: the key, or '*' for every key of the namespace.",
    ),
)


@dataclass(frozen=True)
class StoreRequest:
    """One action on the store, its names checked (``data``: the JSON value to save, or ``ABSENT``)."""

    action: str
    namespace: str | None
    key: str | None
    data: "JsonValue | Absent" = ABSENT


def check(values: Mapping[str, object]) -> StoreRequest:
    """The request of these values: a known action given only the inputs it takes, and for save
    and load a valid namespace and key; nothing is read or written yet."""
    from contextware.core.errors import FieldError, UsageError
    from contextware.store import kvstore

    action = values.get("action")
    if action not in ACTIONS:
        raise UsageError(f"Unknown action {action!r}: use one of {', '.join(ACTIONS)}.", code="bad_action")
    given = {
        "namespace": values.get("namespace") is not None,
        "key": values.get("key") is not None,
        "data": not isinstance(values.get("data", ABSENT), Absent),
    }
    extra = [name for name, present in given.items() if present and name not in TAKES[action]]
    if extra:
        raise FieldError(f"{{field}} does not apply to action {action}.", field=extra[0], code="bad_option")
    namespace, key = text_of(values, "namespace"), text_of(values, "key")
    if action in ("save", "load"):
        namespace, key = kvstore.check_namespace(namespace), kvstore.check_key(key)
    if action == "save" and not given["data"]:
        raise FieldError(
            "save needs {field}: the JSON value to store; nothing was saved.", field="data", code="bad_data"
        )
    data = values.get("data", ABSENT)  # a JSON value: parsed from --data, or an MCP argument
    return StoreRequest(action, namespace, key, data if isinstance(data, Absent) else cast("JsonValue", data))


def run(project: "Project", request: StoreRequest, values: Mapping[str, object]) -> "StoreAnswer":
    from contextware.store import kvstore

    if request.action == "save" and not isinstance(request.data, Absent):  # check() refuses a save without it
        return kvstore.save(project, str(request.namespace), str(request.key), request.data)
    if request.action == "load":
        return kvstore.load(project, str(request.namespace), str(request.key))
    if request.action == "list":
        return kvstore.list_keys(project, request.namespace)
    if request.action == "delete":
        return kvstore.delete(project, request.namespace or "", request.key)  # no namespace: its error
    return kvstore.stats(project, request.namespace)


STORE = Operation(
    name="store",
    tool="session_store",
    script="store",
    function="store.kvstore",
    doc="session store of JSON values, one `ACTION`: `save` (replaces a value), `load`, `list`, `delete` (`--key '*'` clears a namespace, `--namespace '*'` the project), `stats`; 10 MB / 50 keys per namespace by default, LRU or oldest-first eviction reported on every save",
    title="Session store (JSON values)",
    summary=SUMMARY,
    tool_summary=TOOL_SUMMARY,
    params=PARAMS,
    check=check,
    run=run,
    quick=True,
    destructive=True,
)
