"""The demo server: the static site plus a CometAPI-shaped upstream, on one origin.

    python demo_site/server.py [--host 127.0.0.1] [--port 8000] [--upstream BASE_URL] [--static DIR]
                               [--csp-unsafe-eval] [--stall-seconds S] [--time-scale F]

Serves:

* ``GET /…``: the files of the static site directory (default ``demo_site/static``; the lead's
  ``build_scripts/pyodide_tools.py site DIR`` assembles Pyodide + wheels into such a directory).
  ``/`` and directories serve their ``index.html``. Every response carries ``Cache-Control: no-cache``
  (the browser revalidates with ETag / Last-Modified, so unchanged files cost a 304) and the
  Content-Security-Policy below. ``.mjs``/``.js`` are ``text/javascript`` and ``.wasm`` is
  ``application/wasm`` (needed for ``WebAssembly.instantiateStreaming``), whatever the host's
  mimetypes database says.
* The four model routes (``POST /v1/chat/completions``, ``/v1/responses``, ``/v1/messages``,
  ``/v1beta/models/{model}:streamGenerateContent``): by default the embedded upstream of
  :mod:`demo_site.upstream` (scenario chosen by the ``x-demo-scenario`` request header). With
  ``--upstream BASE_URL`` they are proxied instead to a real CometAPI-compatible upstream (see
  :class:`UpstreamProxy`): the upstream's status, media type and body bytes are passed through as they
  arrive, without re-chunking, and the API key is added from the ``COMETAPI_KEY`` environment
  variable. The key never reaches the page and is never logged.
* ``GET /demo/tools.json`` (tool name -> JSON Schema), ``GET /demo/config.json`` (mode, routes,
  scenarios for the picker) and ``GET /__demo/stats`` (stream counters per scenario; ``proxy`` in
  proxy mode).

**Content-Security-Policy.** ``script-src 'self' 'wasm-unsafe-eval'``: Pyodide compiles WebAssembly,
which CSP gates behind ``'wasm-unsafe-eval'`` (Pyodide >= 0.21 needs nothing broader; see
pyodide/pyodide#3141). ``'unsafe-eval'`` (JavaScript ``eval``/``new Function``) is added only with
``--csp-unsafe-eval``, for a transport that defines its JS pump through ``pyodide.code.run_js``
(the "fast path" of pyodide-notes §2.3); the default page must not need it. Everything else is
``'self'`` only; no inline script or style, no plugins, no framing.

The server binds 127.0.0.1 unless told otherwise, prints its URL, and stops on SIGINT/SIGTERM. Tests
start it in-process with :func:`start_in_background`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

if __package__ in (None, ""):  # run as `python demo_site/server.py`: import siblings as demo_site.*
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiohttp import ClientError, ClientPayloadError, ClientSession, ClientTimeout, web

from demo_site.scenarios import SCENARIOS
from demo_site.upstream import (
    ROUTES,
    EmbeddedUpstream,
    StreamStats,
    UpstreamConfig,
    demo_config_document,
    tools_document,
)

log = logging.getLogger("demo_site.server")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_STATIC_DIR = Path(__file__).resolve().parent / "static"
#: Environment variable holding the real upstream's API key (proxy mode only).
KEY_ENV = "COMETAPI_KEY"


def content_security_policy(*, unsafe_eval: bool = False) -> str:
    """The CSP header value for every response (see the module docstring)."""
    script = "script-src 'self' 'wasm-unsafe-eval'" + (" 'unsafe-eval'" if unsafe_eval else "")
    return "; ".join([
        "default-src 'self'",
        script,
        "worker-src 'self'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "style-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ])


#: Media types by suffix; anything else is ``application/octet-stream``.
MIME_TYPES: dict[str, str] = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".wasm": "application/wasm",
    ".zip": "application/zip",
    ".whl": "application/zip",
    ".tar": "application/x-tar",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
    ".py": "text/x-python; charset=utf-8",
}


# --- static files ---------------------------------------------------------------------------------


def static_handler(root: Path) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """``GET``/``HEAD`` handler serving files under ``root`` (no listing, no dot-files, no ``..``)."""

    async def handle(request: web.Request) -> web.StreamResponse:
        rel = PurePosixPath(request.match_info["path"])
        if any(part in ("..", "") or part.startswith(".") or "\\" in part or "\0" in part for part in rel.parts):
            raise web.HTTPNotFound()
        target = root.joinpath(*rel.parts)
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            raise web.HTTPNotFound()
        media_type = MIME_TYPES.get(target.suffix.lower(), "application/octet-stream")
        return web.FileResponse(target, headers={"Content-Type": media_type, "Cache-Control": "no-cache"})

    return handle


# --- proxy mode -----------------------------------------------------------------------------------

#: Request headers passed from the page to the real upstream (nothing else: no cookies, no auth).
FORWARD_REQUEST_HEADERS = ("Content-Type", "Accept", "anthropic-version", "anthropic-beta", "OpenAI-Beta")
#: Response headers passed back to the page.
FORWARD_RESPONSE_HEADERS = ("Content-Type", "Content-Encoding", "Retry-After", "x-request-id", "request-id")
#: Headers that carry credentials; never taken from the page.
_AUTH_HEADERS = ("Authorization", "x-api-key", "x-goog-api-key")


def normalize_base_url(base_url: str) -> str:
    """``https://api.cometapi.com``, with a trailing ``/`` or ``/v1`` removed (routes add ``/v1…``)."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


class UpstreamProxy:
    """Forwards the four routes to ``base_url`` with the key added; streams the body back unchanged.

    The page's own credential headers are dropped and replaced: ``Authorization: Bearer KEY`` on every
    route, plus ``x-api-key`` on the Anthropic route and ``x-goog-api-key`` on the Gemini route. The
    response body is written to the page chunk by chunk as the upstream delivers it
    (``iter_any``), with transfer decompression off so the bytes are the upstream's own. If the
    upstream cuts its body, the page's connection is cut too (no clean end is invented).
    """

    def __init__(self, base_url: str, api_key: str, stats: StreamStats) -> None:
        self.base_url = normalize_base_url(base_url)
        self._api_key = api_key
        self.stats = stats
        self._session: ClientSession | None = None

    def __repr__(self) -> str:  # never show the key
        return f"UpstreamProxy({self.base_url!r})"

    async def startup(self, app: web.Application) -> None:
        timeout = ClientTimeout(total=None, sock_connect=30, sock_read=None)
        self._session = ClientSession(timeout=timeout, auto_decompress=False)

    async def cleanup(self, app: web.Application) -> None:
        if self._session is not None:
            await self._session.close()

    def add_routes(self, app: web.Application) -> None:
        for path, enc_cls in ROUTES:
            app.router.add_post(path, self._handler(enc_cls.route))
        app.on_startup.append(self.startup)
        app.on_cleanup.append(self.cleanup)

    def _handler(self, route: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self.forward(route, request)
        return handle

    def upstream_headers(self, route: str, incoming: Mapping[str, str]) -> dict[str, str]:
        """Headers for the upstream request: the allow-listed page headers plus the key headers."""
        headers = {h: incoming[h] for h in FORWARD_REQUEST_HEADERS if h in incoming}
        headers["Accept-Encoding"] = "identity"
        headers["Authorization"] = f"Bearer {self._api_key}"
        if route == "anthropic-messages":
            headers["x-api-key"] = self._api_key
            headers.setdefault("anthropic-version", "2023-06-01")
        elif route == "gemini":
            headers["x-goog-api-key"] = self._api_key
        return headers

    async def forward(self, route: str, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        query = [(k, v) for k, v in request.rel_url.query.items() if k != "key"]
        url = self.base_url + request.rel_url.path
        body = await request.read()
        self.stats.record("proxy", "started")
        sent = 0
        try:
            async with self._session.post(url, params=query, data=body,
                                          headers=self.upstream_headers(route, request.headers)) as up:
                resp = web.StreamResponse(status=up.status, reason=up.reason)
                for name in FORWARD_RESPONSE_HEADERS:
                    if name in up.headers:
                        resp.headers[name] = up.headers[name]
                resp.headers["Cache-Control"] = "no-cache"
                await resp.prepare(request)
                try:
                    async for chunk in up.content.iter_any():
                        await resp.write(chunk)
                        sent += len(chunk)
                except ClientPayloadError:
                    log.info("proxy %s: upstream body cut after %d bytes; cutting the page's too", route, sent)
                    if request.transport is not None:
                        request.transport.close()
                    self.stats.record("proxy", "finished")
                    return resp
                await resp.write_eof()
        except (ConnectionError, asyncio.CancelledError):
            self.stats.record("proxy", "disconnected")
            log.info("proxy %s: client disconnected after %d bytes", route, sent)
            raise
        except ClientError as exc:
            self.stats.record("proxy", "finished")
            log.warning("proxy %s: upstream request failed (%s)", route, type(exc).__name__)
            return web.json_response({"error": {"type": "demo_proxy_error", "code": type(exc).__name__,
                                                "message": "the demo server could not reach the upstream"}},
                                     status=502)
        self.stats.record("proxy", "finished")
        log.info("proxy %s: status %d, %d bytes", route, resp.status, sent)
        return resp


# --- the app --------------------------------------------------------------------------------------


def build_app(*, static_dir: Path | None = DEFAULT_STATIC_DIR, upstream: str | None = None,
              api_key: str | None = None, config: UpstreamConfig | None = None,
              csp_unsafe_eval: bool = False) -> web.Application:
    """The aiohttp application: model routes (embedded or proxied), demo JSON, static files.

    In proxy mode (``upstream`` given) ``api_key`` is required; callers pass it explicitly (the CLI
    reads :data:`KEY_ENV`).
    """
    csp = content_security_policy(unsafe_eval=csp_unsafe_eval)

    async def on_prepare(request: web.Request, response: web.StreamResponse) -> None:
        response.headers["Content-Security-Policy"] = csp
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"

    app = web.Application()
    app.on_response_prepare.append(on_prepare)
    stats = StreamStats(["proxy"] if upstream else [s.slug for s in SCENARIOS])
    if upstream:
        if not api_key:
            raise ValueError(f"proxy mode needs an API key (set {KEY_ENV})")
        UpstreamProxy(upstream, api_key, stats).add_routes(app)
    else:
        EmbeddedUpstream(config, stats).add_routes(app)
    mode = "proxy" if upstream else "embedded"

    async def tools_json(request: web.Request) -> web.Response:
        return web.json_response(tools_document(), headers={"Cache-Control": "no-cache"})

    async def config_json(request: web.Request) -> web.Response:
        return web.json_response(demo_config_document(mode), headers={"Cache-Control": "no-cache"})

    async def stats_json(request: web.Request) -> web.Response:
        return web.json_response(stats.snapshot(), headers={"Cache-Control": "no-store"})

    app.router.add_get("/demo/tools.json", tools_json)
    app.router.add_get("/demo/config.json", config_json)
    app.router.add_get("/__demo/stats", stats_json)
    if static_dir is not None:
        app.router.add_get("/{path:.*}", static_handler(Path(static_dir)))
    return app


def _runner(app: web.Application) -> web.AppRunner:
    # handler_cancellation: a client disconnect cancels its handler, so streams notice it at once.
    return web.AppRunner(app, handle_signals=False, handler_cancellation=True, shutdown_timeout=2.0,
                         access_log=None)


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@dataclass
class RunningServer:
    """A server started by :func:`start_in_background`; ``stop()`` shuts it down and joins its thread."""

    base_url: str
    _loop: asyncio.AbstractEventLoop
    _runner: web.AppRunner
    _thread: threading.Thread

    def stop(self, timeout: float = 10.0) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)


def start_in_background(*, host: str = DEFAULT_HOST, port: int = 0,
                        app_factory: Callable[[], web.Application] | None = None,
                        **app_options: object) -> RunningServer:
    """Start the server on its own event loop in a daemon thread; return its base URL and ``stop()``.

    ``port=0`` picks a free port. ``app_options`` go to :func:`build_app`; ``app_factory`` serves another
    application instead (tests use it for a fake real upstream).
    """
    loop = asyncio.new_event_loop()
    started: dict[str, object] = {}
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        try:
            app = app_factory() if app_factory is not None else build_app(**app_options)  # type: ignore[arg-type]
            runner = _runner(app)
            loop.run_until_complete(runner.setup())
            loop.run_until_complete(web.TCPSite(runner, host, port).start())
            started["runner"] = runner
            started["port"] = runner.addresses[0][1]
        except BaseException as exc:  # reported to the starting thread
            started["error"] = exc
            ready.set()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    thread = threading.Thread(target=serve, name="demo-server", daemon=True)
    thread.start()
    ready.wait()
    if "error" in started:
        raise RuntimeError("demo server failed to start") from started["error"]  # type: ignore[misc]
    runner = started["runner"]
    assert isinstance(runner, web.AppRunner)
    return RunningServer(_url(host, int(started["port"])), loop, runner, thread)  # type: ignore[call-overload]


# --- command line ---------------------------------------------------------------------------------


async def _serve_until_signalled(app: web.Application, host: str, port: int) -> None:
    runner = _runner(app)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    print(f"webclient demo: {_url(host, runner.addresses[0][1])}/", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        print("webclient demo: stopping", flush=True)
        await runner.cleanup()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python demo_site/server.py", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=DEFAULT_HOST, help="address to bind (default %(default)s)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default %(default)s; 0 = any)")
    parser.add_argument("--upstream", metavar="BASE_URL",
                        help=f"proxy the model routes to this CometAPI-compatible base URL (key from ${KEY_ENV})")
    parser.add_argument("--static", metavar="DIR", type=Path, default=DEFAULT_STATIC_DIR,
                        help="static site directory (default demo_site/static)")
    parser.add_argument("--csp-unsafe-eval", action="store_true",
                        help="add 'unsafe-eval' to script-src (only for a run_js-based fast path)")
    parser.add_argument("--stall-seconds", type=float, default=UpstreamConfig.stall_seconds,
                        help="how long the stall scenario stays silent (default %(default)s)")
    parser.add_argument("--time-scale", type=float, default=UpstreamConfig.time_scale,
                        help="multiply scenario delays (default %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    api_key = os.environ.get(KEY_ENV, "") if args.upstream else None
    if args.upstream and not api_key:
        print(f"error: --upstream needs the API key in the {KEY_ENV} environment variable", file=sys.stderr)
        return 2
    if not args.static.is_dir():
        log.warning("static directory %s does not exist; only the API routes will answer", args.static)
    app = build_app(static_dir=args.static, upstream=args.upstream, api_key=api_key,
                    config=UpstreamConfig(time_scale=args.time_scale, stall_seconds=args.stall_seconds),
                    csp_unsafe_eval=args.csp_unsafe_eval)
    try:
        asyncio.run(_serve_until_signalled(app, args.host, args.port))
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port} ({exc.strerror})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
