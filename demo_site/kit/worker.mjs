// The widget kit's Web Worker: boots Pyodide from the kit folder, installs webclient from the kit's own lock file,
// registers the static fast-path pump, and runs every attempt through webclient.browser.start_stream. Private to
// webclient.mjs, which creates it and speaks the protocol below; a page never talks to it directly.
//
// page -> worker   {type: "boot", runtime, lock, files}     runtime: URL of the runtime dir; lock: URL of the
//                                                           wheels' pyodide-lock.json; files: {URL: bytes} to count
//                  {type: "stream", id, options}            options as validated by webclient.mjs (no functions;
//                                                           `chunks: true` asks for per-chunk timelines)
//                  {type: "cancel", id}
// worker -> page   {type: "boot", stage, loaded, total}     stage "download" | "start" | "install" | "import"
//                  {type: "ready", versions, fastPath, bootMs, limits}    limits: names of webclient.Limits' fields
//                  {type: "boot-error", message}
//                  {type: "updates", id, updates}           the updates (StreamUpdate in webclient.d.ts) of one
//                                                           batch of transport chunks, in order
//                  {type: "chunks", id, timelines}          a timeline per transport chunk of a batch, only when
//                                                           asked
//                  {type: "result", id, result}             StreamResult.to_dict(), for every outcome
//                  {type: "error", id, name, message}       a caller bug (name "WebclientUsageError") or a bug here

import { pump } from "./pump.mjs";

/** webclient.browser.start_stream (a PyProxy kept for the worker's lifetime), once booted. */
let startStream = null;
/** Running attempts: id -> start_stream handle ({result, cancel}). */
const handles = new Map();

const post = (message) => self.postMessage(message);

/**
 * While `during` runs, count the bytes of every successful fetch of one of `files` (the runtime files the build
 * listed: python_stdlib.zip and the webclient wheel; a clone of the response is read to its end, the response
 * Pyodide gets is untouched) and report {stage: "download", loaded, total}, then {stage: "start"} once they
 * arrived. The wasm is not among them: it streams into WebAssembly compilation untouched, which keeps Chromium's
 * compiled-code cache working for the next boot.
 */
async function countingDownloads(files, during) {
  const total = Object.values(files).reduce((sum, n) => sum + n, 0);
  const realFetch = self.fetch;
  let loaded = 0;
  let last = 0;
  let started = false;
  const report = (force) => {
    const now = performance.now();
    if (started || (!force && now - last < 50)) return;
    last = now;
    post({ type: "boot", stage: "download", loaded: Math.min(loaded, total), total });
    if (loaded >= total) {
      started = true;
      post({ type: "boot", stage: "start", loaded: total, total });
    }
  };
  const count = async (response) => {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      loaded += value.byteLength;
      report(false);
    }
    report(true);
  };
  self.fetch = async (input, init) => {
    const response = await realFetch(input, init);
    const url = typeof input === "string" ? input : input.url ?? String(input);
    if (response.ok && response.body && new URL(url, self.location.href).href in files) {
      count(response.clone()).catch(() => {});
    }
    return response;
  };
  report(true);
  try {
    return await during();
  } finally {
    self.fetch = realFetch;
    if (!started) report(true);
  }
}

async function boot({ runtime, lock, files }) {
  const bootStarted = performance.now();
  const stderr = [];
  const pyodide = await countingDownloads(files, async () => {
    const { loadPyodide } = await import(new URL("pyodide.mjs", runtime).href);
    return loadPyodide({
      indexURL: runtime,
      lockFileURL: lock,            // absolute: a relative lockFileURL fails silently in browsers
      packages: ["webclient"],      // fetched (with SRI from the kit's lock) while the runtime boots
      stdout: () => {},
      stderr: (line) => stderr.push(line),
    });
  });
  post({ type: "boot", stage: "import", loaded: 0, total: 0 });
  pyodide.registerJsModule("webclient_pump", { pump });
  let browser;
  try {
    browser = pyodide.pyimport("webclient.browser");
  } catch (err) {
    throw new Error(`webclient did not install (${stderr.join(" ").slice(0, 200) || err.message})`);
  }
  startStream = browser.start_stream;
  const [python, webclient, limits] = pyodide.runPython(
    "import dataclasses, sys, webclient\n" +
    "[sys.version.split()[0], webclient.__version__, [f.name for f in dataclasses.fields(webclient.Limits)]]").toJs();
  post({
    type: "ready",
    versions: { pyodide: pyodide.version, python, webclient },
    fastPath: browser.fast_path(),
    bootMs: performance.now() - bootStarted,
    limits,
  });
}

function stream(id, { chunks, ...options }) {
  const handle = startStream({
    ...options,
    // One message per batch of chunks (see pump.mjs), not per update: a burst costs one structured clone.
    onUpdates: (updates) => post({ type: "updates", id, updates }),
    ...(chunks ? { onChunks: (timelines) => post({ type: "chunks", id, timelines }) } : {}),
  });
  handles.set(id, handle);
  handle.result.then(
    (result) => post({ type: "result", id, result }),
    (err) => post({ type: "error", id, name: err?.name || "Error", message: String(err?.message ?? err) }),
  ).finally(() => handles.delete(id));
}

self.onmessage = ({ data }) => {
  switch (data.type) {
    case "boot":
      boot(data).catch((err) => post({ type: "boot-error", message: String(err?.message ?? err) }));
      break;
    case "stream":
      try {
        stream(data.id, data.options);
      } catch (err) {
        post({ type: "error", id: data.id, name: "WebclientError", message: String(err?.message ?? err) });
      }
      break;
    case "cancel":
      handles.get(data.id)?.cancel();
      break;
    default:
      break;
  }
};
