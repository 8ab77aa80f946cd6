"""Continuing an interrupted stream: sequence numbers, the resume point, and the next request (pure logic).

Two ways a later HTTP response can continue the accumulation an earlier one left unfinished:

Route resume (the route's contract has a :class:`ResumeContract`; today ``openai-responses``)
    Every event carries a sequence number (``sequence_number``: 0, 1, 2, ...) and one event carries the
    response's id (``response.created``'s ``response.id``). After a cut, the stream is fetched again from the
    point after the last event delivered: ``GET {request path}/{id}?stream=true&starting_after=N`` (OpenAI's
    "resume streaming" of background responses; a GET, safe to repeat).
Last-Event-ID reconnect (any route; the caller opts in)
    A generic SSE server that sends ``id:`` lines is asked again with the same request plus the header
    ``Last-Event-ID: <last id>`` (what ``EventSource`` does), after the server's ``retry:`` time if it sent one.

In both cases :meth:`webclient.StreamSession.resume` builds the new attempt's session from the old one: a new
UTF-8 decoder and SSE parser (a new HTTP response), the *same* route accumulator, so text, tool calls, open items
and ceilings carry on and the final result is as if one stream had arrived.

Sequence numbers (:class:`Sequencer`, one per accumulation; the route calls :meth:`Sequencer.admit` for every
event before its handler)::

    no number                  taken; except in a resumed stream, where it cannot be placed: sequence_missing
    not a non-negative int     protocol_error envelope
    first number seen          taken, whatever its value
    last + 1                   taken
    <= last                    a resumed stream's overlap (nothing taken yet in this response): dropped
                               otherwise (a repeat or a step back): protocol_error sequence_order
    > last + 1                 protocol_error sequence_gap

So a resumed stream may start with any events numbered up to the resume point N (the server may repeat some;
they are dropped unread), must then continue with N + 1, N + 2, ... and must number every event. It does not
repeat ``response.created`` (a repeated one numbered <= N is dropped; one numbered above N is the route's
``duplicate_start``).

Which endings can be continued (:data:`RESUMABLE`): those where the accumulation is intact and unfinished -- the
stream was cut (``truncated`` ``eof`` / ``network``), a deadline expired, the caller cancelled, a response was
refused at the gate (a resume request answered 503), or a sequence check rejected an event before it was
consumed. Never after the terminal condition, and never after the content itself failed (``payload_error``,
``buffer_limit``, ``upstream_error``, ``decode_error``, other protocol errors): a new stream would repeat it.

Whether a transport *does* continue is :func:`plan_resume`: the ending must be resumable, the caller's
:class:`ResumePolicy` must allow another one, there must be something to continue from (a resume point, or a
last event id when opted in), and :func:`webclient.advise_retry` must advise a retry for the ending, with the
resume counted as idempotent (a GET, or a reconnect the caller declared safe). Pure logic: no clock, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, urlencode

from ._errors import UsageError
from ._outcome import Outcome
from ._retry import RetryDecision, advise_retry

if TYPE_CHECKING:
    from ._session import StreamSession

#: Delay before the first resume when the server named none (no ``retry:`` field). A cut stream of a background
#: response keeps generating on the server, so nothing is lost by waiting; one second keeps a client from
#: hammering a gateway that is cutting streams, and is shorter than the 3 s browsers wait before an
#: ``EventSource`` reconnects.
DEFAULT_RESUME_DELAY: Final = 1.0

#: Longest delay between resumes: the doubling delay (and a server's ``retry:`` value, which could be anything)
#: is capped here, so a bounded number of resumes always ends within a bounded time.
DEFAULT_MAX_RESUME_DELAY: Final = 30.0

#: Outcome -> the stages after which the accumulation may be continued (``None``: every stage).
RESUMABLE: Final[dict[Outcome, frozenset[str] | None]] = {
    Outcome.TRUNCATED: frozenset({"eof", "network"}),
    Outcome.TIMEOUT: None,
    Outcome.CANCELLED: None,
    Outcome.PROTOCOL_ERROR: frozenset({"status", "media_type", "sequence_gap", "sequence_order"}),
}

#: Request headers that describe the original request's body and do not belong on a body-less resume request.
_BODY_HEADERS: Final = frozenset({"content-type", "content-length", "content-encoding", "last-event-id"})


def is_resumable(outcome: Outcome, stage: str | None) -> bool:
    """Whether an attempt that ended with ``outcome``/``stage`` left an accumulation a later stream may continue."""
    if outcome not in RESUMABLE:
        return False
    stages = RESUMABLE[outcome]
    return stages is None or stage in stages


@dataclass(frozen=True, slots=True)
class ResumeContract:
    """A route's resume facts, as data (the route's :class:`~webclient._routes.RouteContract` holds one)."""

    #: The ``data`` key holding each event's sequence number.
    sequence_key: str
    #: The event type carrying the response's id, and the key path to it inside the event's data.
    id_event: str
    id_path: tuple[str, ...]
    #: Appended to the request URL's path (``{id}``: the response id, percent-encoded).
    path: str
    #: Query parameters of the resume request (``{sequence_number}``: the last number delivered).
    query: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where a route resume continues: the response's id and the last sequence number delivered."""

    response_id: str
    sequence_number: int

    def to_dict(self) -> dict[str, Any]:
        """``{"response_id", "sequence_number"}`` (the result's ``resume`` key)."""
        return {"response_id": self.response_id, "sequence_number": self.sequence_number}


class Sequencer:
    """The sequence-number state of one accumulation (it outlives the sessions that share it). See the module
    docstring for the rules."""

    __slots__ = ("_id_path", "_strict", "id_event", "key", "last", "overlap", "response_id")

    def __init__(self, contract: ResumeContract) -> None:
        #: The event field holding the number, and the event type carrying the response id (as the contract's).
        self.key = contract.sequence_key
        self.id_event = contract.id_event
        self._id_path = contract.id_path
        #: The last sequence number taken, else ``None``.
        self.last: int | None = None
        #: The response id from the id event, else ``None``.
        self.response_id: str | None = None
        #: A resumed stream: nothing taken yet in this response (numbers <= last are a repeat to drop).
        self.overlap = False
        # A resumed stream: every event must be numbered.
        self._strict = False

    @property
    def point(self) -> ResumePoint | None:
        """The resume point, once both the id and a number are known."""
        if self.response_id is None or self.last is None:
            return None
        return ResumePoint(self.response_id, self.last)

    def begin_resume(self) -> None:
        """A new response continues this accumulation: drop its overlap, require numbers from now on."""
        self.overlap = self.last is not None
        self._strict = self.last is not None

    def take_next(self, number: int) -> bool:
        """What :meth:`admit` does with the number of an event that is not the id event, when that number
        is taken (no number yet, or the next one): take it and return True; otherwise change nothing and
        return False (``admit`` then decides). For a route's fast path."""
        last = self.last
        if last is not None and number != last + 1:
            return False
        self.overlap = False
        self.last = number
        return True

    def unnumbered_taken(self) -> bool:
        """What :meth:`admit` does with an event without a number that is not the id event: True (taken,
        nothing changes) unless numbers are required (a resumed stream). For a route's fast path."""
        return not self._strict

    def admit(self, kind: str, obj: dict[str, Any]) -> str | None:
        """Check one event: ``None`` to take it, ``""`` to drop it unread (a resumed stream's repeat), else the
        ``protocol_error`` stage that ends the attempt."""
        number = obj.get(self.key)
        if number is None:
            if self._strict:
                return "sequence_missing"
        else:
            if number.__class__ is not int or number < 0:
                return "envelope"
            last = self.last
            if last is not None and number != last + 1:
                if number > last:
                    return "sequence_gap"
                return "" if self.overlap else "sequence_order"
            self.overlap = False
            self.last = number
        if kind == self.id_event:
            value: Any = obj
            for key in self._id_path:
                value = value.get(key) if value.__class__ is dict else None
            if value.__class__ is str and value:
                self.response_id = value
        return None


def _check_delay(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise UsageError(f"{name} must be a finite number of seconds >= 0")


@dataclass(frozen=True, slots=True)
class ResumePolicy:
    """What a transport may do after an attempt was cut: at most ``max_resumes`` follow-up requests (0: none).

    With a budget, a route resume point (``openai-responses``: request the response with ``background: true``
    so the server keeps it) is used automatically; ``last_event_id=True`` also reconnects generic SSE streams
    that sent ``id:`` lines, repeating the request with ``Last-Event-ID``. The n-th resume (0-based) waits the
    server's ``retry:`` time if it sent one, else ``delay * 2**n``; either is capped at ``max_delay``.
    """

    max_resumes: int = 0
    last_event_id: bool = False
    delay: float = DEFAULT_RESUME_DELAY
    max_delay: float = DEFAULT_MAX_RESUME_DELAY

    def __post_init__(self) -> None:
        if isinstance(self.max_resumes, bool) or not isinstance(self.max_resumes, int) or self.max_resumes < 0:
            raise UsageError("max_resumes must be an integer >= 0")
        if not isinstance(self.last_event_id, bool):
            raise UsageError("last_event_id must be a bool")
        _check_delay("delay", self.delay)
        _check_delay("max_delay", self.max_delay)


#: No resumes at all (the transports' default).
NO_RESUME: Final = ResumePolicy()


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """One HTTP request as a transport sends it (``body``: ``None`` for none)."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: object = None


@dataclass(frozen=True, slots=True)
class ResumePlan:
    """The follow-up request, and how long to wait before sending it."""

    request: RequestSpec
    delay: float
    #: ``"resume"`` (route resume) or ``"last_event_id"`` (reconnect).
    kind: str


def resume_url(url: str, contract: ResumeContract, point: ResumePoint) -> str:
    """The route resume URL: ``url``'s path + ``contract.path``, its query (kept) + ``contract.query``."""
    base, _, query = url.split("#", 1)[0].partition("?")
    path = base.rstrip("/") + contract.path.format(id=quote(point.response_id, safe=""))
    extra = urlencode([(k, v.format(sequence_number=point.sequence_number)) for k, v in contract.query])
    return f"{path}?{query}&{extra}" if query else f"{path}?{extra}"


def plan_resume(session: StreamSession, policy: ResumePolicy, resumes_done: int,
                original: RequestSpec) -> ResumePlan | None:
    """The request that continues ``session``'s accumulation, or ``None`` (see the module docstring).
    ``resumes_done`` counts the follow-up requests already sent for this answer."""
    result = session.result
    if resumes_done >= policy.max_resumes or result is None or not session.resumable:
        return None
    advice = advise_retry(result, text_shown=False, tools_run=False, idempotent=True,
                          attempt=resumes_done + 1,
                          max_attempts=policy.max_resumes + 1)  # the budget is checked above
    if advice.decision is not RetryDecision.RETRY_AFTER_BACKOFF:
        return None
    headers = {k.lower(): v for k, v in original.headers.items()}
    point = session.resume_point
    resume = session.contract.resume
    if point is not None and resume is not None:
        headers = {k: v for k, v in headers.items() if k not in _BODY_HEADERS}
        headers["accept"] = "text/event-stream"
        request = RequestSpec("GET", resume_url(original.url, resume, point), headers)
        kind = "resume"
    elif policy.last_event_id and session.last_event_id:
        headers["last-event-id"] = session.last_event_id
        request = RequestSpec(original.method, original.url, headers, original.body)
        kind = "last_event_id"
    else:
        return None
    if session.reconnect_ms is not None:
        delay = session.reconnect_ms / 1000.0
    else:
        delay = policy.delay * 2.0 ** min(resumes_done, 64)
    return ResumePlan(request, min(delay, policy.max_delay), kind)
