"""The small value modules every layer leans on: the response gate, the ceilings, the outcome set.

Pins what the mutation run of ``_gate``, ``_limits`` and ``_outcome`` found no test for:

* the gate (:func:`webclient._gate.check_response`) on its own, with its default success status of 200,
  and the media type essence it compares (whitespace, parameters, case);
* the default ceilings of :mod:`webclient._limits` (the trip points every session has unless the
  caller overrides them), the refusal of a ceiling below one, and what its accounting constants do,
  seen from outside: the retained charge of a new choice (512) and of a call's entries (64 each), a
  usage object charged by its event up to 4096 characters, tool input nested up to 512 levels, and
  ``retry`` values of up to 16 digits;
* the closed outcome set with its wire spellings, and ``Failure`` / ``Limits`` as immutable values
  that hold their declared fields only.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.route_fixtures import sse
from webclient import DEFAULT_LIMITS, Failure, Limits, Outcome, RetryField, SSEParser, StreamSession, UsageError
from webclient._gate import check_response, is_event_stream, media_type_essence

# --- the gate --------------------------------------------------------------------------------------


def test_the_gate_accepts_status_200_and_an_event_stream_when_no_success_status_is_given() -> None:
    assert check_response(200, "text/event-stream") is None
    assert check_response(201, "text/event-stream") == Failure(Outcome.PROTOCOL_ERROR, "status")


def test_the_gate_checks_the_status_before_the_media_type() -> None:
    assert check_response(500, "text/html") == Failure(Outcome.PROTOCOL_ERROR, "status")
    assert check_response(200, "text/html") == Failure(Outcome.PROTOCOL_ERROR, "media_type")
    assert check_response(204, None, success_status=204) == Failure(Outcome.PROTOCOL_ERROR, "media_type")
    assert check_response(204, "text/event-stream", success_status=204) is None


@pytest.mark.parametrize(("content_type", "essence"), [
    ("text/event-stream", "text/event-stream"),
    (" \t\r\nText/Event-Stream \t\r\n", "text/event-stream"),
    ("TEXT/EVENT-STREAM;charset=utf-8;x=y", "text/event-stream"),
    ("text/html ; charset=utf-8", "text/html"),
    ("  ; charset=utf-8", None),
    ("", None),
    (None, None),
])
def test_the_media_type_essence_is_the_trimmed_lowercase_type_before_any_parameter(
    content_type: str | None, essence: str | None
) -> None:
    assert media_type_essence(content_type) == essence
    assert is_event_stream(content_type) is (essence == "text/event-stream")


@pytest.mark.parametrize(("status", "content_type"), [(True, "text/event-stream"), ("200", "text/event-stream"),
                                                      (200.0, "text/event-stream"), (200, b"text/event-stream")])
def test_a_status_or_content_type_of_the_wrong_type_is_a_usage_error(status: object, content_type: object) -> None:
    with pytest.raises(UsageError):
        check_response(status, content_type)  # type: ignore[arg-type]


# --- the outcome set --------------------------------------------------------------------------------


def test_the_outcome_set_is_closed_and_spelled_as_on_the_wire() -> None:
    assert [outcome.value for outcome in Outcome] == [
        "complete", "truncated", "protocol_error", "decode_error", "payload_error", "buffer_limit",
        "upstream_error", "timeout", "cancelled",
    ]
    assert Outcome("upstream_error") is Outcome.UPSTREAM_ERROR


def test_a_failure_is_an_immutable_value_of_its_three_fields_only() -> None:
    failure = Failure(Outcome.TIMEOUT, "idle")
    assert (failure.outcome, failure.stage, failure.offset) == (Outcome.TIMEOUT, "idle", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        failure.stage = "total"  # type: ignore[misc]
    assert not hasattr(failure, "__dict__"), "no room for anything but outcome, stage and offset"
    with pytest.raises((AttributeError, TypeError)):
        object.__setattr__(failure, "text", "payload")
    assert failure == Failure(Outcome.TIMEOUT, "idle", None) and hash(failure) == hash(Failure(Outcome.TIMEOUT, "idle"))


# --- the ceilings ------------------------------------------------------------------------------------

#: The documented default of every ceiling (``webclient/_limits.py`` gives the reason for each number).
DEFAULT_CEILINGS = {
    "max_line_chars": 4 * 1024 * 1024,
    "max_event_chars": 8 * 1024 * 1024,
    "max_text_chars": 16 * 1024 * 1024,
    "max_tool_input_chars": 1024 * 1024,
    "max_tool_calls": 128,
    "max_blocks": 1024,
    "max_item_chars": 32 * 1024 * 1024,
    "max_signature_chars": 4 * 1024 * 1024,
    "max_citations": 4096,
    "max_retained_chars": 16 * 1024 * 1024,
}


def test_every_ceiling_defaults_to_its_documented_value() -> None:
    assert dataclasses.asdict(Limits()) == DEFAULT_CEILINGS
    assert Limits() == DEFAULT_LIMITS


def retained_after(*events: object) -> int:
    session = StreamSession("openai-chat")
    session.open(200, "text/event-stream")
    session.feed(sse(*events))
    assert not session.done
    return session.retained_chars


def test_a_new_choice_is_charged_512_characters_besides_its_text() -> None:
    assert retained_after({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]}) == 512 + 2


def test_a_new_tool_call_is_charged_64_characters_per_entry_besides_its_id_and_name() -> None:
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
    charged = retained_after({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]})
    assert charged == 512 + 3 * 64 + len("c") + len("f"), "the choice; the call, its id and its index entry"


USAGE = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}


def usage_event(size: int) -> dict[str, object]:
    """A Chat usage chunk whose ``data`` is exactly ``size`` characters (``sse`` writes compact JSON)."""
    event: dict[str, object] = {"choices": [], "usage": USAGE, "x": ""}
    event["x"] = "p" * (size - len(sse(event)) + len("data: \n\n"))
    assert len(sse(event)) == size + len("data: \n\n")
    return event


def test_a_usage_object_is_charged_its_events_length_up_to_4096_characters_and_its_own_above() -> None:
    assert retained_after(usage_event(4096)) == 4096
    assert retained_after(usage_event(4097)) == len(json.dumps(USAGE)) == 63


@pytest.mark.parametrize(("depth", "outcome"), [(512, "complete"), (513, "payload_error")])
def test_a_tool_input_may_nest_512_levels_and_one_more_is_invalid_json(depth: int, outcome: str) -> None:
    arguments = '{"a":' * (depth - 1) + "[]" + "}" * (depth - 1)
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
    session = StreamSession("openai-chat")
    session.open(200, "text/event-stream")
    session.feed(sse({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": "tool_calls"}]},
                     "[DONE]"))
    result = session.finish()
    assert (result.outcome.value, result.stage) == (outcome, None if outcome == "complete" else "tool_json")


@pytest.mark.parametrize(("digits", "accepted"), [(16, True), (17, False)])
def test_a_retry_field_of_up_to_16_digits_is_applied(digits: int, accepted: bool) -> None:
    value = "1" * digits
    items = SSEParser().feed(f"retry: {value}\n")
    assert items == ([RetryField(int(value))] if accepted else [])


@pytest.mark.parametrize("field", list(DEFAULT_CEILINGS))
def test_every_ceiling_accepts_one_and_refuses_zero_negatives_bools_and_non_integers(field: str) -> None:
    assert getattr(Limits(**{field: 1}), field) == 1
    bad_values: tuple[object, ...] = (0, -1, True, False, 1.0, "1", None)
    for bad in bad_values:
        with pytest.raises(UsageError):
            Limits(**{field: bad})  # type: ignore[arg-type]


def test_limits_are_an_immutable_value_of_their_ceilings_only() -> None:
    limits = Limits(max_line_chars=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.max_line_chars = 11  # type: ignore[misc]
    assert not hasattr(limits, "__dict__")
    assert limits == Limits(max_line_chars=10) != Limits() and hash(limits) == hash(Limits(max_line_chars=10))
