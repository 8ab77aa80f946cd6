"""Realistic OpenAI Responses streams cut and resumed, for the resume tests (core, CLI and transports).

The streams are real recordings read in place from ``../shared/fixtures`` (provenance in its ``SOURCES.md``):

* ``USAGE``: pydantic-ai's live api.openai.com recording ``test_openai_responses_streaming_usage`` -- ``event:``
  lines, a reasoning item with ``encrypted_content`` (output_index 0), a function call (output_index 1),
  ``sequence_number`` 0..13, usage;
* ``AZURE_TOOL`` / ``AZURE_TEXT``: vercel-ai's Azure Responses recordings (JSONL payloads framed
  ``data: <line>\\n\\n`` as vercel's harness does): a function call whose arguments arrive in six deltas, and a
  text message;
* ``OPENROUTER``: pydantic-ai's OpenRouter recording: data-only frames, ``sequence_number`` at the end of each
  object, a reasoning item then a message, a trailing ``data: [DONE]``;
* ``ENCRYPTED``: the first response of vercel-ai's ``openai__openai-reasoning-encrypted-content`` recording (four
  streams concatenated; split at ``response.created`` as ``SOURCES.md`` says): reasoning items with
  ``encrypted_content``, 56 numbered events.

What a resume looks like on the wire (OpenAI "resume streaming" of a background response): the first response is
cut -- here inside event ``k``, so the decoder/parser hold part of it -- and the resume request
``GET .../responses/{id}?stream=true&starting_after=N`` returns the events numbered above ``N``; a server may
repeat some before that (the *overlap*), which the session drops.
"""

from __future__ import annotations

import json
from typing import Any

from tests.route_fixtures import FIXTURES, LOCAL, RESPONSES, frame_jsonl, merge_deltas
from webclient import StreamResult, StreamSession

USAGE = (FIXTURES / "pydantic-ai" /
         "test_openai_responses__test_openai_responses_streaming_usage.interaction0.sse").read_bytes()
OPENROUTER = (FIXTURES / "pydantic-ai" /
              "test_openai_responses__test_openai_responses_raw_cot_stream_openrouter.interaction0.sse").read_bytes()


def _jsonl(name: str, response: int = 0) -> bytes:
    """The ``response``-th stream (split at each ``response.created``) of a vercel-ai JSONL recording, framed."""
    lines = [line for line in (FIXTURES / "vercel-ai" / name).read_bytes().split(b"\n") if line.strip()]
    bounds = [*(i for i, line in enumerate(lines) if json.loads(line).get("type") == "response.created"), len(lines)]
    return frame_jsonl(lines[bounds[response]: bounds[response + 1]], RESPONSES)


AZURE_TOOL = _jsonl("azure__azure-tool-call.1.chunks.txt")
AZURE_TEXT = _jsonl("azure__azure-text.1.chunks.txt")
ENCRYPTED = _jsonl("openai__openai-reasoning-encrypted-content.1.chunks.txt")

#: A background response streamed whole, then fetched again with ``GET /v1/responses/{id}?stream=true&starting_after=0``
#: (pydantic-ai's live recording, ``tests/recordings/pydantic-ai``): the server's own resume of the same answer.
_BACKGROUND = "test_openai_responses__test_background_mode_streaming_starting_after_vcr.interaction{}.sse"
BACKGROUND_FIRST, BACKGROUND_RESUMED = ((LOCAL / "pydantic-ai" / _BACKGROUND.format(n)).read_bytes() for n in (0, 1))

#: name -> capture, for parametrized tests.
RECORDINGS = {"usage": USAGE, "azure_tool": AZURE_TOOL, "azure_text": AZURE_TEXT, "openrouter": OPENROUTER,
              "encrypted": ENCRYPTED}


def events_of(data: bytes) -> list[bytes]:
    """The capture cut after each blank line: one SSE event (or comment block) per piece, blank line included.
    The recordings here use LF line ends only."""
    assert b"\r" not in data
    pieces = data.split(b"\n\n")
    assert pieces.pop() == b"", "the capture must end with a blank line"
    return [piece + b"\n\n" for piece in pieces]


def payload(event: bytes) -> dict[str, Any] | None:
    """The JSON object of an event's data line, or ``None`` (comments, ``[DONE]``)."""
    for line in event.split(b"\n"):
        if line.startswith(b"data: {"):
            obj: dict[str, Any] = json.loads(line[6:])
            return obj
    return None


def sequence_of(event: bytes) -> int | None:
    obj = payload(event)
    return None if obj is None else obj.get("sequence_number")


def response_id(data: bytes) -> str:
    for event in events_of(data):
        obj = payload(event)
        if obj is not None and obj.get("type") == "response.created":
            return str(obj["response"]["id"])
    raise AssertionError("no response.created")


def numbered(data: bytes) -> list[int]:
    """Indexes (into :func:`events_of`) of the numbered events."""
    return [i for i, event in enumerate(events_of(data)) if sequence_of(event) is not None]


def cut_inside(data: bytes, k: int) -> bytes:
    """The first ``k`` events whole, then the first half of event ``k`` (a cut mid-event)."""
    events = events_of(data)
    return b"".join(events[:k]) + events[k][: len(events[k]) // 2]


def from_event(data: bytes, first: int, last: int | None = None) -> bytes:
    """Events ``first`` .. ``last - 1`` (to the end by default): what a resume request returns."""
    return b"".join(events_of(data)[first:last])


def last_number_before(data: bytes, k: int) -> int:
    """The sequence number of the last numbered event among the first ``k``."""
    numbers = [n for n in (sequence_of(e) for e in events_of(data)[:k]) if n is not None]
    return numbers[-1]


def resume_path(url: str, data: bytes = b"") -> str:
    """The path a route resume of ``data``'s response (``USAGE`` by default) requests after a request to
    ``url``: the URL's path plus ``/{id}``."""
    return "/" + url.split("/", 3)[3] + "/" + response_id(data or USAGE)


#: Transport tests: ``USAGE``'s response id; its first response is cut inside event ``USAGE_K``, after number
#: ``USAGE_N``.
USAGE_ID = response_id(USAGE)
USAGE_K = numbered(USAGE)[7]
USAGE_N = last_number_before(USAGE, USAGE_K)


def run_chain(captures: list[list[bytes]], route: str = RESPONSES, *, statuses: tuple[int, ...] = (),
              **session_kwargs: Any) -> tuple[StreamSession, list[dict[str, Any]]]:
    """Feed each capture (as the given chunks) into a session, each after the first into
    ``StreamSession.resume(previous)``; return the last session and every provisional update, in order.
    ``statuses[i]`` is the HTTP status of capture ``i`` (default 200)."""
    updates: list[dict[str, Any]] = []
    session = StreamSession(route, **session_kwargs)
    for i, chunks in enumerate(captures):
        if i:
            session = StreamSession.resume(session)
        status = statuses[i] if i < len(statuses) else 200
        updates += [u.to_dict() for u in session.open(status, "text/event-stream")]
        for chunk in chunks:
            if session.done:
                break
            updates += [u.to_dict() for u in session.feed(chunk)]
        session.finish()
    return session, [u for u in updates if u["kind"] not in ("committed", "failed")]


def cut_and_resumed(route: str, data: bytes, events: int) -> tuple[StreamResult, StreamResult]:
    """``data`` (blank-line framed) cut after its first ``events`` events and finished, then resumed with the
    rest (``StreamSession.resume`` refuses a session that is not resumable): the cut result and the resumed one."""
    parts = data.split(b"\n\n")
    first, rest = b"\n\n".join(parts[:events]) + b"\n\n", b"\n\n".join(parts[events:])
    session = StreamSession(route)
    session.open(200, "text/event-stream")
    session.feed(first)
    cut = session.finish()
    resumed = StreamSession.resume(session)
    resumed.open(200, "text/event-stream")
    resumed.feed(rest)
    return cut, resumed.finish()


#: Telemetry fields that are the answer's (accumulated across resumed sessions), not the HTTP attempt's.
ANSWER_TELEMETRY = ("route", "http_status", "content_type_valid", "open_payload_accumulator_count",
                    "terminal_condition_seen", "stop_reason", "stream_outcome", "buffer_limit_stage")


def answer_view(result: dict[str, Any]) -> dict[str, Any]:
    """A result dict without the per-attempt telemetry counts: what an uninterrupted stream and the same stream
    interrupted and resumed must agree on."""
    telemetry = {k: v for k, v in result["telemetry"].items() if k in ANSWER_TELEMETRY}
    return {**result, "telemetry": telemetry}


def chain_view(captures: list[list[bytes]], route: str = RESPONSES) -> tuple[object, ...]:
    """The chunking-invariant view of a resumed chain: the answer view, the merged updates, the final kind."""
    session, updates = run_chain(captures, route)
    assert session.result is not None and session.final_update is not None
    return answer_view(session.result.to_dict()), merge_deltas(updates), session.final_update.kind


def uninterrupted_view(data: bytes, route: str = RESPONSES) -> tuple[object, ...]:
    """:func:`chain_view` of the whole capture as one stream."""
    return chain_view([[data]], route)
