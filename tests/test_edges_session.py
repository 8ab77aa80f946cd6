"""``StreamSession`` at its edges: calls after the end, buffers a caller may reuse, what the session
exposes while streaming, the last event ID around a failure, and a ceiling tripped at EOF.

Found by mutation testing (``build_scripts/mutation.py``): each test fails if a state check, a
property or an EOF rule of ``webclient/_session.py`` is changed. Byte streams go through
:func:`tests.helpers.assert_chunking_invariant` where the result could depend on the chunking.
"""

from __future__ import annotations

import pytest

from tests.helpers import assert_chunking_invariant
from tests.route_fixtures import outcome_of, sse
from webclient import Limits, Outcome, StreamSession, UsageError

CHAT = "openai-chat"
CHAT_OK = sse('{"choices": [{"index": 0, "delta": {"content": "hé"}, "finish_reason": null}]}',
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, "[DONE]")


def opened(**options: object) -> StreamSession:
    session = StreamSession(CHAT, **options)  # type: ignore[arg-type]
    session.open(200, "text/event-stream")
    return session


def test_finish_after_a_failure_returns_the_failure_once_and_a_second_finish_is_a_caller_bug() -> None:
    session = opened()
    session.feed(sse("not json"))
    result = session.finish()
    assert (result.outcome, result.stage) == (Outcome.PROTOCOL_ERROR, "envelope")
    with pytest.raises(UsageError, match=r"finish\(\) is not allowed in state finished"):
        session.finish()
    assert session.abort() is result and session.result is result


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (lambda s: s.feed(b"x"), r"feed\(\) is not allowed in state new"),
        (lambda s: (s.open(503, "text/event-stream"), s.open(200, "text/event-stream")),
         r"open\(\) is not allowed in state ended"),
        (lambda s: (s.open(200, "text/event-stream"), s.open(200, "text/event-stream")),
         r"open\(\) is not allowed in state open"),
        (lambda s: (s.open(200, "text/event-stream"), s.finish(), s.feed(b"")),
         r"feed\(\) is not allowed in state finished"),
    ],
    ids=["feed-new", "open-ended", "open-open", "feed-finished"],
)
def test_a_call_in_the_wrong_state_names_the_call_and_the_state(steps: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        steps(StreamSession(CHAT))  # type: ignore[operator]


@pytest.mark.parametrize("wrap", [bytearray, memoryview], ids=["bytearray", "memoryview"])
def test_a_buffer_the_caller_reuses_after_feed_does_not_change_what_was_fed(wrap: type) -> None:
    cut = CHAT_OK.index("é".encode()) + 1  # inside the two-byte character: one byte stays pending
    buf = bytearray(CHAT_OK[:cut])
    session = opened()
    session.feed(wrap(buf))
    buf[:] = b"\xff" * len(buf)  # the caller refills its buffer
    session.feed(wrap(bytearray(CHAT_OK[cut:])))
    result = session.finish()
    assert (result.outcome, result.text) == (Outcome.COMPLETE, "hé")


def test_a_memoryview_of_wider_items_is_fed_as_its_bytes() -> None:
    # A buffer of 2-byte items (array('H'), a cast view): its bytes are the stream, whatever the item size.
    # Searched item by item, no CR would be found (no item is 13: the stream holds no NUL byte), and the
    # CR-framed stream would be read as if it had no line breaks.
    data = CHAT_OK.replace(b"\n", b"\r")
    if len(data) % 2:
        data = b":x\r" + data  # (a comment line: a whole number of items)
    view = memoryview(data).cast("H")
    assert 13 not in view and view.tobytes() == data
    session = opened()
    session.feed(view)
    result = session.finish()
    assert (result.outcome, result.text) == (Outcome.COMPLETE, "hé")


def test_an_exception_a_route_did_not_classify_ends_the_attempt_protocol_error_envelope(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The safety net of the module docstring: a route bug (here a TypeError from its envelope step) is a
    # classified outcome, not an exception out of feed().
    from webclient._routes.openai_chat import OpenAIChatAccumulator

    def broken(self: object, event: object) -> None:
        raise TypeError("a route bug")

    monkeypatch.setattr(OpenAIChatAccumulator, "handle", broken)
    session = opened()
    updates = session.feed(CHAT_OK)
    result = session.finish()
    assert (result.outcome, result.stage, result.committed) == (Outcome.PROTOCOL_ERROR, "envelope", False)
    assert [u.kind for u in updates] == ["failed"]


def test_by_default_an_unknown_type_fails_closed_and_reasoning_content_is_not_sent_back() -> None:
    unknown = sse({"type": "message_start", "message": {"id": "m", "model": "c", "usage": {}}},
                  {"type": "content_block_start", "index": 0, "content_block": {"type": "future_block"}})
    assert outcome_of("anthropic-messages", unknown) == ("protocol_error", "unknown_type")
    assert outcome_of("anthropic-messages", unknown, keep_unknown_items=True) == ("truncated", "eof")
    thought = sse({"choices": [{"index": 0, "delta": {"reasoning_content": "t", "content": "a"}}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, "[DONE]")
    for options, sent_back in (({}, False), ({"include_reasoning_content": True}, True)):
        session = opened(**options)
        session.feed(thought)
        result = session.finish()
        assert (result.outcome, result.reasoning) == (Outcome.COMPLETE, "t")
        assert ("reasoning_content" in result.assistant_message) is sent_back


def test_pending_bytes_line_and_event_are_visible_while_streaming() -> None:
    session = opened()
    session.feed(b'data: {"a":\ndata: 1}\n' + b"data: xy" + "é".encode()[:1])
    # The data lines so far, each with its newline; the pending line; the pending byte.
    assert (session.pending_bytes, session.pending_line_chars, session.pending_event_chars) == (1, 8, 9)
    assert session.finishable is False and session.done is False


def test_finishable_is_exactly_true_or_false() -> None:
    session = opened()
    session.feed(CHAT_OK)
    assert session.finishable is True
    session.feed(b": x")
    assert session.finishable is False


def test_default_identifiers_leave_telemetry_empty() -> None:
    result = opened().finish()
    assert (result.telemetry.request_id, result.telemetry.model_alias) == (None, None)


def test_a_result_without_any_choice_has_empty_text_channels() -> None:
    session = StreamSession(CHAT)
    session.open(503, "text/event-stream")
    result = session.finish()
    assert (result.text, result.refusal, result.reasoning, result.tool_calls, result.choices) == ("", "", "", (), ())


def test_the_last_event_id_is_the_last_consumed_events_not_the_failing_ones() -> None:
    ok = b'id: 1\ndata: {"choices": []}\n\nid: 2\ndata: {"choices": []}\n\n'
    session = opened()
    session.feed(ok + b"id: 3\ndata: not json\n\n")
    assert (session.result is not None and session.result.stage) == "envelope"
    assert session.last_event_id == "2"
    session = opened()
    session.feed(ok + b": comment\n\n")
    assert session.last_event_id == "2"
    session = opened()
    session.feed(ok)  # the last event of the feed is the last one consumed
    assert session.last_event_id == "2"
    session = opened()
    session.feed(b'id: 1\ndata: not json\n\n')
    assert session.last_event_id == ""


def test_a_replace_mode_flush_at_eof_that_passes_the_line_ceiling_is_buffer_limit() -> None:
    # The cut character becomes U+FFFD at EOF, one character more than the pending line may hold.
    data = b"data: xxxx\xe2\x82"

    def run(chunks: list[bytes]) -> tuple[str, str | None]:
        session = opened(utf8_errors="replace", limits=Limits(max_line_chars=10))
        for chunk in chunks:
            session.feed(chunk)
        result = session.finish()
        return result.outcome.value, result.stage

    assert assert_chunking_invariant(run, data) == ("buffer_limit", "line")
    assert outcome_of(CHAT, b"data: xxxx\xe2\x82", utf8_errors="replace", limits=Limits(max_line_chars=11)) == (
        "truncated", "eof")


def test_a_stream_with_carriage_return_line_endings_completes_under_every_chunking() -> None:
    data = CHAT_OK.replace(b"\n", b"\r")

    def run(chunks: list[bytes]) -> tuple[str, str | None, str, int]:
        session = opened()
        for chunk in chunks:
            session.feed(chunk)
        result = session.finish()
        return result.outcome.value, result.stage, result.text, session.events_seen

    assert assert_chunking_invariant(run, data) == ("complete", None, "hé", 3)


def test_a_retry_field_after_the_last_event_leaves_that_event_s_id_as_the_last_event_id() -> None:
    data = (b'id: 1\ndata: {"choices": []}\n\nid: 2\ndata: {"choices": []}\n\nretry: 5\n\n'
            b'data: {"choices": []}\n\nretry: 7\n\n')

    def run(chunks: list[bytes]) -> tuple[str, int | None, bool]:
        session = opened()
        for chunk in chunks:
            session.feed(chunk)
        return session.last_event_id, session.reconnect_ms, session.done

    assert assert_chunking_invariant(run, data) == ("2", 7, False)
