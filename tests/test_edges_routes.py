"""What every route shares, at its edges: the contracts as data, the envelope step, error payloads,
stop-reason verdicts, and the ceilings kept in ``webclient/_routes/_base.py`` (every chunking).

Found by mutation testing (``build_scripts/mutation.py``): each test fails if a check, a branch or a
ceiling of the base accumulator is changed. They run without the session's safety net
(``no_safety_net``), so a malformed field must be classified by an explicit check.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.route_fixtures import check, outcome_of, replay, sse
from webclient import Limits
from webclient._routes import ROUTES, StopCategory
from webclient._updates import TOOL_CALL_KINDS

pytestmark = pytest.mark.usefixtures("no_safety_net")

CHAT, RESPONSES, ANTHROPIC, GEMINI = "openai-chat", "openai-responses", "anthropic-messages", "gemini"

#: Roles each route's ``content_types`` may name (its module docstring says what each is).
ROLES = {
    CHAT: {f"call:{kind}" for kind in TOOL_CALL_KINDS},
    RESPONSES: {"message", "reasoning", "hosted", "part", "summary_part"} | {f"call:{k}" for k in TOOL_CALL_KINDS},
    ANTHROPIC: {"text", "thinking", "opaque", "call:function", "server_call", "result", "compaction"},
    GEMINI: {"data:text", "data:call:function", "data:item", "meta", "candidate:item", "candidate:citations"},
}


# -- the contracts as data ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ROUTES))
def test_every_vocabulary_entry_of_a_contract_is_a_named_string(name: str) -> None:
    contract = ROUTES[name].contract
    for field in ("text_delta", "tool_input_delta", "block_open", "block_close", "terminal", "error", "usage",
                  "keep_alive"):
        entries = getattr(contract, field)
        assert all(isinstance(e, str) and len(e) > 2 for e in entries), field
    assert set(contract.content_types.values()) <= ROLES[name]
    assert all(contract.content_types.values())
    assert {c.value for c in StopCategory} == {"success", "length", "filter", "failure"}


def test_chat_calls_of_each_type_have_the_kind_of_that_name() -> None:
    assert dict(ROUTES[CHAT].contract.content_types) == {"function": "call:function", "custom": "call:custom"}


# -- the envelope step -------------------------------------------------------------------------------

def chat(*choices: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "choices": list(choices), **extra}


def ch(index: Any = 0, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    return {"index": index, "delta": delta, "finish_reason": finish}


@pytest.mark.parametrize("choices", [{}, "", 0, False, {"0": ch()}], ids=["object", "empty-string", "zero",
                                                                          "false", "keyed"])
def test_choices_that_are_not_a_list_are_envelope_even_when_empty(choices: Any) -> None:
    data = sse(chat(ch(content="a", finish="stop")), {"id": "x", "choices": choices}, "[DONE]")
    assert outcome_of(CHAT, data) == ("protocol_error", "envelope")
    assert outcome_of(GEMINI, sse({"candidates": choices})) == ("protocol_error", "envelope")


@pytest.mark.parametrize("index", [True, 1.0, "1"], ids=["true", "float", "string"])
def test_a_choice_index_that_is_not_an_int_is_envelope_even_when_it_equals_a_known_one(index: Any) -> None:
    data = sse(chat(ch(0, content="a"), ch(1, content="b")), chat(ch(index, content="c")),
               chat(ch(0, finish="stop"), ch(1, finish="stop")), "[DONE]")
    result, _ = check(CHAT, data)
    assert (result.outcome.value, result.stage, [c.text for c in result.choices]) == (
        "protocol_error", "envelope", ["a", "b"])


def test_a_choice_without_an_index_is_choice_zero() -> None:
    data = sse({"choices": [{"delta": {"content": "a"}}]}, chat(ch(0, content="b", finish="stop")), "[DONE]")
    result, _ = check(CHAT, data)
    assert (result.outcome.value, result.text) == ("complete", "ab")


def test_the_choice_ceiling_counts_choices_not_chunks() -> None:
    data = sse(chat(ch(0, content="a"), ch(1, content="b")), chat(ch(0, content="c"), ch(1, content="d")),
               chat(ch(0, finish="stop"), ch(1, finish="stop")), "[DONE]")
    assert outcome_of(CHAT, data, limits=Limits(max_blocks=2)) == ("complete", None)
    result, _ = check(CHAT, data, limits=Limits(max_blocks=1))
    assert (result.outcome.value, result.stage, [c.text for c in result.choices]) == ("buffer_limit", "blocks", ["a"])


@pytest.mark.parametrize("route", [CHAT, GEMINI])
def test_an_error_event_is_upstream_error_whatever_its_data(route: str) -> None:
    cases = (("not json", None), ("[1]", None), ('{"error": "boom"}', None), ('{"code": "x y"}', "[REDACTED]"))
    for data, code in cases:
        result, _ = check(route, sse(("error", data)))
        assert (result.outcome.value, result.stage) == ("upstream_error", "error_event")
        assert result.provider_error is not None and result.provider_error.to_dict() == {"type": None, "code": code}
    result, _ = check(route, sse(("error", {"error": {"status": "UNAVAILABLE", "code": 503}})))
    assert result.provider_error is not None and result.provider_error.to_dict() == {"type": "UNAVAILABLE",
                                                                                    "code": "503"}


@pytest.mark.parametrize("error", [None, {}, "", 0, False])
def test_an_empty_error_field_in_a_chunk_is_not_an_error(error: Any) -> None:
    data = sse(chat(ch(content="a", finish="stop"), error=error), "[DONE]")
    assert outcome_of(CHAT, data) == ("complete", None)


def test_an_error_field_that_is_not_an_object_is_still_upstream_error_without_type_or_code() -> None:
    result, _ = check(CHAT, sse(chat(ch(content="a")), {"error": "Internal error SECRET"}))
    assert (result.outcome.value, result.stage, result.text) == ("upstream_error", "error_object", "a")
    assert result.provider_error is not None and result.provider_error.to_dict() == {"type": None, "code": None}


def test_a_flat_error_event_of_a_typed_route_keeps_its_code() -> None:
    created = {"type": "response.created", "response": {"id": "resp_1"}}
    result, _ = check(RESPONSES, sse(("response.created", created), ("error", {"type": "error", "code": "E1"})))
    assert (result.outcome.value, result.stage) == ("upstream_error", "error_event")
    assert result.provider_error is not None and result.provider_error.to_dict() == {"type": None, "code": "E1"}


@pytest.mark.parametrize("kind", [None, 5, ["message_start"], {"x": 1}], ids=["missing", "number", "list", "object"])
def test_a_typed_event_whose_type_is_not_a_string_is_envelope(kind: Any) -> None:
    start = {"type": "message_start", "message": {"id": "m", "usage": {}}}
    bad: dict[str, Any] = {"index": 0} if kind is None else {"type": kind, "index": 0}
    assert outcome_of(ANTHROPIC, sse(start, bad)) == ("protocol_error", "envelope")


def test_identity_takes_the_first_non_empty_strings() -> None:
    data = sse(chat(ch(content="a"), id=5, model=["m"]), chat(ch(content="b"), id="", model=""),
               chat(ch(finish="stop"), id="chatcmpl-7", model="m-7"), chat(id="chatcmpl-8", model="m-8"), "[DONE]")
    result, _ = check(CHAT, data)
    assert (result.response_id, result.model) == ("chatcmpl-7", "m-7")


# -- stop reasons across choices -----------------------------------------------------------------------

def test_the_first_choice_in_index_order_whose_stop_does_not_commit_decides() -> None:
    data = sse(chat(ch(1, content="b", finish="content_filter")), chat(ch(0, content="a", finish="length")), "[DONE]")
    result, _ = check(CHAT, data)
    assert (result.outcome.value, result.stop_reason) == ("truncated", "length")
    ok = sse(chat(ch(1, content="b", finish="tool_calls")), chat(ch(0, content="a", finish="stop")), "[DONE]")
    assert check(CHAT, ok)[0].stop_reason == "stop"


def test_an_accepted_reason_commits_whatever_its_category_and_others_do_not() -> None:
    data = sse(chat(ch(0, content="a", finish="content_filter")), "[DONE]")
    assert outcome_of(CHAT, data, accepted_stop_reasons=["content_filter"]) == ("complete", None)
    assert outcome_of(CHAT, data, accepted_stop_reasons=["stop"]) == ("truncated", "stop_reason")
    odd = sse(chat(ch(0, content="a", finish="eos")), "[DONE]")
    assert outcome_of(CHAT, odd, accepted_stop_reasons=["eos"]) == ("complete", None)
    result, _ = check(CHAT, odd, accepted_stop_reasons=["stop"])
    assert (result.outcome.value, result.stage, result.telemetry.stop_reason) == ("protocol_error",
                                                                                "unrecognized_stop", "unrecognized")


# -- retained objects: signatures, citations, items --------------------------------------------------------

def anthropic(*events: dict[str, Any]) -> bytes:
    start = {"type": "message_start", "message": {"id": "m", "usage": {}}}
    end = [{"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"}]
    return sse(*((e["type"], e) for e in [start, *events, *end]))


def block(index: int, content: dict[str, Any], *deltas: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "content_block_start", "index": index, "content_block": content},
            *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
            {"type": "content_block_stop", "index": index}]


def test_a_replaced_signature_counts_once_against_the_signature_ceiling() -> None:
    events = block(0, {"type": "thinking", "thinking": "", "signature": ""},
                   {"type": "signature_delta", "signature": "abcd"}, {"type": "signature_delta", "signature": "wxyz"})
    result, _ = check(ANTHROPIC, anthropic(*events), limits=Limits(max_signature_chars=4))
    assert result.outcome.value == "complete"
    assert result.assistant_message["content"][0]["signature"] == "wxyz"
    assert outcome_of(ANTHROPIC, anthropic(*events), limits=Limits(max_signature_chars=3)) == ("buffer_limit",
                                                                                              "signatures")


def test_the_citation_ceiling_counts_citations() -> None:
    cite = {"type": "char_location", "cited_text": "x"}
    events = block(0, {"type": "text", "text": ""}, *({"type": "citations_delta", "citation": cite},) * 2)
    assert outcome_of(ANTHROPIC, anthropic(*events), limits=Limits(max_citations=2)) == ("complete", None)
    result, _ = check(ANTHROPIC, anthropic(*events), limits=Limits(max_citations=1))
    assert (result.outcome.value, result.stage, result.citations) == ("buffer_limit", "citations", (cite,))


def test_a_citation_whose_event_passes_the_item_ceiling_is_not_kept() -> None:
    cite = {"type": "char_location", "cited_text": "x" * 30}
    data = anthropic(*block(0, {"type": "text", "text": ""}, {"type": "citations_delta", "citation": cite}))
    def kept_under(ceiling: int) -> bool:
        result = replay(ANTHROPIC, [data], limits=Limits(max_item_chars=ceiling)).result
        return result is not None and bool(result.citations)

    kept = next(n for n in range(1, 2000) if kept_under(n))
    result, _ = check(ANTHROPIC, data, limits=Limits(max_item_chars=kept - 1))
    assert (result.outcome.value, result.stage, result.citations) == ("buffer_limit", "items", ())
    assert check(ANTHROPIC, data, limits=Limits(max_item_chars=kept))[0].outcome.value == "complete"


def test_an_event_holding_several_kept_objects_is_charged_to_the_item_ceiling_once() -> None:
    source = {"uri": "u"}
    event = {"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "STOP",
                             "citationMetadata": {"citationSources": [source, source]},
                             "groundingMetadata": {"q": 1}}]}
    data = sse(event)
    size = len(data) - len(b"data: \n\n")
    assert outcome_of(GEMINI, data, limits=Limits(max_item_chars=size)) == ("complete", None)
    assert outcome_of(GEMINI, data, limits=Limits(max_item_chars=size - 1)) == ("buffer_limit", "items")


# -- what a failure leaves behind ------------------------------------------------------------------

def fn(index: int, name: str, args: str) -> dict[str, Any]:
    return {"index": index, "id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": args}}


def test_a_text_delta_refused_by_the_retained_ceiling_ends_its_chunk_before_the_chunk_s_tool_call() -> None:
    # One character short of the text's charge: the ceiling refuses it, and the call in the same delta (whose
    # charge would fit in the room the text left) is not taken either.
    data = sse(chat(ch(0, content="x" * 100, tool_calls=[fn(0, "f", "")])), chat(ch(0, finish="tool_calls")), "[DONE]")
    taken = next(n for n in range(1, 5000) if replay(CHAT, [data], limits=Limits(max_retained_chars=n)).result.text)
    result, updates = check(CHAT, data, limits=Limits(max_retained_chars=taken - 1))
    assert (result.outcome.value, result.stage, result.text, result.tool_calls, updates) == (
        "buffer_limit", "retained", "", (), [])


def test_after_a_failing_choice_the_rest_of_the_chunk_is_not_taken() -> None:
    data = sse(chat(ch(0, content="a")), {"choices": [{"index": 0, "delta": "x"}, ch(1, content="b")]}, "[DONE]")
    result, _ = check(CHAT, data)
    assert (result.outcome.value, result.stage, [c.text for c in result.choices]) == ("protocol_error", "envelope",
                                                                                     ["a"])


@pytest.mark.parametrize(
    "delta",
    [{"annotations": [5, {"type": "url_citation"}]}, {"tool_calls": [5, fn(1, "g", "{}")]}],
    ids=["annotations", "tool-calls"],
)
def test_after_a_failing_element_of_a_list_the_rest_of_the_list_is_not_taken(delta: dict[str, Any]) -> None:
    result, updates = check(CHAT, sse(chat(ch(0, **delta)), chat(ch(0, finish="stop")), "[DONE]"))
    assert (result.outcome.value, result.stage, result.citations, result.tool_calls, updates) == (
        "protocol_error", "envelope", (), (), [])


def test_an_unknown_type_that_fails_closed_is_not_kept_either() -> None:
    frag = {"index": 0, "id": "c", "type": "hologram"}
    result, _ = check(CHAT, sse(chat(ch(0, tool_calls=[frag])), chat(ch(0, finish="stop")), "[DONE]"))
    assert (result.outcome.value, result.stage, result.items) == ("protocol_error", "unknown_type", ())


def test_an_accumulator_built_without_options_fails_closed_on_unknown_types() -> None:
    from webclient import DEFAULT_LIMITS, SSEEvent
    from webclient._toolcalls import ToolRegistry

    acc = ROUTES[CHAT].accumulator(DEFAULT_LIMITS, ToolRegistry(None), None)
    acc.handle(SSEEvent("message", '{"choices": [{"index": 0, "delta": {"tool_calls": [{"type": "x"}]}}]}', ""))
    assert acc.failure is not None and acc.failure.stage == "unknown_type"


def test_after_a_call_fails_validation_the_choices_other_calls_are_not_closed() -> None:
    data = sse(chat(ch(0, tool_calls=[fn(0, "f", "{"), fn(1, "g", "{}")])), chat(ch(0, finish="tool_calls")),
               "[DONE]")
    result, _ = check(CHAT, data)
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_json")
    assert [c.state for c in result.tool_calls] == ["invalid", "streaming"]


def test_every_call_of_a_choice_cut_by_length_is_closed_and_none_is_validated() -> None:
    data = sse(chat(ch(0, tool_calls=[fn(0, "f", "{"), fn(1, "g", "{}")])), chat(ch(0, finish="length")), "[DONE]")
    result, updates = check(CHAT, data)
    assert (result.outcome.value, [c.state for c in result.tool_calls]) == ("truncated", ["closed", "closed"])
    assert [u["state"] for u in updates if u["kind"] == "tool_call"] == ["streaming", "streaming", "closed", "closed"]
    assert not any(u.get("ready") for u in updates)


def test_open_choices_and_open_calls_are_both_counted_as_open() -> None:
    data = sse(chat(ch(0, content="a"), ch(1, tool_calls=[fn(0, "f", "{")])))
    result, _ = check(CHAT, data)
    assert (result.outcome.value, result.telemetry.open_payload_accumulator_count) == ("truncated", 3)


def test_a_whole_call_past_the_input_ceiling_is_never_closed_or_validated() -> None:
    data = sse({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {"k": "vvvv"}}}]},
                                "finishReason": "STOP"}]})
    result, updates = check(GEMINI, data, limits=Limits(max_tool_input_chars=5))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "tool_input")
    assert [(c.state, c.arguments) for c in result.tool_calls] == [("streaming", None)]
    assert [u.get("state") for u in updates] == ["streaming"]


def test_a_signature_that_is_not_a_string_or_past_the_ceiling_is_not_kept() -> None:
    for bad, limits, stage in ((5, Limits(), "envelope"), ("abcd", Limits(max_signature_chars=3), "signatures")):
        events = block(0, {"type": "thinking", "thinking": "", "signature": ""},
                       {"type": "signature_delta", "signature": bad})
        result, _ = check(ANTHROPIC, anthropic(*events), limits=limits)
        assert (result.outcome.value, result.stage) == ("protocol_error" if stage == "envelope" else "buffer_limit",
                                                        stage)
        assert result.assistant_message["content"][0]["signature"] == ""


def test_routes_without_a_refusal_channel_report_an_empty_refusal() -> None:
    result, _ = check(ANTHROPIC, anthropic(*block(0, {"type": "text", "text": "a"})))
    assert (result.text, result.refusal, result.choices[0].refusal) == ("a", "", "")


def test_a_contract_cannot_be_changed_after_it_is_made() -> None:
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        ROUTES[CHAT].contract.name = "x"  # type: ignore[misc]


def test_an_error_event_holding_a_chunk_takes_nothing_of_it() -> None:
    chunk = chat(ch(content="x", finish="stop"))
    result, _ = check(CHAT, sse(("error", chunk), "[DONE]"))
    assert (result.outcome.value, result.stage, result.text, result.stop_reason) == (
        "upstream_error", "error_event", "", None)


def test_calls_opened_without_a_type_are_function_calls() -> None:
    anthropic = sse(*((e["type"], e) for e in (
        {"type": "message_start", "message": {"id": "m", "model": "c", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f",
                                                                       "input": {"a": 1}}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}, {"type": "message_stop"})))
    gemini = sse({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]},
                                  "finishReason": "STOP", "index": 0}]})
    legacy = sse(chat(ch(function_call={"name": "f", "arguments": "{}"})), chat(ch(finish="function_call")), "[DONE]")
    for route, data in ((ANTHROPIC, anthropic), (GEMINI, gemini), (CHAT, legacy)):
        result, _ = check(route, data)
        assert [(c.name, c.kind, c.state) for c in result.tool_calls] == [("f", "function", "valid")], route
