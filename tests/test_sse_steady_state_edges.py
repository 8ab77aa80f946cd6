"""Edges of the SSE parser's steady state (see ``webclient/_sse.py``) that the broad property tests
reach too rarely: mixed line endings right after a separator, a next event's prefix cut inside its
event line, a CRLF feed that begins with an ended event's blank line, a value completed to exactly
the steady state's cap, what ``work`` charges for the value a feed's head completes, and that
``events_dispatched`` counts each event once. Each pins the path taken (``lines_interpreted``,
``work``) or a counter on a small input, next to the chunking-invariant result."""

from __future__ import annotations

from tests.helpers import assert_chunking_invariant
from tests.sse_reference import reference_parse
from webclient import Limits, SSEEvent, SSEParser


def _feed_all(feeds: list[str]) -> tuple[SSEParser, list[object]]:
    parser = SSEParser()
    out: list[object] = []
    for text in feeds:
        out += parser.feed(text)
    return parser, out


def _items(chunks: list[bytes]) -> list[object]:
    parser = SSEParser()
    out: list[object] = []
    for chunk in chunks:
        out += parser.feed(chunk.decode())
    return out


def test_a_crlf_feed_ending_a_value_then_a_lone_cr_blank_line_then_one_more_character_keeps_that_character() -> None:
    # CRLF-framed text whose last event ends "VALUE\r\n\r" + one character: the blank line was a
    # lone CR, so that character begins the next line ("data: 3" here), it is not the blank line's LF.
    feeds = ["data: 0", "\r\n\r\ndata: 1\r\n\r\ndata: 2\r\n\rd", "ata: 3\r\n\r\n"]
    stream = "".join(feeds).encode()
    expected = [SSEEvent("message", str(i), "") for i in range(4)]
    assert reference_parse(stream) == expected
    assert _feed_all(feeds)[1] == expected
    assert assert_chunking_invariant(_items, stream) == expected


def test_a_crlf_feed_ending_between_the_blank_line_s_cr_and_lf_waits_for_that_lf() -> None:
    feeds = ["data: 0", "\r\n\r\ndata: 1\r\n\r\ndata: 2\r\n\r", "\ndata: 3\r\n\r\n"]
    expected = [SSEEvent("message", str(i), "") for i in range(4)]
    assert _feed_all(feeds)[1] == expected
    assert assert_chunking_invariant(_items, "".join(feeds).encode()) == expected


def test_a_pending_value_completed_by_the_next_feed_is_charged_to_work_once_on_the_mixed_path_too() -> None:
    # ``work`` of a feed in the steady state: its length (one scan), plus the value its head
    # completes (the pending "bcd" joined with "ef"), whether the feed's later events are all one
    # data line each or not (a comment / id line sends them to the general path).
    for later in ["data: x\n\ndata: h", "data: x\n: c\n\ndata: h", "id: 7\ndata: x\n\ndata: h"]:
        parser, _ = _feed_all(["data: a\n\ndata: bcd"])
        before = parser.work
        feed = "ef\n\n" + later
        out = parser.feed(feed)
        assert out[0] == SSEEvent("message", "bcdef", "")
        assert parser.work - before == len(feed) + len("bcdef"), later


def test_a_typed_feed_of_varying_names_is_charged_to_work_once_for_its_text_and_the_value_it_completes() -> None:
    # The separator of any type ("\n\nevent: "): a feed's ``work`` is its length (one scan) plus
    # the pending value its head completes ("bcd" + "ef"), whether the parser already had that
    # separator or switches to it in this feed (a one-name stream meeting another name).
    parser, _ = _feed_all(["event: a\ndata: 0\n\nevent: b\ndata: 1\n\nevent: a\ndata: bcd"])
    before, lines = parser.work, parser.lines_interpreted
    feed = "ef\n\nevent: b\ndata: x\n\nevent: c\ndata: h"
    assert parser.feed(feed) == [SSEEvent("a", "bcdef", ""), SSEEvent("b", "x", "")]
    assert (parser.work - before, parser.lines_interpreted) == (len(feed) + len("bcdef"), lines)
    parser, _ = _feed_all(["event: delta\ndata: 0", "\n\nevent: delta\ndata: 1\n\nevent: delta\ndata: bcd"])
    before, lines = parser.work, parser.lines_interpreted
    assert parser.feed(feed) == [SSEEvent("delta", "bcdef", ""), SSEEvent("b", "x", "")]
    assert (parser.work - before, parser.lines_interpreted) == (len(feed) + len("bcdef"), lines)
    stream = ("event: delta\ndata: 0\n\nevent: delta\ndata: 1\n\nevent: delta\ndata: bcd" + feed + "\n\n").encode()
    assert assert_chunking_invariant(_items, stream) == reference_parse(stream)


def test_a_typed_feed_completing_a_prefix_cut_inside_its_event_line_is_read_in_one_pass() -> None:
    # A one-name typed stream whose feed ends inside the next event's "event:" line ("even"): the
    # next feed completes the prefix and the value with one split (work: the feed plus the completed
    # value), no line read one at a time, and the stream keeps its one-name separator.
    parser, _ = _feed_all(["event: delta\ndata: 0", "\n\nevent: delta\ndata: 1\n\neven"])
    before, lines = parser.work, parser.lines_interpreted
    feed = "t: delta\ndata: x\n\nevent: delta\ndata: y\n\nevent: delta\ndata: z"
    assert parser.feed(feed) == [SSEEvent("delta", "x", ""), SSEEvent("delta", "y", "")]
    assert parser.work - before == len(feed) + len("x")
    assert parser.lines_interpreted == lines
    stream = ("event: delta\ndata: 0\n\nevent: delta\ndata: 1\n\n" + feed + "\n\n").encode()
    assert assert_chunking_invariant(_items, stream) == reference_parse(stream)


def test_a_crlf_feed_beginning_with_the_blank_line_of_an_ended_event_is_read_in_one_pass() -> None:
    # The last feed ended with a data line's line break (the event waits for its blank line); the
    # next, CRLF-framed, begins with that blank line and the next event's prefix.
    parser, _ = _feed_all(["data: a\r\n\r\ndata: b\r\n"])
    lines = parser.lines_interpreted
    out = parser.feed("\r\ndata: c\r\n\r\ndata: d")
    assert out == [SSEEvent("message", "b", ""), SSEEvent("message", "c", "")]
    assert parser.lines_interpreted == lines
    stream = b"data: a\r\n\r\ndata: b\r\n\r\ndata: c\r\n\r\ndata: d\r\n\r\n"
    assert assert_chunking_invariant(_items, stream) == reference_parse(stream)


def test_a_pending_value_completed_to_exactly_the_steady_state_cap_is_read_without_lines() -> None:
    # max_line_chars 40 and max_event_chars 10: the steady state takes values of up to 9 characters
    # (the event ceiling less the value's LF); "abcd" + "efghi" is exactly 9.
    limits = Limits(max_line_chars=40, max_event_chars=10)
    parser = SSEParser(limits)
    parser.feed(": hi\ndata: abcd")
    lines = parser.lines_interpreted
    assert parser.feed("efghi\n\nevent: ") == [SSEEvent("message", "abcdefghi", "")]
    assert parser.lines_interpreted == lines
    assert parser.failure is None


def _dispatch_count(chunks: list[bytes]) -> tuple[list[object], int]:
    parser = SSEParser()
    out: list[object] = []
    for chunk in chunks:
        out += parser.feed(chunk.decode())
    return out, parser.events_dispatched


def test_events_dispatched_counts_each_event_once_under_every_chunking() -> None:
    for stream in [b"data: 0\r\n\r\nevent: delta\r\ndata: x\r\n\r", b"\r\n\r\nevent: \r\ndata: \r\n\r",
                   b"data: 0\r\n\r\ndata: 1\r\n\r\ndata: 2\r\n\rdata: 3\r\n\r",
                   # data-only events around a comment block (the steady state's mixed path)
                   b"data: a\n\ndata: bc\n\ndata: x\n: c\n\ndata: h\n\n",
                   # typed events of varying names, one of them with an id line (read by the general
                   # path in the middle of the separator of any type's parts)
                   b"event: a\ndata: 0\n\nevent: b\ndata: 1\n\nevent: c\nid: 7\ndata: x\n\n"
                   b"event: a\ndata: 2\n\nevent: b\ndata: 3\n\nevent: c\ndata: 4\n\n"]:
        events, dispatched = assert_chunking_invariant(_dispatch_count, stream)
        assert dispatched == len(events) == len(reference_parse(stream)), stream


def _dispatch_count_to_trip(chunks: list[bytes]) -> tuple[list[object], int, object]:
    parser = SSEParser(Limits(max_line_chars=20, max_event_chars=100))
    out: list[object] = []
    for chunk in chunks:
        out += parser.feed(chunk.decode())
        if parser.failure is not None:
            break
    return out, parser.events_dispatched, parser.failure


def test_a_line_ceiling_tripping_in_a_typed_feed_that_first_dispatched_a_pending_event_counts_each_event_once() -> None:
    # Separator of any type, line ceiling 20 (the steady state takes 14 characters): the last feed
    # begins with the blank line of an event whose data line ended in the feed before, then holds
    # one 21-character event line. The general path dispatches the pending event, then the line
    # trips; each event is counted once, under every chunking.
    feeds = ["event: a\ndata: 0", "\n\nevent: b\ndata: v\n", "\n\nevent: " + "x" * 14 + "\n\nevent: "]
    expected = [SSEEvent("a", "0", ""), SSEEvent("b", "v", "")]
    out, dispatched, failure = _dispatch_count_to_trip([feed.encode() for feed in feeds])
    assert (out, dispatched, getattr(failure, "stage", None)) == (expected, 2, "line")
    assert assert_chunking_invariant(_dispatch_count_to_trip, "".join(feeds).encode()) == (out, dispatched, failure)


def test_one_typed_event_in_one_feed_is_read_by_the_block_shortcut() -> None:
    parser = SSEParser()
    assert parser.feed("event: delta\ndata: x\n\n") == [SSEEvent("delta", "x", "")]
    assert parser.lines_interpreted == 0


def test_a_comment_block_at_exactly_the_line_ceiling_is_read_by_the_block_shortcut() -> None:
    parser = SSEParser(Limits(max_line_chars=12))
    assert parser.feed(": keep-alive\n\ndata: x\n\n") == [SSEEvent("message", "x", "")]  # ": keep-alive": 12
    assert (parser.comment_lines, parser.lines_interpreted, parser.failure) == (1, 0, None)


def test_a_lone_cr_ending_an_empty_event_line_in_crlf_text_leaves_the_type_empty() -> None:
    # "event: " ends at the lone CR (an empty type), and the CRLF after it is a blank line.
    stream = b"data: 0\r\n\r\nevent: \r\r\ndata: 1\r\n\r\nevent: x\r\ndata: 2\r\n\r\n"
    expected = [SSEEvent("message", "0", ""), SSEEvent("message", "1", ""), SSEEvent("x", "2", "")]
    assert reference_parse(stream) == expected
    assert assert_chunking_invariant(_items, stream) == expected


def test_after_a_block_read_line_by_line_the_next_one_line_block_takes_the_shortcut() -> None:
    parser = SSEParser()
    out = parser.feed("id: 1\ndata: a\n\ndata: b\n\n")
    assert out == [SSEEvent("message", "a", "1"), SSEEvent("message", "b", "1")]
    assert parser.lines_interpreted == 3  # "id: 1", "data: a" and its blank line; not "data: b"


def test_a_typed_stream_that_turns_data_only_is_read_in_the_steady_state_again() -> None:
    # Names that keep changing put the parser on the separator of any type; once a data-only event
    # begins, the separator becomes the data-only one and its events are read without a line.
    parser = SSEParser()
    typed = "".join(f"event: {name}\ndata: {i}\n\n" for i, name in enumerate(["a", "b", "c", "a", "b", "c"]))
    for i in range(0, len(typed), 20):
        parser.feed(typed[i : i + 20])
    parser.feed("event: a\ndata: 9\n\ndata: p")
    lines = parser.lines_interpreted
    data = "".join(f"q{i}\n\ndata: " for i in range(30))
    out: list[object] = []
    for i in range(0, len(data), 23):
        out += parser.feed(data[i : i + 23])
    assert out == [SSEEvent("message", "pq0" if i == 0 else f"q{i}", "") for i in range(30)]
    assert parser.lines_interpreted == lines
    stream = (typed + "event: a\ndata: 9\n\ndata: p" + data + "end\n\n").encode()
    assert assert_chunking_invariant(_items, stream) == reference_parse(stream)


def test_event_blocks_without_data_between_typed_events_dispatch_nothing_under_every_chunking() -> None:
    # On the separator of any type ("\n\nevent: "), a part may be an event line with no data line
    # (an empty or a named type, then the blank line): it dispatches nothing and leaves no type.
    names = ["a", "b", "c", "a", "b", "c"]
    typed = "".join(f"event: {name}\ndata: {i}\n\n" for i, name in enumerate(names))
    stream = (typed + "event: \n\ndata: \n\nevent: \n\nevent: x\n\nevent: b\ndata: 7\n\n" + typed).encode()
    items = assert_chunking_invariant(_items, stream)
    assert items == reference_parse(stream)
    assert [e.type for e in items if isinstance(e, SSEEvent)] == [*names, "message", "b", *names]
    parser = SSEParser()
    for i in range(0, len(typed), 20):  # names that keep changing: the separator of any type
        parser.feed(typed[i : i + 20])
    assert parser.feed("\n\nevent: \n\ndata: \n\nevent: ") == [SSEEvent("message", "", "")]
    assert parser.feed("\n\nevent: x\n\nevent: b\ndata: 7\n\n") == [SSEEvent("b", "7", "")]


def test_a_feed_exactly_at_the_steady_state_cap_is_split_on_the_separator_of_any_type() -> None:
    # max_line_chars 19: the steady state takes up to 13 characters besides the separators. This
    # feed is 22 characters with one "\n\nevent: " (9): exactly 13, so it is split there: the head's
    # three lines are read, and the next event's line is held without being read.
    parser = SSEParser(Limits(max_line_chars=19))
    feed = "\ndata: e\n\nevent: ping\n"
    assert len(feed) - len("\n\nevent: ") == 13
    assert parser.feed(feed) == [SSEEvent("message", "e", "")]
    assert parser.lines_interpreted == 3
    assert parser.feed("data: x\n\n") == [SSEEvent("ping", "x", "")]
