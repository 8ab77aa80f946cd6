"""The demo server's Responses resume route: background responses are kept, cut ones continue to ``complete``.

The embedded upstream keeps a ``"background": true`` Responses stream (bounded) and serves
``GET /v1/responses/{id}?stream=true&starting_after=N``; webclient's httpx transport, allowed to resume, turns the
``truncated`` and ``stall`` scenarios into one complete answer. In proxy mode the same ``GET`` is forwarded with the
key to the configured origin only, its id and query held to strict patterns (attacker input, like every path).
Everything runs against the real aiohttp server on 127.0.0.1.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator

import pytest

pytestmark = pytest.mark.host

httpx = pytest.importorskip("httpx")
pytest.importorskip("aiohttp.web")

from demo_site import server as demo_server  # noqa: E402  (after the importorskip guard)
from demo_site.scenarios import BY_SLUG, answer_text, sanitize_prompt  # noqa: E402
from demo_site.upstream import (  # noqa: E402
    RESUMED_TAIL,
    KeptResponse,
    OpenAIResponses,
    ResumeStore,
    UpstreamConfig,
    plan_reply,
)
from tests import raw_http  # noqa: E402
from tests.test_demo_server_security import KEY, ProxySetup, proxy_setup  # noqa: E402, F401  (fixture)
from webclient import Deadlines, ResumePolicy  # noqa: E402
from webclient.httpx import run  # noqa: E402

PROMPT = "resume me"
FAST = UpstreamConfig(time_scale=0.01, stall_seconds=30.0)


def body(*, background: bool) -> dict[str, object]:
    return {"model": "gpt-5-mini", "stream": True, "background": background, "input": PROMPT}


@pytest.fixture(scope="module")
def embedded() -> Iterator[str]:
    running = demo_server.start_in_background(static_dir=None, config=FAST)
    try:
        yield running.base_url
    finally:
        running.stop()


def resume_stats(base: str) -> dict[str, int]:
    stats = httpx.get(base + "/__demo/stats").json()["streams"]
    return dict(stats.get("resume", {"started": 0, "finished": 0, "disconnected": 0}))


def full_text(slug: str) -> str:
    return answer_text(BY_SLUG[slug], sanitize_prompt(PROMPT))


# --- through webclient's transport ------------------------------------------------------------------


@pytest.mark.parametrize(("slug", "deadlines"), [("truncated", Deadlines()), ("stall", Deadlines(idle=0.5))])
def test_a_cut_background_answer_resumes_to_one_complete_answer(embedded: str, slug: str,
                                                                 deadlines: Deadlines) -> None:
    before = resume_stats(embedded)["finished"]
    with httpx.Client() as client:
        result = run(client, "openai-responses", embedded + "/v1/responses", json=body(background=True),
                     headers={"x-demo-scenario": slug}, deadlines=deadlines,
                     resume=ResumePolicy(max_resumes=2, delay=0))
    assert (result.outcome.value, result.committed) == ("complete", True)
    assert result.text == full_text(slug) + RESUMED_TAIL
    assert resume_stats(embedded)["finished"] == before + 1, "exactly one resume request was served"


def test_without_background_mode_the_cut_answer_stays_truncated_and_nothing_is_kept(embedded: str) -> None:
    with httpx.Client() as client:
        result = run(client, "openai-responses", embedded + "/v1/responses", json=body(background=False),
                     headers={"x-demo-scenario": "truncated"}, resume=ResumePolicy(max_resumes=1, delay=0))
    assert result.outcome.value != "complete"
    assert result.committed is False
    assert RESUMED_TAIL.strip() not in result.text


def test_without_a_resume_budget_the_background_answer_is_truncated_as_before(embedded: str) -> None:
    with httpx.Client() as client:
        result = run(client, "openai-responses", embedded + "/v1/responses", json=body(background=True),
                     headers={"x-demo-scenario": "truncated"})
    assert (result.outcome.value, result.stage) == ("truncated", "eof")
    assert result.text == full_text("truncated")


# --- the resume route itself -------------------------------------------------------------------------


def events_of(raw: bytes) -> list[dict[str, object]]:
    return [json.loads(line[len(b"data: "):]) for line in raw.split(b"\n") if line.startswith(b"data: ")]


def start_background(base: str, slug: str = "plain") -> tuple[str, list[dict[str, object]]]:
    got = httpx.post(base + "/v1/responses", json=body(background=True), headers={"x-demo-scenario": slug})
    events = events_of(got.content)
    response = events[0]["response"]
    assert isinstance(response, dict)
    return str(response["id"]), events


def test_the_resume_route_replays_exactly_the_events_after_starting_after(embedded: str) -> None:
    response_id, events = start_background(embedded)
    assert events[0]["response"]["background"] is True  # type: ignore[index]
    for after in (0, 3, len(events) - 2):
        got = httpx.get(f"{embedded}/v1/responses/{response_id}", params={"stream": "true", "starting_after": after})
        assert got.status_code == 200
        assert got.headers["content-type"].startswith("text/event-stream")
        assert events_of(got.content) == events[after + 1:]
    everything = httpx.get(f"{embedded}/v1/responses/{response_id}", params={"stream": "true"})
    assert events_of(everything.content) == events
    past_the_end = httpx.get(f"{embedded}/v1/responses/{response_id}",
                             params={"stream": "true", "starting_after": len(events) + 5})
    assert (past_the_end.status_code, past_the_end.content) == (200, b"")


@pytest.mark.parametrize(("query", "status", "code"), [
    ("stream=false", 400, "stream_required"),
    ("", 400, "stream_required"),
    ("stream=true&starting_after=-1", 400, "invalid_starting_after"),
    ("stream=true&starting_after=1e3", 400, "invalid_starting_after"),
    ("stream=true&starting_after=" + "9" * 10, 400, "invalid_starting_after"),
])
def test_the_resume_route_refuses_a_malformed_query_with_a_json_error(embedded: str, query: str, status: int,
                                                                     code: str) -> None:
    response_id, _ = start_background(embedded)
    got = raw_http.request(embedded, f"/v1/responses/{response_id}?{query}")
    assert got.status == status
    assert json.loads(got.body)["error"]["code"] == code


def test_an_unknown_or_malformed_response_id_is_not_found_and_never_echoed(embedded: str) -> None:
    for target in ("/v1/responses/resp_unknown?stream=true", "/v1/responses/%3Cscript%3E?stream=true",
                   "/v1/responses/..%2F..%2Fetc%2Fpasswd?stream=true", "/v1/responses/" + "a" * 300 + "?stream=true"):
        got = raw_http.request(embedded, target)
        assert got.status in (404, 405), target
        assert b"script" not in got.body and b"passwd" not in got.body and b"unknown" not in got.body


def test_a_non_background_answer_is_not_kept(embedded: str) -> None:
    got = httpx.post(embedded + "/v1/responses", json=body(background=False))
    response_id = events_of(got.content)[0]["response"]["id"]  # type: ignore[index]
    resume = httpx.get(f"{embedded}/v1/responses/{response_id}", params={"stream": "true"})
    assert resume.status_code == 404
    error = resume.json()["error"]
    assert (error["code"], error["type"]) == ("not_found", "invalid_request_error")
    assert "most recent" in error["message"]  # (why an id the page holds may be gone)


@pytest.mark.parametrize("slug", ["truncated", "stall", "plain", "tool", "max_tokens_in_tool", "upstream_error",
                                  "multibyte", "refusal"])
def test_the_kept_answer_begins_with_exactly_the_bytes_the_post_delivered(slug: str) -> None:
    reply = plan_reply(OpenAIResponses, BY_SLUG[slug], body(background=True), path_model=None, sse=True,
                       config=FAST, rng=random.Random(7))
    assert reply.kept is not None
    delivered = b"".join(data for _, data in reply.writes)
    kept = b"".join(reply.kept[1].events)
    assert kept.startswith(delivered)
    numbers = [int(n) for n in re.findall(rb'"sequence_number":(\d+)', kept)]
    assert numbers == list(range(len(reply.kept[1].events))), "event n of the kept answer is numbered n"
    if slug in ("truncated", "stall"):
        assert len(kept) > len(delivered)
    else:
        assert kept == delivered


def test_the_endless_scenario_and_other_routes_keep_nothing() -> None:
    endless = plan_reply(OpenAIResponses, BY_SLUG["endless_event"], body(background=True), path_model=None,
                         sse=True, config=FAST, rng=random.Random(1))
    assert endless.kept is None
    from demo_site.upstream import OpenAIChat
    chat = plan_reply(OpenAIChat, BY_SLUG["plain"], body(background=True), path_model=None, sse=True, config=FAST,
                      rng=random.Random(1))
    assert chat.kept is None


def test_the_store_keeps_the_newest_responses_within_both_bounds() -> None:
    store = ResumeStore(max_entries=3, max_bytes=100)
    for n in range(5):
        store.put(f"r{n}", KeptResponse((b"x" * 10,), 0.0))
    assert len(store) == 3
    assert [store.get(f"r{n}") is not None for n in range(5)] == [False, False, True, True, True]
    store.put("big", KeptResponse((b"y" * 90,), 0.0))
    assert store.get("big") is not None
    assert [store.get(f"r{n}") is not None for n in range(2, 5)] == [False, False, True], "oldest dropped by bytes"
    store.put("huge", KeptResponse((b"z" * 101,), 0.0))
    assert store.get("huge") is None, "one over the byte bound is not kept"
    assert store.get("big") is not None and store.get("r4") is not None
    store.put("big", KeptResponse((b"w" * 5,), 0.0))
    store.put("r5", KeptResponse((b"v" * 90,), 0.0))
    assert store.get("big") is not None, "a replaced entry is counted once"


# --- proxy mode ----------------------------------------------------------------------------------------


def test_the_proxy_forwards_a_resume_as_a_get_with_the_key_to_the_configured_origin(proxy_setup: ProxySetup) -> None:  # noqa: F811
    got = raw_http.request(proxy_setup.front, "/v1/responses/resp_68af12-x_9?stream=true&starting_after=41",
                           headers={"Content-Type": "application/json", "x-api-key": "page", "Cookie": "a=b"})
    assert got.status == 200
    seen = proxy_setup.upstream.requests[-1]
    assert seen["method"] == "GET"
    assert seen["raw_path"] == "/v1/responses/resp_68af12-x_9?stream=true&starting_after=41"
    assert seen["headers"]["authorization"] == f"Bearer {KEY}"
    assert "x-api-key" not in seen["headers"] and "x-goog-api-key" not in seen["headers"]
    assert "cookie" not in seen["headers"] and "content-type" not in seen["headers"]


def test_the_proxy_drops_resume_query_parameters_outside_their_patterns(proxy_setup: ProxySetup) -> None:  # noqa: F811
    raw_http.request(proxy_setup.front, "/v1/responses/resp_1?stream=yes&starting_after=4%2F..&key=k&include=x")
    assert proxy_setup.upstream.requests[-1]["raw_path"] == "/v1/responses/resp_1"
    raw_http.request(proxy_setup.front, "/v1/responses/resp_1?starting_after=" + "1" * 13 + "&stream=false")
    assert proxy_setup.upstream.requests[-1]["raw_path"] == "/v1/responses/resp_1?stream=false"


@pytest.mark.parametrize("response_id", ["..", ".", "..%2F..%2Fadmin", "a%2Fb", "a%3Fx%3D1", "a%23b", "a%00b",
                                         "_leading", "-leading", "%C3%A9", "a" * 300, "resp%0d%0aX-Injected:1"])
def test_the_proxy_refuses_a_response_id_outside_the_strict_pattern(proxy_setup: ProxySetup,  # noqa: F811
                                                                    response_id: str) -> None:
    before = len(proxy_setup.upstream.requests)
    got = raw_http.request(proxy_setup.front, f"/v1/responses/{response_id}?stream=true")
    assert got.status in (400, 404, 405), f"{response_id!r} answered {got.status}"
    if got.status == 400:  # the route matched and the proxy refused the id (else the router did)
        assert json.loads(got.body)["error"] == {"type": "demo_proxy_error", "code": "invalid_response_id",
                                                 "message": "the response id is not a valid identifier"}
    assert len(proxy_setup.upstream.requests) == before, "nothing reaches the upstream"
    assert KEY.encode() not in got.wire_body


def test_the_proxy_passes_a_reconnects_last_event_id_and_nothing_else_new(proxy_setup: ProxySetup) -> None:  # noqa: F811
    raw_http.request(proxy_setup.front, "/v1/chat/completions", method="POST", body=b"{}",
                     headers={"Last-Event-ID": "41", "X-Forwarded-For": "1.2.3.4"})
    seen = proxy_setup.upstream.requests[-1]["headers"]
    assert seen["last-event-id"] == "41"
    assert "x-forwarded-for" not in seen


def test_a_listed_origin_may_preflight_the_resume_get_and_only_the_get() -> None:
    running = demo_server.start_in_background(static_dir=None, config=FAST, allow_origins=["http://widget.test"])
    try:
        def preflight(method: str, origin: str = "http://widget.test") -> raw_http.RawResponse:
            return raw_http.request(running.base_url, "/v1/responses/resp_1", method="OPTIONS", headers={
                "Origin": origin, "Access-Control-Request-Method": method,
                "Access-Control-Request-Headers": "x-demo-scenario"})
        allowed = preflight("GET")
        assert allowed.status == 204
        assert allowed.header("access-control-allow-methods") == "GET"
        assert preflight("POST").status == 403
        assert preflight("GET", "http://evil.test").status == 403
    finally:
        running.stop()
