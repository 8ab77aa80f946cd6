"""The mutation tool's map from modules to tests names files and tests that exist.

A module renamed, a test file moved or a test renamed would otherwise surface only when someone next runs
``build_scripts/mutation.py`` (its unmutated run fails: "no tests ran" or "not found").
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.host

REPO = Path(__file__).resolve().parents[1]


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_tool", REPO / "build_scripts" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up while the class is built)
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@functools.cache
def defined_tests(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(node.name for node in ast.walk(tree)
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"))


def test_every_mapped_module_and_every_mapped_test_file_and_node_id_exists() -> None:
    table: dict[str, list[str]] = load_tool().MODULE_TESTS
    assert "demo_site/proxy.py" in table and "webclient/_sse.py" in table
    for module, tests in table.items():
        assert (REPO / module).is_file(), module
        assert tests, f"{module} maps to no tests"
        for test in tests:
            path, _, name = test.partition("::")
            assert path.startswith("tests/test_") and (REPO / path).is_file(), f"{module}: {test}"
            if name:
                assert name in defined_tests(REPO / path), f"{module}: no test {name} in {path}"


def test_the_lookup_finds_the_tests_a_file_defines_and_only_those() -> None:
    assert "test_no_such_test" not in defined_tests(REPO / "tests" / "test_demo_upstream.py")
    assert "test_proxy_never_logs_the_key" in defined_tests(REPO / "tests" / "test_demo_upstream.py")
