// The widget kit's python_stdlib.zip: Pyodide's own, with bytecode for the modules a kit boot imports.
//
//   node [pyodide_tools.pyodide_node_flags] build_scripts/kit_stdlib.mjs PYODIDE_DIR WHEEL OUT_ZIP
//
// Pyodide 314's python_stdlib.zip holds source only, so every boot compiles the ~120 standard-library modules it
// imports (about 2.6 MB of source) in WebAssembly: measured in Node 20, loadPyodide() takes ~2.4 s with the npm
// file and ~0.8 s with this one. This script boots that Pyodide, installs WHEEL as the kit's worker does, imports
// what a boot and the first stream import, then writes OUT_ZIP: every entry of the npm file, in its order, with
// the same bytes and dates, and beside each imported module's `X.py` an `X.pyc` compiled by this very interpreter
// (zipimport's own search order takes `X.pyc` first, so nothing else changes). The pycs are unchecked-hash ones
// (PEP 552): the archive is immutable, like the kit's other content-hashed files, so nothing compares them with
// their source at import; each records its source's hash, which tests/test_kit_build.py checks against the `.py`
// beside it. Entries are stored, not deflated: the server's brotli then compresses the whole file (about the npm
// file's wire size), where deflated entries cannot shrink further.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheelPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: kit_stdlib.mjs PYODIDE_DIR WHEEL OUT_ZIP");
  process.exit(2);
}
const { loadPyodide } = await import(pathToFileURL(path.join(pyodideDir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: pyodideDir + path.sep, stdout: () => {}, stderr: (line) => console.error(line) });
pyodide.FS.writeFile("/tmp/webclient.whl", fs.readFileSync(wheelPath));
const summary = pyodide.runPython(`
import importlib, sys, zipfile

# The kit worker's install step (demo_site/kit/worker.mjs, INSTALL), then what it and a stream import later.
site = next(p for p in sys.path if p.endswith("site-packages"))
with zipfile.ZipFile("/tmp/webclient.whl") as wheel:
    wheel.extractall(site)
finder = sys.path_importer_cache.get(site)
if finder is not None:
    finder.invalidate_caches()
for name in ("webclient.browser", "dataclasses", "random", "js", "pyodide.ffi", "pyodide.ffi.wrappers", "pyodide.code"):
    importlib.import_module(name)

from importlib._bootstrap_external import _code_to_hash_pyc
from importlib.util import source_hash

archive = next(p for p in sys.path if p.endswith(".zip"))
imported = {m.__file__[len(archive) + 1:] for m in list(sys.modules.values())
            if (getattr(m, "__file__", None) or "").startswith(archive + "/") and m.__file__.endswith(".py")}
compiled = 0
with zipfile.ZipFile(archive) as source, zipfile.ZipFile("/tmp/kit_stdlib.zip", "w", zipfile.ZIP_STORED) as out:
    for info in source.infolist():
        data = source.read(info)
        out.writestr(zipfile.ZipInfo(info.filename, info.date_time), data)
        if info.filename in imported:
            # As zipimport compiles a source it imports (_compile_source): line endings normalized, this file name.
            text = data.replace(b"\\r\\n", b"\\n").replace(b"\\r", b"\\n")
            code = compile(text, archive + "/" + info.filename, "exec", dont_inherit=True)
            pyc = _code_to_hash_pyc(code, source_hash(data), checked=False)
            out.writestr(zipfile.ZipInfo(info.filename[:-3] + ".pyc", info.date_time), bytes(pyc))
            compiled += 1
f"{compiled} of {len(imported)} imported modules compiled"
`);
fs.writeFileSync(outPath, pyodide.FS.readFile("/tmp/kit_stdlib.zip"));
console.log(summary);
