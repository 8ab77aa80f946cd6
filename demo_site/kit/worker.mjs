// The widget kit's Web Worker: boots Pyodide from the kit folder (from a memory snapshot of an earlier boot when
// the origin's Cache Storage holds one: snapshots.mjs), installs webclient from the kit's wheel, registers the
// static fast-path pump, and runs every attempt through webclient.browser.start_stream. Private to webclient.mjs,
// which creates it and speaks the protocol below; a page never talks to it directly.
//
// page -> worker   {type: "boot", runtime, lock, files,     runtime: URL of the runtime dir; lock: URL of the
//                   wheel, snapshotKey}                     wheels' pyodide-lock.json; files: {URL: bytes} to count;
//                                                           wheel: {url, integrity}; snapshotKey: the Cache Storage
//                                                           key of this kit version's snapshot, or null (none)
//                  {type: "stream", id, options}            options as validated by webclient.mjs (no functions;
//                                                           `chunks: true` asks for per-chunk timelines)
//                  {type: "cancel", id}
// worker -> page   {type: "boot", stage, loaded, total}     stage "download" | "start" | "import"
//                  {type: "ready", versions, fastPath, bootMs, limits, snapshot}    limits: names of
//                                                           webclient.Limits' fields; snapshot: "restored" | "made"
//                                                           | "none"
//                  {type: "snapshot", saved}                the snapshot made at boot was stored (or not)
//                  {type: "boot-error", message}
//                  {type: "updates", id, updates}           the updates (StreamUpdate in webclient.d.ts) of one
//                                                           batch of transport chunks, in order
//                  {type: "chunks", id, timelines}          a timeline per transport chunk of a batch, only when
//                                                           asked
//                  {type: "result", id, result}             StreamResult.to_dict(), for every outcome
//                  {type: "error", id, name, message}       a caller bug (name "WebclientUsageError") or a bug here

import { pump } from "./pump.mjs";
import { openSnapshots } from "./snapshots.mjs";

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

/** Unpack our wheel into site-packages (what Pyodide's loadPackage does, minus its bookkeeping, which a memory
 *  snapshot cannot hold), and import webclient.browser. Only site-packages' finder forgets its listing:
 *  importlib.invalidate_caches() would also import importlib.metadata and its dependencies, ~60 ms of a cold boot
 *  (Node). build_scripts/kit_stdlib.mjs mirrors this step to find the modules whose bytecode the kit ships. */
const INSTALL = `
def _install(path):
    import os, sys, zipfile
    site = next(p for p in sys.path if p.endswith("site-packages"))
    with zipfile.ZipFile(path) as wheel:
        wheel.extractall(site)
    os.remove(path)
    finder = sys.path_importer_cache.get(site)
    if finder is not None:
        finder.invalidate_caches()
    import webclient.browser
_install("/tmp/webclient.whl")
del _install
`;

/**
 * Boot Python with webclient imported: from the memory snapshot of an earlier boot when one is stored for this
 * kit version (snapshots.mjs), else from scratch, then taking a snapshot for the next boot (stored after ready).
 * Either way the wheel's files are unpacked into the file system, so the Python and its files agree.
 */
async function startPython({ runtime, lock, files, wheel, snapshotKey }) {
  const stderr = [];
  const store = snapshotKey ? await openSnapshots(snapshotKey) : null;
  const saved = store ? await store.load() : null;
  const { loadPyodide } = await import(new URL("pyodide.mjs", runtime).href);
  const options = () => ({ indexURL: runtime, lockFileURL: lock, stdout: () => {}, stderr: (line) => stderr.push(line) });
  return countingDownloads(files, async () => {
    const wheelBytes = fetch(wheel.url, { integrity: wheel.integrity }).then((response) => {
      if (!response.ok) throw new Error(`the webclient wheel could not be fetched (HTTP ${response.status})`);
      return response.arrayBuffer();
    });
    wheelBytes.catch(() => {});  // awaited below; a failure must not also be an unhandled rejection meanwhile
    let pyodide = null;
    let snapshot = "none";
    if (saved) {
      try {
        pyodide = await loadPyodide({ ...options(), _loadSnapshot: saved });
        snapshot = "restored";
      } catch {
        await store.drop();  // a snapshot this runtime refuses: boot from scratch, and replace it
      }
    }
    pyodide ??= await loadPyodide({ ...options(), _makeSnapshot: store !== null });
    post({ type: "boot", stage: "import", loaded: 0, total: 0 });
    pyodide.FS.writeFile("/tmp/webclient.whl", new Uint8Array(await wheelBytes));
    try {
      pyodide.runPython(INSTALL);
    } catch (err) {
      throw new Error(`webclient did not install (${stderr.join(" ").slice(0, 200) || err.message})`);
    }
    let made = null;
    if (snapshot === "restored") {
      pyodide.runPython("import random; random.seed()");  // not the state every boot of this snapshot starts with
    } else if (store !== null) {
      // Now, before anything of this page's JavaScript is held by Python (the pump, proxies of a stream).
      made = pyodide.makeMemorySnapshot();
      snapshot = "made";
    }
    return { pyodide, snapshot, made, store };
  });
}

async function boot(config) {
  const bootStarted = performance.now();
  const { pyodide, snapshot, made, store } = await startPython(config);
  pyodide.registerJsModule("webclient_pump", { pump });
  const browser = pyodide.pyimport("webclient.browser");
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
    snapshot,
  });
  if (made) store.save(made).then((saved) => post({ type: "snapshot", saved }));
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
