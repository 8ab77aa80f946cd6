// Bridge benchmark, the measuring half: webclient inside Pyodide against the fastest JS way to parse the same SSE
// bytes, in the same JS runtime, in one run. build_scripts/bench_bridge.py builds the inputs and prints the table.
//
//   node build_scripts/bench_bridge.mjs --site DIR --runs N --chunk BYTES [--clock cpu|wall]
//
// DIR is what bench_bridge.py writes: the widget kit folder at DIR/webclient/ (Pyodide, the kit's own lock and our
// wheel, the kit's pump.mjs), the streams at DIR/shapes/NAME.sse with DIR/shapes/index.json, eventsource-parser at
// DIR/eventsource-parser/. Prints one JSON object on stdout. In Chromium the same runBench() runs inside a module
// Web Worker (bench_worker.mjs), booted exactly as the kit's worker boots, so both runtimes measure the same code
// on the path the demo uses: the kit's static pump (registered as webclient_pump), the fast path, one Pyodide.
//
// Per stream, each run times every contender once, in rotating order, on a fresh ReadableStream over the same
// pre-cut Uint8Array chunks (--chunk bytes each):
//   esp_td         the peer: eventsource-parser 4.x fed by one TextDecoder({stream: true}), reader.read() loop
//   esp_tds        the second, labelled baseline: eventsource-parser fed by stream.pipeThrough(TextDecoderStream)
//   wc_bridge      webclient decode+SSE through the bridge: read_batches(fast=True) (the kit's pump) feeding one
//                  EventStreamParser through feed_tuples, which is exactly BrowserStream's read + parse step (the
//                  session reads its events as plain (type, data, last_event_id) tuples)
//   wc_bridge_obj  the same through EventStreamParser.feed, each event an SSEEvent object (a caller of the parser)
//   wc_per_chunk   the bridge before read-ahead, for the account: a JS loop calling Python once per chunk, one
//                  EventStreamParser.feed_tuples per chunk
//   wc_local       EventStreamParser.feed_tuples over the same chunks already in Python memory (no bridge at all)
//   wc_local_batch the same in pieces the size of the bridge's batches (what is left is the bridge's own cost)
//   wc_bridge_only the bridge alone: read_batches(fast=True) handing every batch to a Python callback that only
//                  counts its chunks, timed next to js_read, a JS-only read loop over the same stream
// and for streams of one route (not the concatenated recordings) the full session:
//   js_floor       eventsource-parser + TextDecoder + JSON.parse of every event's data: the least a JS client does
//   wc_session     start_stream (the kit worker's call) with a fetch stand-in over the chunks: gate, decode, SSE,
//                  route accumulation, schema/completion checks, updates as plain JS objects (onUpdates)
// Every contender is timed next to its peer (esp_td; js_floor for wc_session, js_read for wc_bridge_only), the two
// back to back in alternating order, so a ratio compares two runs a few milliseconds apart: on a shared machine the
// load changes from second to second, and a ratio of two runs a second apart measures that change as much as the
// code. Per run and contender: times[key] (ms) and paired[key] (the peer's adjacent time); bench_bridge.py takes
// medians of the times and the median (and the spread) of the per-run ratios times[key][i] / paired[key][i].

const PY_SETUP = `
import asyncio
from pyodide.ffi import create_proxy
from webclient import EventStreamParser
from webclient.browser import fast_path, read_batches, start_stream

LOCAL = {}

# The events a feed returns, counted as bench_sse.py counts them: the list's length (a retry field would be counted
# too, and then the count check against CPython's events in runBench() fails: no stream here holds one).
_count = len

async def _bridge(stream, objects=False):
    parser = EventStreamParser()
    feed = parser.feed if objects else parser.feed_tuples
    count = 0
    def on_batch(data, sizes):
        nonlocal count
        count += _count(feed(data))
        return False
    await read_batches(stream.getReader(), on_batch, fast=True)
    return count + _count(parser.close() if objects else parser.close_tuples())

async def _bridge_only(stream):
    count = 0
    def on_batch(data, sizes):
        nonlocal count
        count += len(sizes)
        return False
    await read_batches(stream.getReader(), on_batch, fast=True)
    return count

async def _per_chunk(stream, loop):
    parser = EventStreamParser()
    count = 0
    def feed(chunk):
        nonlocal count
        count += _count(parser.feed_tuples(chunk.to_bytes()))
        return False
    proxy = create_proxy(feed)
    try:
        await loop(stream.getReader(), proxy)
    finally:
        proxy.destroy()
    return count + _count(parser.close_tuples())

def prepare_local(name, u8, size, batch):
    data = u8.to_bytes()
    LOCAL[name] = [data[i : i + size] for i in range(0, len(data), size)]
    LOCAL[name, "batches"] = [data[i : i + batch] for i in range(0, len(data), batch)]
    return len(LOCAL[name])

def local(name, batches=False):
    parser = EventStreamParser()
    count = 0
    for chunk in LOCAL[(name, "batches") if batches else name]:
        count += _count(parser.feed_tuples(chunk))
    return count + _count(parser.close_tuples())

bench_bridge = lambda stream: asyncio.ensure_future(_bridge(stream))
bench_bridge_objects = lambda stream: asyncio.ensure_future(_bridge(stream, True))
bench_bridge_only = lambda stream: asyncio.ensure_future(_bridge_only(stream))
bench_per_chunk = lambda stream, loop: asyncio.ensure_future(_per_chunk(stream, loop))
`;

/** The peers: every other contender is timed next to one of them (wc_session next to js_floor, wc_bridge_only next
 *  to js_read). */
const PEER_OF = { wc_session: "js_floor", wc_bridge_only: "js_read" };
const PEERS = new Set(["esp_td", ...Object.values(PEER_OF)]);
const peerOf = (key) => PEER_OF[key] ?? "esp_td";

/** Before a timed run: let the tasks the last run left behind run (Pyodide's event loop callbacks, proxy
 *  finalizers), so that they do not land on whichever contender runs next. (Not a forced gc(): V8 sweeps after it
 *  on helper threads, which the CPU clock then charges to the next run.) */
async function settle() {
  await new Promise((resolve) => setTimeout(resolve, 0));
}

/** A JS-only read of the whole stream: the number of chunks. */
async function readAll(reader) {
  let count = 0;
  while (!(await reader.read()).done) count += 1;
  return count;
}

/** The fast path's loop before read-ahead: one call into Python per chunk. */
async function perChunkLoop(reader, feed) {
  for (;;) {
    const { done, value } = await reader.read();
    if (done || feed(value)) return;
  }
}

function cut(bytes, size) {
  const chunks = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size).slice());
  return chunks;
}

/** A fresh stream over the chunks, each one there as soon as it is read for (a fast network, or a slow consumer). */
function streamOf(chunks) {
  let i = 0;
  return new ReadableStream({ pull(ctl) { if (i < chunks.length) ctl.enqueue(chunks[i++]); else ctl.close(); } });
}

/** The peer: eventsource-parser fed by one TextDecoder({stream: true}) from `reader`; with `json`, every event's
 *  data is JSON.parse'd too (the least a JS client does with it). The number of events. */
export async function espTextDecoder(createParser, reader, json) {
  let count = 0;
  const parser = createParser({ onEvent: json ? (e) => { if (e.data !== "[DONE]") JSON.parse(e.data); count += 1; }
                                                : () => { count += 1; } });
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(decoder.decode(value, { stream: true }));
  }
  parser.feed(decoder.decode());
  return count;
}

async function espTextDecoderStream(createParser, chunks) {
  let count = 0;
  const parser = createParser({ onEvent: () => { count += 1; } });
  const reader = streamOf(chunks).pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(value);
  }
  return count;
}

/**
 * @param py        a booted Pyodide with webclient installed and the kit's pump registered as webclient_pump
 * @param shapes    [{name, bytes: Uint8Array, events, route: string | null, outcome, session_events}]
 *                  (bench_bridge.py's shapes/index.json plus the bytes)
 */
export async function runBench(py, { createParser, shapes, batchBytes, chunk = 1024, runs = 7, runtime = "?",
                                     clock = "wall", now = () => performance.now(), log = () => {} }) {
  await py.runPythonAsync(PY_SETUP);
  const names = ["bench_bridge", "bench_bridge_objects", "bench_bridge_only", "bench_per_chunk", "local",
                 "prepare_local", "start_stream", "fast_path"];
  const functions = names.map((n) => py.globals.get(n));
  const [benchBridge, benchBridgeObjects, benchBridgeOnly, benchPerChunk, local, prepareLocal, startStream, fastPath] = functions;
  const out = { runtime, chunk, runs, clock, batch_bytes: batchBytes, fast_path: fastPath(), pyodide: py.version,
                shapes: {} };
  for (const shape of shapes) {
    const chunks = cut(shape.bytes, chunk);
    // The bridge's batches, once the stream keeps up: a chunk and the queued ones up to BATCH_BYTES beyond it.
    const batch = chunk * (Math.ceil(batchBytes / chunk) + 1);
    if (prepareLocal(shape.name, shape.bytes, chunk, batch) !== chunks.length) throw new Error("local chunking differs");
    const contenders = {
      esp_td: () => espTextDecoder(createParser, streamOf(chunks).getReader(), false),
      esp_tds: () => espTextDecoderStream(createParser, chunks),
      wc_bridge: () => benchBridge(streamOf(chunks)),
      wc_bridge_obj: () => benchBridgeObjects(streamOf(chunks)),
      wc_per_chunk: () => benchPerChunk(streamOf(chunks), perChunkLoop),
      wc_local: async () => local(shape.name),
      wc_local_batch: async () => local(shape.name, true),
      js_read: () => readAll(streamOf(chunks).getReader()),
      wc_bridge_only: () => benchBridgeOnly(streamOf(chunks)),
    };
    if (shape.route) {
      contenders.js_floor = () => espTextDecoder(createParser, streamOf(chunks).getReader(), true);
      contenders.wc_session = async () => {
        let updates = 0;
        const fetch = async () => new Response(streamOf(chunks), { headers: { "content-type": "text/event-stream" } });
        const handle = startStream({ url: "https://bench.invalid/stream", route: shape.route, fetch, fast: true,
                                     limits: shape.limits,
                                     deadlines: { total_ms: null, idle_ms: null, first_event_ms: null },
                                     onUpdates: (batch) => { updates += batch.length; } });
        const result = await handle.result;
        if (result.outcome !== shape.outcome) throw new Error(`${shape.name}: session ended ${result.outcome}`);
        return result.telemetry.complete_sse_event_count;
      };
    }
    const keys = Object.keys(contenders);
    const record = { events: shape.events, bytes: shape.bytes.length, chunks: chunks.length, times: {}, paired: {} };
    for (const key of keys) {
      const got = await contenders[key]();  // warm-up, and every contender must see every event
      const want = { wc_session: shape.session_events, js_read: chunks.length, wc_bridge_only: chunks.length }[key]
        ?? shape.events;
      if (got !== want) throw new Error(`${shape.name}: ${key} counted ${got} events, expected ${want}`);
      record.times[key] = [];
      record.paired[key] = [];
    }
    const timed = async (key) => {
      await settle();
      const t0 = now();
      await contenders[key]();
      return now() - t0;
    };
    const measured = keys.filter((key) => !PEERS.has(key));
    for (let run = 0; run < runs; run++) {
      const order = measured.slice(run % measured.length).concat(measured.slice(0, run % measured.length));
      for (const [i, key] of order.entries()) {
        const peer = peerOf(key);
        const first = (run + i) % 2 ? key : peer;
        const a = await timed(first);
        const b = await timed(first === key ? peer : key);
        const [ours, theirs] = first === key ? [a, b] : [b, a];
        record.times[key].push(ours);
        record.paired[key].push(theirs);
        record.times[peer].push(theirs);
      }
    }
    out.shapes[shape.name] = record;
    log(`${runtime}: ${shape.name} done`);
  }
  for (const fn of functions) fn.destroy();
  return out;
}

/** Boot Pyodide from the kit folder as the kit's worker does: the kit's lock, our wheel, the static pump. */
export async function bootLikeTheKit({ runtimeURL, lockURL, pump, loadPyodide }) {
  const py = await loadPyodide({ indexURL: runtimeURL, lockFileURL: lockURL, packages: ["webclient"],
                                 stdout: () => {}, stderr: () => {} });
  py.registerJsModule("webclient_pump", { pump });
  py.pyimport("webclient.browser");
  return py;
}

// -- Node entry point ------------------------------------------------------------------------------------------

async function main() {
  const [{ default: path }, { default: fs }, { pathToFileURL }] = await Promise.all(
    [import("node:path"), import("node:fs"), import("node:url")]);
  const args = process.argv.slice(2);
  const opt = (name, dflt) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : dflt; };
  const site = path.resolve(opt("site"));
  const kit = path.join(site, "webclient");
  const dir = (prefix) => fs.readdirSync(kit).find((n) => n.startsWith(`${prefix}-`));
  const runtime = path.join(kit, dir("runtime"));
  const { loadPyodide } = await import(pathToFileURL(path.join(runtime, "pyodide.mjs")).href);
  const { pump, BATCH_BYTES } = await import(pathToFileURL(path.join(kit, dir("kit"), "pump.mjs")).href);
  const { createParser } = await import(pathToFileURL(path.join(site, "eventsource-parser", "index.js")).href);
  const py = await bootLikeTheKit({ runtimeURL: runtime + path.sep, lockURL: path.join(kit, dir("wheels"),
                                    "pyodide-lock.json"), pump, loadPyodide });
  const index = JSON.parse(fs.readFileSync(path.join(site, "shapes", "index.json"), "utf8"));
  const shapes = index.map((s) => ({ ...s, bytes: new Uint8Array(fs.readFileSync(path.join(site, "shapes", s.file))) }));
  // CPU time of this process by default (Pyodide runs on this thread): on a shared machine wall time also counts
  // the time other processes hold the CPU, which lands on whichever contender is running.
  const clock = opt("clock", "cpu");
  const cpu = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };
  const result = await runBench(py, { createParser, shapes, batchBytes: BATCH_BYTES, chunk: Number(opt("chunk", 1024)),
                                      runs: Number(opt("runs", 7)), runtime: `Node ${process.version}`, clock,
                                      now: clock === "cpu" ? cpu : () => performance.now(),
                                      log: (m) => process.stderr.write(m + "\n") });
  process.stdout.write(JSON.stringify(result) + "\n");
}

if (typeof process !== "undefined" && process.argv?.[1] &&
    import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href) {
  await main();
}
