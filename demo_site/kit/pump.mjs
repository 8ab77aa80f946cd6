// The fast path's read loop as a static module, so no eval is needed (CSP: script-src 'self' 'wasm-unsafe-eval').
// The kit's worker registers it with pyodide.registerJsModule("webclient_pump", { pump }); webclient.browser then
// uses it for every attempt with fast: true (see webclient/browser.py, PUMP_MODULE). Same loop as _PUMP_SOURCE there
// (tests/test_kit_build.py checks that the two are the same code).
//
// Read-ahead: after a read, the chunks the stream has already queued (a fast network, or a consumer that fell
// behind) are taken at once, up to BATCH_BYTES, and handed to Python in ONE synchronous call: `feed(bytes, sizes)`
// with the chunks concatenated and `sizes` their lengths (`sizes` undefined for a single chunk, the usual case at
// LLM rates). A read is never waited for to fill a batch: a chunk that has not arrived yet starts the next one, so
// batching adds no latency. A batch's bytes are valid only during the call (their buffer is reused), which is
// when Python copies them. `feed` returns true when the session wants no more bytes. The reader is neither
// released nor cancelled here: the Python side owns it.

/** Bytes of queued chunks taken into one call into Python. Crossing into Python costs a few microseconds per call
 *  and the session's per-feed work as much again, so a batch of 1 KiB chunks is about twice as fast per byte as the
 *  chunks one by one; beyond 16 KiB nothing measurable is gained (build_scripts/bench_bridge.py). */
export const BATCH_BYTES = 16384;

/**
 * @param {ReadableStreamDefaultReader<Uint8Array>} reader
 * @param {(bytes: Uint8Array, sizes: number[] | undefined) => boolean} feed
 * @returns {Promise<void>}
 */
export async function pump(reader, feed) {
  // Already settled: a race against it is won by a read only if that read has settled too, i.e. its chunk was
  // queued. (A race costs one promise; a sentinel settling a microtask later would also catch the chunks a JS
  // source enqueues as it is pulled, which take one microtask, at three promises per race: measured 2.5x the cost
  // of the read itself in Chromium. Such a source's first read-ahead then finds nothing: a batch of one chunk.)
  const idle = Promise.resolve(null);
  // A batch is copied into this buffer, reused: Python copies it out during the call (allocating a fresh buffer
  // per batch costs more than the copy).
  let scratch = new Uint8Array(2 * BATCH_BYTES);
  let next = reader.read();
  try {
    for (;;) {
      const first = await next;
      if (first.done) return;
      next = reader.read();
      let chunks = null;
      let size = first.value.byteLength;
      while (size < BATCH_BYTES) {
        let queued;
        try {
          queued = await Promise.race([next, idle]);
        } catch {
          break;  // the next read failed: deliver what was read, then `await next` rethrows
        }
        if (queued === null || queued.done) break;
        (chunks ??= [first.value]).push(queued.value);
        size += queued.value.byteLength;
        next = reader.read();
      }
      if (chunks === null) {
        if (feed(first.value, undefined)) return;
        continue;
      }
      if (scratch.length < size) scratch = new Uint8Array(size);
      const bytes = scratch.subarray(0, size);
      const sizes = chunks.map((chunk) => chunk.byteLength);
      let at = 0;
      for (const chunk of chunks) {
        bytes.set(chunk, at);
        at += chunk.byteLength;
      }
      if (feed(bytes, sizes)) return;
    }
  } finally {
    next.catch(() => {});  // a read still pending when the loop ends: its failure is nobody's to handle
  }
}
