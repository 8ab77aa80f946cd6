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
        assert result["text"] in ("", "a\ud800b"), "escaped, not replaced"
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
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 " in text and ", 1 " in text and "2 usage or input error" in text
