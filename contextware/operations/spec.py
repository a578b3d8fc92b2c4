"""The vocabulary of a declaration: ``Param`` (one input) and ``Operation`` (one behaviour).

Values only, standard library only: the front ends turn a ``Param`` into an argparse argument or an
MCP parameter schema, and the library function stays the one place that validates a value, so a bad
value gets the same error code through every door.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from contextware.core.errors import FieldError

# The Python types a parameter may hold (a list holds strings: comma-separated on the command line;
# an object is any JSON value: MCP passes it as is, the command line as text its door parses).
KINDS = (str, int, float, bool, list, object)


class Absent:
    """An input that was not given, where None is a value (JSON null is a value the store keeps)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = Absent()


def text_of(values: Mapping[str, object], name: str) -> str | None:
    """A text input as given (None when not given); a value of another type is a ``FieldError``."""
    value = values.get(name)
    if value is None or isinstance(value, str):
        return value
    raise FieldError("{field} must be text.", field=name)


def number_of(values: Mapping[str, object], name: str) -> int | None:
    """A whole-number input as given (None when not given); anything else is a ``FieldError``."""
    value = values.get(name)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise FieldError("{field} must be a whole number.", field=name)


def texts(value: object) -> tuple[str, ...]:
    """A list input's values: one text is one item (never split: a file name may hold a comma)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value) if isinstance(value, Iterable) else (str(value),)


@dataclass(frozen=True)
class Param:
    """One input of a behaviour.  ``name`` is the library keyword (and the MCP argument unless
    ``mcp_name``); ``flag`` the command line's (default ``--`` plus the name with dashes).  ``help``
    is the command line's text and ``mcp_help`` the MCP tool's when the two differ (the MCP text
    names MCP arguments).  ``choices`` and bounds are published in the MCP schema; the library
    function checks them.  ``positional``: on the command line also a positional argument of that
    metavar (given once, either way); ``required``: a call must give it.  ``path``: file paths,
    relative to the working directory on the command line and to the project root through MCP
    (whose server may run elsewhere); ``path_existing``: one missing under the root passes as given,
    so its error names it as given.  ``split``: a text holds several items, comma-separated.
    ``aliases``: more command-line flags; ``repeat``: the flag may be given more than once (its
    values a list of texts)."""

    name: str
    kind: type
    help: str
    default: Any = None
    choices: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    flag: str | None = None
    short: str | None = None
    metavar: str | None = None
    mcp_name: str | None = None
    mcp_help: str | None = None
    positional: str | None = None
    positional_help: str | None = None
    required: bool = False
    group: str | None = None
    cli: bool = True
    mcp: bool = True
    positional_only: bool = False
    path: bool = False
    path_existing: bool = False
    split: bool = False
    aliases: tuple[str, ...] = ()
    repeat: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise TypeError(f"{self.name}: a parameter holds one of {KINDS}, not {self.kind!r}")

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def mcp_argument(self) -> str:
        return self.mcp_name or self.name

    @property
    def mcp_description(self) -> str:
        return self.mcp_help or self.help


@dataclass(frozen=True)
class Operation:
    """One behaviour: ``name`` (the command, with its subcommand if any: ``memory get``), ``tool``
    (the MCP tool), ``script`` (``scripts/<script>.py``), ``function`` (the library function it
    runs, named from ``contextware.``), ``doc`` (what it does, for the README's table and the
    subcommand's help line), ``title``, ``summary`` (the command's description) and
    ``tool_summary`` (the MCP tool's, which names MCP arguments); its inputs in the order the doors
    show them, ``check`` (the values of every input by name -> a typed request, raising
    ``FieldError`` on a bad one, before anything heavy loads) and ``run`` (project, request, values
    -> the typed result's dict).  Routing: ``embeds`` (it loads the model), ``read_only`` (it
    changes nothing: safe to repeat), ``quick`` (the resident service answers it:
    ``service.client.QUICK``), ``in_process`` (long or it runs Gemini CLI: the MCP front never sends
    it to the service).  What a tool that writes does to the world, for its MCP annotations:
    ``destructive`` (it overwrites or removes), ``idempotent`` (twice is once: the MCP front may
    send it again), ``open_world`` (it may call Gemini's API, outside this machine); ``serialise``
    (an MCP call holds the project's call lock: not a long one), ``retry`` (a storage failure is
    tried once more on a fresh connection: not one that may have asked Gemini).  ``tool_text``:
    the MCP tool's text content for these values (default: the JSON result).  The standard-library
    routing lists are held to these by tests/unit/test_operations.py, since the warm path may not
    import this."""

    name: str
    tool: str
    script: str
    function: str
    doc: str
    title: str
    summary: str
    tool_summary: str
    params: tuple[Param, ...]
    check: Callable[[Mapping[str, object]], Any]
    run: Callable[[Any, Any, Mapping[str, object]], Mapping[str, object]]  # a JSON object, typed by each run
    embeds: bool = False
    read_only: bool = False
    quick: bool = False
    in_process: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False
    serialise: bool = True
    retry: bool = True
    tool_text: Callable[[Mapping[str, object]], Callable[[Mapping[str, object]], str] | None] | None = None

    @property
    def command(self) -> str:
        """The command (``memory`` of ``memory get``)."""
        return self.name.split(" ", 1)[0]

    @property
    def subcommand(self) -> str | None:
        """The subcommand (``get`` of ``memory get``), if any."""
        return self.name.partition(" ")[2] or None

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def cli_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.cli)

    @property
    def mcp_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.mcp)

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def field_names(self) -> dict[str, str]:
        """Library name -> command-line flag, for the inputs whose flag is not the default one."""
        return {p.name: p.cli_flag for p in self.params if p.flag}
