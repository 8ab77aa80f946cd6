#!/usr/bin/env bash
# The whole test suite from a fresh clone: set-up (idempotent), lint, types, then every test —
# CPython unit/property/fixture tests, the CLI contracts, the local-server transport tests, the
# same core suite inside Pyodide (Node), and the end-to-end demo tests in Debian's Chromium.
# Extra arguments go to the CPython pytest (e.g. `bash build_scripts/test.sh -k sse`).
#
# The core suite inside Pyodide is one Node process on one core, and the CPython pytest waits on
# browsers, servers and subprocesses for much of its run, so on a machine with two or more cores the
# two run side by side (the Pyodide run's output goes to build/pyodide-suite.log and is printed when
# it ends); WEBCLIENT_TEST_SERIAL=1, or a single core, runs them one after the other as before. They
# share no port and no file they both write: each wheel build lands in build/dist/ with one atomic
# rename, and the Pyodide run has read its wheel before the CPython tests rebuild it. The Chromium
# end-to-end modules, which assert on the page's responsiveness and render costs, run last and only
# once the Pyodide run has ended (WEBCLIENT_TEST_BROWSER_AFTER: tests/conftest.py), so that load
# from our own other suite is not measured as the page's.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
bash build_scripts/setup_env.sh
PY="$REPO/.venv/bin/python"

started=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)); }

serial=0
if [[ "${WEBCLIENT_TEST_SERIAL:-0}" == "1" ]] || (( $(nproc 2>/dev/null || echo 1) < 2 )); then
    serial=1
fi

pyodide_pid=""
PYODIDE_LOG="$REPO/build/pyodide-suite.log"
# Created when the background Pyodide run ends, however it ends: the Chromium tests wait for it.
PYODIDE_DONE="$REPO/build/pyodide-suite.done"
if (( serial == 0 )); then
    mkdir -p "$REPO/build"
    rm -f "$PYODIDE_DONE"
    echo "[test] the core suite inside Pyodide (Node 20): started alongside the rest, output in build/pyodide-suite.log"
    # In a process group of its own (setsid), so that whatever ends this script (a lint failure, ^C) ends the
    # whole background run, Node included. Its exit code is the Pyodide run's.
    setsid bash -c '"$0" build_scripts/pyodide_tools.py test > "$1" 2>&1 < /dev/null; rc=$?; : > "$2"; exit "$rc"' \
        "$PY" "$PYODIDE_LOG" "$PYODIDE_DONE" &
    pyodide_pid=$!
    export WEBCLIENT_TEST_BROWSER_AFTER="$PYODIDE_DONE"
    trap '[[ -n "$pyodide_pid" ]] && kill -- "-$pyodide_pid" 2>/dev/null || true' EXIT
fi

echo "[test] ruff check webclient"
"$PY" -m ruff check webclient
echo "[test] mypy --strict webclient"
"$PY" -m mypy

if (( serial == 1 )); then
    echo "[test] the core suite inside Pyodide (Node 20)"
    "$PY" build_scripts/pyodide_tools.py test
fi

echo "[test] pytest (CPython: unit, property, fixture, CLI, transport, in-Pyodide harness, browser e2e)"
set +e
"$PY" -m pytest -q -p no:cacheprovider "$@"
pytest_rc=$?
if (( serial == 1 )); then
    exit "$pytest_rc"
fi
echo "[test] CPython pytest exited $pytest_rc at $(elapsed); waiting for the core suite inside Pyodide"
wait "$pyodide_pid"
pyodide_rc=$?
pyodide_pid=""
set -e
echo "[test] the core suite inside Pyodide (Node 20) exited $pyodide_rc at $(elapsed); its output:"
cat "$PYODIDE_LOG"
if (( pytest_rc != 0 || pyodide_rc != 0 )); then
    echo "[test] FAILED: CPython pytest exit $pytest_rc, core suite inside Pyodide exit $pyodide_rc"
    exit 1
fi
echo "[test] all passed in $(elapsed) (after set-up)"
