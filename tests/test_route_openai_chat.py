"""Route ``openai-chat``: accumulation, tool-call keying, completion rules (every chunking)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.route_fixtures import check, outcome_of, replay, sse
from webclient import Limits

ROUTE = "openai-chat"
DONE = "[DONE]"


def chunk(*choices: dict[str, Any], usage: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": list(choices), "usage": usage, **extra}


def ch(index: int = 0, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    return {"index": index, "delta": delta, "finish_reason": finish}


def tc(index: int | None = None, id: str | None = None, name: str | None = None,
       args: str | None = None) -> dict[str, Any]:
    frag: dict[str, Any] = {}
    if index is not None:
        frag["index"] = index
    if id is not None:
        frag["id"] = id
        frag["type"] = "function"
    function = {k: v for k, v in (("name", name), ("arguments", args)) if v is not None}
    if function:
        frag["function"] = function
    return frag


def text_stream(*parts: str, finish: str = "stop") -> bytes:
    return sse(chunk(ch(role="assistant", content="")), *(chunk(ch(content=p)) for p in parts),
               chunk(ch(finish=finish)), chunk(usage={"prompt_tokens": 1}), DONE)


def calls(result: Any) -> list[tuple[Any, ...]]:
    return [(c.id, c.name, c.state, c.arguments, c.ready) for c in result.tool_calls]


def test_text_stream_with_usage_chunk_and_done_is_complete() -> None:
    result, updates = check(ROUTE, text_stream("Hel", "lo ", "wörld"))
    assert (result.outcome.value, result.stage, result.stop_reason) == ("complete", None, "stop")
    assert result.text == "Hello wörld" and result.committed
    assert result.usage == {"prompt_tokens": 1}
    assert updates == [{"kind": "text_delta", "channel": "text", "index": 0, "text": "Hello wörld"}]


def test_done_without_a_finish_reason_is_truncated_missing_stop() -> None:
    data = sse(chunk(ch(content="partial")), DONE)
    assert outcome_of(ROUTE, data) == ("truncated", "missing_stop")


def test_eof_without_done_is_truncated_even_after_a_finish_reason() -> None:
    data = sse(chunk(ch(content="x")), chunk(ch(finish="stop")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.stop_reason) == ("truncated", "eof", None)
    assert result.text == "x"


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_limit_and_filter_stops_are_truncated_at_done(reason: str) -> None:
    result, _ = check(ROUTE, text_stream("a", finish=reason))
    assert (result.outcome.value, result.stage, result.stop_reason) == ("truncated", "stop_reason", reason)


def test_caller_can_accept_length_and_refuse_stop() -> None:
    assert outcome_of(ROUTE, text_stream("a", finish="length"), accepted_stop_reasons=["length"]) == ("complete", None)
    assert outcome_of(ROUTE, text_stream("a"), accepted_stop_reasons={"length"}) == ("truncated", "stop_reason")


def test_unknown_finish_reason_fails_closed_and_is_reported_raw() -> None:
    result, _ = check(ROUTE, text_stream("a", finish="eos_token"))
    assert (result.outcome.value, result.stage, result.stop_reason) == ("protocol_error", "unrecognized_stop",
                                                                        "eos_token")
    assert not result.committed and result.telemetry.stop_reason == "unrecognized"


def test_empty_string_finish_reason_means_not_finished_yet() -> None:
    data = sse(chunk(ch(content="a", finish="")), chunk(ch(content="b")), chunk(ch(finish="stop")), DONE)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.text) == ("complete", "ab")


def test_tool_call_fragments_keyed_by_index_starting_at_one() -> None:
    data = sse(
        chunk(ch(content="Let me read it.")),
        chunk(ch(tool_calls=[tc(1, "call_a", "read_file", "")])),
        chunk(ch(tool_calls=[tc(1, args='{"path"')])),
        chunk(ch(tool_calls=[tc(1, args=': "a.txt"}')])),
        chunk(ch(finish="tool_calls")), DONE,
    )
    result, updates = check(ROUTE, data)
    assert result.outcome.value == "complete"
    assert calls(result) == [("call_a", "read_file", "valid", {"path": "a.txt"}, True)]
    kinds = [(u["kind"], u.get("state")) for u in updates]
    assert kinds == [("text_delta", None), ("tool_call", "streaming"), ("tool_input_delta", None),
                     ("tool_call", "closed"), ("tool_call", "valid")]
    assert updates[2]["fragment"] == '{"path": "a.txt"}'


def test_parallel_tool_calls_interleaved_by_index_stay_apart() -> None:
    data = sse(
        chunk(ch(tool_calls=[tc(0, "call_0", "f", ""), tc(1, "call_1", "g", "")])),
        chunk(ch(tool_calls=[tc(1, args='{"b":'), tc(0, args='{"a":')])),
        chunk(ch(tool_calls=[tc(0, args="1}")])),
        chunk(ch(tool_calls=[tc(1, args="2}")])),
        chunk(ch(finish="tool_calls")), DONE,
    )
    result, _ = check(ROUTE, data)
    assert calls(result) == [("call_0", "f", "valid", {"a": 1}, True), ("call_1", "g", "valid", {"b": 2}, True)]


def test_fragment_with_id_and_no_index_starts_a_new_call_and_neither_continues_the_latest() -> None:
    data = sse(
        chunk(ch(tool_calls=[tc(id="call_x", name="f", args='{"n"')])),
        chunk(ch(tool_calls=[tc(args=": 1}")])),
        chunk(ch(tool_calls=[tc(id="call_y", name="g", args="{}")])),
        chunk(ch(tool_calls=[tc(id="call_x")])),  # same id again: continues call_x, adds nothing
        chunk(ch(finish="tool_calls")), DONE,
    )
    result, _ = check(ROUTE, data)
    assert calls(result) == [("call_x", "f", "valid", {"n": 1}, True), ("call_y", "g", "valid", {}, True)]


def test_known_index_with_a_different_id_starts_a_new_call() -> None:
    data = sse(
        chunk(ch(tool_calls=[tc(0, "call_1", "f", "{}")])),
        chunk(ch(tool_calls=[tc(0, "call_2", "f", '{"x":1}')])),
        chunk(ch(finish="tool_calls")), DONE,
    )
    result, _ = check(ROUTE, data)
    assert calls(result) == [("call_1", "f", "valid", {}, True), ("call_2", "f", "valid", {"x": 1}, True)]


def test_id_arriving_after_the_index_attaches_to_the_same_call() -> None:
    data = sse(
        chunk(ch(tool_calls=[tc(0, name="f", args='{"a"')])),
        chunk(ch(tool_calls=[tc(0, "call_late", args=":1}")])),
        chunk(ch(finish="tool_calls")), DONE,
    )
    result, _ = check(ROUTE, data)
    assert calls(result) == [("call_late", "f", "valid", {"a": 1}, True)]


def test_legacy_function_call_is_one_call_per_choice() -> None:
    data = sse(
        chunk(ch(role="assistant", content=None, function_call={"name": "lookup", "arguments": ""})),
        chunk(ch(function_call={"arguments": '{"q": "x'})),
        chunk(ch(function_call={"arguments": '"}'})),
        chunk(ch(finish="function_call")), DONE,
    )
    result, _ = check(ROUTE, data)
    assert result.outcome.value == "complete"
    assert calls(result) == [(None, "lookup", "valid", {"q": "x"}, True)]


def test_tool_call_cut_by_length_stays_closed_unvalidated_and_the_attempt_is_truncated() -> None:
    data = sse(chunk(ch(tool_calls=[tc(0, "c", "f", '{"a": "unfinish')])), chunk(ch(finish="length")), DONE)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("truncated", "stop_reason")
    assert calls(result) == [("c", "f", "closed", None, False)]
    assert result.tool_calls[0].input_text == '{"a": "unfinish'


@pytest.mark.parametrize(
    ("args", "stage"),
    [('{"a": ', "tool_json"), ("[1, 2]", "tool_not_object"), ('{"a": NaN}', "tool_json")],
)
def test_a_closed_tool_input_that_is_not_a_json_object_is_payload_error(args: str, stage: str) -> None:
    data = sse(chunk(ch(tool_calls=[tc(0, "c", "f", args)])), chunk(ch(finish="tool_calls")), DONE)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("payload_error", stage)
    assert result.tool_calls[0].state == "invalid" and not result.tool_calls[0].ready


def test_empty_tool_input_is_the_no_argument_call() -> None:
    data = sse(chunk(ch(tool_calls=[tc(0, "c", "ping", "")])), chunk(ch(finish="tool_calls")), DONE)
    result, _ = check(ROUTE, data)
    assert calls(result) == [("c", "ping", "valid", {}, True)]


def test_registered_tools_refuse_unknown_names_and_schema_violations() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
              "additionalProperties": False}

    def stream(name: str, args: str) -> bytes:
        return sse(chunk(ch(tool_calls=[tc(0, "c", name, args)])), chunk(ch(finish="tool_calls")), DONE)

    tools = {"weather": schema}
    assert outcome_of(ROUTE, stream("weather", '{"city": "Oslo"}'), tools=tools) == ("complete", None)
    assert outcome_of(ROUTE, stream("other", '{"city": "Oslo"}'), tools=tools) == ("payload_error", "tool_unknown")
    result, _ = check(ROUTE, stream("weather", '{"town": "Oslo"}'), tools=tools)
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_schema")
    assert result.tool_calls[0].problems and all("Oslo" not in p for p in result.tool_calls[0].problems)


def test_callable_validators_returning_bool_or_problem_lists_are_caller_policy() -> None:
    data = sse(chunk(ch(tool_calls=[tc(0, "c", "rm", '{"path": "/"}')])), chunk(ch(finish="tool_calls")), DONE)
    assert outcome_of(ROUTE, data, tools={"rm": lambda a: a["path"] != "/"}) == ("payload_error", "tool_schema")
    assert outcome_of(ROUTE, data, tools={"rm": lambda a: ["root refused"]}) == ("payload_error", "tool_schema")
    assert outcome_of(ROUTE, data, tools={"rm": lambda a: []}) == ("complete", None)


def test_n3_choices_accumulate_separately_and_text_is_choice_zero() -> None:
    data = sse(
        chunk(ch(0, content="A")), chunk(ch(1, content="B")), chunk(ch(2, content="C")),
        chunk(ch(1, content="b")), chunk(ch(0, content="a")),
        chunk(ch(0, finish="stop")), chunk(ch(2, finish="stop")), chunk(ch(1, finish="stop")), DONE,
    )
    result, _ = check(ROUTE, data)
    assert result.outcome.value == "complete"
    assert result.text == "Aa" and [c.text for c in result.choices] == ["Aa", "Bb", "C"]


def test_one_choice_cut_by_length_truncates_the_whole_attempt() -> None:
    data = sse(chunk(ch(0, content="A")), chunk(ch(1, content="B")), chunk(ch(0, finish="stop")),
               chunk(ch(1, finish="length")), DONE)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.stop_reason) == ("truncated", "stop_reason", "length")


def test_done_with_one_of_several_choices_unfinished_is_truncated() -> None:
    data = sse(chunk(ch(0, content="A")), chunk(ch(1, content="B")), chunk(ch(0, finish="stop")), DONE)
    assert outcome_of(ROUTE, data) == ("truncated", "missing_stop")


def test_leading_empty_choices_chunk_and_trailing_usage_chunk_are_fine() -> None:
    data = sse({"id": "", "object": "", "choices": [], "prompt_filter_results": [{"prompt_index": 0}]},
               chunk(ch(content="hi", finish="stop")), chunk(usage={"total_tokens": 3}), DONE)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.text, result.usage) == ("complete", "hi", {"total_tokens": 3})


def test_refusal_and_reasoning_are_separate_channels() -> None:
    data = sse(chunk(ch(reasoning_content="think ")), chunk(ch(reasoning="more")),
               chunk(ch(refusal="I can't")), chunk(ch(content="ok", finish="stop")), DONE)
    result, updates = check(ROUTE, data)
    assert (result.text, result.refusal, result.reasoning) == ("ok", "I can't", "think more")
    assert [u["channel"] for u in updates] == ["reasoning", "refusal", "text"]


def test_repeated_empty_finish_chunk_is_tolerated_but_content_after_finish_is_protocol_error() -> None:
    repeated = sse(chunk(ch(content="a", finish="stop")), chunk(ch(content="", reasoning=None, finish="stop")), DONE)
    assert outcome_of(ROUTE, repeated) == ("complete", None)
    late = sse(chunk(ch(content="a", finish="stop")), chunk(ch(content="b")), DONE)
    assert outcome_of(ROUTE, late) == ("protocol_error", "closed_block")


def test_data_after_done_is_protocol_error() -> None:
    assert outcome_of(ROUTE, text_stream("a") + sse(chunk(ch(content="x")))) == ("protocol_error", "after_terminal")
    assert outcome_of(ROUTE, text_stream("a") + sse(DONE)) == ("protocol_error", "after_terminal")


def test_trailing_comments_and_blank_lines_after_done_are_not_data() -> None:
    assert outcome_of(ROUTE, text_stream("a") + b": keep-alive\n\n\n") == ("complete", None)


@pytest.mark.parametrize("payload", ["not json", "[1, 2]", '"a string"', '{"choices": {"0": 1}}',
                                     '{"choices": [{"index": "0", "delta": {}}]}',
                                     '{"choices": [{"index": 0, "delta": {"content": 5}}]}'])
def test_malformed_envelopes_are_protocol_error(payload: str) -> None:
    assert outcome_of(ROUTE, sse(chunk(ch(content="a")), payload, DONE)) == ("protocol_error", "envelope")


def test_event_error_frame_is_upstream_error_keeping_only_type_and_code() -> None:
    err = {"error": {"message": "Tool call validation failed: SECRET", "type": "invalid_request_error",
                     "code": "tool_use_failed", "failed_generation": "SECRET"}}
    result, _ = check(ROUTE, sse(chunk(ch(content="a")), ("error", err)))
    assert (result.outcome.value, result.stage) == ("upstream_error", "error_event")
    assert result.provider_error is not None
    assert result.provider_error.to_dict() == {"type": "invalid_request_error", "code": "tool_use_failed"}


def test_error_object_inside_a_chunk_is_upstream_error_before_a_pending_length_stop() -> None:
    data = sse(chunk(ch(content="a", finish="length")),
               chunk(ch(content=""), error={"code": 400, "message": "Token limit reached"}), DONE)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("upstream_error", "error_object")
    assert result.provider_error is not None and result.provider_error.code == "400"


def test_text_ceiling_is_per_choice_and_trips_as_buffer_limit_text() -> None:
    limits = Limits(max_text_chars=5)
    assert outcome_of(ROUTE, text_stream("ab", "cde"), limits=limits) == ("complete", None)
    result, _ = check(ROUTE, text_stream("ab", "cdef"), limits=limits)
    assert (result.outcome.value, result.stage, result.text) == ("buffer_limit", "text", "ab")
    assert result.telemetry.buffer_limit_stage == "text"


def test_tool_input_ceiling_and_tool_call_count_ceiling() -> None:
    data = sse(chunk(ch(tool_calls=[tc(0, "a", "f", '{"x": 12}')])), chunk(ch(finish="tool_calls")), DONE)
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_input_chars=9)) == ("complete", None)
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_input_chars=8)) == ("buffer_limit", "tool_input")
    two = sse(chunk(ch(tool_calls=[tc(0, "a", "f", "{}"), tc(1, "b", "f", "{}")])), chunk(ch(finish="tool_calls")),
              DONE)
    assert outcome_of(ROUTE, two, limits=Limits(max_tool_calls=2)) == ("complete", None)
    assert outcome_of(ROUTE, two, limits=Limits(max_tool_calls=1)) == ("buffer_limit", "tool_calls")


def test_choice_count_ceiling_is_buffer_limit_blocks() -> None:
    data = sse(chunk(ch(0, content="a", finish="stop")), chunk(ch(1, content="b", finish="stop")), DONE)
    assert outcome_of(ROUTE, data, limits=Limits(max_blocks=2)) == ("complete", None)
    assert outcome_of(ROUTE, data, limits=Limits(max_blocks=1)) == ("buffer_limit", "blocks")


# -- found by a sampled mutation run of _routes/_base.py (2026-12-06, seed 11) ----------------------------------

def test_a_call_validated_at_its_finish_reason_is_announced_valid_but_not_ready_before_the_response_completes() -> None:
    data = sse(chunk(ch(tool_calls=[tc(0, "call_1", "f", '{"a": 1}')])), chunk(ch(finish="tool_calls")), DONE)
    result, updates = check(ROUTE, data)
    settled = [u for u in updates if u["kind"] == "tool_call" and u["state"] == "valid"]
    assert settled == [{"kind": "tool_call", "call": 0, "id": "call_1", "name": "f", "state": "valid",
                        "arguments": {"a": 1}, "ready": False}]
    assert (result.outcome.value, result.tool_calls[0].ready) == ("complete", True)


def test_a_pair_split_across_argument_fragments_is_one_character_in_the_input_sent_back() -> None:
    data = sse(chunk(ch(tool_calls=[tc(0, "call_1", "f", '{"q":"\ud83d')])),
               chunk(ch(tool_calls=[tc(0, None, None, '\ude00"}')])), chunk(ch(finish="tool_calls")), DONE)
    result, _ = check(ROUTE, data)
    assert [(c.input_text, c.arguments) for c in result.tool_calls] == [('{"q":"\U0001f600"}', {"q": "\U0001f600"})]
    assert result.assistant_message["tool_calls"][0]["function"]["arguments"] == '{"q":"\U0001f600"}'
    # and the input is charged as one character, as if it had come whole
    whole = sse(chunk(ch(tool_calls=[tc(0, "call_1", "f", '{"q":"')])),
                chunk(ch(tool_calls=[tc(0, None, None, '\U0001f600"}')])), chunk(ch(finish="tool_calls")), DONE)
    assert replay(ROUTE, [data]).retained_chars == replay(ROUTE, [whole]).retained_chars
