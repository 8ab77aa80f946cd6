// The fast path's read loop as a static module, so no eval is needed (CSP: script-src 'self' 'wasm-unsafe-eval').
// The kit's worker registers it with pyodide.registerJsModule("webclient_pump", { pump }); webclient.browser then
// uses it for every attempt with fast: true (see webclient/browser.py, PUMP_MODULE). Same loop as _PUMP_SOURCE there:
// `feed(chunk)` is a synchronous call into Python and returns true when the session wants no more bytes. The reader
// is neither released nor cancelled here: the Python side owns it.

/**
 * @param {ReadableStreamDefaultReader<Uint8Array>} reader
 * @param {(chunk: Uint8Array) => boolean} feed
 * @returns {Promise<void>}
 */
export async function pump(reader, feed) {
  for (;;) {
    const { done, value } = await reader.read();
    if (done || feed(value)) return;
  }
}
