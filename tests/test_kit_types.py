"""The kit's TypeScript declarations: a strict, typed copy of the README's widget (tests/kit_types/example.ts)
compiles with the pinned ``tsc --noEmit`` against the built kit folder's webclient.d.ts (found through
webclient.d.mts, as a TypeScript project importing ``webclient.mjs`` finds it). Its ``@ts-expect-error`` lines must
all be errors, so declarations that degrade to ``any`` fail this test too."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.host

REPO = Path(__file__).resolve().parents[1]
TSC = REPO / "build" / "node" / "node_modules" / "typescript" / "bin" / "tsc"
ENTRY_FILES = ("webclient.mjs", "webclient.d.ts", "webclient.d.mts")


def run_tool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "build_scripts" / "pyodide_tools.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=900, check=False)


def tsc(project: Path) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    assert node is not None and TSC.is_file(), "node and the pinned typescript (pyodide_tools.py fetch) are needed"
    return subprocess.run([node, str(TSC), "-p", str(project), "--noEmit"], capture_output=True, text=True,
                          timeout=300, check=False)


def typed_project(tmp_path: Path) -> Path:
    kit = tmp_path / "kit"
    proc = run_tool("kit", kit)
    assert proc.returncode == 0, proc.stderr[-2000:]
    project = tmp_path / "project"
    shutil.copytree(REPO / "tests" / "kit_types", project)
    (project / "webclient").mkdir()
    for name in ENTRY_FILES:
        shutil.copyfile(kit / name, project / "webclient" / name)
    return project


def test_the_typed_widget_example_compiles_against_the_kits_declarations(tmp_path: Path) -> None:
    project = typed_project(tmp_path)

    proc = tsc(project)

    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_misuse_the_declarations_forbid_fails_to_compile(tmp_path: Path) -> None:
    project = typed_project(tmp_path)
    example = project / "example.ts"
    example.write_text(example.read_text().replace('route: "openai-chat", url: new URL(',
                                                   'route: "openai-chat", bogus: true, url: new URL('))

    proc = tsc(project)

    assert proc.returncode != 0 and "bogus" in proc.stdout, proc.stdout
