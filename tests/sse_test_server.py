"""A small, real HTTP/1.1 server for transport tests: scripted, slow SSE bodies from 127.0.0.1 only.

A test registers a :class:`Script` (status, media type, and a list of steps) and gets a URL path for it. A
request to that path is answered by playing the script over the socket::

    with SSETestServer() as server:
        path = server.add(Script([Send(b"data: 1\\n\\n"), Pause(0.2), Stall(10)]))
        ... client requests server.base_url + path, cancels after the first event ...
        exchange = server.exchange(path)             # what the server observed for that request
        assert exchange.disconnected.wait(5)          # it saw the client close the connection

Steps (after ``Script.head_delay`` seconds of silence before the status line, 0 by default)
    ``Send(data)``   write ``data`` as one transport chunk (one HTTP chunk with ``framing="chunked"``), with
                     TCP_NODELAY so it leaves at once;
    ``Pause(s)``     wait ``s`` seconds, watching the socket so a client disconnect is noticed while waiting;
    ``Stall(s)``     the same as ``Pause`` but meant as "say nothing" (bounded, so handler threads end);
    ``Abort()``      reset the connection (SO_LINGER 0, RST) without ending the body: a transport error.
    After the last step the body ends cleanly (the terminating zero-size chunk, or the close that delimits a
    ``framing="close"`` body), which a client sees as a normal EOF.

Every response is the last on its TCP connection (and says ``Connection: close`` unless told not to), so one
exchange is one connection and "the client closed the connection" is unambiguous. What the server saw is
recorded per request in an :class:`Exchange` (request line, headers and body, bytes and chunks sent, whether the
script finished, and when the client disconnected). GET requests for other paths are served from
``static_root`` when one is given (a page and Pyodide's files, for a browser run against the same server).

The server binds 127.0.0.1 on an ephemeral port, runs in daemon threads, and stops itself: on ``__exit__``
or ``stop()``, and at the latest after ``max_lifetime_s`` seconds. Run as a script it serves until
stdin closes, printing its base URL (``python tests/sse_test_server.py --static DIR``).
"""

from __future__ import annotations

import contextlib
import itertools
import mimetypes
import select
import socket
import struct
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Literal

#: Upper bound on the life of one server (it shuts itself down after this many seconds).
DEFAULT_MAX_LIFETIME_S = 300.0
#: How often a waiting handler checks whether the client went away.
_POLL_S = 0.01

_MEDIA_TYPES = {".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
                ".json": "application/json", ".html": "text/html; charset=utf-8", ".zip": "application/zip",
                ".whl": "application/zip"}


@dataclass(frozen=True)
class Send:
    """Write ``data`` as one transport chunk."""

    data: bytes


@dataclass(frozen=True)
class Pause:
    """Wait ``seconds`` (watching for a client disconnect)."""

    seconds: float


@dataclass(frozen=True)
class Stall:
    """Send nothing for up to ``seconds``; ends early if the client disconnects."""

    seconds: float = 30.0


@dataclass(frozen=True)
class Abort:
    """Reset the connection without ending the body."""


Step = Send | Pause | Stall | Abort


@dataclass(frozen=True)
class Script:
    """One scripted response."""

    steps: Sequence[Step]
    status: int = 200
    #: ``None`` sends no Content-Type header at all.
    content_type: str | None = "text/event-stream"
    #: ``"chunked"``: Transfer-Encoding chunked; ``"close"``: the body ends when the connection closes.
    framing: Literal["chunked", "close"] = "chunked"
    #: Seconds to wait (watching for a disconnect) before sending the status line and headers.
    head_delay: float = 0.0
    #: Send ``Connection: close`` (the connection is closed after the response either way). Node's fetch (undici)
    #: reports a reset of a ``Connection: close`` response as a normal end of body, so scripts that test a
    #: reset leave the header out.
    connection_close: bool = True


def sse_script(data: bytes, *, chunk_size: int | None = None, cuts: Sequence[int] = (), delay: float = 0.0,
               then: Sequence[Step] = (), status: int = 200, content_type: str | None = "text/event-stream",
               framing: Literal["chunked", "close"] = "chunked") -> Script:
    """A script sending ``data`` cut at ``cuts`` (byte offsets) or every ``chunk_size`` bytes, with
    ``delay`` seconds between chunks, followed by the steps in ``then``."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    if chunk_size:
        points = sorted(set(points) | set(range(chunk_size, len(data), chunk_size)))
    pieces = [data[a:b] for a, b in itertools.pairwise([0, *points, len(data)])]
    steps: list[Step] = []
    for i, piece in enumerate(pieces):
        if i and delay:
            steps.append(Pause(delay))
        steps.append(Send(piece))
    return Script([*steps, *then], status=status, content_type=content_type, framing=framing)


@dataclass
class Exchange:
    """What the server observed for one request to a scripted path."""

    method: str
    path: str
    request_headers: dict[str, str]
    request_body: bytes
    #: The request target's query string (after ``?``), ``""`` when there is none.
    query: str = ""
    started_at: float = field(default_factory=time.monotonic)
    bytes_sent: int = 0
    chunks_sent: int = 0
    #: Set when the whole script was played and the body ended as scripted.
    finished: threading.Event = field(default_factory=threading.Event)
    #: Set when the server noticed the client closing (or resetting) the connection mid-script.
    disconnected: threading.Event = field(default_factory=threading.Event)
    disconnected_at: float | None = None
    #: Set when the handler is done with the connection, whatever happened.
    closed: threading.Event = field(default_factory=threading.Event)


class _ClientGone(Exception):
    """The client closed or reset the connection."""


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that can end a connection with a bare RST (no ``shutdown(SHUT_WR)`` FIN first)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.reset_on_close: set[socket.socket] = set()

    def shutdown_request(self, request: socket.socket) -> None:  # type: ignore[override]
        if request in self.reset_on_close:
            self.reset_on_close.discard(request)
            self.close_request(request)
        else:
            super().shutdown_request(request)


class SSETestServer:
    """A ThreadingHTTPServer on 127.0.0.1:<ephemeral> playing registered scripts (see module docstring)."""

    def __init__(self, *, static_root: Path | None = None, max_lifetime_s: float = DEFAULT_MAX_LIFETIME_S) -> None:
        self._scripts: dict[str, tuple[Script, ...]] = {}
        self._exchanges: dict[str, list[Exchange]] = {}
        self._lock = threading.Condition()
        self._ids = itertools.count(1)
        self._static_root = static_root.resolve() if static_root else None
        self._max_lifetime_s = max_lifetime_s
        self._httpd = _HTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # -- lifecycle ------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> SSETestServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="sse-test-server", daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self._max_lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        """Stop accepting and close the listening socket (idempotent)."""
        if self._timer is not None:
            self._timer.cancel()
        if self._thread is not None and self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join(10)
        self._httpd.server_close()

    def __enter__(self) -> SSETestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripts and observations -----------------------------------------------------------------------

    def add(self, script: Script, *more: Script, path: str | None = None) -> str:
        """Register ``script``; return the path that plays it (each request to it plays it again). With ``more``
        scripts, the n-th request plays the n-th script (the last one again after that). ``path`` registers a
        path of the caller's choosing (a resume request's ``/s/N/{id}``) instead of a new one."""
        path = path if path is not None else f"/s/{next(self._ids)}"
        with self._lock:
            self._scripts[path] = (script, *more)
            self._exchanges[path] = []
        return path

    def url(self, script: Script, *more: Script) -> str:
        """``base_url + add(script, *more)``."""
        return self.base_url + self.add(script, *more)

    def exchange(self, path_or_url: str, index: int = 0, timeout: float = 10.0) -> Exchange:
        """The ``index``-th request to a scripted path, waiting up to ``timeout`` s for it to arrive."""
        path = "/" + path_or_url.split("://", 1)[-1].split("/", 1)[-1] if "://" in path_or_url else path_or_url
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._exchanges.get(path, [])) > index, timeout):
                raise AssertionError(f"no request #{index} to {path} within {timeout} s")
            return self._exchanges[path][index]

    def requests_to(self, path_or_url: str) -> int:
        path = "/" + path_or_url.split("://", 1)[-1].split("/", 1)[-1] if "://" in path_or_url else path_or_url
        with self._lock:
            return len(self._exchanges.get(path, []))

    # -- the handler ------------------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def do_OPTIONS(self) -> None:
                self.send_response(204)
                self._cors()
                self.send_header("Access-Control-Allow-Headers", "*")
                self.send_header("Access-Control-Allow-Methods", "GET, POST")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _cors(self) -> None:
                self.send_header("Access-Control-Allow-Origin", "*")

            def _serve(self) -> None:
                path, _, query = self.path.partition("?")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with server._lock:
                    scripts = server._scripts.get(path)
                    script = None
                    if scripts is not None:
                        script = scripts[min(len(server._exchanges[path]), len(scripts) - 1)]
                        ex = Exchange(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body,
                                      query)
                        server._exchanges[path].append(ex)
                        server._lock.notify_all()
                if script is None:
                    self._static(path)
                    return
                try:
                    self._play(script, ex)
                finally:
                    ex.closed.set()
                    self.close_connection = True

            def _static(self, path: str) -> None:
                root = server._static_root
                target = (root / path.lstrip("/")).resolve() if root else None
                if root is None or target is None or not target.is_file() or root not in target.parents:
                    self.send_error(404)
                    return
                data = target.read_bytes()
                self.send_response(200)
                media = _MEDIA_TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0]
                self.send_header("Content-Type", media or "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-cache")
                self._cors()
                self.end_headers()
                self.wfile.write(data)

            def _play(self, script: Script, ex: Exchange) -> None:
                sock = self.connection
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                try:
                    self._wait(sock, script.head_delay)
                except _ClientGone:
                    ex.disconnected_at = time.monotonic()
                    ex.disconnected.set()
                    return
                self.send_response(script.status)
                if script.content_type is not None:
                    self.send_header("Content-Type", script.content_type)
                self.send_header("Cache-Control", "no-cache")
                if script.connection_close or script.framing == "close":
                    self.send_header("Connection", "close")
                self._cors()
                if script.framing == "chunked":
                    self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunked = script.framing == "chunked"
                try:
                    for step in script.steps:
                        if isinstance(step, Send):
                            if not step.data:
                                continue
                            frame = b"%x\r\n%s\r\n" % (len(step.data), step.data) if chunked else step.data
                            self._write(sock, frame)
                            ex.bytes_sent += len(step.data)
                            ex.chunks_sent += 1
                        elif isinstance(step, (Pause, Stall)):
                            self._wait(sock, step.seconds)
                        else:  # Abort: linger 0, and the server closes without a FIN first: an RST
                            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                            server._httpd.reset_on_close.add(sock)
                            return
                    if chunked:
                        self._write(sock, b"0\r\n\r\n")
                    ex.finished.set()
                except _ClientGone:
                    ex.disconnected_at = time.monotonic()
                    ex.disconnected.set()

            @staticmethod
            def _write(sock: socket.socket, frame: bytes) -> None:
                try:
                    sock.sendall(frame)
                except OSError as exc:
                    raise _ClientGone from exc

            @staticmethod
            def _wait(sock: socket.socket, seconds: float) -> None:
                """Sleep ``seconds``; raise _ClientGone as soon as the peer closes or resets."""
                deadline = time.monotonic() + seconds
                while (remaining := deadline - time.monotonic()) > 0:
                    readable, _, _ = select.select([sock], [], [], min(remaining, 0.25))
                    if not readable:
                        continue
                    try:
                        peek = sock.recv(1, socket.MSG_PEEK)
                    except OSError as exc:
                        raise _ClientGone from exc
                    if not peek:
                        raise _ClientGone
                    time.sleep(min(_POLL_S, max(remaining, 0)))  # client sent bytes; ignore them

        return Handler


def main(argv: Sequence[str] | None = None) -> int:
    """Serve ``--static DIR`` on 127.0.0.1 until stdin closes; print the base URL on stdout."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--static", type=Path, default=None)
    parser.add_argument("--max-lifetime", type=float, default=DEFAULT_MAX_LIFETIME_S)
    args = parser.parse_args(argv)
    with SSETestServer(static_root=args.static, max_lifetime_s=args.max_lifetime) as server:
        print(server.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
