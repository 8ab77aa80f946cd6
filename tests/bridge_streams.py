"""Sample OpenAI-chat SSE bodies for the transport tests (browser bridge and httpx adapter).

Raw UTF-8 (not ``\\u`` escapes), so cutting the bytes can split two-, three- and four-byte characters; CRLF line
endings, so cuts can fall between CR and LF; a tool call whose JSON arguments arrive in fragments. ``expected``
gives the whole-input result from a plain StreamSession on the host, the reference every transport must match.
"""

from __future__ import annotations

import json
import random
from typing import Any

from webclient import StreamSession, advise_retry

#: Telemetry fields that depend on timing or on how the bytes were chunked.
VOLATILE_TELEMETRY = ("observed_at", "duration_ms", "chunk_count")


def frame(*events: object, newline: str = "\r\n") -> bytes:
    """``data: <json or str>`` events, each ended by a blank line, with raw UTF-8."""
    out = []
    for event in events:
        text = event if isinstance(event, str) else json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        out.append(f"data: {text}{newline}{newline}")
    return "".join(out).encode()


def chunk(content: str | None = None, tool: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    """One ``chat.completion.chunk`` envelope."""
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if tool is not None:
        delta["tool_calls"] = [tool]
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


TEXT_PARTS = ("Grüße aus Zürich \u2013 ", "€ 5 😀, ", "ok.")
#: Text answer, complete.
CHAT = frame(*(chunk(p) for p in TEXT_PARTS), chunk(finish="stop"), "[DONE]")
#: Text plus one tool call whose arguments arrive in three fragments, complete.
TOOL = frame(
    chunk("Wetter in München: "),
    chunk(tool={"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}),
    chunk(tool={"index": 0, "function": {"arguments": '{"city": "Mün'}}),
    chunk(tool={"index": 0, "function": {"arguments": 'chen 😀", "da'}}),
    chunk(tool={"index": 0, "function": {"arguments": 'ys": 3}'}}),
    chunk(finish="tool_calls"),
    "[DONE]",
)
#: The first two events of CHAT only: a stream cut before its terminal condition.
CHAT_HEAD = frame(chunk(TEXT_PARTS[0]), chunk(TEXT_PARTS[1]))
#: A keep-alive comment line.
COMMENT = b": keep-alive\r\n\r\n"

ID_CHAT_PARTS = ("Grü", "ße ", "😀", "!")
#: CHAT's shape with an SSE ``id:`` per event (1, 2, ...; [DONE] has none): a stream a generic SSE server could
#: continue after ``Last-Event-ID``. One element per event.
ID_CHAT_EVENTS = [b"id: %d\r\n" % (i + 1) + frame(event)
                  for i, event in enumerate([*(chunk(p) for p in ID_CHAT_PARTS), chunk(finish="stop")])] + [
    frame("[DONE]")]


#: A tool-call fragment of a type the openai-chat route does not know.
UNKNOWN_TOOL = {"index": 0, "id": "call_h", "type": "hologram", "hologram": {"x": 1}}
#: A complete answer made only of UNKNOWN_TOOL: ``protocol_error`` ``unknown_type`` unless the caller keeps unknown
#: items (then ``complete``, the fragment in ``items``).
UNKNOWN_ITEM = frame(chunk(tool=UNKNOWN_TOOL), chunk(finish="tool_calls"), "[DONE]")
#: DeepSeek-style ``reasoning_content`` before the text: the assistant message carries it back only on request.
REASONING = frame({**chunk(), "choices": [{"index": 0, "delta": {"reasoning_content": "Thinking…"},
                                          "finish_reason": None}]}, chunk("Done."), chunk(finish="stop"), "[DONE]")


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """A ``StreamResult.to_dict()`` without the fields that depend on timing or chunking."""
    telemetry = {k: v for k, v in result["telemetry"].items() if k not in VOLATILE_TELEMETRY}
    return {**result, "telemetry": telemetry}


def expected(data: bytes, route: str = "openai-chat") -> dict[str, Any]:
    """The comparable result of feeding ``data`` whole to a fresh session (status 200, text/event-stream), with
    the retry advice a transport records for a first, non-idempotent attempt."""
    session = StreamSession(route)
    session.open(200, "text/event-stream")
    session.feed(data)
    result = session.finish()
    advice = advise_retry(result, text_shown=bool(result.text), tools_run=False, idempotent=False, attempt=1)
    result = result.with_telemetry(result.telemetry.with_fields(retry_decision=advice.decision.value))
    return comparable(result.to_dict())


def tricky_cuts(data: bytes) -> list[int]:
    """Offsets that split a multi-byte character, a CRLF pair or a JSON string/fragment."""
    cuts = set()
    for i in range(1, len(data)):
        inside_char = data[i] & 0xC0 == 0x80  # a UTF-8 continuation byte: cutting before it splits a character
        crlf = data[i - 1 : i + 1] == b"\r\n"
        in_json = data[i - 1 : i] in (b'"', b":", b"{", b"\\")
        if inside_char or crlf or in_json:
            cuts.add(i)
    return sorted(cuts)


def cut_lists(data: bytes, *, seed: int = 7, random_count: int = 20) -> list[list[int]]:
    """Chunkings to replay: whole, byte by byte, each tricky offset alone, all tricky offsets at once, and
    seeded random multi-cut chunkings."""
    tricky = tricky_cuts(data)
    rng = random.Random(seed)
    lists = [[], list(range(1, len(data))), tricky]
    lists += [[c] for c in tricky]
    lists += [sorted(rng.sample(range(1, len(data)), rng.randint(2, 40))) for _ in range(random_count)]
    return lists
