"""Browser transport for Pyodide: ``fetch`` -> response gate -> ``ReadableStream`` reader -> one StreamSession.

One :class:`BrowserStream` is one HTTP attempt::

    fetch(url, {method, headers, body, signal})     resolves when the headers arrive (connect deadline met)
    session.open(status, content_type)              the gate; on refusal the body is cancelled, never read
    reader = response.body.getReader()
    per batch: session.feed(bytes) -> updates       a completed SSE event re-arms the first-event/idle deadline
    EOF: session.finish()                           or, when stopped: session.abort(timeout | cancelled, stage)
    -> one final Committed / Failed update carrying the StreamResult (``observed_at``, ``duration_ms`` filled in)

``js`` and ``pyodide`` are imported inside the functions that need them, so ``import webclient.browser`` works on
CPython (nothing here runs there).

Two read loops, chosen with ``fast``
    ``fast=True`` (default) -- the JS pump: a short JS loop reads the stream and calls a persistent Python
        ``feed`` synchronously per chunk (about 2-10 us), or once for all the chunks the stream had already
        queued when one arrived (up to 16 KiB beyond it; no read is waited for, so no latency is added): the
        session consumes such a *batch* as one feed, which is about twice as fast per byte for small chunks, and
        which is exact because nothing the session decides depends on where the bytes were cut (chunking
        invariance). The telemetry's ``chunk_count`` and the timeline still count transport chunks. The loop
        is a static script when the host registers it
        as the JS module :data:`PUMP_MODULE` (the widget kit does: ``pump.mjs``), so it works under a
        Content-Security-Policy of ``script-src 'self' 'wasm-unsafe-eval'``. Otherwise it is compiled once with
        ``pyodide.code.run_js`` (``eval``); where the CSP refuses that, the attempt reads with the pull loop instead
        (a console warning says so once; :func:`fast_path` tells which loop is in use). The ``create_proxy`` it
        needs is destroyed when the attempt ends.
    ``fast=False`` -- the pull loop: pure Python, ``await reader.read()`` per chunk. No ``eval``; works in Safari.
        It costs one event-loop hop per chunk (about 70 us in Node, 250 us in Chromium): under 3 % of a core at LLM
        rates.

Deadlines and stopping
    The deadlines (:class:`webclient.Deadlines`: connect, first event, idle, total) are tracked by a
    ``DeadlineTracker`` whose clock is Pyodide's event loop, ``loop.time()``; nothing ever blocks (no
    ``time.sleep``). One timer per attempt is armed for the tracker's next deadline: re-armed only when a deadline
    moves *earlier* (headers arriving, the first event), so a chunk costs no timer work, and a timer that finds
    its deadline moved later simply re-arms. The timer is a JS ``setTimeout`` through ``pyodide.ffi.wrappers``
    rather than ``loop.call_at``: WebLoop cannot clear the ``setTimeout`` behind a cancelled handle, so every
    finished stream would leave a callback pending for up to the total deadline; ours is cleared, releasing its
    callback, when the attempt ends.

    When a deadline expires, or the caller cancels (:meth:`BrowserStream.cancel`, cancelling the awaiting task,
    leaving ``async with stream:`` early, or the JS handle's ``cancel()`` / a linked ``AbortSignal``), the
    attempt is stopped in two ways at once: the ``AbortController`` is aborted (the fetch or the body download
    really stops; the server sees the connection close) and the reader is cancelled (a pending read settles even
    for a stream that is not a fetch body). The session then ends as ``timeout`` (stage ``connect``,
    ``first_event``, ``idle`` or ``total``) or ``cancelled`` (stage ``caller``). SSE comment lines count as
    keep-alives: they re-arm ``idle`` but do not end the first-event phase.

    A network failure (fetch rejects, or the body errors) that nobody asked for ends the attempt as ``truncated``
    with stage ``network``: no usable answer, nothing committed.

Terminal grace and resumes (the decisions are the core's: ``DeadlineTracker``, ``webclient._resume``)
    Once the session is ``finishable`` (terminal condition, nothing pending) the deadline timer also watches
    ``Deadlines.terminal_grace``: if EOF has not come by then, the request is aborted (the connection closes) and
    the attempt ends ``complete``. With ``resume=ResumePolicy(max_resumes=N)``, a request that ended resumable
    is followed -- after the planned delay, on a cleared ``setTimeout`` -- by the resume request (``GET
    {url}/{id}?stream=true&starting_after=N`` for a Responses resume point, or the same request with
    ``Last-Event-ID``) into ``StreamSession.resume(previous)``; updates continue and one final update ends the
    answer. Each request has its own ``AbortController`` (aborted when the request ends, closing its connection)
    and its own deadline tracker; the stream's controller stands for the caller's cancellation, which stops the
    request in flight or the pause before the next one.

Timeline (for charts of chunks vs events vs committed output)
    :class:`Timeline` is a snapshot ``{t_ms, chunks, bytes, events}``: milliseconds since the attempt started,
    transport chunks and body bytes received, complete SSE events consumed. :attr:`BrowserStream.timeline` gives
    it at any moment; ``on_chunk(timeline)`` is called once per transport chunk (for the chunks of a batch, the
    events count moves at its last chunk: the batch was consumed at once); the JS entry point adds it to every
    update object under the key ``"timeline"``.

JS entry point for widgets: :func:`start_stream` (see its docstring).

FFI hygiene: every proxy this module creates is released by the time :meth:`BrowserStream.run` returns: the fast
path's ``create_proxy(feed)`` (destroyed in a ``finally``), the abort listener (``add_event_listener`` /
``remove_event_listener``), the deadline timer's callback (fired or cleared). Promise handlers Pyodide adds are
released when their promise settles; every promise waited on has settled by then (the reader's ``cancel()``
promise gets a rejection handler at once, so nothing is left unhandled).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import math
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from struct import unpack_from
from typing import Any, TypeVar

from ._deadlines import Deadlines, DeadlineTracker
from ._errors import UsageError
from ._limits import DEFAULT_LIMITS, Limits
from ._outcome import Failure, Outcome
from ._resume import NO_RESUME, RequestSpec, ResumePolicy, plan_resume
from ._retry import advise_retry, check_count
from ._session import StreamSession
from ._updates import Committed, Failed, StreamResult, Update

__all__ = ["PUMP_MODULE", "BrowserStream", "Timeline", "fast_path", "read_batches", "read_chunks", "start_stream"]

_CANCELLED = Failure(Outcome.CANCELLED, "caller")


def _js() -> Any:
    """Pyodide's ``js`` module (the browser's global scope). Imported on use and typed ``Any``: everything
    crossing the FFI boundary is dynamically typed."""
    return importlib.import_module("js")


def _ffi() -> Any:
    """``pyodide.ffi`` (Pyodide only), typed ``Any`` like :func:`_js`."""
    return importlib.import_module("pyodide.ffi")


#: Stage of a ``truncated`` outcome caused by a transport failure (fetch rejected, body errored).
NETWORK_STAGE = "network"

#: Name of the JS module a host registers (``pyodide.registerJsModule(PUMP_MODULE, {pump})``) to give the fast
#: path a JS read loop defined by a static script, so no ``eval`` is needed: the widget kit's worker registers
#: the ``pump`` of its ``pump.mjs`` (``demo_site/kit/pump.mjs``), whose loop is exactly :data:`_PUMP_SOURCE`.
PUMP_MODULE = "webclient_pump"

#: Bytes of the bytearray :func:`read_batches` lends the JS pump to write batches into (see pump.mjs). A batch
#: stops once it holds 16 KiB, so one of chunks of up to 64 KiB fits with its lengths (at most 16 KiB + 64 KiB of
#: bytes and, for 1-byte chunks, 64 KiB of lengths); a larger one crosses as a Uint8Array. Lent per call, not
#: shared: 128 KiB is nothing next to the session's buffers.
BATCH_BUFFER_BYTES = 0x20000

# The fast path's read loop, compiled with ``eval`` (``pyodide.code.run_js``) only when no host registered
# PUMP_MODULE; the same code as ``pump`` in the kit's pump.mjs (read there why it reads ahead and how a batch
# crosses). ``feed(size, count)`` finds one transport chunk (``count`` undefined) or ``count`` already queued ones
# written into ``into`` (read_batches' bytearray): their bytes, then their lengths as ``count`` little-endian
# uint32; a batch too large for ``into`` comes as ``feed(bytes, count)``, the same layout in a Uint8Array (valid
# during the call only, its buffer is reused). ``feed`` returns true when the session needs no more bytes. The
# loop never releases the reader: the Python side owns it and cancels it when the attempt stops early.
_PUMP_SOURCE = """(async (reader, feed, into) => {
  const BATCH_BYTES = 16384;
  const track = () => {
    const box = { read: reader.read(), result: undefined };
    box.read.then((result) => { box.result = result; }, () => { box.result = null; });
    return box;
  };
  let buffer = null;
  let view = null;
  let scratch = new Uint8Array(2 * BATCH_BYTES);
  let next = track();
  try {
    for (;;) {
      const first = await next.read;
      if (first.done) return;
      next = track();
      let chunks = null;
      let size = first.value.byteLength;
      while (size < BATCH_BYTES) {
        await undefined;
        const queued = next.result;
        if (queued === undefined || queued === null || queued.done) break;
        (chunks ??= [first.value]).push(queued.value);
        size += queued.value.byteLength;
        next = track();
      }
      const count = chunks === null ? undefined : chunks.length;
      const total = chunks === null ? size : size + 4 * count;
      if (into !== undefined && (view === null || view.length === 0)) {
        buffer?.release();
        buffer = null;
        buffer = into.getBuffer("u8");
        view = buffer.data;
      }
      let bytes = view;
      if (view === null || total > view.length) {
        if (chunks === null) {
          if (feed(first.value, undefined)) return;
          continue;
        }
        if (scratch.length < total) scratch = new Uint8Array(total);
        bytes = scratch;
      }
      if (chunks === null) {
        bytes.set(first.value, 0);
      } else {
        const lengths = new DataView(bytes.buffer, bytes.byteOffset + size, 4 * count);
        let at = 0;
        for (let i = 0; i < count; i++) {
          const chunk = chunks[i];
          bytes.set(chunk, at);
          at += chunk.byteLength;
          lengths.setUint32(4 * i, chunk.byteLength, true);
        }
      }
      if (feed(bytes === view ? size : bytes.subarray(0, total), count)) return;
    }
  } finally {
    buffer?.release();
    next.read.catch(() => {});
  }
})"""
#: ``(kind, function)`` once looked up: kind "module" (registered), "eval" (run_js) or "pull" (neither: function None).
_pump_cache: tuple[str, Any] | None = None


def _pump() -> tuple[str, Any]:
    """The JS pump and where it came from, looked up once per runtime: the registered :data:`PUMP_MODULE`, else one
    compiled with ``run_js``; when that ``eval`` is refused (a Content-Security-Policy without ``'unsafe-eval'``)
    ``("pull", None)``, and a one-line console warning says the fast path falls back to the pull loop."""
    global _pump_cache
    if _pump_cache is None:
        try:
            _pump_cache = ("module", importlib.import_module(PUMP_MODULE).pump)
        except (ImportError, AttributeError):
            try:
                _pump_cache = ("eval", importlib.import_module("pyodide.code").run_js(_PUMP_SOURCE))
            except _ffi().JsException as exc:  # EvalError: refused by the CSP
                _pump_cache = ("pull", None)
                _js().console.warn(f"webclient: fast path unavailable ({exc.name}); reading with the pull loop. "
                                   f"Register {PUMP_MODULE} (the kit's pump.mjs) to avoid eval.")
    return _pump_cache


def fast_path() -> str:
    """How ``fast=True`` reads in this runtime: ``"module"`` (the registered :data:`PUMP_MODULE`), ``"eval"`` (a pump
    compiled with ``run_js``) or ``"pull"`` (no pump available: the pull loop). Looks the pump up if not done yet."""
    return _pump()[0]


async def read_batches(reader: Any, on_batch: Callable[[bytes, list[int]], bool], *, fast: bool = True) -> None:
    """Read a ``ReadableStreamDefaultReader`` until EOF or until ``on_batch(data, sizes)`` returns true. ``data``
    is one transport chunk or, with the JS pump, the chunks that were already queued when one arrived, concatenated
    (at most ``BATCH_BYTES`` of pump.mjs beyond the first); ``sizes`` are their lengths in order (``[len(data)]``
    for one chunk). Rejections (an abort, a network error) propagate as ``JsException`` once the chunks read
    before them were handed over; an exception raised by ``on_batch`` propagates as itself. The reader is neither
    released nor cancelled here.

    ``fast=True``: the JS pump (see :func:`fast_path`) calls back synchronously through one ``create_proxy``,
    destroyed before returning. It writes a batch straight into a bytearray of :data:`BATCH_BUFFER_BYTES` lent to
    it (a second proxy, also destroyed), its chunks' lengths packed after its bytes, and calls with numbers only;
    a batch too large for it crosses as a Uint8Array, laid out the same (the sizes are unpacked here). Without a
    pump, the pull loop. ``fast=False``: the pure-Python pull loop, one ``await reader.read()`` per chunk, each its
    own batch.

    The callback also accepts the earlier pump.mjs's forms, which a host that registered its own copy of an older
    pump.mjs as :data:`PUMP_MODULE` keeps calling with a newer wheel (the same batches and ``sizes``): every batch
    as a Uint8Array (the previous form, which ignores the bytearray), and ``feed(bytes, sizes)`` with the chunks'
    bytes only and ``sizes`` a JS array of their lengths (the one before). The forms differ by type: a batch is an
    ``int`` (written into the bytearray) or a Uint8Array; after a Uint8Array, ``undefined`` is one chunk, an ``int``
    a packed count and anything else such an array.
    """
    pump = _pump()[1] if fast else None
    if pump is None:
        while True:
            chunk = await reader.read()
            if chunk.done:
                return
            data = chunk.value.to_bytes()
            if on_batch(data, [len(data)]):
                return

    into = bytearray(BATCH_BUFFER_BYTES)
    written = memoryview(into)

    def feed(chunk: Any, count: Any = None) -> bool:
        if type(chunk) is int:  # the pump wrote the batch into `into`: `chunk` bytes, then `count` lengths
            data = written[:chunk].tobytes()
            if count is None:
                return on_batch(data, [chunk])
            return on_batch(data, list(unpack_from(f"<{count}I", into, chunk)))
        data = chunk.to_bytes()
        if count is None:
            return on_batch(data, [len(data)])
        if type(count) is int:
            size = len(data) - 4 * count
            return on_batch(data[:size], list(unpack_from(f"<{count}I", data, size)))
        return on_batch(data, count.to_py())  # an older pump's JS array of the lengths (see the docstring)

    ffi = _ffi()
    proxy = ffi.create_proxy(feed)
    lent = ffi.create_proxy(into)
    try:
        await pump(reader, proxy, lent)
    finally:
        proxy.destroy()
        lent.destroy()
        written.release()


async def read_chunks(reader: Any, on_bytes: Callable[[bytes], bool], *, fast: bool = True) -> None:
    """Like :func:`read_batches`, but hands every transport chunk over on its own: ``on_bytes(chunk)`` per chunk,
    in order, until one returns true (a batch's later chunks are then dropped)."""

    def split(data: bytes, sizes: list[int]) -> bool:
        if len(sizes) == 1:
            return on_bytes(data)
        at = 0
        for size in sizes:
            if on_bytes(data[at : at + size]):
                return True
            at += size
        return False

    await read_batches(reader, split, fast=fast)


_T = TypeVar("_T")


def _each(callback: Callable[[_T], None]) -> Callable[[list[_T]], None]:
    """A callback taking a list that calls ``callback`` with each item in order."""

    def call(items: list[_T]) -> None:
        for item in items:
            callback(item)

    return call


@dataclass(frozen=True, slots=True)
class Timeline:
    """Where an attempt stood at one moment (see the module docstring)."""

    #: Milliseconds since the attempt started (event-loop clock).
    t_ms: float
    #: Transport chunks received.
    chunks: int
    #: Body bytes received.
    bytes: int
    #: Complete SSE events the session consumed.
    events: int

    def to_dict(self) -> dict[str, Any]:
        """``{"t_ms", "chunks", "bytes", "events"}``."""
        return {"t_ms": self.t_ms, "chunks": self.chunks, "bytes": self.bytes, "events": self.events}


def _ignore(_: object) -> None:
    """Rejection handler for promises whose failure is expected (cancelling an already aborted body)."""


def _request_init(method: str, headers: Mapping[str, str], body: object, signal: Any) -> Any:
    """The ``fetch`` init object (a plain JS object); ``body`` as :func:`_encode_body` gave it."""
    init: dict[str, Any] = {"method": method, "headers": dict(headers), "signal": signal}
    if body is not None:
        init["body"] = body
    return _ffi().to_js(init, dict_converter=_js().Object.fromEntries)


def _encode_body(body: object, headers: dict[str, str]) -> str | bytes | None:
    """``str``/``bytes`` pass through; a mapping or list is sent as JSON (setting ``content-type``)."""
    if body is None or isinstance(body, (str, bytes)):
        return body
    if isinstance(body, (Mapping, list)):
        headers.setdefault("content-type", "application/json")
        return json.dumps(body)
    raise UsageError("body must be str, bytes, a mapping, a list or None")


class BrowserStream:
    """One streaming attempt in the browser; single-use. See the module docstring.

    ``attempt`` (1 for the first try) and ``idempotent`` feed :func:`webclient.advise_retry`, whose decision is
    recorded in the telemetry's ``retry_decision`` when the attempt ends (``attempt``/``idempotent`` in the JS
    options of :func:`start_stream`). ``resume`` allows follow-up requests that continue a cut stream (none by
    default; see the module docstring). ``keep_unknown_items`` and ``include_reasoning_content`` are the
    :class:`~webclient.StreamSession` options of the same names.

    Drive it in exactly one of two ways::

        result = await stream.run(on_update)        # callback per update (the final one included)

        async with stream:                           # the block's end cancels an attempt left early
            async for update in stream: ...          # updates as they come, the final Committed/Failed last

    :attr:`result` holds the :class:`StreamResult` once the attempt has ended, however it ended (also after a
    cancellation that propagated as ``CancelledError``). Construction validates everything and raises
    :class:`~webclient.UsageError` for caller bugs; the attempt itself never raises for bad responses.
    """

    def __init__(
        self,
        url: str,
        route: str,
        *,
        body: object = None,
        headers: Mapping[str, str] | None = None,
        method: str = "POST",
        deadlines: Deadlines | None = None,
        limits: Limits = DEFAULT_LIMITS,
        tools: Mapping[str, object] | None = None,
        accepted_stop_reasons: Iterable[str] | None = None,
        utf8_errors: str = "strict",
        request_id: str = "",
        model_alias: str = "",
        fast: bool = True,
        on_chunk: Callable[[Timeline], None] | None = None,
        fetch: Any = None,
        signal: Any = None,
        attempt: int = 1,
        idempotent: bool = False,
        resume: ResumePolicy | None = None,
        keep_unknown_items: bool = False,
        include_reasoning_content: bool = False,
    ) -> None:
        if not isinstance(url, str) or not url:
            raise UsageError("url must be a non-empty string")
        if resume is not None and not isinstance(resume, ResumePolicy):
            raise UsageError("resume must be a webclient ResumePolicy")
        if not isinstance(method, str) or not method:
            raise UsageError("method must be a non-empty string")
        if not isinstance(fast, bool):
            raise UsageError("fast must be a bool")
        if deadlines is not None and not isinstance(deadlines, Deadlines):
            raise UsageError("deadlines must be a webclient Deadlines")
        if headers is not None and not (isinstance(headers, Mapping)
                                        and all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())):
            raise UsageError("headers must map str to str")
        self._session = StreamSession(route, limits=limits, tools=tools, accepted_stop_reasons=accepted_stop_reasons,
                                      utf8_errors=utf8_errors, request_id=request_id, model_alias=model_alias,
                                      keep_unknown_items=keep_unknown_items,
                                      include_reasoning_content=include_reasoning_content)
        self._headers = {k.lower(): v for k, v in (headers or {}).items()}
        self._headers.setdefault("accept", "text/event-stream")
        self._request = RequestSpec(method.upper(), url, self._headers, _encode_body(body, self._headers))
        self._resume = resume if resume is not None else NO_RESUME
        self._deadlines = deadlines if deadlines is not None else Deadlines()
        self._fast = fast
        # For the retry advice recorded in the telemetry (``retry_decision``): which attempt this is and
        # whether the request may be repeated. No tool can have run during the attempt (a call is ready
        # only once the response is complete), so ``tools_run`` is always false here.
        self._attempt = check_count("attempt", attempt)
        self._idempotent = bool(idempotent)
        # Callbacks as this class calls them: with all timelines of a batch of chunks, with all updates of a feed
        # (start_stream sets both directly, to cross into JavaScript once per batch).
        self._on_chunks: Callable[[list[Timeline]], None] | None = None if on_chunk is None else _each(on_chunk)
        self._fetch = fetch
        self._signal = signal
        self._sink: Callable[[list[Update]], None] | None = None
        # The whole attempt: the stream's AbortController (the caller's cancellation), whether the caller
        # cancelled, a callback's exception to re-raise, chunk/byte/event counts across requests.
        self._controller: Any = None
        self._cancelled = False
        self._fault: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._t0 = 0.0
        self._chunks = 0
        self._bytes = 0
        # Transport chunks of the request in flight: its telemetry's ``chunk_count`` (the session counts feeds,
        # and a feed may be a batch of chunks).
        self._request_chunks = 0
        self._events_before = 0
        self._started = False
        self._finished = False
        self._task: asyncio.Future[StreamResult] | None = None
        self._abort: Any = None
        self._wake: Callable[[], None] | None = None  # ends the pause before a resume early
        # The request in flight: its AbortController, reader, deadline tracker and timer, why it stopped early,
        # whether the terminal grace ended it, and the last ``finishable`` reported to the tracker.
        self._request_controller: Any = None
        self._reader: Any = None
        self._reader_cancelled = False
        self._tracker: DeadlineTracker | None = None
        self._timer: Any = None
        self._timer_at = 0.0
        self._stop: Failure | None = None
        self._graced = False
        self._ready = False
        #: The result once the attempt has ended, else ``None``.
        self.result: StreamResult | None = None

    # -- public ---------------------------------------------------------------------------------------------

    @property
    def timeline(self) -> Timeline:
        """A snapshot of where the attempt stands now."""
        t_ms = 0.0 if self._loop is None else round((self._loop.time() - self._t0) * 1000.0, 3)
        return Timeline(t_ms, self._chunks, self._bytes, self._events_before + self._session.events_seen)

    def cancel(self) -> None:
        """Stop the attempt as ``cancelled``: abort the fetch and cancel the reader (or end the pause before a
        resume). No effect once ended."""
        if not self._started:
            self._cancelled = True
        else:
            self._halt(_CANCELLED)

    async def run(self, on_update: Callable[[Update], None] | None = None) -> StreamResult:
        """Run the attempt to its end, calling ``on_update`` (if given) synchronously with every update, in
        order, the final ``Committed``/``Failed`` last. Returns the :class:`StreamResult`.

        If the awaiting task is cancelled, or ``on_update`` raises, the download is stopped, the attempt ends as
        ``cancelled`` (see :attr:`result`) and the exception propagates.
        """
        if on_update is not None:
            self._sink = _each(on_update)
        return await self._run()

    async def _run(self) -> StreamResult:
        """:meth:`run` with the sinks set."""
        if self._started:
            raise UsageError("a BrowserStream runs once")
        self._started = True
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._t0 = loop.time()
        observed_at = datetime.now(UTC).isoformat(timespec="milliseconds")
        controller = self._abort_controller()
        wrappers = importlib.import_module("pyodide.ffi.wrappers")
        signal = controller.signal  # one proxy for add and remove: the wrappers key listeners by its js_id
        wrappers.add_event_listener(signal, "abort", self._on_abort)
        try:
            result = await self._exchange()
        except BaseException:
            self._halt(_CANCELLED)
            self._conclude(self._session.abort(Outcome.CANCELLED, "caller"), observed_at, deliver=False)
            raise
        finally:
            self._finished = True
            wrappers.remove_event_listener(signal, "abort", self._on_abort)
            self._release()
        return self._conclude(result, observed_at, deliver=True)

    async def __aiter__(self) -> AsyncIterator[Update]:
        """Iterate the updates as they come; the final ``Committed``/``Failed`` update is the last.

        Leaving the loop early (``break``, an exception, task cancellation) cancels the attempt when the iterator
        is closed: at once under ``async with stream:`` (or ``contextlib.aclosing``), otherwise when Python
        finalizes the abandoned iterator, a moment later."""
        queue: asyncio.Queue[Update | None] = asyncio.Queue()
        task = asyncio.ensure_future(self.run(queue.put_nowait))
        self._task = task
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (update := await queue.get()) is not None:
                yield update
            task.result()  # re-raise a failure of the attempt itself (a bug), if any
        finally:
            if not task.done():
                self.cancel()
                await asyncio.wait({task})

    async def __aenter__(self) -> BrowserStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Cancel the attempt if it is still running and wait until it has ended (:attr:`result` is set)."""
        if self._task is not None and not self._task.done():
            self.cancel()
            await asyncio.wait({self._task})

    # -- the attempt ----------------------------------------------------------------------------------------

    def _abort_controller(self) -> Any:
        """This attempt's ``AbortController`` (created on first use; linked to the caller's signal, if any)."""
        if self._controller is None:
            js = _js()
            controller = js.AbortController.new()
            self._controller = controller
            # Every abort carries a DOMException AbortError as its reason, whatever the caller passes: a pending
            # fetch/read rejects with the reason, and Pyodide cannot raise a non-Error value in Python.
            self._abort = controller.abort.bind(controller, js.DOMException.new("cancelled", "AbortError"))
            if self._signal is not None:
                if self._signal.aborted:
                    controller.abort()
                else:
                    self._signal.addEventListener("abort", self._abort)
        return self._controller

    async def _exchange(self) -> StreamResult:
        """The first request, then as many resumes as :func:`plan_resume` allows, each into a session that
        continues the previous one -> the last session's result (before timing is added)."""
        session = self._session
        result = await self._request_once(session, self._request)
        resumes = 0
        while (plan := plan_resume(session, self._resume, resumes, self._request)) is not None:
            resumes += 1
            self._events_before += session.events_seen
            session = self._session = StreamSession.resume(session)
            if plan.delay > 0:
                await self._pause(plan.delay)
            result = await self._request_once(session, plan.request)
        return result

    async def _request_once(self, session: StreamSession, spec: RequestSpec) -> StreamResult:
        """One HTTP request into ``session``: fetch -> gate -> read loop -> the session's result. The request's
        controller is aborted when it ends, however it ends (for a body read to EOF that is a no-op)."""
        loop = self._loop
        assert loop is not None
        self._stop, self._graced, self._ready = None, False, False
        self._reader, self._reader_cancelled = None, False
        self._request_chunks = 0
        if self._cancelled or self._controller.signal.aborted:
            self._cancelled = True
            return session.abort(Outcome.CANCELLED, "caller")
        self._request_controller = _js().AbortController.new()
        self._tracker = DeadlineTracker(self._deadlines, loop.time())
        self._arm_timer()
        try:
            return await self._read_response(session, spec)
        finally:
            self._end_request()

    async def _read_response(self, session: StreamSession, spec: RequestSpec) -> StreamResult:
        JsException = _ffi().JsException
        assert self._loop is not None and self._tracker is not None
        fetch = self._fetch if self._fetch is not None else _js().fetch
        init = _request_init(spec.method, spec.headers, spec.body, self._request_controller.signal)
        try:
            response = await fetch(spec.url, init)
        except JsException:
            return self._stopped_or(NETWORK_STAGE)
        if self._stop is not None:
            await self._discard(response)
            return self._stopped_or(NETWORK_STAGE)
        self._tracker.headers_received(self._loop.time())
        self._arm_timer()
        session.open(int(response.status), response.headers.get("content-type"))
        if session.done:  # the gate refused the response: the body is never read
            await self._discard(response)
            return session.finish()
        body = response.body
        if body is None:
            return session.finish()
        self._reader = body.getReader()
        try:
            await read_batches(self._reader, self._feed, fast=self._fast)
        except JsException:
            if self._fault is None and not self._graced:
                return self._stopped_or(NETWORK_STAGE)
        if self._fault is not None:
            raise self._fault
        if self._graced:  # the terminal grace passed with nothing pending: complete, connection closed
            return session.finish()
        if self._stop is not None:
            return self._stopped_or(NETWORK_STAGE)
        if session.done:  # a failure mid-stream: stop downloading (see _end_request)
            return session.finish()
        self._reader_cancelled = True  # EOF: nothing left to cancel
        return session.finish()

    async def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` before a resume on a ``setTimeout`` that is cleared when the pause ends, or until
        the caller cancels."""
        assert self._loop is not None
        woken: asyncio.Future[None] = self._loop.create_future()

        def wake() -> None:
            if not woken.done():
                woken.set_result(None)

        wrappers = importlib.import_module("pyodide.ffi.wrappers")
        timer = wrappers.set_timeout(wake, max(1, math.ceil(seconds * 1000.0)))
        self._wake = wake
        try:
            if not self._cancelled:
                await woken
        finally:
            self._wake = None
            wrappers.clear_timeout(timer)

    def _feed(self, data: bytes, sizes: list[int]) -> bool:
        """Consume one batch of transport chunks (``sizes``: their lengths; see :func:`read_batches`) as one feed
        of the session -- the same events and outcome as chunk by chunk, since the session's results do not depend
        on how the bytes are cut -- and return True when no more bytes are wanted."""
        if self._stop is not None or self._graced:
            return True
        session = self._session
        chunks_before, bytes_before = self._chunks, self._bytes
        events_before = self._events_before + session.events_seen
        self._chunks += len(sizes)
        self._bytes += len(data)
        self._request_chunks += len(sizes)
        content, live = session.content_events_seen, session.keepalives_seen
        try:
            updates = session.feed(data)
            if session.content_events_seen != content or session.keepalives_seen != live:
                assert self._tracker is not None and self._loop is not None
                self._tracker.event_received(self._loop.time(), keep_alive=session.content_events_seen == content)
                self._arm_timer()
            ready = session.finishable
            if ready or self._ready:  # the terminal grace starts (or, bytes of something new, stops)
                assert self._tracker is not None and self._loop is not None
                self._ready = ready
                self._tracker.ready_to_finish(self._loop.time(), ready)
                self._arm_timer()
            if self._on_chunks is not None:
                self._on_chunks(self._chunk_timelines(sizes, chunks_before, bytes_before, events_before))
            if updates:
                self._deliver(updates)
        except BaseException as exc:  # a callback raised (or a bug): stop the download, re-raise from run()
            self._fault = exc
            self._halt(_CANCELLED)
            return True
        return session.done or self._stop is not None or self._graced

    def _chunk_timelines(self, sizes: list[int], chunks: int, received: int, events: int) -> list[Timeline]:
        """One timeline per transport chunk of a batch: the chunks and bytes up to and including it; the events
        consumed before the batch for all but its last chunk (the batch was fed at once), after it for the last."""
        now = self.timeline
        out = []
        for size in sizes[:-1]:
            chunks += 1
            received += size
            out.append(Timeline(now.t_ms, chunks, received, events))
        out.append(now)
        return out

    def _deliver(self, updates: list[Update]) -> None:
        """Hand one feed's provisional updates to the sink. A final update is held back: :meth:`_conclude`
        re-issues it with the transport's timing in the telemetry."""
        sink = self._sink
        if sink is None:
            return
        provisional: list[Update] = [update for update in updates if not isinstance(update, (Committed, Failed))]
        if provisional:
            sink(provisional)

    def _stopped_or(self, stage: str) -> StreamResult:
        """The result for an attempt that stopped reading: the stop reason if one was set, else a transport
        failure (``truncated``/``stage``). A failure the session already decided is kept (abort changes nothing)."""
        if self._stop is None and self._controller.signal.aborted:
            # Aborted from outside (the JS handle's cancel() or a linked signal) before _on_abort ran.
            self._stop = _CANCELLED
            self._cancelled = True
        failure = self._stop or Failure(Outcome.TRUNCATED, stage)
        return self._session.abort(failure.outcome, failure.stage)

    async def _discard(self, response: Any) -> None:
        """Cancel a body that must not be read (gate refusal, or a stop that raced the headers)."""
        body = response.body
        if body is not None:
            with contextlib.suppress(_ffi().JsException):
                await body.cancel()

    def _arm_timer(self) -> None:
        """Schedule the deadline timer for the tracker's next deadline when that is earlier than the timer already
        scheduled (the first-event deadline replacing the connect one, a short idle replacing a long first-event
        one). A later deadline is picked up when the earlier timer fires, so a chunk costs no timer work."""
        assert self._tracker is not None and self._loop is not None
        now = self._loop.time()
        at = self._tracker.next_deadline(now)
        if at is None:  # none armed, or one passed by now (a timer that fired a hair early, then re-armed)
            failure = self._tracker.expired(now)
            if failure is not None:
                self._halt(failure)
            elif self._tracker.settled(now):
                self._settle()
            return
        if self._finished or (self._timer is not None and self._timer_at <= at):
            return
        wrappers = importlib.import_module("pyodide.ffi.wrappers")
        if self._timer is not None:
            wrappers.clear_timeout(self._timer)
        self._timer_at = at
        # A timer may fire a hair early; the check then finds nothing expired and re-arms.
        self._timer = wrappers.set_timeout(self._on_timer, max(1, math.ceil((at - now) * 1000.0)))

    def _on_timer(self) -> None:
        """A timer fired: :meth:`_arm_timer` stops the request (a deadline expired, the grace passed) or re-arms."""
        self._timer = None
        if not (self._finished or self._stop is not None or self._graced):
            self._arm_timer()  # which stops the request when a deadline expired or the grace passed

    def _on_abort(self, event: Any) -> None:
        """Our AbortController was aborted. Aborts of our own come after ``_stop`` is set, so one that finds it
        unset came from outside: the JS handle's ``cancel()`` or a linked signal."""
        if not self._finished:
            self._halt(_CANCELLED)

    def _halt(self, failure: Failure) -> None:
        """Record why the request stops and stop it: abort the fetch/body and cancel the reader. A cancellation
        stops the whole attempt (also the pause before a resume); a deadline stops this request."""
        if failure is _CANCELLED:
            self._cancelled = True
            if self._wake is not None:
                self._wake()
        if self._stop is not None or self._graced or self._finished:
            return
        self._stop = failure
        self._stop_request()

    def _settle(self) -> None:
        """The terminal grace passed with nothing pending: stop reading; the request ends ``complete``."""
        if self._stop is None and not self._graced and not self._finished:
            self._graced = True
            self._stop_request()

    def _stop_request(self) -> None:
        controller = self._request_controller
        if controller is not None and not controller.signal.aborted:
            controller.abort()
        self._cancel_reader()

    def _cancel_reader(self) -> None:
        reader = self._reader
        if reader is not None and not self._reader_cancelled:
            self._reader_cancelled = True
            # Rejects when the abort already errored the body; handled at once so nothing goes unhandled.
            reader.cancel().catch(_ignore)

    def _end_request(self) -> None:
        """End-of-request cleanup, on every path: clear the deadline timer, cancel an unfinished body and abort
        the request's controller (a no-op for a body read to its end), which closes its connection."""
        if self._timer is not None:
            importlib.import_module("pyodide.ffi.wrappers").clear_timeout(self._timer)
            self._timer = None
        self._stop_request()
        self._request_controller = None
        self._reader = None

    def _release(self) -> None:
        """End-of-attempt cleanup, on every path: end the request in flight (if any) and unlink the caller's
        signal."""
        self._end_request()
        if self._signal is not None and self._abort is not None:
            self._signal.removeEventListener("abort", self._abort)

    def _conclude(self, result: StreamResult, observed_at: str, *, deliver: bool) -> StreamResult:
        """Add the transport's timing and chunk count to the result, store it, and deliver the final update."""
        assert self._loop is not None
        duration_ms = round((self._loop.time() - self._t0) * 1000.0, 3)
        advice = advise_retry(result, text_shown=bool(result.text), tools_run=False, idempotent=self._idempotent,
                              attempt=self._attempt)
        telemetry = result.telemetry.with_fields(observed_at=observed_at, duration_ms=duration_ms,
                                                 retry_decision=advice.decision.value)
        # Transport chunks of the last request: a feed of the session may have been a batch of them.
        result = result.with_telemetry(replace(telemetry, chunk_count=self._request_chunks))
        self.result = result
        if deliver and self._sink is not None:
            self._sink([Committed(result) if result.committed else Failed(result.outcome, result.stage or "", result)])
        return result


# -- the JS entry point -----------------------------------------------------------------------------------------

_OPTION_KEYS = frozenset({"url", "route", "body", "headers", "method", "deadlines", "tools", "limits", "fast",
                          "attempt", "idempotent", "resume", "keep_unknown_items", "include_reasoning_content",
                          "accepted_stop_reasons", "utf8_errors", "request_id", "model_alias", "signal", "fetch",
                          "onUpdate", "onUpdates", "onResult", "onChunk", "onChunks"})
_DEADLINE_KEYS = {"connect_ms": "connect", "first_event_ms": "first_event", "idle_ms": "idle", "total_ms": "total",
                  "terminal_grace_ms": "terminal_grace"}
_RESUME_KEYS = {"max_resumes": "max_resumes", "last_event_id": "last_event_id", "delay_ms": "delay",
                "max_delay_ms": "max_delay"}
_LIMIT_KEYS = frozenset(f.name for f in fields(Limits))
#: Tasks started by start_stream, kept alive until they finish.
_RUNNING: set[asyncio.Task[StreamResult]] = set()


def _to_js_json(obj: Mapping[str, Any] | list[Any]) -> Any:
    """A plain JS object from a JSON-able dict, via ``JSON.parse``: keeps ``null`` as ``null`` (``to_js`` would
    give ``undefined``, which ``JSON.stringify`` drops) and crosses the boundary as an ASCII string, the fast
    case of Pyodide's string conversion."""
    return _js().JSON.parse(json.dumps(obj))


def _deadlines_from_js(value: Any) -> Deadlines:
    """``{connect_ms, first_event_ms, idle_ms, total_ms}`` -> Deadlines. A missing key keeps the default; ``null``
    disables that deadline."""
    if value is None:
        return Deadlines()
    if not isinstance(value, dict) or not set(value) <= set(_DEADLINE_KEYS):
        raise UsageError(f"deadlines take the keys {', '.join(_DEADLINE_KEYS)}")
    seconds: dict[str, float | None] = {}
    for key, ms in value.items():
        if ms is not None and (isinstance(ms, bool) or not isinstance(ms, (int, float))):
            raise UsageError(f"deadlines.{key} must be a number of milliseconds or null")
        seconds[_DEADLINE_KEYS[key]] = None if ms is None else ms / 1000.0
    return Deadlines(**seconds)


def _resume_from_js(value: Any) -> ResumePolicy | None:
    """``{max_resumes, last_event_id, delay_ms, max_delay_ms}`` -> ResumePolicy (each key optional)."""
    if value is None:
        return None
    if not isinstance(value, dict) or not set(value) <= set(_RESUME_KEYS):
        raise UsageError(f"resume takes the keys {', '.join(_RESUME_KEYS)}")
    fields_: dict[str, Any] = {_RESUME_KEYS[k]: v for k, v in value.items()}
    for key in ("delay", "max_delay"):
        if key in fields_:
            ms = fields_[key]
            if isinstance(ms, bool) or not isinstance(ms, (int, float)):
                raise UsageError(f"resume.{key}_ms must be a number of milliseconds")
            fields_[key] = ms / 1000.0
    return ResumePolicy(**fields_)


#: ``name`` of the JS ``Error`` a caller bug (bad options) rejects ``handle.result`` with; the kit uses the same.
USAGE_ERROR_NAME = "WebclientUsageError"


def _js_error(name: str, message: str) -> Any:
    """A JS ``Error`` with the given ``name`` and one-line ``message``."""
    error = _js().Error.new(" ".join(message.split()))
    error.name = name
    return error


def _report(exc: BaseException) -> None:
    """Report an exception thrown by a page's callback the way the DOM reports a throwing event listener
    (``reportError``: the page's error event and console), without letting it touch the attempt; ``console.error``
    where ``reportError`` does not exist (Node 20)."""
    js = _js()
    error = exc if isinstance(exc, _ffi().JsException) else _js_error(type(exc).__name__, str(exc))
    if hasattr(js, "reportError"):
        js.reportError(error)
    else:
        js.console.error("webclient: a callback threw:", error)


def _guarded(callback: Any) -> Callable[[Any], None]:
    """Call the JS ``callback`` with one argument; an exception it throws is reported (:func:`_report`) and
    otherwise ignored, so it never changes the attempt or its result."""

    def call(value: Any) -> None:
        try:
            callback(value)
        except Exception as exc:  # the page's bug, not the attempt's
            _report(exc)

    return call


def _without_jsnull(value: Any, jsnull: Any) -> Any:
    """``value`` (converted with ``to_py``) with every JS ``null`` -- which Pyodide converts to ``jsnull``, not
    ``None`` -- as ``None``, inside dicts and lists too: ``deadlines: {idle_ms: null}`` disables a deadline, and a
    JSON body may hold nulls."""
    if value is jsnull:
        return None
    if isinstance(value, dict):
        return {key: _without_jsnull(item, jsnull) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_jsnull(item, jsnull) for item in value]
    return value


def _parse_options(options: Any) -> tuple[BrowserStream, dict[str, Any]]:
    """Validate the JS options object; the BrowserStream (without callbacks) and the Python dict of options.
    Raises UsageError (one line) for a caller bug."""
    try:
        opts = _without_jsnull(options.to_py() if hasattr(options, "to_py") else dict(options), _ffi().jsnull)
    except (TypeError, ValueError) as exc:
        raise UsageError("start_stream options must be a plain object") from exc
    if not isinstance(opts, dict) or not set(opts) <= _OPTION_KEYS:
        raise UsageError(f"start_stream options take the keys {', '.join(sorted(_OPTION_KEYS))}")
    limits = opts.get("limits") or {}
    if not isinstance(limits, dict) or not set(limits) <= _LIMIT_KEYS:
        raise UsageError(f"limits take the keys {', '.join(sorted(_LIMIT_KEYS))}")
    attempt = opts.get("attempt") or 1
    if isinstance(attempt, bool) or not isinstance(attempt, (int, float)) or attempt != int(attempt):
        raise UsageError("attempt must be a positive integer")
    stream = BrowserStream(
        opts.get("url", ""),
        opts.get("route", ""),
        body=opts.get("body"), headers=opts.get("headers"), method=opts.get("method") or "POST",
        deadlines=_deadlines_from_js(opts.get("deadlines")), limits=Limits(**limits), tools=opts.get("tools"),
        accepted_stop_reasons=opts.get("accepted_stop_reasons"), utf8_errors=opts.get("utf8_errors") or "strict",
        request_id=opts.get("request_id") or "", model_alias=opts.get("model_alias") or "",
        fast=True if opts.get("fast") is None else opts["fast"], fetch=opts.get("fetch"), signal=opts.get("signal"),
        attempt=int(attempt), idempotent=bool(opts.get("idempotent", False)),
        resume=_resume_from_js(opts.get("resume")),
        keep_unknown_items=_flag(opts, "keep_unknown_items"),
        include_reasoning_content=_flag(opts, "include_reasoning_content"))
    return stream, opts


def _flag(opts: dict[str, Any], key: str) -> bool:
    """A boolean option: missing or ``null`` is false; anything but a boolean is a caller bug."""
    value = opts.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise UsageError(f"{key} must be a boolean")
    return value


def _js_callbacks(opts: dict[str, Any], name: str,
                  convert: Callable[[list[_T]], list[dict[str, Any]]]) -> Callable[[list[_T]], None] | None:
    """A callback of a BrowserStream that takes a list (of one feed's updates, of one batch's timelines) and calls
    the page's ``on<Name>s`` with all of them as one array and/or ``on<Name>`` with each, as plain objects made by
    ``convert`` (guarded: see :func:`_guarded`); ``None`` if the page gave neither."""
    each = None if opts.get(f"on{name}") is None else _guarded(opts[f"on{name}"])
    batch = None if opts.get(f"on{name}s") is None else _guarded(opts[f"on{name}s"])
    if each is None and batch is None:
        return None

    def sink(values: list[_T]) -> None:
        items = convert(values)
        if batch is not None:
            batch(_to_js_json(items))
        if each is not None:
            for item in items:
                each(_to_js_json(item))

    return sink


def start_stream(options: Any) -> Any:
    """Start one attempt from JavaScript; return a handle ``{result: Promise, cancel()}``.

    ``options`` is a plain JS object::

        {url, route,                               required: the endpoint and the route name ("openai-chat", ...)
         body, headers, method,                    body: a string, or an object sent as JSON; method defaults to POST
         deadlines: {connect_ms, first_event_ms, idle_ms, total_ms, terminal_grace_ms},   each optional
         resume: {max_resumes, last_event_id, delay_ms, max_delay_ms},  continue a cut stream (ResumePolicy)
         tools: {name: JSONSchema}, limits: {max_text_chars, ...},     as in Python
         accepted_stop_reasons, utf8_errors, request_id, model_alias, attempt, idempotent,
         keep_unknown_items, include_reasoning_content,   booleans, as StreamSession takes them
         fast: true,                               the JS pump (see fast_path()); false: the pull loop
         signal,                                   an AbortSignal that cancels the attempt
         fetch,                                    a fetch-compatible function (default: globalThis.fetch)
         onUpdate(update), onResult(result), onChunk(timeline),        callbacks, all optional
         onUpdates(updates), onChunks(timelines)}  the same, once per batch of transport chunks

    From a page or a Web Worker (the widget kit's worker does exactly this)::

        pyodide.registerJsModule("webclient_pump", { pump });   // optional: the fast path without eval (pump.mjs)
        const browser = pyodide.pyimport("webclient.browser");
        const handle = browser.start_stream({
          url: "https://example.test/v1/chat/completions", route: "openai-chat",
          body: {model: "m", stream: true, messages}, deadlines: {idle_ms: 30000},
          onUpdate: (u) => postMessage(u),          // {kind: "text_delta", text, ..., timeline: {...}}
        });
        const result = await handle.result;         // or handle.cancel()

    Callbacks receive plain JS objects (no Python proxies): ``onUpdate`` gets each ``Update.to_dict()`` (``kind``
    ``text_delta`` / ``tool_input_delta`` / ``tool_call`` / ``committed`` / ``failed``) plus ``timeline:
    {t_ms, chunks, bytes, events}``; ``onResult`` gets ``StreamResult.to_dict()``; ``onChunk`` gets a timeline per
    transport chunk. The fast path hands Python the chunks already queued together (see :func:`read_batches`) and
    the session consumes them as one feed; ``onUpdates`` and ``onChunks`` get that feed's updates and timelines as
    one array each, which crosses into JavaScript (and, in the kit, to the page) once per batch instead of once per
    update. A callback that throws is reported like a throwing DOM event listener (``reportError``) and
    changes nothing: the attempt and its result go on as if it had returned.

    ``handle.result`` resolves with the result object for every outcome (timeouts and cancellations included). It
    rejects only for a bug: invalid options (the caller's) reject it with an ``Error`` whose ``name`` is
    ``"WebclientUsageError"`` and whose message is one line (nothing is fetched). Should the attempt itself fail (a
    bug in webclient, never an outcome), it rejects with an ``Error`` named ``"WebclientError"`` whose message names
    only the exception's type (or ``cancelled``), never its text. ``handle.cancel()`` aborts the attempt (outcome
    ``cancelled``).
    """
    js = _js()
    handle = js.Object.new()
    try:
        stream, opts = _parse_options(options)
    except UsageError as exc:
        error = _js_error(USAGE_ERROR_NAME, str(exc))
        # Rejected from an executor: Pyodide turns an Error proxy passed to Promise.reject into a PythonError.
        handle.result = js.Promise.new(_ffi().create_once_callable(lambda resolve, reject: reject(error)))
        unused = js.AbortController.new()
        handle.cancel = unused.abort.bind(unused)  # a plain JS function with nothing to stop
        return handle
    on_result: Any = opts.get("onResult")

    def updates(values: list[Update]) -> list[dict[str, Any]]:
        timeline = stream.timeline.to_dict()
        return [{**update.to_dict(), "timeline": timeline} for update in values]

    stream._sink = _js_callbacks(opts, "Update", updates)
    stream._on_chunks = _js_callbacks(opts, "Chunk", lambda timelines: [t.to_dict() for t in timelines])

    settle: dict[str, Any] = {}
    promise = js.Promise.new(_ffi().create_once_callable(lambda resolve, reject: settle.update(ok=resolve, err=reject)))
    stream._abort_controller()

    def done(task: asyncio.Task[StreamResult]) -> None:
        _RUNNING.discard(task)
        if task.cancelled() or task.exception() is not None:
            problem = "cancelled" if task.cancelled() else type(task.exception()).__name__
            settle["err"](_js_error("WebclientError", f"webclient stream failed: {problem}"))
            return
        result = _to_js_json(task.result().to_dict())
        if on_result is not None:
            _guarded(on_result)(result)
        settle["ok"](result)

    task = asyncio.get_event_loop().create_task(stream._run())
    _RUNNING.add(task)
    task.add_done_callback(done)
    handle.result = promise
    handle.cancel = stream._abort  # a JS function: aborts with an AbortError reason whatever it is called with
    return handle
