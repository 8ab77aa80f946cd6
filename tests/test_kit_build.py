"""``pyodide_tools.py kit OUT_DIR``: the widget kit folder a widget author copies to a static host.

Entry files at fixed names, everything else in content-hashed directories named by the sha256 of their files,
lock files with the real sha256 of what they list (micropip included, so stock Pyodide installs it offline),
npm's ``python_stdlib.zip`` with bytecode beside what a boot imports, precompressed sidecars that decompress to
their file, and stale directories removed on a rebuild."""

from __future__ import annotations

import _imp
import base64
import gzip
import hashlib
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.host

REPO = Path(__file__).resolve().parents[1]


def hashed_dir(prefix: str, files: dict[str, Path | bytes]) -> str:
    """build_scripts/pyodide_tools.py's directory naming (imported here: the module is host-only)."""
    sys.path.insert(0, str(REPO / "build_scripts"))
    try:
        import pyodide_tools
    finally:
        sys.path.pop(0)
    name: str = pyodide_tools.hashed_dir(prefix, files)
    return name

HASHED = re.compile(r"^(runtime|wheels|kit)-[0-9a-f]{16}$")
MANIFEST = re.compile(r"const MANIFEST = (\{.*?\});")


def build_kit(out: Path) -> None:
    proc = subprocess.run([sys.executable, str(REPO / "build_scripts" / "pyodide_tools.py"), "kit", str(out)],
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kit")
    build_kit(out)
    return out


def dirs(kit: Path) -> dict[str, Path]:
    return {p.name.split("-")[0]: p for p in kit.iterdir() if p.is_dir()}


def plain_files(folder: Path) -> dict[str, Path]:
    return {p.name: p for p in folder.iterdir() if not p.name.endswith((".br", ".gz"))}


def test_the_kit_has_fixed_entry_files_and_directories_named_by_their_contents(kit: Path) -> None:
    assert {p.name for p in kit.iterdir() if p.is_file() and not p.name.endswith((".br", ".gz"))} == {
        "webclient.mjs", "webclient.d.ts", "webclient.d.mts"}
    folders = dirs(kit)
    assert set(folders) == {"runtime", "wheels", "kit"}
    for prefix, folder in folders.items():
        assert HASHED.match(folder.name)
        assert folder.name == hashed_dir(prefix, dict(plain_files(folder)))
    assert set(plain_files(folders["kit"])) == {"worker.mjs", "pump.mjs", "snapshots.mjs"}
    assert {"pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
            "pyodide-lock.json"} <= set(plain_files(folders["runtime"]))


def test_a_changed_file_gets_a_new_directory_name() -> None:
    base = {"a.mjs": b"export const a = 1;\n", "b.mjs": b"export const b = 2;\n"}
    name = hashed_dir("kit", dict(base))
    assert name != hashed_dir("kit", {**base, "a.mjs": b"export const a = 2;\n"})
    assert name != hashed_dir("kit", {"c.mjs": base["a.mjs"], "b.mjs": base["b.mjs"]})
    assert name == hashed_dir("kit", dict(reversed(base.items())))


def test_the_locks_list_micropip_and_webclient_with_their_real_sha256(kit: Path) -> None:
    folders = dirs(kit)
    runtime_lock = json.loads((folders["runtime"] / "pyodide-lock.json").read_text())
    wheels_lock = json.loads((folders["wheels"] / "pyodide-lock.json").read_text())

    assert set(runtime_lock["packages"]) == {"micropip"}
    assert set(wheels_lock["packages"]) == {"micropip", "webclient"}
    for lock, folder in ((runtime_lock, folders["runtime"]), (wheels_lock, folders["wheels"])):
        for entry in lock["packages"].values():
            wheel = (folder / entry["file_name"]).resolve()
            assert wheel.is_file() and wheel.is_relative_to(kit.resolve())
            assert entry["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_webclient_mjs_names_the_hashed_directories_and_the_sizes_it_counts(kit: Path) -> None:
    [found] = MANIFEST.findall((kit / "webclient.mjs").read_text())
    manifest = json.loads(found)
    folders = dirs(kit)

    assert {manifest[k] for k in ("runtime", "wheels", "kit")} == {f"{p.name}/" for p in folders.values()}
    assert manifest["files"] and all((kit / path).stat().st_size == n for path, n in manifest["files"].items())
    assert any(path.endswith("python_stdlib.zip") for path in manifest["files"])
    wheel = folders["wheels"] / manifest["wheel"]["file"]
    digest = base64.b64encode(hashlib.sha256(wheel.read_bytes()).digest()).decode()
    assert manifest["wheel"]["integrity"] == f"sha256-{digest}"


def test_sidecars_decompress_to_their_file_and_skip_what_does_not_shrink(kit: Path) -> None:
    sidecars = sorted(kit.rglob("*.gz")) + sorted(kit.rglob("*.br"))
    assert any(p.name == "pyodide.asm.wasm.br" for p in sidecars)
    for gz in kit.rglob("*.gz"):
        assert gzip.decompress(gz.read_bytes()) == gz.with_suffix("").read_bytes()
        assert gz.read_bytes()[4:8] == b"\0\0\0\0", "gzip mtime 0"
    node = shutil.which("node")
    assert node is not None
    check = ("const fs=require('fs'),z=require('zlib');for(const f of process.argv.slice(1)){"
             "if(!z.brotliDecompressSync(fs.readFileSync(f)).equals(fs.readFileSync(f.slice(0,-3))))"
             "{console.log(f);process.exit(1)}}")
    proc = subprocess.run([node, "-e", check, *map(str, kit.rglob("*.br"))], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stdout
    for path in kit.rglob("*"):
        if path.is_file() and path.suffix in (".wasm", ".mjs") and path.stat().st_size >= 1024:
            assert path.with_name(path.name + ".br").is_file(), path
    micropip = next(kit.rglob("micropip-*.whl"))
    assert not micropip.with_name(micropip.name + ".br").exists(), "already deflated: a sidecar would not pay"
    stdlib = next(kit.rglob("python_stdlib.zip"))
    assert stdlib.with_name(stdlib.name + ".br").is_file(), "its entries are stored: brotli compresses the whole file"


def stdlib_zips(kit: Path) -> tuple[zipfile.ZipFile, zipfile.ZipFile]:
    """(npm's python_stdlib.zip, the kit's)."""
    npm = REPO / "build" / "node" / "node_modules" / "pyodide" / "python_stdlib.zip"
    return zipfile.ZipFile(npm), zipfile.ZipFile(next(kit.rglob("python_stdlib.zip")))


def test_the_kits_stdlib_is_npms_byte_for_byte_plus_unchecked_bytecode_of_its_own_sources(kit: Path) -> None:
    npm, ours = stdlib_zips(kit)
    with npm, ours:
        names = ours.namelist()
        assert [n for n in names if not n.endswith(".pyc")] == npm.namelist()
        assert all(ours.read(n) == npm.read(n) for n in npm.namelist())
        assert {i.compress_type for i in ours.infolist()} == {zipfile.ZIP_STORED}
        pycs = [n for n in names if n.endswith(".pyc")]
        # each right after its source, as zipimport finds it (X.pyc before X.py, no __pycache__)
        assert all(names[names.index(n) - 1] == n[:-1] for n in pycs)
        magics = set()
        for name in pycs:
            pyc, source = ours.read(name), ours.read(name[:-1])
            magics.add(pyc[:4])
            assert int.from_bytes(pyc[4:8], "little") == 0b01, f"{name}: not an unchecked hash-based pyc"
            assert pyc[8:16] == _imp.source_hash(int.from_bytes(pyc[:4], "little"), source), f"{name}: stale"
        assert len(magics) == 1
    # what every boot imports, the kit's worker and a stream included
    assert {"json/__init__.pyc", "asyncio/__init__.pyc", "zipfile/__init__.pyc", "dataclasses.pyc", "random.pyc",
            "_pyodide/_base.pyc", "pyodide/ffi/wrappers.pyc", "pyodide/code.pyc"} <= set(pycs)
    assert "importlib/metadata/__init__.pyc" not in pycs, "the worker imports nothing to invalidate caches"


BYTECODE_PROBE = """
import { loadPyodide } from "__PYODIDE_MJS__";
const pyodide = await loadPyodide({ indexURL: process.argv[2] });
console.log(pyodide.runPython(`
import json, sys, traceback
try:
    json.loads("nope")
except ValueError:
    shown = traceback.format_exc()
json.dumps({"file": json.__file__, "decoder": sys.modules["json.decoder"].__file__, "traceback": shown})
`));
"""


def test_a_boot_from_the_kits_runtime_imports_bytecode_and_tracebacks_still_show_source_lines(kit: Path,
                                                                                                tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node is not None
    [runtime] = [p for p in kit.iterdir() if p.name.startswith("runtime-")]
    probe = tmp_path / "probe.mjs"
    probe.write_text(BYTECODE_PROBE.replace("__PYODIDE_MJS__", (runtime / "pyodide.mjs").as_uri()))
    proc = subprocess.run([node, str(probe), f"{runtime}/"], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["file"].endswith("python314.zip/json/__init__.pyc")
    assert seen["decoder"].endswith("python314.zip/json/decoder.pyc")
    # the code objects keep the source's file name, and linecache reads the lines from the .py beside the .pyc
    assert 'json/decoder.py", line' in seen["traceback"]
    assert "raise JSONDecodeError" in seen["traceback"]


def test_a_rebuild_removes_stale_directories(kit: Path, tmp_path: Path) -> None:
    out = tmp_path / "kit"
    shutil.copytree(kit, out)
    stale = out / "kit-0000000000000000"
    stale.mkdir()
    (stale / "worker.mjs").write_text("// an older build\n")

    build_kit(out)

    assert not stale.exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in kit.iterdir())


def test_the_readme_embeds_the_example_widget_verbatim_in_under_40_lines() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Embed it in your page", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(html|js)\n(.*?)```", section, re.S)
    examples = REPO / "demo_site" / "examples"
    html, js = (examples / "widget.html").read_text(), (examples / "widget.js").read_text()

    assert blocks[:2] == [("html", html), ("js", js)]
    assert len(html.splitlines()) + len(js.splitlines()) < 40


def _code(text: str) -> str:
    """JavaScript without ``//`` comments and with whitespace collapsed."""
    return " ".join(re.sub(r"//[^\n]*", "", text).split())


def test_the_pump_webclient_compiles_with_eval_is_the_kits_static_pump() -> None:
    from webclient import browser

    module = (REPO / "demo_site" / "kit" / "pump.mjs").read_text()
    batch = re.search(r"export const BATCH_BYTES = (\d+);", module)
    head = "export async function pump(reader, feed, into) {"
    assert batch is not None and head in module
    static = f"const BATCH_BYTES = {batch.group(1)};" + module[module.index(head) + len(head) : module.rindex("}")]
    inline = browser._PUMP_SOURCE
    assert inline.startswith("(async (reader, feed, into) => {") and inline.endswith("})")

    assert _code(inline[len("(async (reader, feed, into) => {") : -2]) == _code(static)
