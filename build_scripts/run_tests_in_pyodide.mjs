// Run pytest inside Pyodide under Node, with real pytest output and pytest's exit code.
//
//   node [--experimental-wasm-stack-switching] build_scripts/run_tests_in_pyodide.mjs \
//        [--pyodide DIR] [--wheel PATH]... [--mount HOST:GUEST]... [--file HOST:GUEST]... \
//        [--cwd DIR] [-- PYTEST_ARGS...]
//
// What it does, in order:
//   1. imports pyodide.mjs from DIR (default <repo>/build/node/node_modules/pyodide) and boots it; nothing is
//      fetched from a CDN: the runtime files are local and every wheel is given by path;
//   2. installs each --wheel with loadPackage, which never throws: failures arrive via errorCallback and a
//      short result list, so both are checked;
//   3. mounts each host directory at its guest path with NODEFS (tests see edits without a rebuild) and copies
//      each --file into the in-memory FS (e.g. pyproject.toml, for the pytest config and markers);
//   4. chdirs to --cwd (default /proj), disables bytecode writing (nothing lands in the mounted tree) and runs
//      pytest.main(PYTEST_ARGS) (default: tests -q -p no:cacheprovider) with runPythonAsync, so JSPI, when Node
//      has it, lets tests call asyncio.run.
// Exit status: pytest's code; 70 if Pyodide or a wheel could not be set up. Timings go to stderr.
// The tool `python build_scripts/pyodide_tools.py test` builds the arguments; this file is usable alone.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HARNESS_FAILED = 70;
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function parseArgs(argv) {
  const opts = {
    pyodide: path.join(REPO, "build", "node", "node_modules", "pyodide"),
    wheels: [], mounts: [], files: [], cwd: "/proj", pytestArgs: null,
  };
  const pair = (flag, value) => {
    const i = value === undefined ? -1 : value.lastIndexOf(":");
    if (i <= 0) throw new Error(`${flag} needs HOST:GUEST`);
    return [path.resolve(value.slice(0, i)), value.slice(i + 1)];
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") { opts.pytestArgs = argv.slice(i + 1); break; }
    const value = argv[++i];
    if (value === undefined) throw new Error(`${a} needs a value`);
    if (a === "--pyodide") opts.pyodide = path.resolve(value);
    else if (a === "--wheel") opts.wheels.push(path.resolve(value));
    else if (a === "--mount") opts.mounts.push(pair(a, value));
    else if (a === "--file") opts.files.push(pair(a, value));
    else if (a === "--cwd") opts.cwd = value;
    else throw new Error(`unknown option ${a}`);
  }
  if (!opts.pytestArgs || opts.pytestArgs.length === 0) opts.pytestArgs = ["tests", "-q", "-p", "no:cacheprovider"];
  return opts;
}

const note = (msg) => process.stderr.write(`[pyodide-harness] ${msg}\n`);
const seconds = (t0) => ((performance.now() - t0) / 1000).toFixed(2);

// Pyodide may reuse the buffer it hands to write(); Buffer.from copies it before Node queues the write.
const sink = (stream) => ({ write: (buf) => { stream.write(Buffer.from(buf)); return buf.length; } });

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const t0 = performance.now();
  const entry = path.join(opts.pyodide, "pyodide.mjs");
  if (!fs.existsSync(entry)) throw new Error(`${entry} missing (run pyodide_tools.py fetch)`);
  const { loadPyodide } = await import(pathToFileURL(entry).href);
  // A fresh options object every time: loadPyodide mutates it (pyodide-notes §3.3).
  const py = await loadPyodide({ indexURL: opts.pyodide + path.sep, stdout: (s) => process.stdout.write(s + "\n"),
                                 stderr: (s) => process.stderr.write(s + "\n") });
  const tBoot = seconds(t0);

  const t1 = performance.now();
  const errors = [];
  for (const wheel of opts.wheels) if (!fs.existsSync(wheel)) errors.push(`missing wheel ${wheel}`);
  if (errors.length === 0 && opts.wheels.length > 0) {
    const loaded = await py.loadPackage(opts.wheels, {
      messageCallback: () => {},
      errorCallback: (msg) => errors.push(msg),
      checkIntegrity: true,
    });
    if (loaded.length !== opts.wheels.length) errors.push(`loadPackage installed ${loaded.length} of ${opts.wheels.length} wheels`);
  }
  if (errors.length) throw new Error(`wheel installation failed:\n  ${errors.join("\n  ")}`);
  const tWheels = seconds(t1);

  for (const [host, guest] of opts.mounts) {
    if (!fs.statSync(host, { throwIfNoEntry: false })?.isDirectory()) throw new Error(`mount source ${host} is not a directory`);
    py.FS.mkdirTree(guest);
    py.FS.mount(py.FS.filesystems.NODEFS, { root: host }, guest);
  }
  for (const [host, guest] of opts.files) {
    py.FS.mkdirTree(path.posix.dirname(guest));
    py.FS.writeFile(guest, fs.readFileSync(host));
  }
  py.FS.mkdirTree(opts.cwd);

  py.setStdout(sink(process.stdout));
  py.setStderr(sink(process.stderr));
  py.globals.set("_harness_config", JSON.stringify({ cwd: opts.cwd, args: opts.pytestArgs }));
  note(`loadPyodide ${tBoot} s, ${opts.wheels.length} wheels ${tWheels} s; running pytest ${opts.pytestArgs.join(" ")}`);
  const t2 = performance.now();
  const rc = await py.runPythonAsync(`
import json, os, sys
_cfg = json.loads(_harness_config)
os.chdir(_cfg["cwd"])
sys.dont_write_bytecode = True
import pyodide, pyodide.ffi, pytest, webclient
print(f"[pyodide-harness] Python {sys.version.split()[0]} ({sys.platform}), pyodide {pyodide.__version__}, "
      f"JSPI {'on' if pyodide.ffi.can_run_sync() else 'off'}, pytest {pytest.__version__}, "
      f"webclient {webclient.__version__} from {os.path.dirname(webclient.__file__)}", file=sys.stderr, flush=True)
int(pytest.main(_cfg["args"]))
`);
  note(`pytest exit ${rc} after ${seconds(t2)} s; total ${seconds(t0)} s`);
  return rc;
}

let code;
try {
  code = await main();
} catch (err) {
  note(`setup failed: ${err && err.message ? err.message : err}`);
  code = HARNESS_FAILED;
}
// Let queued stdout/stderr drain before exiting (pipes may be asynchronous).
await new Promise((resolve) => process.stdout.write("", resolve));
await new Promise((resolve) => process.stderr.write("", resolve));
process.exit(code);
