"""Shared pytest configuration.

Inside Pyodide (``sys.platform == "emscripten"``, as run by ``build_scripts/pyodide_tools.py test``) there are
no subprocesses, sockets, threads or browsers, so tests marked ``host`` or ``browser`` are skipped there,
with the marker named in the skip reason. On CPython it changes nothing, but for the order below.

A host-only module that imports a third-party peer (httpx, openai, ...) at module level still fails to
*collect* in Pyodide, before any marker is seen: import such peers inside the tests or with
``pytest.importorskip``.

On CPython, when ``WEBCLIENT_TEST_BROWSER_AFTER`` names a file (``build_scripts/test.sh`` sets it while the core
suite runs inside Pyodide alongside), the Chromium modules (``browser`` in their module ``pytestmark``) run last,
and the first of them waits until that file exists: their assertions on the main thread's responsiveness and on
render costs measure the page, and a 2-core machine also busy with the Pyodide run blocked the page's main thread
for 970 ms once (the bound is 800 ms; the same test alone: 117-147 ms).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

import pytest

IN_PYODIDE = sys.platform == "emscripten"

#: Markers whose tests need facilities Pyodide lacks (registered in pyproject.toml).
NOT_IN_PYODIDE = ("host", "browser")


#: A file whose existence lets the Chromium modules start (see the module docstring), else ``None``.
BROWSER_AFTER = os.environ.get("WEBCLIENT_TEST_BROWSER_AFTER") or None
#: How long the first Chromium test waits for it at most (the Pyodide run took 11-19 minutes on 2 cores in
#: the 2026-12-05 clones).
BROWSER_WAIT_LIMIT_S = 30 * 60.0


def chromium_module(item: pytest.Item) -> bool:
    """Whether ``item`` belongs to a module marked ``browser`` as a whole (the Chromium end-to-end modules)."""
    marks = getattr(getattr(item, "module", None), "pytestmark", [])
    return any(mark.name == "browser" for mark in (marks if isinstance(marks, list) else [marks]))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Inside Pyodide, mark every ``host``/``browser`` test as skipped. On CPython with :data:`BROWSER_AFTER`,
    move the Chromium modules to the end (their order, and every other test's, kept)."""
    if not IN_PYODIDE:
        if BROWSER_AFTER is not None:
            items[:] = [i for i in items if not chromium_module(i)] + [i for i in items if chromium_module(i)]
        return
    for item in items:
        for name in NOT_IN_PYODIDE:
            if item.get_closest_marker(name) is not None:
                item.add_marker(pytest.mark.skip(reason=f"marked {name}: not available inside Pyodide"))
                break


_browser_wait_done = False


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before the first Chromium test (and its fixtures), wait until :data:`BROWSER_AFTER` exists."""
    global _browser_wait_done
    if _browser_wait_done or BROWSER_AFTER is None or IN_PYODIDE or not chromium_module(item):
        return
    _browser_wait_done = True
    started = time.monotonic()
    done = Path(BROWSER_AFTER)
    while not done.exists() and time.monotonic() - started < BROWSER_WAIT_LIMIT_S:
        time.sleep(0.5)
    state = "ended" if done.exists() else f"still running after {BROWSER_WAIT_LIMIT_S / 60:.0f} min: not waiting longer"
    message = (f"\n[conftest] the Chromium tests start after {time.monotonic() - started:.0f} s of waiting for the "
               f"core suite inside Pyodide ({state})")
    config = getattr(item, "config", None)
    capture = config.pluginmanager.getplugin("capturemanager") if config is not None else None
    # On the terminal, not in the test's captured output.
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        print(message, file=sys.stderr, flush=True)


@pytest.fixture
def no_safety_net(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exceptions raised inside a route escape the session instead of becoming ``protocol_error``
    ``envelope`` (``webclient._session._PAYLOAD_EXCEPTIONS``): for tests asserting that every
    malformed input is classified by an explicit check, not by the safety net."""
    import webclient._session

    monkeypatch.setattr(webclient._session, "_PAYLOAD_EXCEPTIONS", ())
