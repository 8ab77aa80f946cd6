"""The suite's own scheduling (``tests/conftest.py``): with ``WEBCLIENT_TEST_BROWSER_AFTER`` set, as
``build_scripts/test.sh`` sets it while the core suite runs inside Pyodide alongside, the Chromium modules run
last and the first of their tests waits for that file; without it nothing moves and nothing waits."""

from __future__ import annotations

import time
import types
from pathlib import Path
from typing import Any

import pytest

from tests import conftest

pytestmark = pytest.mark.host


def fake_item(module: str, marks: object) -> Any:
    """What the hooks read of a test: its module and that module's ``pytestmark``."""
    return types.SimpleNamespace(module=types.SimpleNamespace(pytestmark=marks), name=module)


BROWSER = [pytest.mark.browser, pytest.mark.host]


def test_with_the_variable_the_chromium_modules_move_to_the_end_in_their_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "BROWSER_AFTER", "/nonexistent")
    items = [fake_item("a", []), fake_item("e2e-1", BROWSER), fake_item("b", pytest.mark.host),
             fake_item("e2e-2", pytest.mark.browser), fake_item("c", [pytest.mark.slow])]

    conftest.pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]

    assert [i.name for i in items] == ["a", "b", "c", "e2e-1", "e2e-2"]


def test_without_the_variable_the_order_is_the_collected_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "BROWSER_AFTER", None)
    items = [fake_item("e2e", BROWSER), fake_item("a", [])]

    conftest.pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]

    assert [i.name for i in items] == ["e2e", "a"]


def test_only_a_browser_mark_on_the_whole_module_makes_it_a_chromium_module() -> None:
    item = types.SimpleNamespace(module=types.SimpleNamespace(pytestmark=pytest.mark.host))

    assert not conftest.chromium_module(item)  # type: ignore[arg-type]
    assert conftest.chromium_module(fake_item("e2e", BROWSER))


def test_the_first_chromium_test_waits_for_the_file_and_only_the_first(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    done = tmp_path / "pyodide-suite.done"
    monkeypatch.setattr(conftest, "BROWSER_AFTER", str(done))
    monkeypatch.setattr(conftest, "BROWSER_WAIT_LIMIT_S", 1.0)
    monkeypatch.setattr(conftest, "_browser_wait_done", False)

    conftest.pytest_runtest_setup(fake_item("a", []))  # not a Chromium test: no wait, the wait still ahead
    assert conftest._browser_wait_done is False

    started = time.monotonic()
    conftest.pytest_runtest_setup(fake_item("e2e-1", BROWSER))  # the file never appears: waits the limit
    assert time.monotonic() - started >= 1.0
    assert conftest._browser_wait_done is True

    started = time.monotonic()
    conftest.pytest_runtest_setup(fake_item("e2e-2", BROWSER))  # the wait is once
    assert time.monotonic() - started < 0.5


def test_the_wait_ends_as_soon_as_the_file_exists(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    done = tmp_path / "pyodide-suite.done"
    done.write_text("0\n")
    monkeypatch.setattr(conftest, "BROWSER_AFTER", str(done))
    monkeypatch.setattr(conftest, "BROWSER_WAIT_LIMIT_S", 60.0)
    monkeypatch.setattr(conftest, "_browser_wait_done", False)

    started = time.monotonic()
    conftest.pytest_runtest_setup(fake_item("e2e", BROWSER))

    assert time.monotonic() - started < 5.0
    assert conftest._browser_wait_done is True
