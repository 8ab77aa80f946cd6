"""Route ``anthropic-messages``: every documented stop value, block type and delta type (every chunking).

Shapes are the streaming examples of Anthropic's docs (platform.claude.com/docs/en/...:
build-with-claude/streaming, extended-thinking "Streaming thinking", citations "Streaming support",
agents-and-tools/tool-use/web-search-tool, web-fetch-tool, code-execution-tool, tool-search-tool,
mcp-connector) with ids and long opaque values shortened, and the block models of
anthropic-sdk-python 2.16.0 (``src/anthropic/types/`` and ``types/beta/``). Each test says which.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.route_fixtures import LOCAL, check, outcome_of, replay, sse
from tests.test_route_anthropic_messages import block_start as start
from tests.test_route_anthropic_messages import block_stop as stop
from tests.test_route_anthropic_messages import delta
from webclient import Limits
from webclient._routes import StopCategory
from webclient._routes.anthropic_messages import STOP_REASONS

ROUTE = "anthropic-messages"

START = {"type": "message_start", "message": {"id": "msg_01TQ", "type": "message", "role": "assistant",
                                              "model": "claude-sonnet-4-5", "content": [], "stop_reason": None,
                                              "usage": {"input_tokens": 25, "output_tokens": 1}}}


def message(*events: dict[str, Any], stop: str = "end_turn") -> bytes:
    tail = [{"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
             "usage": {"output_tokens": 15}}, {"type": "message_stop"}]
    return sse(*((e["type"], e) for e in [START, {"type": "ping"}, *events, *tail]))


def whole(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    """A block that arrives whole in content_block_start (result blocks, redacted thinking)."""
    return [start(index, block), stop(index)]


def text(index: int, *parts: str) -> list[dict[str, Any]]:
    return [start(index, {"type": "text", "text": ""}), *(delta(index, type="text_delta", text=p) for p in parts),
            stop(index)]


# -- stop values (types/stop_reason.py, types/beta/beta_stop_reason.py) ---------------------------------

EXPECTED = {StopCategory.SUCCESS: ("complete", None), StopCategory.LENGTH: ("truncated", "stop_reason"),
            StopCategory.FILTER: ("truncated", "stop_reason"), StopCategory.FAILURE: ("upstream_error", "error_stop")}


@pytest.mark.parametrize(("reason", "category"), sorted(STOP_REASONS.items()), ids=sorted(STOP_REASONS))
def test_every_documented_stop_reason_ends_as_its_category(reason: str, category: StopCategory) -> None:
    result, _ = check(ROUTE, message(*text(0, "Hi"), stop=reason))
    assert (result.outcome.value, result.stage, result.stop_reason) == (*EXPECTED[category], reason)
    assert result.telemetry.stop_reason == reason


def test_pause_turn_commits_and_the_assistant_message_is_what_the_caller_sends_back_to_continue() -> None:
    # Handling stop reasons: on pause_turn "send the response back as-is" to let Claude continue.
    events = [start(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
              delta(0, type="input_json_delta", partial_json='{"query": "x"}'), stop(0)]
    result, _ = check(ROUTE, message(*events, stop="pause_turn"))
    assert (result.outcome.value, result.stop_reason) == ("complete", "pause_turn")
    assert result.assistant_message == {"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}}]}


# -- text, citations, thinking, signatures -------------------------------------------------------------


def test_citations_delta_appends_to_the_text_blocks_citations() -> None:
    # Citations docs, "Streaming support": a citations_delta carrying a char_location citation.
    citation = {"type": "char_location", "cited_text": "The grass is green. ", "document_index": 0,
                "document_title": "Example Document", "start_char_index": 0, "end_char_index": 20}
    events = [start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="the grass is green"),
              delta(0, type="citations_delta", citation=citation), stop(0)]
    result, _ = check(ROUTE, message(*events))
    assert result.citations == (citation,)
    assert result.assistant_message["content"] == [{"type": "text", "text": "the grass is green",
                                                    "citations": [citation]}]
    assert outcome_of(ROUTE, message(*events), limits=Limits(max_citations=1)) == ("complete", None)
    assert outcome_of(ROUTE, message(*events[:2], *[events[2]] * 2, events[3]),
                      limits=Limits(max_citations=1)) == ("buffer_limit", "citations")


def test_a_citations_delta_on_a_thinking_block_is_the_wrong_delta_type() -> None:
    events = [start(0, {"type": "thinking", "thinking": ""}), delta(0, type="citations_delta", citation={}), stop(0)]
    assert outcome_of(ROUTE, message(*events)) == ("protocol_error", "delta_type")


def test_thinking_and_its_signature_delta_make_the_thinking_block_sent_back() -> None:
    # Extended thinking docs, "Streaming thinking": thinking_delta fragments, then signature_delta.
    sig = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    events = [start(0, {"type": "thinking", "thinking": ""}),
              delta(0, type="thinking_delta", thinking="Let me solve this step by step:\n\n1. First break down "),
              delta(0, type="thinking_delta", thinking="27 * 453"),
              delta(0, type="signature_delta", signature=sig), stop(0), *text(1, "27 * 453 = 12,231")]
    result, updates = check(ROUTE, message(*events))
    assert result.reasoning == "Let me solve this step by step:\n\n1. First break down 27 * 453"
    assert result.assistant_message["content"][0] == {"type": "thinking", "thinking": result.reasoning,
                                                      "signature": sig}
    assert [u["channel"] for u in updates] == ["reasoning", "text"]


def test_a_later_signature_delta_replaces_the_earlier_one_and_counts_once() -> None:
    events = [start(0, {"type": "thinking", "thinking": "", "signature": ""}),
              delta(0, type="signature_delta", signature="A" * 10), delta(0, type="signature_delta", signature="B" * 8),
              stop(0)]
    result, _ = check(ROUTE, message(*events), limits=Limits(max_signature_chars=10))
    assert result.assistant_message["content"][0]["signature"] == "B" * 8
    assert outcome_of(ROUTE, message(*events), limits=Limits(max_signature_chars=9)) == ("buffer_limit",
                                                                                          "signatures")


def test_redacted_thinking_data_is_kept_verbatim() -> None:
    # Extended thinking docs, "Thinking redaction": a redacted_thinking block arrives whole.
    block = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qp"}
    result, _ = check(ROUTE, message(*whole(0, block), *text(1, "Answer")))
    assert result.assistant_message["content"][0] == block
    assert result.items == () and result.reasoning == ""
    assert outcome_of(ROUTE, message(*whole(0, block)), limits=Limits(max_signature_chars=len(block["data"]) - 1)) \
        == ("buffer_limit", "signatures")


# -- tool use: client calls and server tools -------------------------------------------------------


def test_tool_use_is_a_function_call_and_its_parsed_input_is_in_the_assistant_message() -> None:
    # Streaming docs, "Streaming request with tool use" (input_json_delta fragments).
    events = [*text(0, "Okay, let's check the weather for San Francisco, CA:"),
              start(1, {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather",
                        "input": {}}),
              delta(1, type="input_json_delta", partial_json=""),
              delta(1, type="input_json_delta", partial_json='{"location": "San Fra'),
              delta(1, type="input_json_delta", partial_json='ncisco, CA", "unit": "fahrenheit"}'), stop(1)]
    result, _ = check(ROUTE, message(*events, stop="tool_use"))
    assert [(c.kind, c.id, c.name, c.arguments, c.ready) for c in result.tool_calls] == [
        ("function", "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather",
         {"location": "San Francisco, CA", "unit": "fahrenheit"}, True)]
    assert result.assistant_message["content"][1] == {
        "type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather",
        "input": {"location": "San Francisco, CA", "unit": "fahrenheit"}}


RESULT_BLOCKS = [
    # Web search tool docs: the result block with its encrypted_content per result.
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_014h", "content": [
        {"type": "web_search_result", "title": "Weather in New York City", "url": "https://weatherspark.com/y/23912",
         "encrypted_content": "Ev0DCioIAxgCIiQ3NmU4ZmI4OC1k", "page_age": None}]},
    # Web fetch tool docs.
    {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_01", "content": {
        "type": "web_fetch_result", "url": "https://example.com/article", "retrieved_at": "2025-08-25T10:30:00Z",
        "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Full text"},
                    "title": "Article Title", "citations": {"enabled": True}}}},
    # Code execution tool docs (legacy and bash / text editor sub-tools).
    {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_02",
     "content": {"type": "code_execution_result", "stdout": "Mean: 5.5\n", "stderr": "", "return_code": 0,
                 "content": []}},
    {"type": "bash_code_execution_tool_result", "tool_use_id": "srvtoolu_03",
     "content": {"type": "bash_code_execution_result", "stdout": "total 0\n", "stderr": "", "return_code": 0,
                 "content": []}},
    {"type": "text_editor_code_execution_tool_result", "tool_use_id": "srvtoolu_04",
     "content": {"type": "text_editor_code_execution_view_result", "file_type": "text", "content": "print(1)",
                 "num_lines": 1, "start_line": 1, "total_lines": 1}},
    # Tool search tool docs.
    {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_05",
     "content": {"type": "tool_search_tool_search_result",
                 "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}]}},
    # MCP connector docs.
    {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_01", "is_error": False,
     "content": [{"type": "text", "text": "Hello"}]},
    # Files API / code execution: container_upload; beta advisor, MCP listing, fallback marker.
    {"type": "container_upload", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"},
    {"type": "advisor_tool_result", "tool_use_id": "srvtoolu_06",
     "content": {"type": "advisor_result", "text": "Looks right.", "stop_reason": "end_turn"}},
    {"type": "mcp_tool_listing", "mcp_server_name": "example-mcp",
     "tools": [{"name": "echo", "input_schema": {"type": "object"}}]},
    {"type": "fallback", "from": {"model": "claude-opus-4-7"}, "to": {"model": "claude-sonnet-4-5"},
     "trigger": {"type": "refusal", "category": None}},
]


@pytest.mark.parametrize("block", RESULT_BLOCKS, ids=[b["type"] for b in RESULT_BLOCKS])
def test_result_blocks_are_items_sent_back_verbatim_and_never_tool_calls(block: dict[str, Any]) -> None:
    result, _ = check(ROUTE, message(*whole(0, block), *text(1, "Done.")), tools={"get_weather": {}})
    assert (result.outcome.value, result.tool_calls, result.text) == ("complete", (), "Done.")
    assert result.items == (block,)
    assert result.assistant_message["content"][0] == block


@pytest.mark.parametrize(
    "block",
    [{"type": "server_tool_use", "id": "srvtoolu_014h", "name": "web_search", "input": {}},
     {"type": "mcp_tool_use", "id": "mcptoolu_01", "name": "echo", "server_name": "example-mcp", "input": {}}],
    ids=["server_tool_use", "mcp_tool_use"],
)
def test_server_side_tool_calls_are_items_with_their_parsed_input(block: dict[str, Any]) -> None:
    # Web search docs (server_tool_use + input_json_delta) and MCP connector docs (mcp_tool_use).
    events = [start(0, block), delta(0, type="input_json_delta", partial_json='{"query": "weather NYC today"}'),
              stop(0), *whole(1, RESULT_BLOCKS[0])]
    result, _ = check(ROUTE, message(*events), tools={"get_weather": {}})
    assert (result.outcome.value, result.tool_calls) == ("complete", ())
    assert result.items == ({**block, "input": {"query": "weather NYC today"}}, RESULT_BLOCKS[0])
    assert result.assistant_message["content"] == list(result.items)


def test_compaction_delta_sets_the_compaction_blocks_fields() -> None:
    # anthropic-sdk-python tests/lib/streaming/fixtures/compaction_response.txt (beta compaction).
    events = [start(0, {"type": "compaction", "content": None, "encrypted_content": None}),
              delta(0, type="compaction_delta", content="Earlier conversation summarized.",
                    encrypted_content="EpwBCioIDxgCEAEYASJALd_opaque"), stop(0), *text(1, "Hello there!")]
    result, _ = check(ROUTE, message(*events))
    block = {"type": "compaction", "content": "Earlier conversation summarized.",
             "encrypted_content": "EpwBCioIDxgCEAEYASJALd_opaque"}
    assert result.items == (block,) and result.assistant_message["content"][0] == block


# -- types the route does not know ------------------------------------------------------------------


def test_an_unknown_block_type_fails_closed_unless_the_caller_keeps_unknown_items() -> None:
    block = {"type": "hologram", "payload": "x"}
    data = message(*whole(0, block), *text(1, "x"))
    assert outcome_of(ROUTE, data) == ("protocol_error", "unknown_type")
    result, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (result.outcome.value, result.items) == ("complete", (block,))
    assert result.assistant_message["content"][0] == block


def test_an_unknown_delta_type_fails_closed_unless_kept_as_the_raw_event() -> None:
    unknown = delta(0, type="sparkle_delta", sparkle="*")
    data = message(*text(0, "a")[:2], unknown, stop(0))
    assert outcome_of(ROUTE, data) == ("protocol_error", "unknown_type")
    result, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (result.outcome.value, result.items, result.text) == ("complete", (unknown,), "a")


def test_message_identity_comes_from_message_start() -> None:
    result, _ = check(ROUTE, message(*text(0, "x")))
    assert (result.response_id, result.model) == ("msg_01TQ", "claude-sonnet-4-5")


# -- a message that starts with its blocks (programmatic tool calling) --------------------------------------------
# Programmatic tool calling (agents-and-tools/tool-use/programmatic-tool-calling; beta advanced-tool-use-2025-11-20):
# when code running in the code execution container calls a client tool, the message that carries that call
# starts with it whole in message_start.message.content, with the message's stop_reason, and ends at once
# (message_start, message_stop). Shape and ids from vercel/ai's recorded
# packages/anthropic/src/__fixtures__/anthropic-programmatic-tool-calling.1.chunks.txt (claude-sonnet-4-5, the
# second of its fifteen messages) and anthropic-message-start-prepopulated-content.chunks.txt; langchain-ai/
# langchain#34406 reports the same. The SDK's accumulate_event starts its snapshot from this message.

CALLER = {"type": "code_execution_20250825", "tool_id": "srvtoolu_01MzSrFWsmzBdcoQkGWLyRjK"}
ROLL = {"type": "tool_use", "id": "toolu_015dGLMbwBKv1ZRQr6KdJzeH", "name": "rollDie", "input": {"player": "player2"},
        "caller": CALLER}


def started_with(content: list[Any], *events: dict[str, Any], stop: str | None = "tool_use",
                 tail: list[dict[str, Any]] | None = None) -> bytes:
    head = {"type": "message_start", "message": {
        "model": "claude-sonnet-4-5-20250929", "id": "msg_01KSVw3xmXbMNJPNMt46BC5W", "type": "message",
        "role": "assistant", "content": content,
        "container": {"id": "container_011CWHPPTDTn1XufeRB9uHeH", "expires_at": "2025-12-20T05:33:37.969567Z"},
        "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}}
    return sse(*((e["type"], e) for e in [head, *events, *(tail if tail is not None else [{"type": "message_stop"}])]))


def test_a_message_that_starts_with_a_whole_tool_call_and_its_stop_reason_commits_the_call() -> None:
    result, updates = check(ROUTE, started_with([ROLL]), tools={"rollDie": {"type": "object"}})
    assert (result.outcome.value, result.stop_reason, result.text) == ("complete", "tool_use", "")
    assert [(c.kind, c.id, c.name, c.arguments, c.state, c.ready) for c in result.tool_calls] == [
        ("function", ROLL["id"], "rollDie", {"player": "player2"}, "valid", True)]
    assert result.tool_calls[0].input_text == '{"player": "player2"}'  # (its input text is the object's JSON)
    assert result.assistant_message == {"role": "assistant", "content": [ROLL]}  # the caller goes back with it
    assert (result.response_id, result.items) == ("msg_01KSVw3xmXbMNJPNMt46BC5W", ())
    assert [(u["kind"], u["state"], u["ready"]) for u in updates] == [
        ("tool_call", "streaming", False), ("tool_call", "closed", False), ("tool_call", "valid", False)]


def test_the_blocks_a_message_starts_with_come_first_and_streamed_blocks_follow_at_the_next_indexes() -> None:
    result_block = {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_result_1",
                    "content": {"type": "code_execution_result", "stdout": "4\n", "stderr": "", "return_code": 0,
                                "content": []}}
    server = {"type": "server_tool_use", "id": "srvtoolu_2", "name": "code_execution", "input": {"code": "print(4)"}}
    thinking = {"type": "thinking", "thinking": "Roll again.", "signature": "EqQBCgIYAhIM"}
    content = [result_block, {"type": "text", "text": "Four. "}, thinking, server, ROLL]
    data = started_with(content, *text(5, "Done."), stop=None, tail=[
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}},
        {"type": "message_stop"}])
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stop_reason) == ("complete", "end_turn")
    assert (result.text, result.reasoning) == ("Four. Done.", "Roll again.")
    assert result.items == (result_block, server)  # the server call keeps the input it started with
    assert [c.name for c in result.tool_calls] == ["rollDie"]
    assert result.assistant_message["content"] == [*content, {"type": "text", "text": "Done."}]


def test_a_message_delta_stop_reason_replaces_the_one_the_message_started_with() -> None:
    data = started_with([{"type": "text", "text": "Hi"}], stop="tool_use", tail=[
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": None}},
        {"type": "message_stop"}])
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.stop_reason, result.text) == (
        "truncated", "stop_reason", "max_tokens", "Hi")


@pytest.mark.parametrize(("stop", "expected"), [
    (None, ("truncated", "missing_stop")), (5, ("protocol_error", "envelope")),
    ({"reason": "tool_use"}, ("protocol_error", "envelope")), ("odd_reason", ("protocol_error", "unrecognized_stop"))])
def test_a_message_that_starts_without_a_usable_stop_reason_and_ends_at_once_does_not_commit(
        stop: Any, expected: tuple[str, str]) -> None:
    result, _ = check(ROUTE, started_with([ROLL], stop=stop))
    assert (result.outcome.value, result.stage) == expected
    assert not any(c.ready for c in result.tool_calls)


@pytest.mark.parametrize(("block", "expected"), [
    ({**ROLL, "input": ["player2"]}, ("payload_error", "tool_not_object")),
    ({**ROLL, "input": {"player": 2}}, ("payload_error", "tool_schema")),
    ({**ROLL, "id": 5}, ("protocol_error", "envelope")),
    ({"type": "server_tool_use", "id": "srvtoolu_2", "name": "code_execution", "input": "print(4)"},
     ("payload_error", "tool_not_object")),
    ({"type": "hologram", "payload": "x"}, ("protocol_error", "unknown_type")),
], ids=["input-not-object", "input-against-schema", "id-not-string", "server-input-not-object", "unknown-type"])
def test_a_block_the_message_starts_with_is_checked_as_a_streamed_one_would_be(
        block: dict[str, Any], expected: tuple[str, str]) -> None:
    tools = {"rollDie": {"type": "object", "properties": {"player": {"type": "string"}}}}
    result, _ = check(ROUTE, started_with([block]), tools=tools)
    assert (result.outcome.value, result.stage) == expected
    if expected[1] == "tool_not_object" and block["type"] == "tool_use":
        assert result.tool_calls[0].input_text == ""  # (not an object: no input text is made of it)


def test_an_unknown_block_a_message_starts_with_is_kept_when_the_caller_keeps_unknown_items() -> None:
    block = {"type": "hologram", "payload": "x"}
    result, _ = check(ROUTE, started_with([block, ROLL]), keep_unknown_items=True)
    assert (result.outcome.value, result.items, [c.name for c in result.tool_calls]) == ("complete", (block,),
                                                                                           ["rollDie"])


def test_the_blocks_a_message_starts_with_count_against_the_blocks_and_items_ceilings() -> None:
    data = started_with([ROLL, {**ROLL, "id": "toolu_2"}, {**ROLL, "id": "toolu_3"}])
    assert outcome_of(ROUTE, data, limits=Limits(max_blocks=2)) == ("buffer_limit", "blocks")
    assert outcome_of(ROUTE, data, limits=Limits(max_item_chars=len(data) // 2)) == ("buffer_limit", "items")
    assert outcome_of(ROUTE, data) == ("complete", None)


def test_nothing_a_message_starts_with_is_taken_once_its_identity_fails() -> None:
    data = started_with([ROLL])
    head = data.index(b'"model":"') + len(b'"model":"')
    result, updates = check(ROUTE, data[:head] + b"\\ud800" + data[head:])
    assert (result.outcome.value, result.stage) == ("payload_error", "unpaired_surrogate")
    assert (result.tool_calls, result.assistant_message["content"], updates) == ((), [], [])


def test_the_blocks_after_one_that_fails_are_not_taken() -> None:
    second = {**ROLL, "id": "toolu_2"}
    result, _ = check(ROUTE, started_with([{**ROLL, "input": ["player2"]}, second]))
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_not_object")
    assert [c.id for c in result.tool_calls] == [ROLL["id"]]


def test_a_message_delta_whose_stop_reason_is_refused_merges_no_usage() -> None:
    def tail(reason: Any) -> list[dict[str, Any]]:
        return [{"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 99}},
                {"type": "message_stop"}]

    text_block = [{"type": "text", "text": "Hi"}]
    result, _ = check(ROUTE, started_with(text_block, stop=None, tail=tail(5)))
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert result.usage == {"input_tokens": 0, "output_tokens": 0}
    # the stop reason's charge is the one that passes the retained ceiling (a 40-character reason)
    data = started_with(text_block, stop=None, tail=tail("x" * 40))
    account = replay(ROUTE, [data]).retained_chars
    result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=account - 2))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "retained")
    assert result.usage == {"input_tokens": 0, "output_tokens": 0}


def test_a_server_call_without_input_deltas_has_the_input_it_started_with_and_deltas_replace_it() -> None:
    empty = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    result, _ = check(ROUTE, message(*whole(0, empty), *text(1, "Done.")))
    assert (result.outcome.value, result.items) == ("complete", (empty,))
    preset = {**empty, "input": {"query": "first"}}
    events = [start(0, preset), delta(0, type="input_json_delta", partial_json='{"query": "second"}'), stop(0)]
    result, _ = check(ROUTE, message(*events, *text(1, "Done.")))
    assert result.items == ({**preset, "input": {"query": "second"}},)


# -- message-level details (Message / MessageDeltaEvent: stop_sequence, stop_details, container) ----------------

REFUSAL_DETAILS = {"type": "refusal", "category": "cyber", "explanation": "Blocked.",
                   "fallback_credit_token": "tok_1"}
CONTAINER = {"id": "container_011", "expires_at": "2026-08-04T21:59:53.096637Z"}


def with_deltas(*deltas: dict[str, Any]) -> bytes:
    """A text block, then one message_delta per entry of ``deltas`` (its ``delta``, and any top-level keys after
    ``_top``), then message_stop."""
    tail = []
    for d in deltas:
        top = d.pop("_top", {"usage": {"output_tokens": 3}})
        tail.append({"type": "message_delta", "delta": d, **top})
    return sse(*((e["type"], e) for e in [START, *text(0, "Hi"), *tail, {"type": "message_stop"}]))


def test_a_refusal_keeps_its_stop_details_for_the_caller_and_the_answer_still_commits() -> None:
    result, _ = check(ROUTE, with_deltas({"stop_reason": "refusal", "stop_sequence": None,
                                          "stop_details": REFUSAL_DETAILS}))
    assert (result.outcome.value, result.stop_reason, result.details) == ("complete", "refusal",
                                                                          {"stop_details": REFUSAL_DETAILS})
    assert "details" not in result.telemetry.to_dict() and "Blocked" not in repr(result.telemetry)


def test_the_stop_sequence_and_the_container_are_kept_and_each_delta_sets_the_stop_fields_again() -> None:
    # As the SDK's snapshot: stop_sequence and stop_details follow the latest message_delta (left out: null); a
    # container stays until another replaces it.
    result, _ = check(ROUTE, with_deltas({"stop_reason": "pause_turn", "stop_details": REFUSAL_DETAILS,
                                          "container": CONTAINER},
                                         {"stop_reason": "stop_sequence", "stop_sequence": "```"}))
    assert result.details == {"container": CONTAINER, "stop_sequence": "```"}
    sequence_dropped, _ = check(ROUTE, with_deltas({"stop_reason": "pause_turn", "stop_sequence": "```"},
                                                   {"stop_reason": "end_turn"}))
    assert sequence_dropped.details is None
    newer = {**CONTAINER, "id": "container_012"}
    replaced, _ = check(ROUTE, with_deltas({"stop_reason": "end_turn", "container": CONTAINER},
                                           {"stop_reason": "end_turn", "container": newer,
                                            "_top": {"usage": {"output_tokens": 3},
                                                     "context_management": {"applied_edits": []}}}))
    assert replaced.details == {"container": newer, "context_management": {"applied_edits": []}}
    plain, _ = check(ROUTE, message(*text(0, "Hi")))
    assert plain.details is None and plain.to_dict()["details"] is None


def test_details_the_message_starts_with_are_kept_until_a_delta_changes_them() -> None:
    started = {**START, "message": {**START["message"], "container": CONTAINER, "stop_sequence": None}}
    data = sse(*((e["type"], e) for e in [started, *text(0, "Hi"),
                                          {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                           "usage": {"output_tokens": 3}}, {"type": "message_stop"}]))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.details) == ("complete", {"container": CONTAINER})


@pytest.mark.parametrize(("key", "value"), [("stop_sequence", 5), ("stop_sequence", ["x"]), ("stop_details", "x"),
                                            ("stop_details", []), ("container", "container_011")])
def test_a_detail_of_the_wrong_type_is_envelope_and_nothing_after_it_is_taken(key: str, value: Any) -> None:
    # A valid detail after it (context_management comes last) and the delta's usage are not taken either.
    result, _ = check(ROUTE, with_deltas({"stop_reason": "end_turn", key: value, "_top": {
        "usage": {"output_tokens": 3}, "context_management": {"applied_edits": []}}}))
    assert (result.outcome.value, result.stage, result.details) == ("protocol_error", "envelope", None)
    assert result.usage is not None and result.usage["output_tokens"] == START["message"]["usage"]["output_tokens"]


def test_a_message_that_starts_with_a_detail_of_the_wrong_type_takes_none_of_its_blocks() -> None:
    started = {**START, "message": {**START["message"], "container": "container_011",
                                    "content": [{"type": "text", "text": "Hi"}]}}
    result, _ = check(ROUTE, sse(("message_start", started), ("message_stop", {"type": "message_stop"})))
    assert (result.outcome.value, result.stage, result.text, result.details) == ("protocol_error", "envelope", "",
                                                                                  None)


def test_a_detail_counts_against_the_item_ceiling_by_its_size_and_a_replaced_one_is_released() -> None:
    big = {**CONTAINER, "id": "container_" + "1" * 200}  # (larger than the usage object, charged the same way)
    size = len(json.dumps(big))  # (its JSON length, as json.dumps writes it)
    later = {"usage": {"output_tokens": 3}, "context_management": {"applied_edits": []}}  # (refused with it)
    data = with_deltas(*({"stop_reason": "end_turn", "container": big, "_top": later} for _ in range(50)))
    assert outcome_of(ROUTE, data, limits=Limits(max_item_chars=size)) == ("complete", None)
    over, _ = check(ROUTE, data, limits=Limits(max_item_chars=size - 1))
    assert (over.outcome.value, over.stage, over.details) == ("buffer_limit", "items", None)  # nothing kept
    # Retained: the 50th container costs what the first did, since each replaces the one before.
    once = with_deltas({"stop_reason": "end_turn", "container": big, "_top": later})
    need = replay(ROUTE, [once]).retained_chars
    assert outcome_of(ROUTE, data, limits=Limits(max_retained_chars=need)) == ("complete", None)
    # The container trips it (the context management after it would still fit, and is not taken).
    short, _ = check(ROUTE, once, limits=Limits(max_retained_chars=need - len(json.dumps(later["context_management"]))
                                                 - 1))
    assert (short.outcome.value, short.stage, short.details) == ("buffer_limit", "retained", None)


def test_a_detail_a_later_delta_removes_is_no_longer_charged() -> None:
    dropped = with_deltas({"stop_reason": "pause_turn", "stop_details": {**REFUSAL_DETAILS, "explanation": "x" * 500}},
                          {"stop_reason": "end_turn"})
    never = with_deltas({"stop_reason": "pause_turn"}, {"stop_reason": "end_turn"})
    session = replay(ROUTE, [dropped])
    assert session.result is not None and session.result.details is None
    assert session.retained_chars == replay(ROUTE, [never]).retained_chars


@pytest.mark.parametrize("top", [{"usage": {"output_tokens": 3}}, {}], ids=["with-usage", "without-usage"])
def test_an_unpaired_surrogate_in_a_detail_keeps_the_answer_from_committing(top: dict[str, Any]) -> None:
    details = {**REFUSAL_DETAILS, "explanation": "\\ud800"}
    data = with_deltas({"stop_reason": "refusal", "stop_details": details, "_top": top})
    result, _ = check(ROUTE, data.replace(b"\\\\ud800", b"\\ud800"))
    assert (result.outcome.value, result.stage) == ("payload_error", "unpaired_surrogate")
    assert result.details == {"stop_details": {**REFUSAL_DETAILS, "explanation": "\ufffd"}}  # shown, encodable


# -- recorded (simonw/llm-anthropic, Apache-2.0) ------------------------------------------------------------------


def _recorded(name: str) -> bytes:
    return (LOCAL / "simonw-llm" / f"llm-anthropic__{name}.sse").read_bytes()


def test_two_recorded_parallel_tool_calls_with_empty_input_fragments_both_become_ready_in_order() -> None:
    # Text, then two tool_use blocks for the same tool, each with one input_json_delta of "" (an empty input is {}).
    result, updates = check(ROUTE, _recorded("test_tools.interaction0"), tools={"pelican_name_generator": {}})
    assert (result.outcome.value, result.stop_reason) == ("complete", "tool_use")
    assert [(c.name, c.arguments, c.ready) for c in result.tool_calls] == [("pelican_name_generator", {}, True)] * 2
    assert len({c.id for c in result.tool_calls}) == 2
    assert [b["type"] for b in result.assistant_message["content"]] == ["text", "tool_use", "tool_use"]
    # One call after the other, each validated as its block stops; ready only at the commit.
    assert [(u["call"], u["state"], u["ready"]) for u in updates if u["kind"] == "tool_call"] == [
        (n, state, False) for n in (0, 1) for state in ("streaming", "closed", "valid")]


def test_the_recorded_refusal_commits_no_text_and_keeps_why_in_its_details() -> None:
    result, _ = check(ROUTE, _recorded("test_refusal_raises.interaction0"))
    assert (result.outcome.value, result.stop_reason, result.text, result.tool_calls) == ("complete", "refusal", "",
                                                                                          ())
    assert result.details is not None and result.details["stop_details"]["category"] == "reasoning_extraction"
