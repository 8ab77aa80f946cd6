// The demo's Python side, in a dedicated module Web Worker: it boots Pyodide from /pyodide/, installs the
// webclient wheel through the site's own lock file, and owns every model request (fetch + StreamSession,
// through webclient.browser.start_stream). The main thread only renders what this worker posts.
//
// Messages from the page:
//   {type: "send", id, route, scenario, prompt, deadlines: {connect_ms, first_event_ms, idle_ms, total_ms}}
//   {type: "cancel", id}
// Messages to the page (plain, structured-clonable objects; never Python proxies):
//   {type: "boot", stage, label, loaded, total, elapsedMs}     progress while booting
//   {type: "ready", bootMs, versions: {pyodide, python, webclient}, tools: [name...]}
//   {type: "boot-error", message}
//   {type: "update", id, update}      one webclient update dict (text_delta, tool_input_delta, tool_call,
//                                     committed, failed), each with its {t_ms, chunks, bytes, events} timeline
//   {type: "chunk", id, timeline}     one per transport chunk
//   {type: "done", id, outcome}       the attempt has ended (its final update was posted before this)
//   {type: "error", id, message}      the attempt could not run (a bug, not a stream outcome)

const ORIGIN = self.location.origin;
const PYODIDE_URL = new URL("/pyodide/", ORIGIN).href;
// Absolute, as Pyodide requires in a browser: a relative lockFileURL fails silently (pyodide-notes §3.2).
const LOCK_URL = new URL("/wheels/pyodide-lock.json", ORIGIN).href;
// The big downloads of a boot, fetched first with byte progress; loadPyodide then gets them from the
// HTTP cache (the server answers the revalidation with 304).
const RUNTIME_FILES = ["pyodide.asm.wasm", "python_stdlib.zip"];

let config = null;        // GET /demo/config.json
let tools = null;         // GET /demo/tools.json: tool name -> JSON Schema, registered with every session
let startStream = null;   // webclient.browser.start_stream (a PyProxy, kept for the worker's lifetime)
const handles = new Map(); // attempt id -> {cancel(), result} handle of a running attempt

const bootStarted = performance.now();

function post(message) {
  self.postMessage(message);
}

function progress(stage, label, loaded = 0, total = 0) {
  post({ type: "boot", stage, label, loaded, total, elapsedMs: performance.now() - bootStarted });
}

async function getJSON(path) {
  const response = await fetch(new URL(path, ORIGIN));
  if (!response.ok) throw new Error(`GET ${path} answered HTTP ${response.status}`);
  return response.json();
}

/** Download the runtime's big files once, reporting bytes as they arrive. */
async function prefetchRuntime() {
  const responses = await Promise.all(RUNTIME_FILES.map((name) => fetch(PYODIDE_URL + name)));
  const total = responses.reduce((sum, r) => sum + Number(r.headers.get("content-length") || 0), 0);
  let loaded = 0;
  let lastReport = 0;
  await Promise.all(responses.map(async (response) => {
    if (!response.ok) throw new Error(`GET ${response.url} answered HTTP ${response.status}`);
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      loaded += value.byteLength;
      const now = performance.now();
      if (now - lastReport > 50) {
        lastReport = now;
        progress("download", "Downloading the Python runtime", loaded, total);
      }
    }
  }));
  progress("download", "Downloading the Python runtime", loaded, total || loaded);
}

async function boot() {
  progress("config", "Reading the demo configuration");
  [config, tools] = await Promise.all([getJSON("/demo/config.json"), getJSON("/demo/tools.json")]);
  await prefetchRuntime();
  progress("start", "Starting Python (compiling WebAssembly)");
  const { loadPyodide } = await import(PYODIDE_URL + "pyodide.mjs");
  const errors = [];
  const pyodide = await loadPyodide({
    indexURL: PYODIDE_URL,
    lockFileURL: LOCK_URL,
    packages: ["webclient"],          // fetched (with SRI from our lock) while the runtime boots
    stdout: () => {},
    stderr: (line) => errors.push(line),
  });
  progress("import", "Importing webclient");
  let bridge;
  try {
    bridge = pyodide.pyimport("webclient.browser");
  } catch (err) {
    throw new Error(`webclient did not install (${errors.join(" ").slice(0, 200) || err.message})`);
  }
  startStream = bridge.start_stream;
  const webclientVersion = pyodide.runPython("import webclient; webclient.__version__");
  const pythonVersion = pyodide.runPython("import sys; sys.version.split()[0]");
  post({
    type: "ready",
    bootMs: performance.now() - bootStarted,
    versions: { pyodide: pyodide.version, python: pythonVersion, webclient: webclientVersion },
    tools: Object.keys(tools),
  });
}

/** The request body a client of `route` sends for one user prompt. */
function requestBody(route, model, prompt) {
  switch (route) {
    case "openai-chat":
      return { model, stream: true, stream_options: { include_usage: true },
               messages: [{ role: "user", content: prompt }] };
    case "openai-responses":
      return { model, stream: true, input: prompt };
    case "anthropic-messages":
      return { model, max_tokens: 1024, stream: true,
               messages: [{ role: "user", content: [{ type: "text", text: prompt }] }] };
    case "gemini":
      return { contents: [{ role: "user", parts: [{ text: prompt }] }] };
    default:
      throw new Error(`unknown route ${route}`);
  }
}

function send({ id, route, scenario, prompt, deadlines }) {
  const entry = config.routes.find((r) => r.route === route);
  if (!entry) throw new Error(`unknown route ${route}`);
  const path = entry.path.replace("{model}", encodeURIComponent(entry.default_model));
  const url = new URL(path + (route === "gemini" ? "?alt=sse" : ""), ORIGIN).href;
  const handle = startStream({
    url,
    route,
    body: JSON.stringify(requestBody(route, entry.default_model, prompt)),
    headers: { "content-type": "application/json", [config.scenario_header]: scenario },
    deadlines,
    tools,
    request_id: id,
    model_alias: entry.default_model,
    fast: false,  // the pull loop: no eval, so the page's CSP needs no 'unsafe-eval'
    onUpdate: (update) => post({ type: "update", id, update }),
    onChunk: (timeline) => post({ type: "chunk", id, timeline }),
  });
  handles.set(id, handle);
  handle.result.then(
    (result) => post({ type: "done", id, outcome: result.outcome }),
    (err) => post({ type: "error", id, message: String(err && err.message || err) }),
  ).finally(() => handles.delete(id));
}

self.onmessage = (event) => {
  const message = event.data;
  try {
    if (message.type === "send") {
      if (!startStream) throw new Error("Python is not ready yet");
      send(message);
    } else if (message.type === "cancel") {
      const handle = handles.get(message.id);
      if (handle) handle.cancel();
    }
  } catch (err) {
    post({ type: "error", id: message.id, message: String(err && err.message || err) });
  }
};

boot().catch((err) => post({ type: "boot-error", message: String(err && err.message || err) }));
