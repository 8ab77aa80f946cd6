// Bridge benchmark, the measuring half: webclient inside Pyodide against the fastest JS way to parse the same SSE
// bytes, in the same JS runtime, in one run. build_scripts/bench_bridge.py builds the inputs and prints the table.
//
//   node build_scripts/bench_bridge.mjs --site DIR --runs N --chunk BYTES [--shape NAME]...
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
//                  EventStreamParser, which is exactly BrowserStream's read + parse step
//   wc_per_chunk   the bridge before read-ahead, for the account: a JS loop calling Python once per chunk, one
//                  EventStreamParser.feed per chunk
//   wc_local       EventStreamParser over the same chunks already in Python memory (no bridge at all)
//   wc_local_batch the same in pieces the size of the bridge's batches (what is left is the bridge's own cost)
// and for streams of one route (not the concatenated recordings) the full session:
//   js_floor       eventsource-parser + TextDecoder + JSON.parse of every event's data: the least a JS client does
//   wc_session     start_stream (the kit worker's call) with a fetch stand-in over the chunks: gate, decode, SSE,
//                  route accumulation, schema/completion checks, updates as plain JS objects (onUpdates)
// Times are per run; bench_bridge.py takes medians and the median of the per-run ratios.

const PY_SETUP = `
import asyncio
from pyodide.ffi import create_proxy
from webclient import EventStreamParser, SSEEvent
from webclient.browser import fast_path, read_batches, start_stream

LOCAL = {}

def _count(items):
    return sum(1 for item in items if isinstance(item, SSEEvent))

async def _bridge(stream):
    parser = EventStreamParser()
    count = 0
    def on_batch(data, sizes):
        nonlocal count
        count += _count(parser.feed(data))
        return False
    await read_batches(stream.getReader(), on_batch, fast=True)
    return count + _count(parser.close())

async def _per_chunk(stream, loop):
    parser = EventStreamParser()
    count = 0
    def feed(chunk):
        nonlocal count
        count += _count(parser.feed(chunk.to_bytes()))
        return False
    proxy = create_proxy(feed)
    try:
        await loop(stream.getReader(), proxy)
    finally:
        proxy.destroy()
    return count + _count(parser.close())

def prepare_local(name, u8, size, batch):
    data = u8.to_bytes()
    LOCAL[name] = [data[i : i + size] for i in range(0, len(data), size)]
    LOCAL[name, "batches"] = [data[i : i + batch] for i in range(0, len(data), batch)]
    return len(LOCAL[name])

def local(name, batches=False):
    parser = EventStreamParser()
    count = 0
    for chunk in LOCAL[(name, "batches") if batches else name]:
        count += _count(parser.feed(chunk))
    return count + _count(parser.close())

bench_bridge = lambda stream: asyncio.ensure_future(_bridge(stream))
bench_per_chunk = lambda stream, loop: asyncio.ensure_future(_per_chunk(stream, loop))
`;

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
                                     log = () => {} }) {
  await py.runPythonAsync(PY_SETUP);
  const names = ["bench_bridge", "bench_per_chunk", "local", "prepare_local", "start_stream", "fast_path"];
  const [benchBridge, benchPerChunk, local, prepareLocal, startStream, fastPath] = names.map((n) => py.globals.get(n));
  const out = { runtime, chunk, runs, batch_bytes: batchBytes, fast_path: fastPath(), pyodide: py.version, shapes: {} };
  for (const shape of shapes) {
    const chunks = cut(shape.bytes, chunk);
    // The bridge's batches, once the stream keeps up: a chunk and the queued ones up to BATCH_BYTES beyond it.
    const batch = chunk * (Math.ceil(batchBytes / chunk) + 1);
    if (prepareLocal(shape.name, shape.bytes, chunk, batch) !== chunks.length) throw new Error("local chunking differs");
    const contenders = {
      esp_td: () => espTextDecoder(createParser, streamOf(chunks).getReader(), false),
      esp_tds: () => espTextDecoderStream(createParser, chunks),
      wc_bridge: () => benchBridge(streamOf(chunks)),
      wc_per_chunk: () => benchPerChunk(streamOf(chunks), perChunkLoop),
      wc_local: async () => local(shape.name),
      wc_local_batch: async () => local(shape.name, true),
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
    const record = { events: shape.events, bytes: shape.bytes.length, chunks: chunks.length, times: {} };
    for (const key of keys) {
      const got = await contenders[key]();  // warm-up, and every contender must see every event
      const want = key === "wc_session" ? shape.session_events : shape.events;
      if (got !== want) throw new Error(`${shape.name}: ${key} counted ${got} events, expected ${want}`);
      record.times[key] = [];
    }
    for (let run = 0; run < runs; run++) {
      const order = keys.slice(run % keys.length).concat(keys.slice(0, run % keys.length));
      for (const key of order) {
        const t0 = performance.now();
        await contenders[key]();
        record.times[key].push(performance.now() - t0);
      }
    }
    out.shapes[shape.name] = record;
    log(`${runtime}: ${shape.name} done`);
  }
  for (const fn of [benchBridge, benchPerChunk, local, prepareLocal, startStream, fastPath]) fn.destroy();
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
  const result = await runBench(py, { createParser, shapes, batchBytes: BATCH_BYTES, chunk: Number(opt("chunk", 1024)),
                                      runs: Number(opt("runs", 7)), runtime: `Node ${process.version}`,
                                      log: (m) => process.stderr.write(m + "\n") });
  process.stdout.write(JSON.stringify(result) + "\n");
}

if (typeof process !== "undefined" && process.argv?.[1] &&
    import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href) {
  await main();
}
