"""Route ``openai-responses`` at its edges: malformed terminal responses, call items with fields of
the wrong type, inputs sent whole in the item, parts of the wrong kind, and what a failing event
leaves behind (every chunking).

Found by mutation testing (``build_scripts/mutation.py``) and by probing each field with a value
of the wrong type: each test fails if a check or a branch of ``webclient/_routes/openai_responses.py``
is changed. They run without the session's safety net (``no_safety_net``), so a malformed field
must be classified by an explicit check.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.route_fixtures import check, outcome_of, replay, sse
from tests.test_route_openai_responses import (
    CREATED,
    IN_PROGRESS,
    ROUTE,
    call_item,
    completed,
    ev,
    message_item,
    stream,
)
from webclient import Limits

pytestmark = pytest.mark.usefixtures("no_safety_net")


def added(index: int = 0, **item: Any) -> tuple[str, dict[str, Any]]:
    return ev("response.output_item.added", output_index=index, item={"id": f"it_{index}", **item})


def done(index: int = 0, **item: Any) -> tuple[str, dict[str, Any]]:
    return ev("response.output_item.done", output_index=index, item={"id": f"it_{index}", **item})


def function(**fields: Any) -> dict[str, Any]:
    return {"type": "function_call", "call_id": "call_1", "name": "weather", **fields}


def calls(result: Any) -> list[tuple[Any, ...]]:
    return [(c.id, c.name, c.state, c.ready, c.arguments) for c in result.tool_calls]


# -- terminal responses --------------------------------------------------------------------------

@pytest.mark.parametrize("status", [5, True, [], {"type": "completed"}], ids=["int", "bool", "list", "object"])
def test_a_completed_status_that_is_not_a_string_is_envelope_and_never_commits(status: Any) -> None:
    result, _ = check(ROUTE, stream(*message_item(0, "a"), terminal=completed(status=status)))
    assert (result.outcome.value, result.stage, result.stop_reason) == ("protocol_error", "envelope", None)
    assert result.usage is None  # nothing of the failing event was taken


def test_a_completed_status_that_is_absent_or_null_means_completed() -> None:
    for terminal in (ev("response.completed", response={"id": "resp_1"}), completed(status=None),
                     ev("response.completed")):
        result, _ = check(ROUTE, stream(*message_item(0, "a"), terminal=terminal))
        assert (result.outcome.value, result.stop_reason, result.text) == ("complete", "completed", "a")


def test_an_empty_completed_status_is_an_unknown_stop_reason_and_never_commits() -> None:
    result, _ = check(ROUTE, stream(*message_item(0, "a"), terminal=completed(status="")))
    assert not result.committed and result.outcome.value != "complete"


@pytest.mark.parametrize("kind", ["response.completed", "response.incomplete", "response.created"])
@pytest.mark.parametrize("response", [5, "resp_1", [{"id": "resp_1"}]], ids=["int", "string", "list"])
def test_a_response_that_is_not_an_object_is_envelope(kind: str, response: Any) -> None:
    event = ev(kind, response=response)
    data = sse(event, *message_item(0, "a"), completed()) if kind == "response.created" else stream(
        *message_item(0, "a"), terminal=event)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.stop_reason) == ("protocol_error", "envelope", None)


@pytest.mark.parametrize("details", [{"reason": 5}, {"reason": ["max_output_tokens"]}, "max_output_tokens", 3],
                         ids=["int-reason", "list-reason", "string-details", "int-details"])
def test_incomplete_details_or_a_reason_of_the_wrong_type_are_envelope(details: Any) -> None:
    terminal = ev("response.incomplete", response={"incomplete_details": details, "usage": {"total_tokens": 1}})
    result, _ = check(ROUTE, stream(*message_item(0, "a"), terminal=terminal))
    assert (result.outcome.value, result.stage, result.stop_reason) == ("protocol_error", "envelope", None)
    assert result.usage is None


def test_an_incomplete_response_keeps_its_usage_and_an_empty_reason_means_incomplete() -> None:
    terminal = ev("response.incomplete", response={"incomplete_details": {"reason": ""}, "usage": {"total_tokens": 4}})
    result, _ = check(ROUTE, stream(*message_item(0, "a"), terminal=terminal))
    assert (result.outcome.value, result.stage, result.stop_reason) == ("truncated", "stop_reason", "incomplete")
    assert result.usage == {"total_tokens": 4}


def test_terminal_usage_past_the_item_ceiling_is_buffer_limit_and_stops_nothing_else_from_committing() -> None:
    usage = {"total_tokens": 9, "detail": "x" * 300}
    for terminal in (completed(usage=usage),
                     ev("response.incomplete", response={"incomplete_details": {"reason": "max_output_tokens"},
                                                         "usage": usage})):
        result, _ = check(ROUTE, stream(*message_item(0, "a"), terminal=terminal), limits=Limits(max_item_chars=200))
        assert (result.outcome.value, result.stage, result.stop_reason, result.usage) == (
            "buffer_limit", "items", None, None)


# -- call items ------------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["call_id", "name", "arguments"])
@pytest.mark.parametrize("wrong", [5, ["x"], {"x": 1}, True], ids=["int", "list", "object", "bool"])
def test_a_call_item_whose_id_name_or_arguments_are_not_strings_opens_no_call(field: str, wrong: Any) -> None:
    data = stream(added(**function(**{field: wrong})), done(**function(arguments="{}")))
    result, updates = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert result.tool_calls == () and updates == []


def test_a_call_s_input_that_is_not_a_string_in_its_closed_item_is_envelope_and_never_ready() -> None:
    data = stream(added(**function(arguments="")), ev("response.function_call_arguments.delta", output_index=0,
                                                     delta="{}"), done(**function(arguments={"a": 1})))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert [(c.state, c.ready) for c in result.tool_calls] == [("streaming", False)]


def test_arguments_sent_whole_in_the_added_item_are_the_input_and_must_match_the_closed_item() -> None:
    good = stream(added(**function(arguments='{"a":1}')), done(**function(arguments='{"a":1}')))
    result, updates = check(ROUTE, good)
    assert calls(result) == [("call_1", "weather", "valid", True, {"a": 1})]
    assert [u["fragment"] for u in updates if u["kind"] == "tool_input_delta"] == ['{"a":1}']
    bad = stream(added(**function(arguments='{"a":1}')), done(**function(arguments='{"a":2}')))
    result, _ = check(ROUTE, bad)
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_arguments_mismatch")
    assert [(c.state, c.ready) for c in result.tool_calls] == [("invalid", False)]


def test_a_call_without_call_id_is_named_by_its_item_id() -> None:
    item = {"type": "function_call", "name": "weather", "arguments": "{}"}
    result, _ = check(ROUTE, stream(added(**item), done(**item)))
    assert calls(result) == [("it_0", "weather", "valid", True, {})]


def test_a_whole_item_call_is_named_by_its_kind_whatever_its_name_field_says() -> None:
    item = {"type": "computer_call", "call_id": "c1", "name": 5}
    result, _ = check(ROUTE, stream(added(**item), done(**item, action={"type": "click"})), tools={"computer": {}})
    assert calls(result) == [("c1", "computer", "valid", True, {"action": {"type": "click"}})]


def test_an_empty_arguments_delta_adds_nothing_and_announces_nothing() -> None:
    data = stream(added(**function(arguments="")), ev("response.function_call_arguments.delta", output_index=0,
                                                     delta=""), done(**function(arguments="{}")))
    result, updates = check(ROUTE, data)
    assert calls(result) == [("call_1", "weather", "valid", True, {})]
    assert [u["fragment"] for u in updates if u["kind"] == "tool_input_delta"] == ["{}"]


def test_an_input_event_of_another_call_kind_is_delta_type_and_closes_nothing() -> None:
    data = stream(added(**function(arguments="")),
                  ev("response.custom_tool_call_input.done", output_index=0, input="x"), done(**function(arguments="")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "delta_type")
    assert [c.state for c in result.tool_calls] == ["streaming"]


def test_an_arguments_done_that_is_not_a_string_is_envelope_and_closes_nothing() -> None:
    data = stream(*call_item(0, "{}")[:2], ev("response.function_call_arguments.done", output_index=0, arguments=5))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert [c.state for c in result.tool_calls] == ["streaming"]


def test_input_events_for_a_closed_call_are_closed_block() -> None:
    head = call_item(0, "{}", done="{}")[:3]
    for late in (ev("response.function_call_arguments.delta", item_id="fc_0", output_index=0, delta="x"),
                 ev("response.function_call_arguments.done", item_id="fc_0", output_index=0, arguments="{}")):
        assert outcome_of(ROUTE, stream(*head, late)) == ("protocol_error", "closed_block")


def test_command_events_of_a_hosted_shell_call_carry_nothing_and_the_call_is_an_item() -> None:
    item = {"type": "shell_call", "environment": {"type": "container_reference"}}
    data = stream(added(**item), ev("response.shell_call_command.delta", output_index=0, delta="ls"),
                  done(**item, action={"commands": ["ls"]}))
    result, updates = check(ROUTE, data)
    assert (result.outcome.value, result.tool_calls, updates) == ("complete", (), [])
    assert [i["type"] for i in result.items] == ["shell_call"]


# -- items and parts -------------------------------------------------------------------------------

def test_a_summary_part_on_a_reasoning_item_is_fine_and_a_content_part_type_there_is_unknown() -> None:
    summary = ev("response.reasoning_summary_part.added", output_index=0, part={"type": "summary_text"})
    data = stream(added(type="reasoning"), summary, done(type="reasoning"))
    assert outcome_of(ROUTE, data) == ("complete", None)
    wrong = ev("response.reasoning_summary_part.added", output_index=0, part={"type": "output_text"})
    assert outcome_of(ROUTE, stream(added(type="reasoning"), wrong, done(type="reasoning"))) == (
        "protocol_error", "unknown_type")
    kept = stream(added(type="reasoning"), wrong, done(type="reasoning"))
    assert outcome_of(ROUTE, kept, keep_unknown_items=True) == ("complete", None)


@pytest.mark.parametrize("part", [5, {"type": 5}, {"text": ""}], ids=["not-object", "int-type", "no-type"])
def test_a_part_without_a_string_type_is_envelope(part: Any) -> None:
    data = stream(added(type="message"), ev("response.content_part.added", output_index=0, part=part))
    assert outcome_of(ROUTE, data) == ("protocol_error", "envelope")


def test_a_closed_message_without_deltas_gives_its_text_and_refusal() -> None:
    content = [{"type": "output_text", "text": "a"}, {"type": "refusal", "refusal": "no"},
               {"type": "output_text", "text": "b"}]
    result, updates = check(ROUTE, stream(added(type="message"), done(type="message", content=content)))
    assert (result.outcome.value, result.text, result.refusal) == ("complete", "ab", "no")
    assert [(u["channel"], u["text"]) for u in updates] == [("text", "ab"), ("refusal", "no")]


def test_a_closed_message_part_of_a_type_the_route_does_not_know_fails_closed_unless_kept() -> None:
    # It would be sent back in the assistant message: an unknown part there is an unknown part.
    content = [{"type": "output_text", "text": "a"}, {"type": "output_audio", "data": "UklGR"}]
    data = stream(added(type="message"), done(type="message", content=content))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "unknown_type", "")
    assert result.telemetry.open_payload_accumulator_count == 1  # the closing item was not taken
    kept, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (kept.outcome.value, kept.text, kept.assistant_message) == ("complete", "a", [data_item(content)])


def data_item(content: list[Any]) -> dict[str, Any]:
    return {"id": "it_0", "type": "message", "content": content}


@pytest.mark.parametrize(("field", "parts"), [
    ("content", "junk"), ("content", {"type": "output_text"}), ("content", 5), ("content", ["junk"]),
    ("content", [{"text": "a"}]), ("content", [{"type": 5}]),
], ids=["string-list", "object-list", "number-list", "string-part", "typeless-part", "int-type"])
def test_a_closed_message_whose_parts_are_not_typed_objects_is_envelope_and_not_taken(field: str, parts: Any) -> None:
    data = stream(added(type="message"), done(type="message", **{field: parts}))
    for keep in (False, True):  # (kept unknown parts or not: these are not parts)
        result, _ = check(ROUTE, data, keep_unknown_items=keep)
        assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
        assert result.telemetry.open_payload_accumulator_count == 1  # the closing item was not taken
        assert result.assistant_message == [{"id": "it_0", "type": "message"}]


@pytest.mark.parametrize(("field", "part", "expected"), [
    ("summary", {"type": "summary_text", "text": "s"}, ("complete", None)),
    ("content", {"type": "reasoning_text", "text": "r"}, ("complete", None)),
    ("summary", {"type": "reasoning_text", "text": "s"}, ("protocol_error", "unknown_type")),
    ("content", {"type": "summary_text", "text": "r"}, ("protocol_error", "unknown_type")),
    ("content", {"type": "reasoning_image", "data": "x"}, ("protocol_error", "unknown_type")),
    ("summary", [{"type": "summary_text"}], ("protocol_error", "envelope")),
], ids=["summary", "content", "summary-of-content-type", "content-of-summary-type", "unknown", "nested-list"])
def test_a_closed_reasoning_item_holds_summary_and_reasoning_parts_only(field: str, part: Any,
                                                                        expected: tuple[str, Any]) -> None:
    data = stream(added(type="reasoning", summary=[]), done(type="reasoning", **{field: [part]}))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == expected
    # a refused closing item is not taken (the item stays open, as added)
    assert result.telemetry.open_payload_accumulator_count == (0 if expected[0] == "complete" else 1)


@pytest.mark.parametrize("field", ["summary", "content"])
def test_a_closed_reasoning_item_whose_part_list_is_not_a_list_is_envelope_and_not_taken(field: str) -> None:
    data = stream(added(type="reasoning", summary=[]), done(type="reasoning", **{field: {"type": "summary_text"}}))
    result, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert result.telemetry.open_payload_accumulator_count == 1
    assert result.assistant_message == [{"id": "it_0", "type": "reasoning", "summary": []}]


@pytest.mark.parametrize(("opened", "closed"), [
    ({"type": "message"}, {"type": "function_call", "call_id": "c", "name": "rm", "arguments": "{}"}),
    (function(), {"type": "message", "content": []}),
    ({"type": "web_search_call"}, function(arguments="{}")),
    ({"type": "reasoning"}, {"type": "message"}),
], ids=["message-to-call", "call-to-message", "hosted-to-call", "reasoning-to-message"])
def test_a_closed_item_of_another_type_than_the_added_one_is_item_mismatch(opened: dict[str, Any],
                                                                          closed: dict[str, Any]) -> None:
    # The client acts on the added item (runs its call, or none) and sends the closed one back.
    result, _ = check(ROUTE, stream(added(**opened), done(**closed)), tools={"weather": {}, "rm": {}})
    assert (result.outcome.value, result.stage) == ("protocol_error", "item_mismatch")
    assert all(not c.ready for c in result.tool_calls)
    assert result.telemetry.open_payload_accumulator_count >= 1  # the closing item was not taken


@pytest.mark.parametrize("closed", [{"type": 5}, {}, {"type": None}, {"type": "message", "id": 5},
                                    {"type": "message", "status": 1}], ids=["int", "absent", "null", "int-id",
                                                                            "int-status"])
def test_a_closed_item_without_a_string_type_or_with_a_non_string_id_or_status_is_envelope(
        closed: dict[str, Any]) -> None:
    data = stream(added(type="message"), ev("response.output_item.done", output_index=0, item=closed))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert result.telemetry.open_payload_accumulator_count == 1  # the closing item was not taken
    assert result.assistant_message == [{"id": "it_0", "type": "message"}]


def test_a_closed_item_with_another_id_is_item_mismatch_and_one_the_added_item_lacked_is_taken() -> None:
    other = ev("response.output_item.done", output_index=0, item={"id": "it_9", "type": "message", "content": []})
    assert outcome_of(ROUTE, stream(added(type="message"), other)) == ("protocol_error", "item_mismatch")
    anonymous = ev("response.output_item.added", output_index=0, item={"type": "message"})
    result, _ = check(ROUTE, stream(anonymous, other))
    assert (result.outcome.value, result.assistant_message) == ("complete", [other[1]["item"]])
    unnamed = ev("response.output_item.done", output_index=0, item={"type": "message", "content": []})
    assert outcome_of(ROUTE, stream(added(type="message"), unnamed)) == ("complete", None)


@pytest.mark.parametrize("status", ["incomplete", "failed", "cancelled", ""])
@pytest.mark.parametrize("opened", [{"type": "message"}, {"type": "reasoning"}, function(arguments="{}")],
                         ids=["message", "reasoning", "call"])
def test_an_own_item_closed_as_cut_never_commits_even_when_the_response_says_completed(
        opened: dict[str, Any], status: str) -> None:
    data = stream(added(**opened), done(**opened, status=status))
    result, _ = check(ROUTE, data, tools={"weather": {}})
    assert (result.outcome.value, result.stage, result.stop_reason) == ("truncated", "incomplete_item", "completed")
    assert not result.committed and all(not c.ready for c in result.tool_calls)
    # under response.incomplete it is the stop reason that decides, as for any cut answer
    cut = ev("response.incomplete", response={"incomplete_details": {"reason": "max_output_tokens"}})
    assert outcome_of(ROUTE, stream(added(**opened), done(**opened, status=status), terminal=cut)) == (
        "truncated", "stop_reason")


@pytest.mark.parametrize("status", ["completed", "in_progress", None])
def test_an_own_item_closed_completed_in_progress_or_without_status_commits(status: Any) -> None:
    result, _ = check(ROUTE, stream(added(**function()), done(**function(arguments="{}"), status=status)),
                      tools={"weather": {}})
    assert (result.outcome.value, [c.ready for c in result.tool_calls]) == ("complete", [True])


@pytest.mark.parametrize("status", ["incomplete", "failed", "searching"])
def test_a_hosted_item_closed_with_any_status_is_kept_and_commits(status: str) -> None:
    # A web search that failed is the server's business: the answer after it can still be whole.
    item = {"type": "web_search_call", "action": {"type": "search", "query": "q"}}
    result, _ = check(ROUTE, stream(added(**item), done(**item, status=status)))
    assert (result.outcome.value, result.items) == ("complete", ({"id": "it_0", **item, "status": status},))


@pytest.mark.parametrize("content", [[{"type": "output_text", "text": 5}], [{"type": "refusal", "refusal": None}]],
                         ids=["text", "refusal"])
def test_a_closed_message_part_whose_text_is_not_a_string_is_envelope(content: Any) -> None:
    data = stream(added(type="message"), done(type="message", content=content))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert result.telemetry.open_payload_accumulator_count == 1  # the closing item was not taken


def test_an_open_call_counts_with_its_item_in_the_open_accumulators() -> None:
    added_and_delta = call_item(0, '{"a":1}')[:2]
    args_done = ev("response.function_call_arguments.done", item_id="fc_0", output_index=0, arguments='{"a":1}')
    for events, open_count in ((added_and_delta, 2), ([*added_and_delta, args_done], 1)):
        result, _ = check(ROUTE, sse(CREATED, *events))
        assert (result.outcome.value, result.stage) == ("truncated", "eof")
        assert result.telemetry.open_payload_accumulator_count == open_count  # the item, and its call while open


def test_a_closed_message_that_disagrees_with_its_deltas_is_item_mismatch_and_stays_open() -> None:
    text_then_refusal = [{"type": "output_text", "text": "no"}, {"type": "refusal", "refusal": "r"}]
    for channel, content in (("refusal", [{"type": "refusal", "refusal": "no"}]), ("output_text", text_then_refusal)):
        data = stream(added(type="message"), ev(f"response.{channel}.delta", output_index=0, delta="x"),
                      done(type="message", content=content))
        result, _ = check(ROUTE, data)
        assert (result.outcome.value, result.stage, result.refusal) == (
            "protocol_error", "item_mismatch", "x" if channel == "refusal" else "")
        assert result.telemetry.open_payload_accumulator_count == 1  # the closing item was not taken
        assert result.choices[0].assistant_message == [{"id": "it_0", "type": "message"}]


def test_a_closed_message_whose_content_is_not_a_list_is_envelope_and_one_without_content_keeps_the_deltas() -> None:
    # (a string would be sent back as the message's text while the deltas showed another)
    delta = ev("response.output_text.delta", output_index=0, delta="x")
    for content in ("other", "x", {"type": "output_text", "text": "x"}):
        result, _ = check(ROUTE, stream(added(type="message"), delta, done(type="message", content=content)))
        assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "envelope", "x")
    for closed in (done(type="message"), done(type="message", content=None)):
        result, _ = check(ROUTE, stream(added(type="message"), delta, closed))
        assert (result.outcome.value, result.text) == ("complete", "x")


@pytest.mark.parametrize("delta", [5, None, ["x"]], ids=["int", "null", "list"])
def test_a_text_delta_that_is_not_a_string_is_envelope_and_takes_nothing(delta: Any) -> None:
    data = stream(added(type="message"), ev("response.output_text.delta", output_index=0, delta="a"),
                  ev("response.output_text.delta", output_index=0, delta=delta))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "envelope", "a")


def test_an_annotation_for_an_unknown_item_is_unknown_block_and_is_not_cited() -> None:
    data = stream(*message_item(0, "a"), ev("response.output_text.annotation.added", output_index=7,
                                            annotation={"type": "url_citation"}))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.citations) == ("protocol_error", "unknown_block", ())


def test_an_item_closed_with_something_else_than_an_object_stays_open() -> None:
    data = stream(added(type="message"), ev("response.output_item.done", output_index=0, item=[]))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert result.telemetry.open_payload_accumulator_count == 1


def test_the_assistant_message_holds_the_added_item_until_it_closes() -> None:
    result, _ = check(ROUTE, stream(added(type="message", status="in_progress")))
    assert result.outcome.value == "protocol_error"
    assert result.choices[0].assistant_message == [{"id": "it_0", "type": "message", "status": "in_progress"}]


def test_a_second_response_created_is_duplicate_start_and_takes_no_identity() -> None:
    again = ev("response.created", response={"id": "resp_2", "model": "m-2"})
    result, _ = check(ROUTE, stream(again))
    assert (result.outcome.value, result.stage, result.response_id) == ("protocol_error", "duplicate_start", "resp_1")


def test_an_item_id_already_used_by_another_index_is_duplicate_block() -> None:
    data = stream(added(0, type="message"), ev("response.output_item.added", output_index=1,
                                              item={"id": "it_0", "type": "message"}))
    assert outcome_of(ROUTE, data) == ("protocol_error", "duplicate_block")


def test_created_keeps_the_identity_and_an_empty_stream_after_it_is_complete() -> None:
    created = ev("response.created", response={"id": "resp_9", "model": "gpt-x"})
    result, _ = check(ROUTE, sse(created, completed(id="resp_9")))
    assert (result.outcome.value, result.response_id, result.model) == ("complete", "resp_9", "gpt-x")


@pytest.mark.parametrize("item", [{"type": 5}, {"type": None}, {"type": ["message"]}, {"type": "message", "id": 5}],
                         ids=["type-number", "type-missing", "type-list", "id-number"])
def test_an_item_without_a_string_type_or_with_a_non_string_id_is_envelope_even_when_unknown_items_are_kept(
        item: dict[str, Any]) -> None:
    data = stream(ev("response.output_item.added", output_index=0, item=item))
    assert outcome_of(ROUTE, data, keep_unknown_items=True) == ("protocol_error", "envelope")


def test_a_refusal_content_part_belongs_to_a_message() -> None:
    part = ev("response.content_part.added", output_index=0, content_index=0, part={"type": "refusal", "refusal": ""})
    data = stream(added(type="message"), part, ev("response.refusal.delta", output_index=0, delta="no"),
                  done(type="message", content=[{"type": "refusal", "refusal": "no"}]))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.refusal) == ("complete", "no")


def test_a_closed_message_text_past_the_ceiling_is_buffer_limit_and_takes_nothing_after_it() -> None:
    content = [{"type": "output_text", "text": "x" * 10}, {"type": "refusal", "refusal": "no"}]
    result, _ = check(ROUTE, stream(added(type="message"), done(type="message", content=content)),
                      limits=Limits(max_text_chars=5))
    assert (result.outcome.value, result.stage, result.text, result.refusal) == ("buffer_limit", "text", "", "")
    assert result.telemetry.open_payload_accumulator_count == 1  # the item never closed
    assert result.choices[0].assistant_message == [{"id": "it_0", "type": "message"}]


@pytest.mark.parametrize("kind", ["response.function_call_arguments.delta", "response.function_call_arguments.done",
                                  "response.custom_tool_call_input.delta", "response.shell_call_command.delta"])
def test_an_input_event_for_an_item_never_added_is_unknown_block(kind: str) -> None:
    data = stream(*call_item(0, "{}", done="{}"), ev(kind, output_index=7, item_id="nope", delta="x", arguments="{}"))
    assert outcome_of(ROUTE, data) == ("protocol_error", "unknown_block")


#: The hosted tools' progress events (openai-python 3.57.0 ``response_stream_event.py``), written out here so that
#: a name dropped from the route's list is noticed.
HOSTED_PROGRESS = (
    "response.web_search_call.in_progress", "response.web_search_call.searching",
    "response.web_search_call.completed", "response.file_search_call.in_progress",
    "response.file_search_call.searching", "response.file_search_call.completed",
    "response.code_interpreter_call.in_progress", "response.code_interpreter_call.interpreting",
    "response.code_interpreter_call.completed", "response.code_interpreter_call_code.delta",
    "response.code_interpreter_call_code.done", "response.image_generation_call.in_progress",
    "response.image_generation_call.generating", "response.image_generation_call.partial_image",
    "response.image_generation_call.completed", "response.mcp_call.in_progress", "response.mcp_call.completed",
    "response.mcp_call.failed", "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done",
    "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed", "response.mcp_list_tools.failed",
    "response.shell_call_output_content.delta", "response.shell_call_output_content.done",
    "response.compaction.compacting",
)


@pytest.mark.parametrize("kind", HOSTED_PROGRESS)
def test_a_hosted_progress_event_is_taken_as_progress_only_after_the_response_was_created(kind: str) -> None:
    progress = ev(kind, output_index=0, item_id="x", delta="d")
    assert outcome_of(ROUTE, stream(progress, *message_item(0, "a"))) == ("complete", None)
    assert outcome_of(ROUTE, sse(progress) + stream()) == ("protocol_error", "order")


def test_deltas_still_pending_when_their_message_closes_are_announced_whole_under_every_chunking() -> None:
    deltas = [ev("response.output_text.delta", output_index=0, delta=d) for d in ("a", "b", "c")]
    closed = done(type="message", content=[{"type": "output_text", "text": "abc"}])
    data = stream(added(type="message"), *deltas, closed)
    result, updates = check(ROUTE, data)
    assert (result.outcome.value, result.text) == ("complete", "abc")
    assert updates == [{"kind": "text_delta", "channel": "text", "index": 0, "text": "abc"}]


# -- found by the sampled mutation runs of 2026-12-03 ------------------------------------------------

def test_a_call_item_closed_past_the_item_ceiling_is_neither_closed_nor_validated() -> None:
    first = added(**function(arguments=""))
    args = ev("response.function_call_arguments.delta", output_index=0, delta='{"a": 1}')
    last = done(**function(arguments='{"a": 1}', note="x" * 400))
    result, _ = check(ROUTE, stream(first, args, last), limits=Limits(max_item_chars=300))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "items")
    assert calls(result) == [("call_1", "weather", "streaming", False, None)]


def test_the_result_s_one_choice_has_index_zero() -> None:
    result, _ = check(ROUTE, stream(*message_item(0, "a")))
    assert [(c.index, c.text) for c in result.choices] == [(0, "a")]


#: Events that only name their item (the route checks the item and takes nothing else), written out here so
#: that a name dropped from the route's table is noticed.
ITEM_EVENTS = (
    "response.shell_call_command.added", "response.shell_call_command.done", "response.content_part.done",
    "response.output_text.done", "response.refusal.done", "response.reasoning_text.done",
    "response.reasoning_summary_part.done", "response.reasoning_summary_text.done",
    "response.content_part.added", "response.reasoning_summary_part.added", "response.output_text.annotation.added",
)


@pytest.mark.parametrize("kind", ITEM_EVENTS)
def test_an_event_naming_an_item_never_added_or_already_closed_is_refused(kind: str) -> None:
    event = ev(kind, output_index=7, item_id="nope", part={"type": "output_text", "text": ""})
    assert outcome_of(ROUTE, stream(*message_item(0, "a"), event)) == ("protocol_error", "unknown_block")
    event = ev(kind, output_index=0, item_id="it_0", part={"type": "output_text", "text": ""})
    assert outcome_of(ROUTE, stream(*message_item(0, "a"), event)) == ("protocol_error", "closed_block")


@pytest.mark.parametrize("limits", [Limits(max_blocks=1), Limits(max_item_chars=400)], ids=["blocks", "items"])
def test_an_item_past_a_ceiling_is_not_added_and_opens_no_call(limits: Limits) -> None:
    data = stream(*call_item(0, "{}", done="{}"), *call_item(1, "{}", done="{}"))
    result, _ = check(ROUTE, data, limits=limits)
    assert (result.outcome.value, result.stage) == ("buffer_limit", "blocks" if limits.max_blocks == 1 else "items")
    assert [c.id for c in result.tool_calls] == ["call_0"]


# -- found by the sampled mutation run of 2026-12-04 ------------------------------------------------

@pytest.mark.parametrize(("index", "item"), [("0", {"id": "it_0", "type": "message", "content": []}),
                                             (0, ["it_0", "message"])], ids=["index-string", "item-list"])
def test_an_added_item_with_a_malformed_index_or_body_is_envelope(index: Any, item: Any) -> None:
    data = stream(ev("response.output_item.added", output_index=index, item=item), *message_item(1, "a"))
    assert outcome_of(ROUTE, data) == ("protocol_error", "envelope")


def test_a_second_item_added_at_the_same_index_is_refused_and_replaces_nothing() -> None:
    data = stream(added(0, **function()), added(0, **function(call_id="call_2", name="other")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "duplicate_block")
    assert calls(result) == [("call_1", "weather", "streaming", False, None)]


def test_a_delta_for_a_closed_message_is_refused_and_not_appended() -> None:
    late = ev("response.output_text.delta", item_id="msg_0", output_index=0, content_index=0, delta="b")
    result, _ = check(ROUTE, stream(*message_item(0, "a"), late))
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "closed_block", "a")


def test_an_item_done_for_an_item_never_added_is_unknown_block_even_with_a_well_formed_item() -> None:
    orphan = ev("response.output_item.done", output_index=7, item={"id": "it_7", "type": "message"})
    assert outcome_of(ROUTE, stream(*message_item(0, "a"), orphan)) == ("protocol_error", "unknown_block")


_CLICK = {"type": "computer_call", "call_id": "c1", "status": "in_progress", "action": {"type": "click", "x": 1}}


@pytest.mark.parametrize("events", [
    call_item(0, '{"a": 1e999}'),
    [added(0, **_CLICK), done(0, **{**_CLICK, "status": "completed", "action": {"type": "click", "x": float("inf")}})],
], ids=["function-arguments", "computer-action"])
def test_a_call_item_whose_final_input_fails_stays_open_as_it_was_added(events: list[Any]) -> None:
    # The item.done event closes the call with the item's own final input (no arguments.done
    # came), which holds a non-finite number: nothing of the failing event is taken, so the item
    # stays open, in its added form.
    result, _ = check(ROUTE, stream(*events))
    assert (result.outcome.value, result.stage) == ("payload_error", "non_finite_number")
    assert result.telemetry.open_payload_accumulator_count == 1
    assert result.assistant_message is not None
    assert [i["status"] for i in result.assistant_message] == ["in_progress"]


@pytest.mark.parametrize("delta", [5, None, ["x"]], ids=["int", "null", "list"])
def test_an_argument_delta_that_is_not_a_string_is_envelope_and_never_commits(delta: Any) -> None:
    events = call_item(0, "{}", done="{}")
    events.insert(1, ev("response.function_call_arguments.delta", item_id="fc_0", output_index=0, delta=delta))
    result, _ = check(ROUTE, stream(*events))
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert not result.committed


def test_a_text_delta_whose_output_index_is_not_a_number_finds_its_item_by_id() -> None:
    events = message_item(0, "a")
    events.insert(3, ev("response.output_text.delta", item_id="msg_0", output_index=[0], content_index=0, delta="b"))
    events[-3] = ev("response.output_text.done", item_id="msg_0", output_index=0, content_index=0, text="ab")
    result, _ = check(ROUTE, stream(*events))
    assert (result.outcome.value, result.text) == ("complete", "ab")


# -- a call's name at its item's close (found by a fuzz of field values, 2026-12-05) ----------------

def test_a_call_whose_item_names_another_tool_when_it_closes_is_item_mismatch_and_never_ready() -> None:
    # The client would run "weather" while the assistant message it sends back (the items as
    # output_item.done sent them) names "delete_files".
    data = stream(added(0, **function(arguments="")), done(0, **function(name="delete_files", arguments="{}")))
    result, updates = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "item_mismatch")
    assert_call_left_as_added(result, updates)


def assert_call_left_as_added(result: Any, updates: list[dict[str, Any]]) -> None:
    """Nothing of a closing item refused for its call's name or id is taken: the one call is neither closed nor
    validated (nor ready), and no update follows the one that announced it."""
    assert [(c.ready, c.state, c.arguments) for c in result.tool_calls] == [(False, "streaming", None)]
    assert [u["kind"] for u in updates] == ["tool_call"]


def test_a_call_opened_without_a_name_takes_its_items_name_at_close_and_one_never_named_is_never_ready() -> None:
    named_late = stream(added(0, **function(name=None, arguments="")), done(0, **function(arguments='{"a": 1}')))
    result, _ = check(ROUTE, named_late)
    assert (result.outcome.value, calls(result)) == ("complete", [("call_1", "weather", "valid", True, {"a": 1})])
    for late in (None, ""):
        never = stream(added(0, **function(name=late, arguments="")), done(0, **function(name=late, arguments="{}")))
        result, _ = check(ROUTE, never)
        assert (result.outcome.value, result.stage) == ("payload_error", "tool_unknown")
        assert [(c.state, c.ready, c.problems) for c in result.tool_calls] == [
            ("invalid", False, ("tool call has no name",))]


@pytest.mark.parametrize("name", [5, ["weather"], {"n": "weather"}], ids=["int", "list", "object"])
@pytest.mark.parametrize("added_name", ["weather", None], ids=["named", "unnamed"])
def test_a_closed_items_name_that_is_not_a_string_is_envelope(name: Any, added_name: str | None) -> None:
    data = stream(added(0, **function(name=added_name, arguments="")), done(0, **function(name=name, arguments="{}")))
    result, updates = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert_call_left_as_added(result, updates)


def test_a_name_holding_a_lone_surrogate_given_at_close_to_an_unnamed_call_is_refused_and_not_taken() -> None:
    data = stream(added(0, **function(name=None, arguments="")), done(0, **function(name="w\ud800", arguments="{}")))
    result, updates = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("payload_error", "unpaired_surrogate")
    assert_call_left_as_added(result, updates)
    assert [c.name for c in result.tool_calls] == [None]


def test_argument_deltas_before_a_late_name_are_announced_without_it_under_every_chunking() -> None:
    events = call_item(0, '{"a"', ": 1}", name="")
    events[-1][1]["item"]["name"] = "weather"
    result, updates = check(ROUTE, stream(*events))
    assert (result.outcome.value, [(c.name, c.arguments) for c in result.tool_calls]) == ("complete",
                                                                                        [("weather", {"a": 1})])
    assert [(u["kind"], u.get("name")) for u in updates if u["kind"] == "tool_input_delta"] == [
        ("tool_input_delta", "")]


def test_a_call_added_without_a_call_id_takes_its_items_call_id_at_close_and_another_call_id_is_item_mismatch(
        ) -> None:
    # The client's answer (function_call_output) must quote the call_id of the item it sends back.
    late = stream(added(0, **function(call_id=None, arguments="")), done(0, **function(arguments="{}")))
    result, _ = check(ROUTE, late)
    assert (result.outcome.value, calls(result)) == ("complete", [("call_1", "weather", "valid", True, {})])
    stand_in = stream(added(0, **function(call_id=None, arguments="")), done(0, **function(call_id=None,
                                                                                         arguments="{}")))
    assert calls(check(ROUTE, stand_in)[0]) == [("it_0", "weather", "valid", True, {})]
    other = stream(added(0, **function(arguments="")), done(0, **function(call_id="call_2", arguments="{}")))
    result, updates = check(ROUTE, other)
    assert (result.outcome.value, result.stage) == ("protocol_error", "item_mismatch")
    assert [c.id for c in result.tool_calls] == ["call_1"]
    assert_call_left_as_added(result, updates)


@pytest.mark.parametrize("call_id", [0, [], {}, 5, ["call_1"]],
                         ids=["zero", "empty-list", "empty-object", "int", "list"])
@pytest.mark.parametrize("where", ["added", "done"])
def test_a_call_id_that_is_not_a_string_is_envelope_wherever_it_comes(call_id: Any, where: str) -> None:
    first = function(call_id=call_id, arguments="") if where == "added" else function(arguments="")
    last = function(call_id=call_id, arguments="{}") if where == "done" else function(arguments="{}")
    result, _ = check(ROUTE, stream(added(0, **first), done(0, **last)))
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert [c.ready for c in result.tool_calls] == [False] * len(result.tool_calls)


# -- found by a sampled mutation run of 2026-12-05 (150 mutants, seed 5) -------------------------------

def test_a_closed_item_refused_for_its_call_id_leaves_its_call_open() -> None:
    result, _ = check(ROUTE, stream(added(0, **function(arguments="")), done(0, **function(call_id=5, arguments="{}"))))
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert [(c.id, c.state) for c in result.tool_calls] == [("call_1", "streaming")]


def test_argument_deltas_before_a_late_call_id_are_announced_under_the_stand_in_under_every_chunking() -> None:
    events = call_item(0, '{"a"', ": 1}")
    del events[0][1]["item"]["call_id"]
    result, updates = check(ROUTE, stream(*events))
    assert (result.outcome.value, [c.id for c in result.tool_calls]) == ("complete", ["call_0"])
    assert [u["id"] for u in updates if u["kind"] == "tool_input_delta"] == ["fc_0"]


def test_a_late_call_id_is_taken_only_once_the_account_holds_it() -> None:
    # The ceiling at which the call first shows the item's call_id moves by twice the id's extra length:
    # once for the closing event, which is that much longer, and once for the id itself.
    def until_shown(call_id: str) -> tuple[int, list[list[tuple[Any, ...]]]]:
        """The first ceiling whose result shows ``call_id``, and the calls of every ceiling below it."""
        data = stream(added(0, **function(call_id=None, arguments="")),
                      done(0, **function(call_id=call_id, arguments="{}")))
        total = replay(ROUTE, [data]).retained_chars
        below: list[list[tuple[Any, ...]]] = []
        for ceiling in range(total - 400, total + 1):
            session = replay(ROUTE, [data], limits=Limits(max_retained_chars=ceiling))
            assert session.result is not None
            seen = [(c.id, c.state) for c in session.result.tool_calls]
            if [c[0] for c in seen] == [call_id]:
                return ceiling, below
            below.append(seen)
        raise AssertionError("never shown")

    longer = "call_" + "x" * 50
    shown, below = until_shown(longer)
    assert shown - until_shown("call_1")[0] == 2 * (len(longer) - len("call_1"))
    # Below it, the call keeps its stand-in id and stays open: nothing of the closing item was taken.
    assert all(seen in ([], [("it_0", "streaming")]) for seen in below) and below


@pytest.mark.parametrize("stand_in", [True, False], ids=["item-id-stands-in", "no-id-at-all"])
def test_a_late_call_id_costs_what_opening_with_it_would_have(stand_in: bool) -> None:
    # The two accounts differ only by the sizes of the two added events (each event is charged once).
    item = {"type": "function_call", "name": "weather", "arguments": "", **({"id": "it_0"} if stand_in else {})}
    late_added = ev("response.output_item.added", output_index=0, item=item)
    early_added = ev("response.output_item.added", output_index=0, item={**item, "call_id": "call_1"})
    closing = done(0, **function(arguments="{}"))
    late = replay(ROUTE, [stream(late_added, closing)])
    early = replay(ROUTE, [stream(early_added, closing)])
    assert late.result is not None and [c.id for c in late.result.tool_calls] == ["call_1"]

    def size(event: tuple[str, dict[str, Any]]) -> int:
        return len(json.dumps(event[1], separators=(",", ":")))

    assert early.retained_chars - late.retained_chars == size(early_added) - size(late_added)


def test_a_closed_item_with_a_call_id_of_another_type_is_envelope_when_the_call_had_none() -> None:
    data = stream(added(0, **function(call_id=None, arguments="")), done(0, **function(call_id=5, arguments="{}")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert [(c.id, c.state) for c in result.tool_calls] == [("it_0", "streaming")]


def test_a_whole_item_call_whose_action_passes_the_retained_ceiling_leaves_its_item_open() -> None:
    # A computer call's closing item becomes the call's input (the action fields' JSON), charged as it
    # is taken: one character short of that charge, neither the call nor its item is closed.
    from bisect import bisect_left

    from tests.test_retained import _COMPUTER, responses_stream
    from tests.test_retained import ev as event

    data = responses_stream([event("response.output_item.added", output_index=0,
                                   item={**_COMPUTER, "status": "in_progress"}),
                             event("response.output_item.done", output_index=0, item=_COMPUTER)])

    def result_at(ceiling: int) -> Any:
        return replay(ROUTE, [data], limits=Limits(max_retained_chars=ceiling)).result

    total = replay(ROUTE, [data]).retained_chars
    # (the smallest ceiling at which the call is closed: its state only moves on as the ceiling grows)
    ceiling = bisect_left(range(total + 1), True,
                          key=lambda c: any(t.state != "streaming" for t in result_at(c).tool_calls))
    result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=ceiling - 1))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "retained")
    assert [(t.state, t.input_text) for t in result.tool_calls] == [("streaming", "")]
    assert result.telemetry.open_payload_accumulator_count == 2  # the item and its call
    assert [item["status"] for item in result.assistant_message] == ["in_progress"]  # type: ignore[union-attr]
    assert result_at(ceiling).telemetry.open_payload_accumulator_count == 1  # the item closed, the call not settled


# -- the completed response's output: the SDK's final answer ------------------------------------------

def final_message(index: int, text: str, refusal: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "output_text", "text": text, "annotations": []}]
    if refusal is not None:
        content.append({"type": "refusal", "refusal": refusal})
    return {"id": f"msg_{index}", "type": "message", "status": "completed", "role": "assistant", "content": content}


def final_call(index: int, arguments: str, **fields: Any) -> dict[str, Any]:
    return {"id": f"fc_{index}", "type": "function_call", "status": "completed", "arguments": arguments,
            "call_id": f"call_{index}", "name": "weather", **fields}


STREAMED = [*message_item(0, "Hel", "lo"), *call_item(1, '{"city":', '"Paris"}')]


def test_a_completed_output_that_lists_the_streamed_items_commits_whatever_else_it_re_issues() -> None:
    # api.openai.com re-issues reasoning ids and encrypted content there (the recordings); only the
    # answer's own fields are compared, and a field the output leaves out is not.
    output = [final_message(0, "Hello"), final_call(1, '{"city":"Paris"}', id="fc_other", status="done")]
    result, _ = check(ROUTE, stream(*STREAMED, terminal=completed(output=output)), tools={"weather": {}})
    assert (result.outcome.value, result.text, [c.ready for c in result.tool_calls]) == ("complete", "Hello", [True])
    sparse = [{"type": "message"}, {"type": "function_call"}]
    assert outcome_of(ROUTE, stream(*STREAMED, terminal=completed(output=sparse))) == ("complete", None)
    for empty in ([], None):  # a server that does not echo the output
        assert outcome_of(ROUTE, stream(*STREAMED, terminal=completed(output=empty))) == ("complete", None)


@pytest.mark.parametrize("output", [
    [final_message(0, "Hello")],
    [final_message(0, "Hello"), final_call(1, '{"city":"Paris"}'), final_call(2, "{}")],
    [final_call(0, '{"city":"Paris"}'), final_message(1, "Hello")],
    [final_message(0, "Hello!"), final_call(1, '{"city":"Paris"}')],
    [final_message(0, "Hello", refusal="no"), final_call(1, '{"city":"Paris"}')],
    [final_message(0, "Hello"), final_call(1, '{"city":"Rome"}')],
    [final_message(0, "Hello"), final_call(1, '{"city":"Paris"}', name="rm_rf")],
    [final_message(0, "Hello"), final_call(1, '{"city":"Paris"}', call_id="call_9")],
], ids=["an-item-fewer", "an-item-more", "another-order", "another-text", "a-refusal-more", "other-arguments",
        "another-name", "another-call-id"])
def test_a_completed_output_that_disagrees_with_the_streamed_items_is_item_mismatch(output: list[Any]) -> None:
    # What an SDK user would get (the completed response) is not what the stream showed: neither commits.
    result, _ = check(ROUTE, stream(*STREAMED, terminal=completed(output=output)), tools={"weather": {}})
    assert (result.outcome.value, result.stage, result.stop_reason) == ("protocol_error", "item_mismatch",
                                                                         "completed")
    assert not result.committed and all(not c.ready for c in result.tool_calls)


@pytest.mark.parametrize("output", ["x", {"0": {}}, 5, ["x", {}], [final_message(0, "Hello") | {"content": "Hello"},
                                                                 final_call(1, "{}")],
                                    [final_message(0, "Hello") | {"content": [{"type": "output_text", "text": 5}]},
                                     final_call(1, "{}")],
                                    [final_message(0, "Hello") | {"content": ["Hello"]}, final_call(1, "{}")],
                                    [final_message(0, "Hello") | {"content": 5}, final_call(1, "{}")]],
                         ids=["string", "object", "number", "string-item", "string-content", "int-text", "string-part",
                              "number-content"])
def test_a_completed_output_that_is_not_a_list_of_items_is_envelope(output: Any) -> None:
    result, _ = check(ROUTE, stream(*STREAMED, terminal=completed(output=output)))
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")


def test_a_completed_output_is_matched_by_output_index_so_a_gap_in_the_streamed_indexes_is_item_mismatch() -> None:
    gap = [*message_item(0, "Hello"), *call_item(2, "{}")]
    output = [final_message(0, "Hello"), final_call(2, "{}")]
    assert outcome_of(ROUTE, stream(*gap)) == ("complete", None)
    assert outcome_of(ROUTE, stream(*gap, terminal=completed(output=output))) == ("protocol_error", "item_mismatch")


def test_a_message_in_the_completed_output_is_compared_by_its_joined_texts_and_refusals() -> None:
    parts = [{"type": "output_text", "text": "Hel"}, {"type": "refusal", "refusal": "n"},
             {"type": "output_text", "text": "lo"}, {"type": "refusal", "refusal": "o"}]
    message = ev("response.output_item.added", output_index=0, item={"id": "m", "type": "message"})
    deltas = [ev("response.output_text.delta", output_index=0, delta="Hello"),
              ev("response.refusal.delta", output_index=0, delta="no")]
    closed = ev("response.output_item.done", output_index=0, item={"id": "m", "type": "message"})
    output = [{"type": "message", "content": parts}]
    result, _ = check(ROUTE, stream(message, *deltas, closed, terminal=completed(output=output)))
    assert (result.outcome.value, result.text, result.refusal) == ("complete", "Hello", "no")
    other = [{"type": "message", "content": [*parts[:3], {"type": "refusal", "refusal": "pe"}]}]
    assert outcome_of(ROUTE, stream(message, *deltas, closed, terminal=completed(output=other))) == (
        "protocol_error", "item_mismatch")


def test_a_whole_item_call_in_the_completed_output_must_carry_its_closed_item_s_action() -> None:
    action = {"type": "click", "x": 1, "y": 2}
    item = {"type": "computer_call", "id": "cu_1", "call_id": "call_c", "action": action,
            "pending_safety_checks": []}
    events = [ev("response.output_item.added", output_index=0, item={**item, "status": "in_progress"}),
              ev("response.output_item.done", output_index=0, item={**item, "status": "completed"})]
    assert outcome_of(ROUTE, stream(*events, terminal=completed(output=[item]))) == ("complete", None)
    moved = {**item, "action": {**action, "x": 9}}
    assert outcome_of(ROUTE, stream(*events, terminal=completed(output=[moved]))) == ("protocol_error",
                                                                                      "item_mismatch")
    other = {**item, "call_id": "call_other"}
    assert outcome_of(ROUTE, stream(*events, terminal=completed(output=[other]))) == ("protocol_error",
                                                                                      "item_mismatch")


def test_a_call_whose_input_came_only_whole_is_compared_with_that_input_and_a_split_pair_as_one_character() -> None:
    # LM Studio: no deltas, the .done value is the input; a surrogate pair split across deltas is one character.
    whole = call_item(0, done='{"q":"x"}')
    assert outcome_of(ROUTE, stream(*whole, terminal=completed(output=[final_call(0, '{"q":"x"}')]))) == (
        "complete", None)
    split = call_item(0, '{"q":"\ud83d', '\ude00"}', item_done='{"q":"\U0001f600"}')
    assert outcome_of(ROUTE, stream(*split, terminal=completed(output=[final_call(0, '{"q":"\U0001f600"}')]))) == (
        "complete", None)


def test_a_message_compared_with_the_completed_output_still_announces_its_pending_delta_whole() -> None:
    # The message closes without content (nothing flushes its pending delta there); the comparison joins its
    # text first. Every chunking: the deltas announced add up to the text, once.
    data = stream(*message_item(0, "Hel", "lo", "!"), terminal=completed(output=[final_message(0, "Hello!")]))
    result, updates = check(ROUTE, data)
    assert (result.outcome.value, result.text) == ("complete", "Hello!")
    assert "".join(str(u["text"]) for u in updates if u["kind"] == "text_delta") == "Hello!"


def test_a_message_whose_surrogate_pair_was_split_across_deltas_matches_the_completed_output_s_character() -> None:
    data = stream(*message_item(0, "a\ud83d", "\ude00"), terminal=completed(output=[final_message(0, "a\U0001f600")]))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.text) == ("complete", "a\U0001f600")


def test_a_part_of_an_unknown_type_added_to_no_item_is_unknown_block_and_charges_nothing_even_when_kept() -> None:
    # With unknown types kept, an unknown part is charged to the item ceiling: not when its item is missing.
    part = ev("response.content_part.added", item_id="nope", output_index=9, content_index=0,
              part={"type": "hologram"})
    head = sse(CREATED, IN_PROGRESS)
    session = replay(ROUTE, [head + sse(part)], keep_unknown_items=True)
    assert session.result is not None and session.result.stage == "unknown_block"
    assert session.retained_chars == replay(ROUTE, [head], keep_unknown_items=True).retained_chars
    assert outcome_of(ROUTE, stream(part), keep_unknown_items=True) == ("protocol_error", "unknown_block")


@pytest.mark.parametrize("where", ["arguments_done", "item_done"])
def test_arguments_that_come_whole_at_close_past_the_tool_input_ceiling_are_buffer_limit_and_the_call_stays_open(
        where: str) -> None:
    # No delta came: the input is the `.done` event's (or, without one, the closing item's), charged whole.
    arguments = '{"city": "Paris"}'
    events = call_item(0, done=arguments if where == "arguments_done" else None, item_done=arguments)
    result, updates = check(ROUTE, stream(*events), limits=Limits(max_tool_input_chars=len(arguments) - 1))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "tool_input")
    assert_call_left_as_added(result, updates)
    # the closing item was not taken: the item and its call stay open, the item as added
    assert result.telemetry.open_payload_accumulator_count == 2
    assert result.assistant_message == [events[0][1]["item"]]
    result, _ = check(ROUTE, stream(*events), limits=Limits(max_tool_input_chars=len(arguments)))
    assert (result.outcome.value, calls(result)) == ("complete", [("call_0", "weather", "valid", True,
                                                                    {"city": "Paris"})])


def test_a_whole_item_call_past_the_tool_input_ceiling_is_buffer_limit_and_never_validated() -> None:
    item = {"type": "computer_call", "id": "cu_1", "call_id": "call_c", "action": {"type": "click", "x": 1, "y": 2},
            "pending_safety_checks": []}
    events = [ev("response.output_item.added", output_index=0, item={**item, "status": "in_progress"}),
              ev("response.output_item.done", output_index=0, item={**item, "status": "completed"})]
    size = len(json.dumps({"action": item["action"], "pending_safety_checks": []}, ensure_ascii=False))
    result, _ = check(ROUTE, stream(*events), limits=Limits(max_tool_input_chars=size - 1))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "tool_input")
    assert [(c.state, c.arguments, c.ready) for c in result.tool_calls] == [("streaming", None, False)]
    # the closing item was not taken: the item and its call stay open, the item as added
    assert result.telemetry.open_payload_accumulator_count == 2
    assert result.assistant_message == [{**item, "status": "in_progress"}]
    result, _ = check(ROUTE, stream(*events), limits=Limits(max_tool_input_chars=size))
    assert [(c.state, c.ready) for c in result.tool_calls] == [("valid", True)]


def test_a_completed_response_with_another_id_than_the_created_one_is_item_mismatch() -> None:
    # Two responses spliced into one stream: the terminal event is not the created response's. (Both carry an id
    # in every recording, and the same one; a terminal event without an id is not compared.)
    assert outcome_of(ROUTE, stream(*message_item(0, "a"), terminal=completed(id="resp_other"))) == (
        "protocol_error", "item_mismatch")
    assert outcome_of(ROUTE, stream(*message_item(0, "a"), terminal=completed(id="resp_1"))) == ("complete", None)
    response = {"status": "completed"}
    assert outcome_of(ROUTE, stream(*message_item(0, "a"), terminal=ev("response.completed", response=response))) == (
        "complete", None)
