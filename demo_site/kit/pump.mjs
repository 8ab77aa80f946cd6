// The fast path's read loop as a static module, so no eval is needed (CSP: script-src 'self' 'wasm-unsafe-eval').
// The kit's worker registers it with pyodide.registerJsModule("webclient_pump", { pump }); webclient.browser then
// uses it for every attempt with fast: true (see webclient/browser.py, PUMP_MODULE). Same loop as _PUMP_SOURCE there
// (tests/test_kit_build.py checks that the two are the same code).
//
// Read-ahead: after a read, the chunks the stream has already queued (a fast network, or a consumer that fell
// behind) are taken at once, up to BATCH_BYTES, and handed to Python in ONE synchronous call: `feed(bytes, count)`,
// `count` undefined and `bytes` the chunk for a single chunk (the usual case at LLM rates); for a batch of `count`
// chunks, `bytes` holds the chunks concatenated, then the chunks' lengths as `count` little-endian uint32
// (webclient.browser.read_batches unpacks them). A read is never waited for to fill a batch: a chunk that has not
// arrived yet starts the next one, so batching adds no latency. A batch's bytes are valid only during the call
// (their buffer is reused), which is when Python copies them. `feed` returns true when the session wants no more
// bytes. The reader is neither released nor cancelled here: the Python side owns it.

/** Bytes of queued chunks taken into one call into Python. Crossing into Python costs a few microseconds per call
 *  and the session's per-feed work as much again, so a batch of 1 KiB chunks is about twice as fast per byte as the
 *  chunks one by one; larger batches are slower (a longer feed parses slower per byte: 32 KiB cost 7-13% more
 *  through the bridge in Node, build_scripts/bench_bridge.py's shapes). */
export const BATCH_BYTES = 16384;

/**
 * @param {ReadableStreamDefaultReader<Uint8Array>} reader
 * @param {(bytes: Uint8Array, count: number | undefined) => boolean} feed
 * @returns {Promise<void>}
 */
export async function pump(reader, feed) {
  // Each read is boxed with its outcome, set by one reaction once it settles; after one microtask turn (`await
  // undefined`) the box of a read whose chunk was already queued holds it, while one still waiting for the network
  // is left pending for the next batch. (Cheaper than racing the read against a settled promise, which allocates a
  // promise and two reactions per chunk: the read-ahead's JS cost -30% in Node, build_scripts/bench_bridge.py.)
  const track = () => {
    const box = { read: reader.read(), result: undefined };
    box.read.then((result) => { box.result = result; }, () => { box.result = null; });
    return box;
  };
  // A batch is copied into this buffer, reused: Python copies it out during the call (allocating a fresh buffer
  // per batch costs more than the copy).
  let scratch = new Uint8Array(2 * BATCH_BYTES);
  let lengths = new DataView(scratch.buffer);
  let next = track();
  try {
    for (;;) {
      const first = await next.read;
      if (first.done) return;
      next = track();
      let chunks = null;
      let size = first.value.byteLength;
      while (size < BATCH_BYTES) {
        await undefined;
        const queued = next.result;
        // undefined: not arrived yet; null: the read failed (delivered what was read, then `await next.read`
        // rethrows); done: the end (seen by `await next.read`)
        if (queued === undefined || queued === null || queued.done) break;
        (chunks ??= [first.value]).push(queued.value);
        size += queued.value.byteLength;
        next = track();
      }
      if (chunks === null) {
        if (feed(first.value, undefined)) return;
        continue;
      }
      // The chunks' lengths follow their bytes as little-endian uint32: one buffer crosses into Python instead of
      // a buffer and an array, whose conversion cost 6-9% of decode+SSE in Chromium (build_scripts/bench_bridge.py).
      const total = size + 4 * chunks.length;
      if (scratch.length < total) {
        scratch = new Uint8Array(total);
        lengths = new DataView(scratch.buffer);
      }
      let at = 0;
      for (let i = 0; i < chunks.length; i++) {
        const chunk = chunks[i];
        scratch.set(chunk, at);
        at += chunk.byteLength;
        lengths.setUint32(size + 4 * i, chunk.byteLength, true);
      }
      if (feed(scratch.subarray(0, total), chunks.length)) return;
    }
  } finally {
    next.read.catch(() => {});  // a read still pending when the loop ends: its failure is nobody's to handle
  }
}
