"""Proxy mode (``--upstream BASE_URL``): the four model routes, and the Responses resume request, forwarded to a
real CometAPI-compatible upstream.

**What reaches the upstream is built from the route table, never from the request path.** The upstream URL is
the configured base URL's origin and path prefix plus :data:`UPSTREAM_PATHS` for the route. The variables -- the
Gemini model and the resumed response's id -- must fully match :data:`PATH_VARIABLES` (checked on aiohttp's
decoded match, so ``%2f``, ``%3f``, ``%23``, ``..`` and friends are refused with a JSON ``400`` before anything is
sent) and are percent-encoded again when the path is built. Query parameters are dropped except those
:data:`QUERY_ALLOW` lists with a value matching its pattern (Gemini's ``alt``; the resume's ``stream`` and
``starting_after``); the page's ``key`` never passes.

**Resume.** ``GET /v1/responses/{id}?stream=true&starting_after=N`` (OpenAI's "resume streaming" of a background
response, what :mod:`webclient`'s transports send after a cut) goes to the same path on the upstream, as a
``GET`` without a body, with the Responses route's key header. A reconnect's ``Last-Event-ID`` header passes on
every route (it names a position in the stream, nothing more).

**The key goes to the configured origin only.** Redirects are never followed (``allow_redirects=False``): a 3xx
reaches the page as a failed response with its status and body, without ``Location``, and nothing is re-sent.
The client session keeps no cookies and ignores proxy settings in the environment. The page's own credential
headers are dropped; ``Authorization: Bearer KEY`` is added on every route, plus ``x-api-key`` on the Anthropic
route and ``x-goog-api-key`` on the Gemini route. The key is never logged and never reaches the page.

**Bytes pass through unchanged, except the key.** The response status, a few headers
(:data:`FORWARD_RESPONSE_HEADERS`) and the body bytes are streamed to the page as the upstream delivers them
(``iter_any``, transfer decompression off); an upstream that echoes the key (in an error message, a header, the
stream) has every occurrence replaced by ``[redacted]`` (:mod:`demo_site.redact`, whatever the chunking). If
the upstream cuts its body, the page's connection is cut too (no clean end is invented). An unreachable upstream
is a JSON ``502``.

**An encoded body is decoded first, so the filter sees the key.** The upstream is asked for ``Accept-Encoding:
identity``; one that compresses anyway (``gzip``, ``x-gzip``, zlib or raw ``deflate``, or a chain of them) has its
body decoded here, incrementally and within bounds (:mod:`demo_site.content_decoding`), filtered, and sent to the
page without ``Content-Encoding`` (nor ``Content-Length``, which is never forwarded: the body is chunked): the
bytes the browser would have decoded, minus the key. A coding the stdlib cannot decode (``br``, ``zstd``,
``compress``, anything unknown) is a JSON ``502`` and the body is not read. Corrupt compressed data (a bad header,
a stream cut short, trailing bytes) and a decoded body past :data:`demo_site.guards.MAX_DECODED_BODY_BYTES` cut the
page's connection where the failure is found, like an upstream cut (webclient classifies it as truncated); what
the key filter holds then, at most a prefix of the key, is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Final
from urllib.parse import quote

from aiohttp import ClientError, ClientPayloadError, ClientSession, ClientTimeout, DummyCookieJar, web
from yarl import URL

from demo_site.content_decoding import (
    BodyDecoder,
    CorruptBody,
    DecodedBodyTooLarge,
    UnsupportedEncoding,
    parse_content_encoding,
)
from demo_site.guards import MAX_DECODED_BODY_BYTES
from demo_site.redact import SecretFilter
from demo_site.upstream import StreamStats

log = logging.getLogger("demo_site.server")

#: The resume request's pseudo-route (``GET``, no body; the key header of ``openai-responses``).
RESUME_ROUTE: Final = "openai-responses-resume"
#: Route -> upstream path; ``{model}`` and ``{response_id}`` are validated and re-encoded.
UPSTREAM_PATHS: Final[dict[str, str]] = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic-messages": "/v1/messages",
    "gemini": "/v1beta/models/{model}:streamGenerateContent",
    RESUME_ROUTE: "/v1/responses/{response_id}",
}
#: A Gemini model name: a letter or digit, then up to 127 letters, digits, ``.``, ``_`` or ``-``
#: (``gemini-2.5-flash``, ``gemini-1.5-pro-002``, ``gemini-2.0-flash-exp``).
GEMINI_MODEL: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: A response id: a letter or digit, then up to 255 letters, digits, ``_`` or ``-`` (``resp_68af…``).
RESPONSE_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,255}")
#: Path variable -> the pattern its decoded value must fully match.
PATH_VARIABLES: Final[dict[str, re.Pattern[str]]] = {"model": GEMINI_MODEL, "response_id": RESPONSE_ID}
#: Route -> query parameter -> the pattern its value must fully match. Everything else is dropped.
QUERY_ALLOW: Final[dict[str, dict[str, re.Pattern[str]]]] = {
    "gemini": {"alt": re.compile("sse|json")},
    RESUME_ROUTE: {"stream": re.compile("true|false"), "starting_after": re.compile("[0-9]{1,12}")},
}
#: Request headers passed from the page to the real upstream (nothing else: no cookies, no auth).
FORWARD_REQUEST_HEADERS: Final = ("Content-Type", "Accept", "anthropic-version", "anthropic-beta", "OpenAI-Beta",
                                  "Last-Event-ID")
#: Response headers passed back to the page (never ``Location`` or ``Set-Cookie``; never ``Content-Encoding``: the
#: page gets the body decoded).
FORWARD_RESPONSE_HEADERS: Final = ("Content-Type", "Retry-After", "x-request-id", "request-id")


def normalize_base_url(base_url: str) -> str:
    """``https://api.cometapi.com``, with a trailing ``/`` or ``/v1`` removed (routes add ``/v1…``)."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def parse_base_url(base_url: str) -> URL:
    """The ``--upstream`` value as a URL: ``http(s)://host[:port][/prefix]`` and nothing else (``ValueError``)."""
    url = URL(normalize_base_url(base_url))
    if (url.scheme not in ("http", "https") or not url.host or url.user is not None or url.password is not None
            or url.query_string or url.fragment):
        raise ValueError("the upstream must be an http(s) base URL without credentials, query or fragment")
    return url


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"type": "demo_proxy_error", "code": code, "message": message}},
                             status=status)


async def _relay(pieces: Iterable[bytes], secret: SecretFilter, resp: web.StreamResponse) -> None:
    """Write ``pieces`` of the (decoded) upstream body to the page through the key filter ``secret``."""
    for piece in pieces:
        out = secret.feed(piece)
        if out:
            await resp.write(out)


class UpstreamProxy:
    """Forwards the four routes to the configured base URL with the key added (see the module docstring)."""

    def __init__(self, base_url: str, api_key: str, stats: StreamStats, *,
                 max_decoded_body_bytes: int = MAX_DECODED_BODY_BYTES) -> None:
        self.base = parse_base_url(base_url)
        self.base_url = str(self.base)
        self._api_key = api_key
        self.stats = stats
        self.max_decoded_body_bytes = max_decoded_body_bytes
        self._session: ClientSession | None = None

    def __repr__(self) -> str:  # never show the key
        return f"UpstreamProxy({self.base_url!r})"

    async def startup(self, app: web.Application) -> None:
        timeout = ClientTimeout(total=None, sock_connect=30, sock_read=None)
        self._session = ClientSession(timeout=timeout, auto_decompress=False, cookie_jar=DummyCookieJar(),
                                      trust_env=False)

    async def cleanup(self, app: web.Application) -> None:
        if self._session is not None:
            await self._session.close()

    def upstream_url(self, route: str, request: web.Request) -> URL | None:
        """The upstream URL for ``request`` on ``route``, or ``None`` when a path variable is refused."""
        path = UPSTREAM_PATHS[route]
        for name, pattern in PATH_VARIABLES.items():
            if "{" + name + "}" in path:
                segment = request.match_info.get(name, "")
                if not pattern.fullmatch(segment):
                    return None
                path = path.replace("{" + name + "}", quote(segment, safe=""))
        query = [(name, value) for name, allowed in QUERY_ALLOW.get(route, {}).items()
                 if (value := request.query.get(name)) is not None and allowed.fullmatch(value)]
        url = self.base.with_path(self.base.raw_path.rstrip("/") + path, encoded=True)
        return url.with_query(query) if query else url

    def upstream_headers(self, route: str, incoming: Mapping[str, str]) -> dict[str, str]:
        """Headers for the upstream request: the allow-listed page headers plus the key headers."""
        headers = {h: incoming[h] for h in FORWARD_REQUEST_HEADERS if h in incoming}
        headers["Accept-Encoding"] = "identity"
        headers["Authorization"] = f"Bearer {self._api_key}"
        if route == RESUME_ROUTE:
            headers.pop("Content-Type", None)  # a GET without a body
        elif route == "anthropic-messages":
            headers["x-api-key"] = self._api_key
            headers.setdefault("anthropic-version", "2023-06-01")
        elif route == "gemini":
            headers["x-goog-api-key"] = self._api_key
        return headers

    def _cut(self, route: str, request: web.Request, resp: web.StreamResponse, why: str,
             sent: int) -> web.StreamResponse:
        """End the page's body without a clean end (``why`` is fixed text, never payload or header values)."""
        log.info("proxy %s: %s after %d bytes; cutting the page's too", route, why, sent)
        if request.transport is not None:
            request.transport.close()
        self.stats.record("proxy", "finished")
        return resp

    async def forward(self, route: str, request: web.Request) -> web.StreamResponse:
        """Send ``request`` to the upstream and stream its answer back."""
        assert self._session is not None
        url = self.upstream_url(route, request)
        if url is None:
            log.info("proxy %s: path variable refused", route)
            if route == RESUME_ROUTE:
                return _error(400, "invalid_response_id", "the response id is not a valid identifier")
            return _error(400, "invalid_model", "the model name is not a valid model identifier")
        method, body = ("GET", None) if route == RESUME_ROUTE else ("POST", await request.read())
        self.stats.record("proxy", "started")
        sent = 0
        secret = SecretFilter(self._api_key.encode())
        try:
            async with self._session.request(method, url, data=body,
                                             headers=self.upstream_headers(route, request.headers),
                                             allow_redirects=False) as up:
                try:
                    codings = parse_content_encoding(up.headers.getall("Content-Encoding", []))
                except UnsupportedEncoding:
                    up.close()  # the body is never read
                    self.stats.record("proxy", "finished")
                    log.warning("proxy %s: upstream body in a content encoding the proxy cannot decode", route)
                    return _error(502, "unsupported_content_encoding",
                                  "the upstream answered in a content encoding the demo server cannot decode")
                decoder = BodyDecoder(codings, self.max_decoded_body_bytes) if codings else None
                resp = web.StreamResponse(status=up.status, reason=up.reason)
                for name in FORWARD_RESPONSE_HEADERS:
                    if name in up.headers:
                        resp.headers[name] = secret.text(up.headers[name])
                resp.headers["Cache-Control"] = "no-cache"
                if 300 <= up.status < 400:
                    log.warning("proxy %s: upstream answered %d; redirects are not followed", route, up.status)
                await resp.prepare(request)
                # On a cut, what the filter holds (at most a prefix of the key) is dropped, never sent.
                try:
                    async for chunk in up.content.iter_any():
                        sent += len(chunk)
                        await _relay(decoder.feed(chunk) if decoder is not None else (chunk,), secret, resp)
                    if decoder is not None:
                        # (its checks that every coding's stream ended; a valid body has nothing left here)
                        await _relay(decoder.end(), secret, resp)
                except ClientPayloadError:
                    return self._cut(route, request, resp, "upstream body cut", sent)
                except CorruptBody:
                    return self._cut(route, request, resp, "upstream body not validly encoded", sent)
                except DecodedBodyTooLarge:
                    return self._cut(route, request, resp, "decoded upstream body over the ceiling", sent)
                held = secret.end()
                if held:
                    await resp.write(held)
                await resp.write_eof()
        except (ConnectionError, asyncio.CancelledError):
            self.stats.record("proxy", "disconnected")
            log.info("proxy %s: client disconnected after %d bytes", route, sent)
            raise
        except ClientError as exc:
            self.stats.record("proxy", "finished")
            log.warning("proxy %s: upstream request failed (%s)", route, type(exc).__name__)
            return _error(502, type(exc).__name__, "the demo server could not reach the upstream")
        self.stats.record("proxy", "finished")
        log.info("proxy %s: status %d, %d bytes", route, resp.status, sent)
        return resp
