"""Code that runs *inside Pyodide* for tests/test_browser_bridge.py (pytest does not collect it: no ``test_``).

tests/bridge_runner.mjs boots Pyodide under Node with our wheel, mounts tests/ at /bridge, and the host test calls
these coroutines with JSON arguments. Each returns a JSON-able dict of observations; the host asserts on them and
on what the real HTTP server saw. Node 20 provides fetch/ReadableStream/Response/AbortController, so
``webclient.browser`` runs here as in a browser, against real sockets.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gc
import itertools
import json
import sys
from collections.abc import Iterator
from typing import Any

import js
from bridge_streams import CHAT_HEAD, comparable  # tests/ is on sys.path inside Pyodide (mounted at /bridge)
from pyodide.ffi import JsException, create_proxy, to_js

from webclient import Deadlines, ResumePolicy
from webclient.browser import BrowserStream, start_stream


def counters() -> dict[str, int]:
    """Live hiwire references and PyProxies, after a collection (tests/bridge_runner.mjs)."""
    gc.collect()
    return dict(js.bridgeCounters().to_py())


def _deadlines(spec: dict[str, float | None] | None) -> Deadlines | None:
    return None if spec is None else Deadlines(**spec)


def _fetch_from(chunks: list[bytes], status: int = 200, content_type: str | None = "text/event-stream",
                **options: Any) -> Any:
    """tests/bridge_runner.mjs's stand-in fetch answering with these chunks; ``options`` as its ``streamFrom`` takes
    them (``spaced``, ``stall``, ``onCancel``, ``onPulled``: JS functions)."""
    return js.bridgeFetchFrom(to_js(chunks), status, content_type,
                              to_js(options, dict_converter=js.Object.fromEntries))


def _decoded(chunks_b64: list[str]) -> list[bytes]:
    return [base64.b64decode(c) for c in chunks_b64]


def _from_js(value: Any) -> Any:
    """A JS value (a plain object, array, string...) as the Python value of its JSON."""
    return json.loads(js.JSON.stringify(value))


@contextlib.contextmanager
def _replaced(owner: Any, name: str, value: Any) -> Iterator[None]:
    """``owner.name`` is ``value`` for the block (a class's method, a module's function, a JS object's property)."""
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextlib.contextmanager
def _counting(owner: Any, name: str) -> Iterator[list[None]]:
    """``owner.name`` wrapped for the block so that every call appends to the list yielded (then calls through)."""
    original = getattr(owner, name)
    calls: list[None] = []

    def counted(*args: Any) -> Any:
        calls.append(None)
        return original(*args)

    with _replaced(owner, name, counted):
        yield calls


async def run_stream(*, url: str = "http://127.0.0.1:9/unused", route: str = "openai-chat", fast: bool = False,
                     deadlines: dict[str, float | None] | None = None, cancel_after: int | None = None,
                     cancel_how: str = "method", chunks_b64: list[str] | None = None, status: int = 200,
                     content_type: str | None = "text/event-stream", body: Any = None,
                     headers: dict[str, str] | None = None, resume: dict[str, Any] | None = None,
                     cancel_at: float | None = None, callback: bool = True, spaced: bool = False,
                     signal: Any = None) -> dict[str, Any]:
    """Run one BrowserStream and report its updates, result and timeline.

    ``chunks_b64`` replaces the network with a JS ReadableStream handing out exactly those chunks.
    ``cancel_after`` N provisional updates, cancel: ``method`` (stream.cancel()), ``task`` (cancel the task
    awaiting run()), ``break`` (leave an ``async for``), ``signal`` (abort a linked AbortSignal).
    ``cancel_at`` seconds after the start, call stream.cancel(). ``resume``: ResumePolicy keyword arguments.
    ``callback=False``: ``await stream.run()`` without an update callback (no updates are reported). ``spaced``:
    each of ``chunks_b64`` arrives in a task of its own. ``signal``: a JS AbortSignal to link (from Python callers).
    Without ``cancel_after``, ``cancel_how`` may also be ``signal_before`` (the linked signal is aborted before the
    attempt starts), ``before_start`` (stream.cancel() before run()) or ``in_fetch`` (stream.cancel() while the fake
    fetch is in flight, which then answers anyway). ``entered``: with ``break``, whether ``async with`` gave the
    stream itself.
    """
    fake = None
    if chunks_b64 is not None:
        fake = _fetch_from(_decoded(chunks_b64), status, content_type, spaced=spaced)
    external = js.AbortController.new() if cancel_how in ("signal", "signal_before") else None
    fetch = fake
    if cancel_how == "in_fetch":
        assert fake is not None

        async def fetch(url: str, init: Any) -> Any:  # the caller cancels while the request is in flight
            stream.cancel()
            return await fake(url, init)

    chunk_log: list[dict[str, Any]] = []
    stream = BrowserStream(url, route, fast=fast, deadlines=_deadlines(deadlines), body=body, headers=headers,
                           fetch=fetch, signal=signal if external is None else external.signal,
                           on_chunk=lambda t: chunk_log.append(t.to_dict()),
                           resume=None if resume is None else ResumePolicy(**resume))
    if cancel_how == "signal_before":
        external.abort()
    elif cancel_how == "before_start":
        stream.cancel()
    entered = None
    updates: list[dict[str, Any]] = []
    raised = None
    loop = asyncio.get_running_loop()
    started = loop.time()
    if cancel_at is not None:
        loop.call_later(cancel_at, stream.cancel)

    def cancel_now() -> None:
        if cancel_how == "method":
            stream.cancel()
        elif cancel_how == "task":
            task.cancel()
        elif cancel_how == "signal":
            external.abort()

    def on_update(update: Any) -> None:
        updates.append(update.to_dict())
        if cancel_after is not None and len(updates) == cancel_after:
            cancel_now()

    if cancel_how == "break":
        async with stream as entered_as:
            entered = entered_as is stream
            async for update in stream:
                updates.append(update.to_dict())
                if cancel_after is not None and len(updates) == cancel_after:
                    break
    else:
        task = asyncio.ensure_future(stream.run(on_update if callback else None))
        try:
            await task
        except asyncio.CancelledError:
            raised = "CancelledError"
    elapsed = loop.time() - started
    assert stream.result is not None
    return {
        "updates": updates,
        "result": stream.result.to_dict(),
        "comparable": comparable(stream.result.to_dict()),
        "raised": raised,
        "entered": entered,
        "elapsed": elapsed,
        "chunk_log": chunk_log,
        "fake": None if fake is None else fake.state.to_py(),
    }


async def chunkings(*, data_b64: str, cut_lists: list[list[int]], route: str = "openai-chat",
                    fast: bool = False, spaced: bool = False) -> dict[str, Any]:
    """Stream the same bytes cut at each list of offsets through a JS ReadableStream (``spaced``: each chunk in a
    task of its own); report per chunking the comparable result, the chunk count in its telemetry, the
    concatenated provisional text and tool-input fragments, and how many times the session was fed (the fast
    path feeds the chunks it finds already queued as one batch)."""
    data = base64.b64decode(data_b64)
    runs = []
    for cuts in cut_lists:
        points = [0, *sorted(c for c in set(cuts) if 0 < c < len(data)), len(data)]
        chunks = [data[a:b] for a, b in itertools.pairwise(points)]
        fake = _fetch_from(chunks, spaced=spaced)
        stream = BrowserStream("http://127.0.0.1:9/unused", route, fast=fast, fetch=fake)
        texts: list[str] = []
        fragments: list[str] = []

        def on_update(update: Any, texts: list[str] = texts, fragments: list[str] = fragments) -> None:
            d = update.to_dict()
            if d["kind"] == "text_delta":
                texts.append(d["text"])
            elif d["kind"] == "tool_input_delta":
                fragments.append(d["fragment"])

        result = await stream.run(on_update)
        runs.append({"chunks": len(chunks), "pulled": fake.state.pulled, "text": "".join(texts),
                     "fragments": "".join(fragments), "result": comparable(result.to_dict()),
                     "chunk_count": result.telemetry.chunk_count,
                     "feeds": stream._session._parser.chunk_count})  # non-empty feeds of the session
    return {"runs": runs}


@contextlib.contextmanager
def _registered(pump: Any) -> Iterator[str]:
    """Register ``pump`` as PUMP_MODULE for the block (yields ``fast_path()``); unregister (the eval pump is back)."""
    import pyodide_js

    from webclient import browser

    browser._pump_cache = None
    pyodide_js.registerJsModule(browser.PUMP_MODULE, to_js({"pump": pump}, dict_converter=js.Object.fromEntries))
    try:
        yield browser.fast_path()
    finally:
        pyodide_js.unregisterJsModule(browser.PUMP_MODULE)
        sys.modules.pop(browser.PUMP_MODULE, None)
        browser._pump_cache = None


async def eval_refused(*, chunks_b64: list[str]) -> dict[str, Any]:
    """No pump registered and ``eval`` refused (as under a Content-Security-Policy without ``'unsafe-eval'``: here
    ``run_js`` throws a JS EvalError): the fast path's kind, the console warnings, and a fast run's feeds (calls of
    ``BrowserStream._feed``), chunks and result. The pump lookup is reset before and after."""
    import pyodide.code

    from webclient import browser

    thrower = js.Function.new("throw new EvalError('Refused to evaluate a string as JavaScript')")
    warnings: list[str] = []
    warn = create_proxy(lambda *args: warnings.append(" ".join(str(a) for a in args)))
    browser._pump_cache = None
    try:
        with _replaced(pyodide.code, "run_js", lambda source: thrower()), _replaced(js.console, "warn", warn), \
                _counting(BrowserStream, "_feed") as feeds:
            kind = browser.fast_path()
            out = await run_stream(chunks_b64=chunks_b64, fast=True)
            again = browser.fast_path()
    finally:
        warn.destroy()
        browser._pump_cache = None
    return {"kind": kind, "again": again, "warnings": warnings, "feeds": len(feeds),
            "chunk_count": len(out["chunk_log"]),
            "updates": len(out["updates"]), "comparable": out["comparable"]}


#: Registered pumps of tests/bridge_runner.mjs by the name a ``batches`` case gives: the kit's pump recording how
#: each batch crossed, and the same pump called as a host's copy of an earlier pump.mjs calls back.
PUMPS = {"forms": "bridgeFormPump", "uint8": "bridgeUint8Pump", "array": "bridgeOldPump"}


async def batches(*, chunks_b64: list[str], fast: bool = True, spaced: bool = False, error_after: int | None = None,
                  stop_at: int | None = None, pump: str | None = None, grow_at: int | None = None) -> dict[str, Any]:
    """Read a JS stream of exactly these chunks with read_batches and, separately, read_chunks; report each
    batch's sizes and whether its bytes are the chunks' concatenation, the chunks read_chunks handed over (until
    ``on_bytes`` returned true at chunk ``stop_at``), what the stream handed out, and what was raised.
    ``pump``: read with that registered pump of :data:`PUMPS` (tests/bridge_runner.mjs); also report the fast
    path's kind, the pump's calls and, for ``forms``, how each batch crossed (``[typeof, memory grew before it]``)
    and the views of the lent bytearray the pump took and released (both read_batches and read_chunks).
    ``grow_at``: the batch after which read_batches' callback grows the WebAssembly memory (it holds, to the end of
    the case, a bytearray as large as the whole memory, which cannot fit in it)."""
    if pump is not None:
        calls = js.bridgePumpCalls
        js.bridgeForms.length = 0
        js.bridgeViews.taken = js.bridgeViews.released = 0
        with _registered(getattr(js, PUMPS[pump])) as kind:
            out = await batches(chunks_b64=chunks_b64, fast=fast, spaced=spaced, error_after=error_after,
                                stop_at=stop_at, grow_at=grow_at)
        return {**out, "kind": kind, "pump_calls": js.bridgePumpCalls - calls, "forms": js.bridgeForms.to_py(),
                "views": {"taken": js.bridgeViews.taken, "released": js.bridgeViews.released}}
    from webclient.browser import read_batches, read_chunks

    chunks = _decoded(chunks_b64)
    out: dict[str, Any] = {}
    held: list[bytearray] = []
    for how in ("batches", "chunks"):
        fake = js.bridgeStreamFrom(to_js(chunks), spaced, error_after)
        seen: list[Any] = []
        raised = None

        def on_batch(data: bytes, sizes: list[int], seen: list[Any] = seen) -> bool:
            at = sum(sum(s) for s, _ in seen)
            seen.append((sizes, data == b"".join(chunks)[at : at + len(data)] and sum(sizes) == len(data)))
            if grow_at is not None and len(seen) == grow_at:
                held.append(bytearray(js.bridgePyodide._module.HEAPU8.length))
            return False

        def on_bytes(data: bytes, seen: list[Any] = seen) -> bool:
            seen.append(base64.b64encode(data).decode())
            return stop_at is not None and len(seen) == stop_at

        try:
            if how == "batches":
                await read_batches(fake.stream.getReader(), on_batch, fast=fast)
            else:
                await read_chunks(fake.stream.getReader(), on_bytes, fast=fast)
        except JsException as exc:
            raised = exc.name
        out[how] = {"seen": seen, "pulled": fake.state.pulled, "raised": raised}
    held.clear()
    return out


async def js_entry_point(*, url: str, route: str = "openai-chat", fast: bool = False, cancel_after: int = 0,
                         throw_after: int = 0, deadlines: dict[str, float | None] | None = None,
                         resume: dict[str, Any] | None = None, batched: bool = False,
                         **options: Any) -> dict[str, Any]:
    """Drive start_stream() the way a JavaScript page would, with JS callbacks; report what they received.
    ``options``: more start_stream options, as given. ``batched``: the page gives ``onUpdates`` / ``onChunks`` (an
    array per feed / per batch of chunks, as the kit's worker does) instead of ``onUpdate`` / ``onChunk``; what
    they received is reported as ``update_batches`` / ``chunk_batches``."""
    col = js.bridgeCollector(cancel_after, throw_after)
    spec: dict[str, Any] = {"url": url, "route": route, "fast": fast, "body": {"model": "m", "stream": True},
                            "deadlines": deadlines or {}, **options}
    if resume is not None:
        spec["resume"] = resume
    options = js.JSON.parse(json.dumps(spec))  # a page's plain object: None is null (to_js would give undefined)
    batches: dict[str, list[Any]] = {"update_batches": [], "chunk_batches": []}
    proxies = []
    if batched:
        for key, name in (("update_batches", "onUpdates"), ("chunk_batches", "onChunks")):
            proxy = create_proxy(lambda array, key=key: batches[key].append(_from_js(array)))
            proxies.append(proxy)
            setattr(options, name, proxy)
    else:
        options.onUpdate = col.onUpdate
        options.onChunk = col.onChunk
    options.onResult = col.onResult
    loop = asyncio.get_running_loop()
    started = loop.time()
    handle = start_stream(options)
    col.handle = handle
    out: dict[str, Any] = {"rejected": None, "resolved": None, **batches}
    try:
        resolved = await handle.result
        out["resolved"] = _from_js(resolved)
    except JsException as exc:
        out["rejected"] = str(exc)
    out["elapsed"] = loop.time() - started
    for proxy in proxies:
        proxy.destroy()
    out.update(json.loads(col.dump()))
    out["handle_keys"] = sorted(js.Object.keys(handle).to_py())
    return out


async def linked_signal(*, chunks_b64: list[str]) -> dict[str, Any]:
    """One attempt linked to a recording signal (tests/bridge_runner.mjs): the abort listeners added to it and removed
    from it, and the outcome."""
    recording = js.bridgeRecordingSignal()
    out = await run_stream(chunks_b64=chunks_b64, signal=recording.signal)
    return {"log": _from_js(recording.log), "outcome": out["result"]["outcome"]}


async def cancel_after_a_deadline() -> dict[str, Any]:
    """A linked signal aborted by the page just after a deadline stopped the request: the stand-in body (two events,
    then nothing) aborts the signal from its ``cancel``, which the deadline's stop calls, before the read loop has
    seen the stop. The outcome, the stand-in's state and whether the signal was aborted."""
    external = js.AbortController.new()
    fake = _fetch_from([CHAT_HEAD], stall=True, onCancel=external.abort.bind(external))
    stream = BrowserStream("http://127.0.0.1:9/unused", "openai-chat", fetch=fake, signal=external.signal,
                           deadlines=Deadlines(idle=0.2))
    result = await stream.run()
    return {"outcome": [result.outcome.value, result.stage], "fake": fake.state.to_py(),
            "aborted": bool(external.signal.aborted)}


async def stop_between_read_and_feed(*, chunks_b64: list[str], stop_after: int) -> dict[str, Any]:
    """The pull loop, with a linked signal aborted in a microtask just after chunk ``stop_after`` was handed to the
    read (tests/bridge_runner.mjs ``onPulled``): after the read has its chunk, before Python resumes to feed it. The
    updates, the result's text and outcome, and the stand-in's state."""
    external = js.AbortController.new()

    def pulled(n: int) -> None:
        if n == stop_after:
            external.abort()

    proxy = create_proxy(pulled)
    fake = _fetch_from(_decoded(chunks_b64), onPulled=proxy)
    updates: list[dict[str, Any]] = []
    try:
        stream = BrowserStream("http://127.0.0.1:9/unused", "openai-chat", fetch=fake, signal=external.signal,
                               fast=False)
        result = await stream.run(lambda update: updates.append(update.to_dict()))
    finally:
        proxy.destroy()
    return {"updates": updates, "text": result.text, "outcome": [result.outcome.value, result.stage],
            "events": result.telemetry.complete_sse_event_count, "fake": fake.state.to_py()}


async def js_objects_as_options(*, chunks_b64: list[str], aborted: bool) -> dict[str, Any]:
    """start_stream() given a JS ``fetch`` (the stand-in, answering with these chunks) and a JS ``signal`` (aborted
    before the call, or not): the result, and the stand-in's calls."""
    fake = _fetch_from(_decoded(chunks_b64))
    controller = js.AbortController.new()
    if aborted:
        controller.abort()
    options = js.JSON.parse(json.dumps({"url": "http://127.0.0.1:9/unused", "route": "openai-chat", "fast": False}))
    options.fetch = fake
    options.signal = controller.signal
    resolved = await start_stream(options).result
    return {"resolved": _from_js(resolved), "calls": fake.state.calls}


async def timer_wakeups(**kwargs: Any) -> dict[str, Any]:
    """``run_stream(**kwargs)``, counting the timers set (``pyodide.ffi.wrappers.set_timeout``) and how often the
    deadline timer fired (``BrowserStream._on_timer``)."""
    import pyodide.ffi.wrappers as wrappers

    with _counting(BrowserStream, "_on_timer") as fired, _counting(wrappers, "set_timeout") as armed:
        out = await run_stream(**kwargs)
    return {**out, "fired": len(fired), "armed": len(armed)}


async def failing_task(*, how: str) -> dict[str, Any]:
    """start_stream() whose attempt itself fails (a bug in webclient, simulated by replacing ``BrowserStream._run``
    for this call): ``raise`` raises a RuntimeError, ``cancel`` ends the task cancelled. How its result settles, and
    what the event loop's exception handler was given meanwhile (the task's done callback must raise nothing)."""

    async def broken(self: BrowserStream) -> Any:
        await asyncio.sleep(0)
        if how == "cancel":
            raise asyncio.CancelledError
        raise RuntimeError("a bug")

    loop = asyncio.get_running_loop()
    reported: list[str] = []
    handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: reported.append(str(context.get("message"))))
    try:
        with _replaced(BrowserStream, "_run", broken):
            options = js.JSON.parse(json.dumps({"url": "http://127.0.0.1:9/unused", "route": "openai-chat"}))
            handle = start_stream(options)
            try:
                resolved = await asyncio.wait_for(handle.result, 10)
            except JsException as exc:
                await asyncio.sleep(0.01)  # (anything the task's done callback raised has been reported by now)
                return {"name": exc.name, "message": exc.message, "reported": reported}
            except TimeoutError:
                return {"name": None, "message": "never settled", "reported": reported}
            return {"name": None, "message": f"resolved: {_from_js(resolved)}", "reported": reported}
    finally:
        loop.set_exception_handler(handler)


async def every_option(*, url: str) -> dict[str, Any]:
    """start_stream() given every option it takes at once, every deadline key included (JS values where a page gives
    them: a signal, a fetch, the five callbacks): the resolved result (or the rejection) and the options' keys."""
    noop = js.Function.new("")
    spec = {"url": url, "route": "openai-chat", "body": {"model": "m", "stream": True}, "headers": {"x-tag": "t"},
            "method": "POST", "deadlines": {"connect_ms": 10000, "first_event_ms": 30000, "idle_ms": 30000,
                                           "total_ms": 60000, "terminal_grace_ms": 1000},
            "tools": {}, "limits": {}, "fast": False, "attempt": 1,
            "idempotent": False, "resume": {"max_resumes": 0}, "keep_unknown_items": False,
            "include_reasoning_content": False, "accepted_stop_reasons": ["stop"], "utf8_errors": "strict",
            "request_id": "r-1", "model_alias": "m-1"}
    options = js.JSON.parse(json.dumps(spec))
    options.signal = js.AbortController.new().signal
    options.fetch = js.fetch
    for name in ("onUpdate", "onUpdates", "onResult", "onChunk", "onChunks"):
        setattr(options, name, noop)
    keys = sorted(js.Object.keys(options).to_py())
    try:
        resolved = await start_stream(options).result
    except JsException as exc:
        return {"keys": keys, "rejected": exc.message, "resolved": None}
    return {"keys": keys, "rejected": None, "resolved": _from_js(resolved)}


async def usage_error(*, options: dict[str, Any]) -> dict[str, Any]:
    """start_stream with bad options: how its result rejects (nothing may be thrown at once)."""
    handle = start_stream(to_js(options, dict_converter=js.Object.fromEntries))
    try:
        await handle.result
    except JsException as exc:
        return {"name": exc.name, "message": exc.message, "handle_keys": sorted(js.Object.keys(handle).to_py())}
    return {"name": None}


async def registered_pump(*, url: str) -> dict[str, Any]:
    """Register the kit's static pump as PUMP_MODULE; run one fast attempt; unregister (the eval pump is back)."""
    with _registered(js.bridgePump) as kind:
        calls = js.bridgePumpCalls
        out = await run_stream(url=url, fast=True)
        return {"kind": kind, "pump_calls": js.bridgePumpCalls - calls, "result": out["comparable"]}


async def leak_check(*, urls: dict[str, str], rounds: int = 3) -> dict[str, Any]:
    """Run every flavour of attempt ``rounds`` times and report the FFI counters before and after."""
    idle = {"idle": 0.2, "first_event": 0.2}

    async def one_round() -> list[str]:
        outcomes = []
        for fast in (False, True):
            for kw in ({"url": urls["ok"]}, {"url": urls["stall"], "deadlines": idle},
                       {"url": urls["stall"], "cancel_after": 1}, {"url": urls["stall"], "cancel_after": 1,
                                                                   "cancel_how": "task"},
                       {"url": urls["stall"], "cancel_after": 1, "cancel_how": "break"},
                       {"url": urls["bad"]}):
                r = await run_stream(fast=fast, **kw)
                outcomes.append(r["result"]["outcome"])
            for cancel_after in (0, 1):
                r2 = await js_entry_point(url=urls["ok"] if not cancel_after else urls["stall"], fast=fast,
                                          cancel_after=cancel_after)
                outcomes.append(r2["resolved"]["outcome"])
            # a resumed stream, a finished answer behind a held socket, a cancel in the pause before a resume
            for kw in ({"url": urls["resume"], "route": "openai-responses", "resume": {"max_resumes": 1, "delay": 0}},
                       {"url": urls["hold"], "deadlines": {"terminal_grace": 0.05}},
                       {"url": urls["resume"], "route": "openai-responses", "cancel_at": 0.1,
                        "resume": {"max_resumes": 1, "delay": 20}}):
                r = await run_stream(fast=fast, **kw)
                outcomes.append(r["result"]["outcome"])
        return outcomes

    warm = await one_round()  # first use compiles the pump, imports modules, grows caches
    await asyncio.sleep(0.05)
    before = counters()
    outcomes = []
    for _ in range(rounds):
        outcomes += await one_round()
    await asyncio.sleep(0.05)
    after = counters()
    return {"before": before, "after": after, "warm": warm, "outcomes": outcomes,
            "unhandled": int(getattr(js, "bridgeUnhandled", 0) or 0)}
