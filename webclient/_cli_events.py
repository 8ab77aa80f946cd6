"""``python -m webclient events``: a capture through layers 1 + 2, one JSON line per item.

Prints ``{"type", "data", "last_event_id"}`` per dispatched event and ``{"retry": N}`` per
accepted retry field, in stream order. When a ceiling trips or strict decoding fails, the last
line is ``{"outcome", "stage"}`` and the exit code is 1; otherwise 0. Defaults to WHATWG
(``--utf8-errors replace``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from ._cli_chunking import add_input_arguments, chunks_from, dumps_json, limits_from, read_input
from ._events import RetryField, SSEItem
from ._pipeline import EventStreamParser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the ``events`` command."""
    parser.add_argument("--utf8-errors", choices=("replace", "strict"), default="replace")
    add_input_arguments(parser, ("--max-line-chars", "--max-event-chars"))


def run(args: argparse.Namespace) -> int:
    """Feed the capture and print its items; return the exit code."""
    stream = EventStreamParser(limits_from(args), utf8_errors=args.utf8_errors)
    write = sys.stdout.write
    for chunk in chunks_from(args, read_input(args.file)):
        _print(stream.feed(chunk), write)
        if stream.failure is not None:
            break
    else:
        _print(stream.close(), write)
    if stream.failure is not None:
        write(dumps_json({"outcome": stream.failure.outcome.value, "stage": stream.failure.stage}) + "\n")
        return 1
    return 0


def _print(items: list[SSEItem], write: Callable[[str], object]) -> None:
    for item in items:
        if isinstance(item, RetryField):
            write(dumps_json({"retry": item.retry}) + "\n")
        else:
            record = {"type": item.type, "data": item.data, "last_event_id": item.last_event_id}
            write(dumps_json(record) + "\n")
