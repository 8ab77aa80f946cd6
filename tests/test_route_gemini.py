"""Route ``gemini``: candidates, whole and streamed function calls, finishReason (every chunking)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.route_fixtures import check, outcome_of, sse
from webclient import Limits
from webclient._routes.gemini import build_arguments

ROUTE = "gemini"


def chunk(*parts: dict[str, Any], finish: str | None = None, index: int = 0, **extra: Any) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": index}
    if finish is not None:
        cand["finishReason"] = finish
    return {"candidates": [cand], "modelVersion": "gemini-x", **extra}


def call(name: str | None = None, *, will: bool | None = None, partial: list[dict[str, Any]] | None = None,
         args: Any = None) -> dict[str, Any]:
    fc: dict[str, Any] = {}
    if name is not None:
        fc["name"] = name
    if args is not None:
        fc["args"] = args
    if partial is not None:
        fc["partialArgs"] = partial
    if will is not None:
        fc["willContinue"] = will
    return {"functionCall": fc}


def test_crlf_separated_text_stream_ending_with_finish_reason_is_complete() -> None:
    data = sse(chunk({"text": "The "}), chunk({"text": "answer"}, finish="STOP",
                                             usageMetadata={"totalTokenCount": 3})).replace(b"\n", b"\r\n")
    result, updates = check(ROUTE, data)
    assert (result.outcome.value, result.stop_reason, result.text) == ("complete", "STOP", "The answer")
    assert result.usage == {"totalTokenCount": 3}
    assert updates == [{"kind": "text_delta", "channel": "text", "index": 0, "text": "The answer"}]


def test_thought_parts_are_reasoning_and_signature_only_parts_add_no_text() -> None:
    data = sse(chunk({"text": "plan", "thought": True}), chunk({"text": "", "thoughtSignature": "c2ln"}),
               chunk({"text": "ok"}, finish="STOP"))
    result, _ = check(ROUTE, data)
    assert (result.text, result.reasoning) == ("ok", "plan")


def test_whole_function_call_part_opens_closes_and_validates_at_once() -> None:
    data = sse(chunk(call("weather", args={"location": "SF"})), chunk({"text": ""}, finish="STOP"))
    result, updates = check(ROUTE, data, tools={"weather": {"type": "object", "required": ["location"]}})
    assert [(c.name, c.state, c.arguments, c.ready) for c in result.tool_calls] == [
        ("weather", "valid", {"location": "SF"}, True)]
    assert [u.get("state") for u in updates if u["kind"] == "tool_call"] == ["streaming", "closed", "valid"]


def test_function_call_without_args_means_empty_object_and_non_object_args_are_payload_error() -> None:
    result, _ = check(ROUTE, sse(chunk(call("ping"), finish="STOP")))
    assert [(c.state, c.arguments) for c in result.tool_calls] == [("valid", {})]
    assert outcome_of(ROUTE, sse(chunk(call("ping", args=[1]), finish="STOP"))) == ("payload_error",
                                                                                   "tool_not_object")


def test_streamed_partial_args_are_assembled_per_call_as_in_the_vertex_recording() -> None:
    data = sse(
        chunk(call("getWeather", will=True)),
        chunk(call(will=True, partial=[{"jsonPath": "$.location", "stringValue": "Bos", "willContinue": True}])),
        chunk(call(will=True, partial=[{"jsonPath": "$.location", "stringValue": "ton"}])),
        chunk(call()),
        chunk(call("getWeather", will=True)),
        chunk(call(will=True, partial=[{"jsonPath": "$.location", "stringValue": "San Francisco"},
                                       {"jsonPath": "$.days", "numberValue": 3},
                                       {"jsonPath": "$.opts.metric", "boolValue": True}])),
        chunk(call(), finish="STOP"),
    )
    result, updates = check(ROUTE, data)
    assert result.outcome.value == "complete"
    assert [(c.name, c.state, c.arguments) for c in result.tool_calls] == [
        ("getWeather", "valid", {"location": "Boston"}),
        ("getWeather", "valid", {"location": "San Francisco", "days": 3, "opts": {"metric": True}}),
    ]
    assert next(u["fragment"] for u in updates if u["kind"] == "tool_input_delta") == "Boston"


def test_finish_reason_closes_a_streamed_call_that_never_got_its_closing_part() -> None:
    data = sse(chunk(call("f", will=True)),
               chunk(call(will=True, partial=[{"jsonPath": "$.a[0]", "stringValue": "x"}]), finish="STOP"))
    result, _ = check(ROUTE, data)
    assert [(c.state, c.arguments) for c in result.tool_calls] == [("valid", {"a": ["x"]})]


def test_unsupported_json_path_makes_the_call_invalid() -> None:
    data = sse(chunk(call("f", will=True)), chunk(call(will=True, partial=[{"jsonPath": "a.b", "stringValue": "x"}])),
               chunk(call(), finish="STOP"))
    assert outcome_of(ROUTE, data) == ("payload_error", "tool_json")


def test_partial_args_with_no_open_call_and_a_call_without_name_are_protocol_errors() -> None:
    data = sse(chunk(call(partial=[{"jsonPath": "$.a", "stringValue": "x"}])), chunk({"text": "x"}, finish="STOP"))
    assert outcome_of(ROUTE, data) == ("protocol_error", "unknown_block")
    assert outcome_of(ROUTE, sse(chunk(call(args={"a": 1}), finish="STOP"))) == ("protocol_error", "envelope")
    assert outcome_of(ROUTE, sse(chunk(call(), finish="STOP"))) == ("complete", None)


@pytest.mark.parametrize("reason", ["MAX_TOKENS", "SAFETY", "RECITATION", "PROHIBITED_CONTENT"])
def test_limit_and_filter_finish_reasons_are_truncated(reason: str) -> None:
    assert outcome_of(ROUTE, sse(chunk({"text": "x"}, finish=reason))) == ("truncated", "stop_reason")


def test_a_malformed_function_call_is_a_provider_failure() -> None:
    assert outcome_of(ROUTE, sse(chunk({"text": "x"}, finish="MALFORMED_FUNCTION_CALL"))) == ("upstream_error",
                                                                                             "error_stop")


def test_prompt_block_feedback_without_candidates_is_a_truncated_terminal() -> None:
    data = sse({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 4}})
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.stop_reason) == ("truncated", "stop_reason", "SAFETY")


def test_eof_without_finish_reason_is_truncated_and_data_after_it_is_protocol_error() -> None:
    assert outcome_of(ROUTE, sse(chunk({"text": "x"}))) == ("truncated", "eof")
    assert outcome_of(ROUTE, sse(chunk({"text": "x"}, finish="STOP"), chunk({"text": "y"}))) == (
        "protocol_error", "after_terminal")
    assert outcome_of(ROUTE, sse(chunk({"text": "x"}, finish="STOP"), "[DONE]")) == ("complete", None)


def test_terminal_waits_for_every_candidate_to_finish() -> None:
    data = sse(chunk({"text": "a"}, index=0), chunk({"text": "b"}, index=1), chunk({"text": ""}, finish="STOP"),
               chunk({"text": "c"}, index=1, finish="STOP"))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, [c.text for c in result.choices]) == ("complete", ["a", "bc"])


def test_error_object_in_a_chunk_is_upstream_error_with_status_and_code() -> None:
    error = {"code": 429, "message": "Quota SECRET", "status": "RESOURCE_EXHAUSTED"}
    data = sse(chunk({"text": "a"}), {"error": error})
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("upstream_error", "error_object")
    assert result.provider_error is not None
    assert result.provider_error.to_dict() == {"type": "RESOURCE_EXHAUSTED", "code": "429"}


def test_ceilings_apply_to_candidate_text_and_whole_call_input() -> None:
    data = sse(chunk({"text": "abcd"}, call("f", args={"k": "v"}), finish="STOP"))
    assert outcome_of(ROUTE, data, limits=Limits(max_text_chars=4, max_tool_input_chars=10)) == ("complete", None)
    assert outcome_of(ROUTE, data, limits=Limits(max_text_chars=3)) == ("buffer_limit", "text")
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_input_chars=9)) == ("buffer_limit", "tool_input")


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        ({"$.a": ["x", "y"]}, {"a": "xy"}),
        ({"$.a.b": (1,), "$.a.c": (None,)}, {"a": {"b": 1, "c": None}}),
        ({"$.l[0]": ["p"], "$.l[1]": ["q"]}, {"l": ["p", "q"]}),
        ({"$['k.x']": (True,)}, {"k.x": True}),
        ({"$.l[1]": ["gap"]}, None),
        ({"$": ["root"]}, None),
    ],
)
def test_partial_argument_paths_build_nested_objects(paths: dict[str, Any], expected: Any) -> None:
    assert build_arguments(paths) == expected
