"""Route ``anthropic-messages``: block accounting, tool input gating, event order (every chunking)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.route_fixtures import check, outcome_of, sse
from webclient import Limits

ROUTE = "anthropic-messages"


def named(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An event with its SSE name equal to ``data.type`` (as Anthropic sends it)."""
    return (payload["type"], payload)


START = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                                              "usage": {"input_tokens": 10, "output_tokens": 1}}}
PING = {"type": "ping"}
STOP = {"type": "message_stop"}


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, **d: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": d}


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(stop_reason: str | None, output_tokens: int = 5) -> dict[str, Any]:
    return {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens}}


def text_block(index: int, *parts: str) -> list[dict[str, Any]]:
    return [block_start(index, {"type": "text", "text": ""}),
            *(delta(index, type="text_delta", text=p) for p in parts), block_stop(index)]


def tool_block(index: int, *fragments: str, name: str = "get_weather", input: Any = None) -> list[dict[str, Any]]:
    return [block_start(index, {"type": "tool_use", "id": f"toolu_{index}", "name": name,
                                "input": {} if input is None else input}),
            *(delta(index, type="input_json_delta", partial_json=f) for f in fragments), block_stop(index)]


def message(*events: dict[str, Any], stop: str | None = "end_turn", names: bool = True) -> bytes:
    items = [START, PING, *events, message_delta(stop), STOP]
    return sse(*(named(e) if names else e for e in items))


def test_text_message_with_ping_is_complete_and_usage_is_cumulative() -> None:
    result, updates = check(ROUTE, message(*text_block(0, "Hel", "lo")))
    assert (result.outcome.value, result.stop_reason, result.text) == ("complete", "end_turn", "Hello")
    assert result.usage == {"input_tokens": 10, "output_tokens": 5}
    assert updates == [{"kind": "text_delta", "channel": "text", "index": 0, "text": "Hello"}]


def test_stream_without_event_names_dispatches_on_data_type() -> None:
    assert outcome_of(ROUTE, message(*text_block(0, "x"), names=False)) == ("complete", None)


def test_event_name_disagreeing_with_data_type_is_protocol_error() -> None:
    data = sse(named(START), ("content_block_delta", block_start(0, {"type": "text", "text": ""})))
    assert outcome_of(ROUTE, data) == ("protocol_error", "event_name")


def test_tool_input_fragments_are_joined_and_parsed_only_at_block_stop() -> None:
    data = message(*text_block(0, "Checking."), *tool_block(1, "", '{"locati', 'on": "Pa', 'ris"}'), stop="tool_use")
    result, updates = check(ROUTE, data)
    assert result.outcome.value == "complete"
    assert [(c.id, c.name, c.state, c.arguments, c.ready) for c in result.tool_calls] == [
        ("toolu_1", "get_weather", "valid", {"location": "Paris"}, True)]
    assert [u["kind"] for u in updates] == ["text_delta", "tool_call", "tool_input_delta", "tool_call", "tool_call"]
    assert [u.get("state") for u in updates if u["kind"] == "tool_call"] == ["streaming", "closed", "valid"]


def test_tool_with_only_an_empty_fragment_gets_empty_object_arguments() -> None:
    result, _ = check(ROUTE, message(*tool_block(0, ""), stop="tool_use"))
    assert [(c.state, c.arguments) for c in result.tool_calls] == [("valid", {})]


def test_tool_input_sent_whole_in_block_start_is_used_when_no_delta_follows() -> None:
    result, _ = check(ROUTE, message(*tool_block(0, input={"q": 1}), stop="tool_use"))
    assert [(c.state, c.arguments) for c in result.tool_calls] == [("valid", {"q": 1})]


def test_invalid_json_in_a_closed_tool_block_is_payload_error_at_block_stop() -> None:
    data = message(*tool_block(0, '{"a": '), *text_block(1, "late"), stop="tool_use")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_json")
    assert result.text == ""  # nothing after the failing event was consumed


def test_tool_block_left_open_at_max_tokens_is_truncated_with_the_raw_partial_input() -> None:
    events = tool_block(0, '{"a": "unfin')[:-1]  # no content_block_stop
    result, _ = check(ROUTE, message(*events, stop="max_tokens"))
    assert (result.outcome.value, result.stage, result.stop_reason) == ("truncated", "stop_reason", "max_tokens")
    assert [(c.state, c.input_text) for c in result.tool_calls] == [("streaming", '{"a": "unfin')]
    assert result.telemetry.open_payload_accumulator_count == 1


def test_block_left_open_at_an_accepted_stop_is_protocol_error() -> None:
    events = text_block(0, "x")[:-1]
    assert outcome_of(ROUTE, message(*events, stop="end_turn")) == ("protocol_error", "open_block")


def test_message_stop_without_a_stop_reason_is_truncated() -> None:
    assert outcome_of(ROUTE, message(*text_block(0, "x"), stop=None)) == ("truncated", "missing_stop")


@pytest.mark.parametrize("stop", ["refusal", "pause_turn", "stop_sequence", "tool_use"])
def test_refusal_and_pause_turn_stop_reasons_are_accepted(stop: str) -> None:
    result, _ = check(ROUTE, message(*text_block(0, "x"), stop=stop))
    assert (result.outcome.value, result.stop_reason) == ("complete", stop)


def test_an_unknown_stop_reason_fails_closed_keeping_the_raw_value() -> None:
    result, _ = check(ROUTE, message(*text_block(0, "x"), stop="something_new"))
    assert (result.outcome.value, result.stage, result.stop_reason) == ("protocol_error", "unrecognized_stop",
                                                                        "something_new")


@pytest.mark.parametrize("stop", ["max_tokens", "model_context_window_exceeded"])
def test_limit_stop_reasons_are_truncated(stop: str) -> None:
    assert outcome_of(ROUTE, message(*text_block(0, "x"), stop=stop)) == ("truncated", "stop_reason")


def test_thinking_and_signature_stay_out_of_the_text() -> None:
    events = [block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
              delta(0, type="thinking_delta", thinking="hmm "), delta(0, type="thinking_delta", thinking="ok"),
              delta(0, type="signature_delta", signature="sig"), block_stop(0), *text_block(1, "Answer")]
    result, updates = check(ROUTE, message(*events))
    assert (result.text, result.reasoning) == ("Answer", "hmm ok")
    assert [(u["channel"], u["text"]) for u in updates] == [("reasoning", "hmm ok"), ("text", "Answer")]


def test_text_and_thinking_of_several_blocks_join_in_index_order_without_a_refusal() -> None:
    """Blocks arrive out of index order here; the result reads them by index."""
    thinking = [block_start(1, {"type": "thinking", "thinking": "", "signature": ""}),
                delta(1, type="thinking_delta", thinking="first "), block_stop(1),
                block_start(3, {"type": "thinking", "thinking": "", "signature": ""}),
                delta(3, type="thinking_delta", thinking="second"), block_stop(3)]
    events = [*text_block(2, "B", "b "), *thinking, *text_block(0, "A", "a "), *text_block(4, "C")]
    result, _ = check(ROUTE, message(*events))
    assert (result.text, result.reasoning, result.refusal) == ("Aa Bb C", "first second", "")
    assert result.choices[0].refusal == ""
    assert [block["type"] for block in result.assistant_message["content"]] == [  # type: ignore[index]
        "text", "thinking", "text", "thinking", "text"]


def test_server_tool_blocks_are_not_client_tool_calls_and_skip_the_registry() -> None:
    events = [block_start(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
              delta(0, type="input_json_delta", partial_json='{"query": "x"}'), block_stop(0),
              block_start(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}),
              block_stop(1), *text_block(2, "Found.")]
    result, _ = check(ROUTE, message(*events), tools={"get_weather": {"type": "object"}})
    assert (result.outcome.value, result.tool_calls, result.text) == ("complete", (), "Found.")


def test_unknown_event_types_are_tolerated_but_unknown_delta_types_fail_closed() -> None:
    events = [{"type": "future_event", "x": 1}, *text_block(0, "a")[:2],
              delta(0, type="citations_delta", citation={"url": "u"}), block_stop(0)]
    assert outcome_of(ROUTE, message(*events)) == ("complete", None)
    unknown = [*text_block(0, "a")[:2], delta(0, type="future_delta"), block_stop(0)]
    assert outcome_of(ROUTE, message(*unknown)) == ("protocol_error", "unknown_type")


@pytest.mark.parametrize(
    ("events", "stage"),
    [
        ([delta(0, type="text_delta", text="x")], "unknown_block"),
        ([*text_block(0, "a"), delta(0, type="text_delta", text="x")], "closed_block"),
        ([*text_block(0, "a"), block_stop(0)], "closed_block"),
        ([*text_block(0, "a"), block_start(0, {"type": "text", "text": ""})], "duplicate_block"),
        ([block_start(0, {"type": "text", "text": ""}), delta(0, type="input_json_delta", partial_json="{}")],
         "delta_type"),
        ([*tool_block(0, "{}")[:1], delta(0, type="text_delta", text="x")], "delta_type"),
        ([START], "duplicate_start"),
    ],
    ids=["delta-unknown-index", "delta-closed-index", "stop-closed-index", "duplicate-index",
         "json-delta-on-text", "text-delta-on-tool", "second-message-start"],
)
def test_block_accounting_violations_are_protocol_errors(events: list[dict[str, Any]], stage: str) -> None:
    assert outcome_of(ROUTE, message(*events)) == ("protocol_error", stage)


def test_events_before_message_start_are_protocol_error_but_ping_is_not() -> None:
    assert outcome_of(ROUTE, sse(named(PING), *(named(e) for e in text_block(0, "x")))) == ("protocol_error", "order")


def test_error_event_is_upstream_error_keeping_only_the_error_type() -> None:
    err = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded SECRET"}}
    result, _ = check(ROUTE, sse(named(START), *(named(e) for e in text_block(0, "par")), named(err)))
    assert (result.outcome.value, result.stage, result.text) == ("upstream_error", "error_event", "par")
    assert result.provider_error is not None
    assert result.provider_error.to_dict() == {"type": "overloaded_error", "code": None}


def test_data_after_message_stop_is_protocol_error_but_a_stray_done_is_ignored() -> None:
    base = message(*text_block(0, "x"))
    assert outcome_of(ROUTE, base + sse(named(PING))) == ("protocol_error", "after_terminal")
    assert outcome_of(ROUTE, base + sse("[DONE]")) == ("complete", None)


def test_ceilings_on_text_tool_input_and_blocks() -> None:
    data = message(*text_block(0, "abc", "de"), *tool_block(1, '{"k":', "1}"), stop="tool_use")
    assert outcome_of(ROUTE, data, limits=Limits(max_text_chars=5, max_tool_input_chars=7, max_blocks=2)) == (
        "complete", None)
    assert outcome_of(ROUTE, data, limits=Limits(max_text_chars=4)) == ("buffer_limit", "text")
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_input_chars=6)) == ("buffer_limit", "tool_input")
    assert outcome_of(ROUTE, data, limits=Limits(max_blocks=1)) == ("buffer_limit", "blocks")
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_calls=1)) == ("complete", None)
