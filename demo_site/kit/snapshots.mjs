// Pyodide memory snapshots for the kit's worker: the WebAssembly memory of a Python that has booted and imported
// webclient, kept in the origin's Cache Storage, so the next boot restores it instead of starting Python again
// (measured in Chromium: a warm boot to ready in about a fifth of a bare loadPyodide(); README, "Boot").
//
// A snapshot is valid only for the exact runtime and wheel it was made with: the key names both content-hashed kit
// directories (a changed file gives a new directory name, hence a new key), and Pyodide itself refuses a snapshot
// of another build (its BUILD_ID is in the snapshot's header). Saving one deletes every other key, so an upgraded
// kit leaves no stale snapshot behind. Anything that goes wrong (no Cache Storage in this context, a quota error, a
// corrupt entry) only means a normal boot: a broken entry is deleted.
//
// Stored form: about half of a fresh interpreter's memory is zero pages, so only the non-zero 64 KiB pages are
// kept, behind a header and a one-byte-per-page map (a 31 MB memory is stored as about 16 MB; encoding and
// decoding are copies, a few milliseconds, unlike compression, which costs a second of CPU per boot).

const CACHE = "webclient-snapshots";
const MAGIC = 0x57435331;  // "WCS1"
const PAGE = 65536;
const HEADER = 12;  // magic, memory length, page count (u32 each, little-endian)

/** Only the non-zero pages of `memory`, with the header and page map. */
export function encode(memory) {
  const pages = Math.ceil(memory.length / PAGE);
  const map = new Uint8Array(pages);
  // Scanned four bytes at a time where the memory allows it (Pyodide's is 16-byte aligned, whole pages long).
  const words = memory.byteOffset % 4 === 0 && memory.length % 4 === 0
    ? new Uint32Array(memory.buffer, memory.byteOffset, memory.length / 4) : memory;
  const perPage = words === memory ? PAGE : PAGE / 4;
  let kept = 0;
  for (let p = 0; p < pages; p++) {
    const end = Math.min((p + 1) * perPage, words.length);
    for (let i = p * perPage; i < end; i++) {
      if (words[i] !== 0) {
        map[p] = 1;
        kept += 1;
        break;
      }
    }
  }
  const out = new Uint8Array(HEADER + pages + kept * PAGE);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, memory.length, true);
  view.setUint32(8, pages, true);
  out.set(map, HEADER);
  let at = HEADER + pages;
  for (let p = 0; p < pages; p++) {
    if (!map[p]) continue;
    const page = memory.subarray(p * PAGE, Math.min((p + 1) * PAGE, memory.length));
    out.set(page, at);
    at += PAGE;
  }
  return out.subarray(0, at);
}

/** The memory `encode` was given; throws on anything that is not one of its outputs. */
export function decode(stored) {
  const view = new DataView(stored.buffer, stored.byteOffset, stored.byteLength);
  if (stored.byteLength < HEADER || view.getUint32(0, true) !== MAGIC) throw new Error("not a webclient snapshot");
  const length = view.getUint32(4, true);
  const pages = view.getUint32(8, true);
  if (pages !== Math.ceil(length / PAGE) || stored.byteLength < HEADER + pages) throw new Error("bad snapshot header");
  const map = stored.subarray(HEADER, HEADER + pages);
  const memory = new Uint8Array(length);
  let at = HEADER + pages;
  for (let p = 0; p < pages; p++) {
    if (!map[p]) continue;
    const size = Math.min(PAGE, length - p * PAGE);
    if (at + size > stored.byteLength) throw new Error("truncated snapshot");
    memory.set(stored.subarray(at, at + size), p * PAGE);
    at += PAGE;
  }
  return memory;
}

/**
 * The snapshot store for one kit version (`key`: an http(s) URL naming its runtime and wheels directories), or
 * null where this context has no usable Cache Storage (a non-secure origin, storage blocked).
 */
export async function openSnapshots(key) {
  let cache;
  try {
    cache = await globalThis.caches.open(CACHE);
  } catch {
    return null;
  }
  return {
    /** The stored memory, or null (none yet, or a broken entry, which is deleted). */
    async load() {
      try {
        const response = await cache.match(key);
        return response ? decode(new Uint8Array(await response.arrayBuffer())) : null;
      } catch {
        await cache.delete(key).catch(() => {});
        return null;
      }
    },
    /** Store `memory` under this key and delete every other snapshot; false if the store refused it. */
    async save(memory) {
      try {
        await cache.put(key, new Response(encode(memory), { headers: { "content-type": "application/octet-stream" } }));
        for (const request of await cache.keys()) {
          if (request.url !== key) await cache.delete(request);
        }
        return true;
      } catch {
        return false;
      }
    },
    /** Forget this key's snapshot (one that failed to restore). */
    async drop() {
      await cache.delete(key).catch(() => {});
    },
  };
}
