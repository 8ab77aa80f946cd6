"""``python -m webclient replay``: the CLI contract (keys, options, exit codes)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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
                         "response_id", "model", "citations", "logprobs", "resume",
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
