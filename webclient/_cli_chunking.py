"""Shared CLI plumbing: reading a capture and a ``--tools`` file, cutting the capture into transport
chunks, limit options, and printing JSON.

Used by every command that feeds a capture (``events``, ``replay``, ``check``) so that
``--chunk-size``/``--split-at`` and the ceiling options mean the same thing everywhere.

Input problems (a missing, unreadable or directory capture; a ``--tools`` file that is not a JSON
object, nests too deeply or is not UTF-8) raise :class:`InputError`, whose message is one line;
the dispatcher (:mod:`webclient._cli`) prints it and exits 2. Output goes through
:func:`dumps_json`, which always produces valid, ASCII-only JSON whatever the value holds.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterator
from typing import Any

from ._errors import UsageError
from ._json import loads_strict
from ._limits import Limits


class InputError(Exception):
    """A command's input cannot be used (the message is one line, without content)."""


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise InputError(f"cannot read {what} {path!r}: {_reason(exc)}") from None
    except ValueError:  # a NUL in the path
        raise InputError(f"cannot read {what} {path!r}: not a valid path") from None


def dumps_json(value: object) -> str:
    """``value`` as one line of valid JSON: non-ASCII and lone surrogates escaped (``\\ud800``), and
    non-finite numbers (which JSON cannot express) printed as ``null``."""
    try:
        return json.dumps(value, ensure_ascii=True, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), ensure_ascii=True, allow_nan=False)


def _finite(value: object) -> object:
    """``value`` with every ``inf``/``nan`` float replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


#: option flag -> Limits field
LIMIT_OPTIONS: dict[str, str] = {
    "--max-line-chars": "max_line_chars",
    "--max-event-chars": "max_event_chars",
    "--max-text-chars": "max_text_chars",
    "--max-tool-input-chars": "max_tool_input_chars",
    "--max-retained-chars": "max_retained_chars",
}


def load_tools(path: str | None) -> dict[str, object] | None:
    """``--tools FILE.json``: a JSON object mapping tool names to JSON Schemas (``None`` when not
    given). An unreadable file or one that is not UTF-8 JSON (``NaN``/``Infinity`` and nesting past
    ``MAX_JSON_DEPTH`` included) is an :class:`InputError`; valid JSON that is not an object is a
    :class:`~webclient.UsageError`."""
    if path is None:
        return None
    data = _read(path, "--tools file")
    try:
        tools = loads_strict(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError("--tools file is not UTF-8") from None
    except RecursionError:
        raise InputError("--tools file is not usable JSON: nested too deeply") from None
    except ValueError as exc:  # positions and reasons only, never content
        raise InputError(f"--tools file is not usable JSON: {exc}") from None
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


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the session options a capture is replayed with, as :class:`~webclient.StreamSession` takes
    them (see :func:`session_options`): ``replay`` and ``check`` run the configuration you ship."""
    parser.add_argument("--tools", metavar="FILE.json", help="JSON object: tool name -> JSON Schema")
    parser.add_argument("--keep-unknown-items", action="store_true",
                        help="keep item / block / part / delta types the route does not know in the result's items "
                             "instead of failing protocol_error unknown_type")
    parser.add_argument("--include-reasoning-content", action="store_true",
                        help="openai-chat: the assistant message carries reasoning_content")
    parser.add_argument("--accept-stop-reason", action="append", dest="accepted_stop_reasons", metavar="REASON",
                        help="commit on this stop reason instead of the route's success ones (repeatable)")
    parser.add_argument("--utf8-errors", choices=("strict", "replace"), default="strict",
                        help="invalid UTF-8 ends the attempt (strict, the default) or decodes as U+FFFD")


def session_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :class:`~webclient.StreamSession` that :func:`add_session_arguments`
    options give (the ``--tools`` file loaded)."""
    return {"tools": load_tools(args.tools), "keep_unknown_items": args.keep_unknown_items,
            "include_reasoning_content": args.include_reasoning_content,
            "accepted_stop_reasons": args.accepted_stop_reasons, "utf8_errors": args.utf8_errors}


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
        if sys.stdin is None:  # started with standard input closed
            raise InputError("cannot read the capture from standard input: it is closed")
        try:
            return sys.stdin.buffer.read()
        except OSError as exc:
            raise InputError(f"cannot read the capture from standard input: {_reason(exc)}") from None
    return _read(path, "capture")


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
