"""``python -m webclient check``: options, table, JSON report, exit codes, progress."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.route_fixtures import CHAT, FIXTURES, cases
from tests.test_check import CHAT_DATA, DecodesEachChunk
from webclient import Limits
from webclient._check import CHECKS, Canary, CheckedSession, SessionFactory
from webclient._cli import main
from webclient._cli_check import PROGRESS_MIN_BYTES
from webclient._cli_check import add_arguments as check_arguments
from webclient._cli_replay import add_arguments as replay_arguments

PARALLEL = FIXTURES / ("openai-python/chat_tool_calls_parallel__"
                       "f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.bin")
AS_RECORDED = FIXTURES / "anthropic-sdk-python/basic_response.txt"
#: A small retained-size ceiling, for the tests about the command line rather than about growth: the growth check
#: grows each structure to twice ``--max-retained-chars``, which at the default ceiling is ~95% of a run's time
#: (2.8 s against 0.15-0.3 s per run on these captures, 2x that inside Pyodide). The captures here stay far below it
#: (their runs are complete at it), and what growth does at the default ceilings is tested in test_check.py; one
#: test here (the table) still runs at the defaults, end to end.
SMALL_RETAINED = ("--max-retained-chars", "16384")


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["check", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def chat_file(tmp_path: Path) -> Path:
    path = tmp_path / "chat.sse"
    path.write_bytes(CHAT_DATA)
    return path


def test_check_prints_a_table_row_per_check_and_exits_0_on_a_complete_recording(
    capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["--route", CHAT, "--max-splits", "16", str(PARALLEL)], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("webclient check: route openai-chat, 7728 bytes, 26 events, seed 0")
    assert lines[1] == "whole capture: complete, stop_reason tool_calls"
    header = next(i for i, line in enumerate(lines) if line.startswith("check "))
    rows = [line.split()[:3] for line in lines[header + 1 : header + 1 + len(CHECKS)]]
    assert [r[0] for r in rows] == list(CHECKS)
    assert all(r[2] == "0" and int(r[1]) > 0 for r in rows)
    assert "split: 16 of 7727 positions (sampled, seed-driven" in out
    assert lines[-1] == "PASS: every check passed"
    assert err == ""


def test_check_json_report_has_every_check_with_cases_failures_and_coverage(
    capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["--route", CHAT, "--max-splits", "8", "--seed", "5", "--json", *SMALL_RETAINED, str(PARALLEL)],
                       capsys)
    report = json.loads(out)
    assert code == report["exit_code"] == 0
    assert report["passed"] is True and report["capture_complete"] is True and report["seed"] == 5
    assert report["whole"] == {"outcome": "complete", "stage": None, "stop_reason": "tool_calls"}
    assert [c["check"] for c in report["checks"]] == list(CHECKS)
    split = report["checks"][1]
    assert split["cases"] == 8 and split["failures"] == 0 and split["first_failure"] is None
    assert split["coverage"]["sampled"] is True


def test_check_exits_2_and_says_the_capture_itself_is_not_complete(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--route", "anthropic-messages", str(AS_RECORDED)], capsys)
    assert code == 2
    assert "the capture itself is not a complete response (outcome truncated, stage eof)" in out
    code, out, _ = run(["--route", "anthropic-messages", "--json", str(AS_RECORDED)], capsys)
    report = json.loads(out)
    assert (code, report["exit_code"], report["capture_complete"]) == (2, 2, False)
    assert report["whole"]["outcome"] == "truncated"
    assert [c["check"] for c in report["checks"]] == ["whole"]


def _broken_factory(route: str, *, limits: Limits, tools: Any = None) -> SessionFactory:
    def make() -> CheckedSession:
        return DecodesEachChunk(route, limits=limits, tools=tools)

    return make


def test_check_exits_1_and_names_the_first_failing_position_without_content(
    chat_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("webclient._cli_check.session_factory", _broken_factory)
    code, out, _ = run(["--route", CHAT, *SMALL_RETAINED, str(chat_file)], capsys)
    assert code == 1
    split_row = next(line for line in out.splitlines() if line.startswith("split "))
    first = CHAT_DATA.index("ü".encode()) + 1
    assert f"split@{first} [multibyte]: complete: differs in text" in split_row
    assert out.splitlines()[-1].startswith("FAIL: split, multisplit")
    for secret in ("Grüße", "Zürich", "naïve", Canary.from_seed(0).marker):
        assert secret not in out
    code, out, _ = run(["--route", CHAT, "--json", *SMALL_RETAINED, str(chat_file)], capsys)
    report = json.loads(out)
    assert code == report["exit_code"] == 1
    assert report["checks"][1]["first_failure"] == {
        "check": "split", "case": f"split@{first}", "position": first, "category": "multibyte",
        "outcome": "complete", "stage": None, "problem": "differs in text, choices, assistant_message, telemetry"}


def _options(add: Any) -> set[str]:
    parser = argparse.ArgumentParser()
    add(parser)
    return {opt for action in parser._actions for opt in action.option_strings}


def test_check_accepts_every_ceiling_option_and_tools_that_replay_accepts() -> None:
    replay = _options(replay_arguments) - {"--status", "--content-type", "--resume"}  # --resume: a chain of captures
    check = _options(check_arguments)
    assert replay <= check
    assert {"--max-line-chars", "--max-event-chars", "--max-text-chars", "--max-tool-input-chars",
            "--tools", "--seed", "--max-splits", "--json"} <= check


def test_ceiling_options_reach_the_oversized_check(chat_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--route", CHAT, "--max-splits", "4", "--max-line-chars", "5000",
                        "--max-event-chars", "20000", "--json", *SMALL_RETAINED, str(chat_file)], capsys)
    oversized = json.loads(out)["checks"][4]
    assert code == 0
    assert oversized["coverage"] == {"sites": 3, "line_ceiling": 5000, "event_ceiling": 20000}


def test_tools_file_is_used_and_an_unusable_one_exits_2(
    chat_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"weather": {"type": "object", "required": ["city"]}}))
    assert run(["--route", CHAT, "--max-splits", "4", "--tools", str(tools), *SMALL_RETAINED, str(chat_file)],
               capsys)[0] == 0
    tools.write_text(json.dumps({"other": {"type": "object"}}))
    code, out, _ = run(["--route", CHAT, "--tools", str(tools), str(chat_file)], capsys)
    assert code == 2 and "outcome payload_error, stage tool_unknown" in out
    tools.write_text(json.dumps({"weather": {"type": "object", "if": {}}}))
    code, _, err = run(["--route", CHAT, "--tools", str(tools), str(chat_file)], capsys)
    assert code == 2 and err.startswith("python -m webclient check: error: unsupported schema keyword")


def test_a_given_chunking_becomes_one_more_multisplit_case(chat_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--route", CHAT, "--max-splits", "2", "--json", *SMALL_RETAINED]
    plain = json.loads(run([*base, str(chat_file)], capsys)[1])["checks"][2]["cases"]
    given = json.loads(run([*base, "--chunk-size", "3", str(chat_file)], capsys)[1])["checks"][2]["cases"]
    split = json.loads(run([*base, "--split-at", "5,900", str(chat_file)], capsys)[1])["checks"][2]["cases"]
    assert given == split == plain + 1


def test_progress_goes_to_stderr_for_long_captures_only(
    chat_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = tmp_path / "long.sse"
    long.write_bytes(next(c.data for c in cases() if c.id == "openai__openai-text.chunks.txt"))
    assert long.stat().st_size >= PROGRESS_MIN_BYTES > len(CHAT_DATA)
    code, out, err = run(["--route", CHAT, "--max-splits", "4", *SMALL_RETAINED, str(long)], capsys)
    assert code == 0 and out.splitlines()[-1] == "PASS: every check passed"
    progress = err.splitlines()
    assert "check: split 4/4 cases" in progress and "check: eof 4/4 cases" in progress
    assert all(line.startswith("check: ") for line in progress)
    assert run(["--route", CHAT, "--max-splits", "4", *SMALL_RETAINED, str(chat_file)], capsys)[2] == ""


def test_capture_can_come_from_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CHAT_DATA)))
    code, out, _ = run(["--route", CHAT, "--max-splits", "4", "--json", *SMALL_RETAINED, "-"], capsys)
    assert code == 0 and json.loads(out)["capture_bytes"] == len(CHAT_DATA)
