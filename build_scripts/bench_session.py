"""Session throughput: bytes -> committed message with tool calls, against the SDK accumulators.

Rows (each one route on one stream shape; generated streams are deterministic, ~``--mb`` MB):

- ``friendly``: the shapes this benchmark started with. Chat: one-word ``content`` deltas in
  full ``chat.completion.chunk`` envelopes, then tool calls whose arguments stream in 7-character
  fragments. Anthropic: text blocks of 2,000 one-word ``text_delta`` events, ``tool_use`` blocks
  of 7-character ``input_json_delta`` fragments, pings. Responses: a message item of one-word
  ``output_text.delta`` events, then ``function_call`` items with 7-character argument deltas.
- ``issue``: the shape issue 13 measured on. Short deltas of mixed ASCII / CJK / emoji / accented
  text (1-3 pieces each) in blocks of 300 (a text block / message item / stretch of chunks), each
  followed by a tool block / ``function_call`` item / tool call whose input (a JSON object with
  mixed-script strings, ~1.5 KB) streams in 17-character fragments (``input_json_delta``,
  ``response.function_call_arguments.delta``, ``tool_calls[].function.arguments``). Anthropic:
  ~34k events in ~5 MB. Responses events carry what the live API sends (``sequence_number``,
  ``item_id``, ``logprobs``, ``obfuscation``, the ``.done`` events with the whole text / arguments,
  the whole output in ``response.completed``). Gemini (no ``friendly`` row): stretches of 300 chunks
  of that text (the first stretch thought summaries), each followed by a function call whose
  arguments stream by JSON path, Gemini 3's ``partialArgs`` (strings in 17-character ``stringValue``
  fragments, other scalars whole; the name part with a thought signature), every chunk with the
  running ``usageMetadata``, the model and the response id, CRLF-framed: ~17k events in ~5 MB.
- ``recordings``: every real recording of the route in ``../shared/fixtures`` that webclient commits
  and the SDK accumulates without raising (read through ``tests/route_fixtures.py``, never copied),
  each replayed as its own response, the set repeated to ~``--rec-mb`` MB.

Contenders, all fed the same bytes in ``--chunk``-byte transport chunks:

- ``webclient``: ``StreamSession.open/feed/finish`` (strict UTF-8, WHATWG SSE, route contract,
  ceilings, tool-input parsing and validation, telemetry); every response must commit.
- ``floor``: the least any client does: httpx-sse 0.4.3's own line path (httpx ``TextDecoder``,
  ``SSELineDecoder``, ``SSEDecoder``, as ``EventSource.iter_sse`` runs it) + one ``json.loads`` per
  event + picking out the text / argument fragment (Gemini: every text part's text and every
  ``partialArgs`` string fragment of candidate 0) and joining each channel once at the end.
- ``sse+json`` (diagnostic): the same floor on webclient's own SSE layer (``EventStreamParser``);
  webclient minus this is the cost of the route, the session and the ceilings.
- the route's SDK accumulator, on webclient's SSE layer (the fastest here) + ``json.loads``:
  ``openai``: ``construct_type(ChatCompletionChunk)`` + ``ChatCompletionStreamState.handle_chunk``;
  ``ResponseStreamState.handle_event(construct_type(ResponseStreamEvent))``; ``anthropic``:
  ``accumulate_event`` (anthropic-sdk-python's ``MessageStream`` accumulator), on every event but the pings, which
  the SDK's ``Stream`` drops before parsing.

Timing: CPU time of this process (``time.process_time``: the machine's 2 cores are shared), the
contenders interleaved round by round, the **median** of ``--runs`` rounds (``--sdk-runs`` for the
SDKs, whose accumulators are slow). Ratios are of medians measured in this run. Targets: webclient
>= 5x each SDK and <= 1.2x the floor, on every row. Also prints the peak traced memory per input
byte of one webclient run of each generated row, and for each recordings row the time per response
and the fixed cost of a response (:func:`minimal`'s one-word answer, in webclient and on the floor):
where the floor's whole response takes little more than webclient's fixed cost, 1.2x is out of reach
whatever the per-event work costs.

Usage: python build_scripts/bench_session.py [--mb 5] [--chunk 1024] [--runs 7] [--sdk-runs 3]
                                             [--rows chat,anthropic:issue,...] [--skip-sdk]
Peers are benchmark-only dependencies (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from webclient import EventStreamParser, Outcome, StreamSession  # noqa: E402

CHAT, RESPONSES, ANTHROPIC, GEMINI = "openai-chat", "openai-responses", "anthropic-messages", "gemini"

# -- generated shapes --------------------------------------------------------------------------

WORDS = ["The", " quick", " brown", " fox", " jumps", " über", " the", " lazy", " dog", " 日本語", ".", "\n"]
ARGUMENTS = '{"city": "San Francisco", "days": [1, 2, 3], "notes": "' + "café olé, " * 60 + '"}'
#: The arguments cut into model-sized fragments (the first is empty, as Anthropic sends it).
ARG_PIECES = ["", *(ARGUMENTS[i : i + 7] for i in range(0, len(ARGUMENTS), 7))]

#: Mixed-script pieces for the issue shape: ASCII words, CJK, Hangul, emoji (with modifiers and a
#: ZWJ sequence), accented Latin, punctuation and newlines.
PIECES = ["The", " answer", " is", " 日本語", "の", "テキスト", " 中文", "字符", " 한국어", " 🙂", " 👍🏽", "🚀",
          " 👩‍💻", " café", " naïve", " Straße", ",", ".", "\n", " and", " 42", " “quoted”", " —", " data"]
BLOCK = 300  # deltas per text block / message item
FRAGMENT = 17  # characters per tool-input fragment


def _issue_text(i: int) -> str:
    """The i-th short delta: one to four pieces."""
    n = 1 + (i * 7) % 4
    return "".join(PIECES[(i * 5 + k * 3) % len(PIECES)] for k in range(n))


def _issue_arguments(n: int) -> str:
    """A ~1.5 KB tool input with mixed-script strings and nested values."""
    return json.dumps({
        "query": f"検索 {n}: weather in Zürich 🌦 and 東京",
        "options": {"units": "metric", "days": [1, 2, 3, 4, 5], "verbose": n % 2 == 0, "limit": None},
        "notes": "".join(PIECES[(n + k) % len(PIECES)] for k in range(220)),
        "rows": [{"id": k, "label": f"行 {k} — ok ✅"} for k in range(6)],
    }, ensure_ascii=False)


def _fragments(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _frame(payload: dict[str, Any], event: str | None = None) -> str:
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return (f"event: {event}\n" if event else "") + f"data: {data}\n\n"


class _Out:
    """Frames collected with their running byte size."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.events = 0

    def add(self, payload: dict[str, Any], event: str | None = None) -> None:
        frame = _frame(payload, event)
        self.parts.append(frame)
        self.size += len(frame.encode())
        self.events += 1

    def raw(self, frame: str) -> None:
        self.parts.append(frame)
        self.size += len(frame.encode())
        self.events += 1

    def body(self) -> bytes:
        return "".join(self.parts).encode()


_CHAT_HEAD = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1730000000,
              "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_bench"}


def _chat_chunk(out: _Out, delta: dict[str, Any], finish: str | None = None) -> None:
    out.add({**_CHAT_HEAD, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})


def _chat_end(out: _Out, tokens: int) -> bytes:
    _chat_chunk(out, {}, "tool_calls")
    out.add({**_CHAT_HEAD, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": tokens}})
    out.raw("data: [DONE]\n\n")
    return out.body()


def _chat_call(out: _Out, call: int, pieces: list[str]) -> None:
    _chat_chunk(out, {"tool_calls": [{"index": call, "id": f"call_{call}", "type": "function",
                                      "function": {"name": "get_weather", "arguments": ""}}]})
    for piece in pieces:
        _chat_chunk(out, {"tool_calls": [{"index": call, "function": {"arguments": piece}}]})


def chat_friendly(target: int) -> bytes:
    """80% one-word text deltas, then tool calls with 7-character argument fragments."""
    out = _Out()
    _chat_chunk(out, {"role": "assistant", "content": ""})
    i = 0
    while out.size < target * 0.8:
        _chat_chunk(out, {"content": WORDS[i % len(WORDS)]})
        i += 1
    call = 0
    while out.size < target:
        _chat_call(out, call, ARG_PIECES[1:])
        call += 1
    return _chat_end(out, i)


def chat_issue(target: int) -> bytes:
    """Stretches of 300 short mixed-script deltas, then a tool call in 17-character fragments
    (Chat streams the calls after the text: the stretches come first, the calls last)."""
    out = _Out()
    _chat_chunk(out, {"role": "assistant", "content": ""})
    i = 0
    calls: list[list[str]] = []
    call_bytes = 0
    while out.size + call_bytes < target:
        for _ in range(BLOCK):
            _chat_chunk(out, {"content": _issue_text(i)})
            i += 1
        pieces = _fragments(_issue_arguments(len(calls)), FRAGMENT)
        calls.append(pieces)
        call_bytes += len(pieces) * 200
    for n, pieces in enumerate(calls):
        _chat_call(out, n, pieces)
    return _chat_end(out, i)


def _anthropic_start(out: _Out) -> None:
    out.add({"type": "message_start", "message": {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}},
        "message_start")


def _anthropic_tool(out: _Out, index: int, pieces: list[str]) -> None:
    out.add({"type": "content_block_start", "index": index, "content_block": {
        "type": "tool_use", "id": f"toolu_{index}", "name": "get_weather", "input": {}}}, "content_block_start")
    for piece in pieces:
        out.add({"type": "content_block_delta", "index": index,
                 "delta": {"type": "input_json_delta", "partial_json": piece}}, "content_block_delta")
    out.add({"type": "content_block_stop", "index": index}, "content_block_stop")


def _anthropic_text(out: _Out, index: int, texts: list[str], ping_every: int = 0) -> None:
    out.add({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
            "content_block_start")
    for n, text in enumerate(texts, 1):
        out.add({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}},
                "content_block_delta")
        if ping_every and n % ping_every == 0:
            out.add({"type": "ping"}, "ping")
    out.add({"type": "content_block_stop", "index": index}, "content_block_stop")


def _anthropic_end(out: _Out, tokens: int) -> bytes:
    out.add({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
             "usage": {"output_tokens": tokens}}, "message_delta")
    out.add({"type": "message_stop"}, "message_stop")
    return out.body()


def anthropic_friendly(target: int) -> bytes:
    """Text blocks of 2,000 one-word deltas (a ping every 500), 7-character tool fragments."""
    out = _Out()
    _anthropic_start(out)
    index = i = 0
    while out.size < target:
        if index % 2 == 0:
            _anthropic_text(out, index, [WORDS[(i + k) % len(WORDS)] for k in range(2000)], 500)
            i += 2000
        else:
            _anthropic_tool(out, index, ARG_PIECES)
        index += 1
    return _anthropic_end(out, i)


def anthropic_issue(target: int) -> bytes:
    """Text blocks of 300 short mixed-script deltas, each followed by a tool block whose input
    streams in 17-character ``input_json_delta`` fragments (the first empty); a ping per block."""
    out = _Out()
    _anthropic_start(out)
    index = i = 0
    while out.size < target:
        _anthropic_text(out, index, [_issue_text(i + k) for k in range(BLOCK)], BLOCK)
        i += BLOCK
        _anthropic_tool(out, index + 1, ["", *_fragments(_issue_arguments(index), FRAGMENT)])
        index += 2
    return _anthropic_end(out, i)


class _ResponsesOut(_Out):
    """Responses frames: ``event:`` names and the running ``sequence_number``."""

    def event(self, payload: dict[str, Any]) -> None:
        self.add({"type": payload["type"], "sequence_number": self.events, **payload}, payload["type"])


_RESPONSE = {"id": "resp_bench", "object": "response", "created_at": 1730000000, "model": "gpt-4.1-2025-04-14",
             "output": [], "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def _responses_start(out: _ResponsesOut) -> None:
    out.event({"type": "response.created", "response": {**_RESPONSE, "status": "in_progress"}})
    out.event({"type": "response.in_progress", "response": {**_RESPONSE, "status": "in_progress"}})


def _responses_message(out: _ResponsesOut, index: int, texts: list[str], extras: bool) -> dict[str, Any]:
    item_id = f"msg_{index:04d}"
    part: dict[str, Any] = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    out.event({"type": "response.output_item.added", "output_index": index, "item": {
        "id": item_id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}})
    out.event({"type": "response.content_part.added", "item_id": item_id, "output_index": index,
               "content_index": 0, "part": part})
    more = {"logprobs": [], "obfuscation": "aB3dE"} if extras else {}
    for text in texts:
        out.event({"type": "response.output_text.delta", "item_id": item_id, "output_index": index,
                   "content_index": 0, "delta": text, **more})
    full = "".join(texts)
    done_part = {**part, "text": full}
    out.event({"type": "response.output_text.done", "item_id": item_id, "output_index": index,
               "content_index": 0, "text": full, **({"logprobs": []} if extras else {})})
    out.event({"type": "response.content_part.done", "item_id": item_id, "output_index": index,
               "content_index": 0, "part": done_part})
    item = {"id": item_id, "type": "message", "status": "completed", "content": [done_part], "role": "assistant"}
    out.event({"type": "response.output_item.done", "output_index": index, "item": item})
    return item


def _responses_call(out: _ResponsesOut, index: int, pieces: list[str], extras: bool) -> dict[str, Any]:
    item_id = f"fc_{index:04d}"
    added = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "",
             "call_id": f"call_{index}", "name": "get_weather"}
    out.event({"type": "response.output_item.added", "output_index": index, "item": added})
    more = {"obfuscation": "x9Yz"} if extras else {}
    for piece in pieces:
        out.event({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": index,
                   "delta": piece, **more})
    arguments = "".join(pieces)
    out.event({"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": index,
               "arguments": arguments})
    item = {**added, "status": "completed", "arguments": arguments}
    out.event({"type": "response.output_item.done", "output_index": index, "item": item})
    return item


def _responses_end(out: _ResponsesOut, output: list[dict[str, Any]]) -> bytes:
    out.event({"type": "response.completed", "response": {
        **_RESPONSE, "status": "completed", "output": output,
        "usage": {"input_tokens": 10, "output_tokens": out.events, "total_tokens": out.events + 10}}})
    return out.body()


def responses_friendly(target: int) -> bytes:
    """One message item of one-word deltas (80%), then function calls with 7-character fragments."""
    out = _ResponsesOut()
    _responses_start(out)
    texts: list[str] = []
    size = out.size
    while size < target * 0.4:  # every delta's text comes back three times in the .done events
        texts.append(WORDS[len(texts) % len(WORDS)])
        size += 150
    output = [_responses_message(out, 0, texts, extras=False)]
    while out.size < target:
        output.append(_responses_call(out, len(output), ARG_PIECES[1:], extras=False))
    return _responses_end(out, output)


def responses_issue(target: int) -> bytes:
    """Message items of 300 short mixed-script deltas, each followed by a function_call item with
    17-character argument deltas; the fields the live API sends."""
    out = _ResponsesOut()
    _responses_start(out)
    output: list[dict[str, Any]] = []
    i = 0
    while out.size < target * 0.95:  # response.completed repeats the whole output
        output.append(_responses_message(out, len(output), [_issue_text(i + k) for k in range(BLOCK)], True))
        i += BLOCK
        output.append(_responses_call(out, len(output), _fragments(_issue_arguments(i), FRAGMENT), True))
    return _responses_end(out, output)


_GEMINI_IDENTITY = {"modelVersion": "gemini-3-pro-preview", "responseId": "bH6LaZW8Fp_3nsEPqtaSwQ4"}
#: A thought signature as Gemini 3 sends one on a call's first part (base64, ~400 characters).
_SIGNATURE = "EqUCCqICAb4+9vsh8Pd5taZVoPzSvjWWwzBrvhEQWBLCGa7IdY8FBMm7Z6dCKFU3Ft0la15gF7RaHe1NlPRy" * 5


def _gemini_chunk(out: _Out, parts: list[dict[str, Any]], tokens: int, finish: str | None = None) -> None:
    """One ``GenerateContentResponse``: candidate 0 with ``parts``, the running usage, model and id."""
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    out.add({"candidates": [candidate], "usageMetadata": {
        "promptTokenCount": 9, "candidatesTokenCount": tokens, "totalTokenCount": 9 + tokens}, **_GEMINI_IDENTITY})


def _leaves(value: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    """``(jsonPath, scalar)`` for every leaf of a JSON value, in order (``$.a.b``, ``$.a[0]``)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}")
    elif isinstance(value, list):
        for k, item in enumerate(value):
            yield from _leaves(item, f"{path}[{k}]")
    else:
        yield path, value


def _gemini_call(out: _Out, n: int, tokens: int) -> None:
    """A function call whose arguments stream (Gemini 3 ``streamFunctionCallArguments``): the name
    with a thought signature, then one ``partialArgs`` element per chunk, strings in 17-character
    ``stringValue`` fragments and other scalars whole, then the empty part that closes it."""
    _gemini_chunk(out, [{"functionCall": {"name": "get_weather", "willContinue": True},
                         "thoughtSignature": _SIGNATURE}], tokens)
    for path, value in _leaves(json.loads(_issue_arguments(n))):
        if isinstance(value, str):
            pieces = [{"jsonPath": path, "stringValue": piece, "willContinue": True}
                      for piece in _fragments(value, FRAGMENT)]
        elif isinstance(value, bool):
            pieces = [{"jsonPath": path, "boolValue": value}]
        elif value is None:
            pieces = [{"jsonPath": path, "nullValue": None}]
        else:
            pieces = [{"jsonPath": path, "numberValue": value}]
        for piece in pieces:
            _gemini_chunk(out, [{"functionCall": {"partialArgs": [piece], "willContinue": True}}], tokens)
    _gemini_chunk(out, [{"functionCall": {}}], tokens)


def gemini_issue(target: int) -> bytes:
    """Stretches of 300 chunks of short mixed-script text (the first stretch thought summaries), each
    followed by a function call whose arguments stream by JSON path in 17-character fragments; every
    chunk carries the running usage, the model and the response id, as the live API sends them;
    CRLF-framed, as Gemini frames its events."""
    out = _Out()
    i = 0
    while out.size < target:
        thought = i == 0
        for k in range(BLOCK):
            part: dict[str, Any] = {"text": _issue_text(i + k)}
            if thought:
                part["thought"] = True
            _gemini_chunk(out, [part], i + k)
        i += BLOCK
        _gemini_call(out, i, i)
    _gemini_chunk(out, [{"text": ""}], i, "STOP")
    return out.body().replace(b"\n", b"\r\n")


def minimal(route: str) -> bytes:
    """The least a route sends to commit a one-word answer: Chat one chunk and ``[DONE]``; Responses
    created, in progress, one message item with one delta and its ``.done`` events, completed;
    Anthropic message start, one text block of one delta, message delta and stop; Gemini one chunk
    with its ``finishReason``."""
    if route == CHAT:
        out = _Out()
        _chat_chunk(out, {"role": "assistant", "content": "Hi"}, "stop")
        out.raw("data: [DONE]\n\n")
        return out.body()
    if route == RESPONSES:
        responses = _ResponsesOut()
        _responses_start(responses)
        return _responses_end(responses, [_responses_message(responses, 0, ["Hi"], extras=False)])
    if route == ANTHROPIC:
        out = _Out()
        _anthropic_start(out)
        _anthropic_text(out, 0, ["Hi"])
        out.add({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                 "usage": {"output_tokens": 1}}, "message_delta")
        out.add({"type": "message_stop"}, "message_stop")
        return out.body()
    out = _Out()
    _gemini_chunk(out, [{"text": "Hi"}], 1, "STOP")
    return out.body().replace(b"\n", b"\r\n")


# -- recordings --------------------------------------------------------------------------------

def recordings(route: str, target: int, sdk: Callable[[list[list[bytes]]], object] | None,
               chunk: int) -> tuple[list[bytes], int]:
    """The route's committed recordings that the SDK (when given) accumulates without raising,
    repeated to ~``target`` bytes; returns (bodies, distinct recordings)."""
    from tests.route_fixtures import cases

    bodies = []
    for case in cases(local=False):  # (the shared set only: the rows stay comparable with earlier runs)
        if case.route != route or case.outcome != "complete":
            continue
        chunks = _chunked(case.data, chunk)
        try:
            run_webclient(route, [chunks])
            if sdk is not None:
                sdk([chunks])
        except Exception:  # the SDK refuses this recording: not in the row
            continue
        bodies.append(case.data)
    if not bodies:
        return [], 0
    total = sum(map(len, bodies))
    return bodies * max(1, round(target / total)), len(bodies)


# -- contenders ----------------------------------------------------------------------------------
# Each takes the streams of a row (each a list of transport chunks) and runs every one.

Streams = list[list[bytes]]


def run_webclient(route: str, streams: Streams) -> object:
    result = None
    for chunks in streams:
        session = StreamSession(route)
        session.open(200, "text/event-stream")
        feed = session.feed
        for chunk in chunks:
            feed(chunk)
        result = session.finish()
        if result.outcome is not Outcome.COMPLETE:
            raise AssertionError((result.outcome, result.stage))
    return result


def _fragment_of(route: str) -> Callable[[dict[str, Any]], object]:
    """The one field the floor keeps from an event: the text or argument fragment (or delta)."""
    if route == CHAT:
        def chat(obj: dict[str, Any]) -> object:
            choices = obj.get("choices")
            if not choices:
                return None
            delta = choices[0].get("delta") or {}
            content = delta.get("content")
            if content is not None:
                return content
            calls = delta.get("tool_calls")
            return calls[0].get("function", {}).get("arguments") if calls else None
        return chat
    if route == ANTHROPIC:
        def anthropic(obj: dict[str, Any]) -> object:
            delta = obj.get("delta")
            if delta is None:
                return None
            return delta.get("text") or delta.get("partial_json")
        return anthropic
    if route == RESPONSES:
        def responses(obj: dict[str, Any]) -> object:
            return obj.get("delta")
        return responses

    def gemini(obj: dict[str, Any]) -> object:
        candidates = obj.get("candidates")
        if not candidates:
            return None
        kept: list[str] = []
        for part in candidates[0].get("content", {}).get("parts") or ():
            text = part.get("text")
            if text is not None:
                kept.append(text)
                continue
            call = part.get("functionCall")  # a streamed argument's string fragments
            if call:
                for piece in call.get("partialArgs") or ():
                    kept.append(piece.get("stringValue") or "")
        return "".join(kept)
    return gemini


def _keep(pick: Callable[[dict[str, Any]], object], datas: Iterator[str]) -> str:
    loads = json.loads
    kept: list[str] = []
    append = kept.append
    for data in datas:
        if data.startswith("[DONE]"):
            continue
        fragment = pick(loads(data))
        if fragment.__class__ is str:
            append(fragment)
    return "".join(kept)


def _httpx_sse_datas(chunks: list[bytes]) -> Iterator[str]:
    """httpx-sse 0.4.3's ``EventSource.iter_sse`` path over ``response.iter_text()``."""
    from httpx._decoders import TextDecoder
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    text = TextDecoder()
    lines = SSELineDecoder()
    sse = SSEDecoder()
    decode = sse.decode
    for chunk in chunks:
        decoded = text.decode(chunk)
        if decoded:
            for line in lines.decode(decoded):
                event = decode(line.rstrip("\n"))
                if event is not None:
                    yield event.data
    tail = text.flush()
    for line in (lines.decode(tail) if tail else []) + lines.flush():
        event = decode(line.rstrip("\n"))
        if event is not None:
            yield event.data


def _webclient_datas(chunks: list[bytes]) -> Iterator[str]:
    stream = EventStreamParser()
    for chunk in chunks:
        for event in stream.feed(chunk):
            yield event.data  # type: ignore[union-attr]
    stream.close()


def run_floor(route: str, streams: Streams) -> object:
    pick = _fragment_of(route)
    return [_keep(pick, _httpx_sse_datas(chunks)) for chunks in streams]


def run_sse_json(route: str, streams: Streams) -> object:
    pick = _fragment_of(route)
    return [_keep(pick, _webclient_datas(chunks)) for chunks in streams]


def run_openai_chat(route: str, streams: Streams) -> object:
    from openai._models import construct_type
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    snapshot = None
    for chunks in streams:
        state: Any = ChatCompletionStreamState()
        for data in _webclient_datas(chunks):
            if data.startswith("[DONE]"):
                continue
            state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=json.loads(data)))
        snapshot = state.current_completion_snapshot
    return snapshot


def run_openai_responses(route: str, streams: Streams) -> object:
    from openai._models import construct_type
    from openai._types import omit
    from openai.lib.streaming.responses._responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    output = None
    for chunks in streams:
        state: Any = ResponseStreamState(input_tools=omit, text_format=omit)
        for data in _webclient_datas(chunks):
            if data.startswith("[DONE]"):
                continue
            state.handle_event(construct_type(type_=ResponseStreamEvent, value=json.loads(data)))
        output = state._completed_output
    return output


def run_anthropic(route: str, streams: Streams) -> object:
    """``MessageStream``'s accumulation: its ``Stream`` drops ``event: ping`` before parsing, so pings never reach
    ``accumulate_event`` (an unnamed ping, as the data-only recordings frame it, is dropped once parsed)."""
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot = None
    for chunks in streams:
        snapshot = None
        json_bufs: dict[int, bytes] = {}
        stream = EventStreamParser()
        for chunk in chunks:
            for event in stream.feed(chunk):
                if event.type == "ping" or event.data.startswith("[DONE]"):  # type: ignore[union-attr]
                    continue
                obj = json.loads(event.data)  # type: ignore[union-attr]
                if obj.get("type") != "ping":
                    snapshot = accumulate_event(event=obj, current_snapshot=snapshot, json_bufs=json_bufs)
        stream.close()
    return snapshot


SDKS: dict[str, tuple[str, Callable[[str, Streams], object]] | None] = {
    CHAT: ("openai", run_openai_chat),
    RESPONSES: ("openai", run_openai_responses),
    ANTHROPIC: ("anthropic", run_anthropic),
    GEMINI: None,  # google-genai has no stream accumulator
}

GENERATED: dict[tuple[str, str], Callable[[int], bytes]] = {
    ("chat", "friendly"): chat_friendly,
    ("chat", "issue"): chat_issue,
    ("responses", "friendly"): responses_friendly,
    ("responses", "issue"): responses_issue,
    ("anthropic", "friendly"): anthropic_friendly,
    ("anthropic", "issue"): anthropic_issue,
    ("gemini", "issue"): gemini_issue,
}
ROUTES = {"chat": CHAT, "responses": RESPONSES, "anthropic": ANTHROPIC, "gemini": GEMINI}
ROWS = [*GENERATED, *((name, "recordings") for name in ROUTES)]


def _chunked(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def _cpu(fn: Callable[[str, Streams], object], route: str, streams: Streams) -> float:
    gc.collect()
    start = time.process_time()
    fn(route, streams)
    return time.process_time() - start


def peak_memory(route: str, streams: Streams) -> int:
    tracemalloc.start()
    run_webclient(route, streams)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def measure_row(name: str, shape: str, args: argparse.Namespace) -> list[str]:
    """Print one row's figures; return the targets it missed."""
    route = ROUTES[name]
    sdk = None if args.skip_sdk else SDKS[route]
    if shape == "recordings":
        bodies, distinct = recordings(route, int(args.rec_mb * 1e6),
                                      (lambda s: sdk[1](route, s)) if sdk else None, args.chunk)
        if not bodies:
            print(f"\n[{name} / recordings] none found in ../shared/fixtures")
            return []
        label = f"{distinct} recordings x {len(bodies) // distinct}"
    else:
        bodies = [GENERATED[name, shape](int(args.mb * 1e6))]
        label = "generated"
    streams = [_chunked(body, args.chunk) for body in bodies]
    size = sum(map(len, bodies))
    events = sum(body.count(b"data:") for body in bodies)
    run_webclient(route, streams)  # checks that every response commits; warm-up
    contenders: dict[str, Callable[[str, Streams], object]] = {
        "webclient": run_webclient, "floor": run_floor, "sse+json": run_sse_json}
    times: dict[str, list[float]] = {n: [] for n in contenders}
    for _ in range(args.runs):
        for n, fn in contenders.items():
            times[n].append(_cpu(fn, route, streams))
    if sdk is not None:
        times[sdk[0]] = [_cpu(sdk[1], route, streams) for _ in range(args.sdk_runs)]
    med = {n: statistics.median(t) for n, t in times.items()}
    mb = size / 1e6
    print(f"\n[{name} / {shape}] {label}: {mb:.2f} MB, {events} events, {len(bodies)} response(s), "
          f"{args.chunk}-byte chunks; CPU ms, median of {args.runs} (SDK {args.sdk_runs})")
    ours = med["webclient"]
    missed = []
    for n, t in med.items():
        spread = f"{min(times[n]) * 1e3:.1f}-{max(times[n]) * 1e3:.1f}"
        line = f"  {n:<10} {t * 1e3:9.1f} ms ({spread:>15})  {mb / t:7.1f} MB/s"
        if n == "floor":
            line += f"   webclient/floor = {ours / t:.2f}x (target <= 1.2x)"
            if ours / t > 1.2:
                missed.append(f"{name}/{shape}: {ours / t:.2f}x the floor")
        elif n == "sse+json":
            line += f"   webclient/sse+json = {ours / t:.2f}x (diagnostic)"
        elif n != "webclient":
            line += f"   webclient speed-up = {t / ours:.1f}x (target >= 5x)"
            if t / ours < 5:
                missed.append(f"{name}/{shape}: only {t / ours:.1f}x {n}")
        print(line)
    if shape != "recordings":
        peak = peak_memory(route, streams)
        print(f"  peak traced memory of a webclient run: {peak / 1e6:.1f} MB ({peak / size:.2f} bytes/input byte)")
    else:
        each = {n: med[n] / len(bodies) * 1e6 for n in ("webclient", "floor", "sse+json")}
        print(f"  per response: webclient {each['webclient']:.1f} us, floor {each['floor']:.1f} us, "
              f"sse+json {each['sse+json']:.1f} us")
        print("  " + fixed_cost(route, args.runs))
    return missed


def fixed_cost(route: str, runs: int) -> str:
    """What a response costs whatever it holds: :func:`minimal`'s body, one chunk, timed in 2,000
    responses per round (median of ``runs``), in webclient and on the floor."""
    body = minimal(route)
    streams = [[body]] * 2000
    run_webclient(route, streams[:1])  # commits
    times: dict[str, list[float]] = {"webclient": [], "floor": []}
    for _ in range(runs):
        times["webclient"].append(_cpu(run_webclient, route, streams))
        times["floor"].append(_cpu(run_floor, route, streams))
    ours, floor = (statistics.median(times[n]) / len(streams) * 1e6 for n in ("webclient", "floor"))
    return (f"a minimal committed response ({body.count(b'data:')} events, {len(body)} B, one chunk): "
            f"webclient {ours:.1f} us, floor {floor:.1f} us")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=5.0, help="size of each generated stream (default 5)")
    ap.add_argument("--rec-mb", type=float, default=1.0, help="bytes of recordings per row (default 1)")
    ap.add_argument("--chunk", type=int, default=1024, help="transport chunk size in bytes (default 1024)")
    ap.add_argument("--runs", type=int, default=7, help="rounds for webclient and the floors (median)")
    ap.add_argument("--sdk-runs", type=int, default=3, help="runs of each SDK accumulator (median)")
    ap.add_argument("--rows", default="", help="comma-separated ROUTE or ROUTE:SHAPE (default: all)")
    ap.add_argument("--skip-sdk", action="store_true", help="measure webclient and the floors only")
    args = ap.parse_args()
    wanted = [w for w in args.rows.split(",") if w]
    known = {n for n, _ in ROWS} | {f"{n}:{s}" for n, s in ROWS}
    unknown = [w for w in wanted if w not in known]
    if unknown:  # a row that matches nothing measures nothing: never "all targets met" for it
        ap.error(f"unknown rows {', '.join(unknown)}; rows are ROUTE or ROUTE:SHAPE of "
                 f"{', '.join(f'{n}:{s}' for n, s in ROWS)}")
    rows = [r for r in ROWS if not wanted or r[0] in wanted or f"{r[0]}:{r[1]}" in wanted]
    print(f"python {sys.version.split()[0]}; rows: {', '.join(f'{n}/{s}' for n, s in rows)}")
    failures: list[str] = []
    for name, shape in rows:
        failures += measure_row(name, shape, args)
    print("\n" + ("all targets met" if not failures else "targets missed: " + "; ".join(failures)))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
