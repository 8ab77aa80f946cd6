"""Deadlines for one attempt, as pure logic: the caller supplies every timestamp.

The core has no clock. A transport reads its own monotonic clock (``time.monotonic()``,
``performance.now() / 1000`` in a browser) and reports what happened and when; the tracker says
whether a deadline has passed and when the next one falls, so the transport can sleep exactly
until then (``asyncio.wait_for(read, timeout=next_deadline - now)``) instead of polling.

Four deadlines, each optional (``None`` disables it). Only one *phase* deadline is armed at a time;
``total`` is armed throughout::

    phase                       armed deadline                       disarmed by
    before headers              started_at + connect                 headers_received()
    headers, no event yet       headers_at + first_event             the first event that is not
                                                                     a keep-alive
    after the first event       last activity + idle                 (never; re-armed by every
                                                                     event, keep-alives included)
    always                      started_at + total

Terminal grace (``terminal_grace``). Once the route's terminal condition arrived with nothing pending, the
transport reports it with ``ready_to_finish(now, True)``: a grace deadline is armed at ``now +
terminal_grace`` (once; reporting ``False`` -- bytes of something new arrived -- disarms it). If the grace
passes first, :meth:`DeadlineTracker.settled` turns true and the transport ends the attempt ``complete``
without EOF, closing the connection; the other deadlines then never expire. The grace only shortens the wait
for EOF: it is never armed for an unfinished answer, so it cannot turn one into ``complete``.

What counts as an event: one *complete* SSE event (``EventStreamParser`` dispatched it) or one
keep-alive. Keep-alives are SSE comment lines (``: OPENROUTER PROCESSING``) and route-level pings
(Anthropic ``event: ping``); the transport passes ``keep_alive=True`` for them. A keep-alive proves
the connection is alive, so it re-arms ``idle``; it does not prove the model is producing, so it
does not end the ``first_event`` phase (a gateway that pings forever while its upstream is dead
still times out). Partial bytes are not events: a peer dripping one byte a minute is idle.
A transport sees comment lines as growth of ``EventStreamParser.parser.comment_lines`` after a
``feed``, and pings as the route's keep-alive events.

Expiry is decided from the timestamps alone, never from when the caller happens to ask:

* a deadline is expired at ``now >= deadline`` (so ``expired(next_deadline(now))`` is not ``None``);
* the first expiry in time order wins, however late the caller polls; at equal times the phase
  deadline wins over ``total`` (it names the more specific cause);
* a signal stamped at or after a deadline that was already due does not rescue the attempt: the
  tracker first settles expiry at the signal's time, then ignores the signal;
* the result is sticky: once expired, every later call returns the same failure.

Times must never go backwards (a monotonic clock never does): a call with an earlier ``now`` than
the previous one, a non-finite ``now``, an event before ``headers_received``, or a second
``headers_received`` raises :class:`~webclient.UsageError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from ._errors import UsageError
from ._outcome import Failure, Outcome

#: Request sent -> response headers. Covers DNS, TCP and TLS set-up (the official SDKs allow 5 s
#: for the TCP connect alone) plus gateway routing and queueing: CometAPI opens a second
#: connection to the upstream provider before it can answer. Headers normally arrive in well
#: under a second; 30 s separates "slow" from "not coming".
DEFAULT_CONNECT_TIMEOUT: Final = 30.0

#: Response headers -> the first non-keep-alive event. Anthropic (``message_start``) and OpenAI
#: Responses (``response.created``) open with an event at once, but a chat-completions stream may
#: stay silent until a reasoning model has finished thinking, so this is the generous one. Raise it
#: for long high-effort reasoning on routes that send nothing while thinking.
DEFAULT_FIRST_EVENT_TIMEOUT: Final = 120.0

#: Longest silence between events (keep-alives included) once the first event arrived. It must
#: exceed the slowest keep-alive cadence with margin: WHATWG suggests a comment "every 15 seconds
#: or so", and OpenAI has said its Responses streams send a keep-alive event every 30 s during long
#: reasoning. 90 s is three such periods (the idle watchdog Claude Code is reported to use, too);
#: a tighter value would time out healthy streams whose keep-alive is merely late.
DEFAULT_IDLE_TIMEOUT: Final = 90.0

#: Whole attempt, request sent -> EOF. The official OpenAI and Anthropic Python SDKs default to a
#: 600 s request timeout; a stream still running after ten minutes is better retried or surfaced.
DEFAULT_TOTAL_TIMEOUT: Final = 600.0

#: Terminal condition (nothing pending) -> the attempt ends ``complete`` without waiting for EOF. A direct
#: server closes the stream right after its terminal event (the chunked terminator and FIN arrive with it or one
#: round trip later), so a healthy stream never waits this long; a proxy or gateway that keeps the connection
#: open afterwards would otherwise turn a finished answer into an idle ``timeout`` 90 s later. One second covers
#: a few round trips of a slow mobile link and still commits promptly; data arriving after it is no longer
#: looked at (an event within it is ``protocol_error`` ``after_terminal``, as before).
DEFAULT_TERMINAL_GRACE: Final = 1.0

#: Stage names of the ``timeout`` failures, in tie-break order (the phase deadlines before total).
STAGE_CONNECT: Final = "connect"
STAGE_FIRST_EVENT: Final = "first_event"
STAGE_IDLE: Final = "idle"
STAGE_TOTAL: Final = "total"
#: Not a failure: the terminal grace passed (:meth:`DeadlineTracker.settled`). Loses ties with the deadlines.
_GRACE: Final = "grace"


def _check_time(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UsageError(f"{what} must be a finite number of seconds")
    return float(value)


@dataclass(frozen=True, slots=True)
class Deadlines:
    """Durations in seconds (``None`` disables one). Each must be a positive finite number."""

    #: Request sent -> response headers (stage ``"connect"``).
    connect: float | None = DEFAULT_CONNECT_TIMEOUT
    #: Headers -> first non-keep-alive event (stage ``"first_event"``).
    first_event: float | None = DEFAULT_FIRST_EVENT_TIMEOUT
    #: Silence between events after the first one (stage ``"idle"``).
    idle: float | None = DEFAULT_IDLE_TIMEOUT
    #: Request sent -> end of the attempt (stage ``"total"``).
    total: float | None = DEFAULT_TOTAL_TIMEOUT
    #: Terminal condition with nothing pending -> end ``complete`` without EOF (``None``: wait for EOF).
    terminal_grace: float | None = DEFAULT_TERMINAL_GRACE

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if value is not None and _check_time(value, f"deadline {name}") <= 0:
                raise UsageError(f"deadline {name} must be positive or None")


DEFAULT_DEADLINES: Final = Deadlines()


class DeadlineTracker:
    """The deadline state of one attempt, started at ``started_at`` (seconds, caller's clock).

    Report what happened with :meth:`headers_received` and :meth:`event_received`; ask
    :meth:`expired` whether the attempt timed out and :meth:`next_deadline` when it next could.
    See the module docstring for the rules.
    """

    __slots__ = ("_deadlines", "_failure", "_grace_at", "_latest", "_settled", "first_event_at", "headers_at",
                 "last_activity_at", "started_at")

    def __init__(self, deadlines: Deadlines, started_at: float) -> None:
        if not isinstance(deadlines, Deadlines):
            raise UsageError("deadlines must be a Deadlines instance")
        self._deadlines = deadlines
        #: When the request was sent.
        self.started_at = _check_time(started_at, "started_at")
        #: When the response headers arrived, else ``None``.
        self.headers_at: float | None = None
        #: When the first non-keep-alive event arrived, else ``None``.
        self.first_event_at: float | None = None
        #: When the latest event (keep-alives included) or the headers arrived, else ``None``.
        self.last_activity_at: float | None = None
        self._latest = self.started_at
        self._failure: Failure | None = None
        # The terminal grace deadline while armed, and whether it passed first.
        self._grace_at: float | None = None
        self._settled = False

    def headers_received(self, now: float) -> None:
        """The response headers arrived at ``now``: the connect phase ends, first_event starts."""
        if self._advance(now):
            return
        if self.headers_at is not None:
            raise UsageError("headers_received() called twice")
        self.headers_at = self.last_activity_at = self._latest

    def event_received(self, now: float, *, keep_alive: bool = False) -> None:
        """A complete SSE event (or, with ``keep_alive=True``, a comment line or route ping)
        arrived at ``now``. Re-arms ``idle``; a non-keep-alive event also ends first_event."""
        if self._advance(now):
            return
        if self.headers_at is None:
            raise UsageError("event_received() before headers_received()")
        self.last_activity_at = self._latest
        if not keep_alive and self.first_event_at is None:
            self.first_event_at = self._latest

    def ready_to_finish(self, now: float, ready: bool) -> None:
        """Whether, at ``now``, the session could end ``complete`` without more input (its ``finishable``).
        The first ``True`` arms the terminal grace; ``False`` disarms it. Call it after every chunk once the
        terminal condition may have arrived; repeated ``True`` reports keep the grace where it was."""
        if self._advance(now):
            return
        if not ready:
            self._grace_at = None
        elif self._grace_at is None and self._deadlines.terminal_grace is not None:
            self._grace_at = self._latest + self._deadlines.terminal_grace

    def settled(self, now: float) -> bool:
        """Whether the terminal grace passed by ``now`` before any deadline: end the attempt ``complete``."""
        self._advance(now)
        return self._settled

    def expired(self, now: float) -> Failure | None:
        """The ``timeout`` failure of the first deadline that passed by ``now``, else ``None`` (also once the
        terminal grace passed first)."""
        self._advance(now)
        return self._failure

    def next_deadline(self, now: float) -> float | None:
        """The absolute time (caller's clock) at which the attempt next expires -- or the terminal
        grace passes -- if nothing happens, or ``None`` when none is armed or the attempt already
        expired or settled. The value may be ``<= now`` only if it is already due, which
        :meth:`expired` / :meth:`settled` then report."""
        self._advance(now)
        if self._failure is not None or self._settled:
            return None
        armed = self._armed()
        return None if armed is None else armed[0]

    def _armed(self) -> tuple[float, str] | None:
        """The earliest armed deadline and its stage (phase deadline first on a tie)."""
        d = self._deadlines
        phase: tuple[float | None, str]
        if self.headers_at is None:
            phase = (None if d.connect is None else self.started_at + d.connect, STAGE_CONNECT)
        elif self.first_event_at is None:
            phase = (None if d.first_event is None else self.headers_at + d.first_event, STAGE_FIRST_EVENT)
        else:
            assert self.last_activity_at is not None
            phase = (None if d.idle is None else self.last_activity_at + d.idle, STAGE_IDLE)
        total = None if d.total is None else self.started_at + d.total
        candidates = [(at, stage) for at, stage in (phase, (total, STAGE_TOTAL), (self._grace_at, _GRACE))
                      if at is not None]
        if not candidates:
            return None
        return min(candidates, key=lambda c: c[0])  # min keeps the first of equals: phase, total, grace

    def _advance(self, now: float) -> bool:
        """Move the clock to ``now`` and settle expiry (or the grace) there. True once expired or settled."""
        now = _check_time(now, "now")
        if now < self._latest:
            raise UsageError("time went backwards: now is earlier than a previous call")
        self._latest = now
        if self._failure is None and not self._settled:
            armed = self._armed()
            if armed is not None and armed[0] <= now:
                if armed[1] == _GRACE:
                    self._settled = True
                else:
                    self._failure = Failure(Outcome.TIMEOUT, armed[1])
        return self._failure is not None or self._settled
