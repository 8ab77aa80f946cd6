"""``python -m webclient replay``: a capture through one route's :class:`~webclient.StreamSession`.

::

    python -m webclient replay --route {openai-chat,openai-responses,anthropic-messages,gemini}
        [--status N] [--content-type CT] [--chunk-size N | --split-at I,J,K]
        [--max-line-chars N] [--max-event-chars N] [--max-text-chars N] [--max-tool-input-chars N]
        [--max-retained-chars N] [--tools FILE.json] [--keep-unknown-items] [--include-reasoning-content]
        [--accept-stop-reason REASON]... [--utf8-errors strict|replace] [--resume FILE]... FILE|-

Prints one JSON object, ``StreamResult.to_dict()`` (the one full serializer of a result):
``{"route", "outcome", "stage", "http_status", "stop_reason", "committed", "text", "refusal",
"reasoning", "usage", "provider_error", "tool_calls": [{"call", "id", "name", "kind", "state",
"arguments", "input", "ready"}], "choices", "items", "assistant_message", "response_id", "model",
"citations", "logprobs", "telemetry"}``.
Defaults: status 200, content type ``text/event-stream``. ``--tools`` is a JSON object mapping tool names to JSON
Schemas; without it any tool name is allowed and only JSON-object validity is checked. The session options
(``--keep-unknown-items``, ``--include-reasoning-content``, ``--accept-stop-reason``, ``--utf8-errors``) are
:class:`~webclient.StreamSession`'s (``keep_unknown_items``, ``include_reasoning_content``,
``accepted_stop_reasons``, ``utf8_errors``). ``--resume FILE`` (repeatable): FILE is the stream that resumed the
previous capture (a Responses ``GET .../responses/{id}?stream=true&starting_after=N``, or a Last-Event-ID
reconnect); each is fed, in the same chunking and with the same status and content type, into
``StreamSession.resume`` of the session before it, and the printed result is the combined answer's (telemetry: the
last capture's). Exit status: 0 when the outcome is ``complete``, 1 otherwise, 2 for unusable options or input (see
:mod:`webclient._cli`; also a ``--resume`` after a capture that cannot be resumed). The output is always valid JSON
(:func:`dumps_json`).
"""

from __future__ import annotations

import argparse
import sys

from ._cli_chunking import (
    LIMIT_OPTIONS,
    add_input_arguments,
    add_session_arguments,
    chunks_from,
    dumps_json,
    limits_from,
    read_input,
    session_options,
)
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
    add_session_arguments(parser)
    parser.add_argument("--resume", action="append", default=[], metavar="FILE",
                        help="a capture of the stream that resumed the previous one (repeatable, in order)")
    add_input_arguments(parser, tuple(LIMIT_OPTIONS))


def run(args: argparse.Namespace) -> int:
    """Replay the capture and print the result object; return the exit code."""
    captures = [read_input(path) for path in (args.file, *args.resume)]  # unreadable input: exit 2, no output
    session = StreamSession(args.route, limits=limits_from(args), **session_options(args))
    result = _replay(session, args, captures[0])
    for number, data in enumerate(captures[1:], 1):
        if not session.resumable:
            raise UsageError(f"--resume #{number}: the capture before it ended {result.outcome.value}"
                             f" ({result.stage}), which cannot be resumed")
        session = StreamSession.resume(session)
        result = _replay(session, args, data)
    sys.stdout.write(dumps_json(result.to_dict()) + "\n")
    return 0 if result.outcome is Outcome.COMPLETE else 1


def _replay(session: StreamSession, args: argparse.Namespace, data: bytes) -> StreamResult:
    """Open ``session`` with the given head, feed ``data`` in the given chunking, finish."""
    session.open(args.status, args.content_type)
    if not session.done:
        for chunk in chunks_from(args, data):
            session.feed(chunk)
            if session.done:
                break
    return session.finish()
