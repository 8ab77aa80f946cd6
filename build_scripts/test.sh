#!/usr/bin/env bash
# The whole test suite from a fresh clone: set-up (idempotent), lint, types, then every test —
# CPython unit/property/fixture tests, the CLI contracts, the local-server transport tests, the
# same core suite inside Pyodide (Node), and the end-to-end demo tests in Debian's Chromium.
# Extra arguments go to pytest (e.g. `bash build_scripts/test.sh -k sse`).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
bash build_scripts/setup_env.sh
PY="$REPO/.venv/bin/python"
echo "[test] ruff check webclient"
"$PY" -m ruff check webclient
echo "[test] mypy --strict webclient"
"$PY" -m mypy
echo "[test] the core suite inside Pyodide (Node 20)"
"$PY" build_scripts/pyodide_tools.py test
echo "[test] pytest (CPython: unit, property, fixture, CLI, transport, in-Pyodide harness, browser e2e)"
"$PY" -m pytest -q -p no:cacheprovider "$@"
