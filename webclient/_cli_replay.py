"""``python -m webclient replay``: a capture through one route's :class:`~webclient.StreamSession`.

::

    python -m webclient replay --route {openai-chat,openai-responses,anthropic-messages,gemini}
        [--status N] [--content-type CT] [--chunk-size N | --split-at I,J,K]
        [--max-line-chars N] [--max-event-chars N] [--max-text-chars N] [--max-tool-input-chars N]
        [--tools FILE.json] [--resume FILE]... FILE|-

Prints one JSON object, ``StreamResult.to_dict()``: ``{"outcome", "stage", "stop_reason",
"committed", "text", "tool_calls": [{"id", "name", "state", "arguments", "ready"}], "telemetry"}``.
Defaults: status 200, content type ``text/event-stream``. ``--tools`` is a JSON object mapping tool
names to JSON Schemas; without it any tool name is allowed and only JSON-object validity is
checked. ``--resume FILE`` (repeatable): FILE is the stream that resumed the previous capture (a Responses
``GET .../responses/{id}?stream=true&starting_after=N``, or a Last-Event-ID reconnect); each is fed, in the same
chunking and with the same status and content type, into ``StreamSession.resume`` of the session before it, and
the printed result is the combined answer's (telemetry: the last capture's). Exit status: 0 when the outcome is
``complete``, 1 otherwise, 2 for unusable options (also a ``--resume`` after a capture that is not resumable).
"""

from __future__ import annotations

import argparse
import json
import sys

from ._cli_chunking import LIMIT_OPTIONS, add_input_arguments, chunks_from, limits_from, load_tools, read_input
from ._errors import UsageError
from ._outcome import Outcome
from ._routes import ROUTE_NAMES
from ._session import StreamSession
from ._updates import StreamResult


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the ``replay`` command."""
    parser.add_argument("--route", required=True, choices=ROUTE_NAMES)
    parser.add_argument("--status", type=int, default=200, metavar="N", help="HTTP status (default 200)")
    parser.add_argument("--content-type", default="text/event-stream", metavar="CT",
                        help="Content-Type header (default text/event-stream)")
    parser.add_argument("--tools", metavar="FILE.json", help="JSON object: tool name -> JSON Schema")
    parser.add_argument("--resume", action="append", default=[], metavar="FILE",
                        help="a capture of the stream that resumed the previous one (repeatable, in order)")
    add_input_arguments(parser, tuple(LIMIT_OPTIONS))


def run(args: argparse.Namespace) -> int:
    """Replay the capture and print the result object; return the exit code."""
    try:
        session = StreamSession(args.route, limits=limits_from(args), tools=load_tools(args.tools))
    except (UsageError, OSError, ValueError) as exc:
        # Option problems only (a schema keyword we do not implement, an unreadable file).
        detail = exc if isinstance(exc, UsageError) else "unusable --tools"
        sys.stderr.write(f"replay: {type(exc).__name__}: {detail}\n")
        return 2
    result = _replay(session, args, args.file)
    for number, path in enumerate(args.resume, 1):
        if not session.resumable:
            sys.stderr.write(f"replay: --resume #{number}: the capture before it ended {result.outcome.value}"
                             f" ({result.stage}), which cannot be resumed\n")
            return 2
        session = StreamSession.resume(session)
        result = _replay(session, args, path)
    sys.stdout.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
    return 0 if result.outcome is Outcome.COMPLETE else 1


def _replay(session: StreamSession, args: argparse.Namespace, path: str) -> StreamResult:
    """Open ``session`` with the given head, feed the capture at ``path`` in the given chunking, finish."""
    session.open(args.status, args.content_type)
    if not session.done:
        for chunk in chunks_from(args, read_input(path)):
            session.feed(chunk)
            if session.done:
                break
    return session.finish()
