"""``python -m webclient replay``: the CLI contract (keys, options, exit codes)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli_help
from tests.route_fixtures import CHAT, FIXTURES, cases
from webclient._cli import main
from webclient._telemetry import TELEMETRY_FIELDS

ROOT = Path(__file__).resolve().parents[1]
TOOL_CHAT = FIXTURES / "openai-python" / (
    "chat_tool_call_single__c6aa7e397b7123c3501f25df3a05d4daf7e8ad6d61ffa406ab5361fe36a8d5b1.bin")
ANTHROPIC_TXT = FIXTURES / "anthropic-sdk-python" / "tool_use_response.txt"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["replay", *args])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, "replay prints exactly one JSON object"
    return code, json.loads(lines[0])


def test_output_has_exactly_the_contract_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["--route", CHAT, str(TOOL_CHAT)], capsys)
    assert code == 0
    assert list(out) == ["route", "outcome", "stage", "http_status", "stop_reason", "committed", "text", "refusal",
                         "reasoning", "usage", "provider_error", "tool_calls", "choices", "items", "assistant_message",
                         "response_id", "model", "citations", "logprobs", "resume", "details",
                         "telemetry"]
    assert (out["outcome"], out["stage"], out["stop_reason"], out["committed"]) == ("complete", None, "tool_calls",
                                                                                     True)
    assert [list(call) for call in out["tool_calls"]] == [["call", "id", "name", "kind", "state", "arguments", "input",
                                                           "ready"]]
    assert out["tool_calls"][0]["kind"] == "function"
    assert out["assistant_message"]["tool_calls"][0]["function"]["name"] == "GetWeatherArgs"
    assert out["response_id"].startswith("chatcmpl-") and out["model"]
    assert out["choices"][0]["assistant_message"] == out["assistant_message"]
    assert out["tool_calls"][0]["ready"] is True and out["tool_calls"][0]["name"] == "GetWeatherArgs"
    assert tuple(out["telemetry"]) == TELEMETRY_FIELDS


@pytest.mark.parametrize("chunking", [[], ["--chunk-size", "1"], ["--chunk-size", "7"], ["--split-at", "5,100,999"]])
def test_every_chunking_option_prints_the_same_result_but_chunk_count(chunking: list[str],
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    _, reference = run(["--route", CHAT, str(TOOL_CHAT)], capsys)
    code, out = run(["--route", CHAT, *chunking, str(TOOL_CHAT)], capsys)
    assert code == 0
    reference["telemetry"].pop("chunk_count")
    out["telemetry"].pop("chunk_count")
    assert out == reference


def test_exit_status_is_one_for_anything_but_complete(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["--route", "anthropic-messages", str(ANTHROPIC_TXT)], capsys)
    assert (code, out["outcome"], out["stage"], out["committed"]) == (1, "truncated", "eof", False)
    assert out["tool_calls"][0]["ready"] is False


@pytest.mark.parametrize(("options", "stage"), [(["--status", "503"], "status"),
                                                (["--content-type", "text/html"], "media_type")])
def test_status_and_content_type_options_drive_the_gate(options: list[str], stage: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["--route", CHAT, *options, str(TOOL_CHAT)], capsys)
    assert (code, out["outcome"], out["stage"]) == (1, "protocol_error", stage)
    assert out["telemetry"]["bytes_received"] == 0


def test_stdin_dash_reads_the_capture(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = ANTHROPIC_TXT.read_bytes() + b"\n\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out = run(["--route", "anthropic-messages", "-"], capsys)
    assert (code, out["outcome"], out["text"]) == (0, "complete", "I'll check the current weather in Paris for you.")


def test_limit_options_become_buffer_limit_stages(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["--route", CHAT, "--max-tool-input-chars", "10", str(TOOL_CHAT)], capsys)
    assert (code, out["outcome"], out["stage"], out["telemetry"]["buffer_limit_stage"]) == (
        1, "buffer_limit", "tool_input", "tool_input")
    code, out = run(["--route", CHAT, "--max-line-chars", "64", str(TOOL_CHAT)], capsys)
    assert (out["outcome"], out["stage"]) == ("buffer_limit", "line")


def test_tools_file_maps_names_to_schemas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = {"GetWeatherArgs": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    (tmp_path / "good.json").write_text(json.dumps(good))
    code, out = run(["--route", CHAT, "--tools", str(tmp_path / "good.json"), str(TOOL_CHAT)], capsys)
    assert (code, out["outcome"], out["tool_calls"][0]["state"]) == (0, "complete", "valid")

    strict = {"GetWeatherArgs": {"type": "object", "properties": {"city": {"type": "integer"}}}}
    (tmp_path / "strict.json").write_text(json.dumps(strict))
    code, out = run(["--route", CHAT, "--tools", str(tmp_path / "strict.json"), str(TOOL_CHAT)], capsys)
    assert (code, out["outcome"], out["stage"], out["tool_calls"][0]["state"]) == (
        1, "payload_error", "tool_schema", "invalid")

    (tmp_path / "other.json").write_text(json.dumps({"other_tool": {"type": "object"}}))
    code, out = run(["--route", CHAT, "--tools", str(tmp_path / "other.json"), str(TOOL_CHAT)], capsys)
    assert (out["outcome"], out["stage"]) == ("payload_error", "tool_unknown")


@pytest.mark.parametrize("content", ["[1, 2]", "{not json", '{"f": {"type": "object", "oneOf": []}}'])
def test_unusable_tools_file_exits_two(content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tools.json").write_text(content)
    assert main(["replay", "--route", CHAT, "--tools", str(tmp_path / "tools.json"), str(TOOL_CHAT)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "replay:" in captured.err


def test_every_recording_replays_through_the_cli_to_its_expected_outcome(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    for n, case in enumerate(cases()):
        capture = tmp_path / f"{n}.sse"
        capture.write_bytes(case.data)
        code, out = run(["--route", case.route, "--chunk-size", "97", str(capture)], capsys)
        assert out["outcome"] == case.outcome, case.id
        assert code == (0 if case.outcome == "complete" else 1)


@pytest.mark.host
def test_python_dash_m_webclient_replay_runs_as_a_program() -> None:
    proc = subprocess.run([sys.executable, "-m", "webclient", "replay", "--route", CHAT, str(TOOL_CHAT)],
                          capture_output=True, cwd=ROOT, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["outcome"] == "complete"


def test_replay_prints_its_result_as_exactly_one_whole_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--route", CHAT, str(TOOL_CHAT)]) == 0
    out = capsys.readouterr().out
    assert out.endswith("}\n") and out.count("\n") == 1
    assert json.loads(out)["outcome"] == "complete"


def test_replay_without_a_route_is_a_usage_error_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["replay", str(TOOL_CHAT)])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "the following arguments are required: --route" in captured.err


def test_replay_help_lists_every_option_with_its_value_name_and_meaning(capsys: pytest.CaptureFixture[str]) -> None:
    text = cli_help(capsys, "replay")
    for option in ("--route {openai-chat,openai-responses,anthropic-messages,gemini}",
                   "--status N HTTP status (default 200)",
                   "--content-type CT Content-Type header (default text/event-stream)",
                   "--tools FILE.json JSON object: tool name -> JSON Schema",
                   "--keep-unknown-items keep item / block / part / delta types the route does not know in the "
                   "result's items instead of failing protocol_error unknown_type",
                   "--include-reasoning-content openai-chat: the assistant message carries reasoning_content",
                   "--accept-stop-reason REASON commit on this stop reason instead of the route's success ones "
                   "(repeatable)",
                   "--utf8-errors {strict,replace} invalid UTF-8 ends the attempt (strict, the default) or decodes "
                   "as U+FFFD",
                   "--resume FILE a capture of the stream that resumed the previous one (repeatable, in order)",
                   "--chunk-size N feed the bytes in N-byte chunks",
                   "--split-at I,J,K cut the bytes at these offsets",
                   "--max-line-chars N --max-event-chars N --max-text-chars N --max-tool-input-chars N "
                   "--max-retained-chars N",
                   "FILE|- the capture (raw response body bytes); - for stdin"):
        assert option in text, option


@pytest.mark.parametrize(("chunking", "chunks"), [
    ([], 1),
    (["--chunk-size", "1"], None),
    (["--chunk-size", "100"], None),
    (["--split-at", "5"], 2),
    (["--split-at", "5,,100,"], 3),
    (["--split-at", "100,5,100,5"], 3),
    (["--split-at", "0,5"], 2),
    (["--split-at", "1"], 2),
    (["--split-at", "5,1000000000"], 2),
])
def test_the_chunking_options_feed_the_capture_in_the_chunks_they_name(
    chunking: list[str], chunks: int | None, capsys: pytest.CaptureFixture[str]
) -> None:
    size = len(TOOL_CHAT.read_bytes())
    if chunks is None:
        step = int(chunking[1])
        chunks = -(-size // step)
    _, reference = run(["--route", CHAT, str(TOOL_CHAT)], capsys)
    code, out = run(["--route", CHAT, *chunking, str(TOOL_CHAT)], capsys)
    assert (code, out["telemetry"]["chunk_count"], out["telemetry"]["bytes_received"]) == (0, chunks, size)
    out["telemetry"].pop("chunk_count")
    reference["telemetry"].pop("chunk_count")
    assert out == reference


@pytest.mark.parametrize(("option", "value", "stage"), [("--max-text-chars", "1", "text"),
                                                        ("--max-retained-chars", "100", "retained")])
def test_the_text_and_retained_ceiling_options_apply_their_ceiling(option: str, value: str, stage: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["--route", "anthropic-messages", option, value, str(ANTHROPIC_TXT)], capsys)
    assert (code, out["outcome"], out["stage"]) == (1, "buffer_limit", stage)


def test_session_options_reach_the_replayed_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.route_fixtures import sse
    from tests.test_check import UNKNOWN_CAPTURES, chat_chunk

    unknown = tmp_path / "unknown.sse"
    unknown.write_bytes(next(d for _, n, d in UNKNOWN_CAPTURES if n == "chat-unknown"))
    assert run(["--route", CHAT, str(unknown)], capsys)[1]["stage"] == "unknown_type"
    code, out = run(["--route", CHAT, "--keep-unknown-items", str(unknown)], capsys)
    assert code == 0 and [sorted(item) for item in out["items"]] == [
        ["audio"], ["images"], ["id", "index", "type", "web_search"], ["reasoning_details"]]
    reasoning = tmp_path / "reasoning.sse"
    reasoning.write_bytes(sse(chat_chunk({"role": "assistant", "reasoning_content": "Plan.", "content": "H\u00e9"}),
                              chat_chunk({}, "length"), "[DONE]").replace(b"H\\u00e9", b"H\xff"))
    assert run(["--route", CHAT, str(reasoning)], capsys)[1]["outcome"] == "decode_error"
    code, out = run(["--route", CHAT, "--utf8-errors", "replace", "--accept-stop-reason", "length",
                     "--accept-stop-reason", "stop", "--include-reasoning-content", str(reasoning)], capsys)
    assert code == 0 and out["text"] == "H\ufffd" and out["stop_reason"] == "length"
    assert out["assistant_message"]["reasoning_content"] == "Plan."
    code, out = run(["--route", CHAT, "--utf8-errors", "replace", str(reasoning)], capsys)
    assert (code, out["outcome"], "reasoning_content" in out["assistant_message"]) == (1, "truncated", False)
    assert run(["--route", CHAT, "--utf8-errors", "strict", str(reasoning)], capsys)[1]["outcome"] == "decode_error"
