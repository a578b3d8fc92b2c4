"""Layering: scripts stay thin, heavy libraries are imported lazily, the package's layers only point
one way with no import cycle, and ARCHITECTURE.md names what exists."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

from tests.support.repo import HEAVY, REPO, SCRIPT_NAMES, SCRIPTS

# Scripts go through contextware.cli, except the long-lived MCP server and the hook, whose process start
# is paid on every turn (its entry imports only what its warm path needs).
FRONT_END = {"mcp_server": "contextware.hosts.mcp.front", "hook": "contextware.hosts.hooks.entry"}


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_scripts_are_thin(name):
    tree = ast.parse((SCRIPTS / f"{name}.py").read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(isinstance(n, ast.ImportFrom) and n.module == FRONT_END.get(name, "contextware.cli") for n in imports)
    assert len([n for n in tree.body if not isinstance(n, ast.Expr) or not isinstance(n.value, ast.Constant)]) <= 2


def _imports(path: Path) -> set[str]:
    mods = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            mods.add(("." * node.level) + (node.module or ""))
        elif isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
    return mods


def test_core_never_imports_the_cli():
    for path in (REPO / "contextware" / "core").glob("*.py"):
        assert not any("cli" in m.split(".") for m in _imports(path)), path


@pytest.mark.slow
def test_heavy_libraries_are_imported_lazily():
    """No module of the package imports a heavy library at module level."""
    for path in list((REPO / "contextware").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.split(".")[0] in HEAVY for n in names), f"{path.name} imports {names} at module level"


def test_no_module_is_huge():
    for path in (REPO / "contextware").rglob("*.py"):
        assert path.stat().st_size < 40_000, path


# -- the import graph: layers point one way, and no module imports another in a loop ---------------
# Rank of each top-level part of the package: a module may import its own part or a lower rank.
LAYERS: dict[str, float] = {
    # core/: the shared helpers, each ranked on its own (standard library only)
    "core.errors": 0,
    "core.json_types": 0,  # the shape of JSON values
    "core.settings": 0.5,  # the environment, read once per entry point
    "core.system": 1,
    "core.text": 1,
    "core.words": 1,
    "core.redact": 1.2,  # reads text.plain_text, the normal form it detects on
    "core.private": 1,  # file modes: private by default
    "core.inputs": 1.5,  # the bounded reader of user-named files (uses system.read_limited)
    "core.fence": 2,
    "core": 2,  # the package's own docstring
    "gemini": 2,
    "storage": 3,
    "service": 3.5,  # the resident service's stdlib client: hosts (hook entry) and cli reach it
    "codeindex": 4,
    "offload": 5,
    "store": 5.5,  # the session store (key-value JSON); the briefing lists its namespaces
    "memory": 6,
    "operations": 6.5,  # each behaviour declared once (inputs, checks, routing): cli and hosts build from it
    "hosts": 7,
    "browser": 7.5,  # the memory browser (contextware ui): pages over memory, run by the CLI
    "cli": 8,
    "resident": 9,  # the resident service runs the handlers of cli and hosts
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (at any depth of the file, TYPE_CHECKING included)."""
    return _graph_of(REPO)


@functools.cache
def _graph_of(repo: Path) -> dict[str, set[str]]:
    """``_import_graph`` of one copy of the package, parsed once per test process."""
    modules = {_module_name(p): p for p in (repo / "contextware").rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                    )
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.add(full if full in modules else base)
            elif isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
        graph[name] = {t for t in targets if t in modules and t != name and t != "contextware"}
    return graph


def _part(module: str) -> str:
    """The ranked part of a module: its top-level package, or ``core.<helper>`` for a shared helper."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "core":
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else ""


def test_every_part_of_the_package_has_a_layer():
    parts = {_part(m) for m in _import_graph()} - {""}
    assert parts <= set(LAYERS), f"unranked parts: {sorted(parts - set(LAYERS))}: add them to LAYERS"


def test_imports_never_go_up_the_layers():
    upward = [
        f"{src} -> {dst}"
        for src, targets in _import_graph().items()
        for dst in targets
        if _part(src) and _part(dst) and _part(src) != _part(dst) and LAYERS[_part(dst)] >= LAYERS[_part(src)]
    ]
    assert upward == []


def test_no_import_cycles():
    """Tarjan's strongly connected components: any component of more than one module is a cycle."""
    graph = _import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert cycles == []


@pytest.mark.slow
def test_the_layer_test_sees_a_planted_cycle_and_an_upward_import(tmp_path, monkeypatch):
    """The checks above can fail: a copy of the package with one upward import planted is caught."""
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(REPO / "contextware", copy / "contextware")
    (copy / "contextware" / "storage" / "planted.py").write_text(
        "from contextware.memory import records\nfrom contextware.storage import planted_too\n"
    )
    (copy / "contextware" / "storage" / "planted_too.py").write_text("from contextware.storage import planted\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", copy)
    with pytest.raises(AssertionError):
        test_imports_never_go_up_the_layers()
    with pytest.raises(AssertionError):
        test_no_import_cycles()


def test_architecture_map_names_every_package_and_only_files_that_exist():
    """ARCHITECTURE.md is the map a newcomer reads: every subpackage is on it, and every path it
    names exists (a renamed module must be renamed there too)."""
    import re

    text = (REPO / "ARCHITECTURE.md").read_text()
    packages = sorted(p.parent.name for p in (REPO / "contextware").glob("*/__init__.py"))
    assert [p for p in packages if f"`{p}/`" not in text] == []
    assert {p.split(".")[0] for p in LAYERS} == set(packages)
    named = set(re.findall(r"contextware/[\w/]+\.py", text))
    assert named and [p for p in sorted(named) if not (REPO / p).is_file()] == []


# The three rooms of hosts: each plugs Contextware in its own way and none imports another.
HOST_ROOMS = ("hooks", "mcp", "install")


def test_the_rooms_of_hosts_do_not_import_each_other():
    graph = _import_graph()
    rooms = {m: m.split(".")[2] for m in graph if m.startswith("contextware.hosts.") and m.count(".") >= 3}
    assert set(rooms.values()) == set(HOST_ROOMS), "a module of hosts/ outside its three rooms"
    crossing = [f"{src} -> {dst}" for src, room in rooms.items() for dst in graph[src] if rooms.get(dst, room) != room]
    assert crossing == []


@pytest.mark.parametrize("package", ["hosts", *(f"hosts.{room}" for room in HOST_ROOMS), "gemini"])
def test_a_package_docstring_says_what_it_owns_and_may_import(package):
    """The docstring of each room is its map: it names every module of the room and what it may import."""
    folder = REPO / "contextware" / package.replace(".", "/")
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
    modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    subpackages = sorted(p.parent.name for p in folder.glob("*/__init__.py"))
    assert [m for m in modules + subpackages if f"``{m}``" not in doc] == []
    assert "May import" in doc


def test_the_house_stays_small_enough_to_read():
    """Issue 31's limits: no module over 700 lines, no module docstring over 20 lines, at most 16
    entries at the package's top level."""
    too_long, long_docs = [], []
    for path in sorted((REPO / "contextware").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 700:
            too_long.append(f"{path.relative_to(REPO)}: {text.count(chr(10))} lines")
        doc = ast.get_docstring(ast.parse(text)) or ""
        if doc.count("\n") + 1 > 20:
            long_docs.append(f"{path.relative_to(REPO)}: {doc.count(chr(10)) + 1} docstring lines")
    assert too_long == [] and long_docs == []
    top = [p.name for p in (REPO / "contextware").iterdir() if p.name != "__pycache__"]
    assert len(top) <= 16, sorted(top)
