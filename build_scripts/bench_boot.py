"""Boot of the widget kit in Chromium against bare ``loadPyodide()``: time to ready and wire bytes, cold and warm.

    .venv/bin/python build_scripts/bench_boot.py [--runs 5]

Builds the site (``pyodide_tools.py site``), serves it with the demo server (brotli sidecars, immutable caching of
the kit's content-hashed directories) and loads, in Debian's Chromium (Playwright, ``executable_path``):

* ``bare``: a page whose module script only runs ``await loadPyodide({indexURL, stdLibURL})`` on the main thread,
  with the kit's runtime directory (the same wasm and JS files) and npm's own ``python_stdlib.zip`` (served from a
  content-hashed directory of its own, cached like the kit's): Pyodide as distributed, the floor a page pays for
  Pyodide at all;
* ``bare, kit's stdlib``: the same with the kit's ``python_stdlib.zip`` (bytecode for the modules a boot imports;
  ``build_scripts/kit_stdlib.mjs``), to show what that file alone changes;
* ``kit``: a page that runs ``await createClient()`` (Pyodide in the kit's worker, webclient imported, the fast
  path registered; by default from a memory snapshot when an earlier boot stored one);
* ``kit, no snapshot``: the same with ``createClient({snapshot: false})``.

Each is loaded cold (a fresh browser context) and then reloaded (warm: what the HTTP cache and Cache Storage kept),
in two kinds of context: ``memory`` (``browser.new_context()``, an in-memory profile like a private window) and
``disk`` (``launch_persistent_context`` on a fresh profile directory: disk cache, Chromium's compiled-code cache).
Before the warm load of ``kit`` the benchmark waits until the snapshot the cold boot made is stored (its time after
ready is printed). Times are navigation start -> ready on the page's clock; bytes are counted at the server (the
``Content-Length`` of every 200 response it sent). Each run measures every variant once, in rotating order; the
table shows medians and the median of the per-run ratios to bare ``loadPyodide()`` in the same kind of context.
Targets (issue 13, item 4): ready <= 1.2x bare cold and warm, the wasm fetched once per boot, and a warm ready below
bare ``loadPyodide()``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aiohttp import web  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from demo_site import server as demo_server  # noqa: E402

sys.path.insert(0, str(REPO / "build_scripts"))
import pyodide_tools  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
TARGET_RATIO = 1.2
PAGE = """<!doctype html><meta charset="utf-8"><title>boot</title><link rel="icon" href="data:,">
<script type="module" src="__SCRIPT__"></script>
"""
BARE_SCRIPT = """import { loadPyodide } from "./webclient/__RUNTIME__/pyodide.mjs";
const stock = new URLSearchParams(location.search).get("stdlib") !== "kit";
await loadPyodide({ indexURL: new URL("./webclient/__RUNTIME__/", location.href).href,
                    ...(stock ? { stdLibURL: new URL("./__STOCK__/python_stdlib.zip", location.href).href } : {}) });
window.__ready = { at: performance.now() };
"""
KIT_SCRIPT = """import { createClient } from "./webclient/webclient.mjs";
const snapshot = new URLSearchParams(location.search).get("snapshot") !== "0";
const client = await createClient({ snapshot });
window.__ready = { at: performance.now(), snapshot: client.snapshot, bootMs: client.bootMs };
"""
#: name -> (page path, waits for a stored snapshot before the warm load)
VARIANTS = {"bare": ("/boot-bare.html", False), "bare, kit's stdlib": ("/boot-bare.html?stdlib=kit", False),
            "kit": ("/boot-kit.html", True), "kit, no snapshot": ("/boot-kit.html?snapshot=0", False)}
#: Bytes of the kit's stored snapshot(s) in this origin's Cache Storage (0: none stored yet).
SNAPSHOT_BYTES = """async () => {
  const cache = await caches.open("webclient-snapshots");
  let bytes = 0;
  for (const request of await cache.keys()) bytes += (await (await cache.match(request)).arrayBuffer()).byteLength;
  return bytes;
}"""


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


def build_site(site: Path) -> None:
    """Build the site into ``site`` and add the benchmark's pages and npm's ``python_stdlib.zip``."""
    subprocess.run([sys.executable, str(REPO / "build_scripts" / "pyodide_tools.py"), "site", str(site)], check=True)
    [runtime] = [p.name for p in (site / "webclient").iterdir() if p.name.startswith("runtime-")]
    stock_zip = pyodide_tools.PYODIDE_PKG / "python_stdlib.zip"
    stock = pyodide_tools.hashed_dir("stock", {"python_stdlib.zip": stock_zip})
    for old in site.glob("stock-*"):
        if old.name != stock:
            shutil.rmtree(old)
    pyodide_tools.copy_if_changed(stock_zip, site / stock / "python_stdlib.zip")
    bare = BARE_SCRIPT.replace("__RUNTIME__", runtime).replace("__STOCK__", stock)
    for name, script in (("bare", bare), ("kit", KIT_SCRIPT)):
        (site / f"boot-{name}.html").write_text(PAGE.replace("__SCRIPT__", f"boot-{name}.mjs"))
        (site / f"boot-{name}.mjs").write_text(script)


def load(page: Any, url: str, *, reload: bool) -> dict[str, Any]:
    """Navigate (or reload) and wait until ready; what the page recorded (``at``: ms from navigation start)."""
    if reload:
        page.reload(wait_until="commit")
    else:
        page.goto(url, wait_until="commit")
    page.wait_for_function("() => window.__ready !== undefined", timeout=180_000, polling=20)
    ready: dict[str, Any] = page.evaluate("() => window.__ready")
    return ready


def wait_for_snapshot(page: Any) -> tuple[float, int]:
    """Seconds until the kit's snapshot store holds an entry (the cold boot stores it after ready), and its bytes."""
    started = time.perf_counter()
    while (stored := page.evaluate(SNAPSHOT_BYTES)) == 0:
        if time.perf_counter() - started > 60:
            raise SystemExit("the kit stored no snapshot within 60 s")
        page.wait_for_timeout(20)
    return time.perf_counter() - started, stored


def measure(context: Any, url: str, counter: Counter, snapshot: bool) -> dict[str, Any]:
    """Cold load then reload in ``context``; times, bytes and requests of each."""
    page = context.new_page()
    counter.take()
    out: dict[str, Any] = {}
    for phase in ("cold", "warm"):
        ready = load(page, url, reload=phase == "warm")
        out[f"{phase}_ms"] = ready["at"]
        out[f"{phase}_snapshot"] = ready.get("snapshot", "")
        if phase == "cold" and snapshot:
            out["snapshot_stored_s"], out["snapshot_bytes"] = wait_for_snapshot(page)
        page.wait_for_timeout(300)  # let the last responses finish
        rows = counter.take()
        out[f"{phase}_bytes"] = sum(n for _, status, _, n in rows if status == 200)
        out[f"{phase}_requests"] = len(rows)
        out[f"{phase}_wasm_fetches"] = sum(1 for path, status, _, _ in rows
                                           if path.endswith("pyodide.asm.wasm") and status == 200)
    return out


@contextmanager
def contexts(playwright: Any, browser: Any, kind: str) -> Iterator[Any]:
    """A fresh context of ``kind``: "memory" (an in-memory profile) or "disk" (a new persistent profile)."""
    if kind == "memory":
        context = browser.new_context()
        try:
            yield context
        finally:
            context.close()
        return
    with tempfile.TemporaryDirectory(prefix="bench-boot-profile-") as profile:
        context = playwright.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=ARGS)
        try:
            yield context
        finally:
            context.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--site", type=Path, default=REPO / "build" / "bench-boot-site")
    args = parser.parse_args()
    build_site(args.site)
    counter = Counter()

    def app() -> web.Application:
        application = demo_server.build_app(static_dir=args.site)
        application.on_response_prepare.append(counter.on_prepare)
        return application

    server = demo_server.start_in_background(app_factory=app)
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    jobs = [(kind, name) for kind in ("memory", "disk") for name in VARIANTS]
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                for run in range(args.runs):
                    for kind, name in jobs[run % len(jobs):] + jobs[:run % len(jobs)]:
                        path, snapshot = VARIANTS[name]
                        with contexts(playwright, browser, kind) as context:
                            results.setdefault((kind, name), []).append(
                                measure(context, server.base_url + path, counter, snapshot))
            finally:
                browser.close()
    finally:
        server.stop()
    report(results, args.runs)
    return 0


def report(results: dict[tuple[str, str], list[dict[str, Any]]], runs: int) -> None:
    print(f"\nChromium boot ({time.strftime('%Y-%m-%d')}): median of {runs} runs, each in fresh contexts; ms from "
          "navigation start to ready; bytes counted at the server (Content-Length of 200 responses); ratio = median "
          "of the per-run ratios to bare loadPyodide() in the same kind of context")
    print(f"{'context':<8} {'page':<18} {'phase':<5} {'ms to ready':>12} {'ratio':>7} {'bytes sent':>12} "
          f"{'requests':>9} {'wasm fetches':>13}  snapshot")

    def ratio(ours: list[dict[str, Any]], bare: list[dict[str, Any]], key: str) -> float:
        """The median of the per-run ratios (the i-th row of each list is run i)."""
        return float(statistics.median(o[key] / b[key] for o, b in zip(ours, bare, strict=True)))

    verdicts = []
    for (kind, name), rows in results.items():
        bare = results[(kind, "bare")]
        for phase in ("cold", "warm"):
            def med(key: str, rows: list[dict[str, Any]] = rows, phase: str = phase) -> float:
                return float(statistics.median(r[f"{phase}_{key}"] for r in rows))
            r = ratio(rows, bare, f"{phase}_ms")
            states = sorted({row[f"{phase}_snapshot"] for row in rows} - {""})
            print(f"{kind:<8} {name:<18} {phase:<5} {med('ms'):>12,.0f} {r:>6.2f}x {med('bytes'):>12,.0f} "
                  f"{med('requests'):>9,.0f} {med('wasm_fetches'):>13,.0f}  {','.join(states)}")
            if name == "kit":
                verdicts.append(f"[{kind}] kit {phase}: {r:.2f}x bare loadPyodide() (target <= {TARGET_RATIO:g}x"
                                f"{', and < 1x' if phase == 'warm' else ''}): "
                                f"{'MET' if r <= TARGET_RATIO and (phase == 'cold' or r < 1) else 'MISSED'}")
        if name == "kit":
            stored = statistics.median(row["snapshot_stored_s"] for row in rows)
            size = statistics.median(row["snapshot_bytes"] for row in rows)
            print(f"{'':<8} {'':<18} the cold boot's snapshot was stored {stored * 1000:,.0f} ms after ready (median), "
                  f"{size:,.0f} bytes in Cache Storage")
    print()
    for line in verdicts:
        print(line)


if __name__ == "__main__":
    sys.exit(main())
