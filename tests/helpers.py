"""Chunking invariance: the defining property of webclient, checked by one helper.

Every parser test runs its input through :func:`assert_chunking_invariant`, which feeds the same
bytes whole, one byte at a time, split at every single position (inputs up to
``EVERY_SPLIT_MAX`` bytes), split at seeded random multi-point patterns, and with empty chunks
interleaved, and asserts that the observable result (events, outcome, limit trips, counters; the
caller's ``run`` decides what is observable) is identical for all of them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from webclient import RetryField, SSEEvent

T = TypeVar("T")

EVERY_SPLIT_MAX = 4096
RANDOM_CHUNKINGS = 50


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    """Cut ``data`` at the given byte offsets (sorted, deduplicated, clipped)."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    chunks, prev = [], 0
    for c in points:
        chunks.append(data[prev:c])
        prev = c
    chunks.append(data[prev:])
    return chunks


def chunkings(data: bytes, *, seed: int = 0, random_count: int = RANDOM_CHUNKINGS,
              every_split_max: int = EVERY_SPLIT_MAX) -> Iterator[tuple[str, list[bytes]]]:
    """Yield ``(label, chunks)`` pairs covering the chunkings described in the module docstring."""
    yield "whole", [data]
    yield "bytewise", [data[i : i + 1] for i in range(len(data))]
    yield "with-empty-chunks", [b""] + [x for i in range(0, len(data), 7) for x in (data[i : i + 7], b"")]
    if len(data) <= every_split_max:
        for i in range(1, len(data)):
            yield f"split@{i}", [data[:i], data[i:]]
    else:
        rng = random.Random(seed ^ 0x5EED)
        for _ in range(200):
            i = rng.randrange(1, len(data))
            yield f"split@{i}", [data[:i], data[i:]]
    rng = random.Random(seed)
    for n in range(random_count):
        k = rng.randint(1, max(1, min(len(data), 64)))
        cuts = [rng.randrange(0, len(data) + 1) for _ in range(k)]
        yield f"random#{n}", split_at(data, cuts)


def feed_either(parser: Any, index: int, data: Any) -> list[object]:
    """``parser.feed(data)`` for an even ``index``, ``parser.feed_tuples(data)`` for an odd one (an
    ``SSEParser`` or ``EventStreamParser``), after checking that the call gives what it promises: ``feed``
    each event as an :class:`~webclient.SSEEvent`, ``feed_tuples`` as a plain tuple, retry fields as they are.

    Parser tests feed through this, so that every chunking of several chunks mixes the two calls on one
    parser and :func:`assert_chunking_invariant` compares the mix with the whole input read by ``feed``:
    the two give the same items, whatever the chunking (an ``SSEEvent`` equals the tuple of its fields,
    which is why the classes are checked here)."""
    tuples = index % 2 == 1
    items: list[object] = parser.feed_tuples(data) if tuples else parser.feed(data)
    event_class = tuple if tuples else SSEEvent
    for item in items:
        assert item.__class__ is event_class or item.__class__ is RetryField, (tuples, item.__class__)
    return items


def assert_chunking_invariant(run: Callable[[list[bytes]], T], data: bytes, expected: T | None = None,
                              *, seed: int = 0, random_count: int = RANDOM_CHUNKINGS,
                              every_split_max: int = EVERY_SPLIT_MAX) -> T:
    """Assert ``run(chunks)`` gives one result for every chunking of ``data``; return it.

    ``run`` must build a fresh parser/session per call. When ``expected`` is given, the whole-input
    result must equal it too.
    """
    reference = run([data])
    if expected is not None:
        assert reference == expected, f"whole-input result differs from expected:\n{reference!r}\n!=\n{expected!r}"
    for label, chunks in chunkings(data, seed=seed, random_count=random_count, every_split_max=every_split_max):
        got = run(chunks)
        assert got == reference, f"chunking {label} changed the result:\n{got!r}\n!=\n{reference!r}"
    return reference


def cli_help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """``python -m webclient ARGV --help``'s text, in process, with its whitespace runs made single spaces
    (argparse wraps to the terminal width); fails unless it exits 0."""
    from webclient._cli import main

    with pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    return " ".join(capsys.readouterr().out.split())
