"""The demo server's command line: what ``python demo_site/server.py ...`` (the README's demo command) does with
each option, how it stops, and how it refuses what it cannot do.

``main()`` runs here in the test's own thread (the signal handlers need the main thread); a helper thread waits
until the server answers, talks to it, then sends the process the signal that stops it. The server installs its
handlers before it listens, so a signal sent once it answers can only reach them. One test runs the file as the
demo command does, in a subprocess.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import re
import select
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytestmark = pytest.mark.host

pytest.importorskip("aiohttp.web")

from demo_site import server as demo_server  # noqa: E402  (after the importorskip guard)
from demo_site.guards import ServerLimits  # noqa: E402
from tests import raw_http  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
T = TypeVar("T")
#: How long a server may take to answer its first request (or print its address) after start.
UP_WITHIN_S = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(base: str) -> None:
    deadline = time.monotonic() + UP_WITHIN_S
    while True:
        try:
            raw_http.request(base, "/demo/config.json")
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def serve_main(argv: list[str], during: Callable[[str], T], stop_with: int = signal.SIGTERM) -> tuple[int, T]:
    """Run ``main(argv + --port P)`` here; once it answers, ``during(base_url)`` runs in a helper thread, which
    then sends ``stop_with`` to this process. Returns main's exit status and what ``during`` returned."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {}

    def client() -> None:
        try:
            wait_until_up(base)
        except BaseException as exc:  # never came up: nothing to stop (and no handler to catch a signal)
            out["error"] = exc
            return
        try:
            out["value"] = during(base)
        except BaseException as exc:
            out["error"] = exc
        finally:
            os.kill(os.getpid(), stop_with)

    helper = threading.Thread(target=client, daemon=True)
    helper.start()
    code = demo_server.main([*argv, "--port", str(port)])
    helper.join(UP_WITHIN_S)
    if "error" in out:
        raise out["error"]
    return code, out["value"]


#: A chat request's parts (the scenario goes in its ``x-demo-scenario`` header).
CHAT_PATH = "/v1/chat/completions"
CHAT_BODY = json.dumps({"model": "gpt-4o-mini", "stream": True,
                        "messages": [{"role": "user", "content": "hi"}]}).encode()


def chat_headers(scenario: str) -> dict[str, str]:
    return {"Content-Type": "application/json", "x-demo-scenario": scenario}


def stream_for(base: str, scenario: str) -> tuple[raw_http.RawResponse, float]:
    """One chat request for ``scenario``, read to its end; the response and the seconds taken."""
    start = time.monotonic()
    got = raw_http.request(base, CHAT_PATH, method="POST", body=CHAT_BODY, headers=chat_headers(scenario))
    return got, time.monotonic() - start


@pytest.fixture
def site(tmp_path: Path) -> Path:
    (tmp_path / "index.html").write_text("<!doctype html><title>cli</title>", encoding="utf-8")
    return tmp_path


def test_the_command_line_serves_the_site_and_the_model_routes_and_a_sigterm_stops_it_cleanly(
        site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def during(base: str) -> tuple[raw_http.RawResponse, raw_http.RawResponse, raw_http.RawResponse,
                                   dict[str, str | None]]:
        page = raw_http.request(base, "/")
        config = raw_http.request(base, "/demo/config.json")
        answer, _ = stream_for(base, "plain")
        caching = {path: raw_http.request(base, path).header("cache-control")
                   for path in ("/demo/config.json", "/demo/tools.json", "/__demo/stats")}
        return page, config, answer, caching

    code, (page, config, answer, caching) = serve_main(["--static", str(site)], during)
    assert code == 0
    # The page's JSON is read fresh on every load; the counters are never stored at all.
    assert caching == {"/demo/config.json": "no-cache", "/demo/tools.json": "no-cache", "/__demo/stats": "no-store"}
    assert page.status == 200 and page.body.startswith(b"<!doctype html><title>cli</title>")
    assert page.header("referrer-policy") == "no-referrer" and page.header("x-content-type-options") == "nosniff"
    assert "'unsafe-eval'" not in (page.header("content-security-policy") or "")
    assert json.loads(config.body)["mode"] == "embedded"
    assert answer.status == 200 and answer.body.endswith(b"data: [DONE]\n\n")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("webclient demo: http://127.0.0.1:") and lines[0].endswith("/")
    assert lines[-1] == "webclient demo: stopping"


def test_a_sigint_stops_the_server_the_same_way(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, status = serve_main(["--static", str(site)], lambda base: raw_http.request(base, "/").status,
                              stop_with=signal.SIGINT)
    assert (code, status) == (0, 200)
    assert capsys.readouterr().out.splitlines()[-1] == "webclient demo: stopping"


def test_each_option_reaches_the_server(site: Path) -> None:
    """``--csp-unsafe-eval``, ``--allow-origin``, ``--allow-host``, ``--max-streams-per-client``,
    ``--stall-seconds`` and ``--time-scale``, each seen from outside."""

    def during(base: str) -> dict[str, Any]:
        seen: dict[str, Any] = {"csp": raw_http.request(base, "/").header("content-security-policy")}
        seen["named"] = raw_http.request(base, "/", hosts=("demo.internal",)).status
        seen["other"] = raw_http.request(base, "/", hosts=("elsewhere.example",)).status
        seen["cors"] = raw_http.request(base, "/v1/chat/completions", method="OPTIONS", headers={
            "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type"}).header("access-control-allow-origin")
        # One stall stream open; the client's second stream is refused while it lasts.
        held = socket.create_connection(raw_http.address(base), timeout=15)
        try:
            held.sendall(raw_http.encode(CHAT_PATH, method="POST", body=CHAT_BODY, headers=chat_headers("stall")))
            assert held.recv(65536).startswith(b"HTTP/1.1 200")
            seen["second"], _ = stream_for(base, "plain")
            rest = bytearray()
            start = time.monotonic()
            while chunk := held.recv(65536):  # the stall ends by itself after --stall-seconds
                rest += chunk
            seen["stall_s"] = time.monotonic() - start
        finally:
            held.close()
        seen["drip"], seen["drip_s"] = stream_for(base, "slow_drip")
        return seen

    code, seen = serve_main(["--static", str(site), "--csp-unsafe-eval", "--allow-origin", "https://app.example",
                             "--allow-host", "demo.internal", "--max-streams-per-client", "1",
                             "--stall-seconds", "2", "--time-scale", "0.01"], during)
    assert code == 0
    assert "script-src 'self' 'wasm-unsafe-eval' 'unsafe-eval'" in seen["csp"]
    assert (seen["named"], seen["other"]) == (200, 421)
    assert seen["cors"] == "https://app.example"
    assert seen["second"].status == 429, "one stream per client: the second is refused"
    assert seen["stall_s"] < 9, "--stall-seconds 2 (the default, 60 s, would outlast the socket's timeout)"
    # slow_drip waits 0.35 s per event at scale 1 (several seconds in all); at 0.01 it is over at once.
    assert seen["drip"].body.endswith(b"data: [DONE]\n\n") and seen["drip_s"] < 3


def test_the_defaults_are_the_documented_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    built: dict[str, Any] = {}

    def fake_build_app(**options: Any) -> object:
        built.update(options)
        raise ValueError("stop here")

    monkeypatch.setattr(demo_server, "build_app", fake_build_app)
    assert demo_server.main([]) == 2
    assert built["static_dir"] == demo_server.DEFAULT_STATIC_DIR and built["upstream"] is None
    assert built["api_key"] is None and built["csp_unsafe_eval"] is False
    assert built["allow_origins"] == [] and built["allow_hosts"] == []
    assert built["limits"] == ServerLimits()
    assert (built["config"].time_scale, built["config"].stall_seconds) == (1.0, 60.0)
    assert (demo_server.DEFAULT_HOST, demo_server.DEFAULT_PORT) == ("127.0.0.1", 8000)
    assert demo_server.DEFAULT_STATIC_DIR == REPO / "demo_site" / "static"


def test_a_missing_static_directory_is_a_warning_and_the_api_still_answers(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    missing = tmp_path / "nowhere"
    with caplog.at_level(logging.WARNING, logger="demo_site.server"):
        code, statuses = serve_main(["--static", str(missing)], lambda base: (
            raw_http.request(base, "/demo/config.json").status, raw_http.request(base, "/index.html").status))
    assert code == 0 and statuses == (200, 404)
    assert [r.getMessage() for r in caplog.records if r.name == "demo_site.server"] == [
        f"static directory {missing} does not exist; only the API routes will answer"]


def test_a_port_already_taken_is_an_error_exit_naming_the_address(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert demo_server.main(["--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot listen on 127.0.0.1:{port} (") and err.rstrip().endswith(")")


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "x", ""])
def test_max_streams_per_client_must_be_a_positive_integer(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        demo_server.main(["--max-streams-per-client", value])
    assert exited.value.code == 2 and "expected a positive integer" in capsys.readouterr().err


def test_proxy_mode_without_the_key_is_an_error_exit_before_anything_is_built(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("COMETAPI_KEY", raising=False)
    built: list[object] = []
    monkeypatch.setattr(demo_server, "build_app", lambda **options: built.append(options))
    assert demo_server.main(["--upstream", "https://api.cometapi.com/v1"]) == 2
    assert built == []
    assert capsys.readouterr().err == "error: --upstream needs the API key in the COMETAPI_KEY environment variable\n"


def test_a_malformed_upstream_is_an_error_exit(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(demo_server.KEY_ENV, "sk-cli-test")
    assert demo_server.main(["--upstream", "ftp://example.com/v1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "sk-cli-test" not in err


def test_a_base_url_names_an_ipv6_host_in_brackets() -> None:
    assert demo_server._url("::1", 8000) == "http://[::1]:8000"
    assert demo_server._url("127.0.0.1", 8000) == "http://127.0.0.1:8000"


def test_proxy_mode_takes_the_key_from_cometapi_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMETAPI_KEY", "sk-cli-proxy-test")

    def during(base: str) -> tuple[str, dict[str, Any]]:
        config = json.loads(raw_http.request(base, "/demo/config.json").body)
        return config["mode"], json.loads(raw_http.request(base, "/__demo/stats").body)

    code, (mode, stats) = serve_main(["--upstream", "http://127.0.0.1:9/v1"], during)
    assert (code, mode) == (0, "proxy")
    assert stats == {"streams": {"proxy": {"started": 0, "finished": 0, "disconnected": 0}}, "active": 0}


def test_the_help_lists_every_option_with_what_it_does_and_its_default(capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "2000")  # one line per option: no wrapping inside the phrases checked
    with pytest.raises(SystemExit) as exited:
        demo_server.main(["--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert text.startswith("usage: python demo_site/server.py ")
    assert demo_server.__doc__ is not None and demo_server.__doc__.splitlines()[0] in text
    for shown in ("--host HOST address to bind (default 127.0.0.1)",
                  "--port PORT port (default 8000; 0 = any)",
                  "--upstream BASE_URL proxy the model routes to this CometAPI-compatible base URL (key from "
                  "$COMETAPI_KEY)",
                  "--static DIR static site directory (default demo_site/static)",
                  "--allow-origin ORIGIN let pages on ORIGIN (scheme://host[:port], exact; repeatable) call the model "
                  "routes",
                  "--allow-host NAME also answer requests that name the server NAME (a DNS name;",
                  "--max-streams-per-client N concurrent model-route streams per client address (default "
                  f"{ServerLimits.max_streams_per_client})",
                  "--csp-unsafe-eval add 'unsafe-eval' to script-src (only for a run_js-based fast path)",
                  "--stall-seconds STALL_SECONDS how long the stall scenario stays silent (default 60.0)",
                  "--time-scale TIME_SCALE multiply scenario delays (default 1.0)"):
        assert shown in text, shown


def test_the_content_security_policy_is_exactly_the_documented_one() -> None:
    """Every directive matters: ``default-src`` is the fallback, ``worker-src``/``connect-src`` keep the worker and
    fetch on this origin, ``object-src``/``base-uri`` shut two script-injection routes, ``frame-ancestors`` stops
    framing. Pyodide needs ``'wasm-unsafe-eval'``; ``'unsafe-eval'`` only with ``--csp-unsafe-eval``."""
    directives = ["default-src 'self'", "script-src 'self' 'wasm-unsafe-eval'", "worker-src 'self'",
                  "connect-src 'self'", "img-src 'self' data:", "style-src 'self'", "object-src 'none'",
                  "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'"]
    assert demo_server.content_security_policy() == "; ".join(directives)
    directives[1] += " 'unsafe-eval'"
    assert demo_server.content_security_policy(unsafe_eval=True) == "; ".join(directives)


@pytest.mark.parametrize(("hosts", "status", "error"), [
    (("elsewhere.example",), 421, {"type": "demo_server_error", "code": "misdirected_request",
                                   "message": "this server does not answer to that host name"}),
    (("user@localhost",), 400, {"type": "demo_server_error", "code": "bad_host",
                                "message": "the request needs exactly one valid Host header"}),
    (("host:port",), 400, {"type": "demo_server_error", "code": "bad_host",
                           "message": "the request needs exactly one valid Host header"}),
])
def test_a_refused_host_gets_a_fixed_json_error_and_the_connection_closed(
        hosts: tuple[str, ...], status: int, error: dict[str, str]) -> None:
    running = demo_server.start_in_background(static_dir=None)
    try:
        got = raw_http.request(running.base_url, "/demo/config.json", hosts=hosts)
    finally:
        running.stop()
    assert got.status == status and json.loads(got.body) == {"error": error}
    assert got.header("connection") == "close"


def test_the_app_closes_the_proxys_client_session_at_cleanup() -> None:
    import asyncio

    from aiohttp import web

    from demo_site.proxy import UpstreamProxy

    app = demo_server.build_app(static_dir=None, upstream="http://127.0.0.1:9/v1", api_key="sk-cleanup-test")
    proxy = next(owner for cb in app.on_startup if isinstance(owner := getattr(cb, "__self__", None), UpstreamProxy))

    async def lifecycle() -> tuple[bool, bool]:
        runner = web.AppRunner(app)
        await runner.setup()
        session = proxy._session
        assert session is not None
        opened = session.closed
        await runner.cleanup()
        return opened, session.closed

    assert asyncio.run(lifecycle()) == (False, True)


@pytest.mark.parametrize("options", [{}, {"upstream": "http://127.0.0.1:9/v1", "api_key": "sk-start-test"}],
                         ids=["embedded", "proxy"])
def test_a_background_server_that_cannot_listen_says_so_names_the_cause_and_leaves_nothing_open(
        options: dict[str, Any]) -> None:
    """Nothing open: its event loop, and the app's cleanup run (in proxy mode, the client session its startup
    opened)."""
    with socket.socket() as taken, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(RuntimeError, match="demo server failed to start") as raised:
            demo_server.start_in_background(static_dir=None, port=taken.getsockname()[1], **options)
        assert isinstance(raised.value.__cause__, OSError)
        del raised  # (its traceback holds the server thread's frames, and so its event loop)
        gc.collect()  # an event loop or runner left open says so (ResourceWarning) when it is collected
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_stopping_a_background_server_twice_is_harmless() -> None:
    running = demo_server.start_in_background(static_dir=None)
    assert raw_http.request(running.base_url, "/demo/config.json").status == 200
    threads = [t for t in threading.enumerate() if t.name == "demo-server"]
    assert threads and all(t.daemon for t in threads), "a daemon thread: a test run never waits on a server"
    running.stop()
    running.stop()
    with pytest.raises(OSError):
        raw_http.request(running.base_url, "/demo/config.json")


@pytest.fixture
def demo_process(site: Path) -> Iterator[subprocess.Popen[str]]:
    # Not from the repository, and without the editable install's path entry (``-S``: no .pth files; the
    # third-party packages come from PYTHONPATH): the file finds its own package, as from any Python.
    paths = sysconfig.get_paths()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys([paths["purelib"], paths["platlib"]]))}
    env.pop("PYTHONUNBUFFERED", None)  # stdout is a pipe, block-buffered: the address line must be flushed
    proc = subprocess.Popen([sys.executable, "-S", str(REPO / "demo_site" / "server.py"), "--port", "0",
                             "--static", str(site / "missing")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=str(site), env=env)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


def test_the_file_runs_as_the_demo_command_runs_it_and_stops_on_sigterm(
        demo_process: subprocess.Popen[str]) -> None:
    assert demo_process.stdout is not None
    ready, _, _ = select.select([demo_process.stdout], [], [], UP_WITHIN_S)
    assert ready, "the server printed no address"
    first = demo_process.stdout.readline().strip()
    assert first.startswith("webclient demo: http://127.0.0.1:") and first.endswith("/")
    base = first.removeprefix("webclient demo: ").rstrip("/")
    assert raw_http.request(base, "/demo/config.json").status == 200
    demo_process.send_signal(signal.SIGTERM)
    out, err = demo_process.communicate(timeout=10)
    assert demo_process.returncode == 0 and out.strip() == "webclient demo: stopping"
    # The log's format: time, logger name, message (no level, no content).
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} demo_site\.server static directory \S+ does not exist; "
                        r"only the API routes will answer", err.strip()), err
