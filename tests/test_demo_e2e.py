"""The demo page end to end: the real site (``pyodide_tools.py site``), the real demo server with its embedded
upstream, Debian's Chromium driven by Playwright. Every test asserts what a person sees on the page.

One browser per module. The scenario and route tests share one page, booted once, as a person would use the chat:
turn after turn (the ``data-testid`` hooks name the latest attempt only, so each check reads the current answer).
The boot test and the 1 MB answer get fresh pages. Each attempt's history is recorded by
``tests/e2e_helpers.py::RECORDER_JS``: provisional text first, committed text only on ``complete``, Run buttons
never enabled before completion or after a failure, one plain-language sentence and one announcement per attempt,
the telemetry, no markup injected, no CSP violation, zero serious/critical axe-core violations, and a main thread
that keeps painting frames. A screenshot of every scenario goes to ``build/artifacts/screenshots/``.
"""

from __future__ import annotations

import itertools
import json
import re
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.host]

pytest.importorskip("aiohttp")
sync_api = pytest.importorskip("playwright.sync_api")

from demo_site import server as demo_server  # noqa: E402  (after the importorskip guards)
from demo_site.scenarios import SCENARIOS  # noqa: E402
from demo_site.upstream import UpstreamConfig  # noqa: E402
from tests.e2e_helpers import (  # noqa: E402
    BOOT_TIMEOUT_MS,
    PROMPT,
    SCREENSHOTS,
    VIEWPORT,
    Attempt,
    PageWatch,
    axe_violations,
    build_site,
    launch_chromium,
    open_demo,
    send,
    server_stats,
    wait_for_outcome,
    wait_for_stat,
    watched_page,
)

ROUTES = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")
#: Scenario delays are scaled by this (slow_drip: ~3.5 s instead of 7 s) so the suite stays quick while every
#: scenario still streams over many frames.
TIME_SCALE = 0.5
#: The stall scenario stays silent this long unless the page gives up first (it must, after its idle timeout).
STALL_SECONDS = 20.0
#: Longest acceptable gap between two beats of the main thread's 10 ms interval while Pyodide boots or a stream
#: renders. Python initialising on the main thread blocks it for 1.5 s or more (loadPyodide alone takes ~1.5 s of
#: CPU in Node on this machine class); a healthy page on a 2-core machine shared with other test runs was once
#: measured at 359 ms, so the bound sits between the two.
MAX_TICK_GAP_MS = 800.0
#: Longest acceptable gap between two painted frames. Looser: with two cores, the worker compiling WebAssembly
#: can starve the browser's compositor for a few hundred ms even while the main thread is idle (1,167 ms once
#: under heavy load).
MAX_FRAME_GAP_MS = 2000.0
#: Telemetry fields (the issue's list, exactly).
TELEMETRY_FIELDS = {
    "observed_at", "request_id", "route", "model_alias", "http_status", "content_type_valid", "chunk_count",
    "bytes_received", "decoded_character_count", "complete_sse_event_count", "pending_line_character_count",
    "pending_event_character_count", "open_payload_accumulator_count", "terminal_condition_seen", "stop_reason",
    "stream_outcome", "buffer_limit_stage", "retry_decision", "duration_ms",
}
WEATHER_ARGS = {"location": "Paris, France", "unit": "celsius"}
TIME_ARGS = {"timezone": "Europe/Paris"}


# --- fixtures ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The static site exactly as the README's demo command builds it."""
    site = build_site(tmp_path_factory.mktemp("demo-site"))
    for name in ("index.html", "app.js", "style.css", "webclient/webclient.mjs", "examples/widget.html"):
        assert (site / name).is_file(), name
    return site


def _serve(site: Path, config: UpstreamConfig) -> Iterator[str]:
    running = demo_server.start_in_background(static_dir=site, config=config)
    try:
        yield running.base_url
    finally:
        running.stop()


@pytest.fixture(scope="session")
def demo(site_dir: Path) -> Iterator[str]:
    """Base URL of the demo server (embedded upstream, scaled delays)."""
    yield from _serve(site_dir, UpstreamConfig(time_scale=TIME_SCALE, stall_seconds=STALL_SECONDS))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch_chromium(sync_api)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh context and page; fails the test on any dialog, uncaught page error or CSP violation."""
    page, watch = watched_page(browser, VIEWPORT)
    try:
        yield page
        watch.assert_clean()
    finally:
        page.context.close()


@pytest.fixture(scope="module")
def booted(browser: Any, demo: str) -> Iterator[tuple[Any, PageWatch]]:
    """One page for the module's conversation, booted once (with axe-core injected)."""
    page, watch = watched_page(browser, VIEWPORT, axe=True)
    try:
        open_demo(page, demo)
        yield page, watch
    finally:
        page.context.close()


@pytest.fixture
def chat(booted: tuple[Any, PageWatch]) -> Iterator[Any]:
    """The module's shared page; fails the test on a dialog, uncaught error or CSP violation during it."""
    page, watch = booted
    since = watch.mark()
    yield page
    watch.assert_clean(since)


def run(page: Any, route: str, scenario: str, **options: Any) -> Attempt:
    sent_at = send(page, route, scenario, **options)
    return wait_for_outcome(page, route, scenario, sent_at, shot=f"{route}-{scenario}")


# --- what every attempt must look like -----------------------------------------------------------------------


def assert_attempt_looks_right(attempt: Attempt, *, streams_text: bool) -> None:
    """The promises of the page, whatever the scenario."""
    before = attempt.before_outcome()
    assert before, "no state was recorded before the outcome appeared"
    # Committed output appears only with the outcome, and only when it is complete.
    assert all(not s["committed"] for s in before), "committed text appeared before the outcome"
    # No tool action is possible before the response is complete.
    assert not any(t["runEnabled"] for s in before for t in s["tools"]), "Run was enabled before completion"
    streamed = [s["provisional"] for s in before if s["provisional"]]
    if streams_text:
        assert streamed, "no provisional text was shown while streaming"
        assert all(s["provisionalState"] == "streaming" for s in before if s["provisional"])
        # Appended, never rewritten: each provisional state extends the previous one.
        assert all(b.startswith(a) for a, b in itertools.pairwise(streamed))
    else:
        assert streamed == [], "provisional text appeared for a response that is not a stream"
    if attempt.outcome == "complete":
        assert attempt.provisional_state == "committed"
        assert attempt.provisional == "", "the provisional copy stays after commit"
        if streams_text:
            assert attempt.committed == streamed[-1], "committed text differs from what streamed"
    else:
        assert attempt.committed == ""
        assert not any(t["runEnabled"] for s in attempt.snaps for t in s["tools"]), "Run enabled after a failure"
        assert attempt.provisional_state == "withdrawn"
        # The text the stream showed stays, labelled as never committed (or the label says there is no answer).
        if attempt.provisional:
            assert "not committed" in attempt.provisional_label
        else:
            assert attempt.provisional_label in ("⚠ No answer", "■ Stopped before any answer")
        if streams_text:
            assert attempt.provisional == streamed[-1], "the withdrawn text differs from what streamed"
    # One plain sentence says how it ended, and the polite live region says it once, after the outcome: never
    # while the text streamed.
    assert attempt.sentence and "_" not in attempt.sentence, "a developer token in the sentence"
    assert all(not s["announced"] for s in before), "the live region spoke before the outcome"
    assert attempt.sentence in attempt.announced
    assert len({s["announced"] for s in attempt.snaps if s["announced"]}) == 1, "announced more than once"
    # The sanitized telemetry record of this attempt.
    telemetry = attempt.telemetry
    assert set(telemetry) == TELEMETRY_FIELDS
    assert telemetry["stream_outcome"] == attempt.outcome
    assert telemetry["route"] == attempt.route
    assert isinstance(telemetry["duration_ms"], (int, float)) and telemetry["duration_ms"] > 0
    text_shown = attempt.committed or attempt.provisional
    record = json.dumps(telemetry)
    assert PROMPT not in record and (len(text_shown) < 12 or text_shown[:12] not in record)
    assert_responsive(attempt.max_tick_gap_ms, attempt.max_frame_gap_ms, attempt.ticks, attempt.frames)


def assert_responsive(tick_gap: float, frame_gap: float, ticks: int, frames: int) -> None:
    """The main thread kept running its timers and the page kept painting."""
    assert ticks > 0 and frames > 0
    assert tick_gap < MAX_TICK_GAP_MS, f"the main thread was blocked for {tick_gap:.0f} ms"
    assert frame_gap < MAX_FRAME_GAP_MS, f"no frame was painted for {frame_gap:.0f} ms"


def final_tools(attempt: Attempt) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = attempt.snaps[-1]["tools"]
    return tools


# --- one test per scenario (openai-chat) ---------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """What a person must see for one scenario, written here independently of the scenario table."""

    outcome: str
    #: The plain-language sentence (a part of it) under the answer.
    says: str
    #: Substrings of the answer as shown: committed text when complete, the withdrawn provisional text otherwise.
    shows: tuple[str, ...] = ()
    #: Provisional text appears before the outcome (False: the response is refused before any event).
    streams_text: bool = True
    #: Final state of each tool card, in order, and the arguments of the ready ones.
    tools: tuple[str, ...] = ()
    tool_args: tuple[dict[str, Any], ...] = ()
    #: Stage named in the technical details.
    stage: str | None = None
    #: Idle timeout typed into the page (seconds) before sending.
    idle_s: float | None = None
    #: The page stops the download itself: the server must see the client disconnect.
    disconnects: bool = False
    #: A Retry button is offered (the telemetry's retry advice allows it).
    retry: bool = False


EXPECTATIONS: dict[str, Expect] = {
    "plain": Expect("complete", "The answer is complete and verified.",
                    shows=(f"You asked: “{PROMPT}”", "stays provisional until the stream completes.")),
    "tool": Expect("complete", "The model asked to use a tool; you can run it below.",
                   shows=("Let me look up the weather",), tools=("ready",), tool_args=(WEATHER_ARGS,)),
    "parallel_tools": Expect("complete", "The model asked to use 2 tools; you can run them below.",
                             shows=("weather and the local time",), tools=("ready", "ready"),
                             tool_args=(WEATHER_ARGS, TIME_ARGS)),
    "multibyte": Expect("complete", "The answer is complete and verified.",
                        shows=("Grüße aus Zürich", "東京の天気は晴れです。", "👩🏽‍💻🚀🎉🇫🇷",
                               "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ∑√∞ ✓")),  # noqa: RUF001 (deliberately non-ASCII)
    "slow_drip": Expect("complete", "The answer is complete and verified.", shows=("one word at a time",)),
    "truncated": Expect("truncated", "The server closed the connection before the answer finished.",
                        shows=("cut off in the middle of a sen",), retry=True),
    "max_tokens_in_tool": Expect("truncated", "the model reached its maximum length and stopped mid-answer",
                                 shows=("Checking the forecast.",), tools=("incomplete",)),
    "invalid_tool_json": Expect("payload_error", "asked to use a tool but sent malformed instructions",
                                shows=("Checking the weather.",), tools=("invalid",)),
    "upstream_error": Expect("upstream_error", "The AI service reported an error while answering",
                             shows=("Starting an answer",)),
    "http_502_html": Expect("protocol_error", "a gateway between this page and the AI service failed (HTTP 502)",
                            streams_text=False, stage="status", retry=True),
    "json_200": Expect("protocol_error", "the server replied in a format this chat cannot read",
                       streams_text=False, stage="media_type"),
    "endless_event": Expect("buffer_limit", "kept growing without end, so the page stopped it at its size limit",
                            shows=("one event never ends",), disconnects=True),
    "stall": Expect("timeout", "The answer stalled: nothing arrived for 1.5 s", shows=("The first words arrive",),
                    stage="idle", idle_s=1.5, disconnects=True, retry=True),
    "markup": Expect("complete", "The answer is complete and verified.",
                     shows=('<script>alert("xss")</script>', "<img src=x onerror=alert(1)>",
                            '<a href="javascript:alert(3)">not a link</a>')),
    # The refusal streams on its own channel (not the provisional text) and is shown as the committed answer.
    "refusal": Expect("complete", "The model declined to answer this request.", shows=("Refused: I can't help with",),
                      streams_text=False),
}


def test_every_scenario_but_the_big_answer_has_an_end_to_end_expectation() -> None:
    assert set(EXPECTATIONS) == {s.slug for s in SCENARIOS} - {"big"}


@pytest.mark.parametrize("scenario", list(EXPECTATIONS))
def test_scenario_on_openai_chat_shows_provisional_text_commits_only_when_complete_and_says_what_happened(
        chat: Any, demo: str, scenario: str) -> None:
    expect = EXPECTATIONS[scenario]
    disconnected = server_stats(demo)[scenario]["disconnected"]
    attempt = run(chat, "openai-chat", scenario, idle_s=expect.idle_s)

    assert attempt.outcome == expect.outcome
    assert_attempt_looks_right(attempt, streams_text=expect.streams_text)
    assert expect.says in attempt.sentence
    assert chat.get_by_test_id("retry").is_visible() is expect.retry
    shown = attempt.committed if expect.outcome == "complete" else attempt.provisional
    for part in expect.shows:
        assert part in shown
    if expect.stage is not None:
        assert attempt.stage == expect.stage
    tools = final_tools(attempt)
    assert [t["state"] for t in tools] == list(expect.tools)
    for card, args in zip(tools, expect.tool_args, strict=False):
        assert json.loads(card["input"]) == args, "the card shows the call's input as streamed"
    assert all(t["runEnabled"] is (t["state"] == "ready") for t in tools), "Run is enabled exactly when ready"
    if expect.disconnects:
        assert wait_for_stat(demo, scenario, "disconnected", disconnected + 1) == disconnected + 1, \
            "the server did not see the page stop the stream"
    if scenario == "stall":
        # The idle deadline typed into the page decided: well before the server's own 20 s.
        assert 1400 <= attempt.telemetry["duration_ms"] < 1500 + 3000
    if scenario == "markup":
        injected = chat.locator("#transcript :is(img, script, iframe, b, a, textarea)").count()
        assert injected == 0, "model output was inserted as markup"
    if expect.tools and expect.outcome == "complete":
        run_button = chat.get_by_test_id("tool-run").first
        run_button.click()
        output = chat.get_by_test_id("tool-output").first
        assert "get_weather(" in output.text_content()
        assert run_button.is_disabled(), "Run stays disabled once the call has run"
    assert axe_violations(chat) == []


# --- all four routes -----------------------------------------------------------------------------------------


def test_an_anthropic_refusal_stop_reads_as_declined_and_its_text_is_the_committed_answer(chat: Any) -> None:
    # Anthropic has no refusal channel: the model's words are text and the stop reason says it declined.
    attempt = run(chat, "anthropic-messages", "refusal")
    assert attempt.outcome == "complete"
    assert "The model declined to answer this request." in attempt.sentence
    assert "I can't help with" in attempt.committed


@pytest.mark.parametrize("route", ROUTES)
def test_plain_and_tool_answers_commit_on_every_route(chat: Any, route: str) -> None:
    turns = chat.locator(".turn").count()
    plain = run(chat, route, "plain")
    assert plain.outcome == "complete"
    assert_attempt_looks_right(plain, streams_text=True)
    assert plain.committed.startswith(f"You asked: “{PROMPT}”")

    tool = run(chat, route, "tool")
    assert tool.outcome == "complete"
    assert_attempt_looks_right(tool, streams_text=True)
    [card] = final_tools(tool)
    assert card["state"] == "ready" and card["runEnabled"]
    assert json.loads(card["input"]) == WEATHER_ARGS
    # The first turn stays on screen but no longer carries the hooks of the current answer.
    assert chat.get_by_test_id("committed").count() == 1
    assert chat.locator(".turn").count() == turns + 2


# --- cancel, boot, a 1 MB answer -----------------------------------------------------------------------------


def test_stop_keeps_the_partial_text_marked_not_committed_and_the_server_sees_the_disconnect(
        chat: Any, demo: str) -> None:
    disconnected = server_stats(demo)["slow_drip"]["disconnected"]
    sent_at = send(chat, "openai-chat", "slow_drip")
    chat.wait_for_function("() => document.querySelector('[data-testid=\"provisional\"]').textContent.length > 20")
    assert chat.get_by_test_id("cancel").is_enabled()
    chat.screenshot(path=str(SCREENSHOTS / "openai-chat-slow_drip-streaming.png"))
    chat.get_by_test_id("cancel").click()
    attempt = wait_for_outcome(chat, "openai-chat", "slow_drip", sent_at, shot="openai-chat-cancel")

    assert attempt.outcome == "cancelled"
    assert_attempt_looks_right(attempt, streams_text=True)
    assert attempt.provisional.startswith("Thinking slowly")
    assert attempt.provisional_label == "■ Stopped — not committed"
    assert attempt.sentence.startswith("You stopped the answer.")
    assert attempt.seconds < 3.0, "the answer ran to its end instead of stopping"
    assert wait_for_stat(demo, "slow_drip", "disconnected", disconnected + 1) == disconnected + 1
    assert chat.get_by_test_id("cancel").is_disabled()
    assert chat.get_by_test_id("retry").is_hidden(), "a stop is the reader's decision: nothing to retry"


def test_the_page_shows_boot_progress_and_keeps_painting_while_python_boots(page: Any, demo: str) -> None:
    page.goto(demo + "/")
    assert page.get_by_test_id("boot-progress").is_visible()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "boot-loading.png"))
    page.get_by_test_id("ready").wait_for(timeout=BOOT_TIMEOUT_MS)
    boot_ms: float = page.evaluate("() => window.__demo.bootMs")
    # From the first paint (the page's own load comes before it), until ready.
    boot = page.evaluate("() => ({ now: performance.now(), snaps: window.__rec.snaps,"
                         " beats: window.__hb.measure(window.__hb.frames[0][0]) })")
    beats = boot["beats"]
    print(f"\n[e2e] boot: Pyodide + webclient ready in the worker after {boot_ms:.0f} ms (page ready at "
          f"{boot['now']:.0f} ms); main thread while booting: longest interval gap {beats['tickGap']:.0f} ms "
          f"({beats['ticks']} beats), longest frame gap {beats['frameGap']:.0f} ms ({beats['frames']} frames)")

    stages = [s["boot"] for s in boot["snaps"] if not s["ready"]]
    assert any("Downloading" in (stage or "") for stage in stages), stages
    assert any("Starting Python" in (stage or "") for stage in stages), stages
    # Download progress as a share: its byte counts are decompressed ones, several times what crosses the wire.
    shares = [s["bootDetail"] for s in boot["snaps"] if "Downloading" in (s["boot"] or "") and s["bootDetail"]]
    assert shares and all(re.fullmatch(r"(100|[1-9]?[0-9])%", share) for share in shares), shares
    assert not any(s["sendEnabled"] for s in boot["snaps"] if not s["ready"]), "Send usable before boot"
    assert page.get_by_test_id("send").is_enabled()
    assert_responsive(beats["tickGap"], beats["frameGap"], beats["ticks"], beats["frames"])
    assert beats["ticks"] >= boot_ms / 50, "the main thread's timers ran too rarely while Python booted"
    assert "snapshot" not in page.locator("#boot-elapsed").text_content()
    # The kit stores a snapshot of the booted Python after ready: a reload restores it, and the header says so.
    deadline = time.monotonic() + 30
    while not page.evaluate("async () => (await (await caches.open('webclient-snapshots')).keys()).length > 0"):
        assert time.monotonic() < deadline, "the kit stored no snapshot"
        time.sleep(0.2)
    page.reload()
    page.get_by_test_id("ready").wait_for(timeout=BOOT_TIMEOUT_MS)
    assert page.locator("#boot-elapsed").text_content().endswith(" s (from the saved snapshot)")
    print(f"[e2e] boot after a reload, from the kit's snapshot: {page.evaluate('() => window.__demo.bootMs'):.0f} ms")


@pytest.fixture(scope="module")
def big_demo(site_dir: Path) -> Iterator[str]:
    """A second server whose ``big`` answer is spread over ~3 s, so the page renders it in many updates and frames
    (even on a loaded 2-core machine)."""
    yield from _serve(site_dir, UpstreamConfig(time_scale=12.0))


def test_a_1mb_answer_renders_each_update_at_a_cost_independent_of_its_length_so_far(
        page: Any, big_demo: str) -> None:
    open_demo(page, big_demo)
    sent_at = send(page, "openai-chat", "big", record=False)
    attempt = wait_for_outcome(page, "openai-chat", "big", sent_at, shot="openai-chat-big")
    assert attempt.outcome == "complete"
    assert len(attempt.committed) >= 1_000_000
    # [characters shown before, characters appended, ms] per text update, and [characters shown, characters added
    # since the previous frame, ms] per frame that followed the stream (seams aligned, layout, scroll to the end).
    times: list[list[float]] = page.evaluate("() => window.__demo.renderTimes")
    frames: list[list[float]] = page.evaluate("() => window.__demo.layoutTimes")
    assert len(times) >= 40, f"only {len(times)} updates: too few to compare start and end"
    assert sum(n for _, n, _ in times) == len(attempt.committed)
    frames = [f for f in frames if f[1] > 0]
    # Frames are fewer on a loaded machine (2 cores shared with the server and the worker): 8 still give a first
    # and a last quarter of 2 frames each.
    assert len(frames) >= 8, f"only {len(frames)} frames followed the text: too few to compare start and end"

    def per_kchar(rows: list[list[float]]) -> float:
        """Median cost per 1,000 characters (medians: a GC pause or a descheduled frame is one outlier)."""
        return statistics.median(1000 * ms / max(n, 1) for _, n, ms in rows)

    def per_row(rows: list[list[float]]) -> float:
        return statistics.median(ms for *_, ms in rows)

    quarter, frame_quarter = len(times) // 4, len(frames) // 4
    start, end = times[:quarter], times[-quarter:]
    frames_start, frames_end = frames[:frame_quarter], frames[-frame_quarter:]
    print(f"\n[e2e] big answer: {len(attempt.committed):,} chars in {len(times)} updates "
          f"({attempt.telemetry['chunk_count']} chunks, {attempt.seconds:.2f} s). Per update (append to the DOM, "
          f"median): first quarter {per_row(start):.3f} ms = {per_kchar(start):.4f} ms per 1,000 chars (shown "
          f"before: {start[0][0]:,}-{start[-1][0]:,}), last quarter {per_row(end):.3f} ms = {per_kchar(end):.4f} ms "
          f"per 1,000 chars ({end[0][0]:,}-{end[-1][0]:,}). Per frame ({len(frames)} frames: seams, layout, scroll "
          f"to the end; median): first quarter {per_row(frames_start):.2f} ms = {per_kchar(frames_start):.3f} ms per "
          f"1,000 new chars, last quarter {per_row(frames_end):.2f} ms = {per_kchar(frames_end):.3f} ms. Main "
          f"thread: longest interval gap {attempt.max_tick_gap_ms:.0f} ms, longest frame gap "
          f"{attempt.max_frame_gap_ms:.0f} ms")
    # performance.now() is coarsened to 0.1 ms in a page that is not cross-origin isolated: compare against at
    # least that resolution, with a generous factor. (Appending with `textContent +=` instead measured about 12x
    # slower per update at the end than at the start; one inline paragraph instead of segments, about 50x per
    # frame.)
    resolution = 1000 * 0.1 / max(statistics.median(n for _, n, _ in times), 1)
    assert per_kchar(end) < 5 * max(per_kchar(start), resolution)
    frame_resolution = 1000 * 0.1 / max(statistics.median(n for _, n, _ in frames), 1)
    assert per_kchar(frames_end) < 5 * max(per_kchar(frames_start), frame_resolution)
    assert_responsive(attempt.max_tick_gap_ms, attempt.max_frame_gap_ms, attempt.ticks, attempt.frames)
