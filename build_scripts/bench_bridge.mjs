// Bridge benchmark: per-chunk cost of webclient.browser's read loops, and decode+SSE throughput against
// eventsource-parser, on the same bytes in the same JS runtime (Node here; Chromium through bench_bridge.py).
//
//   node build_scripts/bench_bridge.mjs --pyodide DIR --wheel PATH [--mib 10] [--chunk 1024] [--runs 5]
//
// Prints one JSON object on stdout. The same runBench() is imported by the Chromium page that bench_bridge.py
// serves, so both runtimes measure exactly the same code. Variants (best of --runs after one warm-up):
//   js_read          JS only: reader.read() loop over the stream, touching each chunk's length
//   js_decode_sse    JS only: stream.pipeThrough(TextDecoderStream) -> eventsource-parser 4.x feed()
//   py_pull          webclient.browser.read_chunks(fast=False): await reader.read() per chunk, Uint8Array -> bytes
//   py_fast          webclient.browser.read_chunks(fast=True): the JS pump calling a Python proxy per chunk
//   py_decode_sse    read_chunks(fast=True) feeding EventStreamParser (UTF-8 decode + WHATWG SSE), i.e. the whole
//                    decode+SSE path with the bytes arriving from JS
//   py_decode_sse_local   EventStreamParser over the same chunks already in Python memory (no bridge)
//   py_session_fast / py_session_pull   BrowserStream end to end (fetch stand-in -> gate -> StreamSession for
//                    openai-chat -> updates), for information
// Every stream is a fresh ReadableStream over the same pre-cut Uint8Array chunks.

const PY_SETUP = `
import asyncio
from webclient import EventStreamParser
from webclient.browser import BrowserStream, read_chunks

def _start(coro):
    return asyncio.ensure_future(coro)

async def _null(stream, fast):
    total = 0
    def sink(data):
        nonlocal total
        total += len(data)
        return False
    await read_chunks(stream.getReader(), sink, fast=fast)
    return total

async def _sse(stream):
    parser = EventStreamParser()
    count = 0
    def sink(data):
        nonlocal count
        count += len(parser.feed(data))
        return False
    await read_chunks(stream.getReader(), sink, fast=True)
    parser.close()
    return count

_LOCAL_CHUNKS = []

def prepare_local(u8, size):
    data = u8.to_bytes()
    _LOCAL_CHUNKS[:] = [data[i : i + size] for i in range(0, len(data), size)]
    return len(_LOCAL_CHUNKS)

def sse_local():
    parser = EventStreamParser()
    count = 0
    for data in _LOCAL_CHUNKS:
        count += len(parser.feed(data))
    parser.close()
    return count

async def _session(fetch, fast):
    stream = BrowserStream("http://bench.invalid/v1/chat/completions", "openai-chat", fast=fast, fetch=fetch)
    result = await stream.run()
    return result.outcome.value + ":" + str(result.telemetry.complete_sse_event_count)

bench_null = lambda stream, fast: _start(_null(stream, fast))
bench_sse = lambda stream: _start(_sse(stream))
bench_session = lambda fetch, fast: _start(_session(fetch, fast))
`;

const CONTENT = "Grüße aus Zürich – € 5 😀 naïve café ";

/** ~mib MiB of openai-chat SSE (raw UTF-8 deltas), ending with a stop chunk and [DONE]. */
export function makeData(mib) {
  const enc = new TextEncoder();
  const target = mib * 1024 * 1024;
  const parts = [];
  let size = 0;
  for (let i = 0; size < target; i++) {
    const ev = enc.encode(`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"${CONTENT}${i}"},"finish_reason":null}]}\n\n`);
    parts.push(ev);
    size += ev.length;
  }
  parts.push(enc.encode('data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'));
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { all.set(p, at); at += p.length; }
  return { bytes: all, events: parts.length + 1 };
}

function cut(bytes, size) {
  const chunks = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.slice(i, i + size));
  return chunks;
}

function streamOf(chunks) {
  let i = 0;
  return new ReadableStream({ pull(ctl) { if (i < chunks.length) ctl.enqueue(chunks[i++]); else ctl.close(); } });
}

async function best(runs, fn) {
  await fn(); // warm-up
  let min = Infinity;
  let check;
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    check = await fn();
    min = Math.min(min, performance.now() - t0);
  }
  return { ms: min, check };
}

export async function runBench(py, { createParser, mib = 10, chunk = 1024, runs = 5, runtime = "node" }) {
  const { bytes, events } = makeData(mib);
  const chunks = cut(bytes, chunk);
  await py.runPythonAsync(PY_SETUP);
  const g = (name) => py.globals.get(name);
  const fns = ["bench_null", "bench_sse", "bench_session", "sse_local", "prepare_local"].map(g);
  const [benchNull, benchSse, benchSession, sseLocal, prepareLocal] = fns;
  if (prepareLocal(bytes, chunk) !== chunks.length) throw new Error("local chunking differs");
  const fetchFor = () => async () => new Response(streamOf(chunks), { status: 200, headers: { "content-type": "text/event-stream" } });

  const results = {
    runtime, bytes: bytes.length, chunks: chunks.length, chunk_size: chunk, sse_events: events, runs,
    variants: {},
  };
  const v = results.variants;
  v.js_read = await best(runs, async () => {
    const reader = streamOf(chunks).getReader();
    let n = 0;
    for (;;) { const { done, value } = await reader.read(); if (done) break; n += value.length; }
    return n;
  });
  v.js_decode_sse = await best(runs, async () => {
    let count = 0;
    const parser = createParser({ onEvent: () => { count += 1; } });
    const reader = streamOf(chunks).pipeThrough(new TextDecoderStream()).getReader();
    for (;;) { const { done, value } = await reader.read(); if (done) break; parser.feed(value); }
    return count;
  });
  v.py_pull = await best(runs, () => benchNull(streamOf(chunks), false));
  v.py_fast = await best(runs, () => benchNull(streamOf(chunks), true));
  v.py_decode_sse = await best(runs, () => benchSse(streamOf(chunks)));
  v.py_decode_sse_local = await best(runs, async () => sseLocal());
  v.py_session_fast = await best(Math.min(runs, 3), () => benchSession(fetchFor(), true));
  v.py_session_pull = await best(Math.min(runs, 3), () => benchSession(fetchFor(), false));
  for (const f of fns) f.destroy();
  return results;
}

// -- Node entry point ------------------------------------------------------------------------------------------

async function main() {
  const { default: path } = await import("node:path");
  const { pathToFileURL } = await import("node:url");
  const args = process.argv.slice(2);
  const opt = (name, dflt) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : dflt; };
  const pyodideDir = path.resolve(opt("pyodide"));
  const { loadPyodide } = await import(pathToFileURL(path.join(pyodideDir, "pyodide.mjs")).href);
  const { createParser } = await import(pathToFileURL(path.resolve(opt("eventsource-parser"))).href);
  const py = await loadPyodide({ indexURL: pyodideDir + path.sep, stdout: (s) => process.stderr.write(s + "\n") });
  const errors = [];
  const loaded = await py.loadPackage([path.resolve(opt("wheel"))], { messageCallback: () => {}, errorCallback: (m) => errors.push(m) });
  if (errors.length || loaded.length !== 1) throw new Error(`wheel install failed: ${errors.join("; ")}`);
  const results = await runBench(py, { createParser, mib: Number(opt("mib", 10)), chunk: Number(opt("chunk", 1024)),
                                       runs: Number(opt("runs", 5)), runtime: `node ${process.version}` });
  process.stdout.write(JSON.stringify(results) + "\n");
}

if (typeof process !== "undefined" && process.argv && import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href) {
  await main();
}
