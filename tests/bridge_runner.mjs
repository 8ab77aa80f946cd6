// A long-lived Pyodide-in-Node process for the browser-bridge tests (tests/test_browser_bridge.py).
//
//   node tests/bridge_runner.mjs --pyodide DIR --wheel PATH [--mount HOST:GUEST]...
//
// Boots Pyodide from the local npm package (nothing from a CDN), installs the given wheels (our webclient wheel
// built by build_scripts/pyodide_tools.py), mounts host directories with NODEFS, prints one line
// {"ready": true, ...} and then answers one JSON command per stdin line:
//
//   {"id": 1, "code": "<python source>"}   ->   {"id": 1, "ok": true, "value": <JSON>}
//                                          or   {"id": 1, "ok": false, "error": "<traceback>"}
//
// The source runs with runPythonAsync in one shared globals namespace (top-level await allowed); its last
// expression must be a JSON string, which is passed through as "value". Stdout of Python goes to this process's
// stderr so that stdout carries only the protocol. Node 20 provides fetch, ReadableStream, Response and
// AbortController as globals, so webclient.browser runs here exactly as in a browser, against real sockets.
//
// globalThis.bridgeCounters() gives the FFI bookkeeping the leak tests compare: live hiwire references and live
// PyProxies (allocation tracing is switched on at boot, pyodide-notes §2.5).

import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";
import { pump } from "../demo_site/kit/pump.mjs";

function parseArgs(argv) {
  const opts = { pyodide: null, wheels: [], mounts: [] };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === "--pyodide") opts.pyodide = path.resolve(value);
    else if (flag === "--wheel") opts.wheels.push(path.resolve(value));
    else if (flag === "--mount") {
      const cut = value.lastIndexOf(":");
      opts.mounts.push([path.resolve(value.slice(0, cut)), value.slice(cut + 1)]);
    } else throw new Error(`unknown option ${flag}`);
  }
  if (!opts.pyodide) throw new Error("--pyodide DIR is required");
  return opts;
}

// A ReadableStream handing out exactly the given chunks (Uint8Arrays), one per pull, recording in `state` what was
// pulled and whether it was cancelled. Each chunk is there as soon as it is read for (all "queued", as from a fast
// network), or, with `spaced`, arrives in a task of its own (as chunks of a slow stream do); with `errorAfter`, the
// stream errors once that many chunks were pulled; with `stall`, it never ends after the last chunk. `onCancel` is
// called (synchronously) when the stream is cancelled; `onPulled(n)` in a microtask queued just after chunk n (from
// 1) was handed to the read that asked for it, so before the reader's caller resumes from another task.
function streamFrom(chunks, state, { spaced = false, errorAfter = null, stall = false, onCancel = null,
                                     onPulled = null } = {}) {
  let i = 0;
  const next = (ctl) => {
    if (errorAfter !== null && i >= errorAfter) ctl.error(new TypeError("network error"));
    else if (i < chunks.length) {
      state.pulled += 1;
      ctl.enqueue(chunks[i++]);
      if (onPulled) { const n = i; queueMicrotask(() => onPulled(n)); }
    } else if (!stall) ctl.close();
  };
  return new ReadableStream({
    pull(ctl) { if (!spaced) next(ctl); else return new Promise((resolve) => setTimeout(() => { next(ctl); resolve(); }, 0)); },
    cancel() { state.cancelled = true; onCancel?.(); },
  }, { highWaterMark: 0 });
}

// A fetch() stand-in answering every call with a Response whose body is streamFrom(chunks, ..., options); it
// records what was pulled and whether the body was cancelled.
function fetchFrom(chunks, status = 200, contentType = "text/event-stream", options = {}) {
  const state = { pulled: 0, cancelled: false, calls: 0 };
  const fetch = async (url, init) => {
    state.calls += 1;
    const headers = contentType === null ? {} : { "content-type": contentType };
    return new Response(streamFrom(chunks, state, options), { status, headers });
  };
  fetch.state = state;
  return fetch;
}

// Callbacks for start_stream that record what a JavaScript page would receive: the JSON of each object and
// whether it is a plain JS object (not a Python proxy). After `cancelAfter` updates it calls handle.cancel(); after
// `throwAfter` updates its onUpdate throws.
function collector(cancelAfter = 0, throwAfter = 0) {
  const plain = (o) => o !== null && typeof o === "object" && Object.getPrototypeOf(o) === Object.prototype
    && !(o instanceof globalThis.bridgePyodide.ffi.PyProxy);
  const col = { handle: null, updates: [], results: [], chunks: [], allPlain: true };
  col.onUpdate = (u) => {
    col.allPlain &&= plain(u);
    col.updates.push(JSON.parse(JSON.stringify(u)));
    if (cancelAfter && col.updates.length === cancelAfter) col.handle.cancel("any reason a page passes");
    if (throwAfter && col.updates.length === throwAfter) throw new Error("a bug in the page's callback");
  };
  col.onResult = (r) => { col.allPlain &&= plain(r); col.results.push(JSON.parse(JSON.stringify(r))); };
  col.onChunk = (c) => { col.allPlain &&= plain(c); col.chunks.push(JSON.parse(JSON.stringify(c))); };
  col.dump = () => JSON.stringify({ updates: col.updates, results: col.results, chunks: col.chunks, allPlain: col.allPlain,
                                    reported: globalThis.bridgeReported.splice(0) });
  return col;
}

const send = (obj) => new Promise((resolve) => process.stdout.write(JSON.stringify(obj) + "\n", resolve));

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const { loadPyodide } = await import(pathToFileURL(path.join(opts.pyodide, "pyodide.mjs")).href);
  const toStderr = (s) => process.stderr.write(s + "\n");
  const py = await loadPyodide({ indexURL: opts.pyodide + path.sep, stdout: toStderr, stderr: toStderr });
  const errors = [];
  const loaded = await py.loadPackage(opts.wheels, { messageCallback: () => {}, errorCallback: (m) => errors.push(m) });
  if (errors.length || loaded.length !== opts.wheels.length) throw new Error(`wheel install failed: ${errors.join("; ")}`);
  for (const [host, guest] of opts.mounts) {
    py.FS.mkdirTree(guest);
    py.FS.mount(py.FS.filesystems.NODEFS, { root: host }, guest);
  }
  py._module.enable_pyproxy_allocation_tracing();
  globalThis.bridgeCounters = () => ({ hiwire: py._module._hiwire_num_refs(), pyproxies: py._module.pyproxy_alloc_map.size });
  globalThis.bridgePyodide = py;
  globalThis.bridgeFetchFrom = fetchFrom;
  globalThis.bridgeStreamFrom = (chunks, spaced, errorAfter) => {
    const state = { pulled: 0, cancelled: false };
    return { stream: streamFrom(chunks, state, { spaced, errorAfter }), state };
  };
  globalThis.bridgeCollector = collector;
  // A real AbortController whose signal records every abort listener added to and removed from it (and whether a
  // removed one is the one added), for the test that a linked signal is unlinked when the attempt ends.
  globalThis.bridgeRecordingSignal = () => {
    const controller = new AbortController();
    const signal = controller.signal;
    const log = [];
    const added = [];
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = (type, fn, opts) => { log.push(["add", type]); added.push(fn); add(type, fn, opts); };
    signal.removeEventListener = (type, fn, opts) => {
      log.push(["remove", type, added.includes(fn)]);
      remove(type, fn, opts);
    };
    return { controller, signal, log };
  };
  // The kit's static pump, counted, for the test that registers it (webclient.browser.PUMP_MODULE).
  globalThis.bridgePumpCalls = 0;
  globalThis.bridgePump = (reader, feed, into) => { globalThis.bridgePumpCalls += 1; return pump(reader, feed, into); };
  // The same pump recording how each batch crossed: "number" (written into the lent bytearray) or "object" (a
  // Uint8Array), and whether the WebAssembly memory had grown since the previous batch; and counting the views of
  // the lent bytearray it takes and releases.
  globalThis.bridgeForms = [];
  globalThis.bridgeViews = { taken: 0, released: 0 };
  globalThis.bridgeFormPump = (reader, feed, into) => {
    globalThis.bridgePumpCalls += 1;
    let memory = py._module.HEAPU8.buffer;
    const views = globalThis.bridgeViews;
    const counted = into && {
      getBuffer(type) {
        const view = into.getBuffer(type);
        views.taken += 1;
        return { data: view.data, release() { views.released += 1; view.release(); } };
      },
    };
    return pump(reader, (bytes, count) => {
      globalThis.bridgeForms.push([typeof bytes, py._module.HEAPU8.buffer !== memory]);
      memory = py._module.HEAPU8.buffer;
      return feed(bytes, count);
    }, counted);
  };
  // The same pump as a host's copy of the previous pump.mjs calls it, and as an earlier wheel does: without the
  // bytearray, so every batch crosses as a Uint8Array.
  globalThis.bridgeUint8Pump = (reader, feed) => { globalThis.bridgePumpCalls += 1; return pump(reader, feed); };
  // The same pump calling `feed` in pump.mjs's earlier form, `feed(bytes, sizes)`: a batch's chunk bytes only and
  // `sizes` a JS array of their lengths (undefined for one chunk), as a host's own older copy would.
  globalThis.bridgeOldPump = (reader, feed) => {
    globalThis.bridgePumpCalls += 1;
    return pump(reader, (bytes, count) => {
      if (count === undefined) return feed(bytes, undefined);
      const size = bytes.byteLength - 4 * count;
      const lengths = new DataView(bytes.buffer, bytes.byteOffset + size, 4 * count);
      const sizes = Array.from({ length: count }, (_, i) => lengths.getUint32(4 * i, true));
      return feed(bytes.subarray(0, size), sizes);
    });
  };
  // Node 20 has no reportError: record what webclient reports (a page callback that threw).
  globalThis.bridgeReported = [];
  globalThis.reportError = (error) => globalThis.bridgeReported.push(String(error && error.message || error));
  const version = await py.runPythonAsync("import json, sys, pyodide; sys.dont_write_bytecode = True; pyodide.__version__");
  await send({ ready: true, pyodide: version });

  // Commands run one at a time, in order.
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const cmd = JSON.parse(line);
    try {
      const value = await py.runPythonAsync(cmd.code);
      await send({ id: cmd.id, ok: true, value: JSON.parse(value) });
    } catch (err) {
      await send({ id: cmd.id, ok: false, error: String(err && err.message ? err.message : err) });
    }
  }
}

process.on("unhandledRejection", (reason) => {
  // Recorded, not fatal: a test asserts that the bridge leaves none behind.
  globalThis.bridgeUnhandled = (globalThis.bridgeUnhandled || 0) + 1;
  process.stderr.write(`[bridge-runner] unhandled rejection: ${reason}\n`);
});

try {
  await main();
  process.exit(0);
} catch (err) {
  process.stderr.write(`[bridge-runner] setup failed: ${err && err.stack ? err.stack : err}\n`);
  await send({ ready: false, error: String(err) });
  process.exit(70);
}
