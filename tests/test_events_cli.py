"""``python -m webclient events``: the CLI contract, on every conformance case and chunking."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_sse import CONFORMANCE
from webclient import RetryField
from webclient._cli import main

ROOT = Path(__file__).resolve().parents[1]


def expected_lines(items: list[object]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for item in items:
        if isinstance(item, RetryField):
            out.append({"retry": item.retry})
        else:
            out.append({"type": item.type, "data": item.data, "last_event_id": item.last_event_id})  # type: ignore[attr-defined]
    return out


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, object]]]:
    code = main(["events", *args])
    out = capsys.readouterr().out
    return code, [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize(("data", "expected"), [pytest.param(d, e, id=i) for i, d, e in CONFORMANCE])
def test_events_cli_prints_each_conformance_case_identically_whole_bytewise_and_random(
    data: bytes, expected: list[object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = tmp_path / "capture.sse"
    capture.write_bytes(data)
    rng = random.Random(len(data))
    cuts = ",".join(str(rng.randrange(0, len(data) + 1)) for _ in range(6))
    for extra in ([], ["--chunk-size", "1"], ["--split-at", cuts], ["--chunk-size", "3"]):
        assert run_cli([*extra, str(capture)], capsys) == (0, expected_lines(expected))


def test_events_cli_ends_with_the_outcome_line_and_exit_1_on_a_ceiling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(b"data: a\n\ndata: " + b"x" * 30 + b"\n\n")
    for extra in ([], ["--chunk-size", "1"]):
        code, lines = run_cli([*extra, "--max-line-chars", "20", str(capture)], capsys)
        assert code == 1
        assert lines == [{"type": "message", "data": "a", "last_event_id": ""},
                         {"outcome": "buffer_limit", "stage": "line"}]
    code, lines = run_cli(["--max-event-chars", "5", str(capture)], capsys)
    assert (code, lines[-1]) == (1, {"outcome": "buffer_limit", "stage": "event"})


def test_events_cli_strict_mode_ends_with_decode_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(b"data: a\n\ndata: \xff\n\n")
    assert run_cli(["--utf8-errors", "strict", str(capture)], capsys) == (
        1, [{"type": "message", "data": "a", "last_event_id": ""}, {"outcome": "decode_error", "stage": "utf8"}])
    # The WHATWG default replaces instead.
    code, lines = run_cli([str(capture)], capsys)
    assert code == 0 and lines[-1]["data"] == "\ufffd"


@pytest.mark.host
def test_python_m_webclient_events_reads_stdin_in_a_real_process() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "webclient", "events", "--split-at", "3,9", "-"],
        input=b"data: h\xc3\xa9\r\n\r\nretry: 9\n", capture_output=True, cwd=ROOT, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(x) for x in proc.stdout.splitlines()] == [
        {"type": "message", "data": "h\u00e9", "last_event_id": ""}, {"retry": 9}]


@pytest.mark.host
def test_events_cli_rejects_bad_options_with_usage_exit_code() -> None:
    proc = subprocess.run([sys.executable, "-m", "webclient", "events", "--chunk-size", "0", "-"],
                          input=b"", capture_output=True, cwd=ROOT, check=False)
    assert proc.returncode == 2 and b"positive integer" in proc.stderr


def test_events_cli_replace_mode_can_be_asked_for_by_name_and_is_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(b"data: \xff\n\n")
    expected = (0, [{"type": "message", "data": "\ufffd", "last_event_id": ""}])
    assert run_cli(["--utf8-errors", "replace", str(capture)], capsys) == expected
    assert run_cli([str(capture)], capsys) == expected


def test_events_cli_output_is_whole_lines_the_outcome_line_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(b"retry: 5\ndata: a\n\ndata: \xff\n\n")
    assert main(["events", "--utf8-errors", "strict", str(capture)]) == 1
    assert capsys.readouterr().out == (
        '{"retry": 5}\n{"type": "message", "data": "a", "last_event_id": ""}\n'
        '{"outcome": "decode_error", "stage": "utf8"}\n'
    )



@pytest.mark.parametrize(("option", "prefix", "stage"), [("--max-line-chars", b"data:", "line"),
                                                         ("--max-event-chars", b"data: ", "event")])
def test_events_cli_ceiling_options_are_decimal_and_trip_one_past_their_value(
    option: str, prefix: bytes, stage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = tmp_path / "c.sse"
    # the line ceiling counts "data:" and the value (5 + 5 = 10); the event ceiling the value and its LF (9 + 1)
    size = 10 - len(prefix) if stage == "line" else 9
    capture.write_bytes(prefix + b"x" * size + b"\n\n")
    assert run_cli([option, "10", str(capture)], capsys) == (
        0, [{"type": "message", "data": "x" * size, "last_event_id": ""}])
    capture.write_bytes(prefix + b"x" * (size + 1) + b"\n\n")
    assert run_cli([option, "10", str(capture)], capsys) == (1, [{"outcome": "buffer_limit", "stage": stage}])
