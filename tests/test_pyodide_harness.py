"""The in-Pyodide test run (build_scripts/pyodide_tools.py test) reports real pytest results and exit codes.

These run on the host: they start Node with Pyodide (about 7 s each) through the same command CI uses.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.host

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "build_scripts" / "pyodide_tools.py"
FIXTURES = ROOT.parent / "shared" / "fixtures"
TIMEOUT_S = 900

THROWAWAY_TESTS = '''
import hashlib, sys
from pathlib import Path

FIXTURES_SOURCES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "SOURCES.md"


def test_runs_inside_pyodide_with_the_built_wheel():
    import webclient
    assert sys.platform == "emscripten"
    assert "site-packages" in webclient.__file__


def test_shared_fixtures_resolve_like_on_the_host():
    digest = hashlib.sha256(FIXTURES_SOURCES.read_bytes()).hexdigest() if FIXTURES_SOURCES.is_file() else None
    assert digest == {expected_digest!r}


def test_this_one_fails_on_purpose():
    assert 2 + 2 == 5
'''


def run_tool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=TIMEOUT_S, check=False)


def summary_counts(stdout: str) -> dict[str, int]:
    """{'passed': n, 'failed': n, ...} from pytest's final summary line."""
    lines = [line for line in stdout.splitlines() if re.search(r"\d+ (passed|failed|skipped|error)", line)]
    assert lines, f"no pytest summary line in output:\n{stdout}"
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", lines[-1])}


def test_failing_test_inside_pyodide_shows_pytest_failure_output_and_exits_1(tmp_path: Path) -> None:
    sources = FIXTURES / "SOURCES.md"
    digest = hashlib.sha256(sources.read_bytes()).hexdigest() if sources.is_file() else None
    (tmp_path / "test_throwaway.py").write_text(THROWAWAY_TESTS.replace("{expected_digest!r}", repr(digest)))

    proc = run_tool("test", "--tests-dir", tmp_path, "--", "tests", "-q", "-rf")

    output = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 1, output
    assert summary_counts(proc.stdout) == {"failed": 1, "passed": 2}, output
    assert "FAILED tests/test_throwaway.py::test_this_one_fails_on_purpose" in proc.stdout, output
    assert "assert (2 + 2) == 5" in proc.stdout, output  # pytest's assertion rewriting ran inside Pyodide
    assert "(emscripten), pyodide 314.0.7" in proc.stderr, output


def test_core_suite_passes_inside_pyodide_and_skips_host_tests() -> None:
    # The whole core suite runs inside Pyodide as its own step of build_scripts/test.sh (alongside this
    # pytest); here a small slice proves the wiring: collection of whole modules and of single tests by node
    # id, the shared fixtures mount (the catalog test lists the recordings directory; the tool-call test
    # replays them), host-marker skips. (It ran test_sse.py and all of test_fixtures_replay.py before: 78 s
    # on a slow 2-core machine, for what the full run proves anyway.)
    proc = run_tool("test", "-rs", "tests/test_utf8.py",
                    "tests/test_fixtures_replay.py::test_the_catalog_covers_every_recording_in_the_fixture_directory",
                    "tests/test_fixtures_replay.py::"
                    "test_every_client_tool_call_in_a_complete_recording_is_ready_with_parsed_arguments",
                    "tests/test_pyodide_harness.py")

    output = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 0, output
    counts = summary_counts(proc.stdout)
    assert set(counts) <= {"passed", "skipped", "deselected", "xfailed", "xpassed", "warnings"}, output
    assert counts.get("passed", 0) >= 17, output  # test_utf8.py's 15 and the two fixture tests
    # This module is host-marked, so the conftest must have skipped it inside Pyodide.
    assert re.search(r"SKIPPED \[\d+\] tests/test_pyodide_harness\.py(:\d+)?: marked host", proc.stdout), output
    assert "platform emscripten -- Python 3.14" in proc.stdout, output

