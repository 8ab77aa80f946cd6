"""Route ``openai-responses``: items, argument reconciliation, terminal events (every chunking)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.route_fixtures import check, outcome_of, replay, sse
from webclient import Limits

ROUTE = "openai-responses"


def ev(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    return (kind, {"type": kind, **fields})


CREATED = ev("response.created", response={"id": "resp_1", "status": "in_progress", "output": []})
IN_PROGRESS = ev("response.in_progress", response={"id": "resp_1", "status": "in_progress"})


def completed(**response: Any) -> tuple[str, dict[str, Any]]:
    return ev("response.completed", response={"id": "resp_1", "status": "completed", "usage": {"total_tokens": 9},
                                              **response})


def message_item(index: int, *deltas: str) -> list[tuple[str, dict[str, Any]]]:
    item_id = f"msg_{index}"
    return [
        ev("response.output_item.added", output_index=index, item={"id": item_id, "type": "message", "content": []}),
        ev("response.content_part.added", item_id=item_id, output_index=index, content_index=0,
           part={"type": "output_text", "text": ""}),
        *(ev("response.output_text.delta", item_id=item_id, output_index=index, content_index=0, delta=d)
          for d in deltas),
        ev("response.output_text.done", item_id=item_id, output_index=index, content_index=0, text="".join(deltas)),
        ev("response.content_part.done", item_id=item_id, output_index=index, content_index=0, part={}),
        ev("response.output_item.done", output_index=index, item={"id": item_id, "type": "message"}),
    ]


def call_item(index: int, *deltas: str, done: str | None = None, item_done: str | None = None,
              name: str = "weather") -> list[tuple[str, dict[str, Any]]]:
    item_id = f"fc_{index}"
    out = [ev("response.output_item.added", output_index=index,
              item={"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "",
                    "call_id": f"call_{index}", "name": name}),
           *(ev("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=d)
             for d in deltas)]
    if done is not None:
        out.append(ev("response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=done))
    out.append(ev("response.output_item.done", output_index=index,
                  item={"id": item_id, "type": "function_call", "status": "completed",
                        "arguments": item_done if item_done is not None else "".join(deltas) or (done or ""),
                        "call_id": f"call_{index}",
                        "name": name}))
    return out


def stream(*events: tuple[str, dict[str, Any]], terminal: Any = None, names: bool = True) -> bytes:
    items = [CREATED, IN_PROGRESS, *events, terminal if terminal is not None else completed()]
    return sse(*(i if names else i[1] for i in items))


def test_text_item_is_complete_with_stop_reason_completed_and_usage() -> None:
    result, updates = check(ROUTE, stream(*message_item(0, "Hel", "lo")))
    assert (result.outcome.value, result.stop_reason, result.text) == ("complete", "completed", "Hello")
    assert result.usage == {"total_tokens": 9}
    assert updates == [{"kind": "text_delta", "channel": "text", "index": 0, "text": "Hello"}]


def test_data_only_frames_with_trailing_done_are_complete() -> None:
    assert outcome_of(ROUTE, stream(*message_item(0, "x"), names=False) + sse("[DONE]")) == ("complete", None)


def test_function_call_arguments_done_must_equal_the_joined_deltas() -> None:
    good = stream(*call_item(0, '{"location"', ':"SF"}', done='{"location":"SF"}'))
    result, _ = check(ROUTE, good)
    assert [(c.id, c.name, c.state, c.arguments, c.ready) for c in result.tool_calls] == [
        ("call_0", "weather", "valid", {"location": "SF"}, True)]
    bad = stream(*call_item(0, '{"location"', ':"SF"}', done='{"location":"LA"}'))
    result, _ = check(ROUTE, bad)
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_arguments_mismatch")
    assert result.tool_calls[0].state == "invalid"


def test_arguments_done_without_any_delta_is_the_input() -> None:
    result, _ = check(ROUTE, stream(*call_item(0, done='{"location":"SF"}')))
    assert [(c.state, c.arguments) for c in result.tool_calls] == [("valid", {"location": "SF"})]


def test_output_item_done_closes_a_call_that_had_no_arguments_done() -> None:
    result, _ = check(ROUTE, stream(*call_item(0, '{"a":', "1}")))
    assert [(c.state, c.arguments) for c in result.tool_calls] == [("valid", {"a": 1})]
    bad = stream(*call_item(0, '{"a":', "1}", item_done='{"a":2}'))
    assert outcome_of(ROUTE, bad) == ("payload_error", "tool_arguments_mismatch")


def test_reasoning_and_refusal_items_use_their_channels() -> None:
    events = [
        ev("response.output_item.added", output_index=0, item={"id": "rs_0", "type": "reasoning"}),
        ev("response.reasoning_summary_text.delta", item_id="rs_0", output_index=0, summary_index=0, delta="plan"),
        ev("response.reasoning_text.delta", item_id="rs_0", output_index=0, content_index=0, delta="!"),
        ev("response.output_item.done", output_index=0, item={"id": "rs_0", "type": "reasoning"}),
        ev("response.output_item.added", output_index=1, item={"id": "msg_1", "type": "message"}),
        ev("response.refusal.delta", item_id="msg_1", output_index=1, content_index=0, delta="no"),
        ev("response.output_item.done", output_index=1, item={"id": "msg_1", "type": "message"}),
    ]
    result, updates = check(ROUTE, stream(*events))
    assert (result.reasoning, result.refusal, result.text) == ("plan!", "no", "")
    assert [(u["channel"], u["index"], u["text"]) for u in updates] == [("reasoning", 0, "plan!"), ("refusal", 1, "no")]


def test_each_channel_joins_its_items_in_output_index_order_whatever_order_they_opened_in() -> None:
    def item(index: int, kind: str, *deltas: tuple[str, str]) -> list[tuple[str, dict[str, Any]]]:
        item_id = f"it_{index}"
        return [ev("response.output_item.added", output_index=index, item={"id": item_id, "type": kind}),
                *(ev(f"response.{delta}.delta", item_id=item_id, output_index=index, content_index=0, delta=text)
                  for delta, text in deltas),
                ev("response.output_item.done", output_index=index, item={"id": item_id, "type": kind})]

    events = [*item(3, "message", ("output_text", "T3"), ("refusal", "R3")),
              *item(1, "reasoning", ("reasoning_text", "r1")),
              *item(0, "message", ("output_text", "T0"), ("refusal", "R0")),
              *item(2, "reasoning", ("reasoning_summary_text", "s2"))]
    result, _ = check(ROUTE, stream(*events))
    assert (result.outcome.value, result.text, result.refusal, result.reasoning) == (
        "complete", "T0T3", "R0R3", "r1s2")
    assert [m["id"] for m in result.assistant_message] == ["it_0", "it_1", "it_2", "it_3"]  # type: ignore[union-attr]


def test_items_may_close_out_of_order_and_deltas_fall_back_to_item_id() -> None:
    events = [
        ev("response.output_item.added", output_index=0, item={"id": "rs_0", "type": "reasoning"}),
        ev("response.output_item.added", output_index=1, item={"id": "msg_1", "type": "message"}),
        ev("response.output_text.delta", item_id="msg_1", delta="t"),
        ev("response.output_item.done", output_index=1, item={"id": "msg_1", "type": "message"}),
        ev("response.reasoning_text.delta", item_id="rs_0", output_index=0, delta="r"),
        ev("response.output_item.done", output_index=0, item={"id": "rs_0", "type": "reasoning"}),
    ]
    result, _ = check(ROUTE, stream(*events))
    assert (result.outcome.value, result.text, result.reasoning) == ("complete", "t", "r")


def test_incomplete_response_is_truncated_with_its_reason() -> None:
    terminal = ev("response.incomplete", response={"status": "incomplete",
                                                   "incomplete_details": {"reason": "max_output_tokens"}})
    result, _ = check(ROUTE, stream(*message_item(0, "cut"), terminal=terminal))
    assert (result.outcome.value, result.stage, result.stop_reason) == ("truncated", "stop_reason",
                                                                        "max_output_tokens")
    unknown = ev("response.incomplete", response={"status": "incomplete", "incomplete_details": None})
    assert outcome_of(ROUTE, stream(terminal=unknown)) == ("truncated", "stop_reason")


def test_failed_response_and_error_events_are_upstream_errors_keeping_codes_only() -> None:
    nested = ev("error", sequence_number=2, error={"type": "insufficient_quota", "code": "insufficient_quota",
                                                   "message": "You exceeded SECRET", "param": None})
    result, _ = check(ROUTE, stream(terminal=nested))
    assert (result.outcome.value, result.stage) == ("upstream_error", "error_event")
    assert result.provider_error is not None
    assert result.provider_error.to_dict() == {"type": "insufficient_quota", "code": "insufficient_quota"}
    flat = ev("error", code="server_error", message="SECRET", param=None)
    result, _ = check(ROUTE, stream(terminal=flat))
    assert result.provider_error is not None and result.provider_error.code == "server_error"
    failed = ev("response.failed", response={"status": "failed", "error": {"code": "rate_limit_exceeded",
                                                                            "message": "SECRET"}})
    result, _ = check(ROUTE, stream(terminal=failed))
    assert (result.outcome.value, result.stage) == ("upstream_error", "response_failed")
    assert result.provider_error is not None and result.provider_error.code == "rate_limit_exceeded"


@pytest.mark.parametrize(
    ("events", "stage"),
    [
        ([CREATED], "duplicate_start"),
        ([ev("response.output_text.delta", item_id="nope", output_index=7, delta="x")], "unknown_block"),
        ([*message_item(0, "a"), ev("response.output_text.delta", item_id="msg_0", output_index=0, delta="x")],
         "closed_block"),
        ([*message_item(0, "a"), *message_item(0, "b")], "duplicate_block"),
        ([*call_item(0, "{}", done="{}")[:1],
          ev("response.output_text.delta", item_id="fc_0", output_index=0, delta="x")], "delta_type"),
        ([*message_item(0, "a")[:1], ev("response.function_call_arguments.delta", item_id="msg_0", output_index=0,
                                        delta="x")], "delta_type"),
        (message_item(0, "a")[:3], "open_block"),
    ],
    ids=["second-created", "unknown-item", "closed-item", "duplicate-index", "text-on-call", "args-on-message",
         "completed-with-open-item"],
)
def test_item_accounting_violations_are_protocol_errors(events: list[Any], stage: str) -> None:
    assert outcome_of(ROUTE, stream(*events)) == ("protocol_error", stage)


def test_events_before_response_created_are_protocol_error() -> None:
    assert outcome_of(ROUTE, sse(IN_PROGRESS, CREATED, completed())) == ("protocol_error", "order")


def test_event_name_disagreeing_with_type_is_protocol_error() -> None:
    data = sse(CREATED, ("response.completed", {"type": "response.output_text.delta", "delta": "x"}))
    assert outcome_of(ROUTE, data) == ("protocol_error", "event_name")


def test_unknown_event_types_are_tolerated_and_data_after_the_terminal_is_not() -> None:
    events = [ev("response.web_search_call.in_progress", output_index=0, item_id="ws_0"), *message_item(0, "x")]
    assert outcome_of(ROUTE, stream(*events)) == ("complete", None)
    assert outcome_of(ROUTE, stream() + sse(IN_PROGRESS)) == ("protocol_error", "after_terminal")


def test_eof_before_the_terminal_event_is_truncated() -> None:
    assert outcome_of(ROUTE, sse(CREATED, *message_item(0, "x"))) == ("truncated", "eof")


def test_call_ceiling_and_input_ceiling() -> None:
    data = stream(*call_item(0, '{"a":1}', done='{"a":1}'), *call_item(1, "{}", done="{}"))
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_calls=2, max_tool_input_chars=7)) == ("complete", None)
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_calls=1)) == ("buffer_limit", "tool_calls")
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_input_chars=6)) == ("buffer_limit", "tool_input")


def test_a_closed_item_must_hold_the_arguments_its_done_event_gave() -> None:
    """LM Studio closes a call with ``function_call_arguments.done`` and no delta; the closed item that
    follows is what the assistant message sends back, so it must hold the same arguments."""
    fc = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f", "status": "completed"}

    def closed_with(done: str, item: dict[str, Any]) -> bytes:
        return stream(ev("response.output_item.added", output_index=0,
                         item={**fc, "arguments": "", "status": "in_progress"}),
                      ev("response.function_call_arguments.done", item_id="fc_1", output_index=0, arguments=done),
                      ev("response.output_item.done", output_index=0, item=item))

    result, _ = check(ROUTE, closed_with('{"a": 1}', {**fc, "arguments": '{"a": 1}'}))
    assert [(c.state, c.arguments) for c in result.tool_calls] == [("valid", {"a": 1})]
    result, _ = check(ROUTE, closed_with('{"a": 1}', fc))  # an item without arguments leaves them
    assert [c.arguments for c in result.tool_calls] == [{"a": 1}]
    for other in ('{"a": 2}', '{"a":1}', '{"a": 1'):
        assert outcome_of(ROUTE, closed_with('{"a": 1}', {**fc, "arguments": other})) == (
            "payload_error", "tool_arguments_mismatch")
    refused = replay(ROUTE, [closed_with('{"a": 1}', {**fc, "arguments": '{"a": 2}'})]).result
    assert refused is not None and refused.assistant_message == [{**fc, "arguments": "", "status": "in_progress"}]
    assert outcome_of(ROUTE, closed_with('{"a": 1}', {**fc, "arguments": 5})) == ("protocol_error", "envelope")
