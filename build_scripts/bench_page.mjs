// The page of build_scripts/bench_bridge.py in Chromium: runs bench_worker.mjs (webclient in Pyodide in a module
// Web Worker, booted as the kit's worker, against eventsource-parser in the same worker), then, for information,
// the widget kit end to end (createClient() + client.stream() over loopback HTTP, the demo's exact path: the kit's
// worker, its pump, one message per batch of updates to this page) against a JS client in this page doing
// fetch + TextDecoder + eventsource-parser + JSON.parse on the same URL. Sets window.__bench (JSON) when done.

import { espTextDecoder } from "./bench_bridge.mjs";
import { createParser } from "./eventsource-parser/index.js";

const config = await (await fetch("bench_config.json")).json();
window.__log = [];

function inWorker() {
  const worker = new Worker("bench_worker.mjs", { type: "module" });
  return new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => {
      if (data.log) window.__log.push(data.log);
      else if (data.error) reject(new Error(data.error));
      else resolve(data.result);
    };
    worker.onerror = (event) => reject(new Error(event.message || "the benchmark worker failed"));
    const at = (path) => new URL(path, location.href).href;
    worker.postMessage({ runtimeURL: at(config.runtime), lockURL: at(config.lock), pumpURL: at(config.pump),
                         shapesURL: at("shapes/"), chunk: config.chunk, runs: config.runs, runtime: config.runtime_name });
  }).finally(() => worker.terminate());
}

const jsClient = async (url) => espTextDecoder(createParser, (await fetch(url)).body.getReader(), true);

async function kitEndToEnd() {
  const { createClient } = await import("./webclient/webclient.mjs");
  const client = await createClient();
  const out = { fast_path: client.fastPath, shapes: {} };
  try {
    for (const shape of config.shapes.filter((s) => s.route)) {
      const url = new URL(`shapes/${shape.file}`, location.href);
      let chunks = 0;
      const contenders = {
        js_client: () => jsClient(url),
        kit: async () => {
          const stream = client.stream({ route: shape.route, url, method: "GET", limits: shape.limits,
                                         deadlines: { total_ms: null, idle_ms: null, first_event_ms: null } });
          for await (const update of stream) void update;
          const result = await stream.result;
          if (result.outcome !== shape.outcome) throw new Error(`${shape.name}: the kit ended ${result.outcome}`);
          chunks = result.telemetry.chunk_count;
          return result.telemetry.complete_sse_event_count;
        },
      };
      const record = { times: { js_client: [], kit: [] } };
      for (const [key, run] of Object.entries(contenders)) {
        const got = await run();
        if (got !== shape.events) throw new Error(`${shape.name}: ${key} counted ${got} events`);
      }
      for (let run = 0; run < config.kit_runs; run++) {
        for (const key of run % 2 ? ["kit", "js_client"] : ["js_client", "kit"]) {
          const t0 = performance.now();
          await contenders[key]();
          record.times[key].push(performance.now() - t0);
        }
      }
      record.network_chunks = chunks;
      out.shapes[shape.name] = record;
      window.__log.push(`kit end to end: ${shape.name} done`);
    }
  } finally {
    await client.close();
  }
  return out;
}

try {
  const worker = await inWorker();
  const kit = config.kit_runs > 0 ? await kitEndToEnd() : null;
  window.__bench = JSON.stringify({ worker, kit });
} catch (err) {
  window.__bench = JSON.stringify({ error: String(err?.stack ?? err) });
}
