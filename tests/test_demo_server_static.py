"""The demo server's static serving rules and CORS, against the real server (interfaces.md "Static serving rules").

Sidecars are written here in a temporary site (the kit's build writes the real ones). The ``.br`` sidecars hold
marker bytes, not brotli: the server never decodes a sidecar, it only chooses one, so the test checks *which* bytes
arrive; the ``.gz`` ones are real gzip and are also decompressed back to the original.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import logging
import os
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path

import pytest

pytestmark = pytest.mark.host

pytest.importorskip("aiohttp.web")

from demo_site import server as demo_server  # noqa: E402  (after the importorskip guard)
from demo_site.cors import ALLOWED_REQUEST_HEADERS, EXPOSED_HEADERS  # noqa: E402
from demo_site.proxy import FORWARD_RESPONSE_HEADERS  # noqa: E402
from demo_site.static_files import (  # noqa: E402
    IMMUTABLE_SEGMENT,
    Site,
    accepted_codings,
    copy_exactly,
    join_vary,
    site_segments,
)
from tests import raw_http  # noqa: E402

ENTRY = "/webclient/webclient.mjs"
HASHED_DIR = "/webclient/runtime-0123456789abcdef"
WASM = HASHED_DIR + "/pyodide.asm.wasm"
ENTRY_SOURCE = b"export function createClient() { return 'kit'; }\n" * 40
WASM_BYTES = b"\0asm\x01\0\0\0" + bytes(range(256)) * 8
ALLOWED = "https://widget.example"
OTHER = "https://evil.example"
IMMUTABLE = "public, max-age=31536000, immutable"


#: Suffix -> the Content-Type a browser must get. With ``nosniff`` (on every answer) a module script or style sheet
#: of another type is refused, ``WebAssembly.instantiateStreaming`` wants ``application/wasm``, micropip reads wheels
#: and Pyodide its stdlib as zip; an upper-case suffix is the same type; anything else is opaque bytes.
SERVED_TYPES = {
    ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8", ".JS": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json", ".map": "application/json", ".wasm": "application/wasm", ".zip": "application/zip",
    ".whl": "application/zip", ".tar": "application/x-tar", ".svg": "image/svg+xml", ".png": "image/png",
    ".ico": "image/x-icon", ".txt": "text/plain; charset=utf-8", ".ts": "text/plain; charset=utf-8",
    ".py": "text/x-python; charset=utf-8", ".exe": "application/octet-stream", "": "application/octet-stream",
}
DATED = 1_700_000_000


def write(path: Path, data: bytes, *, sidecars: tuple[str, ...] = ()) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if "br" in sidecars:
        (path.parent / (path.name + ".br")).write_bytes(b"BROTLI-SIDECAR:" + path.name.encode())
    if "gz" in sidecars:
        (path.parent / (path.name + ".gz")).write_bytes(gzip.compress(data, compresslevel=9, mtime=0))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kit-site")
    write(root / "index.html", b"<!doctype html><title>demo</title>", sidecars=("gz",))
    write(root / "app.js", b"import '/webclient/webclient.mjs';\n")
    write(root / ENTRY.lstrip("/"), ENTRY_SOURCE, sidecars=("br", "gz"))
    write(root / "webclient" / "webclient.d.ts", b"export declare function createClient(): void;\n")
    write(root / WASM.lstrip("/"), WASM_BYTES, sidecars=("br", "gz"))
    write(root / HASHED_DIR.lstrip("/") / "python_stdlib.zip", b"PK\x03\x04" + b"z" * 64, sidecars=("gz",))
    write(root / "webclient" / "runtime-0123456789ABCDEF" / "a.js", b"upper-case hex is not a content hash")
    write(root / "webclient" / "runtime-0123" / "a.js", b"too short for a content hash")
    write(root / "webclient-0123456789abcdef.js", b"a hashed *file* name is not a hashed directory")
    # A sidecar with the same size and mtime as its file: only the coding tells their ETags apart.
    write(root / "webclient" / "twin.js", b"x" * 2048)
    (root / "webclient" / "twin.js.br").write_bytes(b"y" * 2048)
    for name in ("twin.js", "twin.js.br"):
        os.utime(root / "webclient" / name, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    for suffix in SERVED_TYPES:
        write(root / "types" / f"file{suffix}", b"typed " + suffix.encode())
    # A file whose mtime is a whole second: the Last-Modified it is sent with is exactly its mtime.
    write(root / "dated.js", b"dated")
    os.utime(root / "dated.js", (DATED, DATED))
    # A sidecar that is a symlink out of the site is never served.
    outside = root.parent / "outside-sidecar.br"
    outside.write_bytes(b"OUTSIDE")
    write(root / "webclient" / "leaky.js", b"console.log('leaky');\n")
    (root / "webclient" / "leaky.js.br").symlink_to(outside)
    return root


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    running = demo_server.start_in_background(static_dir=site, allow_origins=[ALLOWED])
    try:
        yield running.base_url
    finally:
        running.stop()


def get(base: str, path: str, *, method: str = "GET", **headers: str) -> raw_http.RawResponse:
    return raw_http.request(base, path, method=method, headers={k.replace("_", "-"): v for k, v in headers.items()})


def vary(resp: raw_http.RawResponse) -> set[str]:
    return {v.strip().lower() for v in (resp.header("vary") or "").split(",") if v.strip()}


# --- the rules as functions (fast: they run first) ----------------------------------------------------


@pytest.mark.parametrize(("target", "segments"), [
    ("/", [""]), ("/app.js", ["app.js"]), ("/webclient/", ["webclient", ""]), ("/a/b.txt?v=1&x=/..", ["a", "b.txt"]),
    ("/%61pp.js", ["app.js"]), ("/caf%C3%A9/x", ["café", "x"]), ("/a%20b", ["a b"]), ("/a%25252e", ["a%252e"]),
    ("/x.br.js", ["x.br.js"]), ("/brand.gzip", ["brand.gzip"]), ("/a/.../", None),
])
def test_a_path_is_split_on_slashes_and_each_segment_decoded_once(target: str, segments: list[str] | None) -> None:
    assert site_segments(target) == segments


@pytest.mark.parametrize("target", [
    "", "app.js", "*", "http://localhost/app.js", "//app.js", "/a//b", "/a//", "/%2e%2e/x", "/..", "/.", "/a/./b",
    "/.hidden", "/a/.git/config", "/a%2fb", "/a%2Fb", "/a%5cb", "/a\\b", "/a%00", "/a%01b", "/a%1f", "/a%7f", "/a\tb",
    "/%ff", "/%c0%ae", "/%e2%82", "/app.js.br", "/app.js.GZ", "/x/y.Br?q=1", "/.br",
])
def test_a_path_the_rules_refuse_has_no_segments(target: str) -> None:
    assert site_segments(target) is None


@pytest.mark.parametrize(("accept", "allowed"), [
    ("", set()), ("identity", set()), ("deflate, zstd", set()), (",, ,", set()), ("gzip", {"gzip"}),
    ("x-gzip", {"gzip"}), ("GZip, BR", {"gzip", "br"}), ("br", {"br"}), ("*", {"gzip", "br"}),
    ("gzip;q=0", set()), ("gzip; q=0.000", set()), ("gzip;q=0.001", {"gzip"}), ("gzip ; Q = 1.000", {"gzip"}),
    ("gzip;q=1.0001", set()), ("gzip;q=2", set()), ("gzip;q=.5", set()), ("gzip;q=", set()), ("gzip;q=-0", set()),
    ("gzip;level=9", {"gzip"}), ("*;q=0, gzip", {"gzip"}), ("br;q=0, *", {"gzip"}), ("*, gzip;q=0", {"br"}),
    ("gzip, gzip;q=0", set()), ("gzip;q=0, gzip", {"gzip"}),
])
def test_accept_encoding_allows_a_coding_listed_or_starred_with_a_non_zero_q(accept: str, allowed: set[str]) -> None:
    assert accepted_codings(accept) == allowed


@pytest.mark.parametrize(("current", "tokens", "joined"), [
    (None, ["Origin"], "Origin"), ("", ["Origin"], "Origin"),
    ("Accept-Encoding", ["Origin"], "Accept-Encoding, Origin"),
    ("origin", ["Origin"], "origin"), (" a , ,b", ["B", "c"], "a, b, c"), ("a", [], "a"),
])
def test_vary_gains_each_token_once_whatever_its_case(current: str | None, tokens: list[str], joined: str) -> None:
    assert join_vary(current, tokens) == joined


@pytest.mark.parametrize(("segment", "hashed"), [
    ("runtime-0123456789abcdef", True), ("pyodide_0.2-ffffffffffffffff", True), ("runtime-0123456789abcde", False),
    ("runtime-0123456789abcdef0", False), ("runtime-0123456789ABCDEF", False), ("-0123456789abcdef", False),
    ("run time-0123456789abcdef", False), ("0123456789abcdef", False),
])
def test_a_content_hashed_directory_is_a_name_a_dash_and_sixteen_lower_case_hex_digits(segment: str,
                                                                                      hashed: bool) -> None:
    assert bool(IMMUTABLE_SEGMENT.fullmatch(segment)) is hashed


class _GrowingFile:
    """A file read in steps: ``grow`` bytes appear past its end after each read (``0``: it ends at ``size``)."""

    def __init__(self, size: int, grow: int = 0) -> None:
        self.size, self.grow, self.pos = size, grow, 0
        self.asked: list[int] = []

    async def read(self, n: int) -> bytes:
        self.asked.append(n)
        data = b"x" * max(0, min(n, self.size - self.pos))
        self.pos += len(data)
        self.size += self.grow
        return data


@pytest.mark.parametrize(("size", "step", "grow", "cut"), [
    (0, 4, 0, 0), (1, 4, 0, 0), (4, 4, 0, 0), (10, 4, 0, 0), (10, 4, 3, 0), (10, 3, 100, 0), (10, 4, 0, 4),
    (9, 4, 0, 9),
])
def test_a_file_is_sent_exactly_as_long_as_announced_in_steps_whether_it_grows_or_shrinks_meanwhile(
        size: int, step: int, grow: int, cut: int) -> None:
    source = _GrowingFile(size - cut, grow)  # ``cut`` bytes were lost after the size was measured
    sent: list[bytes] = []

    async def write(data: bytes) -> None:
        sent.append(data)

    copied = asyncio.run(copy_exactly(source.read, write, size, step))
    assert copied == len(b"".join(sent)) == size - cut
    assert all(0 < n <= step for n in source.asked) and sum(map(len, sent)) <= size
    assert len(source.asked) == -(-(size - cut) // step) + (1 if cut else 0)  # short: one more read sees the end


def test_the_chosen_file_is_a_frozen_value(site: Path) -> None:
    chosen = Site(site).choose("/app.js", "")
    assert chosen is not None and chosen.media_type == "text/javascript; charset=utf-8"
    with pytest.raises(dataclasses.FrozenInstanceError):
        chosen.coding = "br"  # type: ignore[misc]


# --- content types, directories and a whole-second Last-Modified ------------------------------------------


@pytest.mark.parametrize("suffix", SERVED_TYPES)
def test_each_file_is_served_with_the_content_type_of_its_suffix(server: str, suffix: str,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        got = get(server, f"/types/file{suffix}")
    assert got.status == 200 and got.body == b"typed " + suffix.encode()
    assert got.header("content-type") == SERVED_TYPES[suffix]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "the answer ends cleanly in the server"


def test_a_directory_answers_with_its_index_and_a_file_named_as_a_directory_is_404(server: str) -> None:
    for target in ("/", "/?x=1"):
        got = get(server, target)
        assert got.status == 200 and got.body.startswith(b"<!doctype html>")
        assert got.header("content-type") == "text/html; charset=utf-8"
    for target in ("/app.js/", "/types/file.js/", "/types/", "/webclient/runtime-0123456789abcdef/"):
        assert get(server, target).status == 404, target  # no index.html there, and a file is not a directory


def test_if_modified_since_exactly_the_files_mtime_is_a_304(server: str) -> None:
    sent = get(server, "/dated.js")
    assert sent.header("last-modified") == formatdate(DATED, usegmt=True)
    assert get(server, "/dated.js", If_Modified_Since=formatdate(DATED, usegmt=True)).status == 304
    assert get(server, "/dated.js", If_Modified_Since=formatdate(DATED - 1, usegmt=True)).status == 200


# --- precompressed sidecars ---------------------------------------------------------------------------


@pytest.mark.parametrize(("accept", "coding"), [
    ("gzip, deflate, br, zstd", "br"), ("br", "br"), ("gzip;q=1.0, br;q=0.1", "br"), ("*", "br"),
    ("gzip", "gzip"), ("x-gzip", "gzip"), ("br;q=0, gzip", "gzip"), ("*, br;q=0", "gzip"), ("BR;Q=0, GZIP", "gzip"),
    ("identity", None), ("", None), ("*;q=0", None), ("br;q=0, gzip;q=0.000", None), ("deflate, zstd", None),
    ("br;q=2", None), ("br;q=nan, gzip;q=inf", None),
])
def test_a_file_with_sidecars_is_served_in_the_best_allowed_coding(server: str, site: Path, accept: str,
                                                                   coding: str | None) -> None:
    got = get(server, ENTRY, Accept_Encoding=accept) if accept else get(server, ENTRY)
    assert got.status == 200
    assert got.header("content-type") == "text/javascript; charset=utf-8", "always the file's own type"
    assert got.header("content-encoding") == coding
    assert "accept-encoding" in vary(got), "Vary whenever a sidecar exists, whichever bytes are served"
    suffix = {"br": ".br", "gzip": ".gz", None: ""}[coding]
    assert got.body == (site / (ENTRY.lstrip("/") + suffix)).read_bytes()
    assert got.header("content-length") == str(len(got.body))
    if coding == "gzip":
        assert gzip.decompress(got.body) == ENTRY_SOURCE


def test_a_file_with_only_a_gzip_sidecar_falls_back_to_gzip_for_a_brotli_client(server: str) -> None:
    got = get(server, HASHED_DIR + "/python_stdlib.zip", Accept_Encoding="br, gzip")
    assert got.header("content-encoding") == "gzip" and got.header("content-type") == "application/zip"
    assert gzip.decompress(got.body).startswith(b"PK\x03\x04")


def test_a_file_without_sidecars_has_no_content_encoding_and_no_vary_on_it(server: str) -> None:
    got = get(server, "/app.js", Accept_Encoding="br, gzip")
    assert got.status == 200 and got.header("content-encoding") is None
    assert "accept-encoding" not in vary(got)


@pytest.mark.parametrize("path", [ENTRY + ".br", ENTRY + ".gz", WASM + ".br", "/index.html.gz", ENTRY + ".BR",
                                  ENTRY + "%2ebr"])
def test_a_sidecar_requested_by_name_is_404(server: str, path: str) -> None:
    assert get(server, path, Accept_Encoding="br, gzip").status == 404


def test_a_sidecar_symlinked_out_of_the_site_is_never_served(server: str) -> None:
    got = get(server, "/webclient/leaky.js", Accept_Encoding="br")
    assert got.status == 200 and got.header("content-encoding") is None
    assert got.body == b"console.log('leaky');\n"


def test_each_encoding_has_its_own_strong_etag(server: str) -> None:
    tags = {coding: get(server, ENTRY, Accept_Encoding=coding).header("etag") for coding in ("br", "gzip", "identity")}
    assert len(set(tags.values())) == 3, tags
    for tag in tags.values():
        assert tag is not None and tag.startswith('"') and tag.endswith('"'), "strong (no W/), quoted"
    twins = {get(server, "/webclient/twin.js", Accept_Encoding=coding).header("etag") for coding in ("br", "identity")}
    assert len(twins) == 2, "same size and mtime, still distinct per encoding"


# --- caching ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "cache"), [
    (WASM, IMMUTABLE), (HASHED_DIR + "/python_stdlib.zip", IMMUTABLE),
    (ENTRY, "no-cache"), ("/webclient/webclient.d.ts", "no-cache"), ("/", "no-cache"), ("/app.js", "no-cache"),
    ("/webclient/runtime-0123456789ABCDEF/a.js", "no-cache"), ("/webclient/runtime-0123/a.js", "no-cache"),
    ("/webclient-0123456789abcdef.js", "no-cache"),
])
def test_content_hashed_directories_are_immutable_and_everything_else_revalidates(server: str, path: str,
                                                                                   cache: str) -> None:
    got = get(server, path, Accept_Encoding="br, gzip")
    assert got.status == 200 and got.header("cache-control") == cache
    assert got.header("etag") and got.header("last-modified")


def test_wasm_is_served_as_application_wasm_from_its_sidecar(server: str) -> None:
    got = get(server, WASM, Accept_Encoding="gzip")
    assert got.header("content-type") == "application/wasm" and gzip.decompress(got.body) == WASM_BYTES


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("coding", ["br", "gzip", "identity"])
def test_a_matching_if_none_match_is_a_304_without_a_body(server: str, method: str, coding: str) -> None:
    first = get(server, ENTRY, Accept_Encoding=coding)
    etag = first.header("etag")
    assert etag is not None
    again = get(server, ENTRY, method=method, Accept_Encoding=coding, If_None_Match=etag)
    assert again.status == 304
    assert again.wire_body == b"", "a 304 carries no body bytes at all"
    assert again.header("etag") == etag and again.header("cache-control") == "no-cache"
    assert again.header("last-modified") == first.header("last-modified")  # the validators a cache refreshes
    assert "accept-encoding" in vary(again) and again.header("content-security-policy")
    for listed in (f'"nope", {etag}', f"W/{etag}", "*"):
        assert get(server, ENTRY, method=method, Accept_Encoding=coding, If_None_Match=listed).status == 304


def test_an_etag_of_another_encoding_does_not_validate(server: str) -> None:
    br_tag = get(server, ENTRY, Accept_Encoding="br").header("etag")
    assert br_tag is not None
    got = get(server, ENTRY, Accept_Encoding="gzip", If_None_Match=br_tag)
    assert got.status == 200 and got.header("content-encoding") == "gzip"


def test_if_modified_since_answers_304_unless_the_file_changed_after_it(server: str, site: Path) -> None:
    last_modified = get(server, "/app.js").header("last-modified")
    assert last_modified is not None
    assert get(server, "/app.js", If_Modified_Since=last_modified).status == 304
    mtime = os.stat(site / "app.js").st_mtime
    assert get(server, "/app.js", If_Modified_Since=formatdate(mtime - 3600, usegmt=True)).status == 200
    assert get(server, "/app.js", If_Modified_Since="not a date").status == 200
    # If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2).
    assert get(server, "/app.js", If_Modified_Since=last_modified, If_None_Match='"other"').status == 200


def test_head_answers_get_headers_without_the_body(server: str) -> None:
    full = get(server, ENTRY, Accept_Encoding="br")
    head = get(server, ENTRY, method="HEAD", Accept_Encoding="br")
    assert head.status == 200 and head.wire_body == b""
    for name in ("content-type", "content-encoding", "content-length", "etag", "last-modified", "cache-control",
                 "vary"):
        assert head.header(name) == full.header(name), name
    assert get(server, "/missing.js", method="HEAD").status == 404


# --- CORS ---------------------------------------------------------------------------------------------


def test_the_kit_is_shared_with_a_listed_origin_only(server: str) -> None:
    for method in ("GET", "HEAD"):
        got = get(server, ENTRY, method=method, Origin=ALLOWED, Accept_Encoding="br")
        assert got.header("access-control-allow-origin") == ALLOWED
        assert {"origin", "accept-encoding"} <= vary(got)
        assert got.header("access-control-allow-credentials") is None
    assert get(server, WASM, Origin=ALLOWED).header("access-control-allow-origin") == ALLOWED
    refused = get(server, ENTRY, Origin=OTHER)
    assert refused.status == 200 and refused.header("access-control-allow-origin") is None
    assert "origin" in vary(refused)
    for near_miss in (ALLOWED + "/", ALLOWED.upper(), ALLOWED + ":443", "null", "http://widget.example"):
        assert get(server, ENTRY, Origin=near_miss).header("access-control-allow-origin") is None, near_miss


@pytest.mark.parametrize("path", ["/", "/app.js", "/index.html", "/demo/config.json", "/demo/tools.json",
                                  "/__demo/stats", "/webclient-0123456789abcdef.js"])
def test_nothing_outside_the_kit_and_the_model_routes_is_shared(server: str, path: str) -> None:
    got = get(server, path, Origin=ALLOWED)
    assert got.status == 200
    assert not any(name.startswith("access-control-") for name in got.headers), path


PREFLIGHT_HEADERS = ",".join(ALLOWED_REQUEST_HEADERS)
MODEL_PATHS = ("/v1/chat/completions", "/v1/responses", "/v1/messages",
               "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse")


@pytest.mark.parametrize("path", MODEL_PATHS)
def test_a_preflight_for_a_model_route_from_a_listed_origin_allows_post_and_the_client_headers(
        server: str, path: str) -> None:
    got = get(server, path, method="OPTIONS", Origin=ALLOWED, Access_Control_Request_Method="POST",
              Access_Control_Request_Headers=PREFLIGHT_HEADERS)
    assert got.status == 204
    assert got.header("access-control-allow-origin") == ALLOWED
    assert "POST" in (got.header("access-control-allow-methods") or "")
    # The browser may cache the answer, for less than Chromium's own cap of two hours.
    assert 0 < int(got.header("access-control-max-age") or "0") <= 7200
    allowed = {h.strip().lower() for h in (got.header("access-control-allow-headers") or "").split(",")}
    assert allowed >= {"content-type", "x-demo-scenario", "anthropic-version", "anthropic-beta", "openai-beta",
                       "last-event-id"}
    assert got.header("access-control-allow-credentials") is None and "origin" in vary(got)


@pytest.mark.parametrize(("origin", "method"), [(OTHER, "POST"), (None, "POST"), (ALLOWED, "DELETE")])
def test_any_other_preflight_is_refused_without_cors_permission(server: str, origin: str | None,
                                                                method: str) -> None:
    headers = {"Access-Control-Request-Method": method, **({"Origin": origin} if origin else {})}
    got = raw_http.request(server, "/v1/messages", method="OPTIONS", headers=headers)
    assert got.status == 403
    assert got.header("access-control-allow-methods") is None and got.header("access-control-allow-headers") is None
    if origin != ALLOWED:
        assert got.header("access-control-allow-origin") is None


@pytest.mark.parametrize("path", MODEL_PATHS)
def test_a_model_route_answer_is_shared_with_a_listed_origin_with_its_exposed_headers(server: str,
                                                                                       path: str) -> None:
    body = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}'
    got = raw_http.request(server, path, method="POST", body=body,
                           headers={"Origin": ALLOWED, "Content-Type": "application/json",
                                    "x-demo-scenario": "plain"})
    assert got.status == 200 and got.header("access-control-allow-origin") == ALLOWED
    exposed = {h.strip().lower() for h in (got.header("access-control-expose-headers") or "").split(",")}
    assert exposed >= set(EXPOSED_HEADERS)
    # Every response header the proxy forwards that a page could not read anyway (Content-Type is CORS-safelisted)
    # is exposed: a cross-origin client reports the request id and honours Retry-After as a same-origin one does.
    assert exposed == {name.lower() for name in FORWARD_RESPONSE_HEADERS} - {"content-type"}
    assert got.header("access-control-allow-credentials") is None
    other = raw_http.request(server, path, method="POST", body=body, headers={"Origin": OTHER})
    assert other.header("access-control-allow-origin") is None and "origin" in vary(other)


def test_error_answers_of_a_model_route_are_readable_by_a_listed_origin(server: str) -> None:
    got = raw_http.request(server, "/v1/messages", method="POST", body=b"{}",
                           headers={"Origin": ALLOWED, "x-demo-scenario": "no-such-scenario"})
    assert got.status == 400 and got.header("access-control-allow-origin") == ALLOWED


def test_without_allow_origin_nothing_is_shared(site: Path) -> None:
    running = demo_server.start_in_background(static_dir=site)
    try:
        for path, method in ((ENTRY, "GET"), ("/v1/messages", "POST"), ("/v1/messages", "OPTIONS")):
            got = raw_http.request(running.base_url, path, method=method, body=b"{}" if method == "POST" else b"",
                                   headers={"Origin": ALLOWED, "Access-Control-Request-Method": "POST"})
            assert not any(name.startswith("access-control-") for name in got.headers), (path, method)
    finally:
        running.stop()


def test_proxy_mode_shares_its_model_routes_and_preflight_too() -> None:
    def fake_app() -> object:
        web = pytest.importorskip("aiohttp.web")

        async def handle(request: object) -> object:
            return web.Response(body=b"data: [DONE]\n\n", content_type="text/event-stream",
                                headers={"x-request-id": "req_1"})

        app = web.Application()
        app.router.add_route("POST", "/{tail:.*}", handle)
        return app

    real = demo_server.start_in_background(app_factory=fake_app)  # type: ignore[arg-type]
    front = demo_server.start_in_background(static_dir=None, upstream=real.base_url, api_key="k",
                                            allow_origins=[ALLOWED])
    try:
        pre = raw_http.request(front.base_url, "/v1/chat/completions", method="OPTIONS",
                               headers={"Origin": ALLOWED, "Access-Control-Request-Method": "POST"})
        assert pre.status == 204 and pre.header("access-control-allow-origin") == ALLOWED
        got = raw_http.request(front.base_url, "/v1/chat/completions", method="POST", body=b"{}",
                               headers={"Origin": ALLOWED})
        assert got.status == 200 and got.header("access-control-allow-origin") == ALLOWED
        assert got.header("x-request-id") == "req_1"
    finally:
        front.stop()
        real.stop()


@pytest.mark.parametrize("origin", ["*", "null", "https://a.example/", "https://a.example/path", "HTTPS://A.EXAMPLE",
                                    "a.example", "ftp://a.example", "https://*.example", "https://a.example:99999x"])
def test_a_malformed_allow_origin_is_a_usage_error(origin: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        demo_server.main(["--allow-origin", origin, "--port", "0"])
    assert stop.value.code == 2 and "--allow-origin" in capsys.readouterr().err
    with pytest.raises(ValueError):
        demo_server.build_app(static_dir=None, allow_origins=[origin])
