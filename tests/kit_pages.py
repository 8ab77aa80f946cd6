"""Pages and static servers for the widget-kit end-to-end tests (tests/test_kit_e2e.py).

* :func:`static_server`: a bare stdlib ``http.server`` on 127.0.0.1 (port 0) in a thread, the kind of static host a
  widget author copies the kit folder to: no compression, no caching rules, optionally a CSP header.
* ``WIDGET_RECORDER_JS``: an init script snapshotting what the example widget shows (answer, status, each Run
  button's enabled state) after every DOM change, so a test can assert on the whole history of an attempt.
* ``KIT_API_JS``: drives the kit's API from a page (a second client beside the widget's): a throwing consumer,
  caller bugs, an AbortSignal, a closed client.
* :func:`options_page`: a page exposing one kit client's ``stream()`` to the test (every stream option).
* :func:`stock_page`: a page that uses the kit folder's runtime as plain Pyodide, the way the README's micropip
  note describes (stock ``loadPyodide`` + ``loadPackage("micropip")`` + ``micropip.install``), and runs
  ``start_stream`` with the default fast path under a CSP that refuses eval.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

#: The demo's Content-Security-Policy for scripts: no eval, WebAssembly allowed.
STRICT_SCRIPT_SRC = "script-src 'self' 'wasm-unsafe-eval'"


@contextlib.contextmanager
def static_server(root: Path, *, csp: str | None = None) -> Iterator[str]:
    """Serve ``root`` over HTTP on 127.0.0.1 (an ephemeral port) in a thread; yield the base URL; stop on exit."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map: ClassVar[dict[str, str]] = {
            **http.server.SimpleHTTPRequestHandler.extensions_map,
            ".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm"}

        def end_headers(self) -> None:
            if csp is not None:
                self.send_header("Content-Security-Policy", csp)
            super().end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, name="bare-static", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


WIDGET_RECORDER_JS = """
(() => {
  const rec = window.__widget = { snaps: [], violations: [], last: "" };
  document.addEventListener("securitypolicyviolation",
                            (e) => rec.violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  const text = (sel) => { const el = document.querySelector(sel); return el ? el.textContent : null; };
  function snap() {
    const s = { answer: text("#answer"), status: text("#status"),
                runs: Array.from(document.querySelectorAll("#tools button"), (b) => !b.disabled) };
    const key = JSON.stringify(s);
    if (key !== rec.last) { rec.last = key; s.t = performance.now(); rec.snaps.push(s); }
  }
  new MutationObserver(snap).observe(document, { subtree: true, childList: true, characterData: true,
                                                 attributes: true });
  rec.reset = () => { rec.snaps = []; rec.last = ""; };
})();
"""

#: ``([kitURL, endpoint]) => report``: boots a second client from the page and drives the API's edge cases.
KIT_API_JS = """
async ([kitURL, endpoint]) => {
  const kit = await import(kitURL);
  const client = await kit.createClient();
  const chat = (scenario, extra = {}) => client.stream({
    route: "openai-chat", url: new URL("/v1/chat/completions", endpoint),
    headers: { "x-demo-scenario": scenario },
    body: { model: "m", stream: true, messages: [{ role: "user", content: "hello" }] }, ...extra });
  const failure = async (promise) => {
    try { await promise; return null; } catch (err) {
      return { name: err.name, message: err.message, isUsage: err instanceof kit.WebclientUsageError };
    }
  };
  const report = { fastPath: client.fastPath, versions: client.versions, reported: [] };
  window.addEventListener("error", (e) => report.reported.push(String(e.error && e.error.message)));

  // A consumer that throws at its first update: the stream's result is untouched.
  const thrown = chat("plain");
  let caught = null;
  try { for await (const update of thrown) throw new Error(`consumer bug at ${update.kind}`); }
  catch (err) { caught = err.message; }
  const kept = await thrown.result;
  report.throwingConsumer = { caught, outcome: kept.outcome, text: kept.text, committed: kept.committed };

  // An onChunk callback that throws: reported, the result untouched.
  const chunky = chat("plain", { onChunk: () => { throw new Error("onChunk bug"); } });
  report.throwingOnChunk = (await chunky.result).outcome;

  // Caller bugs: one-line WebclientUsageError, found in JS or in Python; the iteration throws it too.
  report.usage = {
    unknownKey: await failure(client.stream({ route: "openai-chat", url: "/x", bogus: 1 }).result),
    badDeadline: await failure(chat("plain", { deadlines: { idle_ms: -1 } }).result),
    badRoute: await failure(chat("plain", { route: "no-such-route" }).result),
    badLimit: await failure(chat("plain", { limits: { max_no_such_thing: 5 } }).result),
    iterate: await failure((async () => { for await (const u of chat("plain", { body: () => 1 })) void u; })()),
  };
  const twice = chat("plain");
  for await (const u of twice) void u;
  report.usage.iterateTwice = await failure((async () => { for await (const u of twice) void u; })());

  // An AbortSignal cancels; an already aborted one cancels at once.
  const controller = new AbortController();
  const slow = chat("slow_drip", { signal: controller.signal });
  for await (const update of slow) { if (update.kind === "text_delta") { controller.abort(); break; } }
  const aborted = await slow.result;
  report.signal = { outcome: aborted.outcome, stage: aborted.stage };
  report.preAborted = (await chat("plain", { signal: AbortSignal.abort() }).result).outcome;

  // A closed client refuses new streams.
  await client.close();
  report.usage.closed = await failure(chat("plain").result);
  return report;
}
"""


def stock_page(runtime_dir: str, wheel_path: str) -> dict[str, str]:
    """Files of a page (relative to a root that also holds the kit at ``webclient/``) using the kit's runtime as
    stock Pyodide: ``loadPackage("micropip")`` from the runtime's own lock, ``micropip.install`` of our wheel, then
    one ``start_stream`` with the default ``fast`` over a scripted response. Sets ``window.__stock``."""
    script = f"""
import {{ loadPyodide }} from "./webclient/{runtime_dir}/pyodide.mjs";
try {{
  const py = await loadPyodide({{ indexURL: new URL("./webclient/{runtime_dir}/", location.href).href }});
  const loaded = await py.loadPackage("micropip");
  await py.pyimport("micropip").install(new URL("./webclient/{wheel_path}", location.href).href);
  const browser = py.pyimport("webclient.browser");
  const enc = new TextEncoder();
  const chunk = (delta, finish) => enc.encode("data: " + JSON.stringify({{ id: "c", object: "chat.completion.chunk",
    created: 1, model: "m", choices: [{{ index: 0, delta, finish_reason: finish }}] }}) + "\\n\\n");
  const body = [chunk({{ role: "assistant", content: "Hello from" }}, null), chunk({{ content: " the pump" }}, null),
                chunk({{}}, "stop"), enc.encode("data: [DONE]\\n\\n")];
  const fetch = async () => new Response(new ReadableStream({{
    start(c) {{ for (const b of body) c.enqueue(b); c.close(); }} }}),
    {{ headers: {{ "content-type": "text/event-stream" }} }});
  const handle = browser.start_stream({{ url: "https://model.invalid/v1/chat/completions", route: "openai-chat",
                                        body: {{ model: "m", stream: true }}, fetch }});
  const result = await handle.result;
  window.__stock = {{ micropip: loaded.map((p) => p.name), fastPath: browser.fast_path(), outcome: result.outcome,
                     text: result.text }};
}} catch (err) {{
  window.__stock = {{ error: String(err && err.stack || err) }};
}}
"""
    html = ('<!doctype html><meta charset="utf-8"><title>stock Pyodide</title><link rel="icon" href="data:,">'
            '<script type="module" src="stock.mjs"></script>\n')
    return {"stock.html": html, "stock.mjs": script}


def cross_origin_page() -> dict[str, str]:
    """A page that imports the kit from another origin (``?kit=URL``) and streams from ``?endpoint=ORIGIN``;
    sets ``window.__cross``."""
    script = """
const knobs = new URLSearchParams(location.search);
try {
  const { createClient } = await import(knobs.get("kit"));
  const client = await createClient();
  const stream = client.stream({ route: "openai-chat", url: new URL("/v1/chat/completions", knobs.get("endpoint")),
    headers: { "x-demo-scenario": "tool" }, tools: { get_weather: { type: "object" } },
    body: { model: "m", stream: true, messages: [{ role: "user", content: "weather?" }] } });
  const kinds = [];
  for await (const update of stream) kinds.push(update.kind);
  const result = await stream.result;
  window.__cross = { kinds, outcome: result.outcome, text: result.text,
                     ready: result.tool_calls.map((c) => c.ready), fastPath: client.fastPath };
} catch (err) {
  window.__cross = { error: String(err && err.stack || err) };
}
"""
    html = ('<!doctype html><meta charset="utf-8"><title>cross-origin kit</title><link rel="icon" href="data:,">'
            '<script type="module" src="cross.mjs"></script>\n')
    return {"cross.html": html, "cross.mjs": script}


#: ``() => [url, ...]``: the keys of the kit's memory-snapshot store in this origin's Cache Storage.
SNAPSHOT_KEYS_JS = "async () => (await (await caches.open('webclient-snapshots')).keys()).map((r) => r.url)"


def options_page() -> dict[str, str]:
    """A page beside a copy of the kit folder (``webclient/``) that boots one client (``?snapshot=0``: with
    ``{snapshot: false}``) and exposes ``window.run(options)``: one attempt with ``options`` (a relative ``url`` is
    the page's server) -> ``{kinds, result, ms}``, or ``{error: {name, message, isUsage}}`` when it rejects. Sets
    ``window.__ready`` and ``window.__snapshot`` (the client's ``snapshot``)."""
    script = """
import { createClient, WebclientUsageError } from "./webclient/webclient.mjs";
const client = await createClient({ snapshot: new URLSearchParams(location.search).get("snapshot") !== "0" });
window.__snapshot = client.snapshot;
window.run = async (options) => {
  const started = performance.now();
  const stream = client.stream({ body: { model: "m", stream: true }, ...options });
  const kinds = [];
  try {
    for await (const update of stream) kinds.push(update.kind);
    return { kinds, result: await stream.result, ms: performance.now() - started };
  } catch (err) {
    return { error: { name: err.name, message: err.message, isUsage: err instanceof WebclientUsageError } };
  }
};
window.__ready = true;
"""
    html = ('<!doctype html><meta charset="utf-8"><title>kit options</title><link rel="icon" href="data:,">'
            '<script type="module" src="options.mjs"></script>\n')
    return {"options.html": html, "options.mjs": script}
