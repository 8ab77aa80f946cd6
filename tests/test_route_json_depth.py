"""Untrusted JSON nesting is bounded before ``json.loads`` (Pyodide's stack would not survive it)."""

from __future__ import annotations

import pytest

from tests.route_fixtures import outcome_of, sse
from webclient._json import MAX_JSON_DEPTH, loads, too_deep
from webclient._toolcalls import parse_tool_input


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_up_to_the_limit_parses_and_one_more_level_is_refused() -> None:
    assert loads(nested(MAX_JSON_DEPTH)) is not None
    with pytest.raises(ValueError):
        loads(nested(MAX_JSON_DEPTH + 1))
    assert too_deep('{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1))


def test_brackets_inside_strings_and_many_shallow_brackets_are_not_depth() -> None:
    assert not too_deep('["' + "[" * 5000 + '\\"[["]')
    assert not too_deep("[" + ",".join(["[1]"] * 5000) + "]")
    assert not too_deep('{"k": "' + "{" * 600 + '"}')


@pytest.mark.parametrize("route", ["openai-chat", "openai-responses", "anthropic-messages", "gemini"])
def test_a_deeply_nested_envelope_is_protocol_error_on_every_route(route: str) -> None:
    data = ("data: " + nested(10_000) + "\n\n").encode()
    assert outcome_of(route, data) == ("protocol_error", "envelope")


def test_a_deeply_nested_tool_input_is_invalid_json() -> None:
    assert parse_tool_input('{"a": ' + nested(10_000) + "}") == (None, "tool_json")
    args = '{"a": ' + nested(MAX_JSON_DEPTH + 5) + "}"
    data = sse({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {
        "name": "f", "arguments": args}}]}, "finish_reason": "tool_calls"}]}, "[DONE]")
    assert outcome_of("openai-chat", data) == ("payload_error", "tool_json")
