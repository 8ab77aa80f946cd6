"""Edges of the SSE parser's steady state (see ``webclient/_sse.py``) that the broad property tests
reach too rarely: mixed line endings right after a separator, a next event's prefix cut inside its
event line, a CRLF feed that begins with an ended event's blank line, a value completed to exactly
the steady state's cap, what ``work`` charges for the value a feed's head completes, and that
``events_dispatched`` counts each event once. Each pins the path taken (``lines_interpreted``,
``work``) or a counter on a small input, next to the chunking-invariant result."""

from __future__ import annotations

import pytest

from tests.helpers import assert_chunking_invariant, feed_either
from tests.sse_reference import reference_parse
from webclient import EventStreamParser, Limits, SSEEvent, SSEParser


def _feed_all(feeds: list[str]) -> tuple[SSEParser, list[object]]:
    parser = SSEParser()
    out: list[object] = []
    for i, text in enumerate(feeds):
        out += feed_either(parser, i, text)  # (feed and feed_tuples in turn)
    return parser, out


def _items(chunks: list[bytes]) -> list[object]:
    return _feed_all([chunk.decode() for chunk in chunks])[1]


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


# A feed split on a one-name separator ("\n\nevent: d\ndata: ") whose part k holds another event (a
# name change, a comment, an id or retry line, a multi-line value): the events before it are kept as
# built, that part is read by the general path from its block start (the value of event k, then the
# other blocks), and the parts after it are values of the separator's type again. Checked on big
# feeds (dozens of events each), with the break at the first, a middle and the last part, LF and
# CRLF, against the oracle under every chunking.

def _observed(chunks: list[bytes], limits: Limits | None = None) -> tuple[object, ...]:
    parser = SSEParser(limits or Limits())
    out: list[object] = []
    for chunk in chunks:
        out += parser.feed(chunk.decode())
        if parser.failure is not None:
            break
    return (out, parser.events_dispatched, parser.last_event_id, parser.comment_lines, parser.retry,
            parser.unknown_fields, parser.failure, parser.pending_line_chars, parser.pending_event_chars)


def test_a_keep_alive_comment_ending_a_block_whose_id_line_came_in_an_earlier_feed_sets_the_last_event_id() -> None:
    # The blank line after the comment ends the block the id line began, and a blank line sets the last event id
    # (WHATWG: even when nothing is dispatched). Split after the id line, the comment block is read on its own.
    for stream in (b"id: 5\n: ka\n\n", b"data: a\n\nid: 5\n: ka\n\ndata: b\n\n", b"id: 5\r\n: ka\r\n\r\n"):
        observed = assert_chunking_invariant(_observed, stream)
        assert observed[2] == "5"  # (last_event_id)
        assert observed[3] == 1  # (comment_lines)



def test_a_line_trip_after_an_event_whose_id_line_came_in_an_earlier_feed_keeps_that_id_as_the_last() -> None:
    # Line ceiling 40 (the steady state takes 34 characters). The id line and the start of an event come in one feed,
    # the event's blank line in the next, which the separator of any type splits: its first part completes the
    # event, its second is one 41-character event line, which trips the ceiling. The blank line that dispatched
    # the event came first and set the last event id (WHATWG), so the trip leaves it "7", under every chunking.
    limits = Limits(max_line_chars=40)
    feeds = ["event: a\ndata: 1\n\nevent: b\ndata: 2\n\n", "id: 7\nevent: c\ndata: x",
             "\n\nevent: " + "z" * 34 + "\n\nevent: "]
    observed = _observed([feed.encode() for feed in feeds], limits)
    expected = [SSEEvent("a", "1", ""), SSEEvent("b", "2", ""), SSEEvent("c", "x", "7")]
    assert (observed[0], observed[2], getattr(observed[6], "stage", None)) == (expected, "7", "line")
    assert assert_chunking_invariant(lambda chunks: _observed(chunks, limits), "".join(feeds).encode()) == observed


def _typed(names: list[str], start: int = 0) -> str:
    return "".join(f"event: {name}\ndata: {start + i}\n\n" for i, name in enumerate(names))


# Ten events named "d" put the parser on the separator of "d"; "b" is left pending.
_SETTLE = "".join(f"event: d\ndata: a{i}\n\n" for i in range(10)) + "event: d\ndata: b"
_BREAKS = {
    "name change": "event: e\ndata: E\n\nevent: f\ndata: F\n\n",
    "comment": ": keep-alive\n\n",
    "id and retry": "id: 7\nretry: 30\n\n",
    "multi-line value": "event: d\ndata: m1\ndata: m2\n\n",
}


def _break_feed(at: int, inserted: str, events: int = 40) -> str:
    """The rest of the pending "b" event, then ``events`` events named "d" with ``inserted`` after
    the ``at``-th of them, then the start of one more."""
    body = _typed(["d"] * at, 100) + inserted + _typed(["d"] * (events - at), 200)
    return "\n\n" + body + "event: d\ndata: tail"


def test_a_big_typed_feed_broken_at_its_first_a_middle_or_its_last_part_keeps_the_events_before_the_break() -> None:
    for crlf in (False, True):
        for label, inserted in _BREAKS.items():
            for at in (1, 20, 39):
                feeds = [_SETTLE, _break_feed(at, inserted)]
                if crlf:
                    feeds = [feed.replace("\n", "\r\n") for feed in feeds]
                stream = "".join(feeds).encode()
                observed = _observed([feed.encode() for feed in feeds])
                assert observed[0] == reference_parse(stream)[: len(observed[0])], (label, at, crlf)
                assert observed[1] == 10 + 1 + 40 + inserted.count("data: E") * 2 + (label == "multi-line value")
                parser = SSEParser()
                parser.feed(feeds[0])
                assert parser._separator == "\n\nevent: d\ndata: "  # (its CRLF form for CRLF text)
                lines = parser.lines_interpreted
                parser.feed(feeds[1])
                # Only the inserted block's lines are read one at a time (the block shortcut takes the
                # name change's events).
                read = {"name change": 0, "comment": 0, "id and retry": 3, "multi-line value": 4}[label]
                assert parser.lines_interpreted - lines == read, (label, at, crlf)


def test_big_typed_feeds_broken_by_other_lines_match_the_oracle_under_every_chunking() -> None:
    # (Also the breaks by events of other names below, read as whole events.)
    breaks = [*_BREAKS.items(), *((label, inserted) for label, (inserted, _) in _NAMED_BREAKS.items())]
    for crlf in (False, True):
        for label, inserted in breaks:
            if "\r" in inserted and not crlf:
                continue  # (a CR in LF text makes the whole text CRLF-framed text)
            text = _SETTLE + _break_feed(3, inserted, events=12) + "\n\n" + _typed(["d", "e", "d"], 300)
            if crlf:
                text = text.replace("\n", "\r\n")
            stream = text.encode()
            observed = assert_chunking_invariant(_observed, stream, random_count=20)
            assert observed[0] == reference_parse(stream), (label, crlf)


def test_a_pending_event_before_a_broken_big_typed_feed_is_dispatched_first() -> None:
    # The feed before ended with the pending event's data line and its line break: the broken feed
    # begins with the blank line that dispatches it, then its own events.
    feeds = [_SETTLE, "\n\nevent: d\ndata: c\n", "\n" + _typed(["d"] * 10, 100) + _BREAKS["name change"]
             + _typed(["d"] * 10, 200) + "event: d\ndata: t"]
    expected = reference_parse("".join(feeds).encode())
    for crlf in (False, True):
        framed = [feed.replace("\n", "\r\n") if crlf else feed for feed in feeds]
        parser, out = _feed_all(framed)
        assert out == expected[: len(out)] and out[10:12] == [SSEEvent("d", "b", ""), SSEEvent("d", "c", "")]
        assert (parser.events_dispatched, parser.lines_interpreted) == (len(out), 0)
        stream = "".join(framed).encode()
        assert assert_chunking_invariant(_observed, stream, random_count=20)[0] == expected


def test_a_broken_big_typed_feed_charges_work_once_for_its_text_and_the_joined_values() -> None:
    parser, _ = _feed_all([_SETTLE])
    feed = _break_feed(20, _BREAKS["name change"])
    before = parser.work
    out = parser.feed(feed)
    assert out[:2] == [SSEEvent("d", "b", ""), SSEEvent("d", "100", "")]
    # One scan of the feed and the pending value it completes ("b"), as for a feed without a break.
    assert parser.work - before == len(feed) + len("b")


def test_a_ceiling_trip_after_a_broken_big_typed_feed_is_the_same_under_every_chunking() -> None:
    # The steady state takes feeds of up to 294 characters besides the separators; the event begun
    # at the end of the broken feed then outgrows the event ceiling (5 + 251 + 201 > 400).
    limits = Limits(max_line_chars=300, max_event_chars=400)
    text = _SETTLE + _break_feed(5, _BREAKS["name change"], events=8) + "\ndata: " + "x" * 250 + "\ndata: " + "y" * 200
    text += "\n\n" + _typed(["d"] * 3)
    observed = assert_chunking_invariant(lambda chunks: _observed(chunks, limits), text.encode(), random_count=20)
    assert getattr(observed[6], "stage", None) == "event"
    assert observed[1] == len(observed[0]) == 10 + 1 + 8 + 2


def test_a_broken_big_typed_feed_after_a_prefix_cut_inside_its_data_line_holds_only_its_own_last_line() -> None:
    # The feed before ends inside the next event's data line ("d" of "data: "); the broken feed
    # completes it, and ends inside an event line: only that line ("event: d") is held.
    feeds = [_SETTLE, "\n\nevent: d\ndata: c\n\nevent: d\nd",
             "ata: v\n\n" + _typed(["d"] * 6, 100) + ": c\n\n" + _typed(["d"] * 6, 200) + "event: d"]
    parser, out = _feed_all(feeds)
    stream = "".join(feeds).encode()
    assert out == reference_parse(stream) and out[10:13] == [SSEEvent("d", f"{v}", "") for v in "bcv"]
    assert (parser.pending_line_chars, parser.events_dispatched, parser.comment_lines) == (8, len(out), 1)
    assert assert_chunking_invariant(_observed, stream, random_count=20)[0] == out


def test_a_broken_big_typed_feed_after_a_prefix_cut_ending_inside_a_comment_line_holds_only_that_line() -> None:
    # As above, but the broken feed ends inside a comment line after its last event: the general
    # path holds ": par" alone, and the next feed completes the comment.
    feeds = [_SETTLE, "\n\nevent: d\ndata: c\n\nevent: d\nd",
             "ata: v\n\n" + _typed(["d"] * 6, 100) + ": c\n\n" + _typed(["d"] * 6, 200) + "event: d\ndata: t\n\n: par",
             "tial\n\n"]
    parser, out = _feed_all(feeds)
    stream = "".join(feeds).encode()
    assert out == reference_parse(stream) and out[-1] == SSEEvent("d", "t", "")
    assert (parser.comment_lines, parser.unknown_fields, parser.pending_line_chars) == (2, 0, 0)
    assert assert_chunking_invariant(_observed, stream, random_count=20)[0] == out


def test_a_broken_typed_feed_under_a_tight_line_ceiling_reads_its_other_block_without_a_line() -> None:
    # Line ceiling 20 (the steady state takes up to 14 characters besides the separators): the
    # broken feed fits on the separator of "d" ("ata: 0" completing the "d" held before, "1\n\n: ",
    # "2", "t"); its comment block is read by the general path's block shortcut.
    limits = Limits(max_line_chars=20)
    settle = _typed(["d"] * 10) + "event: d\ndata: b"
    feeds = [settle[i : i + 30] for i in range(0, len(settle), 30)]
    feeds += ["\n\nevent: d\ndata: c\n\nevent: d\nd",
              "ata: 0\n\nevent: d\ndata: 1\n\n: \n\nevent: d\ndata: 2\n\nevent: d\ndata: t"]
    parser = SSEParser(limits)
    for feed in feeds[:-1]:
        parser.feed(feed)
    assert (parser._separator, parser.pending_line_chars) == ("\n\nevent: d\ndata: ", 1)
    lines = parser.lines_interpreted
    assert parser.feed(feeds[-1]) == [SSEEvent("d", v, "") for v in "012"]
    assert (parser.lines_interpreted - lines, parser.comment_lines, parser.failure) == (0, 1, None)
    # (One broken part in four: the separator of any type reads the next feeds.)
    assert (parser.pending_line_chars, parser._separator) == (len("data: t"), "\n\nevent: ")
    stream = "".join(feeds).encode()
    observed = assert_chunking_invariant(lambda chunks: _observed(chunks, limits), stream, random_count=20)
    assert observed[0] == reference_parse(stream)


def test_a_typed_feed_broken_once_in_many_parts_keeps_its_names_separator_and_more_often_takes_any_name() -> None:
    # Broken parts in a feed of 16 parts (the head and 15 values; the name change after every 7th):
    # once or twice, no more often than once in _NAME_RUN (8) parts: the name's separator stays for
    # the next feed; in a feed of 22 parts three times, more often: the separator of any type reads
    # the next feeds.
    one_name, any_name = "\n\nevent: d\ndata: ", "\n\nevent: "
    for breaks, trailing, separator in [(1, 8, one_name), (2, 1, one_name), (3, 0, any_name)]:
        body = "".join(_typed(["d"] * 7, 100 + 10 * i) + _BREAKS["name change"] for i in range(breaks))
        feeds = [_SETTLE, "\n\n" + body + _typed(["d"] * trailing, 900) + "event: d\ndata: t",
                 "ail\n\n" + _typed(["d"] * 3, 500)]
        parser, out = _feed_all(feeds[:2])
        assert parser._separator == separator, breaks
        stream = "".join(feeds).encode()
        out += parser.feed(feeds[2])
        assert out == reference_parse(stream) and out[-4] == SSEEvent("d", "tail", "")
        assert (parser.events_dispatched, parser.lines_interpreted) == (len(out), 0)
        assert assert_chunking_invariant(_observed, stream, random_count=20)[0] == out


def test_a_pending_value_continued_by_text_that_looks_like_an_event_line_and_a_data_line_keeps_it() -> None:
    # The last feed ended inside a data line ("data: abc"); the next one continues that line with
    # "event: x", then a second data line: one event of the pending type whose data is both lines,
    # on the separator of one name and on the one of any type (the head of the split is not a
    # whole event block, however much it looks like one).
    for settle in [_SETTLE[: -len("event: d\ndata: b")], _typed(["a", "b", "c", "a", "b", "c"])]:
        feeds = [settle + "event: d\ndata: abc", "event: x\ndata: y\n\n" + _typed(["d", "e"], 50)]
        stream = "".join(feeds).encode()
        expected = reference_parse(stream)
        assert expected[-3:-2] == [SSEEvent("d", "abcevent: x\ny", "")]
        assert _feed_all(feeds)[1] == expected
        assert assert_chunking_invariant(_observed, stream, random_count=20)[0] == expected


def test_a_feed_of_varying_names_ending_in_a_run_of_one_name_takes_that_names_separator() -> None:
    # On the separator of any type, a feed whose first event has another name but whose last
    # _NAME_RUN (8) events and the next one share a name goes to that name's separator at once (a
    # Responses stream's text deltas resuming after a tool call); 7 of them, or a next event of
    # another name, leave the separator of any type.
    one_name, any_name = "\n\nevent: d\ndata: ", "\n\nevent: "
    varying = _typed(["a", "b", "c", "a", "b", "c"])
    for run, next_name, separator in [(8, "d", one_name), (20, "d", one_name), (7, "d", any_name),
                                      (8, "e", any_name)]:
        feeds = [varying + "event: a\ndata: x", "\n\n" + _typed(["e", "f"], 50) + _typed(["d"] * run, 100)
                 + f"event: {next_name}\ndata: t", "ail\n\n" + _typed(["d"] * 3, 500)]
        parser, out = _feed_all(feeds[:1])
        assert parser._separator == any_name
        out += parser.feed(feeds[1])
        assert parser._separator == separator, (run, next_name)
        stream = "".join(feeds).encode()
        out += parser.feed(feeds[2])
        assert out == reference_parse(stream) and out[-4] == SSEEvent(next_name, "tail", "")
        assert (parser.events_dispatched, parser.lines_interpreted) == (len(out), 0)
        assert assert_chunking_invariant(_observed, stream, random_count=20)[0] == out


def test_a_big_one_name_feed_ending_in_events_of_other_names_keeps_the_names_separator_wherever_it_is_cut() -> None:
    # A feed of more than _NAME_RUN values of "d" whose last part is a value and then events of
    # other names (a Responses stream's text deltas, then a tool call's events) keeps the separator
    # of "d", wherever the feed ends inside the next event (its name, its data line's field name,
    # its value, the blank line after it: held as the partial line it is); the next feed begins
    # with the rest of that event and more events of other names (its head), then values of "d"
    # again, read on that separator too: no line is read one at a time, each feed's ``work`` is
    # its length plus at most the line its head completes, and every event is the oracle's. In LF
    # and CRLF text.
    for eol in ("\n", "\r\n"):
        one_name = "\n\nevent: d\ndata: "  # (its CRLF form for CRLF text)
        settle = _SETTLE.replace("\n", eol)
        run = _typed(["d"] * 12, 100).replace("\n", eol)
        others = _typed(["e", "f"], 200).replace("\n", eol)
        cut_event = "event: g\ndata: G-value\n\n".replace("\n", eol)
        # (An event of another name after the run, so that the run does not end the feed.)
        rest = (_typed(["e"], 300) + _typed(["d"] * 12, 400) + _typed(["e"], 500)
                + "event: d\ndata: t").replace("\n", eol)
        for cut in range(len(cut_event) + 1):
            feeds = [settle, eol * 2 + run + others + cut_event[:cut], cut_event[cut:] + rest,
                     "ail" + eol * 2 + _typed(["d"] * 3, 600).replace("\n", eol)]
            parser, out = _feed_all(feeds[:1])
            for i in (1, 2):
                before = parser.work
                out += parser.feed(feeds[i])
                assert parser._separator == one_name, (eol, cut)
                assert len(feeds[i]) <= parser.work - before <= len(feeds[i]) + len(cut_event), (eol, cut)
                so_far = "".join(feeds[: i + 1]).replace("\r\n", "\n").replace("\r", "\n")
                assert parser.pending_line_chars == len(so_far.rsplit("\n", 1)[1]), (eol, cut)
            out += parser.feed(feeds[3])
            stream = "".join(feeds).encode()
            assert out == reference_parse(stream) and out[-4] == SSEEvent("d", "tail", ""), (eol, cut)
            assert (parser.events_dispatched, parser.lines_interpreted) == (len(out), 0), (eol, cut)
        assert assert_chunking_invariant(_observed, stream, random_count=20)[0] == out


def test_how_many_values_of_one_name_a_feed_holds_decides_its_separator_around_events_of_other_names() -> None:
    # A feed of k values of "d", then events of other names: k <= _NAME_RUN (8), the run looks
    # over and the separator of any type reads the next feeds; k > 8, the separator of "d" stays.
    # A next feed that begins with events of other names: read on the separator of "d" when it
    # holds more than 8 parts split on it (its head, values, the part its "e" event breaks), else
    # on the one of any type (which its last events, "e" then "d", do not turn back).
    one_name, any_name = "\n\nevent: d\ndata: ", "\n\nevent: "
    for k, first_separator in [(8, any_name), (9, one_name)]:
        for values, second_separator in [(7, any_name), (8, one_name)]:
            feeds = [_SETTLE, "\n\n" + _typed(["d"] * k, 100) + _typed(["e", "f"], 200) + "event: g\ndata: G",
                     "-value\n\n" + _typed(["e"], 300) + _typed(["d"] * values, 400) + _typed(["e"], 500)
                     + "event: d\ndata: t", "ail\n\n" + _typed(["d"] * 3, 600)]
            parser, out = _feed_all(feeds[:2])
            assert parser._separator == first_separator, (k, values)
            out += parser.feed(feeds[2])
            if first_separator == one_name:
                assert parser._separator == second_separator, (k, values)
            out += parser.feed(feeds[3])
            stream = "".join(feeds).encode()
            assert out == reference_parse(stream) and parser.lines_interpreted == 0
            assert assert_chunking_invariant(_observed, stream, random_count=10)[0] == out


# A broken part that is the value, then whole events of other names (a block ends, the next
# starts), is read as the separator of any type reads its parts: each ``NAME\ndata: VALUE`` is an
# event as it is, any other block (an id line, a comment after it, a CR alone in CRLF text) by the
# general path from its block start.
_NAMED_BREAKS = {
    "two names": ("event: e\ndata: E\n\nevent: f\ndata: F\n\n", 0),
    "an empty name": ("event: \ndata: E\n\n", 0),
    "an id inside the next event": ("event: e\ndata: E\n\nevent: f\nid: 9\ndata: F\n\n", 4),
    "a comment after a name": ("event: e\ndata: E\n\n: c\n\n", 0),
    "a second data line": ("event: e\ndata: E\n\nevent: f\ndata: F1\ndata: F2\n\nevent: g\ndata: G\n\n", 4),
    "a CR alone in a name": ("event: e\rx\ndata: E\n\nevent: f\ndata: F\n\n", 4),
}


def test_a_broken_big_typed_feed_reads_the_events_of_other_names_in_its_broken_part_as_whole_events() -> None:
    for crlf in (False, True):
        for label, (inserted, read) in _NAMED_BREAKS.items():
            if "\r" in inserted and not crlf:
                continue  # (a CR in LF text makes the whole text CRLF-framed text)
            for at in (1, 20, 39):
                feeds = [_SETTLE, _break_feed(at, inserted)]
                if crlf:
                    feeds = [feed.replace("\n", "\r\n") for feed in feeds]
                stream = "".join(feeds).encode()
                expected = reference_parse(stream)
                parser = SSEParser()
                out = parser.feed(feeds[0])
                assert parser._separator == "\n\nevent: d\ndata: "
                lines = parser.lines_interpreted
                out += parser.feed(feeds[1])
                assert out == expected, (label, at, crlf)
                assert (parser.events_dispatched, parser.lines_interpreted - lines) == (len(out), read), (label, at)
                assert parser.comment_lines == inserted.count(": c"), label
                # The events after the break carry the ID string an id line in the break set.
                assert parser.last_event_id == out[-1].last_event_id == ("9" if "id: 9" in inserted else "")
                # (One broken part in 41: the separator of "d" stays, the last value is pending.)
                assert parser._separator == "\n\nevent: d\ndata: " and parser.pending_line_chars == len("data: tail")


def test_a_big_typed_feed_broken_four_times_in_different_ways_counts_and_reads_every_event_once() -> None:
    # Breaks after the 5th, 14th, 23rd and 32nd of 41 values (no more often than once in _NAME_RUN
    # parts: the separator of "d" stays): a comment, a name change, an id line, then a comment
    # followed by an event of another name (the broken part's first block is not a value: the
    # general path reads the whole part).
    inserted = [": c\n\n", "event: e\ndata: E\n\n", "id: 7\n\n", ": c\n\nevent: f\ndata: F\n\n"]
    body = "".join(_typed(["d"] * 9, 100 + 10 * i) + block for i, block in enumerate(inserted))
    feeds = [_SETTLE, "\n\n" + _typed(["d"] * 5, 90) + body + _typed(["d"] * 5, 900) + "event: d\ndata: t",
             "ail\n\n" + _typed(["d"] * 3, 500)]
    for crlf in (False, True):
        framed = [feed.replace("\n", "\r\n") if crlf else feed for feed in feeds]
        stream = "".join(framed).encode()
        expected = reference_parse(stream)
        parser, out = _feed_all(framed[:2])
        assert parser._separator == "\n\nevent: d\ndata: "
        out += parser.feed(framed[2])
        assert out == expected and SSEEvent("f", "F", "7") in out and out[-4] == SSEEvent("d", "tail", "7")
        assert (parser.events_dispatched, parser.comment_lines, parser.lines_interpreted) == (len(out), 2, 2)
        assert assert_chunking_invariant(_observed, stream, random_count=20)[0] == out


def test_a_cr_alone_in_the_value_before_a_name_change_in_crlf_text_ends_its_data_line() -> None:
    # The value of the 7th "d" event holds a CR alone (a line break in CRLF-framed text: "x: y" is
    # a line of an unknown field), then a block of another name: the general path reads the part.
    feeds = [_SETTLE.replace("\n", "\r\n"), ("\n\n" + _typed(["d"] * 6, 100)).replace("\n", "\r\n")
             + "event: d\r\ndata: 7\rx: y\r\n\r\nevent: e\r\ndata: E\r\n\r\n"
             + _typed(["d"] * 30, 200).replace("\n", "\r\n") + "event: d\r\ndata: t"]
    stream = "".join(feeds).encode()
    expected = reference_parse(stream)
    parser, out = _feed_all(feeds)
    assert out == expected and out[17:19] == [SSEEvent("d", "7", ""), SSEEvent("e", "E", "")]
    assert (parser.events_dispatched, parser.unknown_fields) == (len(out), 1)
    assert assert_chunking_invariant(_observed, stream, random_count=20)[0] == out


def test_a_feed_that_is_only_the_awaited_lf_leaves_the_next_feed_s_first_character_alone() -> None:
    # A feed ending in a CR makes the parser wait for that CR's LF; a next feed holding only that LF
    # (or a first feed holding only the byte order mark) is consumed, and nothing more is awaited:
    # the feed after it is read from its first character, even a NUL ("\x00data" is a field of
    # another name, so "x" is no data of the event).
    for feeds in (["data: a\r", "\n", "\x00data: x\n\n"], ["\ufeff", "\x00data: x\ndata: a\n\n"]):
        stream = "".join(feeds).encode()
        expected = [SSEEvent("message", "a", "")]
        assert reference_parse(stream) == expected
        parser, out = _feed_all(feeds)
        assert (out, parser.unknown_fields) == (expected, 1)
        assert assert_chunking_invariant(_decoded, stream) == expected


def _decoded(chunks: list[bytes], limits: Limits | None = None) -> list[object]:
    # (through the pipeline's decoder: a chunk may end inside a character, or the byte order mark)
    stream = EventStreamParser(limits or Limits())
    out: list[object] = []
    for chunk in chunks:
        out += stream.feed(chunk)
    return out + stream.close()


def test_a_crlf_typed_feed_ending_at_the_cr_of_the_next_event_line_holds_that_line_as_read() -> None:
    # A one-name separator in CRLF text ("\r\n\r\nevent: d\r\ndata: "): a feed ending "VALUE\r\n\r\n"
    # + "event: d\r" has read the next event's type line up to its CR; the LF that begins the next
    # feed ends it, and the data line after it is that event's value, not part of its type line.
    feeds = [_SETTLE.replace("\n", "\r\n"), ("\n\n" + _typed(["d"] * 6, 100)).replace("\n", "\r\n") + "event: d\r",
             "\ndata: last\r\n\r\n"]
    stream = "".join(feeds).encode()
    expected = reference_parse(stream)
    parser, out = _feed_all(feeds[:2])
    assert parser._separator == "\n\nevent: d\ndata: "
    out += feed_either(parser, 2, feeds[2])
    assert out == expected and out[-1] == SSEEvent("d", "last", "")
    assert assert_chunking_invariant(_observed, stream, random_count=20)[0] == out


def test_a_data_only_feed_holding_exactly_the_steady_state_cap_besides_its_separators_is_read_without_a_line() -> None:
    # max_line_chars 19: the steady state takes up to 13 characters besides the separators. This feed
    # holds 13 ("c", 11 "d", "e") and two separators: it is split, and no line is interpreted.
    parser = SSEParser(Limits(max_line_chars=19))
    assert parser.feed("data: a\n\ndata: b\n\ndata: ") == [SSEEvent("message", v, "") for v in "ab"]
    feed = "c\n\ndata: " + "d" * 11 + "\n\ndata: e"
    assert len(feed) - 2 * len("\n\ndata: ") == 13
    assert parser.feed(feed) == [SSEEvent("message", v, "") for v in ("c", "d" * 11)]
    assert parser.lines_interpreted == 0
    assert parser.feed("\n\n") == [SSEEvent("message", "e", "")]


# Minimal cases of the full mutation run of 2026-12-05 (each shrunk by build_scripts/sse_mutant_fuzz.py
# from a random stream on which a surviving mutant differed): the events are the oracle's under every
# chunking, and the counters say which path read the given feeds. ``work`` is the characters fed plus
# the values the steady state joined from fragments; ``lines_interpreted`` the lines the general path read.
#: Events of two names in turn: the parser then reads with the separator of any type.
_ANY_TYPE_WARM = "".join(f"event: {name}\ndata: x\n\n" for name in "abababababab")

_MINIMAL = {
    # A lone LF inside the last value of a CRLF feed is a line break ("b" a field of its own), not data.
    "crlf-value-holding-a-lone-lf": (["data: x\r\n\r\ndata: a\nb\r\n\r\n"], Limits(), (3, 25)),
    # A CRLF feed ending in an empty value and its CR: the two blank lines are read, the event is held.
    "crlf-empty-value-cut-at-its-cr": (["\r\n\r\nevent: \r\ndata: \r"], Limits(max_line_chars=24), (2, 20)),
    # The pending empty value of CRLF text ended by a lone LF: read without a line.
    "crlf-pending-value-ended-by-a-lone-lf": (["data: \r\n\r\ndata: ", "\n"],
                                              Limits(max_line_chars=24, max_event_chars=40), (0, 17)),
    # A value held across feeds, completed by the next event's data line or event line: joined once.
    "held-value-then-data-line": (["\ndata: ", "v", "\n\ndata: "], Limits(max_line_chars=80), (1, 17)),
    "held-value-then-event-line": (["\ndata: ", "1", "\n\nevent: "],
                                   Limits(max_line_chars=1000, max_event_chars=100), (1, 18)),
    "held-value-then-crlf-event-line": (["\ndata: ", "vv", "\r\n\r\nevent: "],
                                        Limits(max_line_chars=19, max_event_chars=40), (1, 22)),
    # One event and the next event's line in one feed under a tight ceiling: the event's line is joined.
    "event-then-event-line-at-a-tight-ceiling": (["data: w1\n\nevent: "],
                                                 Limits(max_line_chars=19, max_event_chars=40), (0, 25)),
    # A data line ended by a lone CR in CRLF text, then its blank line: an empty value.
    "crlf-data-line-ended-by-a-lone-cr": (["data: \r\n\r\ndata: \r\r\n\r\ndata: "],
                                          Limits(max_line_chars=40, max_event_chars=100), (1, 27)),
    # A typed event's data line ended by a lone CR at a feed's end, then CRLF text beginning with the
    # blank line and the next event of that name: read from the blank line on in the steady state.
    "lone-cr-then-crlf-blank-line-and-typed-prefix": (
        ["event:d\ndata: ", "\r", "\r\nevent: d\r\ndata: \r\n\r\nevent: d\r\ndata: "],
        Limits(max_line_chars=80, max_event_chars=100), (1, 53)),
    # An event line cut at a feed's end, then its data line, the blank line and the next event line: the
    # event is read in one piece when its line fits the line ceiling (exactly, or not: CRLF at 19, LF at
    # 24 with an event ceiling of 16), else line by line.
    "event-line-cut-then-its-event-at-the-line-ceiling": (["event: d", "\ndata: \u65e5w1w1v\n\nevent: "],
                                                         Limits(max_line_chars=24, max_event_chars=16), (0, 51)),
    "crlf-event-line-cut-then-its-event-past-the-line-ceiling": (
        ["event: d", "\r\ndata: \u65e5w1v\r\n\r\nevent: "], Limits(max_line_chars=19), (3, 39)),
    "empty-event-line-cut-then-its-event-past-the-line-ceiling": (
        ["event: ", "\ndata: w1w1v\u65e5\n\nevent: "], Limits(max_line_chars=19), (1, 36)),
    # A name's run counted again from nothing each time the separator of any type is taken.
    "name-run-restarts-on-the-separator-of-any-type": (
        ["event:d\ndata\n\n" + "data\n\n" * 6 + "event:d\ndata\r\n\r\nevent: d\r\ndata: ",
         "\n\r\n\r\nevent: d\r\ndata: ", "\r\n\r\nevent: d\r\ndata: \n\r\n\r\nevent: "], Limits(), (21, 135)),
    "name-run-restarts-from-zero": (
        ["event:d\ndata\n\n" + "data\n\n" * 5 + "event:d\ndata\n\nevent: d\ndata: ", "\n\nevent:d\ndata",
         ": \n\nevent: d\ndata: "], Limits(max_line_chars=1000, max_event_chars=100), (18, 112)),
    # On the separator of any type (names that vary), a value held across feeds whose line is exactly at the line
    # ceiling: completed in the steady state (`_begun_event`'s bound), not line by line.
    "any-type-held-value-at-the-line-ceiling": (
        [_ANY_TYPE_WARM + "event: a\ndata: ", "v" * 11, "vvv\n\nevent: b\ndata: z\n\n"], Limits(max_line_chars=20),
        (1, 279)),
    # A feed of named events just under the event ceiling, read with the separator of any type.
    "named-events-under-the-event-ceiling": (
        ["data: \n\nevent: ta: a\n\n" + "event: d\ndata: a\n\n" * 4 + " \u65e5w1\n\nd"],
        Limits(max_line_chars=1000, max_event_chars=100), (4, 107)),
}


@pytest.mark.parametrize("name", sorted(_MINIMAL))
def test_minimal_cases_of_the_mutation_run_keep_their_events_and_their_path(name: str) -> None:
    feeds, limits, (lines, work) = _MINIMAL[name]
    stream = "".join(feeds).encode()
    parser = SSEParser(limits)
    out: list[object] = []
    for i, text in enumerate(feeds):
        out += feed_either(parser, i, text)
    assert out == reference_parse(stream)
    assert (parser.lines_interpreted, parser.work) == (lines, work)
    assert assert_chunking_invariant(lambda chunks: _decoded(chunks, limits), stream) == out


def test_a_value_held_across_feeds_one_character_past_the_line_ceiling_trips_it_on_the_separator_of_any_type() -> None:
    # `_begun_event`'s bound for a value held as fragments: its line ("data: " and 15 characters) is one past the
    # ceiling of 20, so the event is never dispatched, whichever way the feeds fall.
    feeds = [_ANY_TYPE_WARM + "e", "vent: a\ndata: " + "v" * 12, "vvv\n\nevent: b\ndata: z\n\n"]
    limits = Limits(max_line_chars=20)
    parser = SSEParser(limits)
    out: list[object] = []
    for i, text in enumerate(feeds):
        out += feed_either(parser, i, text)
        if parser.failure is not None:
            break
    failure = parser.failure
    assert failure is not None and (failure.outcome.value, failure.stage) == ("buffer_limit", "line")
    assert [item[:2] for item in out] == [(name, "x") for name in "abababababab"]  # type: ignore[index]

    def run(chunks: list[bytes]) -> tuple[list[object], object]:
        stream = EventStreamParser(limits)
        items: list[object] = []
        for chunk in chunks:
            items += stream.feed(chunk)
            if stream.failure is not None:
                break
        return items, stream.failure

    assert assert_chunking_invariant(run, "".join(feeds).encode()) == (out, failure)


def _name_runs(feeds: list[tuple[list[str], str]]) -> tuple[list[tuple[bool, str]], list[object], bytes]:
    """Feed a typed stream in the given pieces: each piece completes the events named in its list (the
    first the event the previous piece ended inside) and ends inside an event of the name after it.
    Returns the separator after each piece (of any type?, its type), the items, and the stream."""
    parser, out, pieces, number = SSEParser(), [], [], 0
    states: list[tuple[bool, str]] = []
    for names, tail in feeds:
        piece = ""
        for i, name in enumerate(names):
            piece += f"{number}\n\n" if pieces and i == 0 else f"event: {name}\ndata: {number}\n\n"
            number += 1
        pieces.append(piece + f"event: {tail}\ndata: ")
        out += parser.feed(pieces[-1])
        states.append((parser._any_type, parser._prefix_type))
    return states, out, "".join(pieces).encode()


def test_a_name_takes_its_own_separator_after_exactly_eight_events_in_a_row_counted_across_feeds() -> None:
    # On the separator of any type (names that vary), a name that repeats takes its own separator once
    # it has _NAME_RUN (8) events in a row. The count goes on across feeds when a feed's events all have
    # the name; it starts again when a feed ends inside an event of another name (also on the way back
    # from a name's separator to the one of any type) and when the run began inside the feed.
    varying = (["a", "b", "c", "a", "b", "c"], "d")
    states, out, stream = _name_runs([
        varying, (["d"] * 5, "d"), (["d"], "e"), (["e"] * 7, "e"), (["e"], "e"),  # 5 + 1, then e: 7, 8
        (["e"], "x"), (["x", "g", "x"], "x"), (["x"] * 4, "x"), (["x"], "x"),  # back to any type: 0, 3, 7, 8
        (["x", "y", "y"], "y"), (["y"] * 7, "y"), (["y"], "y"),  # a run begun inside a feed: 7, 8
    ])
    assert states == [(True, ""), (True, ""), (True, ""), (True, ""), (False, "e"), (True, "e"), (True, "e"),
                      (True, "e"), (False, "x"), (True, "x"), (True, "x"), (False, "y")]
    assert out == reference_parse(stream)


def test_a_line_of_another_field_held_between_two_data_lines_keeps_the_event_open_under_every_chunking() -> None:
    # "data: c" has ended, then a line of another field or a comment ("dat", ":x") is cut by the feed's
    # end: the next feed's LF ends that line and "data: v" is one more line of the same event, not the
    # start of the next one (which a blank line would have needed).
    for held in ("dat", ":x"):
        feeds = [f"data: a\n\ndata: b\n\ndata: c\n{held}", "\ndata: v\n\ndata: w\n\n"]
        stream = "".join(feeds).encode()
        expected = reference_parse(stream)
        assert [e.data for e in expected if isinstance(e, SSEEvent)] == ["a", "b", "c\nv", "w"]
        assert _feed_all(feeds)[1] == expected
        assert assert_chunking_invariant(_items, stream) == expected


def test_a_data_line_after_a_feed_that_ended_with_a_data_line_s_line_break_continues_the_event() -> None:
    # The last feed ended right after a data line's line break (LF or CRLF); the next feed begins with
    # another data line, not with the blank line: one event of two lines, in either framing.
    for eol in ("\n", "\r\n"):
        feeds = [f"data: x{eol}{eol}" * 10 + f"data: a{eol}", f"data: v{eol}{eol}data: w{eol}{eol}"]
        stream = "".join(feeds).encode()
        expected = reference_parse(stream)
        assert [e.data for e in expected if isinstance(e, SSEEvent)][-2:] == ["a\nv", "w"]
        assert _feed_all(feeds)[1] == expected
        assert assert_chunking_invariant(_items, stream, random_count=20) == expected


def test_a_crlf_typed_feed_beginning_with_the_blank_line_of_an_event_whose_lines_ended_is_read_without_a_line() -> None:
    # The one-name CRLF separator; the last feed ended after a data line's CRLF. The next feed's blank
    # line dispatches that event and the rest is read in the steady state: no line interpreted.
    settle = "event: d\r\ndata: x\r\n\r\n" * 10
    feeds = [settle + "event: d\r\ndata: a\r\n", "\r\nevent: d\r\ndata: v\r\n\r\nevent: d\r\ndata: w\r\n\r\n"]
    parser, out = _feed_all(feeds[:1])
    lines = parser.lines_interpreted
    out += feed_either(parser, 1, feeds[1])
    assert out == reference_parse("".join(feeds).encode())
    assert [e[1] for e in out[-3:]] == ["a", "v", "w"]
    assert parser.lines_interpreted == lines
