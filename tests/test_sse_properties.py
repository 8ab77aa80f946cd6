"""Property tests: the parser agrees with a naive spec oracle on generated streams, under any
chunking, and never raises on arbitrary bytes."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import assert_chunking_invariant, feed_either, split_at
from tests.sse_reference import reference_parse, reference_state
from webclient import EventStreamParser, Limits, SSEParser

NAMES = st.sampled_from(["data", "event", "id", "retry", "Data", "foo", "", "data ", "\ufeffdata"])
VALUES = st.text(alphabet=st.sampled_from(list("ab :\x00\u2028\x85\u00e9\U0001f600\t0123456789\ufeff")), max_size=8)
EOLS = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def lines(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["field", "field", "field", "bare", "comment", "blank"]))
    eol = draw(EOLS)
    if kind == "blank":
        return eol
    if kind == "comment":
        return ":" + draw(VALUES) + eol
    if kind == "bare":
        return draw(NAMES) + eol
    sep = draw(st.sampled_from([":", ": ", ":  "]))
    return draw(NAMES) + sep + draw(VALUES) + eol


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    text = "".join(draw(st.lists(lines(), max_size=25)))
    if draw(st.booleans()):
        text = "\ufeff" + text
    data = text.encode()
    if draw(st.booleans()):  # sprinkle invalid bytes
        pos = draw(st.integers(0, len(data)))
        data = data[:pos] + draw(st.sampled_from([b"\xff", b"\xe2\x82", b"\xc0"])) + data[pos:]
    return data


def run(chunks: list[bytes]) -> list[object]:
    stream = EventStreamParser(utf8_errors="replace")
    out: list[object] = []
    for i, chunk in enumerate(chunks):
        out.extend(feed_either(stream, i, chunk))  # (feed and feed_tuples in turn)
    out.extend(stream.close())
    assert stream.failure is None
    return out


def limited(limits: Limits, errors: str) -> Callable[[list[bytes]], tuple[list[object], object, int, int]]:
    """A runner that stops at the first failure and reports items, failure and pending counts."""

    def go(chunks: list[bytes]) -> tuple[list[object], object, int, int]:
        stream = EventStreamParser(limits, utf8_errors=errors)  # type: ignore[arg-type]
        out: list[object] = []
        for i, chunk in enumerate(chunks):
            out.extend(feed_either(stream, i, chunk))  # (feed and feed_tuples in turn)
            if stream.failure is not None:
                break
        else:
            out.extend(stream.close())
        return out, stream.failure, stream.pending_line_chars, stream.pending_event_chars

    return go


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=streams())
def test_parser_matches_the_spec_oracle_under_any_chunking(data: bytes) -> None:
    assert_chunking_invariant(run, data, expected=reference_parse(data), random_count=5)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=200), max_line=st.integers(1, 40), max_event=st.integers(1, 40),
       strict=st.booleans())
def test_arbitrary_bytes_never_raise_and_trip_identically_under_any_chunking(
    data: bytes, max_line: int, max_event: int, strict: bool
) -> None:
    limits = Limits(max_line_chars=max_line, max_event_chars=max_event)
    assert_chunking_invariant(limited(limits, "strict" if strict else "replace"), data, random_count=5)


# Streams shaped like LLM traffic, which exercise the steady state and its hand-offs to the general
# path. Data-only (Chat, Gemini: one "data: " line per event) or typed (Anthropic, Responses: "event:
# NAME" + one data line): runs of one event name, switches between names (prefixes of each other,
# empty, with a colon or a leading space), data-only events between typed ones, values with and
# without line breaks, ids, comments, a missing space after the colon, LF, CRLF or mixed framing,
# and an unfinished next event at the end.
# Values also hold text that reads like the stream's own lines ("event: x", "data: ") and its
# separators' names: a chunk boundary inside such a value must not turn its rest into a field.
VALUE_PIECES = [*'ab{}":,\u00e9\U0001f600 ', "event: ", "data: ", "content_block_delta", "ping"]
FAST_VALUES = st.lists(st.sampled_from(VALUE_PIECES), max_size=8).map("".join)
EVENT_NAMES = st.sampled_from(["content_block_delta", "ping", "content_block_delta2", "content", "", "e:x", " sp"])
KINDS = ["one"] * 6 + ["switch", "switch", "untyped", "nospace", "id", "comment", "multi", "blank"]
UNFINISHED = {False: ["data: "], True: ["data: ", "event: ", "event: content_block_delta\n", "event: ping\ndata: "]}


@st.composite
def llm_streams(draw: st.DrawFn, typed: bool) -> bytes:
    out = []
    name = draw(EVENT_NAMES)
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(KINDS))
        value = draw(FAST_VALUES)
        if kind == "switch":
            name = draw(EVENT_NAMES)
        head = f"event: {name}\n" if typed and kind != "untyped" else ""
        if kind in ("one", "switch", "untyped"):
            out.append(f"{head}data: {value}\n\n")
        elif kind == "nospace":
            out.append(f"{head.replace(': ', ':', 1)}data:{value}\n\n")
        elif kind == "id":
            out.append((head or "event: e\n") + f"data: {value}\nid: {value}\n\n")
        elif kind == "multi":
            out.append(f"{head}data: {value}\ndata: {draw(FAST_VALUES)}\n\n")
        elif kind == "comment":
            out.append(f": {value}\n")
        else:
            out.append("\n")
    text = frame(draw, "".join(out))
    if draw(st.booleans()):
        text += draw(st.sampled_from(UNFINISHED[typed])) + draw(FAST_VALUES)
    return text.encode()


def frame(draw: st.DrawFn, text: str) -> str:
    """LF as written, all CRLF (Gemini), or each line break drawn from LF, CRLF and CR."""
    framing = draw(st.sampled_from(["lf", "crlf", "crlf", "mixed"]))
    if framing == "crlf":
        return text.replace("\n", "\r\n")
    if framing == "mixed":
        pieces = text.split("\n")
        breaks = draw(st.lists(st.sampled_from(["\n", "\r\n", "\r", "\r\n"]), min_size=len(pieces),
                               max_size=len(pieces)))
        return "".join(p + b for p, b in zip(pieces, breaks, strict=True))[: -len(breaks[-1])]
    return text


@pytest.mark.parametrize("typed", [False, True], ids=["data-only", "typed"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_llm_shaped_streams_match_the_spec_oracle_under_any_chunking(typed: bool, data: st.DataObject) -> None:
    stream = data.draw(llm_streams(typed))
    assert_chunking_invariant(run, stream, expected=reference_parse(stream), random_count=5)


@pytest.mark.parametrize("typed", [False, True], ids=["data-only", "typed"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), max_line=st.integers(1, 40), max_event=st.integers(1, 30))
def test_llm_shaped_streams_trip_ceilings_identically_under_any_chunking(typed: bool, data: st.DataObject,
                                                                         max_line: int, max_event: int) -> None:
    limits = Limits(max_line_chars=max_line, max_event_chars=max_event)
    assert_chunking_invariant(limited(limits, "strict"), data.draw(llm_streams(typed)), random_count=5)


# The invariants the steady state relies on (see webclient/_sse.py, "The fast path" and "Pending state").

SEPARATOR_TEXT = st.text(alphabet=st.sampled_from(list("\r\nevent: data:xé😀")), max_size=80)


@settings(max_examples=300, deadline=None)
@given(name=st.text(alphabet=st.characters(blacklist_characters="\r\n"), max_size=12), text=SEPARATOR_TEXT)
def test_a_separator_never_overlaps_itself(name: str, text: str) -> None:
    # Splitting on the separator is unambiguous only if no proper prefix of it is also a suffix:
    # then two occurrences never overlap, and every part between two of them is a whole block; so
    # splitting from the right (which the parser does) finds the same parts as from the left.
    for lf in ("\n\ndata: ", f"\n\nevent: {name}\ndata: ", "\n\nevent: "):
        for separator in (lf, lf.replace("\n", "\r\n")):
            assert not any(separator.startswith(separator[-k:]) for k in range(1, len(separator)))
            sample = separator.join([text, name, text + separator[: len(text) % len(separator)], ""])
            assert sample.rsplit(separator) == sample.split(separator)


def pending_state_invariant_holds(parser: SSEParser) -> bool:
    """A data line held as its value began an event: no data buffered; with a separator of one
    type, that type set (the separator of any type holds the event's own); and it is held one way
    at a time (one string, or fragments)."""
    held_as_string = parser._data_tail is not None
    held_as_fragments = parser._tail_is_data
    if not (held_as_string or held_as_fragments):
        return True
    return (not (held_as_string and held_as_fragments) and not parser._data
            and (parser._any_type or parser._event_type == parser._prefix_type)
            and (held_as_string or parser._line_parts != []) and (held_as_fragments or not "".join(parser._line_parts)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=llm_streams(typed=True) | llm_streams(typed=False), cuts=st.lists(st.integers(0, 400), max_size=12))
def test_a_pending_data_value_always_began_an_event_of_the_separators_type(data: bytes, cuts: list[int]) -> None:
    parser = SSEParser()
    text = data.decode()
    points = [0, *sorted({c % (len(text) + 1) for c in cuts}), len(text)]
    for start, end in pairwise(points):
        parser.feed(text[start:end])
        assert pending_state_invariant_holds(parser)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=llm_streams(typed=True) | llm_streams(typed=False) | streams(),
       cuts=st.lists(st.integers(0, 400), max_size=12))
def test_after_every_chunk_the_parser_state_is_the_naive_readings(data: bytes, cuts: list[int]) -> None:
    # Not only the final result: what is dispatched and what is pending (the partial line, the data
    # buffer, an event type, the last event ID) after each chunk, whichever path read it.
    stream = EventStreamParser(utf8_errors="replace")
    items: list[object] = []
    fed = b""
    for chunk in split_at(data, cuts):
        items += stream.feed(chunk)
        fed += chunk
        state = (items, stream.pending_line_chars, stream.pending_event_chars, stream.parser.has_pending_event,
                 stream.parser.last_event_id)
        assert state == reference_state(fed), f"after {len(fed)} of {len(data)} bytes"
