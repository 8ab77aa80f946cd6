"""The JSON forms of updates and results (``to_dict``): the wire contract that the browser bridge hands
to the JS kit, that ``replay`` and ``events`` print, and that users' automation reads. The keys are
written out here, in the order the docstrings give, rather than read from the classes, so a renamed,
dropped or reordered key fails; every value is checked against the object it came from."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.route_fixtures import sse
from webclient import Outcome, StreamSession
from webclient._routes import ROUTES
from webclient._updates import (
    TOOL_CALL_KINDS,
    ChoiceResult,
    Committed,
    Failed,
    ProviderError,
    StreamResult,
    TextDelta,
    ToolCall,
    ToolCallUpdate,
    ToolInputDelta,
)

RESULT_KEYS = ["route", "outcome", "stage", "http_status", "stop_reason", "committed", "text", "refusal", "reasoning",
               "usage", "provider_error", "tool_calls", "choices", "items", "assistant_message", "response_id",
               "model", "citations", "logprobs", "resume", "details", "telemetry"]
CHOICE_KEYS = ["index", "text", "refusal", "reasoning", "stop_reason", "tool_calls", "items", "citations", "logprobs",
               "assistant_message"]
CALL_KEYS = ["call", "id", "name", "kind", "state", "arguments", "input", "ready"]
UPDATE_KEYS = {
    "text_delta": ["kind", "channel", "index", "text"],
    "tool_input_delta": ["kind", "call", "id", "name", "fragment"],
    "tool_call": ["kind", "call", "id", "name", "state", "arguments", "ready"],
    "committed": ["kind", "result"],
    "failed": ["kind", "outcome", "stage", "result"],
}
PROVISIONAL = {"text_delta": True, "tool_input_delta": True, "tool_call": False, "committed": False, "failed": False}


def _chat_with_a_call(*, finish: bool) -> bytes:
    """A Chat answer with text and one tool call, in two argument fragments; with ``finish`` it commits."""
    head = {"id": "chatcmpl-1", "model": "m-1", "choices": [
        {"index": 0, "delta": {"role": "assistant", "content": "Hi"}, "finish_reason": None}]}
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q":'}}
    first = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
    rest = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": ' "x"}'}}]}, "finish_reason": None}]}
    end = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
           "usage": {"total_tokens": 9}}
    return sse(head, first, rest, end, "[DONE]") if finish else sse(head, first, rest)


def _updates(data: bytes) -> list[Any]:
    session = StreamSession("openai-chat")
    updates = [*session.open(200, "text/event-stream"), *session.feed(data)]
    session.finish()
    assert session.final_update is not None
    return [*updates, session.final_update]


def _check_call(wire: dict[str, Any], call: ToolCall) -> None:
    assert list(wire) == CALL_KEYS
    assert wire == {"call": call.call, "id": call.id, "name": call.name, "kind": call.kind, "state": call.state,
                    "arguments": call.arguments, "input": call.input_text, "ready": call.ready}


def _check_result(wire: dict[str, Any], result: StreamResult) -> None:
    assert list(wire) == RESULT_KEYS
    assert json.loads(json.dumps(wire)) == wire  # JSON-able as it stands
    scalars = {key: getattr(result, key) for key in ("route", "stage", "http_status", "stop_reason", "committed",
                                                     "text", "refusal", "reasoning", "usage", "response_id", "model",
                                                     "logprobs", "assistant_message")}
    assert {key: wire[key] for key in scalars} == scalars
    assert wire["outcome"] == result.outcome.value
    assert wire["items"] == list(result.items) and wire["citations"] == list(result.citations)
    assert wire["telemetry"] == result.telemetry.to_dict()
    assert wire["resume"] == (None if result.resume is None else result.resume.to_dict())
    assert wire["provider_error"] == (None if result.provider_error is None else result.provider_error.to_dict())
    assert len(wire["tool_calls"]) == len(result.tool_calls)
    for call_wire, call in zip(wire["tool_calls"], result.tool_calls, strict=True):
        _check_call(call_wire, call)
    assert len(wire["choices"]) == len(result.choices)
    for choice_wire, choice in zip(wire["choices"], result.choices, strict=True):
        _check_choice(choice_wire, choice)


def _check_choice(wire: dict[str, Any], choice: ChoiceResult) -> None:
    assert list(wire) == CHOICE_KEYS
    assert {k: wire[k] for k in ("index", "text", "refusal", "reasoning", "stop_reason", "logprobs",
                                 "assistant_message")} == {
        "index": choice.index, "text": choice.text, "refusal": choice.refusal, "reasoning": choice.reasoning,
        "stop_reason": choice.stop_reason, "logprobs": choice.logprobs, "assistant_message": choice.assistant_message}
    assert wire["items"] == list(choice.items) and wire["citations"] == list(choice.citations)
    for call_wire, call in zip(wire["tool_calls"], choice.tool_calls, strict=True):
        _check_call(call_wire, call)


@pytest.mark.parametrize("finish", [True, False], ids=["committed", "truncated"])
def test_every_update_s_wire_form_has_its_documented_keys_and_values(finish: bool) -> None:
    updates = _updates(_chat_with_a_call(finish=finish))
    kinds = [u.kind for u in updates]
    assert {"text_delta", "tool_input_delta", "tool_call"} <= set(kinds)
    assert kinds[-1] == ("committed" if finish else "failed")
    for update in updates:
        wire = update.to_dict()
        assert list(wire) == UPDATE_KEYS[update.kind] and wire["kind"] == update.kind
        assert update.provisional is PROVISIONAL[update.kind]
        if isinstance(update, TextDelta):
            assert (wire["channel"], wire["index"], wire["text"]) == (update.channel, update.index, update.text)
        elif isinstance(update, ToolInputDelta):
            assert (wire["call"], wire["id"], wire["name"], wire["fragment"]) == (
                update.call, update.id, update.name, update.fragment)
        elif isinstance(update, ToolCallUpdate):
            assert (wire["call"], wire["id"], wire["name"], wire["state"], wire["arguments"], wire["ready"]) == (
                update.call, update.id, update.name, update.state, update.arguments, update.ready)
        elif isinstance(update, Failed):
            assert (wire["outcome"], wire["stage"]) == (update.outcome.value, update.stage) == ("truncated", "eof")
            _check_result(wire["result"], update.result)
        else:
            assert isinstance(update, Committed)
            _check_result(wire["result"], update.result)
    final = updates[-1].result
    assert final.committed is finish and final.tool_calls[0].ready is finish


def test_the_committed_wire_form_carries_the_call_ready_to_run() -> None:
    committed = _updates(_chat_with_a_call(finish=True))[-1].to_dict()["result"]
    assert (committed["outcome"], committed["stop_reason"], committed["text"]) == ("complete", "tool_calls", "Hi")
    assert committed["tool_calls"] == [{"call": 0, "id": "call_1", "name": "lookup", "kind": "function",
                                        "state": "valid", "arguments": {"q": "x"}, "input": '{"q": "x"}',
                                        "ready": True}]
    assert committed["choices"][0]["tool_calls"] == committed["tool_calls"]
    assert (committed["response_id"], committed["model"], committed["usage"]) == ("chatcmpl-1", "m-1",
                                                                                  {"total_tokens": 9})


def test_a_provider_error_s_wire_form_is_its_type_and_code_only() -> None:
    session = StreamSession("gemini")
    session.open(200, "text/event-stream")
    session.feed(sse({"error": {"code": 429, "message": "m", "status": "RESOURCE_EXHAUSTED"}}))
    result = session.finish()
    assert result.outcome is Outcome.UPSTREAM_ERROR
    assert result.to_dict()["provider_error"] == {"type": "RESOURCE_EXHAUSTED", "code": "429"}


def test_with_telemetry_gives_a_copy_that_differs_only_in_its_telemetry() -> None:
    result = _updates(_chat_with_a_call(finish=True))[-1].result
    timed = result.with_telemetry(result.telemetry.with_fields(duration_ms=5.0))
    assert isinstance(timed, StreamResult) and timed is not result
    assert (timed.telemetry.duration_ms, result.telemetry.duration_ms) == (5.0, None)
    assert dataclasses.replace(timed, telemetry=result.telemetry) == result


def test_updates_and_their_parts_are_frozen() -> None:
    objects: list[Any] = [ProviderError("t", "c")]
    for finish in (True, False):
        updates = _updates(_chat_with_a_call(finish=finish))
        result = updates[-1].result
        objects += [*updates, result, result.choices[0], result.tool_calls[0], result.telemetry]
    assert {type(o).__name__ for o in objects} >= {"TextDelta", "ToolInputDelta", "ToolCallUpdate", "Committed",
                                                   "Failed", "StreamResult", "ChoiceResult", "ToolCall"}
    for obj in objects:
        for field in dataclasses.fields(obj):
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(obj, field.name, None)


def test_the_documented_call_kinds_are_exactly_the_kinds_the_routes_announce() -> None:
    """``ToolCall.kind`` is one of ``TOOL_CALL_KINDS``: every kind a route's contract can open a call of is
    listed (a client switching on the kind must know them all), and nothing else is."""
    announced = {role.removeprefix("call:") for route in ROUTES.values()
                 for role in route.contract.content_types.values() if role.startswith("call:")}
    assert announced == set(TOOL_CALL_KINDS) and len(TOOL_CALL_KINDS) == len(announced)
