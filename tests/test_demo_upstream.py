"""The demo server's embedded upstream, proxy mode and static site, checked over real HTTP on 127.0.0.1.

Every route x scenario is fetched with a raw client (httpx ``iter_raw``: the bytes and the chunk boundaries
as they came off the socket) and its wire facts are checked against expectations written here,
independently of the scenario table. Proxy mode is checked against a second local server acting as the
real upstream. Finally every route x scenario's bytes are replayed through ``StreamSession`` (under the
socket's chunking and every chunking of ``tests/helpers.py``) and must reach the scenario's outcome.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import re
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.host

aiohttp_web = pytest.importorskip("aiohttp.web")
httpx = pytest.importorskip("httpx")

from demo_site import server as demo_server  # noqa: E402  (after the importorskip guards)
from demo_site.scenarios import SCENARIOS  # noqa: E402
from demo_site.upstream import ENDLESS_WRITE_BYTES, StreamStats, UpstreamConfig  # noqa: E402
from tests import raw_http  # noqa: E402
from tests.helpers import assert_chunking_invariant  # noqa: E402
from webclient import EventStreamParser, Limits, SSEEvent, TextDelta  # noqa: E402

try:
    from webclient import StreamSession  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # not exported from the package yet
    from webclient._session import StreamSession

ROUTES = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")
SLUGS = tuple(s.slug for s in SCENARIOS)
PROMPT = "What's the weather like in Paris today?"
PROMPT_ECHO = "What's the weather like in Paris today?"  # short enough to be echoed whole
STALL_SECONDS = 1.5
TIME_SCALE = 0.1


def request_for(route: str, prompt: str = PROMPT) -> tuple[str, dict[str, object]]:
    """The path and JSON body a client of ``route`` sends."""
    if route == "openai-chat":
        return "/v1/chat/completions", {"model": "gpt-4o-mini", "stream": True,
                                        "stream_options": {"include_usage": True},
                                        "messages": [{"role": "user", "content": prompt}]}
    if route == "openai-responses":
        return "/v1/responses", {"model": "gpt-5-mini", "stream": True, "input": prompt}
    if route == "anthropic-messages":
        return "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": True,
                                "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}]}
    return "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", {
        "contents": [{"role": "user", "parts": [{"text": prompt}]}]}


@dataclass
class Fetched:
    status: int
    content_type: str
    headers: dict[str, str]
    chunks: list[bytes]
    elapsed: float

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    def boundaries(self) -> list[int]:
        """Offsets in ``body`` where one received chunk ended and the next began."""
        out, pos = [], 0
        for chunk in self.chunks[:-1]:
            pos += len(chunk)
            out.append(pos)
        return out


def fetch(base_url: str, route: str, scenario: str, *, read_timeout: float = 10.0,
          max_bytes: int | None = None) -> Fetched:
    """POST the route's request with the scenario header; collect the raw chunks (up to ``max_bytes``)."""
    path, body = request_for(route)
    timeout = httpx.Timeout(10.0, read=read_timeout)
    started = time.monotonic()
    with httpx.Client(timeout=timeout) as client, client.stream(
            "POST", base_url + path, json=body, headers={"x-demo-scenario": scenario}) as resp:
        chunks: list[bytes] = []
        for chunk in resp.iter_raw():
            chunks.append(chunk)
            if max_bytes is not None and sum(map(len, chunks)) >= max_bytes:
                break
        return Fetched(resp.status_code, resp.headers.get("content-type", ""), dict(resp.headers), chunks,
                       time.monotonic() - started)


def stats(base_url: str) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = httpx.get(base_url + "/__demo/stats").json()["streams"]
    return counts


def wait_for_stat(base_url: str, scenario: str, event: str, at_least: int, timeout: float = 5.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        value = stats(base_url)[scenario][event]
        if value >= at_least or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


@pytest.fixture(scope="module")
def static_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text("<!doctype html><title>demo</title>", encoding="utf-8")
    (root / "app.mjs").write_text("export const ok = true;\n", encoding="utf-8")
    (root / "pyodide").mkdir()
    (root / "pyodide" / "pyodide.asm.wasm").write_bytes(b"\0asm\x01\0\0\0")
    (root / ".secret").write_text("hidden", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def demo(static_dir: Path) -> Iterator[str]:
    running = demo_server.start_in_background(
        static_dir=static_dir, config=UpstreamConfig(time_scale=TIME_SCALE, stall_seconds=STALL_SECONDS))
    try:
        yield running.base_url
    finally:
        running.stop()


# --- a small independent reading of each route's wire format --------------------------------------


@dataclass
class Summary:
    """What a stream said, read naively per route: enough to check the scenario's wire facts."""

    text: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    stop: str | None = None
    terminal: bool = False
    errors: list[str] = field(default_factory=list)
    event_types: list[str] = field(default_factory=list)


def events_of(body: bytes) -> list[SSEEvent]:
    parser = EventStreamParser()
    items = parser.feed(body) + parser.close()
    assert parser.failure is None
    return [item for item in items if isinstance(item, SSEEvent)]


def summarize_chat(events: list[SSEEvent]) -> Summary:
    s = Summary()
    calls: dict[int, dict[str, Any]] = {}
    for ev in events:
        s.event_types.append(ev.type)
        if ev.data == "[DONE]":
            s.terminal = True
            continue
        obj = json.loads(ev.data)
        if ev.type == "error" or "error" in obj:
            s.errors.append(obj["error"]["code"])
            continue
        assert obj["object"] == "chat.completion.chunk" and obj["id"].startswith("chatcmpl-")
        assert isinstance(obj["created"], int) and obj["model"] and obj["system_fingerprint"].startswith("fp_")
        for choice in obj["choices"]:
            delta = choice["delta"]
            s.text += delta.get("content") or ""
            for frag in delta.get("tool_calls", []):
                call = calls.setdefault(frag["index"], {"name": None, "args": ""})
                call["name"] = frag.get("function", {}).get("name") or call["name"]
                call["args"] += frag.get("function", {}).get("arguments", "")
            if choice["finish_reason"]:
                s.stop = choice["finish_reason"]
    s.calls = [calls[i] for i in sorted(calls)]
    return s


def summarize_responses(events: list[SSEEvent]) -> Summary:
    s = Summary()
    calls: dict[int, dict[str, Any]] = {}
    for n, ev in enumerate(events):
        obj = json.loads(ev.data)
        assert ev.type == obj["type"], "event name must equal data.type"
        assert obj["sequence_number"] == n, "sequence numbers count up from 0 without gaps"
        s.event_types.append(ev.type)
        kind = obj["type"]
        if kind == "response.output_text.delta":
            s.text += obj["delta"]
        elif kind == "response.output_item.added" and obj["item"]["type"] == "function_call":
            calls[obj["output_index"]] = {"name": obj["item"]["name"], "args": ""}
        elif kind == "response.function_call_arguments.delta":
            calls[obj["output_index"]]["args"] += obj["delta"]
        elif kind == "response.function_call_arguments.done":
            assert obj["arguments"] == calls[obj["output_index"]]["args"]
        elif kind == "error":
            s.errors.append(obj["error"]["code"])
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            s.terminal = True
            details = obj["response"]["incomplete_details"]
            s.stop = obj["response"]["status"] + (f":{details['reason']}" if details else "")
    s.calls = [calls[i] for i in sorted(calls)]
    return s


def summarize_anthropic(events: list[SSEEvent]) -> Summary:
    s = Summary()
    calls: dict[int, dict[str, Any]] = {}
    for ev in events:
        obj = json.loads(ev.data)
        assert ev.type == obj["type"], "event name must equal data.type"
        s.event_types.append(ev.type)
        kind = obj["type"]
        if kind == "content_block_start" and obj["content_block"]["type"] == "tool_use":
            calls[obj["index"]] = {"name": obj["content_block"]["name"], "args": ""}
        elif kind == "content_block_delta" and obj["delta"]["type"] == "text_delta":
            s.text += obj["delta"]["text"]
        elif kind == "content_block_delta" and obj["delta"]["type"] == "input_json_delta":
            calls[obj["index"]]["args"] += obj["delta"]["partial_json"]
        elif kind == "message_delta":
            s.stop = obj["delta"]["stop_reason"]
        elif kind == "message_stop":
            s.terminal = True
        elif kind == "error":
            s.errors.append(obj["error"]["type"])
    s.calls = [calls[i] for i in sorted(calls)]
    return s


def summarize_gemini(events: list[SSEEvent]) -> Summary:
    s = Summary()
    for ev in events:
        assert ev.type == "message", "Gemini frames are data-only"
        obj = json.loads(ev.data)
        s.event_types.append("chunk")
        if "error" in obj:
            s.errors.append(obj["error"]["status"])
            continue
        candidate = obj["candidates"][0]
        for part in candidate["content"]["parts"]:
            s.text += part.get("text", "")
            call = part.get("functionCall")
            if call is None:
                continue
            if "args" in call:  # a whole call
                s.calls.append({"name": call["name"], "args": call["args"]})
            elif "name" in call:  # a streamed call opens (partialArgs follow; an empty part closes it)
                s.calls.append({"name": call["name"], "args": {}, "open": True})
            elif call.get("partialArgs"):
                for piece in call["partialArgs"]:
                    key = piece["jsonPath"].removeprefix("$.")
                    s.calls[-1]["args"][key] = s.calls[-1]["args"].get(key, "") + piece["stringValue"]
            else:
                s.calls[-1]["open"] = False
        if "finishReason" in candidate:
            s.stop, s.terminal = candidate["finishReason"], True
    return s


SUMMARIZE: dict[str, Callable[[list[SSEEvent]], Summary]] = {
    "openai-chat": summarize_chat, "openai-responses": summarize_responses,
    "anthropic-messages": summarize_anthropic, "gemini": summarize_gemini,
}

#: The route's spelling of: normal stop, tool stop, length stop (as Summary.stop reads it).
STOPS = {
    "openai-chat": ("stop", "tool_calls", "length"),
    "openai-responses": ("completed", "completed", "incomplete:max_output_tokens"),
    "anthropic-messages": ("end_turn", "tool_use", "max_tokens"),
    "gemini": ("STOP", "STOP", "MAX_TOKENS"),
}
#: The route's mid-stream error, as Summary.errors reads it.
ERRORS = {"openai-chat": ["upstream_overloaded"], "openai-responses": ["server_error"],
          "anthropic-messages": ["overloaded_error"], "gemini": ["UNAVAILABLE"]}


def args_object(route: str, call: dict[str, Any]) -> Any:
    return call["args"] if route == "gemini" else json.loads(call["args"])


def assert_sse(route: str, got: Fetched) -> Summary:
    assert got.status == 200
    assert got.content_type.split(";")[0].strip() == "text/event-stream"
    return SUMMARIZE[route](events_of(got.body))


# --- per-scenario wire facts ------------------------------------------------------------------------


def check_plain(route: str, got: Fetched) -> None:
    s = assert_sse(route, got)
    assert s.terminal and s.stop == STOPS[route][0] and not s.calls and not s.errors
    assert PROMPT_ECHO in s.text
    if route == "openai-chat":
        first = json.loads(events_of(got.body)[0].data)
        assert first["choices"][0]["delta"]["role"] == "assistant"
        assert s.event_types[-1] == "message" and events_of(got.body)[-1].data == "[DONE]"
        usage = [json.loads(e.data) for e in events_of(got.body)[:-1]][-1]
        assert usage["choices"] == [] and usage["usage"]["total_tokens"] > 0, "usage chunk before [DONE]"
    if route == "openai-responses":
        assert s.event_types[:2] == ["response.created", "response.in_progress"]
        assert s.event_types[-1] == "response.completed"
    if route == "anthropic-messages":
        assert s.event_types[0] == "message_start" and "ping" in s.event_types
        assert s.event_types[-2:] == ["message_delta", "message_stop"]
    if route == "gemini":
        assert b"\r\n\r\n" in got.body and b"\n" not in got.body.replace(b"\r\n", b""), "CRLF framing only"
        assert b"[DONE]" not in got.body
    ending = b"\r\n\r\n" if route == "gemini" else b"\n\n"
    assert got.body.endswith(ending), "the last event is terminated"


def check_tool(route: str, got: Fetched) -> None:
    s = assert_sse(route, got)
    assert s.terminal and s.stop == STOPS[route][1] and not s.errors
    assert [c["name"] for c in s.calls] == ["get_weather"]
    assert args_object(route, s.calls[0]) == {"location": "Paris, France", "unit": "celsius"}


def check_parallel_tools(route: str, got: Fetched) -> None:
    s = assert_sse(route, got)
    assert s.terminal and s.stop == STOPS[route][1]
    assert [c["name"] for c in s.calls] == ["get_weather", "get_local_time"]
    assert args_object(route, s.calls[1]) == {"timezone": "Europe/Paris"}


def check_multibyte(route: str, got: Fetched) -> None:
    s = assert_sse(route, got)
    assert s.terminal and s.stop == STOPS[route][0]
    assert "東京" in s.text and "👩🏽\u200d💻" in s.text and "Grüße" in s.text
    body = got.body
    assert b"\n" not in body.replace(b"\r\n", b""), "every line ends in CRLF"
    inside_char = [b for b in got.boundaries() if 0x80 <= body[b] <= 0xBF]
    inside_crlf = [b for b in got.boundaries() if body[b - 1 : b + 1] == b"\r\n"]
    assert inside_char, "some chunk boundary falls inside a multi-byte character"
    assert inside_crlf, "some chunk boundary falls between CR and LF"


def check_slow_drip(route: str, got: Fetched) -> None:
    s = assert_sse(route, got)
    assert s.terminal and s.stop == STOPS[route][0]
    writes = len(events_of(got.body))
    assert got.elapsed >= (writes - 1) * 0.35 * TIME_SCALE * 0.9, "events are spaced by the drip delay"


def check_truncated(route: str, got: Fetched) -> None:
    s = assert_sse(route, got)
    assert not s.terminal and s.stop is None and not s.errors
    assert s.text.endswith("middle of a sen"), "the body ends mid-answer"
    assert got.headers.get("connection") == "close"


def check_max_tokens_in_tool(route: str, got: Fetched) -> None:
    s = assert_sse(route, got)
    assert s.terminal and s.stop == STOPS[route][2]
    if route == "gemini":
        # Streamed path by path (partialArgs), and never closed by its own part.
        assert s.calls == [{"name": "get_weather", "args": {"location": "San Fr"}, "open": True}]
        return
    assert [c["name"] for c in s.calls] == ["get_weather"]
    with pytest.raises(json.JSONDecodeError):
        json.loads(s.calls[0]["args"])
    if route == "anthropic-messages":
        starts = s.event_types.count("content_block_start")
        assert s.event_types.count("content_block_stop") == starts - 1, "the tool block is left open"


def check_invalid_tool_json(route: str, got: Fetched) -> None:
    s = assert_sse(route, got)
    assert s.terminal and s.stop == STOPS[route][1]
    if route == "gemini":
        assert s.calls[0]["args"]["unit"] not in ("celsius", "fahrenheit"), "args break the tool's schema"
    else:
        with pytest.raises(json.JSONDecodeError):
            json.loads(s.calls[0]["args"])


def check_upstream_error(route: str, got: Fetched) -> None:
    s = assert_sse(route, got)
    assert s.errors == ERRORS[route] and s.text
    if route == "openai-responses":
        assert s.event_types[-2:] == ["error", "response.failed"] and s.stop == "failed"
    else:
        assert not s.terminal
    if route in ("openai-chat", "anthropic-messages"):
        assert s.event_types[-1] == "error", "the error arrives as `event: error`"


def check_http_502_html(route: str, got: Fetched) -> None:
    assert got.status == 502 and got.content_type.startswith("text/html")
    assert b"<title>502 Bad Gateway</title>" in got.body


def check_json_200(route: str, got: Fetched) -> None:
    assert got.status == 200 and got.content_type.startswith("application/json")
    doc = json.loads(got.body)
    shape: Callable[[Any], bool] = {
        "openai-chat": lambda d: d["object"] == "chat.completion",
        "openai-responses": lambda d: d["object"] == "response" and d["status"] == "completed",
        "anthropic-messages": lambda d: d["type"] == "message",
        "gemini": lambda d: isinstance(d, list) and "candidates" in d[0],
    }[route]
    assert shape(doc)


def check_markup(route: str, got: Fetched) -> None:
    s = assert_sse(route, got)
    assert s.terminal
    assert "<img src=x onerror=alert(1)>" in s.text and '<script>alert("xss")</script>' in s.text


def check_big(route: str, got: Fetched) -> None:
    s = assert_sse(route, got)
    assert s.terminal and s.stop == STOPS[route][0]
    assert len(s.text) >= 1_000_000


def check_refusal(route: str, got: Fetched) -> None:
    s = assert_sse(route, got)
    assert s.terminal and not s.calls and not s.errors
    # Each route's own spelling of a refusal: Chat delta.refusal, Responses refusal parts, Anthropic's stop
    # reason, Gemini's safety stop (it has no refusal channel).
    marker = {"openai-chat": '"delta":{"refusal":"I', "openai-responses": "event: response.refusal.delta",
              "anthropic-messages": '"stop_reason":"refusal"', "gemini": '"finishReason": "SAFETY"'}[route]
    assert marker in got.body.decode()


CHECKS: dict[str, Callable[[str, Fetched], None]] = {
    "plain": check_plain, "tool": check_tool, "parallel_tools": check_parallel_tools,
    "multibyte": check_multibyte, "slow_drip": check_slow_drip, "truncated": check_truncated,
    "max_tokens_in_tool": check_max_tokens_in_tool, "invalid_tool_json": check_invalid_tool_json,
    "upstream_error": check_upstream_error, "http_502_html": check_http_502_html, "json_200": check_json_200,
    "markup": check_markup, "big": check_big, "refusal": check_refusal,
}


def test_every_scenario_has_a_wire_check_here() -> None:
    assert set(CHECKS) | {"endless_event", "stall"} == set(SLUGS)


@pytest.mark.parametrize("scenario", sorted(CHECKS))
@pytest.mark.parametrize("route", ROUTES)
def test_each_route_streams_each_scenario_in_its_wire_form(demo: str, route: str, scenario: str) -> None:
    before = stats(demo)[scenario]
    CHECKS[scenario](route, fetch(demo, route, scenario))
    assert wait_for_stat(demo, scenario, "finished", before["finished"] + 1) == before["finished"] + 1


@pytest.mark.parametrize("route", ROUTES)
def test_endless_event_grows_one_line_until_the_client_leaves(demo: str, route: str) -> None:
    before = stats(demo)["endless_event"]
    got = fetch(demo, route, "endless_event", max_bytes=512 * 1024)
    sep = b"\r\n\r\n" if route == "gemini" else b"\n\n"
    head, _, tail = got.body.rpartition(sep)
    assert head and SUMMARIZE[route](events_of(head + sep)).text, "the answer starts normally"
    assert tail.count(b"data: ") == 1
    line = tail.split(b"data: ", 1)[1]
    assert b"\n" not in line and b"\r" not in line, "the data line never ends"
    assert len(line) > 400 * 1024, "one data line keeps growing"
    assert wait_for_stat(demo, "endless_event", "disconnected", before["disconnected"] + 1) == \
        before["disconnected"] + 1
    assert stats(demo)["endless_event"]["finished"] == before["finished"]


@pytest.mark.parametrize("route", ROUTES)
def test_stall_goes_silent_after_some_events_and_notices_the_client_leaving(demo: str, route: str) -> None:
    before = stats(demo)["stall"]
    with pytest.raises(httpx.ReadTimeout):
        fetch(demo, route, "stall", read_timeout=0.4)
    assert wait_for_stat(demo, "stall", "disconnected", before["disconnected"] + 1) == before["disconnected"] + 1


def test_stall_ends_by_itself_without_a_terminal_event(demo: str) -> None:
    got = fetch(demo, "anthropic-messages", "stall", read_timeout=STALL_SECONDS + 5)
    s = assert_sse("anthropic-messages", got)
    assert s.text and not s.terminal
    assert got.elapsed >= STALL_SECONDS * 0.9


def test_cancelling_mid_stream_is_recorded_as_a_disconnect_and_stops_the_stream(demo: str) -> None:
    before = stats(demo)["slow_drip"]
    path, body = request_for("openai-chat")
    with httpx.Client() as client, client.stream("POST", demo + path, json=body,
                                                 headers={"x-demo-scenario": "slow_drip"}) as resp:
        first = next(resp.iter_raw())
        assert first.startswith(b"data: ")
    after = wait_for_stat(demo, "slow_drip", "disconnected", before["disconnected"] + 1)
    assert after == before["disconnected"] + 1
    time.sleep(0.35 * TIME_SCALE * 3)
    now = stats(demo)["slow_drip"]
    assert now["finished"] == before["finished"] and now["started"] == before["started"] + 1


def test_unknown_scenario_is_refused_with_a_json_400(demo: str) -> None:
    path, body = request_for("openai-chat")
    resp = httpx.post(demo + path, json=body, headers={"x-demo-scenario": "no-such-thing"})
    error = resp.json()["error"]
    assert resp.status_code == 400 and (error["code"], error["type"]) == ("unknown_scenario", "invalid_request_error")
    assert "/demo/config.json" in error["message"]  # (it says where the scenarios are listed)
    assert "no-such-thing" not in resp.text


def test_gemini_without_alt_sse_answers_a_json_array_like_the_real_api(demo: str) -> None:
    resp = httpx.post(demo + "/v1beta/models/gemini-2.5-flash:streamGenerateContent", json={})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/json")
    assert resp.json()[0]["candidates"][0]["finishReason"] == "STOP"


def test_prompt_echo_is_short_and_single_line(demo: str) -> None:
    path, body = request_for("anthropic-messages", prompt="line one\nline\x07two " + "x" * 500)
    resp = httpx.post(demo + path, json=body, headers={"x-demo-scenario": "plain"})
    text = SUMMARIZE["anthropic-messages"](events_of(resp.content)).text
    assert "line one linetwo" in text and "\x07" not in text and "x" * 100 not in text


# --- demo JSON and static files ---------------------------------------------------------------------


def test_tools_json_maps_tool_names_to_json_schemas(demo: str) -> None:
    tools = httpx.get(demo + "/demo/tools.json").json()
    weather = tools["get_weather"]
    assert weather["type"] == "object" and weather["required"] == ["location"]
    assert weather["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]


def test_config_json_lists_every_scenario_and_route(demo: str) -> None:
    doc = httpx.get(demo + "/demo/config.json").json()
    assert doc["mode"] == "embedded" and doc["scenario_header"] == "x-demo-scenario"
    assert [s["slug"] for s in doc["scenarios"]] == list(SLUGS)
    assert [r["route"] for r in doc["routes"]] == list(ROUTES)
    assert "/v1beta/models/{model}:streamGenerateContent" in [r["path"] for r in doc["routes"]]
    # The scenarios a background Responses resume continues (the page's "complete, after a resume" hint).
    assert [s["slug"] for s in doc["scenarios"] if s["resumable"]] == ["truncated", "stall"]


def test_static_site_is_served_with_pyodide_compatible_csp_and_media_types(demo: str) -> None:
    index = httpx.get(demo + "/")
    assert index.status_code == 200 and index.text.startswith("<!doctype html>")
    assert index.headers["cache-control"] == "no-cache"
    csp = index.headers["content-security-policy"]
    assert "script-src 'self' 'wasm-unsafe-eval'" in csp and "'unsafe-eval'" not in csp
    assert "'unsafe-inline'" not in csp and "object-src 'none'" in csp
    assert httpx.get(demo + "/app.mjs").headers["content-type"].startswith("text/javascript")
    assert httpx.get(demo + "/pyodide/pyodide.asm.wasm").headers["content-type"] == "application/wasm"
    streamed = httpx.post(demo + "/v1/messages", json={}, headers={"x-demo-scenario": "plain"})
    assert streamed.headers["content-security-policy"] == csp


@pytest.mark.parametrize("path", ["/.secret", "/../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/missing.js"])
def test_static_site_refuses_paths_outside_or_hidden(demo: str, path: str) -> None:
    assert httpx.get(demo + path).status_code == 404


def test_unsafe_eval_is_added_only_when_asked() -> None:
    assert "'unsafe-eval'" not in demo_server.content_security_policy()
    assert "'wasm-unsafe-eval' 'unsafe-eval'" in demo_server.content_security_policy(unsafe_eval=True)


# --- proxy mode ---------------------------------------------------------------------------------------

KEY = "sk-test-canary-5c0f2b1e"
#: What the fake real upstream writes, with pauses between: boundaries inside "é" and inside CRLF.
UPSTREAM_CHUNKS = (b'data: {"text":"h\xc3', b'\xa9llo"}\r', b'\n\r\ndata: {"text":"w', b'orld"}\r\n\r\n',
                   b"data: [DONE]\r\n\r\n")
UPSTREAM_GAP = 0.1
#: ``fake-long``: events and the pause after each (~4 s in all, far longer than the test that hangs up waits);
#: ``fake-silent`` sends one event, then nothing for 20 s.
LONG_EVENTS, LONG_GAP = 200, 0.02


@dataclass
class FakeUpstream:
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: ``fake-long`` / ``fake-silent`` answers whose reader went away before their end.
    let_go: int = 0

    def app(self) -> Any:
        web = aiohttp_web

        async def handle(request: Any) -> Any:
            self.requests.append({"path": request.path, "query": dict(request.query),
                                  "headers": dict(request.headers), "body": await request.read()})
            body = json.loads(await request.read() or b"{}")
            mode = body.get("model", "") if isinstance(body, dict) else ""
            if mode == "fake-error":
                return web.json_response({"error": {"message": "slow down", "type": "rate_limit_error"}},
                                         status=429, headers={"Retry-After": "7"})
            if mode == "fake-gzip":
                return web.Response(body=gzip.compress(b"data: [DONE]\n\n"), status=200,
                                    headers={"Content-Type": "text/event-stream", "Content-Encoding": "gzip"})
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8",
                                               "x-request-id": "req_fake", "Set-Cookie": "session=upstream"})
            await resp.prepare(request)
            if mode in ("fake-long", "fake-silent"):  # answers that outlast a page that hangs up
                try:
                    for n in range(LONG_EVENTS):
                        await resp.write(b'data: {"n": %d}\n\n' % n)
                        # fake-silent: one event, then nothing for longer than the test waits
                        await asyncio.sleep(LONG_GAP if mode == "fake-long" else LONG_EVENTS * LONG_GAP * 5)
                except (ConnectionError, asyncio.CancelledError):  # the proxy let go of this answer
                    self.let_go += 1
                    raise
                return resp
            for n, chunk in enumerate(UPSTREAM_CHUNKS):
                if n:
                    await asyncio.sleep(UPSTREAM_GAP)
                await resp.write(chunk)
                if mode == "fake-cut" and n == 1:
                    request.transport.close()
                    return resp
            await resp.write_eof()
            return resp

        app = web.Application()
        app.router.add_route("POST", "/{tail:.*}", handle)
        return app


@pytest.fixture(scope="module")
def proxy() -> Iterator[tuple[str, FakeUpstream]]:
    fake = FakeUpstream()
    real = demo_server.start_in_background(app_factory=fake.app)
    front = demo_server.start_in_background(static_dir=None, upstream=real.base_url + "/v1/", api_key=KEY)
    try:
        yield front.base_url, fake
    finally:
        front.stop()
        real.stop()


def proxied(front: str, route: str, fake_mode: str | None = None) -> Fetched:
    """Call ``route`` through the proxy; ``fake_mode`` (sent as the model name) steers the fake upstream."""
    path, body = request_for(route)
    if fake_mode:
        body["model"] = f"fake-{fake_mode}"
    headers = {"x-demo-scenario": "plain", "Authorization": "Bearer page-token", "x-api-key": "page-key",
               "Cookie": "page=1", "anthropic-version": "2023-06-01"}
    with httpx.Client(timeout=10) as client, client.stream("POST", front + path, json=body,
                                                            headers=headers) as resp:
        chunks = list(resp.iter_raw())
        return Fetched(resp.status_code, resp.headers.get("content-type", ""), dict(resp.headers), chunks, 0.0)


@pytest.mark.parametrize("route", ROUTES)
def test_proxy_forwards_upstream_bytes_unchanged_and_unrechunked(proxy: tuple[str, FakeUpstream],
                                                                 route: str) -> None:
    front, _ = proxy
    got = proxied(front, route)
    assert got.status == 200 and got.content_type == "text/event-stream; charset=utf-8"
    assert got.body == b"".join(UPSTREAM_CHUNKS)
    upstream_cuts, pos = set(), 0
    for chunk in UPSTREAM_CHUNKS[:-1]:
        pos += len(chunk)
        upstream_cuts.add(pos)
    assert set(got.boundaries()) <= upstream_cuts, "the proxy never cuts where the upstream did not"
    assert 17 in got.boundaries(), "the cut inside 'é' reaches the page"
    assert got.headers.get("x-request-id") == "req_fake" and "set-cookie" not in got.headers


@pytest.mark.parametrize("route", ROUTES)
def test_proxy_adds_the_key_in_the_routes_headers_and_drops_the_pages_own(proxy: tuple[str, FakeUpstream],
                                                                          route: str) -> None:
    front, fake = proxy
    got = proxied(front, route)
    seen = fake.requests[-1]
    path, body = request_for(route)
    assert seen["path"] == path.split("?")[0]
    assert json.loads(seen["body"]) == body
    headers = {k.lower(): v for k, v in seen["headers"].items()}
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers.get("x-api-key") == (KEY if route == "anthropic-messages" else None)
    assert headers.get("x-goog-api-key") == (KEY if route == "gemini" else None)
    assert "cookie" not in headers and "x-demo-scenario" not in headers
    if route == "gemini":
        assert seen["query"] == {"alt": "sse"}
    assert KEY.encode() not in got.body and all(KEY not in v for v in got.headers.values())


def test_proxy_never_logs_the_key(proxy: tuple[str, FakeUpstream], caplog: pytest.LogCaptureFixture) -> None:
    front, _ = proxy
    with caplog.at_level(logging.DEBUG):
        proxied(front, "anthropic-messages")
        proxied(front, "openai-chat", "error")
        time.sleep(0.1)
    assert caplog.records, "the proxy logs something about each stream"
    assert all(KEY not in record.getMessage() for record in caplog.records)
    assert KEY not in repr(demo_server.UpstreamProxy("http://x", KEY, None))  # type: ignore[arg-type]


def test_proxy_passes_upstream_errors_through_with_their_status(proxy: tuple[str, FakeUpstream]) -> None:
    front, _ = proxy
    got = proxied(front, "openai-chat", "error")
    assert got.status == 429 and got.headers["retry-after"] == "7"
    assert json.loads(got.body)["error"]["type"] == "rate_limit_error"


def test_proxy_hands_the_page_a_gzip_body_decoded_and_without_content_encoding(
        proxy: tuple[str, FakeUpstream]) -> None:
    front, _ = proxy
    got = proxied(front, "openai-chat", "gzip")
    assert "content-encoding" not in got.headers and "content-length" not in got.headers
    assert got.body == b"data: [DONE]\n\n"


def test_proxy_cuts_the_page_connection_when_the_upstream_cuts(proxy: tuple[str, FakeUpstream],
                                                                caplog: pytest.LogCaptureFixture) -> None:
    front, _ = proxy
    before = stats(front)["proxy"]
    with caplog.at_level(logging.ERROR), pytest.raises(httpx.RemoteProtocolError):
        proxied(front, "openai-chat", "cut")
    proxied(front, "openai-chat")  # and a whole one
    time.sleep(0.1)
    now = stats(front)["proxy"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "both answers end cleanly in the server"
    assert {k: now[k] - before.get(k, 0) for k in now} == {"started": 2, "finished": 2, "disconnected": 0}


def proxy_log_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The proxy's lines among the records (the server logs under the same name)."""
    return [message for r in caplog.records
            if r.name == "demo_site.server" and (message := r.getMessage()).startswith("proxy ")]


def test_proxy_logs_each_answer_as_its_route_its_fate_and_the_upstream_bytes_it_took(
        proxy: tuple[str, FakeUpstream], caplog: pytest.LogCaptureFixture) -> None:
    """One line per answer, in fixed words with figures: what an operator needs, and never a byte of content."""
    front, _ = proxy
    whole = sum(map(len, UPSTREAM_CHUNKS))
    cut = len(UPSTREAM_CHUNKS[0]) + len(UPSTREAM_CHUNKS[1])  # the fake closes after its second write
    with caplog.at_level(logging.INFO, logger="demo_site.server"):
        proxied(front, "openai-chat")
        time.sleep(0.1)
        assert proxy_log_lines(caplog) == [f"proxy openai-chat: status 200, {whole} bytes"]
        caplog.clear()
        with pytest.raises(httpx.RemoteProtocolError):
            proxied(front, "anthropic-messages", "cut")
        time.sleep(0.1)
        assert proxy_log_lines(caplog) == [
            f"proxy anthropic-messages: upstream body cut after {cut} bytes; cutting the page's too"]
        caplog.clear()
        got = raw_http.request(front, "/v1beta/models/no%20such:streamGenerateContent?alt=sse", method="POST",
                               body=b"{}")
        time.sleep(0.1)
        assert got.status == 400 and proxy_log_lines(caplog) == ["proxy gemini: path variable refused"]


@pytest.mark.parametrize("mode", ["long", "silent"])
def test_a_page_that_hangs_up_mid_answer_is_counted_disconnected_and_the_upstream_answer_let_go(
        proxy: tuple[str, FakeUpstream], caplog: pytest.LogCaptureFixture, mode: str) -> None:
    """``long``: the upstream goes on writing, so the proxy's next write finds the page gone. ``silent``: it sends
    nothing more, and the server's handler cancellation is what lets the proxy notice the page leaving at once
    (without it the upstream request would stay open until the upstream's next bytes)."""
    front, fake = proxy
    before, let_go = stats(front)["proxy"], fake.let_go
    body = json.dumps({"model": f"fake-{mode}", "stream": True, "messages": []}).encode()
    with caplog.at_level(logging.INFO, logger="demo_site.server"):
        with socket.create_connection(raw_http.address(front), timeout=5) as sock:
            sock.sendall(raw_http.encode("/v1/chat/completions", method="POST", body=body,
                                         headers={"Content-Type": "application/json"}))
            seen = b""
            while b'data: {"n": 0}\n\n' not in seen:  # the first event in: the answer is streaming
                chunk = sock.recv(4096)
                assert chunk, "the proxy ended the answer before the page hung up"
                seen += chunk
        wait_for_stat(front, "proxy", "disconnected", before["disconnected"] + 1)
        time.sleep(0.1)
    now = stats(front)["proxy"]
    assert {k: now[k] - before[k] for k in now} == {"started": 1, "finished": 0, "disconnected": 1}
    lines = proxy_log_lines(caplog)
    found = re.fullmatch(r"proxy openai-chat: client disconnected after (\d+) bytes", lines[0]) if lines else None
    assert len(lines) == 1 and found, lines
    taken = int(found[1])
    first = len(b'data: {"n": 0}\n\n')
    if mode == "silent":
        assert taken == first
    else:
        assert first <= taken < LONG_EVENTS * len(b'data: {"n": 100}\n\n')
    deadline = time.monotonic() + 5
    while fake.let_go == let_go and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fake.let_go == let_go + 1, "the proxy stopped reading the upstream's answer too"


def test_proxy_answers_a_json_502_when_the_upstream_is_unreachable() -> None:
    front = demo_server.start_in_background(static_dir=None, upstream="http://127.0.0.1:1", api_key=KEY)
    try:
        got = proxied(front.base_url, "openai-chat")
        counts = stats(front.base_url)
    finally:
        front.stop()
    assert got.status == 502 and json.loads(got.body)["error"] == {
        "type": "demo_proxy_error", "code": "ClientConnectorError",
        "message": "the demo server could not reach the upstream"}
    assert KEY.encode() not in got.body
    assert counts == {"proxy": {"started": 1, "finished": 1, "disconnected": 0}}


def test_proxy_mode_without_a_key_refuses_to_start(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(demo_server.KEY_ENV, raising=False)
    assert demo_server.main(["--upstream", "http://127.0.0.1:9", "--port", "0"]) == 2
    assert demo_server.KEY_ENV in capsys.readouterr().err
    with pytest.raises(ValueError):
        demo_server.build_app(upstream="http://127.0.0.1:9")


def test_base_url_may_carry_a_trailing_v1() -> None:
    assert demo_server.normalize_base_url("https://api.cometapi.com/v1/") == "https://api.cometapi.com"
    assert demo_server.normalize_base_url("https://api.cometapi.com") == "https://api.cometapi.com"


# --- replaying every route x scenario through StreamSession -----------------------------------------
#
# The bytes the server sent are replayed through webclient's StreamSession, under the chunking the socket
# delivered and under every chunking tests/helpers.py makes, and must reach the outcome this table states.
# ``stall`` is left out: its outcome (timeout) is decided by a transport's idle deadline, not by the bytes.

EXPECTED_OUTCOME = {
    "plain": "complete", "tool": "complete", "parallel_tools": "complete", "multibyte": "complete",
    "slow_drip": "complete", "markup": "complete", "big": "complete",
    "truncated": "truncated", "max_tokens_in_tool": "truncated", "invalid_tool_json": "payload_error",
    "upstream_error": "upstream_error", "http_502_html": "protocol_error", "json_200": "protocol_error",
    "endless_event": "buffer_limit", "refusal": "complete",
}
#: Where a route's outcome differs from the scenario's: Gemini has no refusal channel, only its safety stop.
EXPECTED_ROUTE_OUTCOME = {("gemini", "refusal"): "truncated"}
#: Small ceilings for the endless event, so a short capture is enough to cross them.
ENDLESS_LIMITS = Limits(max_line_chars=4096, max_event_chars=8192)
REPLAY_BIG_CHARS = 40_000


@pytest.fixture(scope="module")
def replay_demo() -> Iterator[str]:
    running = demo_server.start_in_background(
        static_dir=None, config=UpstreamConfig(time_scale=0.01, big_chars=REPLAY_BIG_CHARS))
    try:
        yield running.base_url
    finally:
        running.stop()


@pytest.fixture(scope="module")
def tools(replay_demo: str) -> dict[str, object]:
    registered: dict[str, object] = httpx.get(replay_demo + "/demo/tools.json").json()
    return registered


def replay(route: str, got: Fetched, tools: dict[str, object], limits: Limits) -> Callable[[list[bytes]], Any]:
    """A ``run(chunks)`` for assert_chunking_invariant: a fresh session per call, its comparable result."""

    def run(chunks: list[bytes]) -> tuple[dict[str, Any], str, str]:
        session = StreamSession(route, tools=tools, limits=limits)
        updates = session.open(got.status, got.content_type)
        for chunk in chunks:
            updates += session.feed(chunk)
        result = session.finish().to_dict()
        telemetry = result.pop("telemetry")
        if result["outcome"] == "complete":
            assert telemetry["bytes_received"] == len(got.body)
            assert telemetry["complete_sse_event_count"] == len(events_of(got.body))
        assert telemetry["http_status"] == got.status and telemetry["route"] == route
        provisional = "".join(u.text for u in updates if isinstance(u, TextDelta) and u.channel == "text")
        assert session.final_update is not None
        return result, session.final_update.kind, provisional

    return run


@pytest.mark.parametrize("scenario", sorted(EXPECTED_OUTCOME))
@pytest.mark.parametrize("route", ROUTES)
def test_session_replay_of_each_route_and_scenario_reaches_the_scenarios_outcome(
        replay_demo: str, tools: dict[str, object], route: str, scenario: str) -> None:
    endless = scenario == "endless_event"
    got = fetch(replay_demo, route, scenario, max_bytes=64 * 1024 if endless else None)
    run = replay(route, got, tools, ENDLESS_LIMITS if endless else Limits())
    result, final_kind, provisional = assert_chunking_invariant(run, got.body)
    assert run(got.chunks) == (result, final_kind, provisional), "the chunking the socket delivered agrees"

    assert result["outcome"] == EXPECTED_ROUTE_OUTCOME.get((route, scenario), EXPECTED_OUTCOME[scenario])
    complete = result["outcome"] == "complete"
    assert final_kind == ("committed" if complete else "failed")
    assert result["committed"] is complete
    assert all(call["ready"] is complete for call in result["tool_calls"]), "tools run only after complete"
    if got.status == 200 and got.content_type.startswith("text/event-stream") and not endless:
        wire = SUMMARIZE[route](events_of(got.body))
        assert result["text"] == wire.text == provisional, "session text = wire text = provisional deltas"
    if complete:
        wire_calls = SUMMARIZE[route](events_of(got.body)).calls
        assert [c["name"] for c in result["tool_calls"]] == [c["name"] for c in wire_calls]
        assert [c["arguments"] for c in result["tool_calls"]] == [args_object(route, c) for c in wire_calls]
        assert all(call["state"] == "valid" for call in result["tool_calls"])
    if scenario == "invalid_tool_json":
        assert [call["state"] for call in result["tool_calls"]] == ["invalid"]
    if scenario == "max_tokens_in_tool":
        assert result["stop_reason"] == STOPS[route][2].split(":")[-1]
    if scenario == "endless_event":
        assert result["stage"] == "line"
    if scenario in ("http_502_html", "json_200"):
        assert result["text"] == "" and result["tool_calls"] == []


def test_the_endless_event_stops_at_the_server_s_byte_cap_and_the_stream_counts_as_finished(
        static_dir: Path) -> None:
    """The endless scenario's one growing line is bounded on the server too: past ``endless_cap_bytes`` the
    server ends the response itself (a client that never gives up still gets an end)."""
    cap = 256 * 1024
    running = demo_server.start_in_background(static_dir=static_dir, config=UpstreamConfig(
        time_scale=TIME_SCALE, stall_seconds=STALL_SECONDS, endless_cap_bytes=cap))
    try:
        got = fetch(running.base_url, "openai-chat", "endless_event")
        line = got.body.rpartition(b"data: ")[2]
        assert cap <= len(line) < cap + ENDLESS_WRITE_BYTES + 1024, "one growing line, cut just past the cap"
        assert b"\n" not in line
        assert wait_for_stat(running.base_url, "endless_event", "finished", 1) == 1
        assert stats(running.base_url)["endless_event"]["disconnected"] == 0
    finally:
        running.stop()


def test_the_stats_count_as_active_the_streams_started_and_not_yet_ended() -> None:
    counts = StreamStats(["plain", "stall"])
    for key, event in [("plain", "started"), ("stall", "started"), ("plain", "started"), ("plain", "finished"),
                       ("stall", "disconnected"), ("resume", "started")]:
        counts.record(key, event)
    snapshot = counts.snapshot()
    assert snapshot["active"] == 2  # one plain stream, one resume
    assert snapshot["streams"] == {"plain": {"started": 2, "finished": 1, "disconnected": 0},
                                   "stall": {"started": 1, "finished": 0, "disconnected": 1},
                                   "resume": {"started": 1, "finished": 0, "disconnected": 0}}


def test_a_played_stream_ends_without_the_server_logging_an_error(demo: str, caplog: pytest.LogCaptureFixture) -> None:
    """Each handler hands its finished response back to aiohttp (a handler that returns nothing after streaming
    makes aiohttp log an error and try to answer 500 on a response already sent)."""
    caplog.set_level(logging.ERROR)
    for route in ROUTES:
        before = stats(demo)["plain"]["finished"]
        fetch(demo, route, "plain")
        assert wait_for_stat(demo, "plain", "finished", before + 1) == before + 1
    time.sleep(0.3)  # (aiohttp finishes the response after the handler returned)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
