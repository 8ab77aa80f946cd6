"""The demo server's resource limits: how long a client may take to send a request, how big its body may be,
and how many streams it may hold open at once.

A stream costs the server a handler, a socket and (in proxy mode) an upstream connection with the key for as long
as the client keeps it; the limits keep one client from holding all of them.

* **Header-read timeout** (:attr:`ServerLimits.header_timeout`). aiohttp's keep-alive timer runs from the moment a
  connection opens (and again from the end of each response) until a *complete* request head has arrived; bytes
  arriving do not re-arm it. Setting it therefore bounds how long a request head may take (slowloris: one header
  line every few seconds), and how long an idle connection may stay open. :func:`runner_options` passes it.
* **Body-read timeout** (:attr:`ServerLimits.body_timeout`): a model route's request body must arrive whole within
  it, or the answer is ``408`` and the connection closes (the slow-body variant of the same attack).
* **Body cap** (:attr:`ServerLimits.max_body_bytes`, aiohttp's ``client_max_size``): a larger body is ``413``
  before anything is forwarded.
* **Concurrent streams per client** (:attr:`ServerLimits.max_streams_per_client`, keyed by the peer address): one
  more is ``429`` with ``Retry-After``. Behind a reverse proxy every client shares one address; raise the cap there.
* **Decoded upstream body** (:attr:`ServerLimits.max_decoded_body_bytes`, proxy mode): an upstream that answers
  with a compressed body despite ``Accept-Encoding: identity`` has it decoded by the proxy
  (:mod:`demo_site.content_decoding`) so the key filter can see it; past this many decoded bytes the page's body
  is cut (a decompression bomb costs its upstream a few kilobytes, the server megabytes per kilobyte).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Seconds from connection open (or the end of a response) to a complete request head. A browser sends its
#: request head in one write, so anything slower than this is not a browser; Apache's default keep-alive is 5 s.
HEADER_TIMEOUT_SECONDS: Final = 10.0
#: Seconds for a whole request body: chat requests are at most a megabyte (below) and sent at once.
BODY_TIMEOUT_SECONDS: Final = 30.0
#: Largest request body accepted (aiohttp's default ``client_max_size``, kept): a long chat history with tool
#: schemas is tens of kilobytes.
MAX_BODY_BYTES: Final = 1024 * 1024
#: Concurrent streams per client address. One browser keeps at most 6 HTTP/1.1 connections per host, so a single
#: page never meets this cap; a script opening hundreds of streams does.
MAX_STREAMS_PER_CLIENT: Final = 8
#: Decoded bytes of one compressed upstream body (every coding of a chain counted), in proxy mode. Deflate expands up
#: to ~1032:1, so 64 KiB from the upstream can ask for 64 MiB here; an uncompressed body costs the upstream every
#: byte it sends and has no such cap. 64 MiB is above the largest legitimate stream (a Responses stream of the
#: largest documented output, ~128k tokens at one ~300-byte event each, is ~40 MB) and above what webclient keeps
#: of one response anyway (16 Mi text characters, 32 Mi characters of kept items; see ``webclient/_limits.py``).
MAX_DECODED_BODY_BYTES: Final = 64 * 1024 * 1024
#: ``Retry-After`` seconds on a ``429``.
RETRY_AFTER_SECONDS: Final = 1


@dataclass(frozen=True)
class ServerLimits:
    """The limits above; tests shrink them."""

    header_timeout: float = HEADER_TIMEOUT_SECONDS
    body_timeout: float = BODY_TIMEOUT_SECONDS
    max_body_bytes: int = MAX_BODY_BYTES
    max_streams_per_client: int = MAX_STREAMS_PER_CLIENT
    max_decoded_body_bytes: int = MAX_DECODED_BODY_BYTES


def runner_options(limits: ServerLimits) -> dict[str, object]:
    """Keyword arguments for ``web.AppRunner`` that apply ``limits`` to each connection."""
    return {"keepalive_timeout": limits.header_timeout}


def refusal(status: int, code: str, message: str, **headers: str) -> web.Response:
    """The JSON error answer of every refusal the server makes before a handler runs (no request content)."""
    return web.json_response({"error": {"type": "demo_server_error", "code": code, "message": message}},
                             status=status, headers=headers)


class StreamGuard:
    """Counts each client's open model-route requests and reads their bodies under the body timeout. A client is its
    peer address; a request without one (not over TCP) is counted under the empty address."""

    def __init__(self, limits: ServerLimits) -> None:
        self.limits = limits
        self._open: dict[str, int] = {}

    def active(self, client: str) -> int:
        """Open model-route requests of the client address ``client``."""
        return self._open.get(client, 0)

    def clients(self) -> int:
        """Client addresses with at least one open request. An address's entry goes with its last request, so a
        server that meets many addresses keeps none of them once their requests end."""
        return len(self._open)

    async def run(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Run ``handler`` for a model-route request within the limits."""
        client = request.remote or ""
        if self.active(client) >= self.limits.max_streams_per_client:
            return refusal(429, "too_many_streams", "too many concurrent streams from this client",
                            **{"Retry-After": str(RETRY_AFTER_SECONDS)})
        self._open[client] = self.active(client) + 1
        try:
            try:
                async with asyncio.timeout(self.limits.body_timeout):
                    await request.read()  # kept by aiohttp: the handler's own read() returns these bytes
            except TimeoutError:
                # Answer, then close at once: aiohttp would otherwise linger reading the trickle.
                response = refusal(408, "body_timeout", "the request body did not arrive in time")
                response.force_close()
                await response.prepare(request)
                await response.write_eof()
                if request.transport is not None:
                    request.transport.close()
                return response
            return await handler(request)
        finally:
            self._open[client] -= 1
            if not self._open[client]:
                del self._open[client]
