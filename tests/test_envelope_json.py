"""The envelope step reads an event's JSON exactly as ``json.loads`` does.

The route base calls the scanner ``json.loads`` ends in directly and hands anything it does not
consume whole to the reference path (``webclient._json.loads``); these tests pin that the two
agree on every edge: whitespace around the object, trailing data, malformed objects (the scanner
signals some of them with ``StopIteration``, not ``ValueError``), non-object values, and the depth
ceiling.
"""

from __future__ import annotations

import json

import pytest

from tests.route_fixtures import check, sse
from webclient._json import MAX_JSON_DEPTH

OBJECT = '{"choices":[{"index":0,"delta":{"content":"hé 🙂"},"finish_reason":null}]}'
#: Data texts around a valid Chat chunk; json.loads decides whether each is one JSON object.
VARIANTS = [
    OBJECT,
    OBJECT + " ",
    OBJECT + "\t\r",
    " " + OBJECT,
    "\t " + OBJECT + "  ",
    OBJECT + "x",
    "x" + OBJECT,  # one stray character before the object (a scan that skipped it would read one)
    "{" + OBJECT,
    OBJECT + "{}",
    OBJECT + ",",
    OBJECT[:-1],
    OBJECT.replace('"content":"hé 🙂"', '"content":'),  # the scanner raises StopIteration here
    OBJECT.replace('"content"', "content"),
    OBJECT.replace("}]}", "},]}"),
    "\ufeff" + OBJECT,
    "[" + OBJECT + "]",
    '"' + OBJECT.replace('"', '\\"') + '"',
    "1",
    "null",
    "NaN",
]


def _json_loads_verdict(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        return "envelope"
    return "object" if isinstance(value, dict) else "envelope"


@pytest.mark.parametrize("text", VARIANTS, ids=range(len(VARIANTS)))
def test_a_chat_chunk_is_accepted_exactly_when_json_loads_reads_one_object(text: str) -> None:
    data = ("data: " + text + "\n\n").encode() + sse(
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, "[DONE]")
    result, _ = check("openai-chat", data)
    if _json_loads_verdict(text) == "object":
        assert (result.outcome.value, result.text) == ("complete", "hé 🙂")
    else:
        assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")


@pytest.mark.parametrize("text", [
    '{"type":"ping"}', '{"type":"ping"} ', ' {"type":"ping"}', '{"type":"ping"}}', '{"type":}', '{"type":"ping",}',
    '["ping"]',
])
def test_an_anthropic_event_is_accepted_exactly_when_json_loads_reads_one_object(text: str) -> None:
    start = {"type": "message_start", "message": {"id": "m", "model": "c", "usage": {}}}
    data = sse(("message_start", start)) + ("event: ping\ndata: " + text + "\n\n").encode() + sse(
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        ("message_stop", {"type": "message_stop"}))
    result, _ = check("anthropic-messages", data)
    if _json_loads_verdict(text) == "object":
        assert result.outcome.value == "complete"
    else:
        assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")


def test_an_object_nested_past_the_depth_ceiling_is_refused_even_though_json_loads_reads_it() -> None:
    deep = '{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1)
    assert isinstance(json.loads(deep), dict)
    shallow = '{"a":' * (MAX_JSON_DEPTH - 1) + "1" + "}" * (MAX_JSON_DEPTH - 1)
    end = sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, "[DONE]")
    result, _ = check("openai-chat", ("data: " + deep + "\n\n").encode() + end)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    result, _ = check("openai-chat", ("data: " + shallow + "\n\n").encode() + end)
    assert result.outcome.value == "complete"
