"""What Pyodide's memory can hold: the measurements behind ``Limits.max_retained_chars`` (``webclient/_limits.py``).

    .venv/bin/python build_scripts/bench_memory.py [--skip-heap] [--skip-chromium] [--skip-session]

Three tables, each measured in a fresh Pyodide (npm ``pyodide`` from ``build/node``, fetched by
``build_scripts/setup_env.sh``):

* ``heap``: Python grows a list of strings until ``MemoryError`` -- 1 MiB strings of ASCII, BMP (2 bytes a
  character) and astral (4 bytes) characters, and 16-character ASCII fragments -- under Node, and (ASCII) in a
  Chromium page and a Chromium worker (Debian's ``/usr/bin/chromium`` through Playwright). Prints the characters
  held and the wasm heap size afterwards (``HEAPU8.length``; it never shrinks).
* ``v8``: the longest JavaScript string Node and Chromium accept (the page receives a result as one JSON string).
* ``session``: under Node, a real ``StreamSession`` (``openai-chat``, ceilings lifted) fed 2-8 Mi characters of
  text in deltas of 1-64 characters: traced Python memory per retained character while streaming, at the peak
  through ``finish()`` and ``to_dict()``, and with the ``json.dumps`` the browser bridge makes of the result.

Takes a few minutes (each heap row fills 4 GiB). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyodide_tools

REPO = Path(__file__).resolve().parents[1]
PYODIDE = REPO / "build" / "node" / "node_modules" / "pyodide"
CHROMIUM = "/usr/bin/chromium"

#: Python run inside Pyodide: fill the heap with ``PIECE``-character strings of ``chr(CODE)``.
FILL = """
import gc
ch, piece = chr({code}), {piece}
held, total = [], 0
try:
    while True:
        held.append(ch * piece)
        total += piece
except MemoryError:
    pass
count = len(held)
del held
gc.collect()
f"{{total}} {{count}}"
"""

#: Python run inside Pyodide: a chat session's memory per retained character (tracemalloc).
SESSION = """
import gc, json, sys, tracemalloc
sys.path.insert(0, "/repo")
from webclient import Limits, StreamSession

big = 1 << 30
limits = Limits(max_text_chars=big, max_line_chars=big, max_event_chars=big, max_retained_chars=big)
rows = []
shapes = ((\"ascii, 4-char deltas\", \"abcd\", 1 << 21), (\"CJK, 2-char deltas\", \"\\u65e5\\u672c\", 1 << 21),
          (\"emoji, 1-char deltas\", \"\\U0001F600\", 1 << 21), (\"ascii, 64-char deltas\", \"a\" * 64, 1 << 17))
for name, piece, count in shapes:
    event = ('data: {"choices":[{"index":0,"delta":{"content":%s}}]}\\n\\n' % json.dumps(piece)).encode()
    end = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\\n\\ndata: [DONE]\\n\\n'
    gc.collect()
    tracemalloc.start()
    session = StreamSession("openai-chat", limits=limits)
    session.open(200, "text/event-stream")
    for _ in range(count // 256):
        session.feed(event * 256)
    streaming = tracemalloc.get_traced_memory()[0]
    session.feed(end)
    result = session.finish()
    data = result.to_dict()
    peak_result = tracemalloc.get_traced_memory()[1]
    text = json.dumps(data)
    peak_json = tracemalloc.get_traced_memory()[1]
    chars = len(result.text)
    rows.append([name, chars, result.outcome.value, streaming / chars, peak_result / chars, len(text) / chars,
                 peak_json / chars])
    tracemalloc.stop()
    del session, result, data, text
json.dumps(rows)
"""

NODE_RUNNER = """
import {{ loadPyodide }} from {module};
import fs from "node:fs";
const py = await loadPyodide();
py.FS.mkdirTree("/repo");
py.FS.mount(py.FS.filesystems.NODEFS, {{ root: {repo} }}, "/repo");
let out;
try {{ out = String(py.runPython(fs.readFileSync(process.argv[2], "utf8"))); }}
catch (e) {{ out = "error " + String(e).split("\\n").slice(-3).join(" "); }}
console.log(JSON.stringify({{ out, heap: py._module.HEAPU8.length }}));
"""

#: JS function: the longest of V8's documented limit (2**29 - 24) and one more that ``repeat`` accepts.
V8_PROBE = "() => { let ok = 0; for (const n of [2 ** 29 - 24, 2 ** 29 - 23]) { try { 'a'.repeat(n); ok = n; } " \
           "catch (e) { break; } } return ok; }"


def run_node(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh Pyodide under Node: ``{"out": str, "heap": bytes}``."""
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        runner = Path(tmp) / "run.mjs"
        runner.write_text(NODE_RUNNER.format(module=json.dumps((PYODIDE / "pyodide.mjs").as_uri()),
                                             repo=json.dumps(str(REPO))))
        script = Path(tmp) / "code.py"
        script.write_text(code)
        proc = subprocess.run(["node", *pyodide_tools.pyodide_node_flags("node"), str(runner), str(script)],
                              capture_output=True, text=True, timeout=900, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"node exited {proc.returncode}: {proc.stderr[-500:]}")
    result: dict[str, object] = json.loads(lines[-1])
    return result


def v8_node() -> int:
    proc = subprocess.run(["node", "-e", f"console.log(({V8_PROBE})())"], capture_output=True, text=True,
                          timeout=120, check=True)
    return int(proc.stdout.strip())


PAGE = "<!doctype html><title>m</title><script type=module src=/main.mjs></script>"
PAGE_MAIN = """
import { loadPyodide } from "/pyodide/pyodide.mjs";
const py = await loadPyodide({indexURL: "/pyodide/"});
const code = await (await fetch("/code.py")).text();
let out; try { out = String(py.runPython(code)); } catch (e) { out = "error " + String(e).slice(-300); }
window.RESULT = {out, heap: py._module.HEAPU8.length}; document.title = "done";
"""
WORKER_MAIN = """
const w = new Worker("/worker.mjs", {type: "module"});
w.onmessage = (e) => { window.RESULT = e.data; document.title = "done"; };
"""
WORKER = """
import { loadPyodide } from "/pyodide/pyodide.mjs";
const py = await loadPyodide({indexURL: "/pyodide/"});
const code = await (await fetch("/code.py")).text();
let out; try { out = String(py.runPython(code)); } catch (e) { out = "error " + String(e).slice(-300); }
postMessage({out, heap: py._module.HEAPU8.length});
"""
_TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
          ".json": "application/json"}


def run_chromium(code: str | None, worker: bool) -> dict[str, object]:
    """Run ``code`` in a fresh Pyodide in a Chromium page (or its worker); ``code=None`` probes V8's string limit."""
    from playwright.sync_api import Route, sync_playwright

    files = {"/": (PAGE, "text/html"), "/main.mjs": (WORKER_MAIN if worker else PAGE_MAIN, "text/javascript"),
             "/worker.mjs": (WORKER, "text/javascript"), "/code.py": (code or "", "text/plain")}

    def serve(route: Route) -> None:
        path = "/" + route.request.url.split("://", 1)[1].split("/", 1)[1]
        if path in files:
            body, ctype = files[path]
            route.fulfill(body=body, content_type=ctype)
        elif path.startswith("/pyodide/") and (PYODIDE / path[9:]).is_file():
            target = PYODIDE / path[9:]
            route.fulfill(body=target.read_bytes(), content_type=_TYPES.get(target.suffix, "application/octet-stream"))
        else:
            route.fulfill(status=404, body="")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            context = browser.new_context()
            context.route("http://bench-memory.invalid/**", serve)
            page = context.new_page()
            page.goto("http://bench-memory.invalid/")
            if code is None:
                return {"out": page.evaluate(V8_PROBE), "heap": 0}
            page.wait_for_function("document.title === 'done'", timeout=900_000)
            result: dict[str, object] = page.evaluate("window.RESULT")
            return result
        finally:
            browser.close()


def fill(code: int, piece: int) -> str:
    return FILL.format(code=code, piece=piece)


def heap_rows(chromium: bool) -> None:
    print("heap: Python strings held until MemoryError")
    print(f"  {'runtime':<18} {'strings of':<26} {'Mi chars held':>14} {'heap after (bytes)':>20}")
    runs = [("node", 0x61, 1 << 20, "ASCII, 1 MiB"), ("node", 0x65E5, 1 << 20, "BMP (2 B/char), 1 MiB"),
            ("node", 0x1F600, 1 << 20, "astral (4 B/char), 1 MiB"), ("node", 0x61, 16, "ASCII, 16 chars")]
    if chromium:
        runs += [("chromium page", 0x61, 1 << 20, "ASCII, 1 MiB"), ("chromium worker", 0x61, 1 << 20, "ASCII, 1 MiB")]
    for runtime, code, piece, label in runs:
        start = time.perf_counter()
        if runtime == "node":
            got = run_node(fill(code, piece))
        else:
            got = run_chromium(fill(code, piece), worker=runtime.endswith("worker"))
        total = int(str(got["out"]).split()[0]) if not str(got["out"]).startswith("error") else -1
        print(f"  {runtime:<18} {label:<26} {total / 2**20:>14.1f} {got['heap']:>20}   "
              f"({time.perf_counter() - start:.0f} s)", flush=True)


def v8_rows(chromium: bool) -> None:
    print("v8: longest string accepted")
    print(f"  node      {v8_node()}")
    if chromium:
        print(f"  chromium  {run_chromium(None, worker=False)['out']}")


def session_rows() -> None:
    got = run_node(SESSION)
    rows = json.loads(str(got["out"]))
    print("session (openai-chat under Node): traced bytes per retained character")
    print(f"  {'text':<24} {'chars':>9} {'streaming':>10} {'peak to_dict':>13} {'json chars':>11} {'peak json':>10}")
    for name, chars, outcome, streaming, peak, json_chars, peak_json in rows:
        assert outcome == "complete", outcome
        print(f"  {name:<24} {chars:>9} {streaming:>10.1f} {peak:>13.1f} {json_chars:>11.1f} {peak_json:>10.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-heap", action="store_true")
    ap.add_argument("--skip-chromium", action="store_true")
    ap.add_argument("--skip-session", action="store_true")
    args = ap.parse_args()
    if not PYODIDE.is_dir():
        print(f"no Pyodide at {PYODIDE}: run bash build_scripts/setup_env.sh", file=sys.stderr)
        return 2
    if not args.skip_heap:
        heap_rows(not args.skip_chromium)
    v8_rows(not args.skip_chromium)
    if not args.skip_session:
        session_rows()
    return 0


if __name__ == "__main__":
    sys.exit(main())
