"""``StreamSession``: one HTTP attempt, from the response gate to a committed (or failed) answer.

Layers, all owned by one session for the life of one response::

    open(status, content_type)   the response gate (_gate): 200 + text/event-stream, or protocol_error
    feed(bytes)                  EventStreamParser (UTF-8 + SSE) -> route accumulator -> updates
    finish()                     EOF: pending decoder/line/event state, terminal condition -> outcome
    abort(outcome, stage)        the transport gave up (timeout) or the caller cancelled

Outcome rule: the first failure in stream order wins and is final. Events are handed to the route
in order and the session stops at the first one that fails, so a failure the SSE layer detected
later in the same chunk (a ceiling, invalid UTF-8) never overrides it, and what happened after it
is not looked at. After a failure ``feed`` consumes nothing and returns ``[]``; the transport should
cancel the body. ``complete`` is only ever decided at EOF (``finish``): the terminal condition
must have arrived and nothing may be pending.

Truncation stages decided at EOF: ``eof`` (the terminal condition never arrived), then, with the
terminal seen, ``pending_event``, ``pending_line`` or ``pending_bytes`` (a cut UTF-8 character).

Lifecycle (the only calls each state accepts; anything else raises ``UsageError``)::

    NEW       open -> OPEN (or ENDED when the gate fails); abort -> ENDED
    OPEN      feed -> OPEN | ENDED; finish -> FINISHED; abort -> ENDED
    ENDED     feed -> [] ; finish -> FINISHED (same result); abort -> no change
    FINISHED  abort -> no change

Resuming (``webclient._resume``). A session that ended :attr:`~StreamSession.resumable` (cut, timed out,
cancelled, refused at the gate, or stopped by a sequence check -- never after the terminal condition or a content
failure) can be continued by a later HTTP response: :meth:`StreamSession.resume` gives a new session with a new
decoder and SSE parser but the *same* route accumulator, so text, tool calls, open items, ceilings and the
sequence-number state carry on and the last session's result is the whole answer's. The old session keeps its
own result (whose ``resume`` names the resume point) and cannot be resumed twice. Telemetry stays per HTTP
attempt: counts of bytes, chunks and events are this response's; the accumulated state (terminal, stop reason,
open blocks) is the answer's.

Terminal grace. :attr:`~StreamSession.finishable` says that ``finish()`` now would end ``complete`` (the terminal
condition arrived, nothing failed, no pending bytes, line or event), so a transport may stop waiting for EOF
from a server or proxy that keeps the socket open; it never holds for an incomplete answer.

Everything is sans-I/O: no clock, no sockets; transports add timing to the telemetry afterwards.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping

from ._errors import UsageError
from ._events import TupleItem
from ._gate import check_response, is_event_stream
from ._limits import DEFAULT_LIMITS, Limits
from ._outcome import Failure, Outcome
from ._pipeline import EventStreamParser
from ._resume import ResumePoint, is_resumable
from ._routes import RouteAccumulator, RouteContract
from ._routes import route as lookup_route
from ._telemetry import sanitize_token
from ._toolcalls import ToolRegistry
from ._updates import (
    Committed,
    Failed,
    StreamResult,
    Update,
    new_committed,
    new_result,
    new_telemetry,
    shown_result,
)
from ._values import has_surrogate, value_problem


class _State(enum.Enum):
    #: Constructed; waiting for the response head.
    NEW = "new"
    #: The gate passed; body bytes are being consumed.
    OPEN = "open"
    #: The outcome is decided (failure, gate failure or abort); no more input is consumed.
    ENDED = "ended"
    #: ``finish()`` returned.
    FINISHED = "finished"


#: method -> the states it may be called in (tuples: membership is by identity, where a set would
#: call the enum's Python ``__hash__``).
_ALLOWED: dict[str, tuple[_State, ...]] = {
    "open": (_State.NEW,),
    "feed": (_State.OPEN, _State.ENDED),
    "finish": (_State.OPEN, _State.ENDED),
    "abort": (_State.NEW, _State.OPEN, _State.ENDED, _State.FINISHED),
}

# Exceptions a malformed payload could still provoke deep inside a route (a value of an
# unexpected type slipping past a check, pathological nesting in json.loads). They end the
# attempt as protocol_error "envelope" instead of escaping the public API.
_PAYLOAD_EXCEPTIONS = (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError)

_STAGE_RE = re.compile(r"[a-z_]{1,32}")
#: The registry of a session without tools (it holds nothing that changes): shared.
_NO_TOOLS = ToolRegistry()


def _odd_stop(result: StreamResult) -> bool:
    """Whether a stop reason of ``result`` holds a surrogate (a refused one is kept as it came)."""
    reason = result.stop_reason
    if reason is not None and has_surrogate(reason):
        return True
    return any(c.stop_reason is not None and has_surrogate(c.stop_reason) for c in result.choices)


class StreamSession:
    """One HTTP attempt on one route. Single-use and sans-I/O; see the module docstring."""

    __slots__ = (
        "_content_type_valid",
        "_keepalives_base",
        "_last_event_id",
        "_limits",
        "_model_alias",
        "_parser",
        "_reconnect_ms",
        "_request_id",
        "_resumed",
        "_route",
        "_state",
        "_status",
        "_utf8_errors",
        "contract",
        "done",
        "events_seen",
        "final_update",
        "result",
    )

    def __init__(
        self,
        route: str,
        *,
        limits: Limits = DEFAULT_LIMITS,
        tools: Mapping[str, object] | None = None,
        accepted_stop_reasons: Iterable[str] | None = None,
        utf8_errors: str = "strict",
        request_id: str = "",
        model_alias: str = "",
        keep_unknown_items: bool = False,
        include_reasoning_content: bool = False,
    ) -> None:
        """``keep_unknown_items``: an item / block / part / delta type the route does not know is
        kept verbatim in the result's ``items`` instead of ending the attempt ``protocol_error``
        ``unknown_type`` (it may carry content or a call the caller must act on: opt in only when
        the caller inspects ``items``). ``include_reasoning_content`` (``openai-chat`` only): the
        assistant message carries ``reasoning_content`` for servers that require it back."""
        entry = lookup_route(route)
        if not isinstance(limits, Limits):
            raise UsageError("limits must be a webclient.Limits")
        if not isinstance(request_id, str) or not isinstance(model_alias, str):
            raise UsageError("request_id and model_alias must be strings")
        accepted: frozenset[str] | None = None
        if accepted_stop_reasons is not None:
            if isinstance(accepted_stop_reasons, str):
                raise UsageError("accepted_stop_reasons must be an iterable of strings, not a string")
            accepted = frozenset(accepted_stop_reasons)
            if not all(isinstance(r, str) for r in accepted):
                raise UsageError("accepted_stop_reasons must contain strings only")
            if any(has_surrogate(r) for r in accepted):  # (a committed result's stop reason must encode)
                raise UsageError("accepted_stop_reasons must not contain surrogate code points")
        if utf8_errors not in ("strict", "replace"):
            raise UsageError("utf8_errors must be 'strict' or 'replace'")
        if not isinstance(keep_unknown_items, bool) or not isinstance(include_reasoning_content, bool):
            raise UsageError("keep_unknown_items and include_reasoning_content must be bools")
        #: The route's contract (plain data).
        self.contract: RouteContract = entry.contract
        registry = _NO_TOOLS if tools is None else ToolRegistry(tools)
        self._route: RouteAccumulator = entry.accumulator(limits, registry, accepted,
                                                          keep_unknown=keep_unknown_items,
                                                          reasoning_content=include_reasoning_content)
        self._parser = EventStreamParser(limits, "strict" if utf8_errors == "strict" else "replace")
        self._limits = limits
        self._utf8_errors = utf8_errors
        # Resuming: the route's keep-alive count when this session took the accumulator over, the SSE last
        # event ID and reconnection time carried from the session this one continues, whether it was resumed.
        self._keepalives_base = 0
        self._last_event_id = ""
        self._reconnect_ms: int | None = None
        self._resumed = False
        self._request_id = request_id
        self._model_alias = model_alias
        self._status: int | None = None
        self._content_type_valid: bool | None = None
        self._state = _State.NEW
        #: Whether the outcome is decided.
        self.done = False
        #: The result once decided, else ``None``.
        self.result: StreamResult | None = None
        #: The final ``Committed`` / ``Failed`` update once decided, else ``None``.
        self.final_update: Committed | Failed | None = None
        #: Complete SSE events consumed so far.
        self.events_seen = 0

    @classmethod
    def resume(cls, previous: StreamSession, *, request_id: str | None = None,
               model_alias: str | None = None) -> StreamSession:
        """A new session (state NEW: ``open`` it with the new response's head) that continues ``previous``'s
        accumulation; see the module docstring. ``previous`` must be :attr:`resumable`; afterwards it is not.
        The route, limits, tools and accepted stop reasons are ``previous``'s; ``request_id`` and
        ``model_alias`` default to its own."""
        if not isinstance(previous, StreamSession):
            raise UsageError("resume() takes the StreamSession to continue")
        if not previous.resumable:
            raise UsageError("resume() needs a session that ended resumable (see StreamSession.resumable)")
        session = cls(previous.contract.name, limits=previous._limits, utf8_errors=previous._utf8_errors,
                      request_id=previous._request_id if request_id is None else request_id,
                      model_alias=previous._model_alias if model_alias is None else model_alias)
        acc = previous._route
        acc.failure = None  # only a sequence check can have set it; it rejected the event before consuming it
        acc.out = []
        if acc.sequencer is not None:
            acc.sequencer.begin_resume()
        session._route = acc
        session._keepalives_base = acc.keepalives
        session._last_event_id = previous.last_event_id
        session._reconnect_ms = previous.reconnect_ms
        previous._resumed = True
        return session

    @property
    def resumable(self) -> bool:
        """Whether :meth:`resume` may continue this session: it ended without committing, its outcome/stage
        is in ``webclient._resume.RESUMABLE``, the terminal condition never arrived, and it was not resumed
        already."""
        result = self.result
        return (result is not None and not self._resumed and not self._route.terminal_seen
                and is_resumable(result.outcome, result.stage))

    @property
    def resume_point(self) -> ResumePoint | None:
        """Where a route resume continues (response id, last sequence number delivered) while the session is
        :attr:`resumable`, else ``None`` (also on routes without numbered events)."""
        sequencer = self._route.sequencer
        return sequencer.point if sequencer is not None and self.resumable else None

    @property
    def last_event_id(self) -> str:
        """The SSE last event ID of the last event consumed (``""`` if none was ever set): a Last-Event-ID
        reconnect sends it. Carried over by :meth:`resume` until the new response sets one."""
        return self._last_event_id

    @property
    def reconnect_ms(self) -> int | None:
        """The reconnection time from the last accepted SSE ``retry:`` field (milliseconds), else ``None``;
        carried over by :meth:`resume`."""
        retry = self._parser.parser.retry
        return self._reconnect_ms if retry is None else retry

    @property
    def finishable(self) -> bool:
        """Whether ``finish()`` now would end ``complete``: the session is open, the terminal condition
        arrived, nothing failed, and no UTF-8 bytes, line or event are pending. Transports end a stream whose
        server keeps the socket open after this has held for the terminal grace."""
        route_acc = self._route
        if not route_acc.terminal_seen or self._state is not _State.OPEN or route_acc.failure is not None:
            return False
        parser = self._parser
        return (parser.failure is None and not parser.pending_bytes and not parser.pending_line_chars
                and not parser.parser.has_pending_event)

    @property
    def comment_lines(self) -> int:
        """SSE comment lines (``: keep-alive``) seen so far: transports may treat them as a sign of
        life for an idle deadline, though they are never events."""
        return self._parser.parser.comment_lines

    @property
    def keepalives_seen(self) -> int:
        """Signs of life without content: SSE comment lines plus the route's keep-alive events
        (Anthropic ``ping``). Transports re-arm the idle deadline on them, but they never end the
        first-event phase."""
        return self._parser.parser.comment_lines + self._route.keepalives - self._keepalives_base

    @property
    def content_events_seen(self) -> int:
        """Complete SSE events consumed that were not keep-alives: these end the first-event phase."""
        return self.events_seen - (self._route.keepalives - self._keepalives_base)

    @property
    def retained_chars(self) -> int:
        """The retained-size account of the accumulation (``Limits.max_retained_chars`` bounds it;
        see ``RouteAccumulator`` for what is charged). Shared with the sessions that resume this one."""
        return self._route.retained_chars()

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished UTF-8 character held by the decoder."""
        return self._parser.pending_bytes

    @property
    def pending_line_chars(self) -> int:
        """Characters of the unfinished SSE line held by the parser."""
        return self._parser.pending_line_chars

    @property
    def pending_event_chars(self) -> int:
        """Characters in the data buffer of the SSE event not yet dispatched."""
        return self._parser.pending_event_chars

    def _enter(self, method: str) -> _State:
        state = self._state
        if state not in _ALLOWED[method]:
            raise UsageError(f"{method}() is not allowed in state {state.value}")
        return state

    # -- the four calls ------------------------------------------------------------------

    def open(self, status: int, content_type: str | None) -> list[Update]:
        """Apply the response gate. Returns ``[]``, or ``[Failed]`` when the gate refuses the
        response (``protocol_error``, stage ``status`` or ``media_type``); the body must then not
        be read, and ``feed`` returns ``[]``."""
        self._enter("open")
        failure = check_response(status, content_type, self.contract.success_status)
        self._status = status
        self._content_type_valid = is_event_stream(content_type)
        if failure is not None:
            return [self._end(failure)]
        self._state = _State.OPEN
        return []

    def feed(self, data: bytes) -> list[Update]:
        """Consume one transport chunk; return the updates it produced, in stream order. The last
        one is ``Failed`` when the chunk ended the attempt."""
        if self._state is not _State.OPEN and self._enter("feed") is _State.ENDED:
            return []  # the outcome is decided; nothing more is consumed
        if data.__class__ is not bytes:
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise UsageError("feed() takes bytes")
            data = bytes(data)
        parser = self._parser
        items = parser.feed_tuples(data)
        if not items and parser.failure is None:
            return []  # the common case for small transport chunks: nothing completed yet
        route_acc = self._route
        if items:
            self._consume(items)
        out = route_acc.out
        route_acc.out = []
        failure = route_acc.failure or parser.failure
        if failure is not None:
            out.append(self._end(failure))
        return out

    def finish(self) -> StreamResult:
        """Signal EOF and decide the outcome (``complete`` only here). The final update is in
        :attr:`final_update`."""
        if self._enter("finish") is _State.ENDED:
            self._state = _State.FINISHED
            assert self.result is not None
            return self.result
        parser = self._parser
        items = parser.close_tuples()
        if items:
            self._consume(items)
        route_acc = self._route
        route_acc.out = []
        failure = route_acc.failure or parser.failure
        if failure is None:
            sse = parser.parser
            if not route_acc.terminal_seen:
                failure = Failure(Outcome.TRUNCATED, "eof")
            elif sse.has_pending_event:
                failure = Failure(Outcome.TRUNCATED, "pending_event")
            elif sse.pending_line_chars:
                failure = Failure(Outcome.TRUNCATED, "pending_line")
            elif parser.pending_bytes:
                failure = Failure(Outcome.TRUNCATED, "pending_bytes")
        self._end(failure)
        self._state = _State.FINISHED
        assert self.result is not None
        return self.result

    def abort(self, outcome: Outcome = Outcome.CANCELLED, stage: str = "caller") -> StreamResult:
        """End the attempt from outside (a deadline expired, the caller cancelled). After the
        outcome is already decided this changes nothing and returns the existing result."""
        state = self._enter("abort")
        if not isinstance(outcome, Outcome) or outcome is Outcome.COMPLETE:
            raise UsageError("abort() needs a non-complete Outcome")
        if not isinstance(stage, str) or not _STAGE_RE.fullmatch(stage):
            raise UsageError("abort() stage must match [a-z_]{1,32}")
        if state is _State.NEW or state is _State.OPEN:
            self._end(Failure(outcome, stage))
        assert self.result is not None
        return self.result

    # -- internals -----------------------------------------------------------------------

    def _consume(self, items: list[TupleItem]) -> None:
        route_acc = self._route
        handle = route_acc.handle
        seen = self.events_seen
        taken = 0  # items handed over, the one that failed included
        try:
            for item in items:
                taken += 1
                if item.__class__ is tuple:  # an EventTuple (else a RetryField)
                    seen += 1
                    handle(item)  # type: ignore[arg-type]
                    if route_acc.failure is not None:
                        break
        except _PAYLOAD_EXCEPTIONS:
            route_acc.failure = Failure(Outcome.PROTOCOL_ERROR, "envelope")
        self.events_seen = seen
        route_acc.flush()
        # The last event ID of the last event consumed without a failure (a failing one was not consumed).
        end = taken - 1 if route_acc.failure is not None else taken
        if end and items[end - 1].__class__ is tuple:  # the usual case: the loop's first step
            last_id: str = items[end - 1][2]  # type: ignore[misc]
            if last_id:
                self._last_event_id = last_id
            return
        for i in range(end - 1, -1, -1):
            item = items[i]
            if item.__class__ is tuple:
                if item[2]:  # type: ignore[misc]
                    self._last_event_id = item[2]  # type: ignore[misc]
                break

    def _end(self, failure: Failure | None) -> Committed | Failed:
        outcome = Outcome.COMPLETE if failure is None else failure.outcome
        stage = None if failure is None else failure.stage
        result = self._build_result(outcome, stage)
        odd = self._route.kept_odd_values() or (failure is not None and _odd_stop(result))
        problem = value_problem(result.to_dict()) if odd else None
        if problem is not None:
            # Every result encodes (the route checked texts and tool inputs, and refused strings taken whole, itself):
            # a lone surrogate, NaN or Infinity in an object kept verbatim fails an answer that would commit, and in
            # one that does not the surrogate is shown as U+FFFD, as in its texts, and the number as null.
            if failure is None:
                failure = Failure(Outcome.PAYLOAD_ERROR, problem)
                outcome, stage = failure.outcome, failure.stage
                result = self._build_result(outcome, stage)
            result = shown_result(result)
        self.result = result
        self.done = True
        self._state = _State.ENDED
        final: Committed | Failed = new_committed(result) if failure is None else Failed(outcome, failure.stage, result)
        self.final_update = final
        return final

    def _build_result(self, outcome: Outcome, stage: str | None) -> StreamResult:
        route_acc = self._route
        route_acc.flush()
        route_acc.out = []
        complete = outcome is Outcome.COMPLETE
        # (an uncommitted result shows its texts encodable, see StreamResult; the accumulation keeps them as
        # they came, for a resumed session)
        restore = None if complete else route_acc.show_texts()
        sequencer = route_acc.sequencer
        resume = (sequencer.point if sequencer is not None and not route_acc.terminal_seen
                  and is_resumable(outcome, stage) else None)
        choices = route_acc.choice_results(complete)
        if restore is not None:
            restore()
        parser = self._parser
        name = self.contract.name
        status = self._status
        request_id, model_alias = self._request_id, self._model_alias
        # Positional, in field order (see Telemetry / StreamResult); "" and None sanitize to None.
        telemetry = new_telemetry(
            None,  # observed_at
            sanitize_token(request_id) if request_id else None,
            name,  # route
            sanitize_token(model_alias) if model_alias else None,
            status,  # http_status
            self._content_type_valid,
            parser.chunk_count,
            parser.bytes_received,
            parser.chars_decoded,  # decoded_character_count
            self.events_seen,  # complete_sse_event_count
            parser.pending_line_chars,
            parser.pending_event_chars,
            route_acc.open_count(),  # open_payload_accumulator_count
            route_acc.terminal_seen,  # terminal_condition_seen
            route_acc.telemetry_stop_reason(),
            outcome._value_,  # stream_outcome (Outcome.value, without the enum's property call)
            stage if outcome is Outcome.BUFFER_LIMIT else None,  # buffer_limit_stage
            None,  # retry_decision
            None,  # duration_ms
        )
        if choices:
            first = choices[0]
            return new_result(
                name, outcome, stage, status, route_acc.stop_reason, complete, first.text, first.refusal,
                first.reasoning, first.tool_calls, route_acc.usage, route_acc.provider_error, choices, telemetry,
                first.items, first.assistant_message, route_acc.response_id, route_acc.model, first.citations,
                first.logprobs, resume, route_acc.details,
            )
        return new_result(
            name, outcome, stage, status, route_acc.stop_reason, complete, "", "", "", (), route_acc.usage,
            route_acc.provider_error, choices, telemetry, (), None, route_acc.response_id, route_acc.model, (),
            None, resume, route_acc.details,
        )
