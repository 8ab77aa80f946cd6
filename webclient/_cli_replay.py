"""``python -m webclient replay``: a capture through one route's :class:`~webclient.StreamSession`.

::

    python -m webclient replay --route {openai-chat,openai-responses,anthropic-messages,gemini}
        [--status N] [--content-type CT] [--chunk-size N | --split-at I,J,K]
        [--max-line-chars N] [--max-event-chars N] [--max-text-chars N] [--max-tool-input-chars N]
        [--tools FILE.json] FILE|-

Prints one JSON object, ``StreamResult.to_dict()``: ``{"outcome", "stage", "stop_reason",
"committed", "text", "tool_calls": [{"id", "name", "state", "arguments", "ready"}], "telemetry"}``.
Defaults: status 200, content type ``text/event-stream``. ``--tools`` is a JSON object mapping tool
names to JSON Schemas; without it any tool name is allowed and only JSON-object validity is
checked. Exit status: 0 when the outcome is ``complete``, 1 otherwise, 2 for unusable options or
input (see :mod:`webclient._cli`). The output is always valid JSON (:func:`dumps_json`).
"""

from __future__ import annotations

import argparse
import sys

from ._cli_chunking import (
    LIMIT_OPTIONS,
    add_input_arguments,
    chunks_from,
    dumps_json,
    limits_from,
    load_tools,
    read_input,
)
from ._outcome import Outcome
from ._routes import ROUTE_NAMES
from ._session import StreamSession


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the ``replay`` command."""
    parser.add_argument("--route", required=True, choices=ROUTE_NAMES)
    parser.add_argument("--status", type=int, default=200, metavar="N", help="HTTP status (default 200)")
    parser.add_argument("--content-type", default="text/event-stream", metavar="CT",
                        help="Content-Type header (default text/event-stream)")
    parser.add_argument("--tools", metavar="FILE.json", help="JSON object: tool name -> JSON Schema")
    add_input_arguments(parser, tuple(LIMIT_OPTIONS))


def run(args: argparse.Namespace) -> int:
    """Replay the capture and print the result object; return the exit code."""
    data = read_input(args.file)
    session = StreamSession(args.route, limits=limits_from(args), tools=load_tools(args.tools))
    session.open(args.status, args.content_type)
    if not session.done:
        for chunk in chunks_from(args, data):
            session.feed(chunk)
            if session.done:
                break
    result = session.finish()
    sys.stdout.write(dumps_json(result.to_dict()) + "\n")
    return 0 if result.outcome is Outcome.COMPLETE else 1
