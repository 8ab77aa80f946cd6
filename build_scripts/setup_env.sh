#!/usr/bin/env bash
# Set up a fresh clone (developer machine or CI, root or not); safe to run again: every step is skipped or a
# no-op when already done.
#
#   1. <repo>/.venv from the machine's python3 (>= 3.11), unless it exists;
#   2. pinned hatchling (our build backend) + editables + the project editable with extras test,bench,httpx,demo
#      (the test extra pins the Python playwright package; it drives the system Chromium via executable_path);
#   3. build_scripts/pyodide_tools.py fetch: npm runtime (pyodide 314.0.7) + pinned wheels into build/;
#   4. Debian chromium, only if /usr/bin/chromium is missing and we are root;
#   5. Debian fonts-noto-core, fonts-noto-cjk and fonts-noto-color-emoji (screenshots), only if missing and root.
# Never runs `playwright install` (no browser downloads). Network is needed only on the first run.
set -euo pipefail

HATCHLING_VERSION="1.33.0"     # same pin as [build-system] in pyproject.toml
EDITABLES_VERSION="0.6"        # hatchling's editable-install helper
EXTRAS="test,bench,httpx,demo"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/.venv"
PY="$VENV/bin/python"
say() { printf '[setup] %s\n' "$*"; }

if [[ ! -x "$PY" ]]; then
    PYTHON3="${PYTHON3:-python3}"
    command -v "$PYTHON3" >/dev/null || { say "python3 not found"; exit 1; }
    "$PYTHON3" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || { say "$("$PYTHON3" -V) is too old; need >= 3.11"; exit 1; }
    say "creating .venv with $("$PYTHON3" -V)"
    "$PYTHON3" -m venv "$VENV"
else
    say ".venv exists ($("$PY" -V))"
fi

PIP=("$PY" -m pip --disable-pip-version-check --quiet)
say "installing hatchling==$HATCHLING_VERSION, -e .[$EXTRAS] (pins in pyproject.toml)"
"${PIP[@]}" install "hatchling==$HATCHLING_VERSION" "editables==$EDITABLES_VERSION"
# No build isolation: the editable build uses the pinned hatchling just installed (pyodide_tools.py wheel too).
"${PIP[@]}" install --no-build-isolation -e "$REPO[$EXTRAS]"

say "fetching the pinned Pyodide runtime and wheels"
"$PY" "$REPO/build_scripts/pyodide_tools.py" fetch

if [[ -x /usr/bin/chromium ]]; then
    say "chromium present (/usr/bin/chromium)"
elif [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null; then
    say "installing Debian chromium"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
    say "chromium installed: $(/usr/bin/chromium --version 2>/dev/null | tail -n 1)"
else
    say "WARNING: /usr/bin/chromium missing and not root: browser tests will fail (install Debian 'chromium')"
fi

# Fonts for the demo's scripts and emoji (Noto core: Devanagari, Hebrew, Arabic...; CJK; colour emoji): without them
# Chromium draws tofu boxes, so the e2e screenshots (build/artifacts/) would show glyphs nobody sees in a real
# browser, and text metrics would differ from a real one's.
FONT_PACKAGES=(fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji)
missing_fonts=()
for package in "${FONT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing_fonts+=("$package")
done
if [[ ${#missing_fonts[@]} -eq 0 ]]; then
    say "fonts present (${FONT_PACKAGES[*]})"
elif [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null; then
    say "installing Debian fonts: ${missing_fonts[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing_fonts[@]}" >/dev/null
else
    say "WARNING: fonts missing and not root: ${missing_fonts[*]} (screenshots show tofu boxes)"
fi
say "done"
