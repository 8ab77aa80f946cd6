"""The retained-size ceiling (``Limits.max_retained_chars``, stage ``retained``) and the per-structure
ceilings of structures that had none: every structure a session keeps is charged as it grows.

Each growth case is a complete stream with one structure repeated ``n`` times. The ceiling is set a
little above what the stream costs with ``n = 1`` (measured through ``StreamSession.retained_chars``),
and ``n`` is chosen so that the structure alone passes it many times over while every other part of
the stream stays far below: the stream must trip ``buffer_limit`` / ``retained`` under every
chunking. Without the structure's charge it would commit, so each case fails when that charge is
removed."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.helpers import assert_chunking_invariant
from tests.route_fixtures import check, comparable, replay, sse
from webclient import Limits, Outcome, StreamSession
from webclient._limits import BLOCK_CHARS, DEFAULT_MAX_RETAINED_CHARS, ENTRY_CHARS

CHAT, RESPONSES, ANTHROPIC, GEMINI = "openai-chat", "openai-responses", "anthropic-messages", "gemini"

Event = object  # what ``sse`` frames: a dict, a raw string, or ``(name, dict)``


def outcome_of(route: str, data: bytes, **session_kwargs: Any) -> tuple[str, str | None]:
    """``(outcome, stage)`` of ``data``, the same under every chunking: whole, byte by byte, with empty
    chunks, 200 sampled single splits (every split up to 256 bytes) and 20 random multi-splits. These
    streams are long by design (they must pass a ceiling), so every single split would be quadratic."""
    view: Any = assert_chunking_invariant(lambda chunks: comparable(route, chunks, **session_kwargs), data,
                                          random_count=20, every_split_max=256)
    return view[0]["outcome"], view[0]["stage"]


# -- stream builders, one per route ---------------------------------------------------------------


def chat(*choices: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "model": "m", "choices": list(choices), **extra}


def choice(index: int = 0, finish: str | None = None, logprobs: Any = None, **delta: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"index": index, "delta": delta, "finish_reason": finish}
    if logprobs is not None:
        out["logprobs"] = logprobs
    return out


def chat_stream(head: list[Event], body: list[Event], tail: list[Event] | None = None) -> bytes:
    end = [chat(choice(finish="stop"))] if tail is None else tail
    return sse(chat(choice(role="assistant", content="")), *head, *body, *end, "[DONE]")


def named(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return (payload["type"], payload)


def anthropic_stream(body: list[dict[str, Any]]) -> bytes:
    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                  "content": [], "usage": {"input_tokens": 1}}}
    end = [{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
           {"type": "message_stop"}]
    return sse(*(named(e) for e in (start, *body, *end)))


def block(index: int, content_block: dict[str, Any], *deltas: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "content_block_start", "index": index, "content_block": content_block},
            *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
            {"type": "content_block_stop", "index": index}]


def responses_stream(body: list[tuple[str, dict[str, Any]]]) -> bytes:
    created = ev("response.created", response={"id": "resp_1", "status": "in_progress", "output": []})
    done = ev("response.completed", response={"id": "resp_1", "status": "completed", "usage": {"total_tokens": 1}})
    return sse(created, *body, done)


def ev(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    return (kind, {"type": kind, **fields})


def message_item(index: int, deltas: list[str], kind: str = "output_text") -> list[tuple[str, dict[str, Any]]]:
    item_id = f"msg_{index}"
    event = {"output_text": "response.output_text.delta", "refusal": "response.refusal.delta"}[kind]
    return [ev("response.output_item.added", output_index=index, item={"id": item_id, "type": "message"}),
            *(ev(event, item_id=item_id, output_index=index, content_index=0, delta=d) for d in deltas),
            ev("response.output_item.done", output_index=index, item={"id": item_id, "type": "message"})]


def gemini(*parts: dict[str, Any], finish: str | None = None, index: int = 0, **extra: Any) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": index}
    if finish is not None:
        cand["finishReason"] = finish
    return {"candidates": [cand], **extra}


def gemini_stream(body: list[Event]) -> bytes:
    return sse(*body, gemini({"text": "."}, finish="STOP"))


def streamed_call(pieces: list[dict[str, Any]]) -> list[Event]:
    """A Gemini call whose arguments stream as ``partialArgs`` (opened, then one part per piece, closed)."""
    return [gemini({"functionCall": {"name": "f", "willContinue": True}}),
            *(gemini({"functionCall": {"partialArgs": [p], "willContinue": True}}) for p in pieces),
            gemini({"functionCall": {}})]


# -- growth cases ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Growth:
    """A complete stream with one structure repeated: ``make(n)`` builds it with ``n`` copies."""

    id: str
    route: str
    make: Callable[[int], bytes]
    #: Copies that pass the ceiling many times over (at least ``MARGIN`` chars past it).
    n: int
    #: Limits other than the retained ceiling.
    limits: dict[str, int] | None = None
    #: The session's ``accepted_stop_reasons``.
    accepted: tuple[str, ...] | None = None


MARGIN = 400

BIG = 1 << 20
LOG_ENTRY = {"token": "a", "logprob": -0.5, "bytes": [97], "top_logprobs": []}
URL_CITATION = {"type": "url_citation", "url_citation": {"url": "https://example.com/a", "title": "t"}}


def _chat_cases() -> Iterator[Growth]:
    yield Growth("chat-text", CHAT, lambda n: chat_stream([], [chat(choice(content="abcdefgh" * 4))] * n), 40)
    yield Growth("chat-refusal", CHAT, lambda n: chat_stream([], [chat(choice(refusal="no" * 16))] * n), 40)
    yield Growth("chat-reasoning", CHAT,
                 lambda n: chat_stream([], [chat(choice(reasoning_content="hm" * 16))] * n), 40)
    call = {"index": 0, "id": "call_0", "type": "function", "function": {"name": "f", "arguments": '{"a": "'}}
    yield Growth("chat-tool-input", CHAT, lambda n: chat_stream(
        [chat(choice(tool_calls=[call]))],
        [chat(choice(tool_calls=[{"index": 0, "function": {"arguments": "x" * 32}}]))] * n,
        [chat(choice(tool_calls=[{"index": 0, "function": {"arguments": '"}'}}])), chat(choice(finish="tool_calls"))],
    ), 40)
    # The issue's case: a call seen by id, then given index after index (each a new entry, no content).
    opened = {"index": 0, "id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    yield Growth("chat-call-index-aliases", CHAT, lambda n: chat_stream(
        [chat(choice(tool_calls=[opened]))],
        [chat(choice(tool_calls=[{"index": i + 1, "id": "call_0"}])) for i in range(n)],
        [chat(choice(finish="tool_calls"))],
    ), 20, {"max_tool_calls": 10_000})
    yield Growth("chat-choices", CHAT, lambda n: chat_stream(
        [], [chat(choice(i + 1, "stop", content="c")) for i in range(n)]), 20)
    yield Growth("chat-finish-reasons", CHAT, lambda n: chat_stream(
        [], [chat(choice(i + 1, "r" * 300)) for i in range(n)]), 6, {"max_blocks": 10_000}, ("stop", "r" * 300))
    yield Growth("chat-logprobs", CHAT, lambda n: chat_stream(
        [], [chat(choice(content="a", logprobs={"content": [LOG_ENTRY]}))] * n), 12)
    yield Growth("chat-annotations", CHAT, lambda n: chat_stream(
        [], [chat(choice(annotations=[URL_CITATION]))] * n), 12)
    yield Growth("chat-legacy-function-call", CHAT, lambda n: chat_stream(
        [chat(choice(function_call={"name": "f", "arguments": '{"a": "'}))],
        [chat(choice(function_call={"arguments": "y" * 32}))] * n,
        [chat(choice(function_call={"arguments": '"}'})), chat(choice(finish="function_call"))],
    ), 40)


def _gemini_cases() -> Iterator[Growth]:
    yield Growth("gemini-text", GEMINI, lambda n: gemini_stream([gemini({"text": "abcdefgh" * 4})] * n), 40)
    yield Growth("gemini-thought", GEMINI, lambda n: gemini_stream(
        [gemini({"text": "abcdefgh" * 4, "thought": True})] * n), 40)
    # The issue's case: new paths with empty string values (no input text at all, only paths).
    yield Growth("gemini-paths-empty-values", GEMINI, lambda n: gemini_stream(
        streamed_call([{"jsonPath": f"$.k{i}", "stringValue": ""} for i in range(n)])), 20)
    yield Growth("gemini-path-values", GEMINI, lambda n: gemini_stream(
        streamed_call([{"jsonPath": f"$.v{i}", "numberValue": i} for i in range(n)])), 20)
    yield Growth("gemini-path-strings", GEMINI, lambda n: gemini_stream(
        streamed_call([{"jsonPath": "$.s", "stringValue": "z" * 32}] * n)), 40)
    yield Growth("gemini-whole-calls", GEMINI, lambda n: gemini_stream(
        [gemini({"functionCall": {"name": "f", "args": {"q": "w" * 24}}})] * n), 14)
    yield Growth("gemini-candidates", GEMINI, lambda n: sse(
        *(gemini({"text": "c"}, index=i) for i in range(n + 1)),
        {"candidates": [{"index": i, "finishReason": "STOP"} for i in range(n + 1)]}), 20)
    yield Growth("gemini-signature-parts", GEMINI, lambda n: gemini_stream(
        [gemini({"thoughtSignature": "s"})] * n), 20)
    yield Growth("gemini-signed-text-parts", GEMINI, lambda n: gemini_stream(
        [gemini({"text": "t", "thoughtSignature": "s"})] * n), 20)
    yield Growth("gemini-long-signatures", GEMINI, lambda n: gemini_stream(
        [gemini({"thoughtSignature": "s" * 400})] * n), 4)
    yield Growth("gemini-empty-calls", GEMINI, lambda n: gemini_stream(
        [gemini({"functionCall": {"name": "f"}})] * n), 12)
    yield Growth("gemini-items", GEMINI, lambda n: gemini_stream(
        [gemini({"executableCode": {"language": "PYTHON", "code": "print(1)"}})] * n), 12)
    yield Growth("gemini-citations", GEMINI, lambda n: gemini_stream(
        [{"candidates": [{"index": 0, "citationMetadata": {"citationSources": [{"uri": "https://example.com"}]}}]}]
        * n), 12)
    yield Growth("gemini-grounding-metadata", GEMINI, lambda n: gemini_stream(
        [{"candidates": [{"index": 0, "groundingMetadata": {"webSearchQueries": ["q"]}}]}] * n), 12)


def _anthropic_cases() -> Iterator[Growth]:
    yield Growth("anthropic-text", ANTHROPIC, lambda n: anthropic_stream(
        block(0, {"type": "text", "text": ""}, *[{"type": "text_delta", "text": "abcdefgh" * 4}] * n)), 40)
    yield Growth("anthropic-thinking", ANTHROPIC, lambda n: anthropic_stream(
        block(0, {"type": "thinking", "thinking": ""}, *[{"type": "thinking_delta", "thinking": "t" * 32}] * n,
              {"type": "signature_delta", "signature": "sig"})), 40)
    yield Growth("anthropic-tool-input", ANTHROPIC, lambda n: anthropic_stream(
        block(0, {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
              {"type": "input_json_delta", "partial_json": '{"a": "'},
              *[{"type": "input_json_delta", "partial_json": "x" * 32}] * n,
              {"type": "input_json_delta", "partial_json": '"}'})), 40)
    yield Growth("anthropic-server-tool-input", ANTHROPIC, lambda n: anthropic_stream(
        block(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
              {"type": "input_json_delta", "partial_json": '{"q": "'},
              *[{"type": "input_json_delta", "partial_json": "x" * 32}] * n,
              {"type": "input_json_delta", "partial_json": '"}'})), 40)
    yield Growth("anthropic-blocks", ANTHROPIC, lambda n: anthropic_stream(
        [e for i in range(n) for e in block(i, {"type": "text", "text": ""})]), 12)
    # The issue's case: message_delta after message_delta, each adding usage keys (charged by key: about
    # 14 characters each).
    yield Growth("anthropic-usage-keys", ANTHROPIC, lambda n: anthropic_stream(
        [{"type": "message_delta", "delta": {}, "usage": {f"key_{i}": i}} for i in range(n)]), 80)
    yield Growth("anthropic-citations", ANTHROPIC, lambda n: anthropic_stream(
        block(0, {"type": "text", "text": ""},
              *[{"type": "citations_delta", "citation": {"type": "char_location", "cited_text": "c"}}] * n)), 12)
    yield Growth("anthropic-result-blocks", ANTHROPIC, lambda n: anthropic_stream(
        [e for i in range(n) for e in block(i, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
                                                "content": []})]), 8)
    yield Growth("anthropic-redacted-thinking", ANTHROPIC, lambda n: anthropic_stream(
        [e for i in range(n) for e in block(i, {"type": "redacted_thinking", "data": "d" * 40})]), 8)


def _responses_cases() -> Iterator[Growth]:
    yield Growth("responses-text", RESPONSES, lambda n: responses_stream(
        message_item(0, ["abcdefgh" * 4] * n)), 40)
    yield Growth("responses-refusal", RESPONSES, lambda n: responses_stream(
        message_item(0, ["no" * 16] * n, "refusal")), 40)
    yield Growth("responses-reasoning", RESPONSES, lambda n: responses_stream([
        ev("response.output_item.added", output_index=0, item={"id": "rs_0", "type": "reasoning"}),
        *[ev("response.reasoning_summary_text.delta", item_id="rs_0", output_index=0, delta="r" * 32)] * n,
        ev("response.output_item.done", output_index=0, item={"id": "rs_0", "type": "reasoning"})]), 40)
    yield Growth("responses-arguments", RESPONSES, lambda n: responses_stream([
        ev("response.output_item.added", output_index=0,
           item={"id": "fc_0", "type": "function_call", "call_id": "call_0", "name": "f", "arguments": ""}),
        ev("response.function_call_arguments.delta", item_id="fc_0", output_index=0, delta='{"a": "'),
        *[ev("response.function_call_arguments.delta", item_id="fc_0", output_index=0, delta="x" * 32)] * n,
        ev("response.function_call_arguments.delta", item_id="fc_0", output_index=0, delta='"}'),
        ev("response.output_item.done", output_index=0,
           item={"id": "fc_0", "type": "function_call", "call_id": "call_0", "name": "f"})]), 40)
    yield Growth("responses-hosted-items", RESPONSES, lambda n: responses_stream([
        e for i in range(n) for e in (
            ev("response.output_item.added", output_index=i, item={"id": f"ws_{i}", "type": "web_search_call"}),
            ev("response.output_item.done", output_index=i,
               item={"id": f"ws_{i}", "type": "web_search_call", "status": "completed"}))]), 8)
    yield Growth("responses-citations", RESPONSES, lambda n: responses_stream([
        *message_item(0, ["t"])[:2],
        *[ev("response.output_text.annotation.added", item_id="msg_0", output_index=0,
             annotation={"type": "url_citation", "url": "https://example.com"})] * n,
        message_item(0, [])[-1]]), 12)


GROWTH = [*_chat_cases(), *_gemini_cases(), *_anthropic_cases(), *_responses_cases()]


def retained(route: str, data: bytes, **kwargs: Any) -> tuple[str, int]:
    session = replay(route, [data], **kwargs)
    assert session.result is not None
    return session.result.outcome.value, session.retained_chars


@pytest.mark.parametrize("case", GROWTH, ids=[c.id for c in GROWTH])
def test_each_structure_growing_past_the_retained_ceiling_trips_buffer_limit_retained(case: Growth) -> None:
    others = case.limits or {}
    options: dict[str, Any] = {"accepted_stop_reasons": case.accepted} if case.accepted else {}
    outcome, base = retained(case.route, case.make(1), limits=Limits(**others), **options)
    assert outcome == "complete"
    limits = Limits(**others, max_retained_chars=base + MARGIN)
    grown = case.make(case.n)
    outcome, unlimited = retained(case.route, grown, limits=Limits(**others), **options)
    assert outcome == "complete"  # the grown stream is fine in itself ...
    assert unlimited >= base + 2 * MARGIN  # ... and its structure alone passes the ceiling twice over
    assert outcome_of(case.route, grown, limits=limits, **options) == ("buffer_limit", "retained")
    # Tripped by the charge that would have passed it: the account itself never goes past the ceiling.
    assert retained(case.route, grown, limits=limits, **options)[1] <= limits.max_retained_chars


def test_the_issue_s_two_hundred_choices_of_a_megabyte_trip_the_default_ceiling_early() -> None:
    """The default ceiling on the issue's stream: 200 choices of 1 MB each, fed lazily (it stops at the trip)."""
    megabyte = "x" * (1 << 20)
    session = StreamSession(CHAT)
    session.open(200, "text/event-stream")
    fed = 0
    for i in range(200):
        session.feed(sse(chat(choice(i, content=megabyte))))
        fed += 1
        if session.done:
            break
    result = session.finish()
    assert (result.outcome, result.stage) == (Outcome.BUFFER_LIMIT, "retained")
    # The first choice that does not fit (each costs its megabyte plus a block).
    assert (fed - 1) * ((1 << 20) + BLOCK_CHARS) <= DEFAULT_MAX_RETAINED_CHARS < fed * ((1 << 20) + BLOCK_CHARS)
    assert session.retained_chars <= DEFAULT_MAX_RETAINED_CHARS


def test_two_hundred_choices_trip_at_the_same_event_under_every_chunking() -> None:
    data = chat_stream([], [chat(choice(i, "stop", content="x" * 100)) for i in range(200)])
    limit = 50 * (100 + BLOCK_CHARS + len("stop"))
    assert outcome_of(CHAT, data, limits=Limits(max_retained_chars=limit)) == ("buffer_limit", "retained")


def test_parsed_arguments_are_charged_beside_the_input_text_they_came_from() -> None:
    args = json.dumps({"q": "w" * 1000})
    opened = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": args}}
    with_call = chat_stream([chat(choice(tool_calls=[opened]))], [], [chat(choice(finish="tool_calls"))])
    without = chat_stream([], [])
    (outcome, charged), (_, base) = retained(CHAT, with_call), retained(CHAT, without)
    assert outcome == "complete"
    assert charged - base >= 2 * len(args) + ENTRY_CHARS


def test_the_response_id_and_model_are_charged_once_by_their_length() -> None:
    short = chat_stream([], [chat(choice(content="a"))])
    long = short.replace(b'"id":"chatcmpl-1"', b'"id":"' + b"i" * 1000 + b'"').replace(
        b'"model":"m"', b'"model":"' + b"m" * 500 + b'"')
    assert retained(CHAT, long)[1] - retained(CHAT, short)[1] == (1000 - len("chatcmpl-1")) + (500 - len("m"))


# -- per-structure ceilings of the structures the issue found unbounded --------------------------------


def test_call_index_aliases_are_bounded_by_the_tool_call_ceiling() -> None:
    opened = {"index": 0, "id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    aliases = [chat(choice(tool_calls=[{"index": i + 1, "id": "call_0"}])) for i in range(8)]
    data = chat_stream([chat(choice(tool_calls=[opened]))], aliases, [chat(choice(finish="tool_calls"))])
    assert outcome_of(CHAT, data, limits=Limits(max_tool_calls=8)) == ("buffer_limit", "tool_calls")
    assert outcome_of(CHAT, data, limits=Limits(max_tool_calls=9)) == ("complete", None)


def test_streamed_argument_paths_count_against_their_call_s_input_ceiling_even_with_empty_values() -> None:
    paths = [{"jsonPath": f"$.key_{i:03d}", "stringValue": ""} for i in range(20)]
    held = sum(len(p["jsonPath"]) for p in paths)
    data = sse(*streamed_call(paths)[:-1])  # the call never closes: nothing but its paths is held
    assert outcome_of(GEMINI, data, limits=Limits(max_tool_input_chars=held - 1)) == ("buffer_limit", "tool_input")
    assert outcome_of(GEMINI, data, limits=Limits(max_tool_input_chars=held)) == ("truncated", "eof")


def test_repeated_empty_string_values_of_one_path_hold_nothing_more() -> None:
    data = gemini_stream(streamed_call([{"jsonPath": "$.a", "stringValue": ""}] * 300))
    outcome, once = retained(GEMINI, gemini_stream(streamed_call([{"jsonPath": "$.a", "stringValue": ""}])))
    assert outcome == "complete"
    assert retained(GEMINI, data) == ("complete", once)
    # While the call streams, the path holds no fragment at all (nothing to charge, nothing kept).
    session = replay(GEMINI, [sse(*streamed_call([{"jsonPath": "$.a", "stringValue": ""}] * 300)[:-1])])
    candidate: Any = session._route._choices[0]  # the structure the issue found growing
    assert candidate.paths == {"$.a": []}
    assert candidate.streaming is not None and candidate.streaming.parts == []


def usage_view(data: bytes, **session_kwargs: Any) -> tuple[str, str | None, int, object]:
    """``(outcome, stage, retained chars, usage)`` of an Anthropic stream, the same under every chunking (as
    :func:`outcome_of` samples them)."""
    def run(chunks: list[bytes]) -> tuple[str, str | None, int, object]:
        session = replay(ANTHROPIC, chunks, **session_kwargs)
        assert session.result is not None
        return session.result.outcome.value, session.result.stage, session.retained_chars, session.result.usage

    return assert_chunking_invariant(run, data, random_count=20, every_split_max=256)


def test_a_merged_usage_object_is_charged_its_json_length_against_the_item_ceiling() -> None:
    """Keys merged from message_start and every message_delta: the object kept is charged exactly its JSON
    length, so the item ceiling holds at that length and trips one character below it. A merge that does
    not fit (the item or the retained ceiling) is not kept."""
    deltas = [{"type": "message_delta", "delta": {}, "usage": {f"key_{i}": i}} for i in range(20)]
    data = anthropic_stream(deltas)
    merged = {"input_tokens": 1, **{f"key_{i}": i for i in range(20)}, "output_tokens": 1}
    size = len(json.dumps(merged))
    outcome, _, total, usage = usage_view(data, limits=Limits(max_item_chars=size))
    assert (outcome, usage) == ("complete", merged)
    before = {k: v for k, v in merged.items() if k != "output_tokens"}  # the last delta's key, the last charge
    view = usage_view(data, limits=Limits(max_item_chars=size - 1))
    assert (view[0], view[1], view[3]) == ("buffer_limit", "items", before)
    view = usage_view(data, limits=Limits(max_retained_chars=total - 1))
    assert (view[0], view[1], view[3]) == ("buffer_limit", "retained", before)


def test_cumulative_usage_sent_again_is_charged_once() -> None:
    """Anthropic's message_delta counts are cumulative: the same keys again overwrite their values and
    cost nothing more, however many deltas carry them (charging each merge whole would trip the item
    ceiling here after two)."""
    usage = {"input_tokens": 1, "output_tokens": 1}

    def stream(n: int) -> bytes:
        return anthropic_stream([{"type": "message_delta", "delta": {}, "usage": usage}] * n)

    limits = Limits(max_item_chars=len(json.dumps(usage)))
    once = usage_view(stream(1), limits=limits)
    assert once[::3] == ("complete", usage)
    assert usage_view(stream(200), limits=limits) == once


# -- replaced values are not accumulated ----------------------------------------------------------


@pytest.mark.parametrize(("route", "make"), [
    pytest.param(GEMINI, lambda n: gemini_stream([gemini({"text": "a"}, usageMetadata={"totalTokenCount": i})
                                                  for i in range(n)]), id="gemini-usage-every-chunk"),
    pytest.param(CHAT, lambda n: chat_stream([], [chat(choice(content="a"), usage={"total_tokens": i})
                                                  for i in range(n)]), id="chat-usage-every-chunk"),
    pytest.param(ANTHROPIC, lambda n: anthropic_stream(block(0, {"type": "thinking", "thinking": ""}, *[
        {"type": "signature_delta", "signature": "s" * 40}] * n)), id="anthropic-signature-replaced"),
    pytest.param(ANTHROPIC, lambda n: anthropic_stream([
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}] * n), id="anthropic-stop-reason-replaced"),
])
def test_values_that_replace_the_previous_one_are_charged_once(route: str, make: Callable[[int], bytes]) -> None:
    one, many = retained(route, make(1)), retained(route, make(100))
    assert one[0] == many[0] == "complete"
    assert many[1] - one[1] <= 99 * 2  # the text the chunks carry, nothing per replaced value


def test_a_large_event_s_usage_is_charged_by_its_own_size_not_the_event_s() -> None:
    """``response.completed`` repeats every output item: only its usage object is kept and charged."""
    padding = [{"id": f"msg_{i}", "type": "message", "content": [{"type": "output_text", "text": "p" * 1000}]}
               for i in range(8)]
    plain = responses_stream(message_item(0, ["hi"]))
    padded = plain.replace(b'"status":"completed"', b'"status":"completed","output":' + json.dumps(
        padding, separators=(",", ":")).encode())
    (outcome, small), (_, large) = retained(RESPONSES, plain), retained(RESPONSES, padded)
    assert outcome == "complete"
    assert large <= small  # measured: its usage object (the small event is charged whole)


# -- resume continues the count ---------------------------------------------------------------------


def test_a_resumed_session_continues_the_retained_count() -> None:
    first = sse(ev("response.created", response={"id": "resp_1", "status": "in_progress"}, sequence_number=0),
                ev("response.output_item.added", output_index=0, item={"id": "msg_0", "type": "message"},
                   sequence_number=1),
                *[ev("response.output_text.delta", item_id="msg_0", output_index=0, delta="a" * 100,
                     sequence_number=2 + i) for i in range(6)])
    rest = sse(*[ev("response.output_text.delta", item_id="msg_0", output_index=0, delta="a" * 100,
                    sequence_number=8 + i) for i in range(6)],
               ev("response.output_item.done", output_index=0, item={"id": "msg_0", "type": "message"},
                  sequence_number=14),
               ev("response.completed", response={"id": "resp_1", "status": "completed"}, sequence_number=15))

    def run(limit: int) -> tuple[StreamSession, StreamSession]:
        session = StreamSession(RESPONSES, limits=Limits(max_retained_chars=limit))
        session.open(200, "text/event-stream")
        session.feed(first)
        session.finish()
        resumed = StreamSession.resume(session)
        resumed.open(200, "text/event-stream")
        resumed.feed(rest)
        resumed.finish()
        return session, resumed

    session, resumed = run(DEFAULT_MAX_RETAINED_CHARS)
    assert resumed.result is not None and resumed.result.outcome is Outcome.COMPLETE
    whole = resumed.retained_chars
    assert whole >= 1200 and session.retained_chars == whole  # one account, shared
    half_fits, _ = run(whole - 1)  # the first half alone fits ...
    assert half_fits.result is not None and half_fits.result.stage == "eof"
    _, tripped = run(whole - 1)  # ... the whole answer does not
    assert tripped.result is not None
    assert (tripped.result.outcome, tripped.result.stage) == (Outcome.BUFFER_LIMIT, "retained")


def test_the_ceiling_is_checked_against_the_limits_value_and_must_be_positive() -> None:
    from webclient import UsageError

    with pytest.raises(UsageError):
        Limits(max_retained_chars=0)
    result, _ = check(CHAT, chat_stream([], [chat(choice(content="abc"))]), limits=Limits(max_retained_chars=BIG))
    assert result.outcome is Outcome.COMPLETE


# -- the command line --------------------------------------------------------------------------------


def test_replay_and_check_take_max_retained_chars(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    from webclient._cli import main

    capture = tmp_path / "chat.sse"
    capture.write_bytes(chat_stream([], [chat(choice(content="x" * 100))] * 5))
    assert main(["replay", "--route", CHAT, "--max-retained-chars", "300", str(capture)]) == 1
    out = json.loads(capsys.readouterr().out)
    assert (out["outcome"], out["stage"], out["telemetry"]["buffer_limit_stage"]) == (
        "buffer_limit", "retained", "retained")
    assert main(["check", "--route", CHAT, "--max-retained-chars", "65536", "--max-splits", "2", "--json",
                 str(capture)]) == 0
    growth = next(c for c in json.loads(capsys.readouterr().out)["checks"] if c["check"] == "growth")
    assert growth["failures"] == 0 and growth["cases"] >= 5
    assert growth["coverage"]["retained_ceiling"] == 65536


def test_an_account_that_lands_exactly_on_the_ceiling_commits_and_one_character_less_trips_it() -> None:
    """The last charge of this stream is its stop reason's, a replaceable value: the ceiling is inclusive
    there as everywhere (the account only grows here, so its end is its peak)."""
    data = gemini_stream([gemini({"text": "a"}, usageMetadata={"totalTokenCount": 1})])
    outcome, total = retained(GEMINI, data)
    assert outcome == "complete"
    assert retained(GEMINI, data, limits=Limits(max_retained_chars=total)) == ("complete", total)
    assert outcome_of(GEMINI, data, limits=Limits(max_retained_chars=total - 1)) == ("buffer_limit", "retained")


def _prefix(data: bytes, events: int) -> bytes:
    """The first ``events`` SSE events of ``data`` (blank-line framed, as ``sse`` writes them)."""
    return b"".join(part + b"\n\n" for part in data.split(b"\n\n")[:events])


#: Streams cut right after an event whose last charge is of one kind: a text fragment (``_append``), a
#: server tool's input (``_held``), a streamed argument path and its string value (``_append``), a usage
#: object (``_hold_as``), a new choice's block (``_hold``).
EXACT_CUTS = [
    pytest.param(CHAT, _prefix(chat_stream([], [chat(choice(content="x" * 50))]), 2), id="chat-text"),
    pytest.param(ANTHROPIC, _prefix(anthropic_stream(block(0, {
        "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
        {"type": "input_json_delta", "partial_json": '{"query": "' + "q" * 40}),), 3), id="anthropic-server-input"),
    pytest.param(GEMINI, _prefix(gemini_stream(streamed_call([
        {"jsonPath": "$.city", "stringValue": "c" * 30, "willContinue": True}])), 2), id="gemini-argument-path"),
    pytest.param(CHAT, _prefix(chat_stream([], [chat(choice(content="x"), usage={"total_tokens": 7})]), 2),
                 id="chat-usage"),
    pytest.param(CHAT, _prefix(chat_stream([], [chat(choice(1))]), 2), id="chat-new-choice"),
]


@pytest.mark.parametrize(("route", "data"), EXACT_CUTS)
def test_a_charge_that_lands_exactly_on_the_ceiling_is_taken_and_one_character_more_is_not(
        route: str, data: bytes) -> None:
    """Every charging path treats the ceiling as inclusive: cut after the charge, the stream is merely
    truncated at a ceiling equal to its account, and trips ``retained`` one character below it."""
    outcome, total = retained(route, data)
    assert outcome == "truncated" and total > 0
    assert outcome_of(route, data, limits=Limits(max_retained_chars=total))[0] == "truncated"
    assert outcome_of(route, data, limits=Limits(max_retained_chars=total - 1)) == ("buffer_limit", "retained")


def test_a_surrogate_pair_split_across_deltas_is_charged_as_the_one_character_it_becomes() -> None:
    # _check_texts combines the pair at the terminal condition; the account gives back the extra unit.
    split = chat_stream([], [chat(choice(content="a\ud83d")), chat(choice(content="\ude00b"))])
    whole = chat_stream([], [chat(choice(content="a\U0001f600")), chat(choice(content="b"))])
    assert retained("openai-chat", split) == retained("openai-chat", whole)
    assert retained("openai-chat", split)[0] == "complete"


# -- the account at every ceiling -------------------------------------------------------------------

_CALL = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
_COMPUTER = {"id": "cu_1", "type": "computer_call", "call_id": "call_c", "status": "completed",
             "action": {"type": "click", "x": 1, "y": 2, "button": "left"}, "pending_safety_checks": []}
#: Streams whose charges include each refusable step: a text fragment, a thinking signature sent whole
#: and by delta, a server tool's input, a call's input and its parsed arguments (settled), a Gemini
#: call's assembled arguments and a Responses whole-item call's action (closed as an object).
SWEEPS = [
    pytest.param(CHAT, chat_stream([chat(choice(tool_calls=[_CALL]))], [
        chat(choice(tool_calls=[{"index": 0, "function": {"arguments": '{"city": "Oslo", "days": [1, 2]}'}}]))],
        [chat(choice(finish="tool_calls"))]), id="chat-call"),
    pytest.param(ANTHROPIC, anthropic_stream([
        *block(0, {"type": "thinking", "thinking": "", "signature": "s" * 20},
               {"type": "thinking_delta", "thinking": "plan"}, {"type": "signature_delta", "signature": "t" * 30}),
        *block(1, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
               {"type": "input_json_delta", "partial_json": '{"query": "' + "q" * 20 + '"}'})]),
        id="anthropic-signatures-server-input"),
    pytest.param(GEMINI, gemini_stream(streamed_call([
        {"jsonPath": "$.city", "stringValue": "Oslo" * 5, "willContinue": True},
        {"jsonPath": "$.days", "numberValue": 3}])), id="gemini-assembled-call"),
    pytest.param(RESPONSES, responses_stream([
        ev("response.output_item.added", output_index=0, item={**_COMPUTER, "status": "in_progress"}),
        ev("response.output_item.done", output_index=0, item=_COMPUTER)]), id="responses-whole-item-call"),
]


@pytest.mark.parametrize(("route", "data"), SWEEPS)
def test_at_every_ceiling_below_a_stream_s_account_it_trips_and_the_account_never_passes_the_ceiling(
        route: str, data: bytes) -> None:
    """A charge the ceiling refuses is not taken, and nothing after it is charged: whichever step trips,
    the account ends at or under the ceiling (each refusing step returns before charging)."""
    outcome, total = retained(route, data)
    assert outcome == "complete"
    for ceiling in range(1, total):
        session = replay(route, [data], limits=Limits(max_retained_chars=ceiling))
        assert session.result is not None
        assert (session.result.outcome.value, session.result.stage) == ("buffer_limit", "retained"), ceiling
        assert session.retained_chars <= ceiling, ceiling
