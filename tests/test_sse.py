"""Layer 2: the WHATWG SSE parser (through the bytes pipeline), its ceilings and its cost."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import assert_chunking_invariant, feed_either, split_at
from tests.route_fixtures import FIXTURES
from tests.sse_reference import reference_parse
from webclient import (
    DEFAULT_LIMITS,
    EventStreamParser,
    Failure,
    Limits,
    Outcome,
    RetryField,
    SSEEvent,
    SSEParser,
    StreamSession,
    UsageError,
    UTF8Decoder,
)


def M(data: str, last_event_id: str = "", type: str = "message") -> SSEEvent:
    return SSEEvent(type, data, last_event_id)


def parse(chunks: list[bytes], limits: Limits = DEFAULT_LIMITS, errors: str = "replace") -> dict[str, Any]:
    """Everything observable about one run, for invariance comparisons."""
    stream = EventStreamParser(limits, utf8_errors=errors)  # type: ignore[arg-type]
    items: list[object] = []
    for i, chunk in enumerate(chunks):
        items.extend(feed_either(stream, i, chunk))  # (feed and feed_tuples in turn)
        if stream.failure is not None:
            break
    else:
        items.extend(stream.close())
    p = stream.parser
    return {
        "items": items,
        "failure": stream.failure,
        "events": p.events_dispatched,
        "comments": p.comment_lines,
        "unknown": p.unknown_fields,
        "ids_ignored": p.ids_ignored,
        "retries_rejected": p.retries_rejected,
        "last_event_id": p.last_event_id,
        "pending_line": stream.pending_line_chars,
        "pending_event": stream.pending_event_chars,
        "clean": stream.ended_cleanly,
    }


def items_of(data: bytes, **kw: Any) -> list[object]:
    return assert_chunking_invariant(lambda c: parse(c, **kw), data)["items"]


X = "x" * 2048

# (id, input bytes, expected items). Cases named format-* port web-platform-tests
# eventsource/format-*.any.js; their server (resources/message.py) sends
# message + ("\n\n" unless newline=none) + "\n".
CONFORMANCE = [
    ("format-bom", "\ufeffdata:1\n\n\ufeffdata:2\n\ndata:3\n\n\n".encode(), [M("1"), M("3")]),
    ("format-bom-2", "\ufeff\ufeffdata:1\n\ndata:2\n\ndata:3\n\n\n".encode(), [M("2"), M("3")]),
    ("format-bom-utf-16", b"\xfe\xffdata:1\n\ndata:2\n\ndata:3\n\n\n", [M("2"), M("3")]),
    (
        "format-comments",
        f"data:1\r:\0\n:\r\ndata:2\n:{X}\rdata:3\n:data:fail\r:{X}\ndata:4\n\n".encode(),
        [M("1\n2\n3\n4")],
    ),
    (
        "format-data-before-final-empty-line",
        b"retry:1000\ndata:test1\n\nid:test\ndata:test2\n",
        [RetryField(1000), M("test1")],
    ),
    ("format-field-data", b"data:\n\ndata\ndata\n\ndata:test\n\n\n", [M(""), M("\n"), M("test")]),
    ("format-field-event", b"event:test\ndata:x\n\ndata:x\n\n\n", [M("x", type="test"), M("x")]),
    ("format-field-event-empty", b"event: \ndata:data\n\n\n", [M("data")]),
    ("format-field-id", b"id: 1\ndata: a\n\nid\ndata: b\n\n\n", [M("a", "1"), M("b", "")]),
    ("format-field-id-2", b"id:1\ndata:a\n\ndata:b\n\n\n", [M("a", "1"), M("b", "1")]),
    ("format-field-id-null", b"id: x\ndata: a\n\nid: 1\x002\ndata: b\n\n\n", [M("a", "x"), M("b", "x")]),
    (
        "format-field-parsing",
        b"data:\0\ndata:  2\rData:1\ndata\0:2\ndata:1\r\0data:4\nda-ta:3\rdata_5\ndata:3\rdata:\r\n"
        b" data:32\ndata:4\n\n",
        [M("\0\n 2\n1\n3\n\n4")],
    ),
    ("format-field-retry", b"retry:03000\ndata:x\n\n\n", [RetryField(3000), M("x")]),
    ("format-field-retry-bogus", b"retry:3000\nretry:1000x\ndata:x\n\n\n", [RetryField(3000), M("x")]),
    ("format-field-retry-empty", b"retry\ndata:test\n\n\n", [M("test")]),
    (
        "format-field-unknown",
        b"data:test\n data\ndata\nfoobar:xxx\njustsometext\n:thisisacommentyay\ndata:test\n\n\n",
        [M("test\n\ntest")],
    ),
    ("format-leading-space", b"data:\ttest\rdata: \ndata:test\n\n\n", [M("\ttest\n\ntest")]),
    ("format-newlines", b"data:test\r\ndata\ndata:test\r\n\r\n", [M("test\n\ntest")]),
    ("format-null-character", b"data:\0\n\n\n", [M("\0")]),
    ("format-utf-8", "data:ok\u2026\n\n\n".encode(), [M("ok\u2026")]),
    # Own cases, each a rule from sse-rules.md.
    ("cr-cr-lf-lf-is-three-terminators", b"data:a\r\r\n\ndata:b\n\n", [M("a"), M("b")]),
    ("unicode-separators-are-data", "data: a\u2028b\x85c\x0bd\x0ce\x1cf\u2029\n\n".encode(),
     [M("a\u2028b\x85c\x0bd\x0ce\x1cf\u2029")]),
    ("meta-only-blocks-fire-nothing-but-reset-type-and-set-id",
     b"event: x\n\nid: 3\n\nretry: 7\n\n: c\n\ndata: y\n\n", [RetryField(7), M("y", "3")]),
    ("empty-event-resets-an-earlier-event-in-block", b"event: a\nevent:\ndata: z\n\n", [M("z")]),
    ("one-trailing-lf-removed", b"data\ndata\n\n", [M("\n")]),
    ("lone-cr-at-eof-dispatches", b"data: x\n\r", [M("x")]),
    ("field-names-are-case-sensitive", b"Data: x\nDATA: y\ndata: z\n\n", [M("z")]),
    ("exactly-one-space-removed", b"data:  two\n\n", [M(" two")]),
    ("tab-is-not-stripped", b"data:\tt\n\n", [M("\tt")]),
    ("colon-in-value-kept", b"data: a: b:c\n\n", [M("a: b:c")]),
    ("value-without-space", b"event:e\ndata:d\n\n", [M("d", type="e")]),
    ("eof-discards-pending-event", b"data: x\n\ndata: y\n", [M("x")]),
    ("eof-discards-partial-line", b"data: x\n\ndata: y", [M("x")]),
    ("last-event-id-persists", b"id: 1\ndata: a\n\ndata: b\n\n", [M("a", "1"), M("b", "1")]),
    ("id-applies-to-its-own-event", b"data: a\nid: 2\n\n", [M("a", "2")]),
    ("mid-stream-bom-makes-an-unknown-field", "data: a\n\n\ufeffdata: b\n\n".encode(), [M("a")]),
    ("retry-leading-zeros-decimal", b"retry: 0010\n", [RetryField(10)]),
    ("retry-signs-spaces-underscores-rejected", b"retry: +5\nretry:  5\nretry: 1_0\nretry: -1\nretry: 5 \n", []),
    ("retry-non-ascii-digits-rejected", "retry: \u0663\nretry: \u00b2\nretry: \uff11\n".encode(), []),
    ("retry-too-many-digits-rejected", b"retry: " + b"9" * 17 + b"\nretry: " + b"9" * 16 + b"\n",
     [RetryField(int("9" * 16))]),
    ("retry-applies-before-dispatch-even-if-block-is-cut", b"data: a\nretry: 42\n", [RetryField(42)]),
    ("data-line-without-value-appends-empty-line", b"data\n\n", [M("")]),
    ("many-blank-lines-dispatch-once", b"data: a\n\n\n\n\r\n\r\rdata: b\n\n", [M("a"), M("b")]),
    ("invalid-utf8-replaced-in-data", b"data: a\xffb\n\n", [M("a\ufffdb")]),
]


@pytest.mark.parametrize(("data", "expected"), [pytest.param(d, e, id=i) for i, d, e in CONFORMANCE])
def test_conformance_case_parses_identically_under_every_chunking(data: bytes, expected: list[object]) -> None:
    assert items_of(data) == expected


def test_feed_tuples_gives_the_events_of_feed_as_plain_tuples_and_retry_fields_as_they_are() -> None:
    data = "retry: 20\nid: 4\nevent: delta\ndata: a\n\ndata: b\n\n"
    text_parser, text_twin = SSEParser(), SSEParser()
    events, tuples = text_parser.feed(data), text_twin.feed_tuples(data)
    assert events == [RetryField(20), SSEEvent("delta", "a", "4"), SSEEvent("message", "b", "4")]
    assert [item.__class__ for item in events] == [RetryField, SSEEvent, SSEEvent]
    assert tuples == [RetryField(20), ("delta", "a", "4"), ("message", "b", "4")]
    assert [item.__class__ for item in tuples] == [RetryField, tuple, tuple]
    stream, twin = EventStreamParser(), EventStreamParser()
    assert stream.feed(data.encode()) == events and twin.feed_tuples(data.encode()) == tuples
    assert twin.feed_tuples(b"data: c\n\n")[0].__class__ is tuple
    assert stream.close() == [] and twin.close_tuples() == []


def test_counters_report_what_the_parser_ignored() -> None:
    data = b": c1\n:c2\nfoo: bar\nData: x\nid: a\x00b\nretry: x\ndata: ok\n\n"
    result = assert_chunking_invariant(parse, data)
    assert result["items"] == [M("ok")]
    assert (result["comments"], result["unknown"], result["ids_ignored"], result["retries_rejected"]) == (2, 2, 1, 1)


def test_pending_state_at_eof_is_reported_not_dispatched() -> None:
    result = assert_chunking_invariant(parse, b"data: ab\ndata: c")
    assert result["items"] == []
    assert (result["pending_line"], result["pending_event"], result["clean"]) == (7, 3, False)


def test_a_complete_stream_ends_cleanly() -> None:
    assert assert_chunking_invariant(parse, b"data: a\n\n: bye\n")["clean"] is True


def test_an_event_type_without_blank_line_is_pending_at_eof() -> None:
    assert assert_chunking_invariant(parse, b"data: a\n\nevent: x\n")["clean"] is False


def test_a_character_cut_at_eof_is_not_a_clean_end() -> None:
    result = assert_chunking_invariant(lambda c: parse(c, errors="strict"), b"data: a\n\n\xe2\x82")
    assert (result["items"], result["failure"], result["clean"]) == ([M("a")], None, False)


def test_a_cr_ending_a_chunk_terminates_its_line_at_once() -> None:
    stream = EventStreamParser()
    assert stream.feed(b"data: x\r") == []
    assert stream.feed(b"\r") == [M("x")]  # no wait for a possible LF
    assert stream.feed(b"\ndata: y\r\n\r\n") == [M("y")]  # the LF after the CR is not a blank line


def test_crlf_split_across_chunks_is_one_terminator() -> None:
    stream = EventStreamParser()
    assert stream.feed(b"data: a\r") == []
    assert stream.feed(b"\n") == []
    assert stream.feed(b"data: b\r\n\r\n") == [M("a\nb")]


def test_a_bom_split_across_three_chunks_is_stripped() -> None:
    stream = EventStreamParser()
    for part in (b"\xef", b"\xbb", b"\xbf", b"data: a\n\n"):
        items = stream.feed(part)
    assert items == [M("a")]


def test_an_empty_first_feed_does_not_spend_the_bom() -> None:
    parser = SSEParser()
    assert parser.feed("") == []
    assert parser.feed_tuples("") == []  # (a list, as every feed returns: callers extend with it)
    assert parser.feed("\ufeffdata: a\n\n") == [M("a")]


# -- ceilings ------------------------------------------------------------------------------

LINE_LIMIT = Limits(max_line_chars=20)


@pytest.mark.parametrize("length", [19, 20])
def test_a_line_at_or_under_the_line_ceiling_passes(length: int) -> None:
    value = "v" * (length - 6)
    data = f"data: {value}\n\n".encode()
    result = assert_chunking_invariant(lambda c: parse(c, limits=LINE_LIMIT), data)
    assert result["items"] == [M(value)] and result["failure"] is None


def test_a_line_over_the_ceiling_trips_wherever_the_chunks_end() -> None:
    data = b"data: ok\n\n" + b"data: " + b"v" * 15 + b"\n\ndata: never\n\n"
    result = assert_chunking_invariant(lambda c: parse(c, limits=LINE_LIMIT), data)
    assert result["items"] == [M("ok")]
    assert result["failure"] is not None
    assert (result["failure"].outcome, result["failure"].stage) == (Outcome.BUFFER_LIMIT, "line")


def test_an_unterminated_line_over_the_ceiling_trips_before_eof() -> None:
    result = assert_chunking_invariant(lambda c: parse(c, limits=LINE_LIMIT), b": " + b"c" * 19)
    assert result["failure"] is not None and result["failure"].stage == "line"


def test_a_comment_line_counts_against_the_line_ceiling() -> None:
    result = assert_chunking_invariant(lambda c: parse(c, limits=LINE_LIMIT), b":" + b"c" * 20 + b"\n")
    assert result["failure"] is not None and result["failure"].stage == "line"


@pytest.mark.parametrize(("name_len", "trips"), [(13, False), (14, True)])
def test_an_event_line_over_the_ceiling_trips_in_a_typed_stream(name_len: int, trips: bool) -> None:
    name = "n" * name_len  # "event: " + name: 20 characters at 13
    data = f"event: a\ndata: 1\n\nevent: a\ndata: 2\n\nevent: {name}\ndata: 3\n\nevent: a\ndata: 4\n\n".encode()
    result = assert_chunking_invariant(lambda c: parse(c, limits=LINE_LIMIT), data)
    if trips:
        assert result["items"] == [M("1", type="a"), M("2", type="a")]
        assert result["failure"] is not None and result["failure"].stage == "line"
    else:
        assert result["items"] == [M("1", type="a"), M("2", type="a"), M("3", type=name), M("4", type="a")]
        parser = SSEParser(LINE_LIMIT)  # an event line at the ceiling does not need reading line by line
        assert parser.feed(data.decode()) == result["items"] and parser.lines_interpreted == 0


@pytest.mark.parametrize(("value_len", "trips"), [(14, False), (15, True)])
def test_a_typed_data_line_at_the_ceiling_passes_and_one_over_trips(value_len: int, trips: bool) -> None:
    value = "v" * value_len
    data = f"event: a\ndata: 1\n\nevent: a\ndata: {value}\n\nevent: a\ndata: 2\n\n".encode()
    result = assert_chunking_invariant(lambda c: parse(c, limits=LINE_LIMIT), data)
    expected = [M("1", type="a")] + ([] if trips else [M(value, type="a"), M("2", type="a")])
    assert result["items"] == expected
    assert (result["failure"] is not None) is trips


EVENT_LIMIT = Limits(max_line_chars=100, max_event_chars=10)


def test_an_event_data_buffer_at_the_ceiling_passes() -> None:
    # "abcd\n" + "efgh\n" = 10 characters of data buffer.
    result = assert_chunking_invariant(lambda c: parse(c, limits=EVENT_LIMIT), b"data: abcd\ndata: efgh\n\n")
    assert result["items"] == [M("abcd\nefgh")] and result["failure"] is None


def test_an_event_data_buffer_over_the_ceiling_trips_after_earlier_events() -> None:
    data = b"data: 1\n\ndata: abcd\ndata: efghi\n\n"
    result = assert_chunking_invariant(lambda c: parse(c, limits=EVENT_LIMIT), data)
    assert result["items"] == [M("1")]
    assert result["failure"] is not None
    assert (result["failure"].outcome, result["failure"].stage) == (Outcome.BUFFER_LIMIT, "event")


def test_an_invalid_byte_before_an_overlong_line_is_a_decode_error() -> None:
    data = b"data: a\n\n\xff" + b"v" * 40 + b"\n"
    result = assert_chunking_invariant(lambda c: parse(c, limits=LINE_LIMIT, errors="strict"), data)
    assert result["items"] == [M("a")]
    assert result["failure"] is not None and result["failure"].outcome is Outcome.DECODE_ERROR


def test_an_overlong_line_before_an_invalid_byte_is_a_buffer_limit() -> None:
    data = b"data: a\n\n" + b"v" * 40 + b"\xff\n"
    result = assert_chunking_invariant(lambda c: parse(c, limits=LINE_LIMIT, errors="strict"), data)
    assert result["items"] == [M("a")]
    assert result["failure"] is not None and result["failure"].stage == "line"


@pytest.mark.parametrize(("data", "trips"), [(b"data: abc\xe2\x82", False), (b"data: abcd\xe2\x82", True)])
def test_a_replacement_flushed_at_eof_counts_against_the_line_ceiling(data: bytes, trips: bool) -> None:
    # In replace mode the cut character becomes U+FFFD at close(): the pending line grows by one.
    limits = Limits(max_line_chars=10)
    result = assert_chunking_invariant(lambda c: parse(c, limits=limits), data)
    if trips:
        assert result["failure"] == Failure(Outcome.BUFFER_LIMIT, "line")
    else:
        assert (result["failure"], result["pending_line"]) == (None, 10)


def test_a_replacement_that_trips_the_line_ceiling_at_eof_ends_the_session_as_buffer_limit() -> None:
    line = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}'
    # A complete stream, then a line exactly at the ceiling whose last character was cut.
    data = line + b"\n\ndata: [DONE]\n\n" + b"data: " + b"x" * (len(line) - 6) + b"\xe2\x82"

    def finish(chunks: list[bytes]) -> tuple[Outcome, str | None]:
        session = StreamSession("openai-chat", limits=Limits(max_line_chars=len(line)), utf8_errors="replace")
        session.open(200, "text/event-stream")
        for chunk in chunks:
            session.feed(chunk)
        result = session.finish()
        return result.outcome, result.stage

    assert assert_chunking_invariant(finish, data, random_count=10) == (Outcome.BUFFER_LIMIT, "line")
    assert finish([data[:-2]]) == (Outcome.TRUNCATED, "pending_line")  # without the cut character


def test_a_cr_after_an_invalid_byte_does_not_count_as_a_line_break_before_it() -> None:
    # The pipeline tells the parser whether a chunk holds a CR from its bytes; in strict mode the
    # text stops at the invalid byte, so the CR after it is not in the text.
    result = assert_chunking_invariant(lambda c: parse(c, errors="strict"), b"data: a\n\ndata: b\xff\r\n\r\n")
    assert result["items"] == [M("a")]
    assert result["failure"] is not None and result["failure"].outcome is Outcome.DECODE_ERROR
    assert result["pending_line"] == len("data: b")


@pytest.mark.parametrize("errors", ["strict", "replace"])
@pytest.mark.parametrize(
    "data",
    [
        pytest.param("data: 你好 ✅ 😀\n\ndata: é\n\n".encode(), id="multibyte-characters-before-ascii"),
        pytest.param(b"data: a\xffb\n\ndata: c\n\n", id="invalid-byte-in-a-chunk-that-ends-in-ascii"),
        pytest.param(b"data: a\xe2\x82b\n\n", id="truncated-sequence-before-an-ascii-byte"),
        pytest.param("data: 😀\n\ndata: ".encode() + b"\xe2\x82", id="character-cut-at-eof"),
    ],
)
def test_a_chunk_decoded_whole_counts_and_fails_as_the_incremental_decoder_does(data: bytes, errors: str) -> None:
    # The pipeline decodes a chunk that ends with an ASCII byte, when no bytes are pending, in one
    # call instead of the decoder's incremental step (no character can be cut at its end): under any
    # chunking the text, the failure and its offset, and the decoder's counts are the same.
    def run(chunks: list[bytes]) -> tuple[Any, ...]:
        stream = EventStreamParser(utf8_errors=errors)  # type: ignore[arg-type]
        items = []
        for chunk in chunks:
            items.extend(stream.feed(chunk))
            if stream.failure is not None:
                break
        # (After a failure the bytes fed depend on where the chunk that held the bad byte ended.)
        fed = stream.bytes_received if stream.failure is None else None
        return items, stream.failure, stream.chars_decoded, stream.pending_bytes, fed

    _items, failure, chars, pending, fed = assert_chunking_invariant(run, data)
    decoder = UTF8Decoder(errors)  # type: ignore[arg-type]
    text = "".join(decoder.feed(bytes([byte])) for byte in data if decoder.failure is None)
    assert (failure, chars, pending) == (decoder.failure, len(text), decoder.pending_bytes)
    assert fed == (len(data) if failure is None else None)


@pytest.mark.parametrize("wrap", [bytearray, memoryview], ids=["bytearray", "memoryview"])
def test_chunks_given_as_bytearray_or_memoryview_parse_as_bytes_do(wrap: Any) -> None:
    # A memoryview has no ``decode``: the pipeline hands it to the decoder's incremental step, which
    # keeps a cut character's bytes as a copy (a memoryview could not be joined to the next chunk).
    data = "data: é 你好 😀\n\nevent: a\r\ndata: x\r\n\r\n".encode() + b"data: \xe2\x82"
    expected = parse([data], errors="strict")
    got = assert_chunking_invariant(lambda c: parse([wrap(chunk) for chunk in c], errors="strict"), data, expected)
    assert got["items"] == [M("é 你好 😀"), M("x", type="a")] and got["pending_line"] == len("data: ")


def test_feed_after_a_limit_trip_is_a_usage_error() -> None:
    stream = EventStreamParser(LINE_LIMIT)
    stream.feed(b"x" * 50)
    assert stream.failure is not None
    with pytest.raises(UsageError):
        stream.feed(b"\n")


def test_feed_after_close_is_a_usage_error() -> None:
    stream = EventStreamParser()
    stream.close()
    with pytest.raises(UsageError):
        stream.feed(b"data: x\n\n")
    with pytest.raises(UsageError):
        stream.close()


def test_the_sse_parser_alone_refuses_feed_after_close_and_after_a_limit_trip() -> None:
    closed = SSEParser()
    assert closed.feed("data: x\n\n") == [M("x")]
    assert closed.close() == []
    with pytest.raises(UsageError):
        closed.feed("data: y\n\n")
    with pytest.raises(UsageError):
        closed.close()
    tripped = SSEParser(LINE_LIMIT)
    assert tripped.feed("data: " + "v" * 20) == []
    assert tripped.failure is not None
    with pytest.raises(UsageError):
        tripped.feed("\n")


def test_limits_must_be_positive_integers() -> None:
    with pytest.raises(UsageError):
        Limits(max_line_chars=0)
    with pytest.raises(UsageError):
        Limits(max_event_chars=True)


# -- linear time ---------------------------------------------------------------------------


def test_a_one_mebibyte_line_fed_one_byte_at_a_time_is_not_rejoined() -> None:
    size = 1024 * 1024
    stream = EventStreamParser()
    stream.feed(b"data: ")
    # Each character is scanned once when fed and copied once when the line is joined: a
    # quadratic re-join would be ~size**2 / 2. The bound is checked after every feed, so a
    # regression fails at once instead of running for hours.
    for fed in range(1, size + 1):
        stream.feed(b"v")
        assert fed + 6 <= stream.parser.work <= 2 * (fed + 6), f"work {stream.parser.work} after {fed} bytes"
    items = stream.feed(b"\n\n")
    assert items[0].data == "v" * size  # type: ignore[union-attr]
    assert 2 * (size + 6) <= stream.parser.work <= 2 * (size + 8) + 8


def test_a_typed_stream_fed_whole_is_scanned_a_bounded_number_of_times() -> None:
    events = 20_000
    text = "event: content_block_delta\ndata: {\"text\": \"x\"}\n\n" * events
    parser = SSEParser()
    items = parser.feed(text)
    assert len(items) == events and items[-1] == M('{"text": "x"}', type="content_block_delta")
    assert len(text) <= parser.work <= 2 * len(text)


def test_many_data_lines_in_one_event_are_joined_once() -> None:
    lines = 100_000
    stream = EventStreamParser()
    items = stream.feed(b"data: x\n" * lines + b"\n")
    assert items == [M("\n".join(["x"] * lines))]
    assert stream.parser.work <= 9 * lines + 1


@pytest.mark.parametrize(("value_len", "trips"), [(14, False), (15, True)])
def test_an_unfinished_data_line_after_fast_path_events_trips_exactly_past_the_ceiling(
    value_len: int, trips: bool
) -> None:
    data = b"data: a\n\ndata: b\n\ndata: c\n\ndata: " + b"v" * value_len
    result = assert_chunking_invariant(lambda c: parse(c, limits=LINE_LIMIT), data)
    assert result["items"] == [M("a"), M("b"), M("c")]
    assert (result["failure"] is not None) is trips
    assert result["pending_line"] == (0 if trips else 6 + value_len)


# -- the steady state and the block shortcut are taken (the speed-up relies on them) -------------


def llm_stream(typed: bool, events: int, crlf: bool = False, size: int = 1) -> bytes:
    """An LLM-shaped stream: JSON values of mixed scripts; typed ones in runs of one event name."""
    words = ["Hello", " wörld", " 你好", " 😀", ",", " the", " stream", "\\n"]
    out = []
    for i in range(events):
        value = f'{{"i":{i},"delta":{{"text":"{words[i % len(words)] * (1 + i % 3) * size}"}}}}'
        head = f"event: {['content_block_delta', 'ping', 'response.output_text.delta'][i // 40 % 3]}\n" if typed else ""
        out.append(f"{head}data: {value}\n\n")
    text = "".join(out)
    return (text.replace("\n", "\r\n") if crlf else text).encode()


def read_in_kib_chunks(data: bytes) -> EventStreamParser:
    """Feed ``data`` in 1 KiB chunks (as the benchmarks do); check the events against the oracle and
    that the work stayed within twice the text; return the pipeline for its witnesses."""
    stream = EventStreamParser()
    items = []
    for start in range(0, len(data), 1024):
        items += stream.feed(data[start : start + 1024])
    assert items == reference_parse(data)
    assert stream.chars_decoded <= stream.parser.work <= 2 * stream.chars_decoded
    return stream


@pytest.mark.parametrize(("typed", "crlf", "size"), [(False, False, 1), (False, True, 1), (True, False, 1),
                                                    (False, False, 40), (True, False, 40)],
                         ids=["data-only", "data-only-crlf-like-gemini", "typed", "data-only-one-event-per-chunk",
                              "typed-one-event-per-chunk"])
def test_llm_streams_in_small_chunks_are_read_in_the_steady_state(typed: bool, crlf: bool, size: int) -> None:
    data = llm_stream(typed, 3000, crlf, size)
    stream = read_in_kib_chunks(data)
    # Lines are read one at a time only around a chunk boundary that falls inside a blank line, and
    # where the event name changes (every 40 events); not once per chunk.
    name_changes = 3000 // 40 if typed else 0
    chunks = len(data) // 1024
    assert stream.parser.lines_interpreted <= name_changes * 3 + chunks // (2 if crlf else 8)


@pytest.mark.parametrize("text", [
    pytest.param("".join(f"event: e{i % 3}\ndata: {i}\n\n" for i in range(300)), id="names-change-at-every-event"),
    pytest.param("".join(f"event: e\ndata: {i}\n\ndata: {i}\n\n" for i in range(300)), id="typed-and-untyped"),
    pytest.param("".join(f"data: {i}\n\nevent: e\ndata: {i}\n\n" for i in range(300)), id="untyped-and-typed"),
])
def test_one_line_events_are_dispatched_without_reading_lines_whatever_their_mix(text: str) -> None:
    parser = SSEParser()
    assert parser.feed(text) == reference_parse(text.encode())
    assert parser.lines_interpreted == 0


def test_a_long_value_that_starts_like_a_data_line_is_not_mistaken_for_one() -> None:
    value = "data: " + "v" * 3000
    data = f"data: a\n\ndata: {value}\n\ndata: b\n\n".encode()
    result = assert_chunking_invariant(parse, data, random_count=20)
    assert result["items"] == [M("a"), M(value), M("b")]


def test_counters_start_at_zero_and_count_exactly() -> None:
    parser = SSEParser()
    assert (parser.work, parser.events_dispatched, parser.lines_interpreted, parser.last_event_id) == (0, 0, 0, "")
    assert parser.feed(": only a comment\n\n") == []
    assert (parser.events_dispatched, parser.last_event_id) == (0, "")
    text = "data: a\n\nevent: t\ndata: b\n\n"
    assert len(parser.feed(text)) == parser.events_dispatched == 2
    assert parser.work >= len(text) + len(": only a comment\n\n")
    lines = parser.lines_interpreted
    assert parser.feed("id: 5\nretry: 9\n\n") == [RetryField(9)]
    assert parser.lines_interpreted - lines == 3  # two fields and the blank line


@pytest.mark.parametrize(("limits", "value"), [
    pytest.param(Limits(max_line_chars=20), "v" * 14, id="value-at-the-line-ceiling"),
    pytest.param(Limits(max_line_chars=100, max_event_chars=10), "v" * 9, id="value-at-the-event-ceiling"),
])
def test_a_value_at_a_ceiling_is_still_dispatched_without_reading_lines(limits: Limits, value: str) -> None:
    for text in (f"data: {value}\n\n", f"event: a\ndata: 1\n\ndata: {value}\n\n",
                 f"data: 1\n\nevent: a\ndata: {value}\n\n"):
        parser = SSEParser(limits)
        assert parser.feed(text) == reference_parse(text.encode()) and parser.failure is None
        assert parser.lines_interpreted == 0, text
    # ... and so is a pending value that a feed completes (the steady state).
    parser = SSEParser(limits)
    assert parser.feed("data: " + value[:5]) == []
    assert parser.feed(value[5:] + "\n\ndata: ") == [M(value)]
    assert parser.lines_interpreted == 0 and parser.failure is None


def test_a_feed_that_ends_after_the_next_event_line_stays_in_the_steady_state() -> None:
    parser = SSEParser()
    items = parser.feed("event: e\ndata: 0")  # the separator becomes e's
    items += parser.feed("\n\nevent: e\ndata: 1\n\nevent: e\n")
    for i in range(2, 100, 2):
        items += parser.feed(f"data: {i}\n\nevent: e\ndata: {i + 1}\n\nevent: e\n")
        assert parser.pending_line_chars == 0 and parser.has_pending_event
    items += parser.feed("data: 100\n\nevent: e\ndata: ")
    assert items == [M(str(i), type="e") for i in range(101)]
    assert parser.lines_interpreted == 1  # the first event line, before the separator was known


def test_an_id_line_before_a_blank_line_sets_the_last_event_id_without_an_event() -> None:
    result = assert_chunking_invariant(parse, b"data: a\n\nid: 7\n\n")
    assert (result["items"], result["last_event_id"]) == ([M("a")], "7")


@pytest.mark.parametrize("event", [b"data: x\n\n", b"event: e\ndata: x\n\n"], ids=["data-only", "typed"])
def test_an_id_line_alone_applies_to_the_next_event_however_it_is_read(event: bytes) -> None:
    result = assert_chunking_invariant(parse, b"data: a\n\nid: 7\n" + event)
    assert result["items"][1].last_event_id == "7"  # type: ignore[union-attr]
    assert result["last_event_id"] == "7"


# -- the pipeline's own bookkeeping ----------------------------------------------------------------


def test_the_pipeline_counts_chunks_characters_and_events_of_its_layers() -> None:
    stream = EventStreamParser()
    items = []
    for chunk in (b"", b"data: \xe2\x82", b"\xac\n\n", b"", b"data: b\n\n"):
        items += stream.feed(chunk)
    assert items == [M("\u20ac"), M("b")]
    assert stream.chunk_count == 3  # empty chunks are not chunks
    assert (stream.bytes_received, stream.chars_decoded) == (20, 18)
    assert stream.events_dispatched == 2


def test_pending_bytes_are_the_unfinished_character_then_whether_one_was_cut() -> None:
    stream = EventStreamParser()
    stream.feed(b"data: a\n\n\xe2\x82")
    assert stream.pending_bytes == 2
    assert stream.close() == []
    assert stream.pending_bytes == 1
    whole = EventStreamParser()
    whole.feed(b"data: a\n\n")
    whole.close()
    assert whole.pending_bytes == 0


def test_feeding_nothing_after_close_is_still_a_usage_error() -> None:
    stream = EventStreamParser()
    stream.close()
    with pytest.raises(UsageError):
        stream.feed(b"")


def test_close_after_a_limit_trip_flushes_nothing_even_with_a_cut_character() -> None:
    stream = EventStreamParser(LINE_LIMIT, utf8_errors="replace")
    assert stream.feed(b"data: " + b"v" * 30 + b"\xe2\x82") == []
    assert stream.failure is not None and stream.failure.stage == "line"
    assert stream.close() == []


# -- the separator of any type, the pending line, and the hints the pipeline gives (speed-ups) -------


def test_a_bom_or_lf_stripped_down_to_nothing_before_an_invalid_byte_and_a_cr_is_a_decode_error() -> None:
    # The CR after the invalid byte tells the parser "may hold a CR" for text that, once the BOM (or
    # the LF after an earlier CR) is stripped, is empty: nothing to parse, no exception.
    for data in (b"\xef\xbb\xbf\xff\r", b"data: x\r\n\xff\r"):
        result = assert_chunking_invariant(lambda c: parse(c, errors="strict"), data)
        assert result["items"] == []
        assert result["failure"] is not None and result["failure"].outcome is Outcome.DECODE_ERROR


def test_chunks_without_a_line_break_are_held_after_one_scan_each() -> None:
    stream = EventStreamParser()
    stream.feed(b"event: e\ndata: ")
    work = stream.parser.work
    for i in range(1, 101):
        assert stream.feed(b"v" * 1000) == []
        assert stream.parser.work == work + 1000 * i
        assert stream.pending_line_chars == 6 + 1000 * i
    assert stream.feed(b"\n\n") == [M("v" * 100_000, type="e")]


def typed_names_changing(events: int, crlf: bool = False) -> bytes:
    """Typed events whose names change at almost every event, values of mixed scripts and sizes."""
    names = ["content_block_delta", "content_block_delta", "ping", "content_block_stop", "message_start"]
    out = []
    for i in range(events):
        value = f'{{"i":{i},"text":"{"wörld 你好 😀 " * (1 + i % 7) * (1 + 40 * (i % 23 == 0))}"}}'
        out.append(f"event: {names[(i * 7) % len(names)]}\ndata: {value}\n\n")
    text = "".join(out)
    return (text.replace("\n", "\r\n") if crlf else text).encode()


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
def test_typed_streams_whose_names_keep_changing_are_read_without_reading_lines(crlf: bool) -> None:
    data = typed_names_changing(2000, crlf)
    stream = read_in_kib_chunks(data)
    # The separator of any type splits these: lines are read one at a time only where a chunk ends
    # inside a blank line or inside a "data:" field name.
    assert stream.parser.lines_interpreted <= len(data) // 1024 // 8


def recorded_streams(typed: bool) -> bytes:
    """The raw SSE recordings in ../shared/fixtures (typed ones or data-only ones), concatenated,
    each ending in a blank line."""
    found = []
    for path in sorted(FIXTURES.rglob("*")):
        if path.suffix not in (".sse", ".bin", ".txt") or path.name.endswith(".chunks.txt"):
            continue
        body = path.read_bytes()
        if body.lstrip().startswith((b"data:", b"event:", b":")) and (b"\nevent:" in body) == typed:
            found.append(body.rstrip(b"\r\n") + b"\n\n")
    assert len(found) > 5
    return b"".join(found)


@pytest.mark.parametrize("typed", [False, True], ids=["data-only", "typed"])
def test_the_recordings_in_small_chunks_are_read_in_the_steady_state(typed: bool) -> None:
    stream = read_in_kib_chunks(recorded_streams(typed))
    # Only the comments, multi-line and id-carrying events and the boundaries between recordings
    # are read line by line (a few hundred lines in about 600 or 150 KB).
    assert stream.parser.lines_interpreted <= (250 if typed else 200)


@pytest.mark.parametrize("typed", [False, True], ids=["data-only", "typed"])
def test_a_crlf_stream_cut_inside_a_blank_line_or_the_next_field_names_is_read_without_reading_lines(
    typed: bool,
) -> None:
    head = "event: e\r\n" if typed else ""
    event = f"{head}data: 0123\r\n\r\n"
    data = (event * 90).encode()
    # Cuts between the CR and the LF of the blank line, after it, and inside the next event's field
    # names (and, typed, between the CR and the LF of its event line), each a few events apart.
    offsets = [len(event) - 1, len(event) + 2, len(event) + len(head) + 3]
    if typed:
        offsets += [len(event) + len(head) - 1, len(event) + 5]
    cuts = [3 * i * len(event) + offsets[i % len(offsets)] for i in range(30)]
    stream = EventStreamParser()
    items = []
    for chunk in split_at(data, cuts):
        items += stream.feed(chunk)
    assert items == reference_parse(data) == [M("0123", type="e" if typed else "message")] * 90
    assert stream.parser.lines_interpreted == 0


def typed_runs(run: int, runs: int) -> bytes:
    """Typed events in runs of ``run`` events of one name, the names taking turns."""
    return "".join(f"event: {'ab'[(i // run) % 2]}\ndata: {i:040d}\n\n" for i in range(run * runs)).encode()


def test_a_name_repeated_a_few_times_keeps_the_separator_of_any_type() -> None:
    # Runs of 3 (as the recorded Anthropic/Responses traffic has): each switch to a one-name
    # separator would cost a second split at the next name, so the parser stays on the any-type one.
    data = typed_runs(3, 200)
    stream = EventStreamParser()
    seen_any = False
    for start in range(0, len(data), 256):
        stream.feed(data[start : start + 256])
        seen_any = seen_any or stream.parser._any_type
        assert stream.parser._any_type or not seen_any
    assert seen_any
    assert items_of(data) == reference_parse(data)


def test_a_name_repeated_for_a_run_takes_its_own_separator() -> None:
    data = typed_runs(40, 1) + typed_runs(3, 10) + typed_runs(40, 1)
    stream = EventStreamParser()
    for start in range(0, len(data), 256):
        stream.feed(data[start : start + 256])
    # Names changing sent it to the separator of any type; 40 "a" events in a row brought it back.
    assert not stream.parser._any_type and stream.parser._prefix_type == "a"
    assert stream.parser.lines_interpreted <= 6
    assert items_of(data) == reference_parse(data)


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("typed", [False, True], ids=["data-only", "typed"])
def test_a_stream_cut_right_after_a_data_line_ends_is_read_without_reading_lines(eol: str, typed: bool) -> None:
    # The cut leaves an event whose only data line has ended and whose blank line is still to come
    # (after the LF, after the CRLF, or between its CR and LF): the data buffer holds the value and
    # the next chunk's blank line dispatches it.
    head = f"event: e{eol}" if typed else ""
    event = f"{head}data: 0123{eol}{eol}"
    data = (event * 90).encode()
    after_line = len(event) - len(eol)
    offsets = [after_line, after_line - 1] if eol == "\r\n" else [after_line]
    cuts = [3 * i * len(event) + offsets[i % len(offsets)] for i in range(30)]
    stream = EventStreamParser()
    items = []
    for chunk in split_at(data, cuts):
        items += stream.feed(chunk)
    expected = [M("0123", type="e" if typed else "message")] * 90
    assert items == reference_parse(data) == expected
    # Lines are read one at a time only in the first chunk (the stream's first event).
    assert stream.parser.lines_interpreted == (2 if typed else 1)
    assert items_of(event.encode() * 3) == expected[:3]


def test_a_crlf_data_only_stream_with_keepalive_comments_is_read_without_reading_lines() -> None:
    data = "".join(f"data: {i:030d}\r\n\r\n" + (": keep-alive\r\n\r\n" if i % 4 == 3 else "")
                   for i in range(400)).encode()
    stream = read_in_kib_chunks(data)
    # The comments go to the block shortcut; lines are read on their own only where a chunk ends
    # inside one (3 in this stream), not once per chunk holding a comment.
    assert stream.parser.lines_interpreted <= 3
    assert stream.parser.comment_lines == 100



def test_a_line_ceiling_trip_inside_a_typed_feed_counts_only_the_events_before_it() -> None:
    # Names that change put the parser on the separator of any type; the last feed's middle part
    # is an event line one character over the line ceiling.
    limits = Limits(max_line_chars=40)
    data = b"event: a\ndata: 1\n\nevent: b\ndata: 2\n\nevent: c\ndata: 3\n\nevent: " + b"X" * 34 + b"\n\nevent: "
    cuts = [16, 34, 52]
    stream = EventStreamParser(limits)
    items = []
    for chunk in split_at(data, cuts):
        items += stream.feed(chunk)
        if stream.failure is not None:
            break
    assert stream.parser._any_type
    assert items == [M("1", type="a"), M("2", type="b"), M("3", type="c")]
    assert stream.parser.events_dispatched == 3
    assert stream.failure == Failure(Outcome.BUFFER_LIMIT, "line")
    assert assert_chunking_invariant(lambda c: parse(c, limits), data)["items"] == items
