"""A stream cut anywhere is never ``complete``: every EOF position of every complete recording.

A cut that loses any byte of content (any position up to the last content byte; only trailing
line terminators may be dropped) must end non-complete. Small recordings are cut at every byte;
larger ones at every position within two bytes of each event boundary plus a spread of others.
Each cut is replayed whole and in three chunks (the two must agree); a few cuts per recording go
through the full chunking helper.
"""

from __future__ import annotations

import random

import pytest

from tests.helpers import assert_chunking_invariant, split_at
from tests.route_fixtures import Case, cases, comparable, replay

COMPLETE = [c for c in cases() if c.outcome == "complete"]
SMALL = [c for c in COMPLETE if len(c.data) <= 5000]


def _content_end(case: Case) -> int:
    """Where the content ends: trailing line terminators, and on non-Chat routes a trailing stray
    ``data: [DONE]`` (OpenRouter's Responses stream sends one; it is not part of that route), may go."""
    data = case.data.rstrip(b"\r\n")
    if case.route != "openai-chat" and data.endswith(b"data: [DONE]"):
        data = data[: -len(b"data: [DONE]")].rstrip(b"\r\n")
    return len(data)


def _cut_outcome(case: Case, cut: int) -> tuple[str, str | None]:
    prefix = case.data[:cut]
    whole = replay(case.route, [prefix]).result
    pieces = replay(case.route, split_at(prefix, [cut // 3, (2 * cut) // 3])).result
    assert whole is not None and pieces is not None
    assert (pieces.outcome, pieces.stage, pieces.text, pieces.tool_calls) == (
        whole.outcome, whole.stage, whole.text, whole.tool_calls), f"cut at {cut} depends on chunking"
    return whole.outcome.value, whole.stage


def _boundary_cuts(case: Case, limit: int) -> list[int]:
    data = case.data
    cuts: set[int] = set()
    start = 0
    while (pos := data.find(b"\n\n", start)) >= 0 or (pos := data.find(b"\r\n\r\n", start)) >= 0:
        cuts.update(range(max(0, pos - 2), pos + 5))
        start = pos + 1
    end = _content_end(case)
    ordered = sorted(c for c in cuts if c <= end)
    if len(ordered) > limit:
        step = len(ordered) / limit
        ordered = [ordered[int(i * step)] for i in range(limit)]
    rng = random.Random(len(data))
    return sorted({*ordered, *(rng.randrange(0, end + 1) for _ in range(50)), *range(max(0, end - 40), end + 1)})


@pytest.mark.parametrize("case", SMALL, ids=[c.id for c in SMALL])
def test_every_cut_of_a_small_complete_recording_is_not_complete(case: Case) -> None:
    assert _cut_outcome(case, len(case.data)) == ("complete", None)
    end = _content_end(case)
    verdicts = {cut: _cut_outcome(case, cut) for cut in range(end + 1)}
    assert set(verdicts.values()) == {("truncated", "eof")}


@pytest.mark.parametrize("case", COMPLETE, ids=[c.id for c in COMPLETE])
def test_cuts_at_and_around_every_event_boundary_are_not_complete(case: Case) -> None:
    for cut in _boundary_cuts(case, limit=300):
        outcome, stage = _cut_outcome(case, cut)
        # The terminal event is the last one, so any cut loses it: nothing else is invented.
        assert (outcome, stage) == ("truncated", "eof"), f"cut at {cut} of {len(case.data)}: {outcome} {stage}"


@pytest.mark.parametrize("case", COMPLETE[::4], ids=[c.id for c in COMPLETE[::4]])
def test_a_cut_just_before_the_final_blank_line_is_truncated_under_every_chunking(case: Case) -> None:
    prefix = case.data[: _content_end(case) + 1]
    data, _, final, _ = assert_chunking_invariant(lambda chunks: comparable(case.route, chunks), prefix,
                                                  every_split_max=1500, random_count=10)
    assert data["outcome"] == "truncated" and final == "failed"  # type: ignore[index]
