"""The demo server: the static site plus a CometAPI-shaped upstream, on one origin.

    python demo_site/server.py [--host 127.0.0.1] [--port 8000] [--upstream BASE_URL] [--static DIR]
                               [--allow-origin ORIGIN ...] [--allow-host NAME ...] [--max-streams-per-client N]
                               [--csp-unsafe-eval] [--stall-seconds S] [--time-scale F]

Serves:

* ``GET``/``HEAD /…``: the files of the static site directory (default ``demo_site/static``;
  ``build_scripts/pyodide_tools.py site DIR`` assembles Pyodide + wheels into such a directory), by the rules of
  :mod:`demo_site.static_files`: nothing whose real path is outside the site (bare ``404``), precompressed
  ``.br``/``.gz`` sidecars by ``Accept-Encoding``, ``immutable`` caching for content-hashed directories and
  ``no-cache`` + ETag/Last-Modified revalidation (``304``) for everything else.
* The four model routes (``POST /v1/chat/completions``, ``/v1/responses``, ``/v1/messages``,
  ``/v1beta/models/{model}:streamGenerateContent``): by default the embedded upstream of
  :mod:`demo_site.upstream` (scenario chosen by the ``x-demo-scenario`` request header). With
  ``--upstream BASE_URL`` they are proxied instead to a real CometAPI-compatible upstream by
  :mod:`demo_site.proxy` (upstream URL from the route table only, no redirects followed, the key from the
  ``COMETAPI_KEY`` environment variable sent to that origin only, never to the page, never logged).
* ``GET /demo/tools.json`` (tool name -> JSON Schema), ``GET /demo/config.json`` (mode, routes,
  scenarios for the picker) and ``GET /__demo/stats`` (stream counters per scenario; ``proxy`` in
  proxy mode).

**Host names** (:mod:`demo_site.hosts`): every request must name the server by an IP address, ``localhost`` or
an ``--allow-host NAME``; any other ``Host`` is refused before a handler runs (DNS rebinding: a page whose own name
was made to resolve to this machine would otherwise talk to the model routes, and the key, as if same-origin).

**Limits** (:mod:`demo_site.guards`): a header-read timeout, a body-read timeout and the 1 MiB body cap, and a cap
on concurrent model-route streams per client address (``--max-streams-per-client``).

**Cross-origin** (:mod:`demo_site.cors`): ``--allow-origin ORIGIN`` (repeatable) shares the model routes (with
their ``OPTIONS`` preflight) and the kit under ``/webclient/`` with exactly those origins; nothing else.

**Content-Security-Policy.** ``script-src 'self' 'wasm-unsafe-eval'``: Pyodide compiles WebAssembly,
which CSP gates behind ``'wasm-unsafe-eval'`` (Pyodide >= 0.21 needs nothing broader; see
pyodide/pyodide#3141). ``'unsafe-eval'`` (JavaScript ``eval``/``new Function``) is added only with
``--csp-unsafe-eval``, for a transport that defines its JS pump through ``pyodide.code.run_js``
(the "fast path" of pyodide-notes §2.3); the default page must not need it. Everything else is
``'self'`` only; no inline script or style, no plugins, no framing. Every response also carries
``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``.

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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as `python demo_site/server.py`: import siblings as demo_site.*
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiohttp import web

from demo_site.cors import CorsPolicy, parse_origin
from demo_site.guards import ServerLimits, StreamGuard, refusal, runner_options
from demo_site.hosts import HostPolicy, parse_allowed_host
from demo_site.proxy import RESUME_ROUTE, UpstreamProxy, normalize_base_url
from demo_site.scenarios import SCENARIOS
from demo_site.static_files import MIME_TYPES, static_handler
from demo_site.upstream import (
    RESUME_PATH,
    ROUTES,
    EmbeddedUpstream,
    RouteEncoder,
    StreamStats,
    UpstreamConfig,
    demo_config_document,
    tools_document,
)

__all__ = ["KEY_ENV", "MIME_TYPES", "RunningServer", "ServerLimits", "UpstreamProxy", "build_app",
           "content_security_policy", "main", "normalize_base_url", "start_in_background"]

log = logging.getLogger("demo_site.server")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_STATIC_DIR = Path(__file__).resolve().parent / "static"
#: Environment variable holding the real upstream's API key (proxy mode only).
KEY_ENV = "COMETAPI_KEY"

#: Where an application keeps its limits (read again when its runner is made).
LIMITS_KEY = web.AppKey("demo_limits", ServerLimits)
#: Request-dict flag: the request is for a model route (CORS and the stream cap apply).
_MODEL_ROUTE = web.RequestKey("demo_site.model_route", bool)


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


# --- the app --------------------------------------------------------------------------------------

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _add_model_routes(app: web.Application, forward: Callable[[type[RouteEncoder], web.Request],
                                                              Awaitable[web.StreamResponse]],
                      resume: Handler, guard: StreamGuard, cors: CorsPolicy) -> None:
    """The four model routes (``POST``) and the Responses resume route (``GET``), through the stream guard,
    with ``OPTIONS`` preflight, flagged as model routes (CORS)."""

    def guarded(handler: Handler) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            request[_MODEL_ROUTE] = True
            return await guard.run(request, handler)
        return handle

    def post(enc_cls: type[RouteEncoder]) -> Handler:
        return guarded(lambda r: forward(enc_cls, r))

    def preflight_for(method: str) -> Handler:
        async def preflight(request: web.Request) -> web.StreamResponse:
            request[_MODEL_ROUTE] = True
            return await cors.preflight(request, method)
        return preflight

    preflight = preflight_for("POST")

    for path, enc_cls in ROUTES:
        resource = app.router.add_resource(path)
        resource.add_route("POST", post(enc_cls))
        resource.add_route("OPTIONS", preflight)
    resource = app.router.add_resource(RESUME_PATH)
    resource.add_route("GET", guarded(resume))
    resource.add_route("OPTIONS", preflight_for("GET"))


def build_app(*, static_dir: Path | None = DEFAULT_STATIC_DIR, upstream: str | None = None,
              api_key: str | None = None, config: UpstreamConfig | None = None,
              csp_unsafe_eval: bool = False, allow_origins: Sequence[str] = (),
              allow_hosts: Sequence[str] = (), limits: ServerLimits | None = None) -> web.Application:
    """The aiohttp application: model routes (embedded or proxied), demo JSON, static files.

    In proxy mode (``upstream`` given) ``api_key`` is required; callers pass it explicitly (the CLI
    reads :data:`KEY_ENV`). ``allow_origins`` are the ``--allow-origin`` values and ``allow_hosts`` the
    ``--allow-host`` names (``ValueError`` for a malformed one, as for a malformed ``upstream``).
    """
    limits = limits or ServerLimits()
    csp = content_security_policy(unsafe_eval=csp_unsafe_eval)
    cors = CorsPolicy(allow_origins)
    hosts = HostPolicy(allow_hosts)

    @web.middleware
    async def host_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = hosts.verdict(request.headers.getall("Host", []))
        if refused is None:
            return await handler(request)
        code, message = (("misdirected_request", "this server does not answer to that host name") if refused == 421
                         else ("bad_host", "the request needs exactly one valid Host header"))
        response = refusal(refused, code, message)
        response.force_close()
        return response

    async def on_prepare(request: web.Request, response: web.StreamResponse) -> None:
        response.headers["Content-Security-Policy"] = csp
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        cors.decorate(request, response, model_route=bool(request.get(_MODEL_ROUTE)))

    app = web.Application(client_max_size=limits.max_body_bytes, middlewares=[host_guard])
    app[LIMITS_KEY] = limits
    app.on_response_prepare.append(on_prepare)
    stats = StreamStats(["proxy"] if upstream else [s.slug for s in SCENARIOS])
    guard = StreamGuard(limits)
    if upstream:
        if not api_key:
            raise ValueError(f"proxy mode needs an API key (set {KEY_ENV})")
        proxy = UpstreamProxy(upstream, api_key, stats, max_decoded_body_bytes=limits.max_decoded_body_bytes)
        app.on_startup.append(proxy.startup)
        app.on_cleanup.append(proxy.cleanup)
        _add_model_routes(app, lambda enc_cls, request: proxy.forward(enc_cls.route, request),
                          lambda request: proxy.forward(RESUME_ROUTE, request), guard, cors)
    else:
        embedded = EmbeddedUpstream(config, stats)
        _add_model_routes(app, embedded.handle, embedded.resume, guard, cors)
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
    limits = app.get(LIMITS_KEY, ServerLimits())
    return web.AppRunner(app, handle_signals=False, handler_cancellation=True, shutdown_timeout=2.0,
                         access_log=None, **runner_options(limits))  # type: ignore[arg-type]


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
        runner: web.AppRunner | None = None
        try:
            app = app_factory() if app_factory is not None else build_app(**app_options)  # type: ignore[arg-type]
            runner = _runner(app)
            loop.run_until_complete(runner.setup())
            loop.run_until_complete(web.TCPSite(runner, host, port).start())
            started["runner"] = runner
            started["port"] = runner.addresses[0][1]
        except BaseException as exc:  # reported to the starting thread, after undoing what was set up
            started["error"] = exc
            if runner is not None:
                loop.run_until_complete(runner.cleanup())
            loop.close()
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
    """Serve until ``SIGINT`` or ``SIGTERM``, then shut down cleanly. The handlers are in place before the
    socket listens: a signal sent as soon as the server answers stops it the same way."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runner = _runner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        print(f"webclient demo: {_url(host, runner.addresses[0][1])}/", flush=True)
        await stop.wait()
        print("webclient demo: stopping", flush=True)
    finally:
        await runner.cleanup()


def _origin(text: str) -> str:
    """argparse type of ``--allow-origin``."""
    try:
        return parse_origin(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _host(text: str) -> str:
    """argparse type of ``--allow-host``."""
    try:
        return parse_allowed_host(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> int:
    """argparse type: a positive decimal integer."""
    if not text.isdecimal() or int(text) < 1:
        raise argparse.ArgumentTypeError("expected a positive integer")
    return int(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python demo_site/server.py", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=DEFAULT_HOST, help="address to bind (default %(default)s)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default %(default)s; 0 = any)")
    parser.add_argument("--upstream", metavar="BASE_URL",
                        help=f"proxy the model routes to this CometAPI-compatible base URL (key from ${KEY_ENV})")
    parser.add_argument("--static", metavar="DIR", type=Path, default=DEFAULT_STATIC_DIR,
                        help="static site directory (default demo_site/static)")
    parser.add_argument("--allow-origin", metavar="ORIGIN", type=_origin, action="append", default=[],
                        help="let pages on ORIGIN (scheme://host[:port], exact; repeatable) call the model routes "
                             "and load the kit under /webclient/ (CORS); nothing else is shared")
    parser.add_argument("--allow-host", metavar="NAME", type=_host, action="append", default=[],
                        help="also answer requests that name the server NAME (a DNS name; IP addresses and "
                             "localhost always work); any other Host is refused (DNS rebinding)")
    parser.add_argument("--max-streams-per-client", metavar="N", type=_positive,
                        default=ServerLimits.max_streams_per_client,
                        help="concurrent model-route streams per client address (default %(default)s)")
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
    try:
        app = build_app(static_dir=args.static, upstream=args.upstream, api_key=api_key,
                        config=UpstreamConfig(time_scale=args.time_scale, stall_seconds=args.stall_seconds),
                        csp_unsafe_eval=args.csp_unsafe_eval, allow_origins=args.allow_origin,
                        allow_hosts=args.allow_host,
                        limits=ServerLimits(max_streams_per_client=args.max_streams_per_client))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_serve_until_signalled(app, args.host, args.port))
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port} ({exc.strerror})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
