"""The demo server as an attacker sees it: every path, header and redirect is attacker input (issue 10, item 1).

Everything runs against the real aiohttp server on 127.0.0.1. Requests go out through :mod:`tests.raw_http`, so the
request target reaches the server byte for byte (no client-side normalization of ``//``, ``..`` or
percent-encoding). Proxy mode runs against a fake real upstream that records every request's raw path and
headers, and a second origin that records whatever reaches it (the key must never).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import gzip
import itertools
import json
import logging
import random
import re
import socket
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

pytestmark = pytest.mark.host

aiohttp_web = pytest.importorskip("aiohttp.web")

from demo_site import server as demo_server  # noqa: E402  (after the importorskip guard)
from demo_site.content_decoding import (  # noqa: E402
    DECODE_STEP_BYTES,
    BodyDecoder,
    CorruptBody,
    DecodedBodyTooLarge,
    UnsupportedEncoding,
    parse_content_encoding,
)
from demo_site.guards import (  # noqa: E402
    MAX_DECODED_BODY_BYTES,
    RETRY_AFTER_SECONDS,
    ServerLimits,
    StreamGuard,
)
from demo_site.hosts import HostPolicy  # noqa: E402
from demo_site.redact import REDACTED, SecretFilter  # noqa: E402
from demo_site.upstream import UpstreamConfig  # noqa: E402
from tests import raw_http  # noqa: E402

SECRET = "outside-the-site-5b1d9e"
KEY = "sk-test-canary-9e41c07a"
CHAT_BODY = json.dumps({"model": "gpt-4o-mini", "stream": True,
                        "messages": [{"role": "user", "content": "hi"}]}).encode()
GEMINI_BODY = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode()


# --- static files -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site directory with symlinks into and out of it, next to files that must stay unreachable."""
    base = tmp_path_factory.mktemp("attack")
    root = base / "site"
    root.mkdir()
    (root / "index.html").write_text("<!doctype html><title>site</title>", encoding="utf-8")
    (root / "app.js").write_text("export const ok = 1;\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / "page.txt").write_text("inside", encoding="utf-8")
    (base / "outside.txt").write_text(SECRET, encoding="utf-8")
    # A sibling whose name starts with the site's name: a string-prefix containment check lets it through.
    (base / "site-private").mkdir()
    (base / "site-private" / "key.txt").write_text(SECRET, encoding="utf-8")
    (root / "link-out.txt").symlink_to(base / "outside.txt")
    (root / "dir-out").symlink_to(base)
    (root / "sibling").symlink_to(base / "site-private")
    (root / "escape").mkdir()
    (root / "escape" / "index.html").symlink_to(base / "outside.txt")
    (root / "inner-link.js").symlink_to(root / "app.js")
    (root / "inner-dir").symlink_to(root / "sub")
    return root


@pytest.fixture(scope="module")
def static_server(site: Path) -> Iterator[str]:
    running = demo_server.start_in_background(static_dir=site)
    try:
        yield running.base_url
    finally:
        running.stop()


#: Request targets that must never leave the site; ``{outside}`` is the absolute path of a file next to the site,
#: without its leading ``/``.
ATTACKS = (
    # absolute paths after a doubled slash (the finding), plain and with encoded separators
    "//{outside}", "//etc/passwd", "///etc/passwd", "/%2f{outside_encoded}", "/{outside_encoded_all}",
    "/%2fetc%2fpasswd", "/%2Fetc/passwd", "/sub/%2f{outside}", "/sub//{outside}",
    # dot-dot in every spelling
    "/../outside.txt", "/sub/../../outside.txt", "/..%2foutside.txt", "/..%2Foutside.txt",
    "/%2e%2e/outside.txt", "/%2E%2E%2Foutside.txt", "/.%2e/outside.txt", "/%2e./outside.txt",
    "/sub/%2e%2e/%2e%2e/outside.txt", "/%252e%252e/outside.txt", "/%c0%ae%c0%ae/outside.txt",
    "/sub/./../../outside.txt",
    # backslashes
    "/..\\outside.txt", "/sub\\..\\..\\outside.txt", "/%5c..%5coutside.txt", "/..%5Coutside.txt",
    # NUL
    "/app.js%00", "/app.js%00.html", "/sub%00/page.txt",
    # symlinks out of the site: a file, a directory, a prefix-sharing sibling, an index.html
    "/link-out.txt", "/dir-out/outside.txt", "/dir-out/site-private/key.txt", "/sibling/key.txt",
    "/escape/", "/escape",
    # absolute-form request targets
    "http://localhost//etc/passwd", "http://localhost/../outside.txt",
)


def attack_target(template: str, site: Path) -> str:
    outside = str(site.parent / "outside.txt").lstrip("/")
    return template.format(outside=outside, outside_encoded=outside.replace("/", "%2F"),
                           outside_encoded_all="%2F" + outside.replace("/", "%2f"))


@pytest.mark.parametrize("template", ATTACKS)
def test_static_files_refuse_paths_whose_real_path_is_outside_the_site_with_a_bare_404(
        static_server: str, site: Path, template: str) -> None:
    path = attack_target(template, site)
    got = raw_http.request(static_server, path)
    missing = raw_http.request(static_server, "/no-such-file.txt")
    assert got.status == 404, f"{path!r} answered {got.status}"
    assert SECRET.encode() not in got.body and b"root:" not in got.body
    assert got.body == missing.body, "a refusal says no more than a missing file does"
    assert got.header("content-security-policy") and got.header("x-content-type-options") == "nosniff"


@pytest.mark.parametrize(("path", "body"), [("/", b"<!doctype html>"), ("/app.js", b"export const ok"),
                                            ("/inner-link.js", b"export const ok"), ("/inner-dir/page.txt", b"inside"),
                                            ("/sub/page.txt", b"inside"), ("/sub/page.txt?v=1", b"inside")])
def test_files_and_symlinks_inside_the_site_are_still_served(static_server: str, path: str, body: bytes) -> None:
    got = raw_http.request(static_server, path)
    assert got.status == 200 and got.body.startswith(body)


# --- proxy mode: a fake real upstream and a second origin ----------------------------------------------

#: Redirect statuses the fake upstream answers with when the request's model names one.
REDIRECTS = (301, 302, 303, 307, 308)


@dataclass
class Recorder:
    """An aiohttp app that records every request (method, raw path, headers) and answers per ``model``."""

    redirect_to: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> Any:
        web = aiohttp_web

        async def handle(request: Any) -> Any:
            body = await request.read()
            self.requests.append({"method": request.method, "raw_path": request.raw_path,
                                  "headers": {k.lower(): v for k, v in request.headers.items()}})
            try:
                model = json.loads(body or b"{}").get("model", "")
            except (ValueError, AttributeError):
                model = ""
            if model == "echo-key-error":  # a gateway that quotes the credential it was sent
                sent = request.headers.get("authorization", "")
                return web.json_response({"error": {"message": f"invalid key: {sent}"}}, status=401,
                                         headers={"x-request-id": f"req-{sent}"})
            if model == "echo-key-stream":  # ... or leaks it into a stream, split across writes
                stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
                await stream.prepare(request)
                body = f'data: {{"k": "{KEY}", "again": "{KEY}{KEY}"}}\n\n'.encode()
                for i in range(0, len(body), 7):
                    await stream.write(body[i : i + 7])
                    await asyncio.sleep(0.005)
                await stream.write_eof()
                return stream
            if model == "key-prefix-tail":  # a body that ends in what could have been the start of the key
                return web.Response(body=b"data: [DONE]\n\n" + KEY[:6].encode(), content_type="text/event-stream")
            if model == "set-cookie":
                return web.Response(body=b"data: [DONE]\n\n", content_type="text/event-stream",
                                    headers={"Set-Cookie": "upstream_session=1; Path=/"})
            if isinstance(model, str) and model.startswith("redirect-"):
                status = int(model.split("-")[1])
                location = self.redirect_to + "/steal" if model.endswith("-away") else "/v1/elsewhere"
                return web.Response(status=status, headers={"Location": location}, text="moved")
            return web.Response(body=b"data: [DONE]\n\n", content_type="text/event-stream",
                                headers={"request-id": "req_a1", "x-request-id": "req_x1", "x-other": "kept back"})

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        return app

    def keys_seen(self) -> list[str]:
        return [value for r in self.requests for value in r["headers"].values() if KEY in value]


@dataclass
class ProxySetup:
    front: str
    upstream: Recorder
    elsewhere: Recorder


@contextlib.contextmanager
def proxy_front(app_factory: Callable[[], Any], *, prefix: str = "", host: str = "127.0.0.1",
                **options: Any) -> Iterator[str]:
    """A fake real upstream serving ``app_factory``'s app, and a demo server in proxy mode in front of it whose base
    URL is the upstream's, named by ``host``, plus ``prefix``; yields the front's base URL and stops both."""
    real = demo_server.start_in_background(app_factory=app_factory)
    base = real.base_url.replace("127.0.0.1", host) + prefix
    try:
        front = demo_server.start_in_background(static_dir=None, upstream=base, api_key=KEY, **options)
        try:
            yield front.base_url
        finally:
            front.stop()
    finally:
        real.stop()


@pytest.fixture(scope="module")
def proxy_setup() -> Iterator[ProxySetup]:
    elsewhere = Recorder()
    other = demo_server.start_in_background(app_factory=elsewhere.app)
    upstream = Recorder(redirect_to=other.base_url)
    try:
        with proxy_front(upstream.app) as front:
            yield ProxySetup(front, upstream, elsewhere)
    finally:
        other.stop()


#: Gemini model segments that must never reach the upstream (the first is the issue's finding).
BAD_MODELS = ("..%2F..%2Fadmin%2Fdelete%3Fall%3D1%23", "..%2f..%2fadmin", "%2e%2e", "..", ".", "a%2Fb", "a%5Cb",
              "a%3Fx%3D1", "a%23b", "a%20b", "a%3Ab", "a%00b", "%C3%A9", "-leading", "x" * 200, "a%252Fb",
              "gemini%0d%0aX-Injected:1")


@pytest.mark.parametrize("model", BAD_MODELS)
def test_proxy_refuses_a_gemini_model_segment_outside_the_strict_name_pattern(proxy_setup: ProxySetup,
                                                                            model: str) -> None:
    before = len(proxy_setup.upstream.requests)
    got = raw_http.request(proxy_setup.front, f"/v1beta/models/{model}:streamGenerateContent?alt=sse",
                           method="POST", headers={"Content-Type": "application/json"}, body=GEMINI_BODY)
    assert got.status in (400, 404), f"model {model!r} answered {got.status}"
    if got.status == 400:  # the route matched and the proxy refused the variable (else the router did)
        assert json.loads(got.body) == {"error": {"type": "demo_proxy_error", "code": "invalid_model",
                                                  "message": "the model name is not a valid model identifier"}}
    assert len(proxy_setup.upstream.requests) == before, "nothing reaches the upstream"
    assert KEY.encode() not in got.wire_body


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-2.0-flash-exp", "gemini-1.5-pro-002", "m.v1_test"])
def test_proxy_builds_the_gemini_upstream_path_from_the_route_table(proxy_setup: ProxySetup, model: str) -> None:
    got = raw_http.request(proxy_setup.front, f"/v1beta/models/{model}:streamGenerateContent?alt=sse",
                           method="POST", headers={"Content-Type": "application/json"}, body=GEMINI_BODY)
    seen = proxy_setup.upstream.requests[-1]
    assert got.status == 200 and got.header("cache-control") == "no-cache"
    assert seen["raw_path"] == f"/v1beta/models/{model}:streamGenerateContent?alt=sse"
    assert seen["headers"]["x-goog-api-key"] == KEY


def test_proxy_passes_only_allow_listed_query_parameters(proxy_setup: ProxySetup) -> None:
    gemini = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    raw_http.request(proxy_setup.front, gemini + "?key=page-key&alt=sse&alt=json&x=%2F..&%24fields=a",
                     method="POST", body=GEMINI_BODY)
    assert proxy_setup.upstream.requests[-1]["raw_path"] == gemini + "?alt=sse"
    raw_http.request(proxy_setup.front, gemini + "?alt=../x", method="POST", body=GEMINI_BODY)
    assert proxy_setup.upstream.requests[-1]["raw_path"] == gemini
    raw_http.request(proxy_setup.front, "/v1/chat/completions?key=page-key&alt=sse&next=%2F%2Fevil",
                     method="POST", body=CHAT_BODY)
    assert proxy_setup.upstream.requests[-1]["raw_path"] == "/v1/chat/completions"


@pytest.mark.parametrize("target", ["/v1/chat/%63ompletions", "/v1/chat/completions?a=%2F..%2F..%2Fadmin"])
def test_proxy_never_forwards_the_raw_or_decoded_request_path(proxy_setup: ProxySetup, target: str) -> None:
    got = raw_http.request(proxy_setup.front, target, method="POST", body=CHAT_BODY)
    assert got.status == 200
    assert proxy_setup.upstream.requests[-1]["raw_path"] == "/v1/chat/completions"


@pytest.mark.parametrize("status", REDIRECTS)
@pytest.mark.parametrize("where", ["away", "same-origin"])
def test_proxy_never_follows_an_upstream_redirect_and_the_key_never_leaves_the_configured_origin(
        proxy_setup: ProxySetup, status: int, where: str) -> None:
    before = len(proxy_setup.upstream.requests)
    model = f"redirect-{status}-away" if where == "away" else f"redirect-{status}"
    body = json.dumps({"model": model, "stream": True, "messages": []}).encode()
    for target in ("/v1/messages", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"):
        got = raw_http.request(proxy_setup.front, target, method="POST", body=body,
                               headers={"Content-Type": "application/json"})
        assert got.status == status, "the 3xx reaches the page as a failed response"
        assert got.header("location") is None, "the page is not sent anywhere either"
    assert proxy_setup.elsewhere.requests == [], "nothing reaches the second origin"
    assert proxy_setup.elsewhere.keys_seen() == []
    assert len(proxy_setup.upstream.requests) == before + 2, "one request per page request: no retry, no follow"


@pytest.mark.parametrize("model", ["echo-key-error", "echo-key-stream"])
def test_an_upstream_that_echoes_the_key_never_gets_it_to_the_page(proxy_setup: ProxySetup, model: str) -> None:
    body = json.dumps({"model": model, "stream": True, "messages": []}).encode()
    got = raw_http.request(proxy_setup.front, "/v1/chat/completions", method="POST", body=body)
    assert proxy_setup.upstream.requests[-1]["headers"]["authorization"] == f"Bearer {KEY}"  # it was sent there
    wire = got.wire_body + "".join(v for values in got.headers.values() for v in values).encode()
    assert KEY.encode() not in wire and KEY[:-1].encode() not in wire
    if model == "echo-key-error":
        assert got.status == 401 and json.loads(got.body) == {"error": {"message": "invalid key: Bearer [redacted]"}}
        assert got.header("x-request-id") == "req-Bearer [redacted]"
    else:
        assert got.status == 200
        assert got.body == b'data: {"k": "[redacted]", "again": "[redacted][redacted]"}\n\n'


def _filtered(secret: bytes, chunks: list[bytes]) -> tuple[bytes, int]:
    """What a SecretFilter lets out for ``chunks``, and the most it ever held back."""
    f = SecretFilter(secret)
    out, fed, held = b"", b"", 0
    for chunk in chunks:
        out += f.feed(chunk)
        fed += chunk
        held = max(held, len(fed) - len(out.replace(REDACTED, secret)))
    return out + f.end(), held


@pytest.mark.parametrize("data", [
    b"", b"sk-key", b"xsk-keyx", b"sk-keysk-key", b"sk-sk-key", b"sk-ke", b"data: sk-ke\n\nsk-key", b"sssk-kkey",
    b"\xe2\x82sk-key\xac", b"sk-k" * 3 + b"ey", b"xssk-key", b"sk-key-a-sk-key-b-sk",
], ids=range(12))
def test_the_key_filter_redacts_every_occurrence_under_every_chunking(data: bytes) -> None:
    """Whole, at every single and every pair of split points, and byte by byte: the same output, the key
    replaced everywhere, anything else (a prefix of the key left at the end included) unchanged."""
    secret = b"sk-key"
    expected = data.replace(secret, REDACTED)
    splits = [[data]] + [[data[:i], data[i:]] for i in range(len(data) + 1)]
    splits += [[data[:i], data[i:j], data[j:]] for i, j in itertools.combinations(range(len(data) + 1), 2)]
    splits.append([data[i : i + 1] for i in range(len(data))])
    for chunks in splits:
        out, held = _filtered(secret, chunks)
        assert out == expected, chunks
        assert held <= len(secret) - 1


def test_the_key_filter_holds_nothing_back_after_a_chunk_that_cannot_start_the_key() -> None:
    f = SecretFilter(b"sk-proj-abc123")
    assert f.feed(b'data: {"a": 1}\n\n') == b'data: {"a": 1}\n\n'
    assert f.feed(b"data: s") == b"data: "  # "s" might begin the key: held until the next chunk decides
    assert f.feed(b"o\n\n") == b"so\n\n"
    rng = random.Random(7)
    data = bytes(rng.choice(b"sk-proj-abc123 xyz") for _ in range(5000))
    cuts = sorted(rng.sample(range(len(data)), 300))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    out, _ = _filtered(b"sk-proj-abc123", chunks)
    assert out == data.replace(b"sk-proj-abc123", REDACTED)
    with pytest.raises(ValueError):
        SecretFilter(b"")


def test_proxy_keeps_no_cookies_from_the_upstream_between_requests(proxy_setup: ProxySetup) -> None:
    # The fake's answers carry no Set-Cookie; the front must not send one anyway, and the page's is dropped.
    raw_http.request(proxy_setup.front, "/v1/responses", method="POST", body=CHAT_BODY,
                     headers={"Cookie": "session=page"})
    assert "cookie" not in proxy_setup.upstream.requests[-1]["headers"]


@pytest.mark.parametrize("route", ["/v1/chat/completions", "/v1/messages", "/v1/responses",
                                   "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"])
def test_proxy_asks_every_route_for_an_identity_body_and_pins_the_anthropic_version_only_when_the_page_does_not(
        proxy_setup: ProxySetup, route: str) -> None:
    for version in (None, "2099-01-01"):
        headers = {"Accept-Encoding": "gzip, br", "Content-Type": "application/json"}
        if version is not None:
            headers["anthropic-version"] = version
        assert raw_http.request(proxy_setup.front, route, method="POST", body=CHAT_BODY, headers=headers).status == 200
        seen = proxy_setup.upstream.requests[-1]["headers"]
        assert seen["accept-encoding"] == "identity" and seen["content-type"] == "application/json"
        if route == "/v1/messages":
            assert seen["anthropic-version"] == (version or "2023-06-01")
        else:
            assert seen.get("anthropic-version") == version  # passed as sent, never added


@dataclass
class Prefixed:
    """A front whose upstream base URL is ``http://localhost:PORT/api%20gateway/v1/``: a path prefix with a
    percent-escape (sent as written, never escaped twice), and a host name (not an address) so that a cookie jar
    would keep the upstream's cookies."""

    front: str
    upstream: Recorder


@pytest.fixture(scope="module")
def prefixed() -> Iterator[Prefixed]:
    upstream = Recorder()
    with proxy_front(upstream.app, prefix="/api%20gateway/v1/", host="localhost") as front:
        yield Prefixed(front, upstream)


@pytest.mark.parametrize(("target", "method", "upstream_path"), [
    ("/v1/chat/completions", "POST", "/api%20gateway/v1/chat/completions"),
    ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "POST",
     "/api%20gateway/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
    ("/v1/responses/resp_1?stream=true", "GET", "/api%20gateway/v1/responses/resp_1?stream=true"),
])
def test_proxy_keeps_the_base_urls_path_prefix(prefixed: Prefixed, target: str, method: str,
                                              upstream_path: str) -> None:
    body = CHAT_BODY if method == "POST" else b""
    assert raw_http.request(prefixed.front, target, method=method, body=body).status == 200
    assert prefixed.upstream.requests[-1]["raw_path"] == upstream_path


def test_proxy_keeps_no_cookie_the_upstream_sets(prefixed: Prefixed) -> None:
    body = json.dumps({"model": "set-cookie", "stream": True, "messages": []}).encode()
    got = raw_http.request(prefixed.front, "/v1/chat/completions", method="POST", body=body)
    assert got.status == 200 and got.header("set-cookie") is None
    raw_http.request(prefixed.front, "/v1/chat/completions", method="POST", body=CHAT_BODY)
    assert "cookie" not in prefixed.upstream.requests[-1]["headers"], "the upstream's cookie came back to it"


def test_proxy_ignores_proxy_settings_in_the_environment(proxy_setup: ProxySetup,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(name, proxy_setup.upstream.redirect_to)  # the second origin, as a forward proxy
    before = len(proxy_setup.upstream.requests)
    assert raw_http.request(proxy_setup.front, "/v1/chat/completions", method="POST", body=CHAT_BODY).status == 200
    assert len(proxy_setup.upstream.requests) == before + 1
    assert proxy_setup.elsewhere.requests == [] and proxy_setup.elsewhere.keys_seen() == []


def test_proxy_passes_the_allow_listed_headers_both_ways_and_nothing_else(proxy_setup: ProxySetup,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    page = {"Content-Type": "application/json", "Accept": "text/event-stream", "anthropic-version": "2023-06-01",
            "anthropic-beta": "tools-2024", "OpenAI-Beta": "responses=v1", "Last-Event-ID": "7",
            "X-Custom": "no", "Authorization": "Bearer page", "Origin": "https://evil.example"}
    with caplog.at_level(logging.ERROR):
        got = raw_http.request(proxy_setup.front, "/v1/messages", method="POST", body=CHAT_BODY, headers=page)
    seen = proxy_setup.upstream.requests[-1]["headers"]
    for name in ("Content-Type", "Accept", "anthropic-version", "anthropic-beta", "OpenAI-Beta", "Last-Event-ID"):
        assert seen[name.lower()] == page[name], name
    assert "x-custom" not in seen and "origin" not in seen and seen["authorization"] == f"Bearer {KEY}"
    assert got.status == 200 and got.body == b"data: [DONE]\n\n"
    assert (got.header("request-id"), got.header("x-request-id"), got.header("x-other")) == ("req_a1", "req_x1", None)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "the answer ends cleanly in the server"


def test_a_body_ending_in_a_prefix_of_the_key_reaches_the_page_whole(proxy_setup: ProxySetup) -> None:
    body = json.dumps({"model": "key-prefix-tail", "stream": True, "messages": []}).encode()
    got = raw_http.request(proxy_setup.front, "/v1/chat/completions", method="POST", body=body)
    assert got.status == 200 and got.body == b"data: [DONE]\n\n" + KEY[:6].encode()


@pytest.mark.parametrize(("status", "warned"), [(299, False), (300, True), (302, True), (399, True), (400, False)])
def test_proxy_logs_a_warning_for_an_upstream_redirect_only(proxy_setup: ProxySetup, status: int, warned: bool,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    body = json.dumps({"model": f"redirect-{status}", "stream": True, "messages": []}).encode()
    with caplog.at_level(logging.INFO, logger="demo_site.server"):
        got = raw_http.request(proxy_setup.front, "/v1/chat/completions", method="POST", body=body)
        time.sleep(0.05)
    assert got.status == status and got.header("location") is None
    warnings = [r.getMessage() for r in caplog.records if r.name == "demo_site.server" and r.levelno == logging.WARNING]
    assert warnings == ([f"proxy openai-chat: upstream answered {status}; redirects are not followed"]
                        if warned else [])


def test_the_proxy_client_session_is_closed_at_cleanup_and_cleanup_before_startup_is_harmless() -> None:
    async def scenario() -> None:
        proxy = demo_server.UpstreamProxy("https://api.cometapi.com/v1", KEY, None)  # type: ignore[arg-type]
        assert proxy.base_url == "https://api.cometapi.com"
        app = aiohttp_web.Application()
        await proxy.cleanup(app)  # never started: nothing to close
        await proxy.startup(app)
        session = proxy._session
        assert session is not None and not session.closed
        await proxy.cleanup(app)
        assert session.closed

    asyncio.run(scenario())


def test_proxy_refuses_a_base_url_that_is_not_plain_http() -> None:
    for bad in ("ftp://example.com", "https://user:pw@example.com", "https://example.com/?x=1", "example.com",
                "https://example.com/#frag", "file:///etc/passwd", "http://", "https:///v1", "https://user@example.com",
                "https://:pw@example.com"):
        with pytest.raises(ValueError):
            demo_server.build_app(static_dir=None, upstream=bad, api_key=KEY)


# --- proxy mode: an upstream that compresses its body anyway ------------------------------------------

#: What the encoding fake upstream's body says: the credential it was sent, echoed three times in one SSE event.
ECHO_TEMPLATE = 'data: {{"k": "{key}", "again": "{key}{key}"}}\n\n'
#: The same body as the page must get it.
ECHO_REDACTED = ECHO_TEMPLATE.format(key="[redacted]").encode()
#: The decoded-body ceiling of the front the encoding tests use (the default, 64 MiB, is too much to read back).
TEST_DECODED_CEILING = 1024 * 1024
#: A coding token no decoder knows; it must never be echoed to the page or the log.
CANARY_CODING = "x-canary-coding-3f9a"


def raw_deflate(data: bytes) -> bytes:
    """``data`` as raw deflate (RFC 1951: no zlib header or trailer), as some servers send ``deflate``."""
    co = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return co.compress(data) + co.flush()


def gzip_cut_inside_the_key(data: bytes) -> bytes:
    """A gzip stream of ``data`` flushed (and ended) three bytes before the end of its first key: the decoded
    bytes stop inside the key and the stream never ends."""
    co = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    cut = data.index(KEY.encode()) + len(KEY) - 3
    return co.compress(data[:cut]) + co.flush(zlib.Z_SYNC_FLUSH)


def flip_middle_byte(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:]


@functools.cache
def gzip_bomb() -> bytes:
    """100 MiB of zeros as gzip: about 100 KB."""
    co = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1024 * 1024)
    return b"".join(co.compress(zeros) for _ in range(100)) + co.flush()


@dataclass(frozen=True)
class Encoded:
    """One answer of the encoding fake upstream: its ``Content-Encoding`` lines and how the echo body is encoded."""

    header_lines: tuple[str, ...]
    encode: Callable[[bytes], bytes]
    #: Bytes per write (with a pause between), or 0 for one write.
    write_size: int = 0


#: Bodies the page must get decoded, filtered, whole and without ``Content-Encoding``.
DECODED = {
    "gzip": Encoded(("gzip",), gzip.compress),
    "gzip-in-3-byte-writes": Encoded(("gzip",), gzip.compress, write_size=3),
    "x-gzip": Encoded(("X-GZip",), gzip.compress),
    "deflate-zlib": Encoded(("deflate",), zlib.compress),
    "deflate-zlib-in-1-byte-writes": Encoded(("deflate",), zlib.compress, write_size=1),
    "deflate-raw": Encoded(("deflate",), raw_deflate),
    "deflate-raw-in-1-byte-writes": Encoded(("deflate",), raw_deflate, write_size=1),
    "gzip-gzip": Encoded(("gzip, gzip",), lambda b: gzip.compress(gzip.compress(b))),
    "gzip-on-two-header-lines": Encoded(("gzip", "gzip"), lambda b: gzip.compress(gzip.compress(b))),
    "deflate-then-gzip": Encoded(("deflate, identity, gzip",), lambda b: gzip.compress(raw_deflate(b)), 5),
}
#: Bodies in a coding the proxy cannot decode: a 502, and the body (the key in plain text) is never read.
UNDECODABLE = {
    "br": Encoded(("br",), lambda b: b),
    "zstd": Encoded(("zstd",), lambda b: b),
    "compress": Encoded(("compress",), lambda b: b),
    "unknown": Encoded((CANARY_CODING,), lambda b: b),
    "gzip-then-unknown": Encoded((f"gzip, {CANARY_CODING}",), lambda b: b),
    "five-gzips": Encoded((", ".join(["gzip"] * 5),), lambda b: b),
}
#: Corrupt compressed bodies, and the part of the (filtered) echo that may reach the page before the cut.
CORRUPT = {
    "not-gzip-at-all": (Encoded(("gzip",), lambda b: b), b""),
    "gzip-cut-inside-the-key": (Encoded(("gzip",), gzip_cut_inside_the_key, 4),
                                ECHO_TEMPLATE.format(key=KEY).encode()[: len('data: {"k": "')]),
    "gzip-without-its-trailer": (Encoded(("gzip",), lambda b: gzip.compress(b)[:-4]), ECHO_REDACTED),
    "gzip-with-trailing-garbage": (Encoded(("gzip",), lambda b: gzip.compress(b) + b"garbage"), ECHO_REDACTED),
    "gzip-with-a-second-member": (Encoded(("gzip",), lambda b: gzip.compress(b) + gzip.compress(b)), ECHO_REDACTED),
    "deflate-with-a-flipped-byte": (Encoded(("deflate",), lambda b: flip_middle_byte(zlib.compress(b))), None),
    "deflate-of-one-byte": (Encoded(("deflate",), lambda b: b"x"), b""),
    "gzip-gzip-inner-cut": (Encoded(("gzip, gzip",), lambda b: gzip.compress(gzip.compress(b)[:-4])),
                            ECHO_REDACTED),
}


@dataclass
class EncodingUpstream:
    """A fake real upstream answering ``model: "<case>"`` with the credential it was sent echoed in a body
    encoded as :data:`DECODED`, :data:`UNDECODABLE` or :data:`CORRUPT` say (``identity``, ``none`` and ``bomb``
    too)."""

    requests: list[str] = field(default_factory=list)

    def app(self) -> Any:
        web = aiohttp_web

        async def handle(request: Any) -> Any:
            case = json.loads(await request.read()).get("model", "")
            self.requests.append(case)
            key = request.headers.get("authorization", "").removeprefix("Bearer ")
            echo = ECHO_TEMPLATE.format(key=key).encode()
            if case == "bomb":
                encoded = Encoded(("gzip",), lambda _: gzip_bomb(), write_size=16 * 1024)
            elif case in ("identity", "none"):
                encoded = Encoded(("identity",) if case == "identity" else (), lambda b: b, write_size=7)
            else:
                encoded = {**DECODED, **UNDECODABLE, **{k: v for k, (v, _) in CORRUPT.items()}}[case]
            body = encoded.encode(echo)
            stream = web.StreamResponse(headers={"Content-Type": "text/event-stream", "x-request-id": "req_enc"})
            for line in encoded.header_lines:
                stream.headers.add("Content-Encoding", line)
            await stream.prepare(request)
            size = encoded.write_size or len(body) or 1
            for i in range(0, len(body), size):
                await stream.write(body[i : i + size])
                if encoded.write_size:
                    await asyncio.sleep(0.001)
            await stream.write_eof()
            return stream

        app = web.Application()
        app.router.add_route("POST", "/{tail:.*}", handle)
        return app


@pytest.fixture(scope="module")
def encoding_proxy() -> Iterator[tuple[str, EncodingUpstream]]:
    upstream = EncodingUpstream()
    limits = demo_server.ServerLimits(max_decoded_body_bytes=TEST_DECODED_CEILING)
    with proxy_front(upstream.app, limits=limits) as front:
        yield front, upstream


def fetch_encoded(front: str, case: str) -> raw_http.RawResponse:
    body = json.dumps({"model": case, "stream": True, "messages": []}).encode()
    return raw_http.request(front, "/v1/chat/completions", method="POST", body=body,
                            headers={"Content-Type": "application/json"})


def ended_cleanly(got: raw_http.RawResponse) -> bool:
    """Whether the chunked body ended with its last chunk (a cut connection has none)."""
    return got.wire_body.endswith(b"0\r\n\r\n")


def leaks(got: raw_http.RawResponse) -> bool:
    """Whether the key, or its first ``len(key) - 3`` bytes, reached the page in the body or a header."""
    wire = got.wire_body + "".join(v for values in got.headers.values() for v in values).encode()
    return KEY[:-3].encode() in wire


@pytest.mark.parametrize("case", DECODED)
def test_an_encoded_upstream_body_reaches_the_page_decoded_without_the_key_and_without_content_encoding(
        encoding_proxy: tuple[str, EncodingUpstream], case: str) -> None:
    front, _ = encoding_proxy
    got = fetch_encoded(front, case)
    assert got.status == 200 and got.body == ECHO_REDACTED
    assert got.header("content-encoding") is None and got.header("content-length") is None
    assert got.header("transfer-encoding") == "chunked" and ended_cleanly(got)
    assert got.header("x-request-id") == "req_enc"
    assert not leaks(got)


@pytest.mark.parametrize("case", ["identity", "none"])
def test_an_identity_or_unlabelled_upstream_body_only_loses_the_key(encoding_proxy: tuple[str, EncodingUpstream],
                                                                    case: str) -> None:
    front, _ = encoding_proxy
    got = fetch_encoded(front, case)
    assert got.status == 200 and got.body == ECHO_REDACTED and ended_cleanly(got)
    assert got.header("content-encoding") is None
    assert not leaks(got)


@pytest.mark.parametrize("case", UNDECODABLE)
def test_an_upstream_body_in_a_coding_the_proxy_cannot_decode_is_a_502_naming_neither_the_coding_nor_the_key(
        encoding_proxy: tuple[str, EncodingUpstream], case: str, caplog: pytest.LogCaptureFixture) -> None:
    front, upstream = encoding_proxy

    def proxy_stats() -> dict[str, int]:
        return dict(json.loads(raw_http.request(front, "/__demo/stats").body)["streams"]["proxy"])

    before = proxy_stats()
    with caplog.at_level(logging.DEBUG):
        got = fetch_encoded(front, case)
    assert upstream.requests[-1] == case, "the upstream was asked"
    now = proxy_stats()
    assert {k: now[k] - before[k] for k in now} == {"started": 1, "finished": 1, "disconnected": 0}
    assert got.status == 502 and got.header("content-encoding") is None
    assert json.loads(got.body) == {"error": {
        "type": "demo_proxy_error", "code": "unsupported_content_encoding",
        "message": "the upstream answered in a content encoding the demo server cannot decode"}}
    assert b"[redacted]" not in got.body and not leaks(got), "the upstream body is not forwarded"
    wire = got.wire_body + repr(got.headers).encode()
    logged = " ".join(record.getMessage() for record in caplog.records)
    for value in UNDECODABLE[case].header_lines[0].split(", "):
        if value != "gzip":
            assert value.encode() not in wire and value not in logged
    assert KEY not in logged


def test_a_gzip_bomb_is_cut_at_the_decoded_ceiling_with_bounded_memory(
        encoding_proxy: tuple[str, EncodingUpstream], caplog: pytest.LogCaptureFixture) -> None:
    front, _ = encoding_proxy
    bomb = gzip_bomb()  # 100 MiB of zeros in ~100 KB, made before the measurement
    tracemalloc.start()
    try:
        with caplog.at_level(logging.INFO, logger="demo_site.server"):
            got = fetch_encoded(front, "bomb")
            time.sleep(0.05)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(bomb) < 200_000
    assert got.status == 200 and got.body == bytes(TEST_DECODED_CEILING), "exactly the ceiling's worth"
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("proxy ")]
    assert len(lines) == 1, lines
    found = re.fullmatch(r"proxy openai-chat: decoded upstream body over the ceiling after (\d+) bytes; "
                         r"cutting the page's too", lines[0])
    assert found and 0 < int(found[1]) <= len(bomb), "the figure is the encoded bytes taken from the upstream"
    assert not ended_cleanly(got), "the page sees a cut, not a clean end"
    # The reader above holds the body (~2 MiB with its copies); a decoder without max_length makes 16 MiB or more
    # out of each 16 KiB chunk the upstream writes.
    assert peak < 12 * 1024 * 1024, f"peak {peak} bytes"


@pytest.mark.parametrize("case", CORRUPT)
def test_a_corrupt_encoded_body_is_cut_cleanly_and_nothing_past_the_corruption_gets_out(
        encoding_proxy: tuple[str, EncodingUpstream], case: str, caplog: pytest.LogCaptureFixture) -> None:
    front, _ = encoding_proxy
    with caplog.at_level(logging.DEBUG):
        got = fetch_encoded(front, case)
        time.sleep(0.05)  # the handler's last log line
    _, expected = CORRUPT[case]
    assert got.status == 200 and got.header("content-encoding") is None
    assert not ended_cleanly(got), "the page sees a cut, not a clean end"
    if expected is None:
        assert ECHO_REDACTED.startswith(got.body)
    else:
        assert got.body == expected
    assert not leaks(got), "a key cut short by the corruption is held back, not sent"
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], "no traceback"
    assert any("not validly encoded" in r.getMessage() for r in caplog.records)


# --- the decoder on its own ----------------------------------------------------------------------------


def decode_all(codings: tuple[str, ...], chunks: list[bytes], ceiling: int = 1 << 30) -> bytes:
    decoder = BodyDecoder(codings, ceiling)
    pieces = [piece for chunk in chunks for piece in decoder.feed(chunk)]
    pieces += decoder.end()
    assert all(len(piece) <= DECODE_STEP_BYTES for piece in pieces)
    return b"".join(pieces)


#: A body big enough for several decoder steps, with the key in it.
LONG_BODY = b"".join(b'data: {"n": %d, "k": "%s"}\n\n' % (n, KEY.encode()) for n in range(8000))


@pytest.mark.parametrize(("codings", "encode"), [
    pytest.param(("gzip",), gzip.compress, id="gzip"),
    pytest.param(("deflate",), zlib.compress, id="deflate-zlib"),
    pytest.param(("deflate",), raw_deflate, id="deflate-raw"),
    pytest.param(("deflate", "gzip"), lambda b: gzip.compress(raw_deflate(b)), id="deflate-then-gzip"),
    pytest.param(("gzip", "deflate"), lambda b: zlib.compress(gzip.compress(b)), id="gzip-then-deflate"),
])
def test_the_body_decoder_gives_the_same_bytes_under_every_chunking(codings: tuple[str, ...],
                                                                    encode: Callable[[bytes], bytes]) -> None:
    short = ECHO_TEMPLATE.format(key=KEY).encode()
    encoded = encode(short)
    assert decode_all(codings, [encoded]) == short
    assert decode_all(codings, [encoded[i : i + 1] for i in range(len(encoded))]) == short
    for i in range(len(encoded) + 1):
        assert decode_all(codings, [encoded[:i], encoded[i:]]) == short
    encoded = encode(LONG_BODY)
    rng = random.Random(11)
    cuts = sorted(rng.sample(range(len(encoded)), 40))
    chunks = [encoded[a:b] for a, b in zip([0, *cuts], [*cuts, len(encoded)], strict=True)]
    assert decode_all(codings, chunks) == decode_all(codings, [encoded]) == LONG_BODY
    assert decode_all(("gzip",), [b""]) == b"", "an empty body is an empty body"


@pytest.mark.parametrize("codings", [("gzip",), ("deflate",)])
def test_the_body_decoder_holds_back_nothing_its_input_so_far_decodes_to(codings: tuple[str, ...]) -> None:
    """At every split point of the stream, the first part's pieces are all that part decodes to (an SSE event is
    never kept waiting for the next chunk), with pieces of a small step that cuts matches short."""
    rng = random.Random(5)
    body = bytes(rng.choice(b"ab") for _ in range(1500)) + b"xyz" * 300
    wbits = 16 + zlib.MAX_WBITS if codings == ("gzip",) else -zlib.MAX_WBITS
    co = zlib.compressobj(6, zlib.DEFLATED, wbits)
    encoded = co.compress(body) + co.flush()
    assert max(map(len, BodyDecoder(codings, 1 << 20, step=1024).feed(encoded))) == 1024
    for i in range(len(encoded) + 1):
        reference = zlib.decompressobj(wbits)
        decoder = BodyDecoder(codings, 1 << 20, step=1024)
        first = b"".join(decoder.feed(encoded[:i]))
        assert first == reference.decompress(encoded[:i]), i
        assert first + b"".join(decoder.feed(encoded[i:])) + b"".join(decoder.end()) == body


@pytest.mark.parametrize(("chunks", "decoded"), [
    pytest.param([gzip.compress(b"ok"), b"x"], b"ok", id="garbage-in-the-next-chunk"),
    pytest.param([gzip.compress(b"ok"), b"", gzip.compress(b"ok")], b"ok", id="second-member-in-a-later-chunk"),
    pytest.param([gzip.compress(b"ok") + b"\0"], b"ok", id="one-zero-byte-after-the-end"),
    pytest.param([gzip.compress(b"ok")[:-1]], b"ok", id="trailer-one-byte-short"),
    pytest.param([gzip.compress(b"ok")[:5]], b"", id="header-cut-short"),
])
def test_the_body_decoder_refuses_bytes_after_its_stream_or_a_stream_cut_short(chunks: list[bytes],
                                                                              decoded: bytes) -> None:
    decoder = BodyDecoder(("gzip",), 1 << 20)
    got = b""
    with pytest.raises(CorruptBody) as refused:
        for chunk in [*chunks, None]:  # (None: the end of the body)
            for piece in decoder.feed(chunk) if chunk is not None else decoder.end():
                got += piece
    assert got == decoded, "what was decoded before the corruption, nothing after"
    assert str(refused.value) in ("bytes after the end of the compressed stream",
                                  "the compressed stream ended before its end")


def test_the_body_decoder_refuses_calls_after_a_failure_after_its_end_and_while_pieces_are_untaken() -> None:
    encoded = gzip.compress(b"data: ok\n\n")
    failed = BodyDecoder(("gzip",), 1 << 20)
    with pytest.raises(CorruptBody):
        list(failed.feed(b"not gzip at all"))
    ended = BodyDecoder(("gzip",), 1 << 20)
    assert b"".join(ended.feed(encoded)) + b"".join(ended.end()) == b"data: ok\n\n"
    too_large = BodyDecoder(("gzip",), 4)
    with pytest.raises(DecodedBodyTooLarge):
        list(too_large.feed(encoded))
    busy = BodyDecoder(("gzip",), 1 << 20)
    pending = busy.feed(encoded[:6])  # (its pieces not taken yet)
    for decoder, state in [(failed, "failed"), (ended, "ended"), (too_large, "failed"), (busy, "busy")]:
        with pytest.raises(RuntimeError, match=f"feed\\(\\) while {state}"):
            decoder.feed(encoded)
        with pytest.raises(RuntimeError, match=f"end\\(\\) while {state}"):
            decoder.end()
    assert list(pending) == [] and b"".join(busy.feed(encoded[6:])) == b"data: ok\n\n", "taken, it goes on"
    assert busy.decoded == 10 and failed.decoded == 0, "a refused call decodes nothing"


def test_the_body_decoder_stops_a_bomb_at_its_ceiling_in_bounded_steps() -> None:
    bomb = gzip_bomb()
    tracemalloc.start()
    try:
        decoder = BodyDecoder(("gzip",), MAX_DECODED_BODY_BYTES)
        total, largest = 0, 0
        with pytest.raises(DecodedBodyTooLarge):
            for piece in decoder.feed(bomb):  # the whole bomb in one chunk
                total += len(piece)
                largest = max(largest, len(piece))
                del piece
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # (2**16: aiohttp's own read chunk, the bound DECODE_STEP_BYTES documents)
    assert total == decoder.decoded == MAX_DECODED_BODY_BYTES and largest == DECODE_STEP_BYTES == 2**16
    # The decoder holds the chunk's unconsumed tail (a copy of at most the chunk) and a piece or two (~450 KB
    # measured); decoding the chunk at once takes the ceiling's 64 MiB.
    assert peak < 2 * 1024 * 1024, f"peak {peak} bytes"


def test_the_body_decoder_passes_a_body_of_exactly_its_ceiling_and_cuts_one_byte_more() -> None:
    body = bytes(range(256)) * 1000
    assert decode_all(("gzip",), [gzip.compress(body)], ceiling=len(body)) == body
    decoder = BodyDecoder(("gzip",), len(body) - 1)
    got = b""
    with pytest.raises(DecodedBodyTooLarge):
        for piece in decoder.feed(gzip.compress(body)):
            got += piece
    assert got == body[:-1]
    assert decoder.decoded == len(body) - 1, "a piece cut at the ceiling counts as the ceiling"


def test_the_body_decoder_refuses_a_ceiling_or_step_below_one_and_an_empty_chain() -> None:
    for ceiling, step in ((0, 1), (1, 0), (0, 0), (-1, 5)):
        with pytest.raises(ValueError, match="must be positive"):
            BodyDecoder(("gzip",), ceiling, step=step)
    assert decode_all(("gzip",), [gzip.compress(b"")]) == b""
    decoder = BodyDecoder(("gzip",), 1, step=1)  # the smallest ceiling and step are usable
    pieces: list[bytes] = []
    with pytest.raises(DecodedBodyTooLarge):
        for piece in decoder.feed(gzip.compress(b"ab")):
            pieces.append(piece)
    assert pieces == [b"a"]
    with pytest.raises(ValueError, match="at least one coding"):
        BodyDecoder((), 1)


def test_a_body_labelled_gzip_must_be_gzip_not_zlib() -> None:
    """The label decides the format: a zlib stream sent as ``gzip`` is corrupt (zlib's automatic detection of
    either header is not used)."""
    with pytest.raises(CorruptBody):
        decode_all(("gzip",), [zlib.compress(b"data: x\n\n")])
    assert decode_all(("deflate",), [zlib.compress(b"data: x\n\n")]) == b"data: x\n\n"


#: The 28 bytes of the stored block below.
STORED = b"data: twenty-eight bytes...\n"
def raw_stored(first: int) -> bytes:
    """A raw deflate stream: a stored block holding :data:`STORED` whose first byte is ``first`` (its low three bits
    0: BFINAL 0, BTYPE 00; the rest padding, which inflate skips), then an empty final stored block. With the
    length's low byte (0x1c) next, its first two bytes can look like a zlib header."""
    assert first & 0x07 == 0 and len(STORED) == 0x1C
    return bytes([first]) + b"\x1c\x00\xe3\xff" + STORED + b"\x01\x00\x00\xff\xff"


@pytest.mark.parametrize("first", [
    # method 8 and the check bits right (0x881c is a multiple of 31), but a 64 KiB window (CINFO 8), which zlib refuses
    pytest.param(0x88, id="window-too-large"),
    # method 8 and zlib's usual 32 KiB window (0x78), but the check bits wrong (0x781c % 31 == 27)
    pytest.param(0x78, id="check-bits-wrong"),
])
def test_deflate_whose_first_bytes_are_no_valid_zlib_header_is_read_as_raw_deflate(first: int) -> None:
    body = raw_stored(first)
    assert first & 0x0F == 8, "method 8: it passes zlib's first check"
    window_ok, check_ok = first >> 4 <= 7, ((first << 8) | 0x1C) % 31 == 0
    assert window_ok != check_ok, "and fails exactly one of the other two"
    assert zlib.decompress(body, -zlib.MAX_WBITS) == STORED
    for chunks in ([body], [body[:1], body[1:]]):
        assert decode_all(("deflate",), chunks) == STORED


def test_a_two_byte_deflate_body_is_read_once_both_bytes_are_in() -> None:
    empty_raw = b"\x03\x00"  # an empty final block with fixed codes: the shortest raw deflate stream
    assert zlib.decompress(empty_raw, -zlib.MAX_WBITS) == b""
    assert decode_all(("deflate",), [empty_raw]) == b""
    assert decode_all(("deflate",), [empty_raw[:1], empty_raw[1:]]) == b""


def test_the_body_decoder_counts_every_layer_of_a_chain_against_its_ceiling() -> None:
    # An inner raw deflate stream of 40000 empty stored blocks and an empty final one: 200 KB that decode to
    # nothing, gzipped to under 1 KB. Its pieces (64 KiB each at most) pass a 100 KB ceiling one by one; their sum
    # does not.
    inner = b"\x00\x00\x00\xff\xff" * 40000 + b"\x01\x00\x00\xff\xff"
    outer = gzip.compress(inner)
    assert len(outer) < 1000 and decode_all(("deflate", "gzip"), [outer]) == b""
    with pytest.raises(DecodedBodyTooLarge):
        decode_all(("deflate", "gzip"), [outer], ceiling=100_000)


@pytest.mark.parametrize(("values", "codings"), [
    ([], ()), ([""], ()), (["identity"], ()), (["Identity, ,identity,"], ()), (["gzip"], ("gzip",)),
    (["X-GZIP"], ("x-gzip",)), ([" deflate "], ("deflate",)), (["gzip, deflate"], ("gzip", "deflate")),
    (["gzip", "identity, deflate"], ("gzip", "deflate")), (["gzip"] * 4, ("gzip",) * 4),
])
def test_content_encoding_lines_parse_into_the_codings_to_undo(values: list[str], codings: tuple[str, ...]) -> None:
    assert parse_content_encoding(values) == codings


@pytest.mark.parametrize("values", [["br"], ["zstd"], ["compress"], ["x-compress"], ["gzip, br"], ["gzip", "br"],
                                   [CANARY_CODING], ["gzip;q=1"], ["gzip"] * 5, ["gzip, gzip, gzip, gzip, gzip"]])
def test_content_encoding_outside_the_decoded_set_is_refused_without_repeating_it(values: list[str]) -> None:
    with pytest.raises(UnsupportedEncoding) as refused:
        parse_content_encoding(values)
    assert not any(token.strip() in str(refused.value) for value in values for token in value.split(","))


# --- Host names: DNS rebinding -------------------------------------------------------------------------

#: Host headers a rebinding page sends (its own name, now resolving to this machine), and look-alikes.
FOREIGN_HOSTS = ("attacker.example", "attacker.example:8000", "localhost.attacker.example", "127.0.0.1.nip.io",
                 "localhost.", "evil.localhost", "0x7f000001", "127.1", "2130706433", "LOCALHOST.:8000",
                 "[::1:]", "[127.0.0.1]")
#: Host headers that name this server: an IP literal of any kind, or localhost, any port, any case.
OWN_HOSTS = ("127.0.0.1", "127.0.0.1:8000", "localhost", "LocalHost:1", "[::1]", "[::1]:8000", "192.168.1.20:80",
             "10.0.0.7", "[fe80::1%25eth0]:8000", "[2001:db8::1]")
#: Not a Host header at all: none, two, or a value that does not parse.
BAD_HOSTS: tuple[tuple[str, ...], ...] = ((), ("localhost", "localhost"), ("",), ("a b",), ("[::1",), ("host:port",),
                                          ("a:1:2",), ("[zz]",), ("[::1]x",), ("user@localhost",),
                                          ("[fe80::1%25]",))


def refusal_of(got: raw_http.RawResponse) -> str:
    assert got.header("content-security-policy") and got.header("x-content-type-options") == "nosniff"
    return str(json.loads(got.body)["error"]["code"])


@pytest.mark.parametrize("host", FOREIGN_HOSTS)
def test_a_request_naming_a_host_the_server_does_not_answer_to_is_refused_before_any_handler(
        proxy_setup: ProxySetup, static_server: str, host: str) -> None:
    """A DNS-rebinding page talks to the server under its own name: no model route (so no key is used), no
    file, no demo document answers it, and the refusal does not repeat the name."""
    before = len(proxy_setup.upstream.requests)
    for base, target, method, body in ((proxy_setup.front, "/v1/chat/completions", "POST", CHAT_BODY),
                                       (proxy_setup.front, "/demo/config.json", "GET", b""),
                                       (static_server, "/app.js", "GET", b""),
                                       (static_server, "/no-such-file", "GET", b"")):
        got = raw_http.request(base, target, method=method, body=body, hosts=(host,))
        assert got.status == 421 and refusal_of(got) == "misdirected_request"
        assert host.split(":")[0].lower().encode() not in got.wire_body.lower()
    assert len(proxy_setup.upstream.requests) == before, "nothing reaches the upstream"


@pytest.mark.parametrize("host", OWN_HOSTS)
def test_a_request_naming_the_server_by_an_address_or_localhost_is_answered(proxy_setup: ProxySetup,
                                                                           static_server: str, host: str) -> None:
    assert raw_http.request(static_server, "/app.js", hosts=(host,)).body == b"export const ok = 1;\n"
    got = raw_http.request(proxy_setup.front, "/v1/chat/completions", method="POST", body=CHAT_BODY, hosts=(host,))
    assert got.status == 200 and proxy_setup.upstream.requests[-1]["headers"]["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("hosts", BAD_HOSTS, ids=[repr(h) for h in BAD_HOSTS])
def test_a_request_without_exactly_one_valid_host_header_is_a_bad_request(static_server: str,
                                                                          hosts: tuple[str, ...]) -> None:
    got = raw_http.request(static_server, "/app.js", hosts=hosts)
    assert got.status == 400
    if got.header("content-type") == "application/json; charset=utf-8":  # ours (aiohttp may refuse it first)
        assert refusal_of(got) == "bad_host"
    assert b"export const" not in got.body


def test_the_host_policy_wants_exactly_one_host_value_trimmed_of_blanks() -> None:
    """aiohttp already refuses a request with no ``Host`` or two (and trims header values): the policy refuses
    them as well, for any server that hands it the raw values."""
    policy = HostPolicy()
    assert policy.verdict([]) == 400 and policy.verdict(["localhost", "localhost"]) == 400
    assert policy.verdict([" localhost:80\t"]) is None and policy.verdict(["\t127.0.0.1 "]) is None
    assert policy.verdict([" attacker.example "]) == 421


def test_allow_host_adds_exactly_the_names_given(site: Path) -> None:
    running = demo_server.start_in_background(static_dir=site, allow_hosts=["Demo.Internal", "box.lan"])
    try:
        for host, status in (("demo.internal:8000", 200), ("DEMO.INTERNAL", 200), ("box.lan", 200),
                             ("other.internal", 421), ("internal", 421), ("x.demo.internal", 421),
                             ("localhost", 200), ("127.0.0.1", 200)):
            assert raw_http.request(running.base_url, "/app.js", hosts=(host,)).status == status, host
    finally:
        running.stop()
    for bad in ("demo.internal:8000", "[::1]", "", ".", "a b", "http://demo.internal", "demo.internal/"):
        with pytest.raises(ValueError):
            demo_server.build_app(static_dir=None, allow_hosts=[bad])


def test_the_command_line_takes_allow_host_and_refuses_a_malformed_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        demo_server.main(["--allow-host", "demo.internal:80", "--port", "1"])
    assert exited.value.code == 2 and "--allow-host" in capsys.readouterr().err


# --- request limits: body cap, header and body read timeouts, concurrent streams per client ------------


def test_request_bodies_over_the_cap_are_refused_before_reaching_the_upstream(proxy_setup: ProxySetup) -> None:
    before = len(proxy_setup.upstream.requests)
    got = raw_http.request(proxy_setup.front, "/v1/chat/completions", method="POST",
                           body=b"x" * (demo_server.ServerLimits().max_body_bytes + 1))
    assert got.status == 413
    assert len(proxy_setup.upstream.requests) == before


def test_the_embedded_upstream_has_the_same_body_cap() -> None:
    running = demo_server.start_in_background(static_dir=None, limits=demo_server.ServerLimits(max_body_bytes=1000))
    try:
        assert raw_http.request(running.base_url, "/v1/messages", method="POST", body=b"{" * 1001).status == 413
        assert raw_http.request(running.base_url, "/v1/messages", method="POST", body=b"{}").status == 200
    finally:
        running.stop()


@pytest.fixture(scope="module")
def strict_server() -> Iterator[str]:
    limits = demo_server.ServerLimits(header_timeout=1.0, body_timeout=1.0, max_streams_per_client=2)
    running = demo_server.start_in_background(static_dir=None, limits=limits,
                                              config=UpstreamConfig(stall_seconds=30.0))
    try:
        yield running.base_url
    finally:
        running.stop()


def closed_within(sock: socket.socket, seconds: float, drip: bytes = b"") -> bool:
    """Whether the server closes ``sock`` within ``seconds`` while we send ``drip`` every 0.2 s."""
    deadline = time.monotonic() + seconds
    sock.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            if drip:
                sock.sendall(drip)
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


@pytest.mark.parametrize(("opening", "drip"), [
    pytest.param(b"GET /demo/config.json HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X-Drip: 1\r\n",
                 id="head-dripped-slowloris"),
    pytest.param(b"", b"", id="nothing-sent"),
    pytest.param(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{", b" ",
                 id="body-dripped"),
])
def test_a_client_sending_its_request_slowly_is_cut_off_by_the_read_timeouts(strict_server: str, opening: bytes,
                                                                              drip: bytes) -> None:
    with socket.create_connection(raw_http.address(strict_server)) as sock:
        sock.sendall(opening)
        started = time.monotonic()
        assert closed_within(sock, 4.0, drip=drip), "the slow client kept the connection open"
        assert time.monotonic() - started < 3.0
    assert raw_http.request(strict_server, "/demo/config.json").status == 200


def open_stream(base_url: str, scenario: str = "stall") -> socket.socket:
    """Start a streaming request and return its socket once the response head has arrived."""
    sock = socket.create_connection(raw_http.address(base_url), timeout=5)
    sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
                 b"x-demo-scenario: " + scenario.encode() + b"\r\n\r\n{}")
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head[:40]
    return sock


def test_a_request_body_that_does_not_arrive_in_time_is_answered_408_and_the_connection_closed(
        strict_server: str, caplog: pytest.LogCaptureFixture) -> None:
    received = b""
    with caplog.at_level(logging.ERROR), socket.create_connection(raw_http.address(strict_server)) as sock:
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{")
        sock.settimeout(4.0)  # the server's body timeout is 1 s
        while chunk := sock.recv(65536):  # until the server closes
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 "), head[:40]
    error = json.loads(body)["error"]
    assert error == {"type": "demo_server_error", "code": "body_timeout", "message": error["message"]}
    assert error["message"] and "{" not in error["message"]  # says what happened, repeats nothing sent
    # The handler's answer is the 408 it wrote: nothing went wrong in the server after it.
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]


def test_server_limits_cannot_change_under_a_running_server() -> None:
    limits = ServerLimits()
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.max_streams_per_client = 10**6  # type: ignore[misc]


class _Peer:
    """What :class:`StreamGuard` reads of a request whose body arrives at once: the peer address and the body."""

    def __init__(self, remote: str | None) -> None:
        self.remote = remote
        self.transport = None

    async def read(self) -> bytes:
        return b"{}"


def test_the_stream_cap_counts_each_client_address_apart_and_forgets_an_address_with_its_last_stream() -> None:
    async def scenario() -> None:
        guard = StreamGuard(ServerLimits(max_streams_per_client=2))
        release = {"a": asyncio.Event(), "rest": asyncio.Event()}

        def run(remote: str | None, until: str = "rest") -> asyncio.Future[Any]:
            async def held(request: Any) -> Any:
                await release[until].wait()
                return aiohttp_web.Response(text="ok")
            return asyncio.ensure_future(guard.run(cast(Any, _Peer(remote)), held))

        async def settle() -> None:
            for _ in range(5):
                await asyncio.sleep(0)

        first, second, unknown = run("10.0.0.1", "a"), run("10.0.0.1"), run(None)
        await settle()
        # A request without a peer address (not over TCP) is counted under the empty address.
        assert (guard.active("10.0.0.1"), guard.active(""), guard.clients()) == (2, 1, 2)
        refused = await run("10.0.0.1")
        assert refused.status == 429 and refused.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
        assert isinstance(refused, aiohttp_web.Response) and refused.body is not None
        error = json.loads(cast(bytes, refused.body))["error"]
        assert error == {"type": "demo_server_error", "code": "too_many_streams", "message": error["message"]}
        assert error["message"]
        other = run("10.0.0.2")  # another address is not held back by the first one's streams
        await settle()
        assert guard.active("10.0.0.2") == 1 and guard.clients() == 3
        release["a"].set()  # one of the first address's two streams ends: one slot back, not more
        assert (await first).status == 200
        assert guard.active("10.0.0.1") == 1
        third = run("10.0.0.1")
        await settle()
        assert (await run("10.0.0.1")).status == 429
        release["rest"].set()
        assert [(await t).status for t in (second, unknown, other, third)] == [200] * 4
        assert guard.clients() == 0 and guard.active("10.0.0.1") == 0

    asyncio.run(scenario())


def test_concurrent_streams_per_client_are_capped_and_the_slot_comes_back(strict_server: str) -> None:
    first, second = open_stream(strict_server), open_stream(strict_server)
    try:
        refused = raw_http.request(strict_server, "/v1/messages", method="POST", body=b"{}",
                                   headers={"x-demo-scenario": "plain"})
        assert refused.status == 429 and refused.header("retry-after")
        assert json.loads(refused.body)["error"]["code"] == "too_many_streams"
        assert refused.header("content-security-policy"), "security headers on refusals too"
        # Static and JSON routes are not streams: they are still answered.
        assert raw_http.request(strict_server, "/demo/config.json").status == 200
    finally:
        first.close()
    deadline = time.monotonic() + 5
    while raw_http.request(strict_server, "/v1/messages", method="POST", body=b"{}",
                           headers={"x-demo-scenario": "plain"}).status != 200:
        assert time.monotonic() < deadline, "the closed stream's slot never came back"
        time.sleep(0.05)
    second.close()
