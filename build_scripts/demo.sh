#!/usr/bin/env bash
# The main job from a fresh clone: set up (idempotent), build our wheel, assemble the static site
# with Pyodide served locally (no CDN), and start the demo server with its embedded
# CometAPI-shaped upstream on http://127.0.0.1:8000 (extra arguments go to the server, e.g.
# `--port 9000` or `--upstream https://api.cometapi.com` with COMETAPI_KEY set).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
bash build_scripts/setup_env.sh
PY="$REPO/.venv/bin/python"
"$PY" build_scripts/pyodide_tools.py site "$REPO/build/site"
exec "$PY" demo_site/server.py --static "$REPO/build/site" "$@"
