// The Chromium side of build_scripts/bench_bridge.py: a module Web Worker that boots Pyodide from the widget kit
// folder exactly as the kit's worker does (kit lock, our wheel, the kit's static pump registered as
// webclient_pump) and runs bench_bridge.mjs's runBench on the streams the host wrote; posts the result.
//
// page -> worker  {runtimeURL, lockURL, pumpURL, shapesURL, chunk, runs, runtime}
// worker -> page  {result} | {log} | {error}

import { runBench, bootLikeTheKit } from "./bench_bridge.mjs";
import { createParser } from "./eventsource-parser/index.js";

self.onmessage = async ({ data }) => {
  try {
    const { loadPyodide } = await import(new URL("pyodide.mjs", data.runtimeURL).href);
    const { pump, BATCH_BYTES } = await import(data.pumpURL);
    const py = await bootLikeTheKit({ runtimeURL: data.runtimeURL, lockURL: data.lockURL, pump, loadPyodide });
    const index = await (await fetch(new URL("index.json", data.shapesURL))).json();
    const shapes = [];
    for (const shape of index) {
      const bytes = new Uint8Array(await (await fetch(new URL(shape.file, data.shapesURL))).arrayBuffer());
      shapes.push({ ...shape, bytes });
    }
    const result = await runBench(py, { createParser, shapes, batchBytes: BATCH_BYTES, chunk: data.chunk, runs: data.runs,
                                        runtime: data.runtime, log: (log) => self.postMessage({ log }) });
    self.postMessage({ result });
  } catch (err) {
    self.postMessage({ error: String(err?.stack ?? err) });
  }
};
