"""Boot of the widget kit in Chromium: wire bytes and time, cold and warm, against bare ``loadPyodide()``.

    .venv/bin/python build_scripts/bench_boot.py [--runs 3]

Builds the site (``pyodide_tools.py site``), serves it with the demo server, and loads in Debian's Chromium
(Playwright, ``executable_path``), each run in a fresh browser context (an empty HTTP cache):

* ``kit``: the README's example widget (``/examples/widget.html``) until it shows "Ready." (the kit's
  ``createClient()`` resolved: Pyodide booted in the kit's worker, webclient imported);
* ``bare``: a page whose module script only runs ``await loadPyodide({indexURL})`` from the kit's runtime directory
  on the main thread, the floor a page pays for Pyodide at all.

Each is loaded cold, then reloaded in the same context (warm: the HTTP cache holds what the server allowed).
Bytes are counted at the server (the ``Content-Length`` of every response it sends, by path and encoding) and
again from Playwright's network events (``request.sizes()``, which can undercount a streamed wasm). Times are
navigation start -> ready on the page's clock. Prints one table; medians over ``--runs``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aiohttp import web  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from demo_site import server as demo_server  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
BARE_PAGE = """<!doctype html><meta charset="utf-8"><title>bare</title><link rel="icon" href="data:,">
<script type="module" src="bare.mjs"></script>
"""
BARE_SCRIPT = """import { loadPyodide } from "./webclient/__RUNTIME__/pyodide.mjs";
await loadPyodide({ indexURL: new URL("./webclient/__RUNTIME__/", location.href).href });
document.title = "ready";
"""


class Counter:
    """Responses the server sent: (path, status, content-encoding, content-length)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, int, str, int]] = []

    async def on_prepare(self, request: web.Request, response: web.StreamResponse) -> None:
        self.rows.append((request.path, response.status, response.headers.get("Content-Encoding", "identity"),
                          response.content_length or 0))

    def take(self) -> list[tuple[str, int, str, int]]:
        rows, self.rows = self.rows, []
        return rows


def build_site(site: Path) -> str:
    """Build the site into ``site``, add the bare page; return the runtime directory's name."""
    subprocess.run([sys.executable, str(REPO / "build_scripts" / "pyodide_tools.py"), "site", str(site)],
                   check=True)
    [runtime] = [p.name for p in (site / "webclient").iterdir() if p.name.startswith("runtime-")]
    (site / "bare.html").write_text(BARE_PAGE)
    (site / "bare.mjs").write_text(BARE_SCRIPT.replace("__RUNTIME__", runtime))
    return runtime


def load(page: Any, url: str, ready: Callable[[Any], None], *, reload: bool) -> float:
    """Navigate (or reload) and wait until ready; milliseconds from navigation start on the page's clock."""
    if reload:
        page.reload(wait_until="commit")
    else:
        page.goto(url, wait_until="commit")
    ready(page)
    elapsed: float = page.evaluate("() => performance.now()")
    return elapsed


def widget_ready(page: Any) -> None:
    page.wait_for_function("() => document.querySelector('#status')?.textContent === 'Ready.'", timeout=180_000)


def bare_ready(page: Any) -> None:
    page.wait_for_function("() => document.title === 'ready'", timeout=180_000)


def measure(browser: Any, url: str, ready: Callable[[Any], None], counter: Counter) -> dict[str, Any]:
    context = browser.new_context()
    seen: list[int] = []
    context.on("requestfinished", lambda request: seen.append(max(0, request.sizes()["responseBodySize"])))
    try:
        page = context.new_page()
        counter.take()
        out: dict[str, Any] = {}
        for phase in ("cold", "warm"):
            seen.clear()
            out[f"{phase}_ms"] = load(page, url, ready, reload=phase == "warm")
            time.sleep(0.3)  # let the last responses finish
            rows = counter.take()
            out[f"{phase}_bytes"] = sum(n for _, status, _, n in rows if status == 200)
            out[f"{phase}_requests"] = len(rows)
            out[f"{phase}_304"] = sum(1 for _, status, _, _ in rows if status == 304)
            out[f"{phase}_wasm_fetches"] = sum(1 for path, status, _, _ in rows
                                               if path.endswith("pyodide.asm.wasm") and status == 200)
            out[f"{phase}_encodings"] = sorted({enc for _, status, enc, _ in rows if status == 200})
            out[f"{phase}_pw_bytes"] = sum(seen)
        return out
    finally:
        context.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--site", type=Path, default=REPO / "build" / "bench-boot-site")
    args = parser.parse_args()
    build_site(args.site)
    counter = Counter()

    def app() -> web.Application:
        application = demo_server.build_app(static_dir=args.site)
        application.on_response_prepare.append(counter.on_prepare)
        return application

    server = demo_server.start_in_background(app_factory=app)
    results: dict[str, list[dict[str, Any]]] = {"kit": [], "bare": []}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                for _ in range(args.runs):
                    results["kit"].append(measure(browser, server.base_url + "/examples/widget.html",
                                                  widget_ready, counter))
                    results["bare"].append(measure(browser, server.base_url + "/bare.html", bare_ready, counter))
            finally:
                browser.close()
    finally:
        server.stop()
    print(f"Chromium boot, median of {args.runs} fresh contexts ({time.strftime('%Y-%m-%d')}); "
          "bytes counted at the server (Content-Length of 200 responses) / by Playwright (request.sizes)")
    print(f"{'what':<6} {'phase':<5} {'ms to ready':>12} {'server bytes':>14} {'playwright bytes':>17} "
          f"{'requests':>9} {'304s':>5} {'wasm fetches':>13}  encodings")
    for name, runs in results.items():
        for phase in ("cold", "warm"):
            def med(key: str, runs: list[dict[str, Any]] = runs, phase: str = phase) -> float:
                return statistics.median(r[f"{phase}_{key}"] for r in runs)
            print(f"{name:<6} {phase:<5} {med('ms'):>12,.0f} {med('bytes'):>14,.0f} {med('pw_bytes'):>17,.0f} "
                  f"{med('requests'):>9,.0f} {med('304'):>5,.0f} {med('wasm_fetches'):>13,.0f}  "
                  f"{','.join(runs[0][f'{phase}_encodings'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
