"""Shared pytest configuration.

Inside Pyodide (``sys.platform == "emscripten"``, as run by ``build_scripts/pyodide_tools.py test``) there are
no subprocesses, sockets, threads or browsers, so tests marked ``host`` or ``browser`` are skipped there,
with the marker named in the skip reason. On CPython this file changes nothing.

A host-only module that imports a third-party peer (httpx, openai, ...) at module level still fails to
*collect* in Pyodide, before any marker is seen: import such peers inside the tests or with
``pytest.importorskip``.
"""

from __future__ import annotations

import sys

import pytest

IN_PYODIDE = sys.platform == "emscripten"

#: Markers whose tests need facilities Pyodide lacks (registered in pyproject.toml).
NOT_IN_PYODIDE = ("host", "browser")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Inside Pyodide, mark every ``host``/``browser`` test as skipped."""
    if not IN_PYODIDE:
        return
    for item in items:
        for name in NOT_IN_PYODIDE:
            if item.get_closest_marker(name) is not None:
                item.add_marker(pytest.mark.skip(reason=f"marked {name}: not available inside Pyodide"))
                break


@pytest.fixture
def no_safety_net(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exceptions raised inside a route escape the session instead of becoming ``protocol_error``
    ``envelope`` (``webclient._session._PAYLOAD_EXCEPTIONS``): for tests asserting that every
    malformed input is classified by an explicit check, not by the safety net."""
    import webclient._session

    monkeypatch.setattr(webclient._session, "_PAYLOAD_EXCEPTIONS", ())
