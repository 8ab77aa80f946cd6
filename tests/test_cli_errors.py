"""``python -m webclient events|replay|check`` on bad input and closed output (issue 10, items 4 and 5).

Input it cannot use (a missing file, a directory, a bad ``--tools`` file) is one line on stderr and exit 2, never
a traceback; a closed stdout ends the command quietly; and what ``replay``/``events`` print is valid JSON whatever
the result holds (lone surrogates, non-finite numbers).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli_help
from webclient._cli import EXIT_CLOSED_STDOUT, main
from webclient._cli_chunking import dumps_json

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {"events": ["events"], "replay": ["replay", "--route", "openai-chat"],
            "check": ["check", "--route", "openai-chat", "--max-splits", "2"]}


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


#: A chat stream whose text holds a lone surrogate escape (JSON ``"\ud800"``).
SURROGATE_CAPTURE = (chat_chunk({"role": "assistant", "content": "a\ud800b"}) + chat_chunk({}, "stop")
                     + b"data: [DONE]\n\n")
#: A chat stream whose tool arguments hold numbers that overflow to infinity.
INFINITY_CALL = {"index": 0, "id": "call_1", "type": "function",
                 "function": {"name": "f", "arguments": '{"x": 1e999, "y": [-1e999]}'}}
INFINITY_CAPTURE = chat_chunk({"tool_calls": [INFINITY_CALL]}) + chat_chunk({}, "tool_calls") + b"data: [DONE]\n\n"
GOOD_CAPTURE = chat_chunk({"role": "assistant", "content": "hi"}) + chat_chunk({}, "stop") + b"data: [DONE]\n\n"


def refuse_constant(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON")


def strict_json(text: str) -> Any:
    """Parse ``text`` as standard JSON only (no NaN/Infinity) from its UTF-8 bytes."""
    assert text.isascii()
    return json.loads(text.encode("utf-8").decode("utf-8", errors="strict"), parse_constant=refuse_constant)


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_input_error(code: int, out: str, err: str, command: str) -> None:
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.endswith("\n"), f"one line on stderr: {err!r}"
    assert err.startswith(f"python -m webclient {command}: error: ") and "Traceback" not in err


# --- unreadable input ---------------------------------------------------------------------------------


def bad_capture(kind: str, tmp_path: Path) -> str:
    if kind == "missing":
        return str(tmp_path / "missing.sse")
    if kind == "directory":
        return str(tmp_path)
    if kind == "under_a_file":
        (tmp_path / "file.sse").write_bytes(GOOD_CAPTURE)
        return str(tmp_path / "file.sse" / "child.sse")
    if kind == "name_too_long":
        return str(tmp_path / ("x" * 5000))
    if kind == "dangling_symlink":
        (tmp_path / "link.sse").symlink_to(tmp_path / "gone.sse")
        return str(tmp_path / "link.sse")
    raise AssertionError(kind)


@pytest.mark.host
@pytest.mark.parametrize("kind", ["missing", "directory", "under_a_file", "name_too_long", "dangling_symlink"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_unreadable_capture_is_one_line_on_stderr_and_exit_2(command: str, kind: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main([*COMMANDS[command], bad_capture(kind, tmp_path)], capsys)
    assert_input_error(code, out, err, command)


@pytest.mark.host
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_closed_stdin_is_an_input_error(command: str) -> None:
    args = " ".join(COMMANDS[command])
    proc = subprocess.run(["bash", "-c", f'exec "{sys.executable}" -m webclient {args} - <&-'],
                          capture_output=True, cwd=ROOT, check=False)
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.count(b"\n") == 1 and b"standard input" in proc.stderr and b"Traceback" not in proc.stderr


# --- unusable --tools files ---------------------------------------------------------------------------

DEEP_SCHEMA: dict[str, Any] = {"type": "object"}
for _ in range(200):
    DEEP_SCHEMA = {"type": "object", "properties": {"a": DEEP_SCHEMA}}

BAD_TOOLS: dict[str, bytes | None] = {
    "missing": None,
    "directory": None,
    "empty": b"",
    "not_json": b"{tools: yes}",
    "not_utf8": b'{"t": {"description": "\xff\xfe"}}',
    "nested_arrays_100000": b"[" * 100_000,
    "nested_arrays_closed": b"[" * 100_000 + b"]" * 100_000,
    "nested_objects_100000": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "nested_inside_a_schema": b'{"t": {"enum": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}}",
    "nan": b'{"t": {"type": "number", "maximum": NaN}}',
    "infinity": b'{"t": {"type": "number", "maximum": Infinity}}',
    "array": b'[{"type": "object"}]',
    "schema_too_deep": json.dumps({"t": DEEP_SCHEMA}).encode(),
    "unsupported_keyword": json.dumps({"t": {"type": "object", "if": {}}}).encode(),
}


@pytest.mark.parametrize("kind", list(BAD_TOOLS))
@pytest.mark.parametrize("command", ["replay", "check"])
def test_an_unusable_tools_file_is_one_line_on_stderr_and_exit_2(command: str, kind: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(GOOD_CAPTURE)
    tools = tmp_path / "tools.json"
    if kind == "directory":
        tools = tmp_path
    elif BAD_TOOLS[kind] is not None:
        tools.write_bytes(BAD_TOOLS[kind])  # type: ignore[arg-type]
    code, out, err = run_main([*COMMANDS[command], "--tools", str(tools), str(capture)], capsys)
    assert_input_error(code, out, err, command)
    assert "\\x" not in err and "\ufffd" not in err, "no file content in the message"


@pytest.mark.host
def test_a_deeply_nested_tools_file_prints_no_traceback_in_a_real_process(tmp_path: Path) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(GOOD_CAPTURE)
    tools = tmp_path / "tools.json"
    tools.write_bytes(b"[" * 100_000)
    for command in ("replay", "check"):
        proc = subprocess.run([sys.executable, "-m", "webclient", *COMMANDS[command], "--tools", str(tools),
                               str(capture)], capture_output=True, cwd=ROOT, check=False)
        assert proc.returncode == 2 and proc.stdout == b"", proc.stderr
        assert proc.stderr.count(b"\n") == 1 and b"Traceback" not in proc.stderr


# --- closed stdout ------------------------------------------------------------------------------------


@pytest.mark.host
@pytest.mark.parametrize(("command", "events"), [("events", 3), ("events", 50_000), ("replay", 0), ("check", 0)])
def test_a_closed_stdout_ends_the_command_quietly(command: str, events: int, tmp_path: Path) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(b"".join(b"data: event %d\n\n" % i for i in range(events)) if events else GOOD_CAPTURE)
    proc = subprocess.Popen([sys.executable, "-m", "webclient", *COMMANDS[command], str(capture)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == EXIT_CLOSED_STDOUT, err
    assert err == b"", f"{command} wrote {err[-300:]!r}"


@pytest.mark.host
def test_events_piped_into_head_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    capture = tmp_path / "many.sse"
    capture.write_bytes(b"".join(b"data: event %d\n\n" % i for i in range(50_000)))
    proc = subprocess.run(["bash", "-c", f'"{sys.executable}" -m webclient events "{capture}" | head -1'],
                          capture_output=True, cwd=ROOT, check=False)
    assert proc.stdout == b'{"type": "message", "data": "event 0", "last_event_id": ""}\n'
    assert proc.stderr == b""


# --- output is always valid JSON ----------------------------------------------------------------------


def test_dumps_json_escapes_lone_surrogates_and_prints_non_finite_numbers_as_null() -> None:
    value = {"s": "a\ud800b \udfff \u00e9 \U0001f600", "n": [math.inf, -math.inf, math.nan, 1.5, 0],
             "d": {"k": math.nan, "t": (math.inf, "x")}, "ok": None}
    line = dumps_json(value)
    assert "\n" not in line and "Infinity" not in line and "NaN" not in line
    assert strict_json(line) == {"s": value["s"], "n": [None, None, None, 1.5, 0], "d": {"k": None, "t": [None, "x"]},
                                 "ok": None}


def test_dumps_json_keeps_ordinary_values_unchanged() -> None:
    value = {"text": "h\u00e9llo", "n": [1, 2.5, -0.0], "nested": [{"a": [True, False, None]}]}
    assert strict_json(dumps_json(value)) == value


@pytest.mark.parametrize("name", ["surrogate", "infinity"])
def test_replay_prints_valid_json_whatever_the_result_holds(name: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / f"{name}.sse"
    path.write_bytes(SURROGATE_CAPTURE if name == "surrogate" else INFINITY_CAPTURE)
    code, out, err = run_main(["replay", "--route", "openai-chat", str(path)], capsys)
    assert code in (0, 1) and err == ""
    result = strict_json(out.rstrip("\n"))
    if name == "surrogate":
        # (the lone surrogate keeps the text from committing; the result shows it as U+FFFD)
        shown = (result["outcome"], result["stage"], result["text"])
        assert shown == ("payload_error", "unpaired_surrogate", "a\ufffdb")
    else:
        arguments = result["tool_calls"][0]["arguments"]
        assert arguments in (None, {"x": None, "y": [None]})


@pytest.mark.host
def test_replay_of_a_lone_surrogate_does_not_crash_a_real_process(tmp_path: Path) -> None:
    path = tmp_path / "surrogate.sse"
    path.write_bytes(SURROGATE_CAPTURE)
    proc = subprocess.run([sys.executable, "-m", "webclient", "replay", "--route", "openai-chat", str(path)],
                          capture_output=True, cwd=ROOT, check=False)
    assert proc.returncode in (0, 1) and proc.stderr == b""
    strict_json(proc.stdout.decode("ascii").rstrip("\n"))


def test_events_and_check_json_output_are_strict_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.sse"
    path.write_bytes(SURROGATE_CAPTURE)
    code, out, _ = run_main(["events", str(path)], capsys)
    assert code == 0 and [strict_json(line) for line in out.splitlines()]
    code, out, _ = run_main(["check", "--route", "openai-chat", "--max-splits", "2", "--json", str(path)], capsys)
    assert strict_json(out.rstrip("\n"))["route"] == "openai-chat"


# --- exit codes are documented ------------------------------------------------------------------------


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_help_documents_its_exit_codes(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = cli_help(capsys, command)
    assert "exit status: 0 " in text and ", 1 " in text and "2 usage or input error" in text


# --- the dispatcher -----------------------------------------------------------------------------------


def test_the_top_level_help_names_the_tool_and_summarizes_each_command(capsys: pytest.CaptureFixture[str]) -> None:
    text = cli_help(capsys)
    assert text.startswith("usage: python -m webclient [-h] COMMAND ...")
    assert "``python -m webclient <command>``: a thin dispatcher over one module per command." in text
    assert "events feed a capture through the UTF-8 decoder and SSE parser; print events" in text
    assert "replay replay a capture through a route's stream session; print the result" in text
    assert "check torture a capture: every split, every EOF, limits, leaks, reset" in text


def test_no_command_is_a_usage_error_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main([])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "usage: python -m webclient" in err and "COMMAND" in err and "Traceback" not in err


def test_an_input_error_is_reported_as_its_message_on_one_line(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    first = tmp_path / "first.sse"
    first.write_bytes(GOOD_CAPTURE)
    args = ["replay", "--route", "openai-chat", "--resume", str(first), str(first)]
    code, out, err = run_main(args, capsys)
    assert (code, out) == (2, "")
    assert err == ("python -m webclient replay: error: --resume #1: the capture before it ended complete (None), "
                   "which cannot be resumed\n")


class _ClosedStdout:
    """A standard output whose reader has gone: every write is a broken pipe."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize("command", ["events", "replay"])
def test_a_broken_pipe_on_stdout_ends_the_command_with_exit_141(command: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(GOOD_CAPTURE)
    monkeypatch.setattr(sys, "stdout", _ClosedStdout())
    assert main([*COMMANDS[command], str(capture)]) == EXIT_CLOSED_STDOUT == 141


def test_a_command_whose_module_is_not_installed_is_left_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from webclient import _cli

    monkeypatch.setitem(_cli._COMMANDS, "ghost", ("webclient._cli_ghost_not_installed", "a ghost", "0 never"))
    with pytest.raises(SystemExit) as stop:
        main(["ghost", "-"])
    assert stop.value.code == 2 and "invalid choice: 'ghost'" in capsys.readouterr().err
    capture = tmp_path / "c.sse"
    capture.write_bytes(b"data: x\n\n")
    code, out, _ = run_main(["events", str(capture)], capsys)
    assert (code, out) == (0, '{"type": "message", "data": "x", "last_event_id": ""}\n')


def test_a_command_module_missing_one_of_its_own_imports_is_an_error_not_a_missing_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from webclient import _cli

    (tmp_path / "broken_cli_command_for_test.py").write_text("import webclient_no_such_dependency_for_test\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(_cli._COMMANDS, "broken", ("broken_cli_command_for_test", "broken", "0 never"))
    with pytest.raises(ModuleNotFoundError) as raised:
        main(["events", "-"])
    assert raised.value.name == "webclient_no_such_dependency_for_test"


# --- what an input error says -------------------------------------------------------------------------


@pytest.mark.host
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_missing_capture_is_named_with_the_reason_from_the_system(command: str, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "missing.sse")
    code, out, err = run_main([*COMMANDS[command], path], capsys)
    assert (code, out) == (2, "")
    assert err == f"python -m webclient {command}: error: cannot read capture {path!r}: No such file or directory\n"


@pytest.mark.host
@pytest.mark.parametrize("command", ["replay", "check"])
def test_a_missing_tools_file_is_named_with_the_reason_from_the_system(command: str, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(GOOD_CAPTURE)
    tools = str(tmp_path / "tools.json")
    code, out, err = run_main([*COMMANDS[command], "--tools", tools, str(capture)], capsys)
    assert (code, out) == (2, "")
    assert err == (f"python -m webclient {command}: error: cannot read --tools file {tools!r}: "
                   "No such file or directory\n")


class _FailingStdin:
    """A standard input whose every read fails as a device error would."""

    @property
    def buffer(self) -> _FailingStdin:
        return self

    def read(self) -> bytes:
        raise OSError(5, "Input/output error")


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(("stdin", "reason"), [(None, "it is closed"), (_FailingStdin(), "Input/output error")])
def test_a_standard_input_that_cannot_be_read_is_an_input_error_naming_the_reason(
    command: str, stdin: object, reason: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, err = run_main([*COMMANDS[command], "-"], capsys)
    assert (code, out) == (2, "")
    assert err == f"python -m webclient {command}: error: cannot read the capture from standard input: {reason}\n"


@pytest.mark.parametrize("option", [["--chunk-size", "a"], ["--split-at", "5,a"], ["--max-line-chars", "a"],
                                    ["--chunk-size", "0"], ["--split-at", "-1"], ["--max-event-chars", "0"]])
def test_numeric_options_take_decimal_integers_only(option: list[str], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(GOOD_CAPTURE)
    with pytest.raises(SystemExit) as stop:
        main(["events", *option, str(capture)])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and f"argument {option[0]}: " in captured.err


# --- check: options and table -------------------------------------------------------------------------


def test_check_help_lists_every_option_with_its_value_name_and_meaning(capsys: pytest.CaptureFixture[str]) -> None:
    text = cli_help(capsys, "check")
    for option in ("--route {openai-chat,openai-responses,anthropic-messages,gemini}",
                   "--tools FILE.json JSON object: tool name -> JSON Schema",
                   "--seed N seed of the sampled positions, random cut patterns and canary (default 0)",
                   "--max-splits N at most N positions per position check (split, eof); default: every position "
                   "up to 16 KiB, a sample sized to a fixed work budget above",
                   "--json print the report as one JSON object",
                   "--chunk-size N feed the bytes in N-byte chunks",
                   "--split-at I,J,K cut the bytes at these offsets",
                   "FILE|- the capture (raw response body bytes); - for stdin"):
        assert option in text, option


def test_check_takes_seed_0_and_prints_its_table_under_a_header_naming_each_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(GOOD_CAPTURE)
    # (a small retained ceiling: at the default the growth check is ~95% of the run; see test_check_cli.py)
    code, out, err = run_main([*COMMANDS["check"], "--seed", "0", "--max-retained-chars", "16384", str(capture)],
                              capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].endswith(", seed 0") and lines[2] == ""
    header, *rows = lines[3:12]
    assert header.split() == ["check", "cases", "failures", "first", "failure"]
    assert [row.split()[0] for row in rows] == ["whole", "split", "multisplit", "eof", "oversized", "growth", "leak",
                                                "reset"]
    assert all(len(row) == len(header) - len("first failure") + 1 for row in rows), "columns line up"
    assert lines[-1] == "PASS: every check passed"


@pytest.mark.parametrize("seed", ["-1", "x", "1.5"])
def test_check_refuses_a_seed_that_is_not_a_non_negative_decimal_integer(seed: str, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(GOOD_CAPTURE)
    with pytest.raises(SystemExit) as stop:
        main([*COMMANDS["check"], "--seed", seed, str(capture)])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "argument --seed: expected a non-negative integer" in captured.err
