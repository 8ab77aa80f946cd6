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
    def run() -> None:
        session = StreamSession(route, **options)
        session.open(200, "text/event-stream")
        session.feed(data)
        session.finish().to_dict()

    return traced_lines(run)


#: Lines per added copy may differ by this much between measurements (a flush, a last partial copy).
SLACK = 400


def assert_linear_growth(route: str, build: Callable[[int], bytes], **options: Any) -> tuple[int, int, int]:
    """``build(k)`` is a stream holding ``k`` copies of something. Work for 2, 4 and 8 copies: the
    four copies added from 4 to 8 may cost at most 1.5 times per copy what the two added from 2 to 4
    cost (linear work adds the same per copy; work quadratic in the copies adds three times as
    much). Starting at two keeps a failure the repetition itself causes inside every measurement.
    Returns the three counts."""
    w2, w4, w8 = (work_of(route, build(k), **options) for k in (2, 4, 8))
    assert (w8 - w4) <= 2 * 1.5 * max(w4 - w2, 0) + SLACK, (w2, w4, w8)
    return w2, w4, w8
