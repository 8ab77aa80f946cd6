"""Work measured as Python lines executed inside ``webclient``: a count that no load on the
machine can change, for the linear-time checks (the fuzzer and the per-route regression tests).

A tracer cannot see work done in C (``str.join``, ``json.loads``, regular expressions); the checks
here catch work that grows in Python loops, which is where a per-event scan over everything
accumulated so far would live.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from webclient import StreamSession


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


def measured(route: str, data: bytes, **options: Any) -> tuple[int, tuple[str, str | None]]:
    """:func:`work_of`, and the attempt's ``(outcome, stage)``."""
    ended: list[tuple[str, str | None]] = []

    def run() -> None:
        session = StreamSession(route, **options)
        session.open(200, "text/event-stream")
        session.feed(data)
        result = session.finish()
        result.to_dict()
        ended.append((result.outcome.value, result.stage))

    return traced_lines(run), ended[0]


#: Lines per added copy may differ by this much between measurements (a flush, a last partial copy).
SLACK = 400


def assert_linear_growth(route: str, build: Callable[[int], bytes], **options: Any) -> tuple[int, int, int]:
    """``build(k)`` is a stream holding ``k`` copies of something. Work for k, 2k and 4k copies: the
    2k copies added from 2k to 4k may cost at most 1.5 times per copy what the k added from k to 2k
    cost (linear work adds the same per copy; work quadratic in the copies adds three times as much).
    k is the first of 2, 4 and 8 for which the three streams end alike (the same outcome and stage):
    starting at two keeps a failure the repetition itself causes inside every measurement, and where
    the repetition makes a ceiling trip only from some number of copies on (a stream of two copies
    completes and validates its answer, one of four stops at the trip), the window starts after it, so
    that no count of copies does less work than a smaller one for that reason alone. Returns the three
    counts."""
    seen: dict[int, tuple[int, tuple[str, str | None]]] = {}

    def at(copies: int) -> tuple[int, tuple[str, str | None]]:
        if copies not in seen:
            seen[copies] = measured(route, build(copies), **options)
        return seen[copies]

    for k in (2, 4, 8):
        (w1, end1), (w2, end2), (w4, end4) = at(k), at(2 * k), at(4 * k)
        if end1 == end2 == end4:
            break
    assert (w4 - w2) <= 2 * 1.5 * max(w2 - w1, 0) + SLACK, (k, w1, w2, w4, end1, end2, end4)
    return w1, w2, w4
