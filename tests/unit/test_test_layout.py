"""The tests' own layout: shared helpers live in tests/support/, and no test module imports from
``conftest`` or from another test module (a helper two tests need is moved to tests/support/)."""

from __future__ import annotations

import ast

import pytest

from tests.support.repo import REPO

TESTS = REPO / "tests"


def _imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import in ``source``, nested ones included; a relative import is
    returned with its leading dots."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found.append((node.lineno, module))
            if node.module in (None, "tests", "tests.unit", "tests.integration"):  # from tests import conftest
                found += [(node.lineno, f"{module}.{alias.name}".lstrip(".")) for alias in node.names]
    return found


def forbidden_imports(source: str) -> list[str]:
    """The imports in ``source`` that reach ``conftest`` or a test module (``test_*``), or are relative."""
    bad = []
    for line, module in _imported_modules(source):
        parts = module.split(".")
        if module.startswith(".") or "conftest" in parts or any(p.startswith("test_") for p in parts):
            bad.append(f"line {line}: {module}")
    return bad


def test_the_check_finds_what_it_forbids():
    assert forbidden_imports("from tests.conftest import SCRIPTS") == ["line 1: tests.conftest"]
    assert forbidden_imports("from conftest import run_script") == ["line 1: conftest"]
    assert forbidden_imports("import tests.unit.test_hooks") == ["line 1: tests.unit.test_hooks"]
    assert forbidden_imports("def f():\n    from tests.integration.test_mcp_server import call\n") == [
        "line 2: tests.integration.test_mcp_server"
    ]
    assert forbidden_imports("from test_store import _rows") == ["line 1: test_store"]
    assert forbidden_imports("from tests.unit import test_hooks") == ["line 1: tests.unit.test_hooks"]
    assert forbidden_imports("from . import helpers") == ["line 1: ."]
    assert forbidden_imports("import pytest\nfrom tests.support.repo import REPO\nfrom contextware import cli") == []


@pytest.mark.slow
def test_no_test_imports_conftest_or_another_test_module():
    modules = sorted(TESTS.rglob("test_*.py"))
    assert len(modules) > 50
    bad = {str(p.relative_to(REPO)): forbidden_imports(p.read_text()) for p in modules}
    assert {path: found for path, found in bad.items() if found} == {}


def test_support_and_conftest_import_no_test_module():
    paths = [TESTS / "conftest.py", *sorted((TESTS / "support").rglob("*.py"))]
    bad = {str(p.relative_to(REPO)): forbidden_imports(p.read_text()) for p in paths}
    assert {path: found for path, found in bad.items() if found} == {}


def test_helpers_live_in_support():
    """tests/ itself holds conftest.py and the unit, integration and support folders, and every test
    module sits in unit/ or integration/."""
    loose = sorted(p.name for p in TESTS.glob("*.py") if p.name != "conftest.py")
    assert loose == [], f"move {loose} to tests/support/"
    for path in TESTS.rglob("*.py"):
        rel = path.relative_to(TESTS)
        if rel.parts[0] == "support":
            assert not path.name.startswith("test_"), f"{rel}: a test module among the helpers"
        elif rel.parts[0] in ("unit", "integration"):
            assert path.name.startswith("test_"), f"{rel}: a helper among the tests; move it to tests/support/"
