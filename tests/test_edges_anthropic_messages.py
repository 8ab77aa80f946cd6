"""Route ``anthropic-messages`` at its edges: malformed fields, deltas of the wrong kind, input sent
whole in ``content_block_start``, server tool input, and what a failing event leaves behind (every
chunking).

Found by mutation testing (``build_scripts/mutation.py``): each test fails if a check or a branch of
``webclient/_routes/anthropic_messages.py`` is changed. They run without the session's safety net
(``no_safety_net``), so a malformed field must be classified by an explicit check.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.route_fixtures import check, outcome_of, replay, sse
from webclient import Limits

ROUTE = "anthropic-messages"

pytestmark = pytest.mark.usefixtures("no_safety_net")

START = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                                              "model": "claude-x", "usage": {"input_tokens": 3}}}
STOP = {"type": "message_stop"}


def start(index: Any, block: Any) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: Any, value: Any = None, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": fields if value is None else value}


def stop(index: Any) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason: Any = "end_turn", **extra: Any) -> dict[str, Any]:
    return {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None}, **extra}


def message(*events: dict[str, Any], reason: Any = "end_turn", tail: bool = True,
            head: dict[str, Any] = START) -> bytes:
    end = [message_delta(reason), STOP] if tail else []
    return sse(*((e["type"], e) for e in [head, *events, *end]))


def text(index: int, *parts: str) -> list[dict[str, Any]]:
    return [start(index, {"type": "text", "text": ""}), *(delta(index, type="text_delta", text=p) for p in parts),
            stop(index)]


TOOL = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
THINKING = {"type": "thinking", "thinking": "", "signature": ""}
SERVER = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}


def blocks(result: Any) -> list[dict[str, Any]]:
    message = result.assistant_message
    assert message is not None
    content: list[dict[str, Any]] = message["content"]
    return content


# -- tool input sent whole in content_block_start ------------------------------------------------

def test_an_unknown_tool_whose_input_arrives_whole_in_the_start_is_tool_unknown() -> None:
    data = message(start(0, {**TOOL, "name": "rm_rf", "input": {"path": "/"}}), stop(0), reason="tool_use")
    result, _ = check(ROUTE, data, tools={"get_weather": {"type": "object"}})
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_unknown")
    assert [(c.name, c.state, c.ready) for c in result.tool_calls] == [("rm_rf", "invalid", False)]


def test_input_sent_whole_is_validated_against_the_registered_schema() -> None:
    schema = {"type": "object", "required": ["city"]}
    data = message(start(0, {**TOOL, "input": {"town": "Oslo"}}), stop(0), reason="tool_use")
    assert outcome_of(ROUTE, data, tools={"get_weather": schema}) == ("payload_error", "tool_schema")


@pytest.mark.parametrize("preset", [[1], "x", 5, True, ""], ids=["list", "string", "number", "true", "empty-string"])
def test_input_sent_whole_that_is_not_an_object_is_never_a_ready_call(preset: Any) -> None:
    data = message(start(0, {**TOOL, "input": preset}), stop(0), reason="tool_use")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_not_object")
    assert not result.tool_calls[0].ready


def test_a_tool_block_cut_before_its_stop_sends_back_the_input_that_arrived_whole() -> None:
    data = message(start(0, {**TOOL, "input": {"city": "Oslo"}}), reason="max_tokens")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("truncated", "stop_reason")
    assert blocks(result) == [{**TOOL, "input": {"city": "Oslo"}}]
    unknown, _ = check(ROUTE, message(start(0, {**TOOL, "input": {"city": "Oslo"}}), stop(0), reason="tool_use"),
                       tools={"other": {}})
    assert blocks(unknown) == [{**TOOL, "input": {"city": "Oslo"}}]  # the call is invalid: its input as sent


@pytest.mark.parametrize("field", ["id", "name"])
@pytest.mark.parametrize("wrong", [None, 5, {"x": 1}, ["toolu_1"]], ids=["missing", "number", "object", "list"])
def test_a_tool_use_block_without_a_string_id_and_name_opens_no_block_and_no_call(field: str, wrong: Any) -> None:
    block = {k: v for k, v in TOOL.items() if k != field} if wrong is None else {**TOOL, field: wrong}
    data = message(start(0, block), delta(0, type="input_json_delta", partial_json="{}"), stop(0), reason="tool_use")
    result, updates = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert (result.tool_calls, blocks(result), updates) == ((), [], [])


# -- malformed fields ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("events", "reason"),
    [
        ([], 5), ([], ["end_turn"]), ([], {"x": 1}),
        ([{"type": "message_delta", "delta": "end_turn"}], "end_turn"),
        ([{"type": "message_delta", "delta": ["x"]}], "end_turn"),
        ([{"type": "message_delta"}], "end_turn"),
    ],
    ids=["reason-number", "reason-list", "reason-object", "delta-string", "delta-list", "delta-missing"],
)
def test_a_malformed_message_delta_is_protocol_error_and_its_stop_reason_is_not_taken(
        events: list[dict[str, Any]], reason: Any) -> None:
    data = message(*text(0, "a"), *events, reason=reason)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.stop_reason) == ("protocol_error", "envelope", None)


@pytest.mark.parametrize("message_value", ["x", ["m"], None, 5])
def test_a_message_start_without_a_message_object_is_protocol_error(message_value: Any) -> None:
    data = sse(("message_start", {"type": "message_start", "message": message_value}), *text(0, "a"))
    assert outcome_of(ROUTE, data) == ("protocol_error", "envelope")


@pytest.mark.parametrize("content", ["Hi", {"type": "text"}, 0, True, [None], ["text"], [[]], [{"text": "Hi"}]],
                         ids=["string", "object", "number", "bool", "null-block", "string-block", "list-block",
                              "untyped-block"])
def test_a_message_that_starts_with_content_that_is_not_a_list_of_blocks_is_envelope(content: Any) -> None:
    head = {"type": "message_start", "message": {**START["message"], "content": content}}
    result, updates = check(ROUTE, message(*text(len(content) if isinstance(content, list) else 0, "a"), head=head))
    assert (result.outcome.value, result.stage, result.text, result.tool_calls) == ("protocol_error", "envelope",
                                                                                   "", ())
    assert updates == []  # nothing of the message was announced


def test_a_streamed_block_at_the_index_of_a_block_the_message_started_with_is_a_duplicate() -> None:
    head = {"type": "message_start", "message": {**START["message"], "content": [{"type": "text", "text": "Hi"}]}}
    result, _ = check(ROUTE, message(*text(0, "a"), head=head))
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "duplicate_block", "Hi")


def test_a_message_that_starts_without_content_or_with_null_content_commits() -> None:
    for content in (None, []):
        head = {"type": "message_start", "message": {**START["message"], "content": content}}
        assert outcome_of(ROUTE, message(*text(0, "a"), head=head)) == ("complete", None)
    bare = {"type": "message_start", "message": {"id": "msg_1", "model": "claude-x"}}
    assert outcome_of(ROUTE, message(*text(0, "a"), head=bare)) == ("complete", None)


@pytest.mark.parametrize(
    "event",
    [start("0", {"type": "text", "text": ""}), start(None, {"type": "text", "text": ""}),
     start(0.0, {"type": "text", "text": ""}), start(0, "text"), start(0, ["text"]), start(0, None),
     start(0, {"type": 5}), start(0, {"type": ["text"]}), start(0, {"text": ""}),
     start(0, {"type": "text", "text": 5}), start(0, {"type": "thinking", "thinking": ["x"], "signature": ""}),
     start(0, {"type": "thinking", "thinking": "", "signature": 5}), start(0, {"type": "text", "citations": "x"}),
     start(0, {"type": "text", "citations": [5]}), start(0, {"type": "redacted_thinking", "data": 5})],
    ids=["index-string", "index-missing", "index-float", "block-string", "block-list", "block-missing",
         "type-number", "type-list", "type-missing", "text-number", "thinking-list", "signature-number",
         "citations-string", "citation-number", "redacted-data-number"],
)
def test_a_malformed_block_start_is_protocol_error(event: dict[str, Any]) -> None:
    result, updates = check(ROUTE, message(event, stop(0)))
    assert (result.outcome.value, result.stage, updates) == ("protocol_error", "envelope", [])


@pytest.mark.parametrize(
    ("block", "bad"),
    [
        ({"type": "text", "text": ""}, delta(0, "x")), ({"type": "text", "text": ""}, delta(0, ["x"])),
        ({"type": "text", "text": ""}, {"type": "content_block_delta", "index": 0}),
        ({"type": "text", "text": ""}, delta(0, type="text_delta", text=5)),
        ({"type": "text", "text": ""}, delta(0, type="text_delta")),
        ({"type": "text", "text": ""}, delta(0, type=5)), ({"type": "text", "text": ""}, delta(0, type=["x"])),
        ({"type": "text", "text": ""}, delta(0, type=None, text="x")),
        (TOOL, delta(0, type="input_json_delta", partial_json=5)),
        (TOOL, delta(0, type="input_json_delta")),
        (SERVER, delta(0, type="input_json_delta", partial_json={"q": 1})),
        (THINKING, delta(0, type="thinking_delta", thinking=5)),
        (THINKING, delta(0, type="thinking_delta")),
        (THINKING, delta(0, type="signature_delta", signature=5)),
        ({"type": "text", "text": ""}, delta(0, type="citations_delta", citation="x")),
    ],
    ids=["delta-string", "delta-list", "delta-missing", "text-number", "text-missing", "type-number", "type-list",
         "type-null", "partial-json-number", "partial-json-missing", "server-partial-json-object",
         "thinking-number", "thinking-missing", "signature-number", "citation-string"],
)
def test_a_malformed_block_delta_is_protocol_error_and_takes_nothing(block: dict[str, Any],
                                                                    bad: dict[str, Any]) -> None:
    result, _ = check(ROUTE, message(start(0, block), bad, stop(0), *text(1, "late")))
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "envelope", "")
    assert result.telemetry.open_payload_accumulator_count == 1  # the block's stop was never taken


@pytest.mark.parametrize(
    ("block", "kind", "field"),
    [
        ({"type": "text", "text": ""}, "thinking_delta", "thinking"),
        (TOOL, "thinking_delta", "thinking"),
        (TOOL, "text_delta", "text"),
        (THINKING, "text_delta", "text"),
        ({"type": "text", "text": ""}, "signature_delta", "signature"),
        (THINKING, "input_json_delta", "partial_json"),
        (SERVER, "citations_delta", "citation"),
        ({"type": "web_search_tool_result", "tool_use_id": "s", "content": []}, "text_delta", "text"),
        ({"type": "text", "text": ""}, "compaction_delta", "content"),
    ],
    ids=["thinking-on-text", "thinking-on-tool", "text-on-tool", "text-on-thinking", "signature-on-text",
         "json-on-thinking", "citation-on-server-tool", "text-on-result", "compaction-on-text"],
)
def test_a_delta_the_block_cannot_take_is_protocol_error_delta_type(block: dict[str, Any], kind: str,
                                                                   field: str) -> None:
    bad = delta(0, type=kind, **{field: "x"})
    result, _ = check(ROUTE, message(start(0, block), bad, stop(0)))
    assert (result.outcome.value, result.stage, result.text, result.reasoning) == ("protocol_error", "delta_type",
                                                                                  "", "")


@pytest.mark.parametrize(
    ("event", "stage"),
    [(delta("0", type="text_delta", text="x"), "unknown_block"), (delta(7, type="text_delta", text="x"),
                                                                  "unknown_block"),
     (stop("0"), "unknown_block"), (stop(7), "unknown_block"), (stop(None), "unknown_block")],
    ids=["delta-index-string", "delta-index-unknown", "stop-index-string", "stop-index-unknown", "stop-index-missing"],
)
def test_events_for_a_block_that_was_never_opened_are_unknown_block(event: dict[str, Any], stage: str) -> None:
    result, _ = check(ROUTE, message(start(0, {"type": "text", "text": ""}), event, delta(0, type="text_delta",
                                                                                        text="late"), stop(0)))
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", stage, "")


# -- what a block start keeps ------------------------------------------------------------------------

def test_a_thinking_block_keeps_the_signature_and_text_sent_whole_in_its_start() -> None:
    events = [start(0, {"type": "thinking", "thinking": "plan", "signature": "sig0"}), stop(0), *text(1, "a")]
    result, updates = check(ROUTE, message(*events))
    assert (result.reasoning, result.text) == ("plan", "a")
    assert blocks(result)[0] == {"type": "thinking", "thinking": "plan", "signature": "sig0"}
    assert updates[0] == {"kind": "text_delta", "channel": "reasoning", "index": 0, "text": "plan"}


def test_a_text_block_keeps_the_citations_sent_whole_in_its_start() -> None:
    cite = {"type": "char_location", "cited_text": "x", "document_index": 0}
    result, _ = check(ROUTE, message(start(0, {"type": "text", "text": "a", "citations": [cite]}), stop(0)))
    assert result.citations == (cite,) and blocks(result) == [{"type": "text", "text": "a", "citations": [cite]}]


def test_signatures_sent_whole_count_against_the_signature_ceiling() -> None:
    data = message(start(0, {"type": "thinking", "thinking": "", "signature": "abcd"}), stop(0))
    assert outcome_of(ROUTE, data, limits=Limits(max_signature_chars=4)) == ("complete", None)
    result, _ = check(ROUTE, data, limits=Limits(max_signature_chars=3))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "signatures")
    assert blocks(result) == [{"type": "thinking", "thinking": "", "signature": ""}]


@pytest.mark.parametrize("limits", [Limits(max_blocks=1), Limits(max_item_chars=100)], ids=["blocks", "items"])
def test_a_block_past_a_ceiling_is_not_opened(limits: Limits) -> None:
    # (No usage in message_start: the usage object is charged to the item ceiling too.)
    head = {"type": "message_start", "message": {k: v for k, v in START["message"].items() if k != "usage"}}
    result, updates = check(ROUTE, message(*text(0, "a"), *text(1, "b"), head=head), limits=limits)
    assert result.outcome.value == "buffer_limit" and len(blocks(result)) == 1 and result.text == "a"
    assert [u["text"] for u in updates] == ["a"]


# -- server tool input ---------------------------------------------------------------------------------

def test_server_tool_input_has_the_tool_input_ceiling() -> None:
    data = message(start(0, SERVER), delta(0, type="input_json_delta", partial_json='{"q":'),
                   delta(0, type="input_json_delta", partial_json='"ab"}'), stop(0))
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_input_chars=10)) == ("complete", None)
    result, _ = check(ROUTE, data, limits=Limits(max_tool_input_chars=9))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "tool_input")
    assert blocks(result) == [SERVER]  # nothing parsed: the block never closed


def test_a_server_tool_input_fragment_refused_by_the_tool_input_ceiling_is_not_charged() -> None:
    # The ceiling refuses the second fragment: nothing of it is charged to the retained account, which stays
    # what the events before it left.
    body = [start(0, SERVER), delta(0, type="input_json_delta", partial_json='{"q":')]
    head = sse(*((e["type"], e) for e in [START, *body]))
    limits = Limits(max_tool_input_chars=9)
    data = message(*body, delta(0, type="input_json_delta", partial_json='"ab"}'), stop(0))
    session = replay(ROUTE, [data], limits=limits)
    assert session.result is not None and session.result.stage == "tool_input"
    assert session.retained_chars == replay(ROUTE, [head], limits=limits).retained_chars


@pytest.mark.parametrize(("fragment", "stage"), [('{"q": ', "tool_json"), ("[1]", "tool_not_object")])
def test_server_tool_input_that_is_not_a_json_object_is_payload_error(fragment: str, stage: str) -> None:
    data = message(start(0, SERVER), delta(0, type="input_json_delta", partial_json=fragment), stop(0))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("payload_error", stage)
    assert blocks(result) == [SERVER] and result.items == (SERVER,)  # the refused input is not the block's


def test_the_result_s_one_choice_has_index_zero_and_holds_every_block_s_text() -> None:
    data = message(*text(1, "b"), start(0, THINKING), delta(0, type="thinking_delta", thinking="t"), stop(0),
                   *text(2, "c"))
    result, _ = check(ROUTE, data)
    assert [(c.index, c.text, c.reasoning) for c in result.choices] == [(0, "bc", "t")]


def test_a_tool_block_stopped_twice_is_closed_block_and_its_call_stays_as_validated() -> None:
    data = message(start(0, TOOL), delta(0, type="input_json_delta", partial_json='{"city": "Oslo"}'), stop(0), stop(0))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "closed_block")
    assert [(c.state, c.arguments, c.ready) for c in result.tool_calls] == [("valid", {"city": "Oslo"}, False)]


def test_the_stop_reason_is_charged_once_by_its_length_though_two_events_carry_it() -> None:
    def retained(reason: str) -> int:
        session = replay(ROUTE, [message(*text(0, "a"), reason=reason)], accepted_stop_reasons={reason})
        assert session.result is not None and session.result.outcome.value == "complete"
        return session.retained_chars

    assert retained("r" * 101) - retained("r") == 100


def test_a_stop_reason_that_passes_the_retained_ceiling_is_not_taken_and_the_message_never_ends() -> None:
    body = [*text(0, "a")]
    head = sse(*((e["type"], e) for e in [START, *body]))
    session = replay(ROUTE, [head])
    data = message(*body)
    limits = Limits(max_retained_chars=session.retained_chars + len("end_turn") - 1)
    result, _ = check(ROUTE, data, limits=limits)
    assert (result.outcome.value, result.stage, result.stop_reason) == ("buffer_limit", "retained", None)
    assert result.telemetry.terminal_condition_seen is False


def test_a_signature_delta_past_the_retained_ceiling_leaves_the_block_its_earlier_signature() -> None:
    # The delta's signature replaces the start's, charged by the difference in length (10 here): one
    # character short, the block keeps the signature it had.
    body = [start(0, {**THINKING, "signature": "s" * 20}), delta(0, type="thinking_delta", thinking="plan")]
    head = sse(*((e["type"], e) for e in [START, *body]))
    data = message(*body, delta(0, type="signature_delta", signature="t" * 30), stop(0))
    ceiling = replay(ROUTE, [head]).retained_chars + 10
    result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=ceiling - 1))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "retained")
    assert blocks(result) == [{"type": "thinking", "thinking": "plan", "signature": "s" * 20}]
    result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=ceiling))
    assert blocks(result)[0]["signature"] == "t" * 30


# -- found by the full mutation run of 2026-12-05 ---------------------------------------------------

def test_a_ping_or_a_typed_error_before_message_start_is_not_an_order_error() -> None:
    assert outcome_of(ROUTE, sse(("ping", {"type": "ping"})) + message(*text(0, "a"))) == ("complete", None)
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    result, _ = check(ROUTE, sse(error))  # data-only: no SSE event name says "error"
    assert (result.outcome.value, result.stage) == ("upstream_error", "error_event")
    assert result.provider_error is not None and result.provider_error.type == "overloaded_error"


def test_a_second_message_start_takes_nothing_of_its_own() -> None:
    second = {**START, "message": {**START["message"], "id": "msg_2", "model": "claude-y",
                                   "usage": {"input_tokens": 3, "cache_read_input_tokens": 7}}}
    result, _ = check(ROUTE, message(*text(0, "a"), second))
    assert (result.outcome.value, result.stage) == ("protocol_error", "duplicate_start")
    assert (result.response_id, result.model, result.usage) == ("msg_1", "claude-x", {"input_tokens": 3})


def test_a_block_started_twice_keeps_the_first_and_an_unknown_block_is_not_in_the_message() -> None:
    result, _ = check(ROUTE, message(*text(0, "a"), start(0, {"type": "text", "text": "zz"}), stop(0)))
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "duplicate_block", "a")
    assert blocks(result) == [{"type": "text", "text": "a"}]
    result, _ = check(ROUTE, message(*text(0, "a"), start(1, {"type": "mystery", "text": "m"}), *text(2, "b")))
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "unknown_type", "a")
    assert blocks(result) == [{"type": "text", "text": "a"}]
