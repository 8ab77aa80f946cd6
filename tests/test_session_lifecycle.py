"""``StreamSession``: the response gate, the lifecycle, EOF rules and first-failure-wins."""

from __future__ import annotations

import pytest

from tests.helpers import assert_chunking_invariant
from tests.route_fixtures import check, comparable, outcome_of, sse
from webclient import Committed, Failed, Limits, Outcome, StreamSession, UsageError

CHAT_OK = sse(
    {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    "[DONE]",
)


@pytest.mark.parametrize("content_type", ["text/event-stream", "Text/Event-Stream", "text/event-stream; charset=utf-8",
                                          "  text/event-stream ;charset=UTF-8", "TEXT/EVENT-STREAM;x=y"])
def test_gate_accepts_the_event_stream_essence_whatever_its_case_and_parameters(content_type: str) -> None:
    session = StreamSession("openai-chat")
    assert session.open(200, content_type) == []
    session.feed(CHAT_OK)
    assert session.finish().outcome is Outcome.COMPLETE


@pytest.mark.parametrize(
    ("status", "content_type", "stage", "valid"),
    [
        (500, "text/event-stream", "status", True),
        (201, "text/event-stream", "status", True),
        (301, "text/html", "status", False),
        (200, "application/json", "media_type", False),
        (200, "text/html; charset=utf-8", "media_type", False),
        (200, "text/event-streams", "media_type", False),
        (200, None, "media_type", False),
        (200, "", "media_type", False),
    ],
)
def test_gate_failure_is_protocol_error_and_the_body_is_never_parsed(
    status: int, content_type: str | None, stage: str, valid: bool
) -> None:
    session = StreamSession("openai-chat")
    updates = session.open(status, content_type)
    assert len(updates) == 1 and isinstance(updates[0], Failed)
    assert (updates[0].outcome, updates[0].stage) == (Outcome.PROTOCOL_ERROR, stage)
    assert session.done and session.feed(CHAT_OK) == []
    result = session.finish()
    assert (result.outcome, result.stage, result.http_status) == (Outcome.PROTOCOL_ERROR, stage, status)
    t = result.telemetry
    assert (t.http_status, t.content_type_valid, t.bytes_received, t.chunk_count) == (status, valid, 0, 0)
    assert session.events_seen == 0


def test_complete_is_decided_only_at_eof_with_a_committed_final_update() -> None:
    session = StreamSession("openai-chat")
    session.open(200, "text/event-stream")
    updates = session.feed(CHAT_OK)
    assert not session.done and all(not isinstance(u, Committed | Failed) for u in updates)
    result = session.finish()
    assert session.done and result.committed and session.result is result
    assert isinstance(session.final_update, Committed) and session.final_update.result is result
    assert session.events_seen == 3


def test_a_failure_ends_consumption_with_a_failed_update_and_later_feeds_return_nothing() -> None:
    session = StreamSession("openai-chat")
    session.open(200, "text/event-stream")
    updates = session.feed(sse("not json") + CHAT_OK)
    assert isinstance(updates[-1], Failed) and updates[-1].stage == "envelope"
    assert session.done and session.events_seen == 1
    assert session.feed(CHAT_OK) == []
    assert session.finish() is session.result


@pytest.mark.parametrize(
    ("tail", "stage"),
    [
        (b"", None),
        (b"data: {}\n", "pending_event"),
        (b"event: ping\n", "pending_event"),
        (b": partial comm", "pending_line"),
        (b"\xe2\x82", "pending_bytes"),
    ],
)
def test_pending_event_line_or_bytes_at_eof_after_the_terminal_is_truncated(tail: bytes, stage: str | None) -> None:
    expected = ("complete", None) if stage is None else ("truncated", stage)
    assert outcome_of("openai-chat", CHAT_OK + tail) == expected


def test_eof_before_the_terminal_is_truncated_eof_whatever_is_pending() -> None:
    assert outcome_of("openai-chat", CHAT_OK[:-3]) == ("truncated", "eof")
    assert outcome_of("openai-chat", b"") == ("truncated", "eof")


def test_invalid_utf8_is_decode_error_after_the_events_before_it() -> None:
    result, _ = check("openai-chat", CHAT_OK[:90] + b"\xff" + CHAT_OK[90:])
    assert (result.outcome.value, result.stage) == ("decode_error", "utf8")
    assert result.text == "hi"


def test_replace_mode_turns_invalid_utf8_into_u_fffd_text() -> None:
    data = CHAT_OK.replace(b'"hi"', b'"h\xffi"')
    result, _ = check("openai-chat", data, utf8_errors="replace")
    assert (result.outcome.value, result.text) == ("complete", "h\ufffdi")


def test_route_failure_earlier_in_a_chunk_wins_over_a_later_sse_ceiling() -> None:
    data = sse("not json") + b"data: " + b"x" * 100 + b"\n\n"
    assert outcome_of("openai-chat", data, limits=Limits(max_line_chars=50)) == ("protocol_error", "envelope")
    # ... and an SSE ceiling earlier in the stream wins over a route failure after it.
    data = b"data: " + b"x" * 100 + b"\n\n" + sse("not json")
    assert outcome_of("openai-chat", data, limits=Limits(max_line_chars=50)) == ("buffer_limit", "line")


def test_event_ceiling_is_buffer_limit_event() -> None:
    data = b"data: aaaa\ndata: bbbb\ndata: cccc\n\n"
    assert outcome_of("openai-chat", data, limits=Limits(max_event_chars=12)) == ("buffer_limit", "event")


def test_abort_before_open_during_streaming_and_after_the_end() -> None:
    session = StreamSession("gemini")
    result = session.abort(Outcome.TIMEOUT, "connect")
    assert (result.outcome, result.stage, result.http_status) == (Outcome.TIMEOUT, "connect", None)
    assert isinstance(session.final_update, Failed)

    session = StreamSession("openai-chat")
    session.open(200, "text/event-stream")
    session.feed(CHAT_OK[:60])
    result = session.abort()
    assert (result.outcome, result.stage) == (Outcome.CANCELLED, "caller")
    assert session.feed(b"more") == []

    session = StreamSession("openai-chat")
    session.open(200, "text/event-stream")
    session.feed(CHAT_OK)
    done = session.finish()
    assert session.abort(Outcome.TIMEOUT, "idle") is done and done.outcome is Outcome.COMPLETE


@pytest.mark.parametrize(
    "misuse",
    [
        lambda s: s.feed(b"x"),  # before open
        lambda s: s.finish(),  # before open
        lambda s: (s.open(200, "text/event-stream"), s.open(200, "text/event-stream")),
        lambda s: (s.open(200, "text/event-stream"), s.finish(), s.finish()),
        lambda s: (s.open(200, "text/event-stream"), s.finish(), s.feed(b"x")),
        lambda s: (s.open(200, "text/event-stream"), s.feed("text")),  # type: ignore[arg-type]
        lambda s: s.abort(Outcome.COMPLETE),
        lambda s: s.abort(Outcome.TIMEOUT, "Idle Deadline!"),
        lambda s: s.open("200", "text/event-stream"),  # type: ignore[arg-type]
    ],
    ids=["feed-before-open", "finish-before-open", "open-twice", "finish-twice", "feed-after-finish",
         "feed-str", "abort-complete", "abort-bad-stage", "status-not-int"],
)
def test_misuse_raises_usage_error(misuse: object) -> None:
    with pytest.raises(UsageError):
        misuse(StreamSession("openai-chat"))  # type: ignore[operator]


@pytest.mark.parametrize(
    "kwargs",
    [{"limits": {"max_text_chars": 1}}, {"accepted_stop_reasons": "stop"}, {"accepted_stop_reasons": [1]},
     {"utf8_errors": "ignore"}, {"request_id": 5}, {"tools": ["weather"]}, {"tools": {"": {}}},
     {"tools": {"weather": {"type": "object", "oneOf": []}}}, {"tools": {"weather": 42}}, {"model_alias": 5},
     {"keep_unknown_items": 1}, {"include_reasoning_content": "yes"}, {"keep_unknown_items": None}],
)
def test_bad_constructor_arguments_raise_usage_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        StreamSession("openai-chat", **kwargs)  # type: ignore[arg-type]


def test_unknown_route_raises_usage_error_naming_the_routes() -> None:
    with pytest.raises(UsageError, match="openai-chat"):
        StreamSession("openai-completions")


def test_updates_and_results_are_json_able_dicts() -> None:
    import json

    data, updates, final, _ = assert_chunking_invariant(lambda c: comparable("openai-chat", c), CHAT_OK)
    assert json.loads(json.dumps(data)) == data and final == "committed"
    assert all(json.loads(json.dumps(u)) == u and "kind" in u for u in updates)


def test_comment_lines_count_keep_alives_that_are_not_events() -> None:
    session = StreamSession("openai-chat")
    session.open(200, "text/event-stream")
    session.feed(b": OPENROUTER PROCESSING\n\n: ping\n\n" + CHAT_OK)
    assert (session.comment_lines, session.events_seen) == (2, 3)


def test_anthropic_pings_and_comments_are_keepalives_not_content_events() -> None:
    session = StreamSession("anthropic-messages")
    session.open(200, "text/event-stream")
    session.feed(b': hi\n\nevent: ping\ndata: {"type": "ping"}\n\nevent: ping\ndata: {"type": "ping"}\n\n')
    assert (session.events_seen, session.content_events_seen, session.keepalives_seen) == (2, 0, 3)
    session.feed(b'event: message_start\ndata: {"type": "message_start", "message": {"id": "m", "usage": {}}}\n\n')
    assert (session.events_seen, session.content_events_seen, session.keepalives_seen) == (3, 1, 3)
