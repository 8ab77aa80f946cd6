"""Route ``openai-chat``: every documented finish reason of OpenAI and the OpenAI-compatible servers,
conflicting finish reasons, custom tool calls, annotations, logprobs and the assistant message
(every chunking).

Chunks follow the ``chat.completion.chunk`` object of the OpenAI reference
(https://platform.openai.com/docs/api-reference/chat-streaming/streaming) and openai-python 3.57.0
``src/openai/types/chat/chat_completion_chunk.py``; the finish reasons of the compatible servers
are cited in ``webclient/_routes/openai_chat.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.route_fixtures import LOCAL, check, outcome_of, replay, sse
from webclient import Limits
from webclient._limits import ENTRY_CHARS
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


# -- OpenRouter's reasoning_details (openrouter.ai/docs/use-cases/reasoning-tokens) -------------------------------

def detail(kind: str = "reasoning.text", index: int | None = 0, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": kind, **fields}
    if index is not None:
        entry["index"] = index
    return entry


#: An Anthropic model's thinking through OpenRouter: the text in fragments (each also as ``reasoning``), the
#: signature in the last one; a Gemini-style encrypted entry at index 1; the answer; a tool call.
DETAILED = sse(
    chunk(ch(role="assistant", content="", reasoning="Check ",
             reasoning_details=[detail(text="Check ", format="anthropic-claude-v1", signature=None)])),
    chunk(ch(content="", reasoning="the weather.", reasoning_details=[detail(text="the weather.", format=None)])),
    chunk(ch(content="", reasoning_details=[detail(text="", signature="EqQBCkgIARAB")])),
    chunk(ch(content="", reasoning_details=[detail("reasoning.encrypted", 1, data="CiQB4/H/Xk", id="tool_1",
                                                   format="google-gemini-v1")])),
    chunk(ch(tool_calls=[{"index": 0, "id": "tool_1", "type": "function",
                          "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}}])),
    chunk(ch(finish="tool_calls")), "[DONE]")


def test_reasoning_details_are_sent_back_whole_in_the_assistant_message() -> None:
    result, updates = check(ROUTE, DETAILED)
    assert (result.outcome.value, result.reasoning) == ("complete", "Check the weather.")
    assert result.assistant_message["reasoning_details"] == [
        {"type": "reasoning.text", "index": 0, "format": "anthropic-claude-v1", "signature": "EqQBCkgIARAB",
         "text": "Check the weather."},
        {"type": "reasoning.encrypted", "index": 1, "id": "tool_1", "format": "google-gemini-v1", "data": "CiQB4/H/Xk"}]
    assert result.items == () and [c.name for c in result.tool_calls] == ["get_weather"]
    assert not any("reasoning_details" in str(update) for update in updates)  # sent back, never shown


def test_reasoning_details_are_ordered_by_index_and_an_entry_without_one_is_index_0() -> None:
    data = sse(chunk(ch(reasoning_details=[detail("reasoning.summary", 2, summary="Second.")])),
               chunk(ch(reasoning_details=[detail("reasoning.summary", None, summary="First")])),
               chunk(ch(reasoning_details=[detail("reasoning.summary", 0, summary=" part.")])),
               chunk(ch(reasoning_details=[detail("reasoning.text", 0, text="Own entry.")])),
               chunk(ch(content="A", finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert result.assistant_message["reasoning_details"] == [
        {"type": "reasoning.summary", "index": 0, "summary": "First part."},
        {"type": "reasoning.text", "index": 0, "text": "Own entry."},
        {"type": "reasoning.summary", "index": 2, "summary": "Second."}]


def test_a_later_empty_or_null_signature_id_or_format_leaves_the_earlier_one() -> None:
    data = sse(chunk(ch(reasoning_details=[detail(text="a", signature="S1", id="i1", format="f1")])),
               chunk(ch(reasoning_details=[detail(text="b", signature="", id="", format=None)])),
               chunk(ch(reasoning_details=[detail(text="c", signature="S2")])),
               chunk(ch(content="A", finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert result.assistant_message["reasoning_details"] == [
        {"type": "reasoning.text", "index": 0, "signature": "S2", "id": "i1", "format": "f1", "text": "abc"}]


def test_an_unknown_reasoning_detail_type_fails_closed_unless_kept() -> None:
    strange = detail("reasoning.diagram", 0, svg="<svg/>")
    data = sse(chunk(ch(reasoning_details=[strange])), chunk(ch(content="A", finish="stop")), "[DONE]")
    assert outcome_of(ROUTE, data) == ("protocol_error", "unknown_type")
    kept, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (kept.outcome.value, kept.items) == ("complete", ({"reasoning_details": [strange]},))
    assert "reasoning_details" not in kept.assistant_message


@pytest.mark.parametrize("details", [
    "reasoning", {"type": "reasoning.text"}, ["text"], [detail(index=-1)], [detail(index="0")], [detail(index=True)],
    [detail(index=1.0)], [{"text": "x"}], [detail(kind=["reasoning.text"])], [detail(text=5)], [detail(signature=5)],
    [detail(id=7)], [detail(format={"x": 1})], [detail("reasoning.encrypted", data=["x"])],
])
def test_a_reasoning_detail_that_is_not_an_entry_of_the_documented_shape_is_envelope(details: Any) -> None:
    data = sse(chunk(ch(reasoning_details=details)), chunk(ch(content="A", finish="stop")), "[DONE]")
    assert outcome_of(ROUTE, data) == ("protocol_error", "envelope")


def test_reasoning_details_after_the_finish_reason_are_a_closed_block() -> None:
    data = sse(chunk(ch(content="A", finish="stop")), chunk(ch(reasoning_details=[detail(text="late")])), "[DONE]")
    assert outcome_of(ROUTE, data) == ("protocol_error", "closed_block")
    empty = sse(chunk(ch(content="A", finish="stop")), chunk(ch(reasoning_details=[])), "[DONE]")
    assert outcome_of(ROUTE, empty) == ("complete", None)


def test_a_surrogate_pair_split_across_reasoning_detail_fragments_is_one_character_and_an_unpaired_one_fails() -> None:
    # sse writes JSON with \\u escapes: each half of the pair arrives as its own escape in its own fragment
    paired = sse(chunk(ch(reasoning_details=[detail(text="Ok \ud83d")])),
                 chunk(ch(reasoning_details=[detail(text="\ude00")])), chunk(ch(content="A", finish="stop")), "[DONE]")
    result, _ = check(ROUTE, paired)
    assert result.assistant_message["reasoning_details"][0]["text"] == "Ok \U0001f600"
    unpaired = sse(chunk(ch(reasoning_details=[detail(text="Ok \ud83d")])), chunk(ch(content="A", finish="stop")),
                   "[DONE]")
    assert outcome_of(ROUTE, unpaired) == ("payload_error", "unpaired_surrogate")
    cut, _ = check(ROUTE, sse(chunk(ch(reasoning_details=[detail(text="Ok \ud83d")]))))  # no finish: shown, encodable
    assert cut.outcome.value == "truncated"
    assert cut.assistant_message["reasoning_details"][0]["text"] == "Ok \ufffd"


def test_reasoning_detail_text_counts_against_the_text_and_retained_ceilings() -> None:
    data = sse(chunk(ch(reasoning_details=[detail(text="x" * 40)])),
               chunk(ch(reasoning_details=[detail("reasoning.encrypted", 1, data="y" * 40)])),
               chunk(ch(content="A", finish="stop")), "[DONE]")
    assert outcome_of(ROUTE, data, limits=Limits(max_text_chars=40)) == ("complete", None)
    assert outcome_of(ROUTE, data, limits=Limits(max_text_chars=39)) == ("buffer_limit", "text")
    bare = sse(chunk(ch(content="A", finish="stop")), "[DONE]")
    # each entry: one entry's worth, and its text
    assert replay(ROUTE, [data]).retained_chars - replay(ROUTE, [bare]).retained_chars == 2 * ENTRY_CHARS + 80
    retained = replay(ROUTE, [data]).retained_chars
    assert outcome_of(ROUTE, data, limits=Limits(max_retained_chars=retained)) == ("complete", None)
    assert outcome_of(ROUTE, data, limits=Limits(max_retained_chars=retained - 1)) == ("buffer_limit", "retained")
    signed = sse(chunk(ch(reasoning_details=[detail(text="a", signature="s" * 50)])),
                 chunk(ch(content="A", finish="stop")), "[DONE]")
    assert outcome_of(ROUTE, signed, limits=Limits(max_signature_chars=49)) == ("buffer_limit", "signatures")


def failed(data: bytes, **session_kwargs: Any) -> Any:
    result = replay(ROUTE, [data], **session_kwargs).result
    assert result is not None and result.outcome.value != "complete"
    return result


@pytest.mark.parametrize("entry", [detail(index=-1, text="x"), detail(index="0", text="x"),
                                   detail(index=True, text="x"), detail(id=7), detail(format={"x": 1}),
                                   detail(text="x", id=["i"]), detail(text="x", format=5)])
def test_a_refused_reasoning_detail_leaves_nothing_in_the_answer_shown(entry: dict[str, Any]) -> None:
    data = sse(chunk(ch(content="A", reasoning_details=[entry])), chunk(ch(finish="stop")), "[DONE]")
    result = failed(data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert "reasoning_details" not in result.assistant_message


def test_reasoning_details_and_tool_calls_of_one_delta_are_both_taken_and_a_refused_detail_takes_neither() -> None:
    call = [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    both = sse(chunk(ch(reasoning_details=[detail(text="Plan.")], tool_calls=call)), chunk(ch(finish="tool_calls")),
               "[DONE]")
    result, _ = check(ROUTE, both)
    assert ([c.name for c in result.tool_calls], len(result.assistant_message["reasoning_details"])) == (["f"], 1)
    refused = sse(chunk(ch(reasoning_details=[detail(index=-1)], tool_calls=call)), chunk(ch(finish="tool_calls")),
                  "[DONE]")
    assert failed(refused).tool_calls == ()


def test_a_detail_that_trips_a_ceiling_keeps_nothing_of_what_tripped_it() -> None:
    text = sse(chunk(ch(reasoning_details=[detail(text="x" * 20)])),
               chunk(ch(reasoning_details=[detail(text="y" * 21)])), chunk(ch(content="A", finish="stop")), "[DONE]")
    assert outcome_of(ROUTE, text, limits=Limits(max_text_chars=41)) == ("complete", None)
    over = failed(text, limits=Limits(max_text_chars=40))  # the ceiling is the joined entry's, not a fragment's
    assert (over.stage, over.assistant_message["reasoning_details"][0]["text"]) == ("text", "x" * 20)
    # the entry's own charge, then its text, each the last charge before the finish reason's
    for late, extra in ((detail("reasoning.encrypted"), 0), (detail("reasoning.encrypted", data="zz"), 2)):
        head = [chunk(ch(content="A")), chunk(ch(reasoning_details=[late]))]
        retained = replay(ROUTE, [sse(*head)]).retained_chars
        cut = failed(sse(*head, chunk(ch(finish="stop")), "[DONE]"), limits=Limits(max_retained_chars=retained - 1))
        assert cut.stage == "retained"
        if extra:
            assert cut.assistant_message["reasoning_details"][0]["data"] == ""
        else:
            assert "reasoning_details" not in cut.assistant_message


def test_an_id_or_format_is_charged_by_what_it_adds_and_one_with_a_surrogate_is_refused() -> None:
    bare = sse(chunk(ch(content="A", finish="stop")), "[DONE]")
    once = sse(chunk(ch(reasoning_details=[detail(id="abc", format="f-1")])), chunk(ch(content="A", finish="stop")),
               "[DONE]")
    twice = sse(chunk(ch(reasoning_details=[detail(id="a", format="f")])),
                chunk(ch(reasoning_details=[detail(id="abc", format="f-1")])), chunk(ch(content="A", finish="stop")),
                "[DONE]")
    base = replay(ROUTE, [bare]).retained_chars
    assert replay(ROUTE, [once]).retained_chars - base == ENTRY_CHARS + 6
    assert replay(ROUTE, [twice]).retained_chars - base == ENTRY_CHARS + 6
    for key in ("id", "format"):
        data = sse(chunk(ch(reasoning_details=[detail(**{key: "x\ud800"})])), chunk(ch(content="A", finish="stop")),
                   "[DONE]")
        result = failed(data)
        assert (result.outcome.value, result.stage) == ("payload_error", "unpaired_surrogate")
        assert key not in result.assistant_message["reasoning_details"][0]


def test_a_later_signature_replaces_the_earlier_one_against_the_signature_ceiling() -> None:
    data = sse(chunk(ch(reasoning_details=[detail(text="a", signature="s" * 30)])),
               chunk(ch(reasoning_details=[detail(signature="t" * 30)])), chunk(ch(content="A", finish="stop")),
               "[DONE]")
    result, _ = check(ROUTE, data, limits=Limits(max_signature_chars=30))
    assert result.assistant_message["reasoning_details"][0]["signature"] == "t" * 30
    over = failed(data, limits=Limits(max_signature_chars=29))
    assert over.stage == "signatures" and "signature" not in over.assistant_message["reasoning_details"][0]


# -- Mistral's content chunks ----------------------------------------------------------------------------------
# Magistral and Mistral Small with thinking stream delta.content as a list of chunks (vercel/ai's recorded
# packages/mistral/src/__fixtures__/mistral-reasoning.chunks.txt, shortened; the "closed" flag from
# packages/openai-compatible/src/chat/__fixtures__/issue-13703-mistral-thinking.chunks.txt).

def mistral(*contents: Any, finish: str = "stop") -> bytes:
    def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        return {"id": "a4e29c5b", "object": "chat.completion.chunk", "model": "magistral-medium-2507",
                "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}
    return sse(*(chunk({"content": c}) for c in contents), chunk({"content": ""}, finish), "[DONE]")


def thinking(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}], **extra}


def test_mistral_thinking_chunks_are_reasoning_and_text_chunks_are_text() -> None:
    data = mistral([thinking("The user is asking")], [thinking(" for 2+2.", closed=True)],
                   [{"type": "text", "text": "2 + 2 = 4"}], "!")
    result, updates = check(ROUTE, data)
    assert (result.outcome.value, result.text, result.reasoning) == ("complete", "2 + 2 = 4!",
                                                                     "The user is asking for 2+2.")
    assert [(u["channel"], u["text"]) for u in updates] == [("reasoning", "The user is asking for 2+2."),
                                                            ("text", "2 + 2 = 4!")]
    assert result.assistant_message["content"] == "2 + 2 = 4!"


def test_an_unknown_content_chunk_fails_closed_unless_kept() -> None:
    reference = {"type": "reference", "reference_ids": [1]}
    data = mistral([{"type": "text", "text": "a"}, reference])
    assert outcome_of(ROUTE, data) == ("protocol_error", "unknown_type")
    result, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (result.outcome.value, result.text, result.items) == ("complete", "a", ({"content": [reference]},))


@pytest.mark.parametrize("content", [
    ["text"], [None], [{"text": "a"}], [{"type": 5}], [{"type": "text", "text": 5}],
    [{"type": "thinking", "thinking": "a"}], [{"type": "thinking"}], [thinking("a", closed="yes")],
    [{"type": "thinking", "thinking": ["a"]}], [{"type": "thinking", "thinking": [{"type": "image", "text": "a"}]}],
    [{"type": "thinking", "thinking": [{"type": "text", "text": 5}]}],
    [{"type": "thinking", "thinking": [{"type": "text", "text": 5}, {"type": "text", "text": "later"}]}],
    [{"type": "thinking", "thinking": ["a", {"type": "text", "text": "later"}]}],
], ids=["string", "null", "untyped", "type-number", "text-number", "thinking-string", "thinking-absent",
        "closed-string", "part-string", "part-type", "part-text-number", "part-text-number-then-text",
        "part-string-then-text"])
@pytest.mark.usefixtures("no_safety_net")
def test_a_malformed_content_chunk_is_envelope_and_nothing_after_it_is_taken(content: list[Any]) -> None:
    result, _ = check(ROUTE, mistral([{"type": "text", "text": "a"}, *content, {"type": "text", "text": "b"}]))
    assert (result.outcome.value, result.stage, result.text, result.reasoning) == ("protocol_error", "envelope", "a",
                                                                                   "")


def test_content_chunks_after_the_finish_reason_are_a_closed_block() -> None:
    finished = {"id": "a", "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": {"content": [{"type": "text", "text": "late"}]}, "finish_reason": None}]}
    data = mistral([{"type": "text", "text": "a"}])
    data = data.replace(b"data: [DONE]", b"data: " + json.dumps(finished).encode() + b"\n\ndata: [DONE]")
    assert outcome_of(ROUTE, data) == ("protocol_error", "closed_block")


def test_content_chunks_count_against_the_text_ceiling() -> None:
    data = mistral([thinking("12345")], [{"type": "text", "text": "123456"}])
    assert outcome_of(ROUTE, data, limits=Limits(max_text_chars=5)) == ("buffer_limit", "text")
    assert outcome_of(ROUTE, data, limits=Limits(max_text_chars=6)) == ("complete", None)


@pytest.mark.parametrize("content", [0, False, {}, 1.5], ids=["zero", "false", "object", "number"])
def test_content_that_is_neither_a_string_nor_a_list_of_chunks_is_envelope_even_when_empty(content: Any) -> None:
    assert outcome_of(ROUTE, mistral("a", content, "b")) == ("protocol_error", "envelope")
    # nothing else of that delta is taken
    data = mistral("a", "b").replace(b'"content":"b"', b'"content":' + json.dumps(content).encode()
                                     + b',"reasoning":"hidden"')
    assert b"hidden" in data
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.reasoning) == ("protocol_error", "envelope", "")


def test_empty_content_of_either_form_adds_nothing() -> None:
    result, _ = check(ROUTE, mistral("a", "", [], [{"type": "text", "text": ""}], [thinking("")], "b"))
    assert (result.outcome.value, result.text, result.reasoning) == ("complete", "ab", "")


def _recorded(name: str) -> bytes:
    return (LOCAL / "simonw-llm" / f"{name}.sse").read_bytes()


def test_anthropic_s_end_turn_passed_through_a_gateway_commits_only_when_the_caller_accepts_it() -> None:
    # Claude through OpenRouter (2024, simonw/llm-openrouter): the Chat finish reason is Anthropic's own end_turn,
    # which this route does not know. The text is there, and still it is not a complete answer by default.
    data = _recorded("llm-openrouter__test_image_prompt.interaction1")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.stop_reason) == ("protocol_error", "unrecognized_stop",
                                                                       "end_turn")
    assert not result.committed and result.text
    accepted = {*(r for r, c in STOP_REASONS.items() if c is StopCategory.SUCCESS), "end_turn"}
    opted_in, _ = check(ROUTE, data, accepted_stop_reasons=accepted)
    assert (opted_in.outcome.value, opted_in.stop_reason, opted_in.text) == ("complete", "end_turn", result.text)


def test_a_tool_call_whose_stream_never_sends_a_finish_reason_is_never_ready() -> None:
    # Kimi K2 through OpenRouter (simonw/llm): the call's header twice (arguments "" then "{}"), then [DONE] with no
    # finish_reason anywhere. One call, its name taken once, and the attempt is truncated: nothing may run.
    result, _ = check(ROUTE, _recorded("llm__test_tools_streaming_variant_a.interaction0"))
    assert (result.outcome.value, result.stage, result.stop_reason) == ("truncated", "missing_stop", None)
    assert [(c.name, c.input_text, c.state, c.ready) for c in result.tool_calls] == [
        ("llm_version", "{}", "streaming", False)]  # never closed, so never validated
    assert result.telemetry.open_payload_accumulator_count == 2  # the choice and its call


# -- Groq's executed_tools (compound models: tools the server ran) ------------------------------------------------

SEARCH = {"index": 0, "type": "search", "arguments": '{"query": "weather"}', "search_results": {"results": []}}


def test_groq_s_executed_tools_are_kept_as_items_one_per_index_the_later_entry_completing_the_earlier() -> None:
    data = sse(chunk(ch(role="assistant", executed_tools=[SEARCH])),
               chunk(ch(executed_tools=[{"index": 1, "type": "visit", "arguments": '{"url": "u"}'}])),
               chunk(ch(executed_tools=[{**SEARCH, "output": "Sunny.", "search_results": "r"}])),
               chunk(ch(content="It is sunny.")), chunk(ch(finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.text, result.tool_calls) == ("complete", "It is sunny.", ())
    assert result.items == ({"executed_tools": [{**SEARCH, "output": "Sunny.", "search_results": "r"}]},
                            {"executed_tools": [{"index": 1, "type": "visit", "arguments": '{"url": "u"}'}]})
    assert "executed_tools" not in result.assistant_message  # the server's record, not part of the turn


def test_the_recorded_groq_web_search_keeps_its_search_with_the_output_that_came_second() -> None:
    data = (LOCAL / "pydantic-ai" / "test_groq__test_groq_model_web_search_tool_stream.interaction0.sse").read_bytes()
    result, _ = check(ROUTE, data)
    assert result.outcome.value == "complete" and len(result.items) == 1
    (tool,) = result.items[0]["executed_tools"]
    assert (tool["index"], tool["type"]) == (0, "search") and json.loads(tool["arguments"])["query"]
    assert tool["output"].startswith("Title: ")


@pytest.mark.parametrize("entry", [[1], {"type": "search"}, {"index": -1, "type": "search"},
                                   {"index": "0", "type": "search"}, {"index": 0}, {"index": 0, "type": 1}])
def test_an_executed_tool_entry_without_an_integer_index_and_a_string_type_is_envelope(entry: Any) -> None:
    data = sse(chunk(ch(executed_tools=[entry])), chunk(ch(content="a", finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.items) == ("protocol_error", "envelope", ())


def test_an_executed_tool_whose_later_entry_names_another_type_is_item_mismatch() -> None:
    data = sse(chunk(ch(executed_tools=[SEARCH])), chunk(ch(executed_tools=[{**SEARCH, "type": "python"}])),
               chunk(ch(content="a", finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "item_mismatch")
    assert result.items == ({"executed_tools": [SEARCH]},)


def test_executed_tools_count_against_the_item_ceiling_and_nothing_of_a_refused_one_is_kept() -> None:
    first = chunk(ch(executed_tools=[SEARCH]))
    data = sse(first, chunk(ch(content="a", finish="stop")), "[DONE]")
    size = len(json.dumps(first, separators=(",", ":")))  # the event's data, as sse() writes it
    assert outcome_of(ROUTE, data, limits=Limits(max_item_chars=size)) == ("complete", None)
    refused, _ = check(ROUTE, data, limits=Limits(max_item_chars=size - 1))
    assert (refused.outcome.value, refused.stage, refused.items) == ("buffer_limit", "items", ())


def test_executed_tools_after_the_finish_reason_are_not_read() -> None:
    data = sse(chunk(ch(content="a", finish="stop")), chunk(ch(executed_tools=[SEARCH])), "[DONE]")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.items) == ("complete", ())


def test_executed_tools_beside_annotations_are_both_taken_and_a_refused_annotation_takes_neither() -> None:
    cite = {"type": "url_citation", "url_citation": {"url": "https://example.com", "title": "t"}}
    both = sse(chunk(ch(annotations=[cite], executed_tools=[SEARCH])), chunk(ch(content="a", finish="stop")), "[DONE]")
    result, _ = check(ROUTE, both)
    assert (result.outcome.value, result.citations, result.items) == ("complete", (cite,),
                                                                      ({"executed_tools": [SEARCH]},))
    refused = sse(chunk(ch(annotations=["x"], executed_tools=[SEARCH])), chunk(ch(content="a", finish="stop")),
                  "[DONE]")
    failed, _ = check(ROUTE, refused)
    assert (failed.outcome.value, failed.stage, failed.items) == ("protocol_error", "envelope", ())


def test_a_new_executed_tool_costs_an_entry_and_its_later_entry_only_its_event() -> None:
    second = chunk(ch(executed_tools=[{**SEARCH, "output": "Sunny."}]))
    tail = (chunk(ch(content="a", finish="stop")), "[DONE]")
    once = replay(ROUTE, [sse(chunk(ch(executed_tools=[SEARCH])), *tail)]).retained_chars
    twice = replay(ROUTE, [sse(chunk(ch(executed_tools=[SEARCH])), second, *tail)]).retained_chars
    none = replay(ROUTE, [sse(*tail)]).retained_chars
    first_event = len(json.dumps(chunk(ch(executed_tools=[SEARCH])), separators=(",", ":")))
    assert once - none == first_event + ENTRY_CHARS
    assert twice - once == len(json.dumps(second, separators=(",", ":")))
