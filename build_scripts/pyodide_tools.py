"""Pinned, offline Pyodide tooling for webclient (stdlib only; run it with the project venv's python).

    python build_scripts/pyodide_tools.py fetch            npm runtime + pinned PyPI wheels -> build/
    python build_scripts/pyodide_tools.py wheel            build our wheel from the tree -> build/dist/
    python build_scripts/pyodide_tools.py kit OUT_DIR      the widget kit folder (webclient.mjs + runtime + wheels)
    python build_scripts/pyodide_tools.py site [DIR]       static dir: demo page, examples/, the kit at DIR/webclient/
    python build_scripts/pyodide_tools.py test [ARGS...]   run tests/ inside Pyodide under Node; ARGS go to pytest

Everything lands under ``<repo>/build/`` (gitignored) except the ``site`` directory you name:

    build/node/                   copy of build_scripts/package*.json + node_modules/ (``npm ci``)
    build/pyodide-wheels/         the pure-Python wheels of PINNED_WHEELS, checked against their sha256
    build/dist/                   webclient-<version>-py3-none-any.whl, rebuilt on every ``wheel``/``test``
    build/compressed/             brotli/gzip sidecars by the sha256 of their source (compressing is slow)

Only ``fetch`` needs the network (the npm and PyPI registries; never a CDN). It is idempotent: the npm step
is skipped while ``build/node/.fetch-stamp.json`` matches the package files and the sha256 of every runtime
file it recorded, and a wheel is downloaded only if its file is missing or its sha256 differs from the pin.
``test`` and ``site`` call ``fetch`` first, so once fetched everything works offline.

Exit status: ``test`` returns pytest's own exit code (0 passed, 1 failed, 5 no tests, ...) from inside
Pyodide; the harness itself exits 70 when it cannot set Pyodide up. Tool errors exit 2 with one line.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "build_scripts"
BUILD = REPO / "build"
NODE_DIR = BUILD / "node"
PYODIDE_PKG = NODE_DIR / "node_modules" / "pyodide"
WHEELS_DIR = BUILD / "pyodide-wheels"
DIST_DIR = BUILD / "dist"
HARNESS = SCRIPTS / "run_tests_in_pyodide.mjs"
#: The demo page's own files (index.html, app.js, ...), copied to the top of a ``site`` dir.
DEMO_STATIC = REPO / "demo_site" / "static"
#: The embedding example (README "Embed it in your page"), copied to ``site/examples/``.
DEMO_EXAMPLES = REPO / "demo_site" / "examples"
#: The widget kit's JS sources (webclient.mjs, worker.mjs, pump.mjs, webclient.d.ts).
KIT_SOURCES = REPO / "demo_site" / "kit"
COMPRESSED = BUILD / "compressed"
FETCH_STAMP = NODE_DIR / ".fetch-stamp.json"

#: npm ``pyodide`` version; build_scripts/package.json pins the same string exactly.
PYODIDE_VERSION = "314.0.7"
#: The CPython version inside that Pyodide: the ``--python-version`` for ``pip download``.
PYODIDE_PYTHON = "3.14"
#: Build backend used for our wheel; the same pin as ``[build-system] requires`` in pyproject.toml.
HATCHLING_VERSION = "1.33.0"
#: Oldest Node whose ``--experimental-wasm-stack-switching`` (JSPI) Pyodide 314 accepts (pyodide-notes §1.3).
MIN_NODE_MAJOR = 20

#: Files of the npm package needed at run time (pyodide-notes §3.3); pyodide.js only if the package has it.
RUNTIME_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
OPTIONAL_RUNTIME_FILES = ("pyodide.js",)


@dataclass(frozen=True)
class PinnedWheel:
    """One pure-Python wheel from PyPI, pinned by version and by the sha256 of the exact file."""

    name: str
    version: str
    file_name: str
    sha256: str
    #: "test": installed for the in-Pyodide test run; "site": served by the static site (micropip).
    role: str


#: Every wheel we take from PyPI for Pyodide. pytest 9.0.3 and its pure deps (pytest-pyodide broke on 9.2,
#: notes §4.1; we do not use it, but keep the host and Pyodide pytest identical). hypothesis 6.155.2 needs only
#: sortedcontainers (attrs is no longer a dependency). micropip 0.11.1 vendors packaging and depends on
#: nothing. Versions match the host venv so the same tests run under the same pytest/hypothesis on both.
PINNED_WHEELS: tuple[PinnedWheel, ...] = (
    PinnedWheel("pytest", "9.0.3", "pytest-9.0.3-py3-none-any.whl",
                "2c5efc453d45394fdd706ade797c0a81091eccd1d6e4bccfcd476e2b8e0ab5d9", "test"),
    PinnedWheel("pluggy", "1.7.0", "pluggy-1.7.0-py3-none-any.whl",
                "7dd7b0d8832ba3cb632c306926ded123429211b83641b35dc5c41ad2d34f9bec", "test"),
    PinnedWheel("iniconfig", "2.3.1", "iniconfig-2.3.1-py3-none-any.whl",
                "9121e2c1fdb355232495be3194c8dfe87ccc2d5dee45947b78e68f499790d7a7", "test"),
    PinnedWheel("packaging", "26.4", "packaging-26.4-py3-none-any.whl",
                "81383611a09c1bc0b08b76e0fd5829d7c6824c65b27a6aee339da133f4233ea2", "test"),
    PinnedWheel("pygments", "2.21.0", "pygments-2.21.0-py3-none-any.whl",
                "2363c69b61c4a97c838da3b130dcd6468f4848992b21a82f2a63ec34377137d9", "test"),
    PinnedWheel("hypothesis", "6.155.2", "hypothesis-6.155.2-py3-none-any.whl",
                "c85ce6dcd630a90ce501f1d1dd1bc84b97f5649ca8a27e134c8cbf5aa480b1a5", "test"),
    PinnedWheel("sortedcontainers", "2.4.0", "sortedcontainers-2.4.0-py2.py3-none-any.whl",
                "a163dcaede0f1c021485e957a39245190e74249897e2ae4b2aa38595db237ee0", "test"),
    PinnedWheel("micropip", "0.11.1", "micropip-0.11.1-py3-none-any.whl",
                "768de165adb8e66906039d8fec4127a57f522dfdf8e6fbff877a4616941ecfd3", "site"),
)

#: Lock entry fields for a wheel the npm lock does not know (our own); the loader needs all of them.
_LOCK_ENTRY_TEMPLATE = {"depends": [], "install_dir": "site", "package_type": "package",
                        "tool": {}, "unvendored_tests": False}


class ToolError(Exception):
    """A step cannot go on (missing tool, failed download, checksum mismatch); the message says which."""


def log(message: str) -> None:
    """Progress line on stderr, so stdout carries only the test harness's pytest output."""
    print(f"[pyodide-tools] {message}", file=sys.stderr, flush=True)


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run(what: str, cmd: Sequence[str | Path], *, cwd: Path | None = None) -> None:
    """Run a command with inherited output; raise ToolError naming ``what`` on a nonzero exit."""
    rc = subprocess.call([str(c) for c in cmd], cwd=cwd)
    if rc != 0:
        raise ToolError(f"{what} exited with {rc} (network needed for a first fetch)")


def copy_if_changed(src: Path, dst: Path) -> bool:
    """Copy ``src`` to ``dst`` unless ``dst`` already has the same sha256; return True if it copied."""
    if dst.is_file() and sha256_of(dst) == sha256_of(src):
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)
    return True


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically unless the file already holds exactly these bytes."""
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


# --------------------------------------------------------------------------------------------- fetch


def node_executable() -> str:
    """Path of ``node`` ($NODE or PATH), checked to be at least MIN_NODE_MAJOR."""
    node = os.environ.get("NODE") or shutil.which("node")
    if not node:
        raise ToolError("node not found on PATH (Node >= 20 is required)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    match = re.match(r"v(\d+)\.", version)
    if not match or int(match.group(1)) < MIN_NODE_MAJOR:
        raise ToolError(f"node {version or '?'} is too old; Node >= {MIN_NODE_MAJOR} is required")
    return node


def _runtime_file_hashes() -> dict[str, str]:
    """sha256 of each runtime file present in the installed npm package."""
    names = [n for n in RUNTIME_FILES + OPTIONAL_RUNTIME_FILES if (PYODIDE_PKG / n).is_file()]
    return {n: sha256_of(PYODIDE_PKG / n) for n in names}


def _npm_inputs() -> dict[str, str]:
    """sha256 of the package files the install is derived from."""
    return {n: sha256_of(SCRIPTS / n) for n in ("package.json", "package-lock.json") if (SCRIPTS / n).is_file()}


def _npm_up_to_date() -> bool:
    """True if the stamp matches the package files and every recorded runtime file still has its sha256."""
    try:
        stamp = json.loads(FETCH_STAMP.read_text())
    except (OSError, ValueError):
        return False
    if stamp.get("inputs") != _npm_inputs() or stamp.get("pyodide") != PYODIDE_VERSION:
        return False
    files = stamp.get("files", {})
    if not set(RUNTIME_FILES) <= set(files):
        return False
    return all((PYODIDE_PKG / n).is_file() and sha256_of(PYODIDE_PKG / n) == h for n, h in files.items())


def fetch_npm() -> None:
    """``npm ci`` the pinned packages into build/node/ unless the stamp shows they are already there."""
    if _npm_up_to_date():
        log(f"npm: pyodide@{PYODIDE_VERSION} already installed in {NODE_DIR.relative_to(REPO)} (checksums ok)")
        return
    node_executable()
    npm = shutil.which("npm")
    if not npm:
        raise ToolError("npm not found on PATH")
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    FETCH_STAMP.unlink(missing_ok=True)
    shutil.copyfile(SCRIPTS / "package.json", NODE_DIR / "package.json")
    quiet = ["--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
    if (SCRIPTS / "package-lock.json").is_file():
        shutil.copyfile(SCRIPTS / "package-lock.json", NODE_DIR / "package-lock.json")
        log(f"npm: npm ci in {NODE_DIR.relative_to(REPO)}")
        run("npm ci", [npm, "ci", *quiet], cwd=NODE_DIR)
    else:
        (NODE_DIR / "package-lock.json").unlink(missing_ok=True)
        log(f"npm: no package-lock.json yet; npm install in {NODE_DIR.relative_to(REPO)}")
        run("npm install", [npm, "install", *quiet], cwd=NODE_DIR)
        shutil.copyfile(NODE_DIR / "package-lock.json", SCRIPTS / "package-lock.json")
        log("npm: wrote build_scripts/package-lock.json (commit it)")
    installed = json.loads((PYODIDE_PKG / "package.json").read_text()).get("version")
    if installed != PYODIDE_VERSION:
        raise ToolError(f"npm installed pyodide {installed}, expected {PYODIDE_VERSION}")
    files = _runtime_file_hashes()
    missing = set(RUNTIME_FILES) - set(files)
    if missing:
        raise ToolError(f"npm package pyodide lacks runtime files: {sorted(missing)}")
    stamp = {"pyodide": PYODIDE_VERSION, "inputs": _npm_inputs(), "files": files}
    FETCH_STAMP.write_text(json.dumps(stamp, indent=2, sort_keys=True) + "\n")
    log(f"npm: installed pyodide@{PYODIDE_VERSION}")


def fetch_wheels() -> None:
    """Download every pinned wheel whose file is missing or has the wrong sha256 (pip --require-hashes)."""
    WHEELS_DIR.mkdir(parents=True, exist_ok=True)
    wanted = {w.file_name for w in PINNED_WHEELS}
    for stale in WHEELS_DIR.glob("*.whl"):
        if stale.name not in wanted:
            stale.unlink()
    todo = [w for w in PINNED_WHEELS
            if not (WHEELS_DIR / w.file_name).is_file() or sha256_of(WHEELS_DIR / w.file_name) != w.sha256]
    if not todo:
        log(f"wheels: {len(PINNED_WHEELS)} pinned wheels present in {WHEELS_DIR.relative_to(REPO)} (checksums ok)")
        return
    for w in todo:
        (WHEELS_DIR / w.file_name).unlink(missing_ok=True)
    log(f"wheels: downloading {', '.join(f'{w.name}=={w.version}' for w in todo)}")
    with tempfile.TemporaryDirectory(prefix="pyodide-wheels-") as tmp:
        requirements = Path(tmp) / "requirements.txt"
        requirements.write_text("".join(f"{w.name}=={w.version} --hash=sha256:{w.sha256}\n" for w in todo))
        run("pip download", [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
             "--no-deps", "--only-binary=:all:", "--python-version", PYODIDE_PYTHON,
             "--require-hashes", "-r", requirements, "-d", WHEELS_DIR])
    for w in todo:
        path = WHEELS_DIR / w.file_name
        if not path.is_file():
            raise ToolError(f"pip download did not produce {w.file_name}")
        if sha256_of(path) != w.sha256:
            path.unlink()
            raise ToolError(f"{w.file_name}: sha256 differs from the pin")
    log(f"wheels: {len(todo)} downloaded and verified")


def cmd_fetch() -> None:
    """Both fetch steps; the only step that may use the network."""
    fetch_npm()
    fetch_wheels()


# --------------------------------------------------------------------------------------------- wheel


_BUILD_WHEEL = """
import importlib.metadata, sys
from hatchling.build import build_wheel
have = importlib.metadata.version("hatchling")
if have != sys.argv[2]:
    sys.exit(f"hatchling {have} is installed; the build is pinned to hatchling=={sys.argv[2]}")
print(build_wheel(sys.argv[1]))
"""


def cmd_wheel() -> Path:
    """Build webclient's wheel from the working tree with hatchling's API; replace any older wheel."""
    DIST_DIR.mkdir(parents=True, exist_ok=True)
    BUILD.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="wheel-", dir=BUILD) as tmp:
        proc = subprocess.run([sys.executable, "-c", _BUILD_WHEEL, tmp, HATCHLING_VERSION], cwd=REPO,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            hint = "" if "hatchling" in proc.stderr else " (is the venv set up? build_scripts/setup_env.sh)"
            raise ToolError(f"wheel build failed{hint}")
        built = Path(tmp) / proc.stdout.strip().splitlines()[-1]
        for old in DIST_DIR.glob("webclient-*.whl"):
            if old.name != built.name:
                old.unlink()
        target = DIST_DIR / built.name
        os.replace(built, target)
    log(f"wheel: {target.relative_to(REPO)} ({target.stat().st_size} B, sha256 {sha256_of(target)[:12]})")
    return target


# --------------------------------------------------------------------------------------------- kit

#: The npm runtime files the kit serves as they are. The npm lock is replaced by the kit's own (it names wheels we
#: do not serve), ``python_stdlib.zip`` by :func:`kit_stdlib`'s, and ``pyodide.js``, the classic-script loader, is not
#: needed by an ES module.
KIT_RUNTIME_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm")
#: Built by build_scripts/kit_stdlib.mjs (see there) and kept here by the sha256 of its inputs.
KIT_STDLIB_DIR = BUILD / "kit-stdlib"
KIT_STDLIB_SCRIPT = SCRIPTS / "kit_stdlib.mjs"
#: The kit's JS files loaded from its content-hashed ``kit-…`` directory (webclient.mjs finds them by MANIFEST).
KIT_MODULES = ("worker.mjs", "pump.mjs", "snapshots.mjs")
#: Hex digits of sha256 in a content-hashed directory name, ``<prefix>-<hex>``: the demo server serves every path
#: with such a segment as immutable (interfaces.md), so a changed file must get a new directory name.
HASH_CHARS = 16
#: Suffixes worth precompressing, and the smallest file that gets sidecars (interfaces.md). A sidecar is kept only
#: if it saves at least MIN_SAVING of the file: wheels are deflated already (the kit's python_stdlib.zip is stored).
COMPRESSIBLE = (".wasm", ".mjs", ".js", ".json", ".html", ".css", ".ts", ".mts", ".txt", ".zip", ".whl", ".svg")
MIN_COMPRESS_BYTES = 1024
MIN_SAVING = 0.05
#: Brotli quality 11 (the slowest, smallest) with the format's largest window (24 bits: 16 MiB, which every
#: browser decoder supports) so the 9.6 MB wasm is compressed as one piece; gzip level 9 with mtime 0
#: (reproducible). Results are cached in build/compressed/ by the sha256 of their source.
BROTLI_QUALITY = 11
BROTLI_WINDOW_BITS = 24
GZIP_LEVEL = 9
_MANIFEST = re.compile(r"/\*@manifest\*/.*?/\*@end\*/", re.S)
_BROTLI_JS = """
const fs = require("node:fs"), zlib = require("node:zlib");
for (const [src, dst] of JSON.parse(process.argv[1])) {
  const data = fs.readFileSync(src);
  const out = zlib.brotliCompressSync(data, { params: {
    [zlib.constants.BROTLI_PARAM_QUALITY]: Number(process.argv[2]),
    [zlib.constants.BROTLI_PARAM_LGWIN]: Number(process.argv[3]),
    [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length } });
  fs.writeFileSync(dst + ".tmp", out);
  fs.renameSync(dst + ".tmp", dst);
}
"""

#: What a planned file holds: a file to copy, or bytes to write.
Source = Path | bytes


def _digest(source: Source) -> str:
    return sha256_of(source) if isinstance(source, Path) else hashlib.sha256(source).hexdigest()


def _size(source: Source) -> int:
    return source.stat().st_size if isinstance(source, Path) else len(source)


def hashed_dir(prefix: str, files: dict[str, Source]) -> str:
    """``prefix-<first HASH_CHARS hex of sha256 over the directory's files>`` (names and contents)."""
    listing = "".join(f"{name}\0{_digest(files[name])}\n" for name in sorted(files))
    return f"{prefix}-{hashlib.sha256(listing.encode()).hexdigest()[:HASH_CHARS]}"


def _lock_entry(npm_lock: dict[str, object], wheel: Path, file_name: str) -> tuple[str, dict[str, object]]:
    """(key, entry) for one served wheel: the npm lock's entry if it has one, with file/version/sha256 redone."""
    name, version = wheel.name.split("-")[:2]
    key = name.lower().replace("_", "-")
    packages = npm_lock.get("packages", {})
    known = packages.get(key) if isinstance(packages, dict) else None
    entry: dict[str, object] = dict(known) if isinstance(known, dict) else \
        {"name": key, "imports": [name.lower()], **_LOCK_ENTRY_TEMPLATE}
    entry.update(file_name=file_name, version=version, sha256=sha256_of(wheel))
    return key, entry


def lock_file(npm_lock: dict[str, object], wheels: Sequence[tuple[Path, str]]) -> bytes:
    """A ``pyodide-lock.json`` listing exactly ``wheels`` ((path, file_name relative to the lock's directory)),
    with their real sha256 (the browser checks it: SRI)."""
    packages = dict(_lock_entry(npm_lock, path, file_name) for path, file_name in wheels)
    return (json.dumps({"info": npm_lock["info"], "packages": packages}, indent=2, sort_keys=True) + "\n").encode()


def kit_stdlib(wheel: Path) -> Path:
    """The kit's ``python_stdlib.zip``: npm's, stored, with bytecode beside the modules a kit boot imports
    (build_scripts/kit_stdlib.mjs says why and how). Built once per (npm file, ``wheel``, script): the build boots
    Pyodide in Node, a few seconds; the same inputs give the same bytes, so its compressed sidecars stay cached."""
    stock = PYODIDE_PKG / "python_stdlib.zip"
    inputs = "".join(f"{sha256_of(path)}\n" for path in (stock, wheel, KIT_STDLIB_SCRIPT))
    key = hashlib.sha256(inputs.encode()).hexdigest()[:HASH_CHARS]
    target = KIT_STDLIB_DIR / key / "python_stdlib.zip"
    if target.is_file():
        return target
    node = node_executable()
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kit-stdlib-", dir=KIT_STDLIB_DIR) as tmp:
        built = Path(tmp) / "python_stdlib.zip"
        proc = subprocess.run([node, *pyodide_node_flags(node), KIT_STDLIB_SCRIPT, PYODIDE_PKG, wheel, built],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not built.is_file():
            raise ToolError(f"kit_stdlib.mjs exited with {proc.returncode}: {proc.stderr.strip()[-300:]}")
        os.replace(built, target)  # atomic: a concurrent build of the same key writes the same bytes
    for old in KIT_STDLIB_DIR.iterdir():
        if old.is_dir() and old.name != key and not old.name.startswith("kit-stdlib-"):
            shutil.rmtree(old, ignore_errors=True)
    log(f"kit stdlib: {proc.stdout.strip()} in {time.perf_counter() - started:.1f} s "
        f"({stock.stat().st_size} -> {target.stat().st_size} B, entries stored)")
    return target


def kit_plan(wheel: Path) -> dict[str, Source]:
    """Every file of the kit folder, by relative path::

        webclient.mjs  webclient.d.ts  webclient.d.mts     entry files (fixed names; MANIFEST filled in)
        runtime-<hash>/   the npm runtime files (python_stdlib.zip with bytecode added: :func:`kit_stdlib`),
                          micropip's wheel and a pyodide-lock.json listing micropip, so a stock
                          ``loadPyodide({indexURL})`` + ``loadPackage("micropip")`` works offline
        wheels-<hash>/    our wheel and the lock the kit boots with (webclient + micropip from runtime-<hash>/)
        kit-<hash>/       worker.mjs, pump.mjs, snapshots.mjs
    """
    npm_lock = json.loads((PYODIDE_PKG / "pyodide-lock.json").read_text())
    [micropip] = [WHEELS_DIR / w.file_name for w in PINNED_WHEELS if w.role == "site"]
    runtime: dict[str, Source] = {n: PYODIDE_PKG / n for n in KIT_RUNTIME_FILES}
    runtime["python_stdlib.zip"] = kit_stdlib(wheel)
    runtime[micropip.name] = micropip
    runtime["pyodide-lock.json"] = lock_file(npm_lock, [(micropip, micropip.name)])
    runtime_dir = hashed_dir("runtime", runtime)
    served = [(wheel, wheel.name), (micropip, f"../{runtime_dir}/{micropip.name}")]
    wheels: dict[str, Source] = {wheel.name: wheel, "pyodide-lock.json": lock_file(npm_lock, served)}
    wheels_dir = hashed_dir("wheels", wheels)
    modules: dict[str, Source] = {n: KIT_SOURCES / n for n in KIT_MODULES}
    kit_dir = hashed_dir("kit", modules)
    # Files fetched during boot whose (decompressed) bytes the worker counts for onBoot's download progress. Not
    # the wasm: reading a clone of its response costs Chromium's compiled-code cache (measured: a reload ~0.5 s
    # slower), so it streams into WebAssembly compilation untouched, in parallel with these.
    counted = {f"{runtime_dir}/python_stdlib.zip": runtime["python_stdlib.zip"], f"{wheels_dir}/{wheel.name}": wheel}
    # The worker installs our wheel itself (so that it can snapshot the result; see the kit's snapshots.mjs):
    # its name and Subresource Integrity, as the lock gives them to Pyodide's loader.
    integrity = "sha256-" + base64.b64encode(hashlib.sha256(wheel.read_bytes()).digest()).decode()
    manifest = {"version": wheel.name.split("-")[1], "kit": f"{kit_dir}/", "runtime": f"{runtime_dir}/",
                "wheels": f"{wheels_dir}/", "files": {path: _size(src) for path, src in counted.items()},
                "wheel": {"file": wheel.name, "integrity": integrity}}
    entry = (KIT_SOURCES / "webclient.mjs").read_text()
    entry, found = _MANIFEST.subn(lambda _: json.dumps(manifest), entry)
    if found != 1:
        raise ToolError("demo_site/kit/webclient.mjs lacks its /*@manifest*/ ... /*@end*/ marker")
    plan: dict[str, Source] = {
        "webclient.mjs": entry.encode(),
        "webclient.d.ts": KIT_SOURCES / "webclient.d.ts",
        # TypeScript looks for webclient.d.mts beside webclient.mjs; it re-exports the declarations.
        "webclient.d.mts": b'export * from "./webclient.js";\n',
    }
    for folder, files in ((runtime_dir, runtime), (wheels_dir, wheels), (kit_dir, modules)):
        plan.update({f"{folder}/{name}": source for name, source in files.items()})
    return plan


def write_plan(out: Path, plan: dict[str, Source]) -> int:
    """Write every planned file under ``out`` (only those that differ); return how many were written."""
    written = 0
    for rel, source in plan.items():
        dst = out / rel
        written += copy_if_changed(source, dst) if isinstance(source, Path) else write_if_changed(dst, source)
    return written


def _brotli(jobs: list[tuple[Path, Path]]) -> None:
    """Brotli-compress each (src, dst) with Node's zlib (one process for all)."""
    if not jobs:
        return
    log(f"compress: brotli q{BROTLI_QUALITY} of {len(jobs)} file(s) "
        f"({sum(src.stat().st_size for src, _ in jobs) / 1e6:.1f} MB; cached afterwards)")
    node = node_executable()
    payload = json.dumps([[str(src), str(dst)] for src, dst in jobs])
    run("node brotli", [node, "-e", _BROTLI_JS, payload, str(BROTLI_QUALITY), str(BROTLI_WINDOW_BITS)])


def write_sidecars(out: Path, rels: Sequence[str]) -> dict[str, dict[str, int]]:
    """Write ``F.br`` and ``F.gz`` beside each compressible file ``F`` of at least MIN_COMPRESS_BYTES under ``out``
    when they save MIN_SAVING (and remove a sidecar that no longer does); return ``{rel: {"raw", "br", "gz"}}``
    for the files considered."""
    COMPRESSED.mkdir(parents=True, exist_ok=True)
    todo = [rel for rel in rels if rel.endswith(COMPRESSIBLE) and (out / rel).stat().st_size >= MIN_COMPRESS_BYTES]
    digests = {rel: sha256_of(out / rel) for rel in todo}
    missing_br = []
    for rel in todo:
        cached = COMPRESSED / f"{digests[rel]}.gz"
        if not cached.is_file():
            write_if_changed(cached, gzip.compress((out / rel).read_bytes(), compresslevel=GZIP_LEVEL, mtime=0))
        if not (COMPRESSED / f"{digests[rel]}.br").is_file():
            missing_br.append((out / rel, COMPRESSED / f"{digests[rel]}.br"))
    _brotli(missing_br)
    sizes: dict[str, dict[str, int]] = {}
    for rel in todo:
        raw = (out / rel).stat().st_size
        sizes[rel] = {"raw": raw}
        for encoding in ("br", "gz"):
            cached = COMPRESSED / f"{digests[rel]}.{encoding}"
            sidecar = out / f"{rel}.{encoding}"
            size = cached.stat().st_size
            if size <= raw * (1 - MIN_SAVING):
                copy_if_changed(cached, sidecar)
                sizes[rel][encoding] = size
            else:
                sidecar.unlink(missing_ok=True)
    return sizes


def prune(out: Path, keep: set[str]) -> int:
    """Delete files under ``out`` whose relative path is not in ``keep`` (sidecars of kept files stay), then
    empty directories; return how many files were deleted."""
    removed = 0
    for path in sorted(out.rglob("*"), reverse=True):
        rel = path.relative_to(out).as_posix()
        if path.is_dir():
            if not any(path.iterdir()):
                path.rmdir()
        elif rel not in keep and rel.removesuffix(".br").removesuffix(".gz") not in keep:
            path.unlink()
            removed += 1
    return removed


def cmd_kit(out: Path) -> dict[str, dict[str, int]]:
    """Build the widget kit folder at ``out`` (which it owns: anything else in it is deleted); return the
    compressed sizes of its files."""
    cmd_fetch()
    plan = kit_plan(cmd_wheel())
    out.mkdir(parents=True, exist_ok=True)
    written = write_plan(out, plan)
    removed = prune(out, set(plan))
    sizes = write_sidecars(out, sorted(plan))
    wire = sum(s.get("br", s["raw"]) for s in sizes.values())
    log(f"kit: {out} ({len(plan)} files, {written} written, {removed} stale removed; "
        f"{sum(s['raw'] for s in sizes.values()) / 1e6:.2f} MB of compressible files, {wire / 1e6:.2f} MB as brotli)")
    return sizes


# --------------------------------------------------------------------------------------------- site


def cmd_site(site_dir: Path) -> None:
    """Assemble the demo site: the demo page (demo_site/static/ at the top), the embedding example
    (demo_site/examples/ at examples/) and the widget kit at webclient/, with precompressed sidecars."""
    cmd_kit(site_dir / "webclient")
    for legacy in ("pyodide", "wheels"):  # the layout before the kit
        if (site_dir / legacy).is_dir():
            shutil.rmtree(site_dir / legacy)
    pages: dict[str, Source] = {}
    for folder, prefix in ((DEMO_STATIC, ""), (DEMO_EXAMPLES, "examples/")):
        if folder.is_dir():
            pages.update({prefix + p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*"))
                          if p.is_file()})
    copied = write_plan(site_dir, pages)
    write_sidecars(site_dir, sorted(pages))
    log(f"site: {site_dir} ({len(pages)} page files, {copied} copied; the kit at webclient/)")


# --------------------------------------------------------------------------------------------- test


#: V8 flags every Node that runs Pyodide gets here (the in-Pyodide suite, the bridge tests, the Node benchmarks),
#: each only where this node accepts it (an unknown V8 flag stops node with exit code 9).
#:
#: ``--no-turbo-inline-js-wasm-calls``: Node 20's V8 (11.3) aborts the whole process ("Fatal error ... unreachable
#: code" in ``Deoptimizer::DoComputeBuiltinContinuation``) when optimized JS that inlined a JS->Wasm call is
#: deoptimized while that call is still running, as happens when Python grows the WebAssembly memory inside a
#: task step Node's ``processImmediate`` runs. Seen once in CI (the bridge tests' runner died mid-module);
#: reproduced on every run with ``--stress-inline --interrupt-budget=500``, and never with this flag
#: (tests/test_browser_bridge.py keeps that check). A page's own Node host needs the same flag (README).
PYODIDE_V8_FLAGS = ("--no-turbo-inline-js-wasm-calls",)


def pyodide_node_flags(node: str) -> list[str]:
    """The flags of :data:`PYODIDE_V8_FLAGS` that ``node`` accepts (probed: an unknown one makes it exit 9)."""
    return [flag for flag in PYODIDE_V8_FLAGS
            if subprocess.run([node, flag, "-e", "0"], capture_output=True, check=False).returncode == 0]


def jspi_flags(node: str) -> list[str]:
    """Node flags that give WebAssembly stack switching (JSPI), needed by ``asyncio.run`` inside Pyodide."""
    probe = "process.exit(WebAssembly.Suspending || WebAssembly.Suspender ? 0 : 3)"
    for flags in ([], ["--experimental-wasm-stack-switching"], ["--experimental-wasm-jspi"]):
        proc = subprocess.run([node, *flags, "-e", probe], capture_output=True, check=False)
        if proc.returncode == 0:
            return flags
    log("test: this node has no JSPI; tests calling asyncio.run will fail inside Pyodide")
    return []


def split_test_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """Tool options for ``test`` (before an optional ``--``); everything else is passed to pytest."""
    parser = argparse.ArgumentParser(prog="pyodide_tools.py test", add_help=False, allow_abbrev=False)
    parser.add_argument("--tests-dir", type=Path, default=REPO / "tests")
    argv = list(argv)
    head, tail = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    options, rest = parser.parse_known_args(head)
    return options, rest + tail


def cmd_test(argv: Sequence[str]) -> int:
    """fetch + wheel, then run pytest inside Pyodide under Node; return pytest's exit code."""
    options, pytest_args = split_test_args(argv)
    tests_dir = options.tests_dir.resolve()
    if not tests_dir.is_dir():
        raise ToolError(f"tests dir {tests_dir} does not exist")
    cmd_fetch()
    ours = cmd_wheel()
    node = node_executable()
    wheels = [WHEELS_DIR / w.file_name for w in PINNED_WHEELS if w.role == "test"] + [ours]
    cmd: list[str | Path] = [node, *pyodide_node_flags(node), *jspi_flags(node), HARNESS,
                             "--pyodide", PYODIDE_PKG]
    for wheel in wheels:
        cmd += ["--wheel", wheel]
    # tests/ at /proj/tests; <repo>/../shared at /shared, i.e. Path(__file__).resolve().parents[1].parent / "shared"
    cmd += ["--mount", f"{tests_dir}:/proj/tests", "--file", f"{REPO / 'pyproject.toml'}:/proj/pyproject.toml"]
    shared = REPO.parent / "shared"
    if shared.is_dir():
        cmd += ["--mount", f"{shared.resolve()}:/shared"]
    # No .pytest_cache: it would only live in Pyodide's in-memory FS and die with the run.
    cmd += ["--cwd", "/proj", "--", "-p", "no:cacheprovider", *(pytest_args or ["tests", "-q"])]
    log(f"test: node {HARNESS.relative_to(REPO)} (pytest {' '.join(pytest_args) or 'tests -q'})")
    started = time.perf_counter()
    rc = subprocess.call([str(c) for c in cmd])
    log(f"test: harness exited {rc} after {time.perf_counter() - started:.1f} s")
    return rc


# --------------------------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch one subcommand; return its exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="pyodide_tools.py", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:8]))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("fetch", help="npm ci the pinned runtime; download the pinned wheels")
    sub.add_parser("wheel", help="build our wheel from the tree into build/dist/")
    kit = sub.add_parser("kit", help="write the widget kit folder (webclient.mjs, Pyodide, wheels) to OUT_DIR")
    kit.add_argument("out_dir", type=Path)
    site = sub.add_parser("site", help="assemble the demo site: page, examples/, the kit at webclient/")
    site.add_argument("dir", nargs="?", type=Path, default=BUILD / "site")
    sub.add_parser("test", help="run tests/ inside Pyodide; extra args go to pytest", add_help=False)
    if argv[:1] == ["test"]:  # pytest options must not be parsed by argparse
        command, rest = "test", argv[1:]
    else:
        command, rest = parser.parse_args(argv).command, []
    started = time.perf_counter()
    try:
        if command == "fetch":
            cmd_fetch()
        elif command == "wheel":
            cmd_wheel()
        elif command == "kit":
            cmd_kit(parser.parse_args(argv).out_dir.resolve())
        elif command == "site":
            cmd_site(parser.parse_args(argv).dir.resolve())
        else:
            return cmd_test(rest)
    except ToolError as exc:
        log(f"error: {exc}")
        return 2
    log(f"{command}: done in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
