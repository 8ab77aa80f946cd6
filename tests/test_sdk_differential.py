"""Differential: the official SDK accumulators and webclient agree on text and tool arguments.

Peers (test-only dependencies): openai's ``ChatCompletionStreamState`` and anthropic's
``accumulate_event``. Each is fed the same complete SSE events the session consumed (the SDKs'
own decoders drop an unterminated last event too). A recording counts as *accepted by the SDK*
when the SDK consumes it without raising; the comparison covers every such recording that
webclient also accumulated to the end (outcome ``complete`` or ``truncated``; on a
protocol or upstream error webclient stops consuming by design).

Compared: the text (each choice's, for Chat), the tool names and arguments (the raw argument
string for Chat, since the SDK does not parse it; the parsed object for Anthropic, where the SDK
parses), and, for Anthropic, the thinking text.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.route_fixtures import Case, cases, replay
from webclient import EventStreamParser

pytestmark = pytest.mark.host

CHAT_CASES = [c for c in cases() if c.route == "openai-chat"]
ANTHROPIC_CASES = [c for c in cases() if c.route == "anthropic-messages"]


def _events(data: bytes) -> list[Any]:
    parser = EventStreamParser()
    events = [e for e in parser.feed(data) if hasattr(e, "data")]
    parser.close()
    return events


def _openai_snapshot(case: Case) -> Any | None:
    """Feed the SDK; ``None`` when it refuses the recording (raises)."""
    from openai._models import construct_type
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: Any = ChatCompletionStreamState()
    try:
        for event in _events(case.data):
            if event.data.startswith("[DONE]"):
                break
            payload = json.loads(event.data)
            if event.type == "error" or payload.get("error"):
                return None  # openai-python raises APIError here
            state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=payload))
        return state.current_completion_snapshot
    except Exception:
        return None


def _anthropic_snapshot(case: Case) -> Any | None:
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot = None
    json_bufs: dict[int, bytes] = {}
    try:
        for event in _events(case.data):
            if event.data.startswith("[DONE]"):
                continue
            payload = json.loads(event.data)
            if payload.get("type") == "error" or event.type == "error":
                return None  # anthropic-sdk-python raises on the error event
            snapshot = accumulate_event(event=payload, current_snapshot=snapshot, json_bufs=json_bufs)
        return snapshot
    except Exception:
        return None


def _ours(case: Case) -> Any:
    result = replay(case.route, [case.data]).result
    assert result is not None
    return result


@pytest.mark.parametrize("case", CHAT_CASES, ids=[c.id for c in CHAT_CASES])
def test_chat_text_and_tool_arguments_match_openai_stream_state(case: Case) -> None:
    pytest.importorskip("openai")
    snapshot = _openai_snapshot(case)
    ours = _ours(case)
    if snapshot is None or ours.outcome.value not in ("complete", "truncated"):
        pytest.skip("not accumulated to the end by both")
    sdk_texts = [c.message.content or "" for c in sorted(snapshot.choices, key=lambda c: c.index)]
    assert [c.text for c in ours.choices] == sdk_texts
    sdk_calls = [
        (t.function.name, t.function.arguments)
        for t in (sorted(snapshot.choices, key=lambda c: c.index)[0].message.tool_calls or [])
    ]
    assert [(c.name, c.input_text) for c in ours.tool_calls] == sdk_calls
    for call, (_, arguments) in zip(ours.tool_calls, sdk_calls, strict=True):
        if call.state == "valid":
            assert call.arguments == (json.loads(arguments) if arguments.strip() else {})


@pytest.mark.parametrize("case", ANTHROPIC_CASES, ids=[c.id for c in ANTHROPIC_CASES])
def test_anthropic_text_thinking_and_tool_inputs_match_the_sdk_accumulator(case: Case) -> None:
    pytest.importorskip("anthropic")
    snapshot = _anthropic_snapshot(case)
    ours = _ours(case)
    if snapshot is None or ours.outcome.value not in ("complete", "truncated"):
        pytest.skip("not accumulated to the end by both")
    blocks = snapshot.content
    assert ours.text == "".join(b.text for b in blocks if b.type == "text")
    assert ours.reasoning == "".join(b.thinking for b in blocks if b.type == "thinking")
    sdk_tools = [(b.name, b.input) for b in blocks if b.type == "tool_use"]
    assert [c.name for c in ours.tool_calls] == [name for name, _ in sdk_tools]
    for call, (_, sdk_input) in zip(ours.tool_calls, sdk_tools, strict=True):
        if call.state == "valid":
            assert call.arguments == sdk_input


def test_the_sdks_refuse_only_the_recordings_known_to_break_them() -> None:
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    refused = {c.id for c in CHAT_CASES if _openai_snapshot(c) is None}
    refused |= {c.id for c in ANTHROPIC_CASES if _anthropic_snapshot(c) is None}
    assert refused == {
        # in-stream provider errors: the SDKs raise (webclient: upstream_error)
        "test_groq__test_tool_use_failed_error_streaming.interaction0.sse",
        "test_openrouter__test_openrouter_stream_error.interaction0.sse",
        # the first tool call at index 1: ChatCompletionStreamState raises IndexError, webclient keys
        # calls by index in a dict and completes
        "openai-compatible__anthropic-fallback-tool-call.sse[as-recorded]",
        "openai-compatible__anthropic-fallback-tool-call.sse[terminated]",
    }
    with_calls = sum(1 for c in CHAT_CASES + ANTHROPIC_CASES if _ours(c).tool_calls)
    assert with_calls >= 10
