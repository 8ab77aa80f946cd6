"""``python -m webclient check``: options, table, JSON report, exit codes, progress."""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.route_fixtures import CHAT, FIXTURES, cases
from tests.test_check import CHAT_DATA, DecodesEachChunk
from webclient import Limits
from webclient._check import CHECKS, Canary, CaseFailure, CheckedSession, CheckReport, CheckResult, SessionFactory
from webclient._cli import main
from webclient._cli_check import OPTION_FOR_STAGE, PROGRESS_MIN_BYTES, _coverage, _first, _progress, render
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


def _broken_factory(route: str, *, limits: Limits, **options: Any) -> SessionFactory:
    def make() -> CheckedSession:
        return DecodesEachChunk(route, limits=limits, **options)

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


# -- the text report, its progress lines and its arguments, exactly ------------------------------------------------

def _layout(report: dict[str, Any]) -> list[str]:
    """The table of the text report, built from the ``--json`` report of the same run: columns two spaces apart,
    the name left-aligned and the counts right-aligned to their widest cell."""
    rows = [("check", "cases", "failures", "first failure")]
    rows += [(c["check"], str(c["cases"]), str(c["failures"]), "-") for c in report["checks"]]
    width = [max(len(row[i]) for row in rows) for i in range(3)]
    return [f"{a:<{width[0]}}  {b:>{width[1]}}  {c:>{width[2]}}  {d}" for a, b, c, d in rows]


def test_the_text_report_is_the_header_the_table_the_coverage_notes_and_the_verdict_each_block_one_blank_line_apart(
    chat_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--route", CHAT, "--seed", "10", *SMALL_RETAINED, str(chat_file)]
    code, out, _ = run(args, capsys)
    assert code == 0 and out.endswith("PASS: every check passed\n") and not out.endswith("\n\n")
    _, raw, _ = run([*args, "--json"], capsys)
    assert raw.endswith("}\n") and raw.count("\n") == 1  # one JSON object, one line
    report = json.loads(raw)
    assert report["seed"] == 10  # a decimal seed, read as decimal
    by = {c["check"]: c for c in report["checks"]}
    split, leak = by["split"]["coverage"], by["leak"]["coverage"]
    assert split["sampled"] is False and split["positions"] == split["candidates"] == len(CHAT_DATA) - 1
    def counts(pairs: Iterable[tuple[str, int]]) -> str:  # the report's "name count, name count"
        return ", ".join(f"{k} {v}" for k, v in pairs)

    categories = counts(sorted(split["by_category"].items()))
    assert len(split["by_category"]) > 1 and len(leak["substitutions"]) > 1  # so the joins are seen
    substitutions = counts(leak["substitutions"].items())
    notes = [f"{name}: {c['coverage']['positions']} of {c['coverage']['candidates']} positions (every position; "
             f"{c['coverage']['special_candidates']} special candidates); "
             + counts(sorted(c["coverage"]["by_category"].items()))
             for name, c in by.items() if "positions" in c["coverage"]]
    assert notes[0].endswith(categories)
    assert out.splitlines() == [
        f"webclient check: route {CHAT}, {len(CHAT_DATA)} bytes, {report['events']} events, seed 10",
        f"whole capture: complete, stop_reason {report['whole']['stop_reason']}",
        "",
        *_layout(report),
        "",
        *notes,
        f"leak: canary substitutions: {substitutions}; canary reached the session's output: yes",
        "",
        "PASS: every check passed",
    ]


def test_a_capture_that_is_not_complete_is_reported_in_three_lines_and_no_table(
        capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(run(["--route", "anthropic-messages", "--json", str(AS_RECORDED)], capsys)[1])
    code, out, _ = run(["--route", "anthropic-messages", str(AS_RECORDED)], capsys)
    assert code == 2 and report["whole"]["stop_reason"] == "end_turn"
    assert out == (f"webclient check: route anthropic-messages, {AS_RECORDED.stat().st_size} bytes, "
                   f"{report['events']} events, seed 0\n"
                   "whole capture: truncated, stage eof, stop_reason end_turn\n"
                   "the capture itself is not a complete response (outcome truncated, stage eof); nothing else was "
                   "checked\n")


def _report(whole: str, *checks: CheckResult) -> CheckReport:
    return CheckReport(route=CHAT, capture_bytes=10, events=1, whole_outcome=whole, whole_stage=None, stop_reason=None,
                       seed=0, checks=checks)


def test_a_failing_check_is_shown_in_the_table_with_its_first_failure_even_when_the_capture_was_not_complete() -> None:
    raised = CaseFailure(check="whole", case="whole", position=None, category=None, outcome=None, stage=None,
                         problem="the session raised ValueError")
    # No stage and no stop reason: nothing is appended to the whole capture's line.
    assert render(_report("truncated", CheckResult("whole", 1, 1, raised))) == (
        f"webclient check: route {CHAT}, 10 bytes, 1 events, seed 0\n"
        "whole capture: truncated\n"
        "\n"
        "check  cases  failures  first failure\n"
        "whole      1         1  whole: raised: the session raised ValueError\n"
        "\n"
        "FAIL: whole\n")
    ended = CaseFailure(check="eof", case="eof@7", position=7, category="boundary", outcome="truncated", stage="eof",
                        problem="complete where the cut lost content")
    assert _first(CheckResult("eof", 3, 1, ended)) == (
        "eof@7 [boundary]: truncated/eof: complete where the cut lost content")


def test_the_leak_note_says_whether_the_canary_reached_the_output() -> None:
    for reached, word in ((True, "yes"), (False, "no")):
        result = CheckResult("leak", 2, 0, None, {"substitutions": {"text": 1, "tool_arguments": 1},
                                                  "canary_reached_output": reached})
        assert _coverage(result) == ("leak: canary substitutions: text 1, tool_arguments 1; "
                                     f"canary reached the session's output: {word}")
    assert _coverage(CheckResult("oversized", 2, 0, None, {"injected": 2})) is None


def test_progress_is_one_line_at_the_first_case_then_one_per_tenth_of_the_cases() -> None:
    lines: list[str] = []
    report = _progress(lines.append)
    for done in range(1, 21):
        report("split", done, 20)
    for done in range(1, 4):
        report("eof", done, 3)
    assert lines == [f"check: split {done}/20 cases\n" for done in (1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20)] + [
        f"check: eof {done}/3 cases\n" for done in (1, 2, 3)]


def test_a_capture_of_exactly_the_progress_threshold_reports_progress_and_one_byte_less_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = next(c.data for c in cases() if c.id == "openai__openai-text.chunks.txt")
    assert len(data) > PROGRESS_MIN_BYTES
    # The capture cut to the threshold is not complete: check then runs only the whole capture, and says so.
    for size, shown in ((PROGRESS_MIN_BYTES, True), (PROGRESS_MIN_BYTES - 1, False)):
        path = tmp_path / f"{size}.sse"
        path.write_bytes(data[:size])
        code, _, err = run(["--route", CHAT, str(path)], capsys)
        assert code == 2 and (err != "") is shown, (size, err)


@pytest.mark.parametrize("args", [["--seed", "a"], ["--seed", "-1"], []], ids=["letter", "negative", "no-route"])
def test_a_seed_that_is_not_a_decimal_count_or_a_missing_route_is_a_usage_error(
    chat_file: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    route = [] if not args else ["--route", CHAT]
    with pytest.raises(SystemExit) as exc:
        main(["check", *route, *args, str(chat_file)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert ("--route" in err) if not args else ("expected a non-negative integer" in err)


def _session_option_captures() -> dict[str, bytes]:
    """Chat captures that commit only with one session option each."""
    from tests.route_fixtures import sse
    from tests.test_check import UNKNOWN_CAPTURES, chat_chunk

    hello = chat_chunk({"role": "assistant", "content": "Hi"})
    return {"--keep-unknown-items": next(d for _, n, d in UNKNOWN_CAPTURES if n == "chat-unknown"),
            "--accept-stop-reason=length": sse(hello, chat_chunk({}, "length"), "[DONE]"),
            "--utf8-errors=replace": sse(hello, chat_chunk({}, "stop"), "[DONE]").replace(b"Hi", b"H\xff"),
            "--accept-stop-reason=error": sse(hello, chat_chunk({}, "error"), "[DONE]"),
            "--accept-stop-reason=sparkle": sse(hello, chat_chunk({}, "sparkle"), "[DONE]")}


@pytest.mark.parametrize(("option", "stage"), [("--keep-unknown-items", "unknown_type"),
                                               ("--accept-stop-reason=length", "stop_reason"),
                                               ("--utf8-errors=replace", "utf8"),
                                               ("--accept-stop-reason=error", "error_stop"),
                                               ("--accept-stop-reason=sparkle", "unrecognized_stop")])
def test_check_runs_the_session_configuration_its_options_give(option: str, stage: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    capture = tmp_path / "capture.sse"
    capture.write_bytes(_session_option_captures()[option])
    base = ["--route", CHAT, "--max-splits", "4", "--json", *SMALL_RETAINED, str(capture)]
    code, out, _ = run(base, capsys)
    assert code == 2 and json.loads(out)["whole"]["stage"] == stage
    code, out, _ = run([arg for arg in base if arg != "--json"], capsys)  # the text report names the option
    assert code == 2 and out.splitlines()[-1] == (f"a session built with {OPTION_FOR_STAGE[stage]} would take it: "
                                                  "if the session you ship is, check with it")
    assert option.partition("=")[0] in OPTION_FOR_STAGE[stage]
    code, out, _ = run([option, *base], capsys)
    report = json.loads(out)
    assert code == 0 and report["passed"] and len(report["checks"]) == len(CHECKS)


def test_replay_and_check_take_the_same_session_options() -> None:
    session = {"--tools", "--keep-unknown-items", "--include-reasoning-content", "--accept-stop-reason",
               "--utf8-errors"}
    assert session <= _options(replay_arguments) and session <= _options(check_arguments)
