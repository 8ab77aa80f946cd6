"""Work measured as Python lines executed inside ``webclient``: a count that no load on the
machine can change, for the linear-time checks (the fuzzer and the per-route regression tests).

A tracer cannot see work done in C (``str.join``, ``json.loads``, regular expressions); the checks
here catch work that grows in Python loops, which is where a per-event scan over everything
accumulated so far would live.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from webclient import EventStreamParser, SSEEvent, StreamSession


def traced_lines(run: Callable[[], object]) -> int:
    """Python lines executed inside ``webclient`` while ``run()`` runs."""
    count = 0

    def local(frame: Any, event: str, arg: object) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def global_(frame: Any, event: str, arg: object) -> Any:
        return local if "webclient" in frame.f_code.co_filename else None

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        run()
    finally:
        sys.settrace(previous)
    return count


def work_of(route: str, data: bytes, **options: Any) -> int:
    """Lines executed to open a session, feed ``data`` in one chunk, finish and serialize."""
    return measured(route, data, **options)[0]


def measured(route: str, data: bytes, **options: Any) -> tuple[int, tuple[str, str | None, int]]:
    """:func:`work_of`, and how the attempt ended: ``(outcome, stage, where)``, ``where`` the number of events
    the session took when it stopped before the stream's end, else -1 (it took them all)."""
    ended: list[tuple[str, str | None, int]] = []

    def run() -> None:
        session = StreamSession(route, **options)
        session.open(200, "text/event-stream")
        session.feed(data)
        result = session.finish()
        result.to_dict()
        ended.append((result.outcome.value, result.stage, session.events_seen))

    work = traced_lines(run)
    outcome, stage, taken = ended[0]
    parser = EventStreamParser()
    total = sum(1 for item in [*parser.feed(data), *parser.close()] if isinstance(item, SSEEvent))
    return work, (outcome, stage, taken if taken < total else -1)


#: Lines per added copy may differ by this much between measurements (a flush, a last partial copy).
SLACK = 400


def assert_linear_growth(route: str, build: Callable[[int], bytes], **options: Any) -> tuple[int, int, int] | None:
    """``build(k)`` is a stream holding ``k`` copies of something. Work for k, 2k and 4k copies: the
    2k copies added from 2k to 4k may cost at most 1.5 times per copy what the k added from k to 2k
    cost (linear work adds the same per copy; work quadratic in the copies adds three times as much).
    k is the first of 2, 4, ..., 64 for which the streams of k/2, k, 2k and 4k copies end alike: the
    same outcome and stage, and the session taking events in step with the copies (all of them in every
    stream, or up to the same event, or up to the same event counted from the copies' end: each doubling
    of the copies adds twice the events the one before added), so that what differs between the streams
    is the copies and nothing else. Starting at two keeps a failure the repetition itself causes inside
    every measurement. Where the repetition moves the point where the session stops otherwise (a stream
    of two copies completes and validates its answer, one of four stops at a ceiling trip; four copies
    trip in a large event after the copies, eight a few events earlier), the window starts after the
    move, and one count of copies later still (the first count that stops at the final point can cost a
    few hundred lines more than the next, measured: 2,123 lines for 16 copies, 2,219 for 32, then 16 per
    copy), so that no count of copies does less work than a smaller one for that reason alone. Returns
    the three counts, or ``None`` when no window ends alike (a ceiling that trips in the events after the
    copies, earlier the more copies there are, until the copies themselves reach it: callers count these
    and bound how often they happen)."""
    seen: dict[int, tuple[int, tuple[str, str | None, int]]] = {}

    def at(copies: int) -> tuple[int, tuple[str, str | None, int]]:
        if copies not in seen:
            seen[copies] = measured(route, build(copies), **options)
        return seen[copies]

    for k in (2, 4, 8, 16, 32, 64):
        (_, end0), (w1, end1), (w2, end2), (w4, end4) = at(k // 2), at(k), at(2 * k), at(4 * k)
        taken = [end[2] for end in (end0, end1, end2, end4)]
        steps = [b - a for a, b in pairwise(taken)]
        if end0[:2] == end1[:2] == end2[:2] == end4[:2] and steps[1] == 2 * steps[0] and steps[2] == 2 * steps[1]:
            break
    else:
        return None
    assert (w4 - w2) <= 2 * 1.5 * max(w2 - w1, 0) + SLACK, (k, w1, w2, w4, end1, end2, end4)
    return w1, w2, w4
