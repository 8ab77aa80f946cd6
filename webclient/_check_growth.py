"""The ``growth`` check of ``python -m webclient check``: every structure a session keeps must hit a ceiling.

After a prefix of the capture that ends at an event boundary (past the route's start event, before its
terminal event), the check feeds events in the route's own shape that grow one structure without end:
a text channel, a tool input, call-index aliases, streamed-argument paths, choices / candidates / blocks /
items, message parts, usage keys, logprobs, citations ... (:data:`GROWTH`). The session must end
``buffer_limit`` with the ``retained`` stage or the structure's own ceiling, before the check has fed
:func:`growth_budget` characters: enough for any structure to pass ``max_retained_chars`` twice.

Each case grows only the structure it names, and accepts only that structure's stages, so it fails when
that structure is left unbounded: a tool input grows within one call (not across new calls), calls carry
empty arguments, usage keys are new in every event (the merged usage is charged by key, so keys sent
again cost nothing). Message parts have no ceiling of their own, and each part grown carries a
one-character signature: the signature ceiling is accepted for them only under limits where it comes
before the retained ceiling does.

Injected events open fresh indexes (:data:`FRESH`) so they never collide with the capture's own, carry no
sequence number (a stream's numbers are optional) and are sized to fit the configured line ceiling; when
no event fits (a line ceiling below :data:`MIN_LINE_CHARS`) the check is not applicable.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ._limits import ENTRY_CHARS, Limits

#: The first index of the choices, blocks, items and calls the check opens (far from any real one).
FRESH = 1_000_000

#: Characters of content per growth event, and entries per list-shaped growth event, at most (both
#: shrink to fit the line ceiling).
PIECE_CHARS = 8192
ENTRIES = 256

#: Below this line ceiling no growth event fits and the check is skipped.
MIN_LINE_CHARS = 512

#: Bytes fed per transport chunk.
CHUNK_BYTES = 64 * 1024

#: Payload of one event: ``(SSE event name or None, data object)``.
Event = tuple[str | None, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Growth:
    """One structure grown without end: the events that open it, then ``grow(k)`` for k = 0, 1, ..."""

    #: ``"text"``, ``"tool_input"``, ``"call_index_aliases"`` ...
    name: str
    #: The per-structure stages that may trip first (``retained`` always may).
    stages: frozenset[str]
    head: tuple[Event, ...]
    grow: Callable[[int], Event]


def _stages(*names: str) -> frozenset[str]:
    return frozenset(names)


def _chat(piece: str, entries: int, limits: Limits) -> Iterator[Growth]:
    def chunk(*choices: dict[str, Any]) -> Event:
        return (None, {"id": "wc-check", "object": "chat.completion.chunk", "choices": list(choices)})

    def delta(index: int, **fields: Any) -> dict[str, Any]:
        return {"index": index, "delta": fields}

    def span(k: int) -> range:
        return range(FRESH + 1 + k * entries, FRESH + 1 + (k + 1) * entries)

    call = {"index": 0, "id": "wc-check-call", "type": "function", "function": {"name": "wc_check", "arguments": ""}}
    log = {"token": "x", "logprob": -1.0, "bytes": [120], "top_logprobs": []}
    cite = {"type": "url_citation", "url_citation": {"url": "https://example.invalid/", "title": "t"}}
    yield Growth("text", _stages("text"), (), lambda k: chunk(delta(FRESH, content=piece)))
    yield Growth("reasoning", _stages("text"), (), lambda k: chunk(delta(FRESH, reasoning_content=piece)))
    # (one call, its input growing: only the input's ceiling ends it; a call count would be another structure)
    yield Growth("tool_input", _stages("tool_input"), (chunk(delta(FRESH, tool_calls=[call])),),
                 lambda k: chunk(delta(FRESH, tool_calls=[{"index": 0, "function": {"arguments": piece}}])))
    yield Growth("call_index_aliases", _stages("tool_calls"), (chunk(delta(FRESH, tool_calls=[call])),),
                 lambda k: chunk(delta(FRESH, tool_calls=[{"index": i, "id": "wc-check-call"} for i in span(k)])))
    yield Growth("choices", _stages("blocks"), (), lambda k: chunk(*(delta(i, content="c") for i in span(k))))
    yield Growth("logprobs", _stages("items"), (),
                 lambda k: chunk({**delta(FRESH), "logprobs": {"content": [log] * entries}}))
    yield Growth("citations", _stages("citations", "items"), (),
                 lambda k: chunk(delta(FRESH, annotations=[cite] * entries)))


def _gemini(piece: str, entries: int, limits: Limits) -> Iterator[Growth]:
    def chunk(*parts: dict[str, Any], index: int = FRESH) -> Event:
        return (None, {"candidates": [{"index": index, "content": {"role": "model", "parts": list(parts)}}]})

    def paths(k: int) -> dict[str, Any]:
        return {"functionCall": {"willContinue": True, "partialArgs": [
            {"jsonPath": f"$.k{i}", "stringValue": ""} for i in range(k * entries, (k + 1) * entries)]}}

    opened = chunk({"functionCall": {"name": "wc_check", "willContinue": True}})
    code = {"executableCode": {"language": "PYTHON", "code": "pass"}}
    yield Growth("text", _stages("text"), (), lambda k: chunk({"text": piece}))
    yield Growth("thought", _stages("text"), (), lambda k: chunk({"text": piece, "thought": True}))
    yield Growth("argument_paths", _stages("tool_input"), (opened,), lambda k: chunk(paths(k)))
    yield Growth("argument_values", _stages("tool_input"), (opened,), lambda k: chunk({"functionCall": {
        "willContinue": True, "partialArgs": [{"jsonPath": "$.s", "stringValue": piece}]}}))
    yield Growth("candidates", _stages("blocks"), (), lambda k: (None, {"candidates": [
        {"index": FRESH + 1 + k * entries + i, "content": {"parts": [{"text": "c"}]}} for i in range(entries)]}))
    # Message parts have no ceiling of their own: each is an entry against retained. Every part that is
    # kept carries something with a ceiling; a signature-only part carries the least (one character), so
    # the signature ceiling is accepted only when it comes before the parts the retained ceiling holds.
    signed = limits.max_signature_chars < limits.max_retained_chars // ENTRY_CHARS
    yield Growth("message_parts", _stages("signatures") if signed else _stages(), (),
                 lambda k: chunk(*({"thoughtSignature": "s"} for _ in range(entries))))
    yield Growth("items", _stages("items"), (), lambda k: chunk(*(code for _ in range(entries))))
    # (whole calls with empty arguments: the calls grow, no input does)
    yield Growth("calls", _stages("tool_calls"), (),
                 lambda k: chunk({"functionCall": {"name": "wc_check", "args": {}}}))


def _typed(kind: str, **fields: Any) -> Event:
    return (kind, {"type": kind, **fields})


def _anthropic(piece: str, entries: int, limits: Limits) -> Iterator[Growth]:
    def start(block: dict[str, Any], index: int = FRESH) -> Event:
        return _typed("content_block_start", index=index, content_block=block)

    def delta(**fields: Any) -> Event:
        return _typed("content_block_delta", index=FRESH, delta=fields)

    text = start({"type": "text", "text": ""})
    citation = {"type": "char_location", "cited_text": "c", "document_index": 0}
    yield Growth("text", _stages("text"), (text,), lambda k: delta(type="text_delta", text=piece))
    yield Growth("thinking", _stages("text"), (start({"type": "thinking", "thinking": ""}),),
                 lambda k: delta(type="thinking_delta", thinking=piece))
    yield Growth("tool_input", _stages("tool_input"), (start({"type": "tool_use", "id": "wc", "name": "wc_check",
                                                               "input": {}}),),
                 lambda k: delta(type="input_json_delta", partial_json=piece))
    yield Growth("server_tool_input", _stages("tool_input"),
                 (start({"type": "server_tool_use", "id": "wc", "name": "web_search", "input": {}}),),
                 lambda k: delta(type="input_json_delta", partial_json=piece))
    yield Growth("blocks", _stages("blocks"), (), lambda k: start({"type": "text", "text": "b"}, FRESH + 1 + k))
    # Usage is merged (cumulative counts) and charged by key: only keys not seen before grow it, to the
    # item ceiling (keys sent again cost nothing more).
    yield Growth("usage_keys", _stages("items"), (), lambda k: _typed(
        "message_delta", delta={}, usage={f"k{i}": i for i in range(k * entries, (k + 1) * entries)}))
    yield Growth("citations", _stages("citations", "items"), (text,),
                 lambda k: delta(type="citations_delta", citation=citation))


def _responses(piece: str, entries: int, limits: Limits) -> Iterator[Growth]:
    def added(item: dict[str, Any], index: int = FRESH) -> Event:
        return _typed("response.output_item.added", output_index=index, item=item)

    message = added({"id": "wc-msg", "type": "message"})
    call = added({"id": "wc-fc", "type": "function_call", "call_id": "wc", "name": "wc_check", "arguments": ""})
    yield Growth("text", _stages("text"), (message,),
                 lambda k: _typed("response.output_text.delta", output_index=FRESH, delta=piece))
    yield Growth("refusal", _stages("text"), (message,),
                 lambda k: _typed("response.refusal.delta", output_index=FRESH, delta=piece))
    yield Growth("arguments", _stages("tool_input"), (call,),
                 lambda k: _typed("response.function_call_arguments.delta", output_index=FRESH, delta=piece))
    yield Growth("items", _stages("blocks", "items"), (),
                 lambda k: added({"type": "web_search_call", "action": {"query": piece}}, FRESH + 1 + k))
    yield Growth("citations", _stages("citations", "items"), (message,), lambda k: _typed(
        "response.output_text.annotation.added", output_index=FRESH,
        annotation={"type": "url_citation", "url": "https://example.invalid/", "title": piece[:64]}))


#: route -> the structures its growth cases grow, given a content piece, an entry count and the limits
#: (a stage accepted only under some ceilings).
GROWTH: dict[str, Callable[[str, int, Limits], Iterator[Growth]]] = {
    "openai-chat": _chat,
    "gemini": _gemini,
    "anthropic-messages": _anthropic,
    "openai-responses": _responses,
}


def cases(route: str, limits: Limits) -> list[Growth]:
    """The route's growth cases with events sized to ``limits`` (empty: not applicable)."""
    room = min(limits.max_line_chars, limits.max_event_chars) - 256
    if room < MIN_LINE_CHARS - 256 or route not in GROWTH:
        return []
    piece = "x" * max(1, min(PIECE_CHARS, room // 2))
    entries = max(1, min(ENTRIES, room // 96))
    return list(GROWTH[route](piece, entries, limits))


def growth_budget(limits: Limits) -> int:
    """Characters a growth case may feed before it counts as unbounded: twice the retained ceiling
    (every structure charges at least half a character per character fed) plus slack for the head."""
    return 2 * limits.max_retained_chars + 4 * CHUNK_BYTES


def frame(event: Event) -> bytes:
    """One SSE event (``event:`` line when named)."""
    name, payload = event
    data = json.dumps(payload, separators=(",", ":"))
    return ((f"event: {name}\n" if name else "") + f"data: {data}\n\n").encode()


def feed_chunks(case: Growth, budget: int) -> Iterator[bytes]:
    """The head, then growth events batched into chunks of about :data:`CHUNK_BYTES`, until
    ``budget`` bytes were produced."""
    head = b"".join(frame(e) for e in case.head)
    yield head
    sent = len(head)
    k = 0
    constant = frame(case.grow(0)) == frame(case.grow(1))  # then one framing serves every event
    while sent < budget:
        if constant:
            event = frame(case.grow(k))
            chunk = event * max(1, CHUNK_BYTES // len(event))
        else:
            batch: list[bytes] = []
            size = 0
            while size < CHUNK_BYTES:
                batch.append(frame(case.grow(k)))
                size += len(batch[-1])
                k += 1
            chunk = b"".join(batch)
        sent += len(chunk)
        yield chunk


def verdict(case: Growth, outcome: str | None, stage: str | None, done: bool) -> str | None:
    """The problem with how a growth case ended, or ``None``."""
    if not done:
        return f"{case.name} grew past the budget without a ceiling"
    if outcome != "buffer_limit" or stage not in case.stages | {"retained"}:
        own = f" or {'/'.join(sorted(case.stages))}" if case.stages else ""
        return f"{case.name} did not end as buffer_limit at retained{own}"
    return None


def expected_stages(growth: Sequence[Growth]) -> dict[str, list[str]]:
    """Content-free coverage: structure -> the stages accepted."""
    return {g.name: sorted(g.stages | {"retained"}) for g in growth}
