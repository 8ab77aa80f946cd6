"""webclient.httpx against a real local HTTP server (tests/sse_test_server.py), sync and async.

The transports are httpx's real ones; the only addition is a probe that records whether each response stream was
closed, so "the response is closed on every exit path" is observed, not assumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.bridge_streams import (
    CHAT,
    CHAT_HEAD,
    COMMENT,
    ID_CHAT_EVENTS,
    ID_CHAT_PARTS,
    TEXT_PARTS,
    TOOL,
    comparable,
    expected,
)
from tests.resume_streams import (
    USAGE,
    USAGE_ID,
    USAGE_K,
    USAGE_N,
    answer_view,
    cut_inside,
    events_of,
    from_event,
    last_number_before,
    numbered,
    resume_path,
    uninterrupted_view,
)
from tests.route_fixtures import merge_deltas
from tests.sse_test_server import Abort, Pause, Script, Send, SSETestServer, Stall, sse_script
from webclient import Committed, Deadlines, Failed, ResumePoint, ResumePolicy, StreamResult, UsageError

# httpx (with anyio, which it brings) is a host-only peer (absent inside Pyodide, where this module is then
# skipped at collection).
httpx = pytest.importorskip("httpx")
anyio = pytest.importorskip("anyio")
webclient_httpx = pytest.importorskip("webclient.httpx")
Attempt, arun, run = webclient_httpx.Attempt, webclient_httpx.arun, webclient_httpx.run

pytestmark = pytest.mark.host

DISCONNECT_WITHIN_S = 10.0
FLAVOURS = ["sync", "async"]


@dataclass
class Probe:
    """Counts response streams opened and closed by the transport it wraps."""

    opened: int = 0
    closed: int = 0

    def all_closed(self) -> bool:
        return self.opened == self.closed


class _SyncStream(httpx.SyncByteStream):
    def __init__(self, inner: Any, probe: Probe) -> None:
        self._inner, self._probe = inner, probe

    def __iter__(self) -> Iterator[bytes]:
        yield from self._inner

    def close(self) -> None:
        self._probe.closed += 1
        self._inner.close()


class _AsyncStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any, probe: Probe) -> None:
        self._inner, self._probe = inner, probe

    async def __aiter__(self) -> Any:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        self._probe.closed += 1
        await self._inner.aclose()


class ProbedTransport(httpx.HTTPTransport):
    def __init__(self, probe: Probe) -> None:
        super().__init__()
        self.probe = probe

    def handle_request(self, request: Any) -> Any:
        response = super().handle_request(request)
        self.probe.opened += 1
        response.stream = _SyncStream(response.stream, self.probe)
        return response


class ProbedAsyncTransport(httpx.AsyncHTTPTransport):
    def __init__(self, probe: Probe) -> None:
        super().__init__()
        self.probe = probe

    async def handle_async_request(self, request: Any) -> Any:
        response = await super().handle_async_request(request)
        self.probe.opened += 1
        response.stream = _AsyncStream(response.stream, self.probe)
        return response


def run_async(main: Any) -> Any:
    """``asyncio.run(main())`` in a fresh thread: immune to an event loop another test module left running in
    this thread (Playwright's sync API, held by a session-scoped fixture, keeps one running)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(main())
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


@dataclass
class Run:
    """What one attempt produced."""

    updates: list[Any] = field(default_factory=list)
    result: StreamResult | None = None
    elapsed: float = 0.0
    raised: str | None = None
    probe: Probe = field(default_factory=Probe)

    @property
    def outcome(self) -> tuple[str, str | None]:
        assert self.result is not None
        return self.result.outcome.value, self.result.stage

    def text(self) -> str:
        return "".join(u.text for u in self.updates if u.to_dict()["kind"] == "text_delta")


def drive(flavour: str, url: str, *, cancel_after: int | None = None, how: str = "method",
          **options: Any) -> Run:
    """Run one Attempt with a real client of the given flavour; cancel after ``cancel_after`` updates by
    ``how``: ``method`` (attempt.cancel()), ``break`` (leave the loop), ``raise`` (an exception in the loop),
    ``thread`` (sync: cancel() from another thread 0.2 s after the first update, while the loop is blocked in
    a read), ``task`` (async: cancel the task), ``pause`` (async: cancel() from the event loop 0.3 s after the
    start, while the attempt waits to resume)."""
    out = Run()
    options.setdefault("json", {"model": "m", "stream": True})
    attempt = Attempt(options.pop("route", "openai-chat"), url, **options)
    started = time.monotonic()
    first_update = threading.Event()

    def consume(update: Any) -> bool:
        out.updates.append(update)
        first_update.set()
        if cancel_after is not None and len(out.updates) == cancel_after:
            if how == "method":
                attempt.cancel()
            elif how == "break":
                return True
            elif how == "raise":
                raise LookupError("caller bug")
        return False

    if flavour == "sync":
        if how == "thread":
            def cancel_later() -> None:
                if first_update.wait(10):
                    time.sleep(0.2)
                    attempt.cancel()
            threading.Thread(target=cancel_later, daemon=True).start()
        with httpx.Client(transport=ProbedTransport(out.probe)) as client:
            try:
                for update in attempt.updates(client):
                    if consume(update):
                        break
            except LookupError:
                out.raised = "LookupError"
    else:
        async def main() -> None:
            if how == "pause":
                asyncio.get_running_loop().call_later(0.3, attempt.cancel)
            async with httpx.AsyncClient(transport=ProbedAsyncTransport(out.probe)) as client:
                async def loop() -> None:
                    async with contextlib.aclosing(attempt.aupdates(client)) as updates:
                        async for update in updates:
                            if consume(update):
                                break
                            if how == "task" and cancel_after is not None and len(out.updates) == cancel_after:
                                asyncio.get_running_loop().call_soon(task.cancel)
                task = asyncio.ensure_future(loop())
                try:
                    await task
                except asyncio.CancelledError:
                    out.raised = "CancelledError"
                except LookupError:
                    out.raised = "LookupError"
        run_async(main)
    out.elapsed = time.monotonic() - started
    out.result = attempt.result
    return out


@pytest.fixture(scope="module")
def server() -> Iterator[SSETestServer]:
    with SSETestServer() as srv:
        yield srv


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_slow_stream_commits_with_the_request_posted_as_json_and_the_response_closed(
        server: SSETestServer, flavour: str) -> None:
    url = server.url(sse_script(TOOL, chunk_size=61, delay=0.01))

    out = drive(flavour, url, headers={"X-Tag": "t1"}, request_id="req-1")

    assert out.result is not None and comparable(out.result.to_dict()) == {
        **expected(TOOL), "telemetry": {**expected(TOOL)["telemetry"], "request_id": "req-1"}}
    assert isinstance(out.updates[-1], Committed) and out.updates[-1].result is out.result
    assert not any(isinstance(u, Committed | Failed) for u in out.updates[:-1])
    telemetry = out.result.telemetry
    assert telemetry.duration_ms is not None and telemetry.duration_ms > 0 and telemetry.observed_at
    assert telemetry.duration_ms == round(telemetry.duration_ms, 3)  # milliseconds to the microsecond, no finer
    assert telemetry.duration_ms <= out.elapsed * 1000.0  # the attempt's own time, within the caller's
    exchange = server.exchange(url)
    assert exchange.method == "POST" and exchange.request_body == b'{"model":"m","stream":true}'
    assert exchange.request_headers["accept"] == "text/event-stream" and exchange.request_headers["x-tag"] == "t1"
    assert out.probe.opened == 1 and out.probe.all_closed()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_one_byte_network_chunks_give_the_whole_input_result(server: SSETestServer, flavour: str) -> None:
    url = server.url(sse_script(CHAT, chunk_size=1))

    out = drive(flavour, url)

    assert out.result is not None and comparable(out.result.to_dict()) == expected(CHAT)
    assert out.text() == "".join(TEXT_PARTS)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(("script", "stage"), [
    (Script([Send(b"<html>Bad gateway</html>"), Stall(20)], status=502, content_type="text/html"), "status"),
    (Script([Send(b'{"error": "x"}'), Stall(20)], content_type="application/json"), "media_type"),
], ids=["status", "media_type"])
def test_gate_refusal_closes_the_response_unread(server: SSETestServer, flavour: str, script: Script,
                                                 stage: str) -> None:
    url = server.url(script)

    out = drive(flavour, url)

    assert out.outcome == ("protocol_error", stage)
    assert out.result is not None and out.result.telemetry.bytes_received == 0
    assert [type(u) for u in out.updates] == [Failed]
    assert out.probe.all_closed() and server.exchange(url).disconnected.wait(DISCONNECT_WITHIN_S)


class _SocketlessTransport(httpx.HTTPTransport):
    """A transport that shows the sync driver no socket (neither the connect trace nor ``network_stream``), as a
    custom or mocking transport may: its watchdog cannot shut a stalled read down."""

    def handle_request(self, request: Any) -> Any:
        request.extensions.pop("trace", None)
        response = super().handle_request(request)
        response.extensions.pop("network_stream", None)
        return response


def test_without_a_socket_the_sync_driver_hands_the_idle_deadline_to_httpx_as_its_read_timeout(
        server: SSETestServer) -> None:
    url = server.url(Script([Send(CHAT_HEAD), Stall(6)]))
    attempt = Attempt("openai-chat", url, json={"model": "m", "stream": True}, deadlines=Deadlines(idle=0.3))
    started = time.monotonic()
    with httpx.Client(transport=_SocketlessTransport()) as client:
        updates = list(attempt.updates(client))
    elapsed = time.monotonic() - started
    assert attempt.result is not None and (attempt.result.outcome.value, attempt.result.stage) == ("timeout", "idle")
    assert isinstance(updates[-1], Failed) and elapsed < 4  # (without the read timeout: the stall's 6 s, then EOF)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_idle_timeout_closes_the_connection_the_server_sees_it(server: SSETestServer, flavour: str) -> None:
    url = server.url(Script([Send(CHAT_HEAD), Stall(30)]))

    out = drive(flavour, url, deadlines=Deadlines(idle=0.3))

    assert out.outcome == ("timeout", "idle")
    assert out.text() == "".join(TEXT_PARTS[:2])
    assert 0.3 <= out.elapsed < 15
    assert out.probe.all_closed()
    exchange = server.exchange(url)
    assert exchange.disconnected.wait(DISCONNECT_WITHIN_S) and not exchange.finished.is_set()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_keepalive_comments_do_not_count_as_a_first_event(server: SSETestServer, flavour: str) -> None:
    url = server.url(Script([s for _ in range(30) for s in (Send(COMMENT), Pause(0.1))]))

    out = drive(flavour, url, deadlines=Deadlines(first_event=0.5))

    assert out.outcome == ("timeout", "first_event")
    assert out.elapsed < 15 and server.exchange(url).disconnected.wait(DISCONNECT_WITHIN_S)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_keepalive_comments_rearm_the_idle_deadline(server: SSETestServer, flavour: str) -> None:
    pings = [s for _ in range(15) for s in (Pause(0.1), Send(COMMENT))]
    url = server.url(Script([Send(CHAT_HEAD), *pings, Send(CHAT[len(CHAT_HEAD):])]))

    out = drive(flavour, url, deadlines=Deadlines(idle=0.6))

    assert out.outcome == ("complete", None)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_anthropic_pings_rearm_idle_but_do_not_count_as_a_first_event(server: SSETestServer, flavour: str) -> None:
    ping = b'event: ping\ndata: {"type": "ping"}\n\n'
    url = server.url(Script([s for _ in range(15) for s in (Send(ping), Pause(0.1))]))

    out = drive(flavour, url, route="anthropic-messages", deadlines=Deadlines(first_event=0.5, idle=5))

    assert out.outcome == ("timeout", "first_event")
    assert out.elapsed < 1.4 and server.exchange(url).disconnected.wait(DISCONNECT_WITHIN_S)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_connect_deadline_covers_a_server_that_never_sends_headers(server: SSETestServer, flavour: str) -> None:
    url = server.url(Script([Send(CHAT)], head_delay=20))

    out = drive(flavour, url, deadlines=Deadlines(connect=0.3))

    assert out.outcome == ("timeout", "connect")
    assert out.result is not None and out.result.http_status is None
    assert out.elapsed < 15 and server.exchange(url).disconnected.wait(DISCONNECT_WITHIN_S)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_total_deadline_stops_a_stream_that_keeps_producing(server: SSETestServer, flavour: str) -> None:
    url = server.url(Script([s for _ in range(40) for s in (Send(CHAT_HEAD), Pause(0.05))]))

    out = drive(flavour, url, deadlines=Deadlines(total=0.5, idle=5))

    assert out.outcome == ("timeout", "total")
    assert 0.5 <= out.elapsed < 15 and out.probe.all_closed()
    assert server.exchange(url).disconnected.wait(DISCONNECT_WITHIN_S)


@pytest.mark.parametrize(("flavour", "how"), [("sync", "method"), ("sync", "break"), ("sync", "raise"),
                                              ("sync", "thread"), ("async", "method"), ("async", "break"),
                                              ("async", "raise"), ("async", "task")])
def test_cancellation_mid_stream_ends_cancelled_closes_the_response_and_the_server_sees_it(
        server: SSETestServer, flavour: str, how: str) -> None:
    url = server.url(Script([Send(CHAT_HEAD), Stall(30)]))

    out = drive(flavour, url, cancel_after=None if how == "thread" else 1, how=how)

    assert out.outcome == ("cancelled", "caller")
    assert out.raised == {"raise": "LookupError", "task": "CancelledError"}.get(how)
    assert out.elapsed < 15 and out.probe.all_closed()
    exchange = server.exchange(url)
    assert exchange.disconnected.wait(DISCONNECT_WITHIN_S) and not exchange.finished.is_set()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_clean_eof_before_the_terminal_event_is_truncated(server: SSETestServer, flavour: str) -> None:
    url = server.url(sse_script(CHAT_HEAD, chunk_size=16, delay=0.01))

    out = drive(flavour, url)

    assert out.outcome == ("truncated", "eof")
    assert out.result is not None and not out.result.committed and out.result.text == "".join(TEXT_PARTS[:2])
    assert isinstance(out.updates[-1], Failed) and out.probe.all_closed()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_the_telemetry_records_the_retry_advice_for_the_attempt(server: SSETestServer, flavour: str) -> None:
    cut = server.url(Script([Send(CHAT_HEAD)]))
    whole = server.url(Script([Send(CHAT)]))

    def decision(url: str, **options: Any) -> object:
        result = drive(flavour, url, **options).result
        assert result is not None
        return result.telemetry.retry_decision

    assert decision(whole) == "do_not_retry"
    assert decision(cut) == "surface_to_user"  # not idempotent: a person decides
    assert decision(cut, idempotent=True) == "retry_after_backoff"
    assert decision(cut, idempotent=True, attempt=3) == "surface_to_user"  # attempts used up


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_connection_reset_mid_stream_is_truncated_network(server: SSETestServer, flavour: str) -> None:
    url = server.url(Script([Send(CHAT_HEAD), Pause(0.1), Abort()], connection_close=False))

    out = drive(flavour, url)

    assert out.outcome == ("truncated", "network")
    assert out.text() == "".join(TEXT_PARTS[:2]) and out.probe.all_closed()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_refused_connection_is_truncated_network_without_a_status(flavour: str) -> None:
    out = drive(flavour, f"http://127.0.0.1:{closed_port()}/v1/chat/completions")

    assert out.outcome == ("truncated", "network")
    assert out.result is not None and out.result.http_status is None and out.probe.opened == 0


def test_run_and_arun_return_the_result(server: SSETestServer) -> None:
    url = server.url(sse_script(CHAT, chunk_size=50))

    with httpx.Client() as client:
        sync_result = run(client, "openai-chat", url, json={"stream": True})

    async def main() -> StreamResult:
        async with httpx.AsyncClient() as client:
            return await arun(client, "openai-chat", url, content=b'{"stream": true}')

    async_result = run_async(main)
    assert comparable(sync_result.to_dict()) == comparable(async_result.to_dict()) == expected(CHAT)
    assert server.exchange(url, 1).request_body == b'{"stream": true}'


def test_an_attempt_runs_once_and_rejects_two_bodies(server: SSETestServer) -> None:
    url = server.url(sse_script(CHAT))
    attempt = Attempt("openai-chat", url)
    with httpx.Client() as client:
        list(attempt.updates(client))
        with pytest.raises(UsageError):
            list(attempt.updates(client))
    with pytest.raises(UsageError):
        Attempt("openai-chat", url, json={}, content=b"{}")
    with pytest.raises(UsageError):
        Attempt("no-such-route", url)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_after_the_headers_a_pause_longer_than_the_connect_budget_is_fine(server: SSETestServer,
                                                                         flavour: str) -> None:
    url = server.url(Script([Send(CHAT_HEAD), Pause(0.6), Send(CHAT[len(CHAT_HEAD):])]))

    out = drive(flavour, url, deadlines=Deadlines(connect=0.2, first_event=2, idle=2))

    assert out.outcome == ("complete", None)


# -- resuming a cut stream, Last-Event-ID reconnects, the terminal grace ----------------------------------------

RESUME = ResumePolicy(max_resumes=3, delay=0)


def uninterrupted_updates(data: bytes) -> list[dict[str, Any]]:
    return uninterrupted_view(data)[1]  # type: ignore[return-value]


def merged(out: Run) -> list[dict[str, Any]]:
    return merge_deltas([u.to_dict() for u in out.updates[:-1]])



@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("cut", ["eof", "reset"])
def test_a_cut_responses_stream_resumes_with_a_get_after_the_last_number_to_the_uninterrupted_result(
        server: SSETestServer, flavour: str, cut: str) -> None:
    ending = [Abort()] if cut == "reset" else []
    url = server.url(Script([Send(cut_inside(USAGE, USAGE_K)), Pause(0.05), *ending], connection_close=cut == "eof"))
    again = server.add(sse_script(from_event(USAGE, USAGE_K - 2), chunk_size=300), path=resume_path(url))

    out = drive(flavour, url, route="openai-responses", resume=RESUME,
                headers={"Authorization": "Bearer k-1", "X-Tag": "t1", "Content-Type": "application/json"},
                json={"model": "m", "background": True})

    assert out.result is not None and out.result.committed
    assert answer_view(out.result.to_dict()) == uninterrupted_view(USAGE)[0]
    assert merged(out) == uninterrupted_updates(USAGE)
    assert [type(u) for u in out.updates].count(Committed) == 1 and isinstance(out.updates[-1], Committed)
    first, resume = server.exchange(url), server.exchange(again)
    assert first.method == "POST" and first.request_body == b'{"model":"m","background":true}'
    assert (resume.method, resume.query, resume.request_body) == (
        "GET", f"stream=true&starting_after={USAGE_N}", b"")
    headers = resume.request_headers
    assert (headers["authorization"], headers["x-tag"], headers["accept"]) == ("Bearer k-1", "t1", "text/event-stream")
    assert "content-type" not in headers and "content-length" not in headers and "last-event-id" not in headers
    assert server.requests_to(url) == 1 and server.requests_to(again) == 1 and out.probe.all_closed()
    # The sync driver's watchdog of each request (a thread) is stopped and joined when the request is done with:
    # the first one's when the resume starts, the second one's when the attempt ends.
    assert not [t for t in threading.enumerate() if t.name == "webclient-httpx-watchdog" and t.is_alive()]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_resume_cut_again_and_one_with_a_gap_are_resumed_again(server: SSETestServer, flavour: str) -> None:
    k2 = numbered(USAGE)[10]
    url = server.url(Script([Send(cut_inside(USAGE, USAGE_K))]))
    again = server.add(
        Script([Send(from_event(USAGE, USAGE_K - 1, k2) + events_of(USAGE)[k2][:40])]),  # overlap, cut again
        Script([Send(from_event(USAGE, k2 + 1)), Stall(20)]),  # skips event k2: a gap
        sse_script(from_event(USAGE, k2 - 3)),  # overlap of three
        path=resume_path(url))

    out = drive(flavour, url, route="openai-responses", resume=RESUME)

    assert out.result is not None and answer_view(out.result.to_dict()) == uninterrupted_view(USAGE)[0]
    assert merged(out) == uninterrupted_updates(USAGE)
    n2 = last_number_before(USAGE, k2)
    assert [server.exchange(again, i).query for i in range(3)] == [
        f"stream=true&starting_after={USAGE_N}", f"stream=true&starting_after={n2}",
        f"stream=true&starting_after={n2}"]
    assert server.exchange(again, 1).disconnected.wait(DISCONNECT_WITHIN_S)  # the gap's response was closed


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_resumes_stop_at_the_callers_maximum_with_the_resume_point_in_the_result(
        server: SSETestServer, flavour: str) -> None:
    url = server.url(Script([Send(cut_inside(USAGE, USAGE_K))]))
    again = server.add(Script([Send(from_event(USAGE, USAGE_K - 1, USAGE_K + 1))]), path=resume_path(url))

    out = drive(flavour, url, route="openai-responses", resume=ResumePolicy(max_resumes=2, delay=0.05))

    assert out.outcome == ("truncated", "eof") and server.requests_to(again) == 2
    assert out.result is not None and out.result.to_dict()["resume"] == {
        "response_id": USAGE_ID, "sequence_number": last_number_before(USAGE, USAGE_K + 1)}
    assert out.elapsed >= 0.05 + 0.1  # the second resume waited twice the first one's delay


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_without_a_resume_policy_a_cut_stream_is_not_resumed(server: SSETestServer, flavour: str) -> None:
    url = server.url(Script([Send(cut_inside(USAGE, USAGE_K))]))
    again = server.add(sse_script(from_event(USAGE, USAGE_K)), path=resume_path(url))

    out = drive(flavour, url, route="openai-responses")

    assert out.outcome == ("truncated", "eof") and server.requests_to(again) == 0
    assert out.result is not None and out.result.resume == ResumePoint(USAGE_ID, USAGE_N)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_cancelling_during_the_pause_before_a_resume_ends_cancelled_without_the_request(
        server: SSETestServer, flavour: str) -> None:
    url = server.url(Script([Send(cut_inside(USAGE, USAGE_K))]))
    again = server.add(sse_script(from_event(USAGE, USAGE_K)), path=resume_path(url))

    out = drive(flavour, url, route="openai-responses", resume=ResumePolicy(max_resumes=1, delay=30),
                cancel_after=None, how="thread" if flavour == "sync" else "pause")

    assert out.outcome == ("cancelled", "caller") and out.elapsed < 15 and server.requests_to(again) == 0
    assert out.result is not None and out.result.resume == ResumePoint(USAGE_ID, USAGE_N)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_last_event_id_reconnect_repeats_the_request_with_the_header_and_continues(
        server: SSETestServer, flavour: str) -> None:
    events = ID_CHAT_EVENTS
    url = server.url(Script([Send(b"retry: 50\n" + b"".join(events[:2]) + events[2][:11])]),
                     sse_script(b"".join(events[2:]), chunk_size=7))

    out = drive(flavour, url, resume=ResumePolicy(max_resumes=1, last_event_id=True), json={"q": 1},
                headers={"X-Tag": "t"})

    assert out.outcome == ("complete", None) and out.result is not None
    assert out.result.text == "".join(ID_CHAT_PARTS) == out.text()
    first, second = server.exchange(url, 0), server.exchange(url, 1)
    assert "last-event-id" not in first.request_headers
    assert second.request_headers["last-event-id"] == "2" and second.request_headers["x-tag"] == "t"
    assert second.method == "POST" and second.request_body == first.request_body == b'{"q":1}'
    assert second.started_at - first.started_at >= 0.05  # the server's retry: time


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_without_opting_in_a_stream_with_ids_is_not_reconnected(server: SSETestServer, flavour: str) -> None:
    url = server.url(Script([Send(b"".join(ID_CHAT_EVENTS[:2]))]), sse_script(b"".join(ID_CHAT_EVENTS[2:])))

    out = drive(flavour, url, resume=ResumePolicy(max_resumes=2))

    assert out.outcome == ("truncated", "eof") and server.requests_to(url) == 1


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_finished_answer_behind_a_socket_holding_proxy_ends_complete_after_the_grace_and_closes(
        server: SSETestServer, flavour: str) -> None:
    url = server.url(Script([Send(CHAT), Stall(30)]))

    out = drive(flavour, url, deadlines=Deadlines(idle=20, terminal_grace=0.3))

    assert out.outcome == ("complete", None) and 0.3 <= out.elapsed < 10
    assert out.result is not None and comparable(out.result.to_dict()) == expected(CHAT)
    exchange = server.exchange(url)
    assert exchange.disconnected.wait(DISCONNECT_WITHIN_S) and not exchange.finished.is_set()
    assert out.probe.all_closed()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_with_the_default_grace_a_held_socket_no_longer_turns_a_finished_answer_into_a_timeout(
        server: SSETestServer, flavour: str) -> None:
    url = server.url(Script([Send(USAGE), Stall(30)]))

    out = drive(flavour, url, route="openai-responses", deadlines=Deadlines(idle=8))

    assert out.outcome == ("complete", None) and out.elapsed < 6
    assert server.exchange(url).disconnected.wait(DISCONNECT_WITHIN_S)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_without_a_grace_a_held_socket_still_times_out(server: SSETestServer, flavour: str) -> None:
    url = server.url(Script([Send(CHAT), Stall(30)]))

    out = drive(flavour, url, deadlines=Deadlines(idle=0.4, terminal_grace=None))

    assert out.outcome == ("timeout", "idle")


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(("tail", "outcome"), [
    (CHAT_HEAD[:30], ("protocol_error", "after_terminal")),  # more data (an event) after the terminal
    (b"data: {", ("timeout", "idle")),  # a pending line: never complete
    (b"data: {}\n", ("timeout", "idle")),  # a pending event: never complete
    (b": still here\n\n", ("complete", None)),  # a comment is no data
], ids=["event", "pending_line", "pending_event", "comment"])
def test_data_after_the_terminal_event_keeps_its_outcome_under_the_grace(
        server: SSETestServer, flavour: str, tail: bytes, outcome: tuple[str, str | None]) -> None:
    tail = CHAT_HEAD if tail == CHAT_HEAD[:30] else tail
    url = server.url(Script([Send(CHAT), Pause(0.05), Send(tail), Stall(30)]))

    out = drive(flavour, url, deadlines=Deadlines(idle=1.0, terminal_grace=0.5))

    assert out.outcome == outcome


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_an_unaccepted_stop_behind_a_held_socket_is_truncated_at_once(server: SSETestServer, flavour: str) -> None:
    length = CHAT.replace(b'"finish_reason":"stop"', b'"finish_reason":"length"')
    url = server.url(Script([Send(length), Stall(30)]))

    out = drive(flavour, url, deadlines=Deadlines(idle=20, terminal_grace=0.3))

    assert out.outcome == ("truncated", "stop_reason") and out.elapsed < 5


# -- timeouts raised by the client's own transport, before any deadline of ours ----------------------------

class _TimingOutBody(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body that gives ``chunks`` and then raises httpx's ``ReadTimeout`` (both flavours)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks
        raise httpx.ReadTimeout("read timed out")

    async def __aiter__(self) -> Any:
        for chunk in self._chunks:
            yield chunk
        raise httpx.ReadTimeout("read timed out")


def _timing_out(phase: str) -> Any:
    """A mock transport whose connect times out (``connect``), or whose body times out before any event
    (``first_event``) or after one (``idle``)."""
    def handler(request: Any) -> Any:
        if phase == "connect":
            raise httpx.ConnectTimeout("connect timed out", request=request)
        body = _TimingOutBody([] if phase == "first_event" else [CHAT_HEAD])
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)
    return httpx.MockTransport(handler)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("phase", ["connect", "first_event", "idle"])
def test_a_timeout_of_the_client_s_own_transport_is_a_timeout_of_the_phase_it_cut(flavour: str, phase: str) -> None:
    """No deadline of ours is set, so only the transport's timeout can end these attempts: it is ``timeout``
    with the stage of the phase (not a network failure, not ``truncated``), in both flavours."""
    transport = _timing_out(phase)
    options: dict[str, Any] = {"json": {"model": "m", "stream": True}}
    if flavour == "sync":
        with httpx.Client(transport=transport) as client:
            result = run(client, "openai-chat", "http://127.0.0.1:9/v1", **options)
    else:
        async def main() -> StreamResult:
            async with httpx.AsyncClient(transport=transport) as client:
                return await arun(client, "openai-chat", "http://127.0.0.1:9/v1", **options)  # type: ignore[no-any-return]
        result = run_async(main)
    assert (result.outcome.value, result.stage) == ("timeout", phase)
    assert result.http_status == (None if phase == "connect" else 200)
    assert result.text == ("" if phase != "idle" else "".join(TEXT_PARTS[:2]))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(("body", "outcome"), [
    (CHAT, ("cancelled", "caller")),
    (CHAT_HEAD + b'data: {"error": {"type": "server_error", "message": "m"}}\n\n', ("upstream_error", "error_object")),
], ids=["whole-answer", "answer-then-error"])
def test_a_cancel_while_handling_a_chunk_s_updates_ends_an_open_session_but_not_one_that_already_ended(
        server: SSETestServer, flavour: str, body: bytes, outcome: tuple[str, str]) -> None:
    """One chunk carries text and the stream's end; the caller cancels on its first update, before the final
    one. A complete answer is only decided at EOF, so the cancel ends the attempt; an in-stream error ended
    the session inside the chunk, before the cancel, and stays the outcome (with its retry advice)."""
    url = server.url(Script([Send(body), Stall(30)]))

    out = drive(flavour, url, cancel_after=1)

    assert out.outcome == outcome and out.elapsed < 15
    assert isinstance(out.updates[-1], Failed) and out.updates[-1].result is out.result


def test_a_cancel_from_another_thread_before_the_headers_stops_the_blocked_send_at_once(
        server: SSETestServer) -> None:
    """Sync, no deadlines: nothing but the watchdog (holding the socket from the connect trace) can unblock a
    send whose server delays its headers by 20 s."""
    url = server.url(Script([Send(CHAT)], head_delay=20))
    attempt = Attempt("openai-chat", url, json={"model": "m", "stream": True})
    timer = threading.Timer(0.3, attempt.cancel)
    started = time.monotonic()
    timer.start()
    try:
        with httpx.Client() as client:
            updates = list(attempt.updates(client))
    finally:
        timer.cancel()
    assert attempt.result is not None and (attempt.result.outcome.value, attempt.result.stage) == (
        "cancelled", "caller")
    assert isinstance(updates[-1], Failed) and time.monotonic() - started < 10
    assert server.exchange(url).disconnected.wait(DISCONNECT_WITHIN_S)


# -- the sync driver's watchdog --------------------------------------------------------------------------

def test_the_watchdog_wakes_for_an_earlier_deadline_and_keeps_the_first_reason() -> None:
    watchdog = webclient_httpx._Watchdog()
    try:
        # Named, so a thread dump shows whose thread it is.
        assert "webclient-httpx-watchdog" in {t.name for t in threading.enumerate()}
        watchdog.arm(time.monotonic() + 60)
        watchdog.arm(time.monotonic() + 0.1)  # earlier: the sleeping thread must wake to watch it
        deadline = time.monotonic() + 10
        while watchdog.reason is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert watchdog.reason is webclient_httpx._Stop.DEADLINE
        watchdog.cancel()  # a later reason does not replace the first
        assert watchdog.reason is webclient_httpx._Stop.DEADLINE
    finally:
        watchdog.close()
    closed = webclient_httpx._Watchdog()
    closed.close()
    closed.cancel()  # after close nothing fires
    assert closed.reason is None


def test_the_watchdog_reaches_the_socket_from_the_connect_trace_and_from_the_response(
        server: SSETestServer) -> None:
    """Both ways the sync driver finds the socket it shuts down (httpcore's ``connect_tcp`` trace event for a
    new connection, the response's ``network_stream`` for a pooled one) hold on the installed httpx."""
    url = server.url(Script([Send(CHAT)]))
    watchdog = webclient_httpx._Watchdog()
    try:
        with httpx.Client() as client:
            request = client.build_request("POST", url, json={}, extensions={"trace": watchdog.trace})
            response = client.send(request, stream=True)
            try:
                assert watchdog.has_socket
                assert isinstance(webclient_httpx._response_socket(response), socket.socket)
            finally:
                response.close()
    finally:
        watchdog.close()


class _Interrupt(BaseException):
    """Stands in for KeyboardInterrupt (which pytest itself would act on) arriving inside the attempt."""


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_an_interrupt_raised_inside_the_attempt_propagates_and_ends_it_cancelled_by_the_caller(
        flavour: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from webclient import StreamSession

    def interrupted(self: Any, data: bytes) -> Any:
        raise _Interrupt

    monkeypatch.setattr(StreamSession, "feed", interrupted)
    transport = httpx.MockTransport(lambda request: httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=CHAT))
    attempt = Attempt("openai-chat", "http://127.0.0.1:9/v1", json={"model": "m", "stream": True})
    with pytest.raises(_Interrupt):
        if flavour == "sync":
            with httpx.Client(transport=transport) as client:
                list(attempt.updates(client))
        else:
            async def main() -> None:
                async with httpx.AsyncClient(transport=transport) as client:
                    async for _ in attempt.aupdates(client):
                        pass
            run_async(main)
    assert attempt.result is not None
    assert (attempt.result.outcome.value, attempt.result.stage) == ("cancelled", "caller")


# -- the sync driver: a deadline or a cancel landing while httpx is returning ------------------------------
# A mock transport has no socket for the watchdog to shut down, so a deadline that passes inside it cannot cut
# the call short: the call returns normally, late, and the driver must still honour the reason the watchdog
# recorded meanwhile rather than use what the call returned.

class _LateBody(httpx.SyncByteStream):
    """``first``, then (after ``delay`` s) ``rest``: the late part arrives after the idle deadline."""

    def __init__(self, first: bytes, rest: bytes, delay: float) -> None:
        self._first, self._rest, self._delay = first, rest, delay

    def __iter__(self) -> Iterator[bytes]:
        yield self._first
        time.sleep(self._delay)
        yield self._rest


def _mock_attempt(handler: Any, deadlines: Deadlines | None = None, flavour: str = "sync") -> StreamResult:
    """One Chat Attempt of the given flavour through a mock transport answering with ``handler``; its result."""
    options: dict[str, Any] = {} if deadlines is None else {"deadlines": deadlines}
    attempt = Attempt("openai-chat", "http://127.0.0.1:9/v1", json={"model": "m", "stream": True}, **options)
    updates: list[Any] = []
    if flavour == "sync":
        with httpx.Client(transport=httpx.MockTransport(handler)) as client:
            updates = list(attempt.updates(client))
    else:
        async def main() -> None:
            async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
                updates.extend([update async for update in attempt.aupdates(client)])
        run_async(main)
    assert attempt.result is not None and updates[-1].result is attempt.result
    return attempt.result


def test_headers_that_arrive_after_the_connect_deadline_end_the_attempt_at_connect_unread() -> None:
    """The whole answer comes back, but only after the connect deadline has passed: the attempt is a timeout
    of the connect phase, with no status taken and no byte of the body read."""
    def handler(request: Any) -> Any:
        time.sleep(0.6)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=CHAT)

    result = _mock_attempt(handler, Deadlines(connect=0.15, first_event=None, idle=None, total=None))

    assert (result.outcome.value, result.stage) == ("timeout", "connect")
    assert result.http_status is None and result.text == "" and result.telemetry.bytes_received == 0


def test_a_chunk_that_arrives_after_the_idle_deadline_is_not_taken_even_when_it_would_finish_the_answer() -> None:
    """The first chunk, then the rest of a complete answer 0.6 s later, past the idle deadline: the late rest
    is not fed, so the answer does not commit; the attempt is an idle timeout with the first chunk's text."""
    def handler(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              stream=_LateBody(CHAT_HEAD, CHAT[len(CHAT_HEAD):], 0.6))

    result = _mock_attempt(handler, Deadlines(connect=None, first_event=None, idle=0.15, total=None))

    assert (result.outcome.value, result.stage) == ("timeout", "idle")
    assert not result.committed and result.text == "".join(TEXT_PARTS[:2])
    assert result.telemetry.bytes_received == len(CHAT_HEAD)


def test_a_cancel_landing_before_the_interrupt_is_installed_still_stops_the_send_at_once(
        server: SSETestServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """``cancel()`` from another thread can run after the driver checked for it and before it installed the
    watchdog as the interrupt; made deterministic here by cancelling while the watchdog is built. The driver
    must notice it then, or the send would block until the server's headers, 20 s later."""
    url = server.url(Script([Send(CHAT)], head_delay=20))
    attempt = Attempt("openai-chat", url, json={"model": "m", "stream": True})

    class CancelledWhileBuilt(webclient_httpx._Watchdog):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            attempt.cancel()

    monkeypatch.setattr(webclient_httpx, "_Watchdog", CancelledWhileBuilt)
    started = time.monotonic()
    with httpx.Client() as client:
        updates = list(attempt.updates(client))

    assert attempt.result is not None and (attempt.result.outcome.value, attempt.result.stage) == (
        "cancelled", "caller")
    assert isinstance(updates[-1], Failed) and time.monotonic() - started < 10


# -- the async driver: a cancel landing while a response is being closed ----------------------------------------
# Closing an httpx response is an await (the connection goes back to the pool or is shut down), so a caller's
# cancel can land in it. The driver shields every close: the transport always finishes closing, where an
# interrupted close would leave the connection half closed for good (httpx marks the response closed before it
# awaits the stream's close, so a second close does nothing).

class _SlowClosingBody(httpx.AsyncByteStream):
    """``body``, then (``stall``) nothing more until cancelled. Its close calls ``on_close`` as it starts, then
    takes a few event-loop turns; ``closed`` is set only when it has finished."""

    def __init__(self, body: bytes, stall: bool = False) -> None:
        self._body, self._stall = body, stall
        self.on_close: Any = None
        self.closed = False

    async def __aiter__(self) -> Any:
        yield self._body
        if self._stall:
            await anyio.sleep_forever()

    async def aclose(self) -> None:
        if self.on_close is not None:
            self.on_close()
        await anyio.sleep(0.05)
        self.closed = True


def _cancelled_during_a_close(route: str, bodies: list[_SlowClosingBody], closing: int | None,
                              **options: Any) -> StreamResult | None:
    """Serve ``bodies`` in turn to one async Attempt inside an anyio cancel scope; cancel that scope as body
    ``closing`` starts to close, or (``None``) 0.05 s after the first update, while the driver waits for a
    read. Returns the attempt's result."""
    served: list[_SlowClosingBody] = []

    def handler(request: Any) -> Any:
        served.append(bodies[len(served)])
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=served[-1])

    attempt = Attempt(route, "http://127.0.0.1:9/v1", json={"model": "m", "stream": True}, **options)

    async def main() -> None:
        first = None
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            with anyio.CancelScope() as outer:
                if closing is not None:
                    bodies[closing].on_close = outer.cancel
                async with contextlib.aclosing(attempt.aupdates(client)) as updates:
                    async for update in updates:
                        if closing is None and first is None:
                            asyncio.get_running_loop().call_later(0.05, outer.cancel)
                        first = update
            assert outer.cancel_called

    run_async(main)
    return attempt.result


def test_a_cancel_while_the_driver_waits_for_a_read_lets_the_response_finish_closing() -> None:
    body = _SlowClosingBody(CHAT_HEAD, stall=True)

    result = _cancelled_during_a_close("openai-chat", [body], None)

    assert body.closed
    assert result is not None and (result.outcome.value, result.stage) == ("cancelled", "caller")


def test_a_cancel_landing_in_the_close_after_the_answer_ended_lets_the_close_finish_and_keeps_the_commit() -> None:
    """The answer is whole but the body stays open (a socket-holding proxy): the driver closes it when the terminal
    grace has passed. (At a clean end of the body httpx closes the response itself, inside the driver's read.)"""
    body = _SlowClosingBody(CHAT, stall=True)

    result = _cancelled_during_a_close("openai-chat", [body], 0, deadlines=Deadlines(terminal_grace=0.05))

    assert body.closed
    assert result is not None and result.committed


def test_a_cancel_landing_in_the_close_of_a_response_with_a_gap_before_its_resume_lets_the_close_finish() -> None:
    """A numbered event is missing and the body stays open: the driver closes it before it asks for the rest."""
    k = numbered(USAGE)[10]
    gap = _SlowClosingBody(from_event(USAGE, 0, k) + from_event(USAGE, k + 1), stall=True)
    rest = _SlowClosingBody(from_event(USAGE, k - 3))

    result = _cancelled_during_a_close("openai-responses", [gap, rest], 0, resume=RESUME)

    assert gap.closed
    assert result is not None and (result.outcome.value, result.stage) == ("cancelled", "caller")


# -- found by a sampled mutation run of 2026-12-06 (60 mutants, seed 17) ----------------------------------------

class _BrokenBody(httpx.SyncByteStream, httpx.AsyncByteStream):
    """``head``, then the transport's read error (a connection reset, as httpx reports it)."""

    def __init__(self, head: bytes) -> None:
        self._head = head

    def __iter__(self) -> Iterator[bytes]:
        yield self._head
        raise httpx.ReadError("reset")

    async def __aiter__(self) -> Any:
        yield self._head
        raise httpx.ReadError("reset")


def _body(stream: Any) -> Any:
    """A mock transport's handler answering every request with an event stream whose body is ``stream``."""
    return lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_transport_read_error_mid_stream_is_truncated_network_with_the_text_so_far(flavour: str) -> None:
    result = _mock_attempt(_body(_BrokenBody(CHAT_HEAD)), flavour=flavour)
    assert (result.outcome.value, result.stage) == ("truncated", "network")
    assert result.text == "".join(TEXT_PARTS[:2])


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_with_every_deadline_off_an_attempt_runs_to_its_commit(flavour: str) -> None:
    result = _mock_attempt(_body(httpx.ByteStream(CHAT)),
                           Deadlines(connect=None, first_event=None, idle=None, total=None, terminal_grace=None),
                           flavour)
    assert result.committed and result.text == "".join(TEXT_PARTS)


# -- the deadline checks between reads (found by the same sample: no test reached them) ------------------------

#: Stands in a :class:`_ClockBody` between two chunks: the adapter's clock jumps this far ahead there.
_JUMP = 100.0


class _ClockBody(httpx.SyncByteStream, httpx.AsyncByteStream):
    """Its ``pieces`` in turn; a float among them moves ``clock`` that far ahead (at once, with no real wait), so
    that a deadline passes between two reads the transport answers without delay: the one case in which the
    driver's read returns data and the deadline decides only at the check after it."""

    def __init__(self, clock: list[float], pieces: list[bytes | float]) -> None:
        self._clock, self._pieces = clock, pieces

    def _chunks(self) -> Iterator[bytes]:
        for piece in self._pieces:
            if isinstance(piece, float):
                self._clock[0] += piece
            else:
                yield piece

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks()

    async def __aiter__(self) -> Any:
        for chunk in self._chunks():
            yield chunk


def _jumping_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Give the adapter a monotonic clock that runs with the real one plus an offset the body can move. (The
    sync driver's watchdog reads it too; its wait was measured against the real clock before the jump, so it
    does not wake before the driver's check, which is what the tests ask about.)"""
    offset = [0.0]

    class _Time:
        @staticmethod
        def monotonic() -> float:
            return time.monotonic() + offset[0]

    monkeypatch.setattr(webclient_httpx, "time", _Time)
    return offset


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_deadline_that_passes_while_bytes_without_an_event_come_in_ends_the_attempt_at_that_deadline(
        flavour: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The head's events, then the idle deadline passes while a comment arrives (bytes, no event): the attempt
    is an idle timeout with the head's text, and the rest of the answer, which would commit it, is not read."""
    clock = _jumping_clock(monkeypatch)
    body = _ClockBody(clock, [CHAT_HEAD, _JUMP, b": still here\n\n", CHAT[len(CHAT_HEAD):]])
    result = _mock_attempt(_body(body), Deadlines(connect=None, first_event=None, idle=30.0, total=None), flavour)

    assert (result.outcome.value, result.stage) == ("timeout", "idle")
    assert result.text == "".join(TEXT_PARTS[:2]) and result.telemetry.bytes_received == len(CHAT_HEAD) + 14


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_terminal_grace_that_passes_while_bytes_that_change_nothing_come_in_commits_without_reading_on(
        flavour: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole answer, then the terminal grace passes while a comment arrives: the answer commits there, and
    the event the server sends after it (which would break the answer: nothing may follow the terminal) is
    never read."""
    clock = _jumping_clock(monkeypatch)
    body = _ClockBody(clock, [CHAT, _JUMP, b": still here\n\n", b'data: {"late": true}\n\n'])
    result = _mock_attempt(_body(body), Deadlines(connect=None, first_event=None, idle=None, total=None,
                                                  terminal_grace=30.0), flavour)

    assert result.committed and result.text == "".join(TEXT_PARTS)
    assert result.telemetry.bytes_received == len(CHAT) + 14
