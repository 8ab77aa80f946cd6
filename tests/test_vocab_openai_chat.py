"""Route ``openai-chat``: every documented finish reason of OpenAI and the OpenAI-compatible servers,
conflicting finish reasons, custom tool calls, annotations, logprobs and the assistant message
(every chunking).

Chunks follow the ``chat.completion.chunk`` object of the OpenAI reference
(https://platform.openai.com/docs/api-reference/chat-streaming/streaming) and openai-python 3.57.0
``src/openai/types/chat/chat_completion_chunk.py``; the finish reasons of the compatible servers
are cited in ``webclient/_routes/openai_chat.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.route_fixtures import check, outcome_of, sse
from webclient import Limits
from webclient._routes import StopCategory
from webclient._routes.openai_chat import STOP_REASONS

ROUTE = "openai-chat"


def chunk(*choices: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1694268190,
            "model": "gpt-4o-mini", "system_fingerprint": "fp_44709d6fcb", "choices": list(choices), **extra}


def ch(index: int = 0, finish: str | None = None, logprobs: Any = None, **delta: Any) -> dict[str, Any]:
    return {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}


EXPECTED = {StopCategory.SUCCESS: ("complete", None), StopCategory.LENGTH: ("truncated", "stop_reason"),
            StopCategory.FILTER: ("truncated", "stop_reason"), StopCategory.FAILURE: ("upstream_error", "error_stop")}


@pytest.mark.parametrize(("reason", "category"), sorted(STOP_REASONS.items()), ids=sorted(STOP_REASONS))
def test_every_documented_finish_reason_ends_as_its_category(reason: str, category: StopCategory) -> None:
    # The reference's streaming example: role chunk, content chunks, a finish chunk, [DONE].
    data = sse(chunk(ch(role="assistant", content="")), chunk(ch(content="Hello")), chunk(ch(finish=reason)),
               "[DONE]")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.stop_reason) == (*EXPECTED[category], reason)
    assert result.telemetry.stop_reason == reason
    assert result.committed is (category is StopCategory.SUCCESS)


@pytest.mark.parametrize("reason", ["insufficient_system_resource", "error", "model_length"])
def test_gateway_failure_reasons_from_the_issue_never_commit_partial_text(reason: str) -> None:
    # DeepSeek's insufficient_system_resource, Mistral's error / model_length.
    data = sse(chunk(ch(content="partial")), chunk(ch(finish=reason)), "[DONE]")
    result, _ = check(ROUTE, data)
    assert not result.committed and result.text == "partial"


def test_a_later_different_refused_finish_reason_wins_for_one_choice() -> None:
    # The issue's report: stop, then content_filter re-finishing the same choice, was complete.
    data = sse(chunk(ch(content="a", finish="stop")), chunk(ch(finish="content_filter")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.stop_reason) == ("truncated", "stop_reason", "content_filter")
    same = sse(chunk(ch(content="a", finish="stop")), chunk(ch(finish="stop")), "[DONE]")
    assert outcome_of(ROUTE, same) == ("complete", None)
    accepted_later = sse(chunk(ch(content="a", finish="length")), chunk(ch(finish="stop")), "[DONE]")
    assert check(ROUTE, accepted_later)[0].stop_reason == "length"


def test_the_callers_accepted_set_overrides_every_category() -> None:
    data = sse(chunk(ch(content="a", finish="insufficient_system_resource")), "[DONE]")
    assert outcome_of(ROUTE, data, accepted_stop_reasons={"insufficient_system_resource"}) == ("complete", None)


def test_custom_tool_calls_stream_free_text_input() -> None:
    # openai-python ChatCompletionMessageCustomToolCall: {id, type: "custom", custom: {name, input}}.
    data = sse(chunk(ch(tool_calls=[{"index": 0, "id": "call_1", "type": "custom",
                                     "custom": {"name": "code_exec", "input": "print("}}])),
               chunk(ch(tool_calls=[{"index": 0, "custom": {"input": "'hi')"}}])),
               chunk(ch(finish="tool_calls")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert [(c.kind, c.id, c.name, c.state, c.arguments, c.input_text, c.ready) for c in result.tool_calls] == [
        ("custom", "call_1", "code_exec", "valid", None, "print('hi')", True)]
    assert result.assistant_message == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "custom", "custom": {"name": "code_exec", "input": "print('hi')"}}]}


def test_an_unknown_tool_call_type_fails_closed_unless_kept() -> None:
    fragment = {"index": 0, "id": "call_1", "type": "hologram", "hologram": {"x": 1}}
    data = sse(chunk(ch(tool_calls=[fragment])), chunk(ch(finish="tool_calls")), "[DONE]")
    assert outcome_of(ROUTE, data) == ("protocol_error", "unknown_type")
    result, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (result.outcome.value, result.items, result.tool_calls) == ("complete", (fragment,), ())


def test_audio_output_is_content_the_route_does_not_read_and_fails_closed_unless_kept() -> None:
    # gpt-4o-audio-preview with modalities ["text", "audio"]: the answer streams as delta.audio
    # fragments (id, base64 data, transcript), then an expires_at; content stays null (openai-node #1991,
    # openai-openapi #577). Committed, it would be an empty answer.
    audio = [{"id": "audio_1", "data": "UklGRg==", "transcript": "Hel"}, {"data": "AAAA", "transcript": "lo"},
             {"expires_at": 1729018505}]
    data = sse(chunk(ch(role="assistant", content=None)), *(chunk(ch(content=None, audio=a)) for a in audio),
               chunk(ch(finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "unknown_type", "")
    kept, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (kept.outcome.value, kept.items) == ("complete", tuple({"audio": a} for a in audio))
    # an empty or null audio field carries nothing
    empty = sse(chunk(ch(content="Hi", audio=None)), chunk(ch(content="!", audio={})), chunk(ch(finish="stop")),
                "[DONE]")
    assert check(ROUTE, empty)[0].text == "Hi!"


def test_generated_images_are_content_the_route_does_not_read_and_fail_closed_unless_kept() -> None:
    # OpenRouter image generation (modalities ["image", "text"]): delta.images next to the text.
    images = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]
    data = sse(chunk(ch(content="Here it is.", images=images)), chunk(ch(finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.committed) == ("protocol_error", "unknown_type", False)
    kept, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (kept.outcome.value, kept.text, kept.items) == ("complete", "Here it is.", ({"images": images},))
    assert outcome_of(ROUTE, sse(chunk(ch(content="a", images=[])), chunk(ch(finish="stop")), "[DONE]")) == (
        "complete", None)


@pytest.mark.parametrize("field", ["audio", "images"])
def test_a_delta_with_unread_content_takes_nothing_else_unless_kept(field: str) -> None:
    cite = {"type": "url_citation", "url_citation": {"url": "https://example.com", "title": "Ex"}}
    delta = {field: [{"x": 1}], "refusal": "no", "reasoning_content": "r", "annotations": [cite],
             "tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{}"}}]}
    data = sse(chunk(ch(**delta)), chunk(ch(finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "unknown_type")
    assert (result.refusal, result.reasoning, result.citations, result.tool_calls) == ("", "", (), ())
    kept, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (kept.refusal, kept.reasoning, kept.citations, kept.items) == ("no", "r", (cite,), ({field: [{"x": 1}]},))


def test_annotations_are_citations() -> None:
    # OpenRouter web search / OpenAI search models: delta.annotations with url_citation entries.
    cite = {"type": "url_citation", "url_citation": {"url": "https://example.com", "title": "Ex",
                                                     "start_index": 0, "end_index": 5}}
    data = sse(chunk(ch(content="Hello", annotations=[cite])), chunk(ch(finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert result.citations == (cite,) and result.choices[0].citations == (cite,)


def test_logprobs_are_kept_per_choice() -> None:
    # The reference's logprobs object: content (and refusal) lists of token entries.
    tok = [{"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}]
    data = sse(chunk(ch(content="Hi", logprobs={"content": tok, "refusal": None})),
               chunk(ch(content="!", logprobs={"content": tok, "refusal": None})), chunk(ch(finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert result.logprobs == {"content": tok * 2, "refusal": []}
    plain, _ = check(ROUTE, sse(chunk(ch(content="Hi", finish="stop")), "[DONE]"))
    assert plain.logprobs is None


def test_assistant_message_carries_text_refusal_tool_calls_and_optionally_reasoning_content() -> None:
    data = sse(chunk(ch(reasoning_content="Think.")), chunk(ch(content="Checking.")),
               chunk(ch(tool_calls=[{"index": 0, "id": "call_w", "type": "function",
                                     "function": {"name": "get_weather", "arguments": '{"city":'}}])),
               chunk(ch(tool_calls=[{"index": 0, "function": {"arguments": '"Oslo"}'}}])),
               chunk(ch(finish="tool_calls")), "[DONE]")
    result, _ = check(ROUTE, data)
    expected = {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "call_w", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}}]}
    assert result.assistant_message == expected
    with_reasoning, _ = check(ROUTE, data, include_reasoning_content=True)
    assert with_reasoning.assistant_message == {**expected, "reasoning_content": "Think."}
    refused, _ = check(ROUTE, sse(chunk(ch(refusal="I can't help.", finish="stop")), "[DONE]"))
    assert refused.assistant_message == {"role": "assistant", "content": None, "refusal": "I can't help."}
    legacy, _ = check(ROUTE, sse(chunk(ch(function_call={"name": "f", "arguments": "{}"})),
                                 chunk(ch(finish="function_call")), "[DONE]"))
    assert legacy.assistant_message == {"role": "assistant", "content": None,
                                        "function_call": {"name": "f", "arguments": "{}"}}


def test_every_choice_has_its_own_assistant_message_and_identity_is_the_chunks() -> None:
    data = sse(chunk(ch(0, content="A")), chunk(ch(1, content="B")), chunk(ch(0, finish="stop")),
               chunk(ch(1, finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert [c.assistant_message["content"] for c in result.choices] == ["A", "B"]
    assert (result.response_id, result.model) == ("chatcmpl-123", "gpt-4o-mini")


def test_logprobs_count_against_the_item_ceiling() -> None:
    tok = [{"token": "x", "logprob": 0, "bytes": [120], "top_logprobs": []}]
    first = chunk(ch(content="x", logprobs={"content": tok}))
    data = sse(first, chunk(ch(finish="stop")), "[DONE]")
    size = len(data.decode().split("\n")[0]) - len("data: ")
    assert outcome_of(ROUTE, data, limits=Limits(max_item_chars=size)) == ("complete", None)
    assert outcome_of(ROUTE, data, limits=Limits(max_item_chars=size - 1)) == ("buffer_limit", "items")
