"""How one HTTP attempt ended: the closed outcome set, and the failure value that carries it.

Every attempt ends in exactly one :class:`Outcome`. A failure is a value, never an exception: the
layer that detects it records a :class:`Failure` naming the outcome and the *stage* (which ceiling,
which layer, which check), and stops consuming input. Exceptions are kept for caller bugs
(see :mod:`webclient._errors`).

A ``Failure`` holds only allow-listed, content-free fields: the outcome, a stage name from a fixed
vocabulary, and optionally a byte or character offset. It never holds payload text.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Outcome(enum.Enum):
    """The closed set of ways a stream attempt ends. ``value`` is the wire/telemetry spelling."""

    #: The route's completion conditions all held: terminal event, accepted stop reason, every block
    #: closed, every tool input parsed and validated, nothing pending at EOF.
    COMPLETE = "complete"
    #: EOF before the terminal condition, pending decoder/line/event state at EOF, or a terminal
    #: condition whose stop reason is a limit stop (``length``, ``max_tokens`` ...).
    TRUNCATED = "truncated"
    #: The response or the stream broke the route's protocol (gate, envelope JSON, event order).
    PROTOCOL_ERROR = "protocol_error"
    #: Invalid UTF-8 under the strict decoder.
    DECODE_ERROR = "decode_error"
    #: A closed tool input that is not valid JSON, not an object, or fails its schema or policy.
    PAYLOAD_ERROR = "payload_error"
    #: A configured ceiling was exceeded; the stage names which one.
    BUFFER_LIMIT = "buffer_limit"
    #: The provider reported an error inside the stream.
    UPSTREAM_ERROR = "upstream_error"
    #: A deadline (connect, first event, idle, total) expired.
    TIMEOUT = "timeout"
    #: The caller aborted the attempt.
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a stream stopped being consumed: an outcome plus the stage that detected it.

    ``stage`` comes from a fixed vocabulary per layer (for example ``"line"`` and ``"event"`` for
    the SSE ceilings, ``"utf8"`` for the decoder). ``offset`` is a position in the input (bytes for
    the decoder, characters for the SSE parser) when one is meaningful, else ``None``.
    """

    outcome: Outcome
    stage: str
    offset: int | None = None
