"""httpx transport for CPython gateways: one request -> response gate -> body chunks -> one StreamSession.

::

    attempt = Attempt("openai-chat", url, json=payload, deadlines=Deadlines(idle=30.0))
    for update in attempt.updates(client): ...            # httpx.Client
    async for update in attempt.aupdates(client): ...     # httpx.AsyncClient (asyncio or trio, through anyio)
    attempt.result                                         # the StreamResult once ended, however it ended

    result = run(client, "openai-chat", url, json=payload)         # the same, just the result
    result = await arun(client, "openai-chat", url, json=payload)

    # an interrupted background Responses stream continues where it was cut, up to 3 times:
    result = run(client, "openai-responses", url, json={..., "stream": True, "background": True},
                 resume=ResumePolicy(max_resumes=3))

Needs the optional ``httpx`` extra (``pip install webclient[httpx]``). Inside this module ``import httpx`` is the
real httpx: imports are absolute, so the module's own name does not shadow it.

One code path for both flavours
    :meth:`Attempt._core` is a generator holding every decision: the response gate, the session, the deadline
    tracker, the outcome of a stop, the final update. It performs no I/O; it *yields* what it needs --
    ``_Send`` (send this request, give me status and media type), ``_Read`` (give me the next body chunk), each
    with the absolute deadline by which it must come back, ``_Emit`` (hand these updates to the caller) and
    ``_Sleep`` (wait until then before a resume) -- and is sent the answer. The sync driver
    (:meth:`Attempt.updates`) and the async driver (:meth:`Attempt.aupdates`) only perform those requests with
    httpx's sync or async API. The response is closed on every exit path (EOF, gate refusal, failure, timeout,
    cancellation, an exception in the caller's loop), without reading a refused body.

Deadlines (:class:`webclient.Deadlines`), clock ``time.monotonic()``
    async: each request to httpx runs in an ``anyio.CancelScope`` whose deadline is the tracker's next deadline;
        httpx's own timeouts are switched off for the request, the deadlines being the contract.
    sync: a blocking read cannot be given a new deadline per call, so a watchdog thread per attempt shuts the
        connection's socket down when the armed deadline passes (or on :meth:`Attempt.cancel`), which makes the
        blocked read return at once. The socket is taken from httpcore's ``connect_tcp`` trace event, or, for a
        pooled connection, from the response's ``network_stream``. Until the headers arrive httpx's timeouts are
        also set to the remaining connect budget (a blackholed connect). Where no socket is reachable (HTTP/2),
        the body read timeout falls back to the shortest body deadline.
    Keep-alive comment lines re-arm ``idle`` but do not count as a first event; a stream that keeps sending bytes
    without completing events still times out (the tracker is checked after every chunk). Each HTTP request (the
    first and every resume) gets its own tracker.

Terminal grace (``Deadlines.terminal_grace``)
    Once the session is ``finishable`` (terminal condition, nothing pending) the read deadline becomes the grace:
    if EOF does not come by then, the attempt ends ``complete`` and the response is closed (a proxy that holds
    the connection open no longer turns a finished answer into ``timeout``).

Resumes (``resume=ResumePolicy(...)``, :mod:`webclient._resume`)
    When a request ends resumable and :func:`webclient._resume.plan_resume` says so (within ``max_resumes``,
    under the retry advice), the response is closed, the core sleeps the planned delay, and sends the follow-up
    request -- ``GET {url}/{id}?stream=true&starting_after=N`` for a Responses resume point, or the same request
    with ``Last-Event-ID`` -- into ``StreamSession.resume(previous)``: the updates continue, one final update ends
    the whole answer, and :attr:`Attempt.result` is the combined result (telemetry: the last request's).

How attempts end besides the session's own outcomes
    ``timeout`` (stage ``connect`` / ``first_event`` / ``idle`` / ``total``); ``cancelled`` (stage ``caller``:
    :meth:`Attempt.cancel`, leaving the update loop early, task cancellation, KeyboardInterrupt -- the exception
    still propagates); ``truncated`` with stage ``network`` when the transport fails (connection refused or
    reset, a broken chunked body).
"""

from __future__ import annotations

import contextlib
import enum
import socket
import threading
import time
from collections.abc import AsyncIterator, Generator, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, NamedTuple

try:
    import httpx
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("webclient.httpx needs the optional 'httpx' extra: pip install 'webclient[httpx]'") from exc

from ._deadlines import Deadlines, DeadlineTracker
from ._errors import UsageError
from ._limits import DEFAULT_LIMITS, Limits
from ._outcome import Outcome
from ._resume import NO_RESUME, RequestSpec, ResumePolicy, plan_resume
from ._retry import advise_retry, check_count
from ._session import StreamSession
from ._updates import Committed, Failed, StreamResult, Update

__all__ = ["Attempt", "arun", "run"]

#: Stage of a ``truncated`` outcome caused by a transport failure.
NETWORK_STAGE = "network"


class _Send(NamedTuple):
    """Send ``request`` (closing the previous response); answer ``_Head`` or a ``_Stop``. ``deadline``:
    absolute, ``time.monotonic()``."""

    request: RequestSpec
    deadline: float | None


class _Sleep(NamedTuple):
    """Close the previous response and wait until ``until`` (``time.monotonic()``); answer ``None`` or
    ``_Stop.CANCELLED``."""

    until: float


class _Read(NamedTuple):
    """Read the next non-empty body chunk; answer ``bytes`` or a ``_Stop``."""

    deadline: float | None


class _Emit(NamedTuple):
    """Hand these provisional updates to the caller; answer ``None`` or ``_Stop.CANCELLED``."""

    updates: list[Update]


class _Head(NamedTuple):
    """The response head, as the gate needs it."""

    status: int
    content_type: str | None


class _Stop(enum.Enum):
    """Why a driver could not answer a request with data."""

    #: The body ended normally.
    EOF = "eof"
    #: The request's deadline passed first (the watchdog fired, the cancel scope expired, httpx timed out).
    DEADLINE = "deadline"
    #: The caller cancelled, left the loop, or an exception interrupted the driver.
    CANCELLED = "cancelled"
    #: The transport failed (refused, reset, malformed HTTP).
    NETWORK = "network"


_Op = _Send | _Read | _Emit | _Sleep


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class _Watchdog:
    """Sync driver only: a thread that shuts the connection's socket down when the armed deadline passes or the
    attempt is cancelled, so that a blocked read returns at once. ``reason`` says which happened."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._sock: socket.socket | None = None
        self._closed = False
        #: Set (once) when the watchdog stopped the connection.
        self.reason: _Stop | None = None
        self._thread = threading.Thread(target=self._run, name="webclient-httpx-watchdog", daemon=True)
        self._thread.start()

    @property
    def has_socket(self) -> bool:
        return self._sock is not None

    def arm(self, deadline: float | None) -> None:
        """Watch for ``deadline`` (absolute, ``time.monotonic()``) until the next ``arm``."""
        with self._cond:
            earlier = deadline is not None and (self._deadline is None or deadline < self._deadline)
            self._deadline = deadline
            if earlier:
                self._cond.notify()

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        """httpcore trace hook: take the socket as soon as the TCP connection exists."""
        if event == "connection.connect_tcp.complete" and info.get("return_value") is not None:
            self.attach(info["return_value"].get_extra_info("socket"))

    def attach(self, sock: object) -> None:
        """Remember the connection's socket (shutting it down at once if the watchdog already fired)."""
        if not isinstance(sock, socket.socket):
            return
        with self._cond:
            if self._sock is None:
                self._sock = sock
                if self.reason is not None:
                    self._shutdown()

    def cancel(self) -> None:
        """:meth:`Attempt.cancel`'s interrupt: stop the connection as cancelled."""
        self.fire(_Stop.CANCELLED)

    def fire(self, reason: _Stop) -> None:
        """Stop the connection now (the first reason wins)."""
        with self._cond:
            if self.reason is None and not self._closed:
                self.reason = reason
                self._shutdown()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(5)

    def _shutdown(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):  # the base-class method: on TLS it leaves the SSL object alone
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)

    def _run(self) -> None:
        with self._cond:
            while not self._closed and self.reason is None:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                remaining = self._deadline - time.monotonic()
                if remaining <= 0:
                    self.reason = _Stop.DEADLINE
                    self._shutdown()
                    return
                self._cond.wait(remaining)


class Attempt:
    """One streaming request with httpx; single-use. See the module docstring.

    Construction validates everything and raises :class:`~webclient.UsageError` for caller bugs; the attempt
    itself never raises for bad responses. Give the request body as ``json`` (sent as JSON) or ``content``.
    ``attempt`` (1 for the first try) and ``idempotent`` feed :func:`webclient.advise_retry`, whose decision is
    recorded in the telemetry's ``retry_decision`` when the attempt ends. ``resume`` allows follow-up requests
    that continue a cut stream (none by default).
    """

    def __init__(
        self,
        route: str,
        url: str,
        *,
        method: str = "POST",
        json: object = None,
        content: str | bytes | None = None,
        headers: Mapping[str, str] | None = None,
        deadlines: Deadlines | None = None,
        limits: Limits = DEFAULT_LIMITS,
        tools: Mapping[str, object] | None = None,
        accepted_stop_reasons: Iterable[str] | None = None,
        utf8_errors: str = "strict",
        request_id: str = "",
        model_alias: str = "",
        attempt: int = 1,
        idempotent: bool = False,
        resume: ResumePolicy | None = None,
    ) -> None:
        if not isinstance(url, str) or not url:
            raise UsageError("url must be a non-empty string")
        if json is not None and content is not None:
            raise UsageError("give the body as json or content, not both")
        if deadlines is not None and not isinstance(deadlines, Deadlines):
            raise UsageError("deadlines must be a webclient Deadlines")
        if resume is not None and not isinstance(resume, ResumePolicy):
            raise UsageError("resume must be a webclient ResumePolicy")
        self._session = StreamSession(route, limits=limits, tools=tools, accepted_stop_reasons=accepted_stop_reasons,
                                      utf8_errors=utf8_errors, request_id=request_id, model_alias=model_alias)
        self._json_body = json is not None
        self._request = RequestSpec(method, url, {"accept": "text/event-stream",
                                                  **{k.lower(): v for k, v in (headers or {}).items()}},
                                    json if json is not None else content)
        self._resume = resume if resume is not None else NO_RESUME
        self._deadlines = deadlines if deadlines is not None else Deadlines()
        # For the retry advice recorded in the telemetry (``retry_decision``). No tool can have run during
        # the attempt (a call is ready only once the response is complete), so ``tools_run`` is false.
        self._attempt = check_count("attempt", attempt)
        self._idempotent = bool(idempotent)
        self._started = False
        self._cancel_requested = False
        self._interrupt: Any = None  # what cancel() calls to stop the I/O in progress (driver-specific)
        self._t0 = 0.0
        self._observed_at = ""
        #: The result once the attempt has ended, else ``None``.
        self.result: StreamResult | None = None

    # -- public ---------------------------------------------------------------------------------------------

    def cancel(self) -> None:
        """End the attempt as ``cancelled`` and stop its I/O. Sync: callable from any thread. Async: call it from
        the event loop's thread (or cancel the task). No effect once the attempt has ended."""
        self._cancel_requested = True
        interrupt = self._interrupt
        if interrupt is not None:
            interrupt()

    def updates(self, client: httpx.Client) -> Iterator[Update]:
        """Run the attempt with a sync client, yielding updates as they come, the final Committed/Failed last.
        Leaving the loop early cancels the attempt when the generator is closed (CPython closes a ``for`` loop's
        generator as soon as the loop lets go of it; ``contextlib.closing`` makes that explicit)."""
        core, op = self._begin()
        watchdog: _Watchdog | None = None
        response: httpx.Response | None = None
        chunks: Iterator[bytes] | None = None
        try:
            while op is not None:
                reply: object = None
                if isinstance(op, _Emit):
                    yield from op.updates
                elif isinstance(op, _Read):
                    if not self._cancel_requested:
                        assert watchdog is not None and chunks is not None
                        watchdog.arm(op.deadline)
                        reply = self._sync_read(chunks, watchdog)
                else:  # a new request or a pause before one: the previous response is done with
                    self._interrupt = None
                    if watchdog is not None:
                        watchdog.close()
                        watchdog = None
                    if response is not None:
                        response.close()
                        response = chunks = None
                    if isinstance(op, _Sleep):
                        reply = self._sync_sleep(op.until)
                    elif not self._cancel_requested:
                        watchdog = _Watchdog()
                        self._interrupt = watchdog.cancel
                        if self._cancel_requested:  # cancel() ran before the interrupt was in place
                            watchdog.cancel()
                        watchdog.arm(op.deadline)
                        reply, response = self._sync_send(client, op.request, watchdog, op.deadline)
                        chunks = None if response is None else response.iter_bytes()
                op = self._step(core, reply)
            if response is not None:  # the attempt has ended: close before handing over the final update
                response.close()
                response = None
            yield self._final()
        except BaseException:
            self._cancel_core(core)
            raise
        finally:
            self._interrupt = None
            if watchdog is not None:
                watchdog.close()
            if response is not None:
                response.close()

    async def aupdates(self, client: httpx.AsyncClient) -> AsyncIterator[Update]:
        """Run the attempt with an async client, yielding updates as they come, the final Committed/Failed last.
        Close the iterator (``async with contextlib.aclosing(...)``) to cancel an attempt left early at once."""
        import anyio

        core, op = self._begin()
        response: httpx.Response | None = None
        chunks: AsyncIterator[bytes] | None = None
        try:
            while op is not None:
                reply: object = None
                if isinstance(op, _Emit):
                    for update in op.updates:
                        yield update
                    op = self._step(core, reply)
                    continue
                if not isinstance(op, _Read) and response is not None:  # the previous response is done with
                    with anyio.CancelScope(shield=True):
                        await response.aclose()
                    response = chunks = None
                if not self._cancel_requested:
                    sleeping = isinstance(op, _Sleep)
                    until = op.until if isinstance(op, _Sleep) else op.deadline
                    remaining = _remaining(until)
                    deadline = float("inf") if remaining is None else anyio.current_time() + remaining
                    with anyio.CancelScope(deadline=float("inf") if sleeping else deadline) as scope:
                        self._interrupt = scope.cancel
                        if isinstance(op, _Send):
                            reply, response = await self._async_send(client, op.request)
                            chunks = None if response is None else response.aiter_bytes()
                        elif isinstance(op, _Read):
                            assert chunks is not None
                            reply = await self._async_read(chunks)
                        else:
                            await anyio.sleep(remaining or 0.0)
                    self._interrupt = None
                    if scope.cancelled_caught:
                        reply = _Stop.CANCELLED if sleeping else _Stop.DEADLINE
                op = self._step(core, reply)
            if response is not None:  # the attempt has ended: close before handing over the final update
                with anyio.CancelScope(shield=True):
                    await response.aclose()
                response = None
            yield self._final()
        except BaseException:
            self._cancel_core(core)
            raise
        finally:
            self._interrupt = None
            if response is not None:
                with anyio.CancelScope(shield=True):
                    await response.aclose()

    # -- the core: every decision, no I/O -------------------------------------------------------------------

    def _begin(self) -> tuple[Generator[_Op, object, StreamResult], _Op | None]:
        """Start the clock and the core; return the core and its first request."""
        if self._started:
            raise UsageError("an Attempt runs once")
        self._started = True
        self._t0 = time.monotonic()
        self._observed_at = datetime.now(UTC).isoformat(timespec="milliseconds")
        core = self._core()
        return core, next(core)

    def _core(self) -> Generator[_Op, object, StreamResult]:
        """The attempt as a generator of I/O requests (see the module docstring): the first request, then as
        many resumes as :func:`plan_resume` allows, each into a session continuing the previous one."""
        session = self._session
        result = yield from self._exchange(session, self._request)
        resumes = 0
        while (plan := plan_resume(session, self._resume, resumes, self._request)) is not None:
            resumes += 1
            session = self._session = StreamSession.resume(session)
            if plan.delay > 0 and (yield _Sleep(time.monotonic() + plan.delay)) is not None:
                return session.abort(Outcome.CANCELLED, "caller")
            result = yield from self._exchange(session, plan.request)
        return result

    def _exchange(self, session: StreamSession, request: RequestSpec) -> Generator[_Op, object, StreamResult]:
        """One HTTP request into ``session``, with its own deadline tracker. Every answer may be a _Stop."""
        tracker = DeadlineTracker(self._deadlines, time.monotonic())
        head = yield _Send(request, tracker.next_deadline(time.monotonic()))
        if not isinstance(head, _Head):
            return self._stopped(session, head, tracker)
        tracker.headers_received(time.monotonic())
        session.open(head.status, head.content_type)
        if session.done:  # the gate refused the response: the driver closes it unread
            return session.finish()
        while True:
            now = time.monotonic()  # one reading for all calls: not expired at now => a deadline at or after now
            failure = tracker.expired(now)
            if failure is not None:  # bytes kept coming, but no event in time
                return session.abort(failure.outcome, failure.stage)
            if tracker.settled(now):  # the terminal grace passed while bytes that changed nothing came in
                return session.finish()
            data = yield _Read(tracker.next_deadline(now))
            if data is _Stop.EOF:
                return session.finish()
            if not isinstance(data, bytes):
                return self._stopped(session, data, tracker)
            content, live = session.content_events_seen, session.keepalives_seen
            updates = session.feed(data)
            now = time.monotonic()
            if session.content_events_seen != content or session.keepalives_seen != live:
                tracker.event_received(now, keep_alive=session.content_events_seen == content)
            tracker.ready_to_finish(now, session.finishable)
            provisional: list[Update] = [u for u in updates if not isinstance(u, (Committed, Failed))]
            if provisional:
                answer = yield _Emit(provisional)
                if answer is not None:
                    return self._stopped(session, answer, tracker)
            if session.done:
                return session.finish()

    def _stopped(self, session: StreamSession, reason: object, tracker: DeadlineTracker) -> StreamResult:
        """The result of a request whose I/O stopped for ``reason``: the terminal grace passed (``complete``),
        a deadline, a cancellation, or a transport failure."""
        if reason is _Stop.CANCELLED or self._cancel_requested:
            return session.abort(Outcome.CANCELLED, "caller")
        if reason is _Stop.DEADLINE:
            if tracker.settled(time.monotonic()):
                return session.finish()
            failure = tracker.expired(time.monotonic())
            if failure is not None:
                return session.abort(failure.outcome, failure.stage)
            # An httpx timeout that fired before our deadline (a pool timeout, a fallback read timeout, a timeout
            # of the client's own transport): a timeout of the phase the request was in.
            stage = "connect" if tracker.headers_at is None else "first_event" if tracker.first_event_at is None \
                else "idle"
            return session.abort(Outcome.TIMEOUT, stage)
        return session.abort(Outcome.TRUNCATED, NETWORK_STAGE)

    def _step(self, core: Generator[_Op, object, StreamResult], reply: object) -> _Op | None:
        """Answer the core's request with ``reply`` (``_Stop.CANCELLED`` once a cancel was requested, whatever
        the driver got); return its next request, or ``None`` once it has returned (the result is stored)."""
        if self._cancel_requested:
            reply = _Stop.CANCELLED
        try:
            return core.send(reply)
        except StopIteration as stop:
            self._conclude(stop.value)
            return None

    def _cancel_core(self, core: Generator[_Op, object, StreamResult]) -> None:
        """The driver was interrupted (the caller left the loop, task cancellation, an exception): end the
        attempt as cancelled, unless it already ended."""
        if self.result is not None:
            return
        result: StreamResult | None = None
        try:
            core.send(_Stop.CANCELLED)
        except StopIteration as stop:
            result = stop.value
        finally:
            core.close()
        self._conclude(result if result is not None else self._session.abort(Outcome.CANCELLED, "caller"))

    def _conclude(self, result: StreamResult) -> None:
        """Add the transport's timing to the result and store it."""
        duration_ms = round((time.monotonic() - self._t0) * 1000.0, 3)
        advice = advise_retry(result, text_shown=bool(result.text), tools_run=False, idempotent=self._idempotent,
                              attempt=self._attempt)
        self.result = result.with_telemetry(result.telemetry.with_fields(
            observed_at=self._observed_at, duration_ms=duration_ms, retry_decision=advice.decision.value))

    def _final(self) -> Committed | Failed:
        result = self.result
        assert result is not None
        return Committed(result) if result.committed else Failed(result.outcome, result.stage or "", result)

    # -- the drivers' I/O -----------------------------------------------------------------------------------

    def _build(self, client: httpx.Client | httpx.AsyncClient, spec: RequestSpec, timeout: httpx.Timeout,
               extensions: dict[str, Any]) -> httpx.Request:
        body: Any = spec.body
        json_body, content = (body, None) if self._json_body else (None, body)
        return client.build_request(spec.method, spec.url, json=json_body, content=content, headers=dict(spec.headers),
                                    timeout=timeout, extensions=extensions)

    def _sync_send(self, client: httpx.Client, spec: RequestSpec, watchdog: _Watchdog,
                   deadline: float | None) -> tuple[object, httpx.Response | None]:
        # Until the headers arrive httpx's own timeouts get the remaining connect budget as well (a connect that
        # never completes has no socket the watchdog could shut down).
        request = self._build(client, spec, httpx.Timeout(_remaining(deadline)), {"trace": watchdog.trace})
        try:
            response = client.send(request, stream=True)
        except httpx.TimeoutException:
            return watchdog.reason or _Stop.DEADLINE, None
        except httpx.TransportError:
            return watchdog.reason or _Stop.NETWORK, None
        if watchdog.reason is not None:
            return watchdog.reason, response
        watchdog.attach(_response_socket(response))
        # Body reads: the watchdog enforces the deadlines when it holds the socket; otherwise fall back to the
        # shortest body deadline as httpx's read timeout. httpcore reads this dict when the body read starts.
        request.extensions["timeout"] = {**request.extensions["timeout"],
                                         "read": None if watchdog.has_socket else self._fallback_read_timeout()}
        return _Head(response.status_code, response.headers.get("content-type")), response

    def _sync_read(self, chunks: Iterator[bytes], watchdog: _Watchdog) -> object:
        try:
            data = next(chunks, None)
        except httpx.TimeoutException:
            return watchdog.reason or _Stop.DEADLINE
        except (httpx.TransportError, httpx.DecodingError):
            return watchdog.reason or _Stop.NETWORK
        if watchdog.reason is not None:
            return watchdog.reason
        return _Stop.EOF if data is None else data

    def _sync_sleep(self, until: float) -> object:
        """Wait until ``until`` unless cancelled (then ``_Stop.CANCELLED``)."""
        woken = threading.Event()
        self._interrupt = woken.set
        if not self._cancel_requested:
            woken.wait(_remaining(until))
        self._interrupt = None
        return _Stop.CANCELLED if self._cancel_requested else None

    async def _async_send(self, client: httpx.AsyncClient, spec: RequestSpec) -> tuple[object, httpx.Response | None]:
        request = self._build(client, spec, httpx.Timeout(None), {})
        try:
            response = await client.send(request, stream=True)
        except httpx.TimeoutException:  # httpx's timeouts are off: a timeout of the client's own transport
            return _Stop.DEADLINE, None
        except httpx.TransportError:
            return _Stop.NETWORK, None
        return _Head(response.status_code, response.headers.get("content-type")), response

    async def _async_read(self, chunks: AsyncIterator[bytes]) -> object:
        try:
            return await anext(chunks)
        except StopAsyncIteration:
            return _Stop.EOF
        except httpx.TimeoutException:
            return _Stop.DEADLINE
        except (httpx.TransportError, httpx.DecodingError):
            return _Stop.NETWORK

    def _fallback_read_timeout(self) -> float | None:
        body = [d for d in (self._deadlines.first_event, self._deadlines.idle, self._deadlines.total) if d is not None]
        return min(body) if body else None


def _response_socket(response: httpx.Response) -> object:
    stream = response.extensions.get("network_stream")
    return None if stream is None else stream.get_extra_info("socket")


def run(client: httpx.Client, route: str, url: str, **options: Any) -> StreamResult:
    """Run one attempt with a sync client and return its :class:`StreamResult` (options as for :class:`Attempt`)."""
    attempt = Attempt(route, url, **options)
    for _ in attempt.updates(client):
        pass
    assert attempt.result is not None
    return attempt.result


async def arun(client: httpx.AsyncClient, route: str, url: str, **options: Any) -> StreamResult:
    """Run one attempt with an async client and return its :class:`StreamResult`."""
    attempt = Attempt(route, url, **options)
    async for _ in attempt.aupdates(client):
        pass
    assert attempt.result is not None
    return attempt.result
