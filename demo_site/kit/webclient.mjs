// webclient.mjs: the widget kit's public entry (types: webclient.d.ts beside it).
//
//   import { createClient } from "./webclient/webclient.mjs";
//   const client = await createClient({ onBoot: (p) => {} });   // Pyodide + webclient boot in a Web Worker
//   const stream = client.stream({ route, url, body, headers, tools, deadlines, limits, signal });
//   for await (const update of stream) { ... }                   // text_delta | tool_input_delta | tool_call |
//                                                                // committed | failed
//   const result = await stream.result;                          // resolves for every outcome
//   stream.cancel(); await client.close();
//
// Everything the kit needs (Pyodide, the wheels, the worker) is found relative to this file's URL, so the kit is
// one folder to copy to any static host. Files whose contents may change live in content-hashed directories named
// by MANIFEST (written by `python build_scripts/pyodide_tools.py kit OUT_DIR`), so a host may cache them forever.

const MANIFEST = /*@manifest*/ { version: "dev", kit: "kit/", runtime: "runtime/", wheels: "wheels/", files: {},
  wheel: { file: "webclient.whl", integrity: "" } } /*@end*/;

const BASE = new URL(".", import.meta.url);

/** The webclient version this kit carries. */
export const version = MANIFEST.version;

/** A caller bug: bad options, a stream iterated twice, a closed client. Its message is one line. */
export class WebclientUsageError extends Error {
  constructor(message) {
    super(message);
    this.name = "WebclientUsageError";
  }
}

function usage(condition, message) {
  if (!condition) throw new WebclientUsageError(message);
}

function namedError(name, message) {
  if (name === "WebclientUsageError") return new WebclientUsageError(message);
  const error = new Error(message);
  error.name = name || "WebclientError";
  return error;
}

/** Report an exception thrown by the caller's own callback without letting it change anything. */
function report(error) {
  if (typeof globalThis.reportError === "function") globalThis.reportError(error);
  else console.error(error);
}

function call(callback, value) {
  try {
    callback(value);
  } catch (error) {
    report(error);
  }
}

const isPlainObject = (value) => value !== null && typeof value === "object" &&
  [Object.prototype, null].includes(Object.getPrototypeOf(value));

// --- options ---------------------------------------------------------------------------------------------------

const STREAM_OPTIONS = ["route", "url", "body", "headers", "method", "tools", "deadlines", "limits", "resume",
  "accepted_stop_reasons", "utf8_errors", "request_id", "model_alias", "attempt", "idempotent",
  "keep_unknown_items", "include_reasoning_content", "fast", "signal", "onChunk"];
const DEADLINES = ["connect_ms", "first_event_ms", "idle_ms", "total_ms", "terminal_grace_ms"];
// The limit names are not listed here: the worker reports the fields of the Python library's `Limits` it loaded
// (webclient/_limits.py is the one place they are defined), so a new ceiling needs no change in this file.
const RESUME = {
  max_resumes: [(n) => Number.isSafeInteger(n) && n >= 0, "an integer >= 0"],
  last_event_id: [(b) => typeof b === "boolean", "a boolean"],
  delay_ms: [(ms) => typeof ms === "number" && Number.isFinite(ms) && ms >= 0, "a number of milliseconds >= 0"],
  max_delay_ms: [(ms) => typeof ms === "number" && Number.isFinite(ms) && ms >= 0, "a number of milliseconds >= 0"],
};

function pageURL() {
  return globalThis.document?.baseURI ?? globalThis.location?.href;
}

function optional(options, key, test, what) {
  usage(options[key] === undefined || test(options[key]), `${key} must be ${what}`);
}

/** Check the caller's stream options (`limitNames`: the ceilings the worker's webclient knows); the
 *  structured-clonable request for the worker. Throws WebclientUsageError. */
function streamRequest(options, limitNames) {
  usage(isPlainObject(options), "stream options must be a plain object");
  const unknown = Object.keys(options).filter((key) => !STREAM_OPTIONS.includes(key));
  usage(unknown.length === 0, `unknown stream option "${unknown[0]}" (the options are ${STREAM_OPTIONS.join(", ")})`);
  const { route, url, body, headers, deadlines, limits, resume, signal, onChunk, ...rest } = options;
  usage(typeof route === "string" && route !== "", "route must be a non-empty string such as \"openai-chat\"");
  usage(typeof url === "string" || url instanceof URL, "url must be a string or a URL");
  let absolute;
  try {
    absolute = new URL(url, pageURL()).href;  // the worker resolves nothing relative to the page
  } catch {
    throw new WebclientUsageError("url is not a valid URL");
  }
  usage(body === undefined || body === null || typeof body === "string" || isPlainObject(body) ||
        Array.isArray(body), "body must be a string, a plain object, an array or null");
  if (body !== null && typeof body === "object") {
    try {
      JSON.stringify(body);
    } catch {
      throw new WebclientUsageError("body must be JSON-serializable");
    }
  }
  let headerMap;
  if (headers instanceof Headers) headerMap = Object.fromEntries(headers);
  else if (headers !== undefined) {
    usage(isPlainObject(headers) && Object.values(headers).every((v) => typeof v === "string"),
      "headers must be a Headers or a plain object of strings");
    headerMap = { ...headers };
  }
  if (deadlines !== undefined) {
    usage(isPlainObject(deadlines), `deadlines must be an object with the keys ${DEADLINES.join(", ")}`);
    for (const [key, ms] of Object.entries(deadlines)) {
      usage(DEADLINES.includes(key), `unknown deadline "${key}" (the deadlines are ${DEADLINES.join(", ")})`);
      usage(ms === null || (typeof ms === "number" && ms > 0 && Number.isFinite(ms)),
        `deadlines.${key} must be a positive number of milliseconds or null`);
    }
  }
  if (limits !== undefined) {
    usage(isPlainObject(limits), "limits must be a plain object");
    for (const [key, n] of Object.entries(limits)) {
      usage(limitNames.includes(key), `unknown limit "${key}" (the limits are ${limitNames.join(", ")})`);
      usage(Number.isSafeInteger(n) && n > 0, `limits.${key} must be a positive integer`);
    }
  }
  if (resume !== undefined) {
    const keys = Object.keys(RESUME);
    usage(isPlainObject(resume), `resume must be an object with the keys ${keys.join(", ")}`);
    for (const [key, value] of Object.entries(resume)) {
      usage(keys.includes(key), `unknown resume option "${key}" (the options are ${keys.join(", ")})`);
      usage(RESUME[key][0](value), `resume.${key} must be ${RESUME[key][1]}`);
    }
  }
  optional(options, "tools", (t) => isPlainObject(t) && Object.values(t).every(isPlainObject),
    "a plain object mapping each tool name to its JSON Schema");
  optional(options, "method", (m) => typeof m === "string" && m !== "", "a non-empty string");
  optional(options, "accepted_stop_reasons", (a) => Array.isArray(a) && a.every((s) => typeof s === "string"),
    "an array of strings");
  optional(options, "utf8_errors", (m) => m === "strict" || m === "replace", "\"strict\" or \"replace\"");
  optional(options, "request_id", (s) => typeof s === "string", "a string");
  optional(options, "model_alias", (s) => typeof s === "string", "a string");
  optional(options, "attempt", (n) => Number.isSafeInteger(n) && n > 0, "a positive integer");
  optional(options, "idempotent", (b) => typeof b === "boolean", "a boolean");
  optional(options, "keep_unknown_items", (b) => typeof b === "boolean", "a boolean");
  optional(options, "include_reasoning_content", (b) => typeof b === "boolean", "a boolean");
  optional(options, "fast", (b) => typeof b === "boolean", "a boolean");
  optional(options, "signal", (s) => s instanceof AbortSignal, "an AbortSignal");
  optional(options, "onChunk", (f) => typeof f === "function", "a function");
  const request = { ...rest, route, url: absolute, chunks: onChunk !== undefined };
  for (const [key, value] of [["body", body], ["headers", headerMap], ["deadlines", deadlines], ["limits", limits],
    ["resume", resume]]) {
    if (value !== undefined) request[key] = value;
  }
  return request;
}

// --- one attempt -----------------------------------------------------------------------------------------------

/** One streaming attempt: an async iterable of updates plus a `result` promise. Made by Client.stream(). */
class WebclientStream {
  #cancel;
  #onChunk;
  #buffer = [];
  #head = 0;
  #waiter = null;
  #ended = false;
  #failure = null;
  #iterated = false;
  #detached = false;
  #settle;

  constructor(cancel, onChunk) {
    this.#cancel = cancel;
    this.#onChunk = onChunk;
    /** Resolves with the result object for every outcome; rejects only for a bug: the caller's (WebclientUsageError)
     *  or, should the attempt itself fail, webclient's (an Error named "WebclientError"). */
    this.result = new Promise((resolve, reject) => { this.#settle = { resolve, reject }; });
    this.result.catch(() => {});  // a caller who only iterates still sees the error there: not unhandled
  }

  /** Stop the attempt: the fetch is aborted and the outcome is `cancelled`. No effect once it has ended. */
  cancel() {
    if (!this.#ended) this.#cancel();
  }

  /** Updates in order, the final `committed` / `failed` last. One consumer per stream; leaving the loop early
   *  (break, or an exception in its body) stops the iteration but not the attempt: call cancel() for that. */
  [Symbol.asyncIterator]() {
    usage(!this.#iterated, "a stream can be iterated only once");
    this.#iterated = true;
    const iterator = {
      next: () => {
        if (this.#head < this.#buffer.length) {
          const value = this.#buffer[this.#head];
          this.#buffer[this.#head++] = undefined;
          return Promise.resolve({ value, done: false });
        }
        if (this.#failure) return Promise.reject(this.#failure);
        if (this.#ended || this.#detached) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => { this.#waiter = { resolve, reject }; });
      },
      return: () => {
        this.#detached = true;
        this.#buffer = [];
        this.#head = 0;
        this.#wake();
        return Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]() { return iterator; },
    };
    return iterator;
  }

  #wake() {
    const waiter = this.#waiter;
    if (!waiter) return;
    this.#waiter = null;
    if (this.#head < this.#buffer.length) {
      const value = this.#buffer[this.#head];
      this.#buffer[this.#head++] = undefined;
      waiter.resolve({ value, done: false });
    } else if (this.#failure) waiter.reject(this.#failure);
    else waiter.resolve({ value: undefined, done: true });
  }

  // Called by the client with the worker's messages for this attempt.
  _update(update) {
    if (this.#detached) return;
    this.#buffer.push(update);
    this.#wake();
  }

  _chunk(timeline) {
    if (this.#onChunk) call(this.#onChunk, timeline);
  }

  _end(result, failure) {
    if (this.#ended) return;
    this.#ended = true;
    if (failure) {
      this.#failure = failure;
      this.#settle.reject(failure);
    } else this.#settle.resolve(result);
    this.#wake();
  }
}

// --- the client ------------------------------------------------------------------------------------------------

class Client {
  #worker;
  #limitNames;
  #streams = new Map();
  #next = 0;
  #closed = false;

  constructor(worker, ready) {
    this.#worker = worker;
    /** {pyodide, python, webclient} versions running in the worker. */
    this.versions = ready.versions;
    /** How `fast: true` reads: "module" (the kit's static pump; no eval), "eval" or "pull". */
    this.fastPath = ready.fastPath;
    /** Milliseconds the worker took to boot Pyodide and import webclient. */
    this.bootMs = ready.bootMs;
    /** "restored": booted from the memory snapshot an earlier boot stored; "made": booted from scratch and storing
     *  a snapshot for the next boot; "none": booted from scratch without one. */
    this.snapshot = ready.snapshot;
    this.#limitNames = ready.limits;
    worker.addEventListener("message", ({ data }) => this.#receive(data));
    worker.addEventListener("error", (event) => this.#crashed(event.message || "the webclient worker failed"));
  }

  /** Start one attempt. Never throws: bad options reject `result` (and the iteration) with WebclientUsageError. */
  stream(options) {
    const id = ++this.#next;
    let request = null;
    let failure = null;
    try {
      usage(!this.#closed, "the client is closed");
      request = streamRequest(options, this.#limitNames);
    } catch (error) {
      failure = error instanceof WebclientUsageError ? error : new WebclientUsageError(String(error?.message));
    }
    const signal = options?.signal;
    const onAbort = () => this.#worker.postMessage({ type: "cancel", id });
    const stream = new WebclientStream(onAbort, failure ? null : options.onChunk);
    if (failure) {
      stream._end(null, failure);
      return stream;
    }
    this.#streams.set(id, stream);
    this.#worker.postMessage({ type: "stream", id, options: request });
    if (signal) {
      if (signal.aborted) onAbort();
      else {
        signal.addEventListener("abort", onAbort, { once: true });
        stream.result.finally(() => signal.removeEventListener("abort", onAbort)).catch(() => {});
      }
    }
    return stream;
  }

  /** Cancel every running attempt, wait for their results, then stop the worker. Idempotent. */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    const running = [...this.#streams.values()];
    for (const stream of running) stream.cancel();
    await Promise.allSettled(running.map((stream) => stream.result));
    this.#worker.terminate();
  }

  #receive(message) {
    const stream = this.#streams.get(message.id);
    if (!stream) return;
    switch (message.type) {
      case "updates":
        for (const update of message.updates) stream._update(update);
        break;
      case "chunks":
        for (const timeline of message.timelines) stream._chunk(timeline);
        break;
      case "result":
        this.#streams.delete(message.id);
        stream._end(message.result, null);
        break;
      case "error":
        this.#streams.delete(message.id);
        stream._end(null, namedError(message.name, message.message));
        break;
      default:
        break;
    }
  }

  #crashed(message) {
    for (const [id, stream] of this.#streams) {
      this.#streams.delete(id);
      stream._end(null, namedError("WebclientError", message));
    }
  }
}

// --- boot ------------------------------------------------------------------------------------------------------

/** The kit's worker: same-origin URLs directly; a kit imported from another origin through a module blob that
 *  imports the worker (a page with a CSP then needs `worker-src blob:`). */
function spawnWorker() {
  const url = new URL(MANIFEST.kit + "worker.mjs", BASE);
  if (url.origin === globalThis.location?.origin) return { worker: new Worker(url, { type: "module" }) };
  const blob = URL.createObjectURL(new Blob([`import ${JSON.stringify(url.href)};`], { type: "text/javascript" }));
  return { worker: new Worker(blob, { type: "module" }), blob };
}

/**
 * Boot Pyodide and webclient in a Web Worker; resolve with a client once it can stream.
 * `onBoot({stage, loaded, total})` reports progress: stage "download" (bytes of the runtime so far, of `total`),
 * "start" (Python initialising), "import" (webclient loading), then the promise resolves.
 * `snapshot` (default true): keep a memory snapshot of the booted Python in the origin's Cache Storage and boot
 * from it next time (several times faster; about 16 MB of storage; see the README's "Boot"); false: never.
 * Rejects with WebclientUsageError for bad options, or an Error named "WebclientBootError" if the runtime fails.
 */
export async function createClient(options = {}) {
  usage(isPlainObject(options), "createClient options must be a plain object");
  const unknown = Object.keys(options).filter((key) => !["onBoot", "snapshot"].includes(key));
  usage(unknown.length === 0, `unknown createClient option "${unknown[0]}" (the options are onBoot, snapshot)`);
  usage(options.onBoot === undefined || typeof options.onBoot === "function", "onBoot must be a function");
  usage(options.snapshot === undefined || typeof options.snapshot === "boolean", "snapshot must be a boolean");
  const { worker, blob } = spawnWorker();
  const files = Object.fromEntries(Object.entries(MANIFEST.files).map(([path, n]) => [new URL(path, BASE).href, n]));
  const ready = await new Promise((resolve, reject) => {
    const onError = (event) => {
      settled();
      worker.terminate();
      reject(namedError("WebclientBootError", event.message || "the webclient worker failed to load"));
    };
    const onMessage = ({ data }) => {
      if (blob) URL.revokeObjectURL(blob);
      if (data.type === "boot") {
        if (options.onBoot) call(options.onBoot, { stage: data.stage, loaded: data.loaded, total: data.total });
      } else if (data.type === "ready") {
        settled();
        resolve(data);
      } else if (data.type === "boot-error") onError({ message: data.message });
    };
    const settled = () => {
      worker.removeEventListener("error", onError);
      worker.removeEventListener("message", onMessage);
    };
    worker.addEventListener("error", onError);
    worker.addEventListener("message", onMessage);
    worker.postMessage({
      type: "boot",
      runtime: new URL(MANIFEST.runtime, BASE).href,
      lock: new URL(MANIFEST.wheels + "pyodide-lock.json", BASE).href,
      files,
      wheel: { url: new URL(MANIFEST.wheels + MANIFEST.wheel.file, BASE).href, integrity: MANIFEST.wheel.integrity },
      // One key per kit version: both directories are named by the hash of their files.
      snapshotKey: options.snapshot === false ? null
        : new URL(`snapshot/${MANIFEST.runtime}${MANIFEST.wheels}`, BASE).href,
    });
  });
  return new Client(worker, ready);
}
