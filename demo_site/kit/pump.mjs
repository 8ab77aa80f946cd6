// The fast path's read loop as a static module, so no eval is needed (CSP: script-src 'self' 'wasm-unsafe-eval').
// The kit's worker registers it with pyodide.registerJsModule("webclient_pump", { pump }); webclient.browser then
// uses it for every attempt with fast: true (see webclient/browser.py, PUMP_MODULE). Same loop as _PUMP_SOURCE there
// (tests/test_kit_build.py checks that the two are the same code).
//
// Read-ahead: after a read, the chunks the stream has already queued (a fast network, or a consumer that fell
// behind) are taken at once, up to BATCH_BYTES, and handed to Python in ONE synchronous call. A read is never
// waited for to fill a batch: a chunk that has not arrived yet starts the next one, so batching adds no latency.
// `feed` returns true when the session wants no more bytes. The reader is neither released nor cancelled here: the
// Python side owns it.
//
// How a batch crosses: `into` (a PyProxy of a Python bytearray; webclient.browser.read_batches passes one) is where
// the batch's bytes are written, straight into Python's memory, then its chunks' lengths as little-endian uint32
// for a batch of several; the call is `feed(size, count)`, numbers only (`size` the bytes, `count` undefined for one
// chunk). A batch that does not fit in `into`, or any batch when there is no `into` (the call of an earlier wheel),
// crosses as a Uint8Array instead: `feed(bytes, count)`, `bytes` the chunk itself for one chunk (`count`
// undefined), else the chunks concatenated and then their lengths (read_batches accepts both forms). Such bytes are
// valid only during the call (their buffer is reused), which is when Python copies them.

/** Bytes of queued chunks taken into one call into Python. Crossing into Python costs a few microseconds per call
 *  and the session's per-feed work as much again, so a batch of 1 KiB chunks is about twice as fast per byte as the
 *  chunks one by one; larger batches are slower (a longer feed parses slower per byte: 32 KiB cost 7-13% more
 *  through the bridge in Node, build_scripts/bench_bridge.py's shapes). */
export const BATCH_BYTES = 16384;

/**
 * @param {ReadableStreamDefaultReader<Uint8Array>} reader
 * @param {(bytes: Uint8Array | number, count: number | undefined) => boolean} feed
 * @param {{getBuffer(type: string): {data: Uint8Array, release(): void}} | undefined} into
 * @returns {Promise<void>}
 */
export async function pump(reader, feed, into) {
  // Each read is boxed with its outcome, set by one reaction once it settles; after one microtask turn (`await
  // undefined`) the box of a read whose chunk was already queued holds it, while one still waiting for the network
  // is left pending for the next batch. (Cheaper than racing the read against a settled promise, which allocates a
  // promise and two reactions per chunk: the read-ahead's JS cost -30% in Node, build_scripts/bench_bridge.py.)
  const track = () => {
    const box = { read: reader.read(), result: undefined };
    box.read.then((result) => { box.result = result; }, () => { box.result = null; });
    return box;
  };
  // A batch crosses as numbers when it is written into `into`: a Uint8Array argument costs Python a JS proxy and a
  // copy out of it per call (the bridge with its JS read -8% to -25% in Node, decode+SSE through it -1% to -5%,
  // build_scripts/bench_bridge.py's shapes). `view` is into's memory, taken on first use and again when the
  // WebAssembly memory grew, which detaches it (its length reads 0).
  let buffer = null;
  let view = null;
  // Otherwise a batch is copied into this buffer, reused: Python copies it out during the call (allocating a fresh
  // buffer per batch costs more than the copy).
  let scratch = new Uint8Array(2 * BATCH_BYTES);
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
      const count = chunks === null ? undefined : chunks.length;
      const total = chunks === null ? size : size + 4 * count;
      if (into !== undefined && (view === null || view.length === 0)) {
        buffer?.release();
        buffer = null;
        buffer = into.getBuffer("u8");
        view = buffer.data;
      }
      let bytes = view;
      if (view === null || total > view.length) {
        if (chunks === null) {
          if (feed(first.value, undefined)) return;
          continue;
        }
        if (scratch.length < total) scratch = new Uint8Array(total);
        bytes = scratch;
      }
      if (chunks === null) {
        bytes.set(first.value, 0);
      } else {
        // The lengths follow the bytes: one buffer crosses instead of a buffer and an array, whose conversion cost
        // 6-9% of decode+SSE in Chromium (build_scripts/bench_bridge.py).
        const lengths = new DataView(bytes.buffer, bytes.byteOffset + size, 4 * count);
        let at = 0;
        for (let i = 0; i < count; i++) {
          const chunk = chunks[i];
          bytes.set(chunk, at);
          at += chunk.byteLength;
          lengths.setUint32(4 * i, chunk.byteLength, true);
        }
      }
      if (feed(bytes === view ? size : bytes.subarray(0, total), count)) return;
    }
  } finally {
    buffer?.release();
    next.read.catch(() => {});  // a read still pending when the loop ends: its failure is nobody's to handle
  }
}
