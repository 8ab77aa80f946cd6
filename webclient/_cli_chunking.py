"""Shared CLI plumbing: reading a capture, cutting it into transport chunks, limit options.

Used by every command that feeds a capture (``events``, ``replay``, ``check``) so that
``--chunk-size``/``--split-at`` and the ceiling options mean the same thing everywhere.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator

from ._errors import UsageError
from ._limits import Limits

#: option flag -> Limits field
LIMIT_OPTIONS: dict[str, str] = {
    "--max-line-chars": "max_line_chars",
    "--max-event-chars": "max_event_chars",
    "--max-text-chars": "max_text_chars",
    "--max-tool-input-chars": "max_tool_input_chars",
}


def load_tools(path: str | None) -> dict[str, object] | None:
    """``--tools FILE.json``: a JSON object mapping tool names to JSON Schemas (``None`` when not
    given). A file that is not such an object is a :class:`~webclient.UsageError`."""
    if path is None:
        return None
    with open(path, "rb") as handle:
        tools = json.loads(handle.read())
    if not isinstance(tools, dict):
        raise UsageError("--tools must hold a JSON object mapping tool names to JSON Schemas")
    return tools


def positive_int(text: str) -> int:
    """argparse type: a positive decimal integer."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a positive integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError("expected a positive integer")
    return value


def offsets(text: str) -> list[int]:
    """argparse type: comma-separated non-negative byte offsets (``I,J,K``)."""
    try:
        values = [int(part, 10) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("expected comma-separated byte offsets") from None
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError("offsets must be non-negative")
    return values


def add_input_arguments(parser: argparse.ArgumentParser, limit_flags: tuple[str, ...]) -> None:
    """Add ``FILE|-``, the chunking options and the given ceiling options."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--chunk-size", type=positive_int, metavar="N", help="feed the bytes in N-byte chunks")
    group.add_argument("--split-at", type=offsets, metavar="I,J,K", help="cut the bytes at these offsets")
    for flag in limit_flags:
        parser.add_argument(flag, type=positive_int, metavar="N", dest=LIMIT_OPTIONS[flag])
    parser.add_argument("file", metavar="FILE|-", help="the capture (raw response body bytes); - for stdin")


def read_input(path: str) -> bytes:
    """The capture's bytes, from a file or (``-``) standard input."""
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as handle:
        return handle.read()


def limits_from(args: argparse.Namespace) -> Limits:
    """A Limits value with the ceiling options that were given applied over the defaults."""
    overrides = {field: getattr(args, field) for field in LIMIT_OPTIONS.values() if getattr(args, field, None)}
    return Limits(**overrides)


def chunks_from(args: argparse.Namespace, data: bytes) -> Iterator[bytes]:
    """Cut ``data`` as ``--chunk-size`` / ``--split-at`` ask (whole when neither is given)."""
    if args.chunk_size:
        size = args.chunk_size
        for start in range(0, len(data), size):
            yield data[start : start + size]
        return
    prev = 0
    for cut in sorted(set(args.split_at or ())):
        if 0 < cut < len(data):
            yield data[prev:cut]
            prev = cut
    yield data[prev:]
