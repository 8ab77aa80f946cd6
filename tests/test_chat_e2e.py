"""The demo as a chat people use, end to end in Debian's Chromium: phone and desktop widths, keyboard, screen
reader, plain-language outcomes, Retry, tool cards on every route, and text that renders and copies exactly.

One site build, one demo server and one browser per module; one page per width (360, 390 and 1280 px), booted
once and used turn after turn like a real chat (the ``data-testid`` hooks name the latest attempt only). Every
scenario is also played at phone width, screenshotted to ``build/artifacts/screenshots/phone-*.png`` and checked
with axe-core (the desktop ones come from ``tests/test_demo_e2e.py``).
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Iterator
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.host]

pytest.importorskip("aiohttp")
sync_api = pytest.importorskip("playwright.sync_api")

from demo_site import server as demo_server  # noqa: E402  (after the importorskip guards)
from demo_site.scenarios import BY_SLUG, SCENARIOS, answer_text, sanitize_prompt  # noqa: E402
from demo_site.upstream import RESUMED_TAIL, UpstreamConfig  # noqa: E402
from tests.e2e_helpers import (  # noqa: E402
    PROMPT,
    SCREENSHOTS,
    Attempt,
    PageWatch,
    axe_violations,
    build_site,
    choose,
    launch_chromium,
    open_demo,
    send,
    server_stats,
    wait_for_outcome,
    watched_page,
)

ROUTES = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")
WIDTHS = {360: 740, 390: 844, 1280: 800}
PHONE, DESKTOP = 360, 1280
TIME_SCALE = 0.5
#: A 1 MB answer is longer than a person reads, but the same code path as 10 KB: 200,000 characters keep the module
#: quick while still making hundreds of segments at phone width (tests/test_demo_e2e.py streams the full 1 MB).
BIG_CHARS = 200_000
#: Seconds between the big answer's writes (32 events each) before TIME_SCALE: its ~26 writes then span about half
#: a second, so the page shows many frames mid-stream (at the table's 2 ms the 200,000 characters arrive within
#: about 30 ms, and once, on a loaded machine, no frame showed the answer half-streamed).
BIG_DELAY = 0.04

#: Installed once per page: after every frame in which the conversation's content changed size (a
#: ResizeObserver runs after the frame's requestAnimationFrame callbacks and layout, so after the page followed
#: the stream), where the latest answer's tail and the latest attempt's end are relative to the visible part of
#: the conversation.
VIEW_JS = """() => {
  if (window.__view) { window.__view.samples = []; return; }
  const view = window.__view = { samples: [] };
  const conversation = document.getElementById("conversation");
  new ResizeObserver(() => {
    const label = document.querySelector('[data-testid="provisional-label"]');
    if (!label) return;
    const attempt = label.closest(".attempt");
    const c = conversation.getBoundingClientRect();
    const box = label.closest(".answer-box").getBoundingClientRect();
    const end = attempt.getBoundingClientRect();
    const inView = (y) => y >= c.top - 1 && y <= c.bottom + 1;
    view.samples.push({ state: attempt.dataset.state, tail: inView(box.bottom), end: inView(end.bottom) });
  }).observe(document.getElementById("transcript"));
}"""

#: Layout facts of the page: sideways scrolling anywhere, and whether the composer is fully on screen.
LAYOUT_JS = """() => {
  const root = document.documentElement;
  const rect = (sel) => document.querySelector(sel).getBoundingClientRect();
  const composer = rect("#ask");
  // Anything a person could scroll sideways: a scroll container wider inside than out.
  const overflowing = [...document.querySelectorAll("body *")]
    .filter((el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX)
            && el.scrollWidth > el.clientWidth + 1)
    .map((el) => el.id || el.className);
  return {
    pageScrollsSideways: root.scrollWidth > root.clientWidth || document.body.scrollWidth > root.clientWidth,
    overflowing,
    composerOnScreen: composer.top >= 0 && composer.bottom <= innerHeight + 0.5 && composer.left >= 0
      && composer.right <= innerWidth + 0.5,
    promptOnScreen: rect("#prompt").bottom <= innerHeight && rect("#send").right <= innerWidth,
  };
}"""


# --- fixtures ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    site = build_site(tmp_path_factory.mktemp("chat-site"))
    running = demo_server.start_in_background(
        static_dir=site, config=UpstreamConfig(time_scale=TIME_SCALE, stall_seconds=20.0, big_chars=BIG_CHARS,
                                                big_delay=BIG_DELAY))
    try:
        yield running.base_url
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch_chromium(sync_api)


@pytest.fixture(scope="module")
def pages(browser: Any, demo: str) -> Iterator[dict[int, tuple[Any, PageWatch]]]:
    """One booted page per width, made when a test first asks for it."""
    made: dict[int, tuple[Any, PageWatch]] = {}
    yield made
    for page, _ in made.values():
        page.context.close()


def at(pages: dict[int, tuple[Any, PageWatch]], browser: Any, demo: str, width: int) -> tuple[Any, PageWatch]:
    if width not in pages:
        page, watch = watched_page(browser, {"width": width, "height": WIDTHS[width]}, axe=True,
                                   permissions=("clipboard-read", "clipboard-write"))
        open_demo(page, demo)
        pages[width] = (page, watch)
    return pages[width]


@pytest.fixture
def phone(pages: dict[int, tuple[Any, PageWatch]], browser: Any, demo: str) -> Iterator[Any]:
    yield from _checked(at(pages, browser, demo, PHONE))


@pytest.fixture
def desktop(pages: dict[int, tuple[Any, PageWatch]], browser: Any, demo: str) -> Iterator[Any]:
    yield from _checked(at(pages, browser, demo, DESKTOP))


def _checked(booted: tuple[Any, PageWatch]) -> Iterator[Any]:
    page, watch = booted
    since = watch.mark()
    yield page
    watch.assert_clean(since)


def ask(page: Any, route: str, scenario: str, *, shot: str | None = None, **options: Any) -> Attempt:
    return wait_for_outcome(page, route, scenario, send(page, route, scenario, **options), shot=shot)


def model_text(scenario: str) -> str:
    """The answer the demo upstream streams for ``scenario`` and the tests' prompt (computed here, not read back
    from the page)."""
    spec = BY_SLUG[scenario]
    if scenario == "big":
        spec = dataclasses.replace(spec, repeat_to_chars=BIG_CHARS)
    return answer_text(spec, sanitize_prompt(PROMPT))


def fill_conversation(page: Any) -> None:
    """Enough turns that the conversation scrolls (the newest answer is then off screen unless followed)."""
    for _ in range(6):
        if page.evaluate("() => { const c = document.getElementById('conversation');"
                         " return c.scrollHeight > c.clientHeight + 300; }"):
            return
        ask(page, "openai-chat", "parallel_tools")


#: Option labels wider than their picker (measured in the picker's font; the arrow takes about 20 px).
CUT_LABELS_JS = """() => {
  const canvas = document.createElement("canvas").getContext("2d");
  const cut = [];
  for (const select of document.querySelectorAll("#settings select")) {
    const style = getComputedStyle(select);
    canvas.font = style.font;
    const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
    for (const option of select.options) {
      if (canvas.measureText(option.textContent).width > room) cut.push(`${select.id}: ${option.textContent}`);
    }
  }
  return cut;
}"""


def assert_fits(page: Any) -> None:
    layout = page.evaluate(LAYOUT_JS)
    assert not layout["pageScrollsSideways"], "the page scrolls sideways"
    assert layout["overflowing"] == [], f"content wider than its box: {layout['overflowing']}"
    assert layout["composerOnScreen"] and layout["promptOnScreen"], "the composer is not fully on screen"


# --- layout at phone and desktop widths ----------------------------------------------------------------------


@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_chat_fits_the_width_keeps_the_composer_on_screen_and_follows_the_newest_answer(
        pages: dict[int, tuple[Any, PageWatch]], browser: Any, demo: str, width: int) -> None:
    page, watch = at(pages, browser, demo, width)
    since = watch.mark()
    # Settings: a one-line summary on phones, open on wide screens.
    assert page.locator("#settings").evaluate("(el) => el.open") is (width >= 720)
    fill_conversation(page)
    assert_fits(page)
    page.evaluate(VIEW_JS)
    attempt = ask(page, "openai-chat", "slow_drip", shot=f"chat-{width}-followed")
    assert attempt.outcome == "complete"
    samples = page.evaluate("() => window.__view.samples")
    streaming = [s for s in samples if s["state"] == "streaming"]
    assert len(streaming) >= 3, f"only {len(streaming)} frames changed the conversation while it streamed"
    assert all(s["tail"] for s in streaming), "the streaming answer's tail left the visible conversation"
    after = [s for s in samples if s["state"] != "streaming"]
    assert after and after[-1]["end"] and after[-1]["tail"], "the committed answer is not in view"
    assert_fits(page)
    # The settings open (or closed) do not push anything sideways either, and no picker cuts its labels.
    settings = page.locator("#settings summary")
    settings.click()
    assert_fits(page)
    if width >= 720:
        settings.click()
    assert page.evaluate(CUT_LABELS_JS) == [], "a picker cuts its labels"
    page.screenshot(path=str(SCREENSHOTS / f"chat-{width}-settings.png"))
    if width < 720:
        settings.click()
    assert page.locator("#settings").evaluate("(el) => el.open") is (width >= 720)
    watch.assert_clean(since)


def test_the_chat_fits_the_narrowest_phone_and_a_wide_screen_with_the_settings_open_or_closed(phone: Any) -> None:
    fill_conversation(phone)
    phone.locator("#jump").evaluate("(el) => el.hidden || el.click()")

    def at_the_bottom() -> bool:
        phone.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        return bool(phone.evaluate("""() => {
            const c = document.getElementById("conversation");
            return c.scrollHeight - c.scrollTop - c.clientHeight < 2 && document.getElementById("jump").hidden;
        }"""))

    assert at_the_bottom()
    try:
        for width, height in ((320, 568), (1920, 1080)):
            phone.set_viewport_size({"width": width, "height": height})
            # A reader at the bottom stays there when the window changes size (a rotated phone, a resized window).
            assert at_the_bottom(), f"the view left the newest answer when the window became {width} px wide"
            for _ in range(2):  # the settings closed, then open (and closed again)
                phone.locator("#settings summary").click()
                assert_fits(phone)
                assert at_the_bottom(), "opening or closing the settings moved the view off the newest answer"
            assert phone.locator("header.top").bounding_box()["height"] < 50, "the header takes two lines"
            # The composer lines up with the conversation's text column.
            text_column = phone.locator(".conversation-inner").evaluate("""(el) => {
                const box = el.getBoundingClientRect(), style = getComputedStyle(el);
                return [box.left + parseFloat(style.paddingLeft), box.right - parseFloat(style.paddingRight)];
            }""")
            prompt_row = phone.locator(".prompt-row").bounding_box()
            assert [prompt_row["x"], prompt_row["x"] + prompt_row["width"]] == pytest.approx(text_column, abs=1)
            phone.screenshot(path=str(SCREENSHOTS / f"chat-{width}-fit.png"))
    finally:
        phone.set_viewport_size({"width": PHONE, "height": WIDTHS[PHONE]})


def test_a_reader_who_scrolls_up_stays_put_through_the_commit_and_can_jump_to_latest(phone: Any) -> None:
    fill_conversation(phone)
    sent_at = send(phone, "openai-chat", "slow_drip")
    phone.wait_for_function("() => document.querySelector('[data-testid=\"provisional\"]').textContent.length > 15")
    conversation = phone.locator("#conversation")
    box = conversation.bounding_box()
    phone.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    phone.mouse.wheel(0, -400)
    phone.wait_for_function("() => !document.getElementById('jump').hidden")
    anchor = phone.locator(".turn").nth(-2)  # the turn before the answer: where the reader is
    before = (conversation.evaluate("(el) => el.scrollTop"), anchor.bounding_box()["y"])
    attempt = wait_for_outcome(phone, "openai-chat", "slow_drip", sent_at)
    assert attempt.outcome == "complete"
    after = (conversation.evaluate("(el) => el.scrollTop"), anchor.bounding_box()["y"])
    assert after == pytest.approx(before, abs=1), "the view moved while the reader was reading"
    phone.screenshot(path=str(SCREENSHOTS / "chat-360-jump-to-latest.png"))
    # A new width (a rotated phone) re-wraps everything: a reader who scrolled back is not pulled to the bottom.
    try:
        phone.set_viewport_size({"width": 320, "height": WIDTHS[PHONE]})
        phone.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        distance = conversation.evaluate("(el) => el.scrollHeight - el.scrollTop - el.clientHeight")
        assert distance > 100 and phone.locator("#jump").is_visible(), "a new width pulled the reader to the bottom"
    finally:
        phone.set_viewport_size({"width": PHONE, "height": WIDTHS[PHONE]})
    phone.locator("#jump").click()
    distance = conversation.evaluate("(el) => el.scrollHeight - el.scrollTop - el.clientHeight")
    assert distance < 2 and phone.locator("#jump").is_hidden()


# --- keyboard ------------------------------------------------------------------------------------------------


def test_enter_sends_shift_enter_adds_a_line_and_the_prompt_clears_with_the_focus_kept(desktop: Any) -> None:
    choose(desktop, "openai-chat", "plain")
    turns = desktop.locator(".turn").count()
    prompt = desktop.get_by_test_id("prompt")
    prompt.fill("   ")
    assert desktop.get_by_test_id("send").is_disabled(), "a blank prompt can be sent"
    prompt.press("Enter")
    assert desktop.locator(".turn").count() == turns, "Enter sent a blank prompt"
    # Enter that confirms a character being composed with an input method (Japanese, Chinese...) does not send.
    prompt.fill("とうきょう")
    composing = desktop.evaluate("""() => {
        const event = new KeyboardEvent("keydown", { key: "Enter", isComposing: true, bubbles: true,
                                                     cancelable: true });
        document.getElementById("prompt").dispatchEvent(event);
        return event.defaultPrevented;
    }""")
    assert not composing and desktop.locator(".turn").count() == turns, "Enter sent a half-composed message"
    prompt.fill("")
    prompt.click()
    desktop.keyboard.type("first line")
    desktop.keyboard.press("Shift+Enter")
    desktop.keyboard.type("second line")
    assert prompt.input_value() == "first line\nsecond line"
    assert desktop.locator(".turn").count() == turns, "Shift+Enter sent the message"
    sent_at = desktop.evaluate("() => { window.__rec.reset(); return performance.now(); }")
    desktop.keyboard.press("Enter")
    assert desktop.locator(".turn").count() == turns + 1
    assert desktop.locator(".turn .prompt-text").last.text_content() == "first line\nsecond line"
    assert prompt.input_value() == "", "the prompt keeps the sent text"
    assert desktop.evaluate("() => document.activeElement.id") == "prompt"
    attempt = wait_for_outcome(desktop, "openai-chat", "plain", sent_at)
    assert attempt.outcome == "complete"
    assert prompt.input_value() == "", "a complete answer gives nothing back to retype"
    assert desktop.evaluate("() => document.activeElement.id") == "prompt"


def test_escape_stops_the_answer_keeps_its_text_and_gives_the_prompt_back(desktop: Any) -> None:
    sent_at = send(desktop, "openai-chat", "slow_drip", prompt="Tell me slowly")
    desktop.wait_for_function("() => document.querySelector('[data-testid=\"provisional\"]').textContent.length > 15")
    desktop.keyboard.press("Escape")
    attempt = wait_for_outcome(desktop, "openai-chat", "slow_drip", sent_at, shot="chat-1280-stopped")
    assert attempt.outcome == "cancelled"
    assert attempt.provisional.startswith("Thinking slowly") and attempt.committed == ""
    assert attempt.provisional_label == "■ Stopped — not committed"
    assert desktop.get_by_test_id("prompt").input_value() == "Tell me slowly", "the prompt did not come back"
    assert desktop.evaluate("() => document.activeElement.id") == "prompt"


# --- resuming a cut Responses answer ---------------------------------------------------------------------------


def set_resume(page: Any, on: bool) -> None:
    """Tick or clear "Resume cut Responses streams" (opening the settings if a phone layout keeps them closed)."""
    was_open = page.locator("#settings").evaluate("(el) => el.open")
    if not was_open:
        page.locator("#settings summary").click()
    page.get_by_test_id("resume-toggle").set_checked(on)
    if not was_open:
        page.locator("#settings summary").click()


@pytest.mark.parametrize("scenario", ["truncated", "stall"])
def test_with_resuming_on_a_cut_responses_answer_continues_into_one_committed_answer(desktop: Any, demo: str,
                                                                                    scenario: str) -> None:
    choose(desktop, "openai-responses", scenario)
    set_resume(desktop, True)
    try:
        assert "expected outcome: complete, after a resume" in desktop.locator("#expected").text_content()
        resumes = server_stats(demo).get("resume", {}).get("finished", 0)
        attempt = wait_for_outcome(desktop, "openai-responses", scenario,
                                   send(desktop, "openai-responses", scenario, idle_s=1.0 if scenario == "stall"
                                        else None), shot=f"chat-1280-resumed-{scenario}")
        assert (attempt.outcome, attempt.committed) == ("complete", model_text(scenario) + RESUMED_TAIL)
        assert server_stats(demo)["resume"]["finished"] == resumes + 1, "one resume request continued it"
    finally:
        set_resume(desktop, False)


@pytest.mark.parametrize("width", [PHONE, DESKTOP])
def test_the_expected_outcome_shown_is_the_one_of_the_chosen_route(width: int, request: pytest.FixtureRequest) -> None:
    """A refusal commits where the route has a refusal channel or stop reason; Gemini says it with its filter
    stop (SAFETY), which cuts the answer: the settings say so before anything is sent."""
    page = request.getfixturevalue("phone" if width == PHONE else "desktop")
    expected = page.locator("#expected")
    choose(page, "openai-chat", "refusal")
    assert "expected outcome: complete." in expected.text_content()
    choose(page, "gemini", "refusal")
    assert "expected outcome: truncated." in expected.text_content()
    settings = page.locator("#settings summary")
    opened = not page.locator("#settings").evaluate("(el) => el.open")
    if opened:
        settings.click()
    assert_fits(page)
    page.screenshot(path=str(SCREENSHOTS / f"chat-{width}-settings-gemini-refusal.png"))
    if opened:
        settings.click()
    choose(page, "gemini", "plain")
    assert "expected outcome: complete." in expected.text_content()
    if width == PHONE:  # and the answer ends as promised: a cut, its text kept as provisional
        attempt = ask(page, "gemini", "refusal", shot="chat-360-gemini-refusal")
        assert (attempt.outcome, attempt.stage, attempt.committed) == ("truncated", "stop_reason", "")
        assert "I can't help with" in attempt.provisional


def test_the_resume_setting_applies_to_the_responses_route_only_and_is_off_by_default(desktop: Any) -> None:
    toggle = desktop.get_by_test_id("resume-toggle")
    choose(desktop, "openai-chat", "truncated")
    assert toggle.is_disabled() and not toggle.is_checked()
    choose(desktop, "openai-responses", "truncated")
    assert toggle.is_enabled() and not toggle.is_checked()
    assert "expected outcome: truncated." in desktop.locator("#expected").text_content()
    assert ask(desktop, "openai-responses", "truncated").outcome == "truncated", "off: the cut stays a cut"


# --- outcomes a person understands, Retry ----------------------------------------------------------------------


def test_retry_sends_the_same_request_again_until_the_retry_advice_says_stop(desktop: Any, demo: str) -> None:
    first = ask(desktop, "openai-chat", "truncated")
    assert first.outcome == "truncated" and "You can try again." in first.sentence
    assert desktop.get_by_test_id("prompt").input_value() == PROMPT, "the prompt came back after the failure"
    turns = desktop.locator(".turn").count()
    started = server_stats(demo)["truncated"]["started"]
    # Changing the settings afterwards does not change what Retry sends: the same request, again.
    desktop.get_by_test_id("scenario-select").select_option("plain")
    for number in (2, 3):
        sent_at = desktop.evaluate("() => { window.__rec.reset(); return performance.now(); }")
        desktop.get_by_test_id("retry").click()
        again = wait_for_outcome(desktop, "openai-chat", "truncated", sent_at)
        assert again.outcome == "truncated"
        assert again.telemetry["request_id"] == first.telemetry["request_id"]
        assert server_stats(demo)["truncated"]["started"] == started + number - 1
        assert desktop.locator(".turn").count() == turns, "a retry is the same question, not a new one"
        assert desktop.locator(".turn").last.locator(".attempt").count() == number
        assert desktop.get_by_test_id("provisional").count() == 1, "hooks left on an older attempt"
    # Each attempt shows its number; the older ones say they were retried instead of offering to try again.
    attempts = desktop.locator(".turn").last.locator(".attempt")
    assert attempts.locator(".attempt-number").all_inner_texts() == ["Attempt 1", "Attempt 2", "Attempt 3"]
    assert attempts.locator(".attempt-title").all_text_contents() == [
        f"Model answer, attempt {n}" for n in (1, 2, 3)], "a screen reader does not hear which attempt is which"
    older = attempts.locator(".outcome-sentence").all_inner_texts()[:2]
    assert [sentence.endswith(f"Retried below as attempt {n}.") for n, sentence in enumerate(older, 2)] == [True] * 2
    assert not any("try again" in sentence for sentence in older), older
    # The third attempt used up the advice's attempts: no more Retry, and the sentence no longer offers it.
    assert desktop.get_by_test_id("retry").is_hidden()
    assert "try again" not in again.sentence
    assert again.telemetry["retry_decision"] == "surface_to_user"
    desktop.screenshot(path=str(SCREENSHOTS / "chat-1280-retried.png"))


#: Synthetic results (the kit's result shape) for every way an attempt ends, with a part of the sentence each
#: must get. Several cannot be produced by the demo upstream (a network cut, a content filter, an unknown stop
#: reason), so the page's own sentence function is called with them.
OUTCOME_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "length stop": ({"outcome": "truncated", "stage": "stop_reason", "route": "anthropic-messages",
                     "stop_reason": "max_tokens"}, "reached its maximum length"),
    "filter stop": ({"outcome": "truncated", "stage": "stop_reason", "route": "openai-chat",
                     "stop_reason": "content_filter"}, "content filter stopped it"),
    "filter stop (Gemini)": ({"outcome": "truncated", "stage": "stop_reason", "route": "gemini",
                              "stop_reason": "SAFETY"}, "content filter stopped it"),
    "stop not accepted": ({"outcome": "truncated", "stage": "stop_reason", "route": "openai-chat",
                           "stop_reason": "stop"}, "set not to accept"),
    "network cut": ({"outcome": "truncated", "stage": "network"}, "The connection was lost"),
    "closed early": ({"outcome": "truncated", "stage": "eof"}, "closed the connection before"),
    "cut mid-message": ({"outcome": "truncated", "stage": "pending_event"}, "in the middle of a message"),
    "no stop reason": ({"outcome": "truncated", "stage": "missing_stop"}, "without saying the answer was finished"),
    "provider error": ({"outcome": "upstream_error", "stage": "error",
                        "provider_error": {"type": "overloaded_error", "code": None}}, "it is overloaded"),
    "provider rate limit": ({"outcome": "upstream_error", "stage": "error",
                             "provider_error": {"type": "rate_limit_error", "code": None}}, "too many requests"),
    "provider error stop": ({"outcome": "upstream_error", "stage": "error_stop"}, "stopped with an error"),
    "HTTP 429": ({"outcome": "protocol_error", "stage": "status", "http_status": 429}, "asked to slow down"),
    "HTTP 401": ({"outcome": "protocol_error", "stage": "status", "http_status": 401}, "not signed in"),
    "HTTP 500": ({"outcome": "protocol_error", "stage": "status", "http_status": 500}, "internal error (HTTP 500)"),
    "HTTP 502": ({"outcome": "protocol_error", "stage": "status", "http_status": 502}, "gateway"),
    "HTTP 503": ({"outcome": "protocol_error", "stage": "status", "http_status": 503}, "temporarily unavailable"),
    "not a stream": ({"outcome": "protocol_error", "stage": "media_type"}, "cannot read"),
    "unrecognized stop": ({"outcome": "protocol_error", "stage": "unrecognized_stop", "stop_reason": "new_reason"},
                          "does not recognise"),
    "broken format": ({"outcome": "protocol_error", "stage": "envelope"}, "broke the rules"),
    "lost event": ({"outcome": "protocol_error", "stage": "sequence_gap"}, "went missing or arrived out of order"),
    "garbled bytes": ({"outcome": "decode_error", "stage": "utf8"}, "garbled characters"),
    "bad tool input": ({"outcome": "payload_error", "stage": "tool_json"}, "malformed instructions"),
    "bad payload": ({"outcome": "payload_error", "stage": "payload"}, "Part of the reply was malformed"),
    "endless event": ({"outcome": "buffer_limit", "stage": "event"}, "kept growing without end"),
    "too long": ({"outcome": "buffer_limit", "stage": "text"}, "beyond this page's size limit"),
    "connect deadline": ({"outcome": "timeout", "stage": "connect"}, "Could not reach the server within 10 s"),
    "first event deadline": ({"outcome": "timeout", "stage": "first_event"}, "did not start answering within 8 s"),
    "idle deadline": ({"outcome": "timeout", "stage": "idle"}, "nothing arrived for 2.5 s"),
    "total deadline": ({"outcome": "timeout", "stage": "total"}, "longer than the 60 s limit"),
    "cancel": ({"outcome": "cancelled", "stage": "caller"}, "You stopped the answer."),
    "complete": ({"outcome": "complete", "stage": None}, "The answer is complete and verified."),
    "refusal": ({"outcome": "complete", "stage": None, "refusal": "No."}, "declined to answer"),
    # Anthropic declines with a stop reason (and says why in the message's stop details), not a refusal channel.
    "refusal stop (Anthropic)": ({"outcome": "complete", "stage": None, "route": "anthropic-messages",
                                  "stop_reason": "refusal", "details": {"stop_details": {
                                      "type": "refusal", "category": "cyber", "explanation": None}}},
                                 "declined to answer"),
}


def test_every_outcome_and_stop_reason_gets_its_own_plain_sentence_with_details_one_click_away(
        desktop: Any) -> None:
    said = desktop.evaluate("""async (cases) => {
        const { describeOutcome } = await import("/outcomes.js");
        const deadlines = { connect_ms: 10000, first_event_ms: 8000, idle_ms: 2500, total_ms: 60000 };
        return Object.fromEntries(Object.entries(cases).map(([name, [result]]) => [name, describeOutcome(
            { route: "openai-chat", stop_reason: null, tool_calls: [], telemetry: { retry_decision: null }, ...result },
            { deadlines, shownText: false })]));
    }""", OUTCOME_CASES)
    for name, (_, expected) in OUTCOME_CASES.items():
        sentence = said[name]["sentence"]
        assert expected in sentence, f"{name}: {sentence!r}"
        assert "_" not in sentence, f"{name}: a developer token in {sentence!r}"
    # Different causes never read the same.
    same_cause = ("filter stop (Gemini)", "refusal stop (Anthropic)")
    distinct = {said[name]["sentence"] for name in OUTCOME_CASES if name not in same_cause}
    assert len(distinct) == len(OUTCOME_CASES) - len(same_cause)
    assert said["refusal stop (Anthropic)"]["label"] == said["refusal"]["label"] == "✓ Complete · the model declined"
    assert dict(said["refusal stop (Anthropic)"]["technical"])["Refusal category"] == "cyber"
    assert "Refusal category" not in dict(said["refusal"]["technical"])
    technical = dict(said["HTTP 502"]["technical"])
    assert technical["Outcome"] == "protocol_error" and technical["Stage"] == "status"
    assert technical["HTTP status"] == "502"
    # On the page: the sentence is shown, the technical detail is one click away.
    ask(desktop, "openai-responses", "http_502_html")
    details = desktop.locator(".attempt").last.locator("details.technical")
    assert details.evaluate("(el) => el.open") is False
    assert desktop.get_by_test_id("stage").is_hidden()
    details.locator("summary").click()
    assert desktop.get_by_test_id("stage").text_content() == "status"
    assert desktop.get_by_test_id("outcome").is_visible()


def test_the_pages_stop_reason_table_matches_the_librarys_route_tables(desktop: Any) -> None:
    from webclient._routes import anthropic_messages, gemini, openai_chat, openai_responses

    page_table: dict[str, dict[str, list[str]]] = desktop.evaluate(
        "async () => (await import('/outcomes.js')).STOP_CATEGORIES")
    library = {"openai-chat": openai_chat.STOP_REASONS, "openai-responses": openai_responses.STOP_REASONS,
               "anthropic-messages": anthropic_messages.STOP_REASONS, "gemini": gemini.STOP_REASONS}
    for route, table in library.items():
        expected: dict[str, set[str]] = {}
        for reason, category in table.items():
            expected.setdefault(category.value, set()).add(reason)
        if route == "gemini":  # a refused prompt (promptFeedback.blockReason) is a filter stop
            expected["filter"] |= set(gemini.PROMPT_BLOCK_REASONS)
        got = {category: set(reasons) for category, reasons in page_table[route].items() if reasons}
        assert got == expected, route


# --- tool cards: one state model on every route ----------------------------------------------------------------


#: Order of the tool-card states (tool_card.js): a card's state never goes back, and never sideways on one rank.
TOOL_STATE_RANK = {"streaming": 0, "closed": 1, "valid": 2, "invalid": 2, "ready": 3, "incomplete": 3}


@pytest.mark.parametrize(("scenario", "final"),
                         [("max_tokens_in_tool", "incomplete"), ("invalid_tool_json", "invalid")])
@pytest.mark.parametrize("route", ROUTES)
def test_a_tool_card_ends_in_the_same_state_on_every_route(desktop: Any, route: str, scenario: str,
                                                          final: str) -> None:
    attempt = ask(desktop, route, scenario, shot=f"tools-{route}-{scenario}")
    card = desktop.get_by_role("group", name="Tool request get_weather")
    assert card.count() >= 1
    card = desktop.get_by_test_id("tool-card")
    assert card.count() == 1, "one card for the one call"
    assert card.get_attribute("data-state") == final
    run = desktop.get_by_test_id("tool-run")
    assert run.is_disabled()
    reason = desktop.locator(f"#{run.get_attribute('aria-describedby')}").text_content()
    assert "cannot run" in reason, "Run is disabled without its reason"
    # Before the outcome: only the streaming states, never runnable, always styled provisional (dashed).
    before = [t for s in attempt.before_outcome() for t in s["tools"]]
    assert {t["state"] for t in before} <= {"streaming", "closed", "valid", "invalid"}
    # The card only ever moves forward through the model: streaming -> closed -> valid | invalid -> the end.
    states = [s["tools"][0]["state"] for s in attempt.snaps if s["tools"]]
    seen = [state for i, state in enumerate(states) if i == 0 or states[i - 1] != state]
    assert seen[0] == "streaming", f"the card did not start streaming: {seen}"
    ranks = [TOOL_STATE_RANK[state] for state in seen]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks), f"the card went back or sideways: {seen}"
    assert seen[-1] == final
    assert not any(t["runEnabled"] for s in attempt.snaps for t in s["tools"])
    assert card.evaluate("(el) => getComputedStyle(el).borderTopStyle") == "dashed"
    # The arguments are shown as inert text.
    assert card.locator("[data-testid=tool-input]").evaluate("(el) => el.children.length") == 0


def test_a_ready_tool_card_runs_once_and_shows_its_result(desktop: Any) -> None:
    ask(desktop, "anthropic-messages", "tool")
    card = desktop.get_by_test_id("tool-card")
    assert card.get_attribute("data-state") == "ready"
    assert card.evaluate("(el) => getComputedStyle(el).borderTopStyle") == "solid"
    desktop.get_by_test_id("tool-run").click()
    assert desktop.get_by_test_id("tool-run").is_disabled()
    assert "simulated" in desktop.get_by_test_id("tool-output").text_content()
    assert "Ran once" in card.text_content()


# --- exact text ---------------------------------------------------------------------------------------------------

#: The answer's rendering against a reference: the same text as one Text node in an element of the same class and
#: width, laid out once. Any break the segments added would add a line, so the heights would differ.
REFERENCE_JS = """(el) => {
  const reference = el.cloneNode(false);
  reference.removeAttribute("data-testid");
  reference.textContent = el.textContent;
  el.after(reference);
  const heights = [el.getBoundingClientRect().height, reference.getBoundingClientRect().height];
  reference.remove();
  return heights;
}"""


#: Installed before a long answer streams: in the first frame (after the page's own frame work and layout: a
#: ResizeObserver callback) in which the provisional text is long enough, the same reference comparison, and
#: whether innerText adds anything. Provisional text must be as exact as committed text.
MIDSTREAM_JS = """(minChars) => {
  window.__mid = null;
  const observer = new ResizeObserver(() => {
    const el = document.querySelector('[data-testid="provisional"]');
    if (!el || el.dataset.state !== "streaming" || el.textContent.length < minChars) return;
    observer.disconnect();
    const reference = el.cloneNode(false);
    reference.removeAttribute("data-testid");
    reference.textContent = el.textContent;
    el.after(reference);
    window.__mid = { chars: el.textContent.length, segments: el.childElementCount,
                     sameText: el.innerText === el.textContent,
                     heights: [el.getBoundingClientRect().height, reference.getBoundingClientRect().height] };
    reference.remove();
  });
  observer.observe(document.getElementById("transcript"));
}"""


def copied_by_keyboard(page: Any, testid: str) -> str:
    """Select the element's text as a person would (all of it), copy with the keyboard, read the clipboard."""
    page.evaluate("""(id) => {
        const el = document.querySelector(`[data-testid="${id}"]`);
        const range = document.createRange();
        range.selectNodeContents(el);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
    }""", testid)
    page.keyboard.press("Control+C")
    text: str = page.evaluate("() => navigator.clipboard.readText()")
    page.evaluate("() => getSelection().removeAllRanges()")
    return text


@pytest.mark.parametrize("scenario", ["big", "multibyte"])
@pytest.mark.parametrize("width", [PHONE, DESKTOP])
def test_a_long_answer_renders_and_copies_exactly_the_models_text_at_any_width(
        pages: dict[int, tuple[Any, PageWatch]], browser: Any, demo: str, width: int, scenario: str) -> None:
    page, watch = at(pages, browser, demo, width)
    since = watch.mark()
    expected = model_text(scenario)
    page.evaluate(VIEW_JS)
    page.evaluate(MIDSTREAM_JS, 40_000)
    attempt = ask(page, "openai-chat", scenario, shot=f"chat-{width}-{scenario}-exact", record=False)
    assert attempt.outcome == "complete"
    if scenario == "big":
        # While it streamed, the provisional text showed no break the model did not send either.
        mid = page.evaluate("() => window.__mid")
        assert mid is not None, "no frame showed 40,000 provisional characters"
        assert mid["sameText"] and mid["segments"] >= 5, mid
        assert mid["heights"][0] == pytest.approx(mid["heights"][1], abs=0.5), f"a break in provisional text: {mid}"
    # Followed to the end while it streamed, and the commit did not move the view (no jump back to the top).
    samples = page.evaluate("() => window.__view.samples")
    assert samples and all(s["tail"] for s in samples if s["state"] == "streaming")
    assert samples[-1]["state"] == "committed" and samples[-1]["tail"] and samples[-1]["end"]
    # A screen reader hears a summary of a long answer, not all of it.
    announced = page.get_by_test_id("announcer").text_content()
    if len(expected) > 600:
        assert announced.startswith(f"Answer of {len(expected):,} characters, starting: {expected[:40]}")
        assert len(announced) < 400
    else:
        assert announced.startswith(f"Answer: {expected}")
    committed = page.get_by_test_id("committed")
    assert committed.evaluate("(el) => el.innerText") == expected, "the rendered text differs from the model's"
    assert copied_by_keyboard(page, "committed") == expected, "the copied text differs from the model's"
    page.evaluate("() => navigator.clipboard.writeText('')")
    page.get_by_test_id("copy").click()
    page.wait_for_function("() => document.querySelector('[data-testid=copy] ~ .copy-status').textContent !== ''")
    assert page.evaluate("() => navigator.clipboard.readText()") == expected
    rendered, reference = committed.evaluate(REFERENCE_JS)
    assert rendered == pytest.approx(reference, abs=0.5), "the segments show a line break the model did not send"
    if scenario == "big":
        segments = committed.evaluate("(el) => el.childElementCount")
        assert segments >= 20, f"only {segments} segments: the text was not cut for speed"
        # Another width moves every line end: the seams follow, and still nothing is added.
        page.set_viewport_size({"width": 1000 if width == PHONE else 390, "height": WIDTHS[width]})
        try:
            page.wait_for_function("""(el) => {
                const reference = el.cloneNode(false);
                reference.textContent = el.textContent;
                el.after(reference);
                const same = Math.abs(el.getBoundingClientRect().height
                                      - reference.getBoundingClientRect().height) < 0.5;
                reference.remove();
                return same;
            }""", arg=committed.element_handle(), polling=500, timeout=20_000)
            assert committed.evaluate("(el) => el.innerText") == expected
        finally:
            page.set_viewport_size({"width": width, "height": WIDTHS[width]})
    watch.assert_clean(since)


#: The page's text sink against its peer, one growing Text node in one inline paragraph, on the same page, width and
#: text. Each delta is followed by the work of a frame (the sink's seams, a layout forced by reading the
#: conversation's scrollHeight, a scroll to the end). A "long" sink is filled with the whole answer delta by delta
#: (the real path, seams and all); a "short" one holds only the first few deltas. Then the same delta is appended
#: to the short and to the long one alternately, and each append timed: paired like this, both see the same load
#: on a shared machine. The peer is measured the same way (long one filled in one piece; fewer pairs: each costs
#: about a second at 1 MB). Returns the paired ms and whether the long sink shows exactly what was appended.
SINK_BENCH_JS = """async ({ delta, count, warm, pairs, peerPairs }) => {
  const { TextSink, alignSeams } = await import("/text_sink.js");
  const conversation = document.getElementById("conversation");
  const inner = document.querySelector(".conversation-inner");
  const frame = () => {
    alignSeams();
    conversation.scrollTop = conversation.scrollHeight;
  };
  const boxes = [];
  const element = () => {
    const box = document.createElement("div");
    box.className = "answer-box";
    const el = document.createElement("div");
    el.className = "answer-text";
    box.append(el);
    inner.append(box);
    boxes.push(box);
    return el;
  };
  const timed = (fn) => { const t = performance.now(); fn(); frame(); return performance.now() - t; };
  const paired = (n, short, long) => {
    const ms = { short: [], long: [] };
    for (let i = 0; i < n; i++) {
      ms.short.push(timed(() => short(delta)));
      ms.long.push(timed(() => long(delta)));
    }
    return ms;
  };
  window.__rec.off = true;
  try {
    const longEl = element(), shortEl = element();
    const long = new TextSink(longEl), short = new TextSink(shortEl);
    for (let i = 0; i < count; i++) { long.append(delta); frame(); }
    for (let i = 0; i < warm; i++) { short.append(delta); frame(); }
    for (let i = 0; i < 200 && long.alignFrom; i++) frame();
    const exact = longEl.innerText === delta.repeat(count);
    const segments = longEl.childElementCount;
    const sink = paired(pairs, (d) => short.append(d), (d) => long.append(d));
    boxes.splice(0).forEach((box) => box.remove());
    if (!peerPairs) return { sink, peer: null, exact, segments };
    const longNode = document.createTextNode(delta.repeat(count));
    const shortNode = document.createTextNode(delta.repeat(warm));
    element().append(longNode);
    element().append(shortNode);
    frame();
    const peer = paired(peerPairs, (d) => shortNode.appendData(d), (d) => longNode.appendData(d));
    return { sink, peer, exact, segments };
  } finally {
    boxes.forEach((box) => box.remove());
    window.__rec.off = false;
  }
}"""


@pytest.mark.parametrize("size", [500, 4001])
def test_the_text_sink_costs_the_same_per_delta_at_the_end_of_a_1mb_answer_as_at_the_start(
        pages: dict[int, tuple[Any, PageWatch]], browser: Any, demo: str, size: int) -> None:
    page, watch = at(pages, browser, demo, PHONE)
    since = watch.mark()
    # Mixed scripts and a line break now and then, as models write. 500 characters is about what one frame brings
    # while a model streams; 4,001 is a burst (every delta then makes a seam).
    sentence = ("Streaming answers arrive in small pieces — Grüße aus Zürich, 東京の天気は晴れです, "
                "Ελληνικά, हिन्दी, 👩🏽‍💻 — and the page must keep up without slowing down. ")
    text = sentence * 40
    delta = text[:size // 2] + "\n" + text[size // 2:size - 1]  # seams fall mid-line: every one is measured
    # warm: the short sink holds about 32,000 characters (the first deltas also pay for fonts and the JIT). The
    # peer is measured on the bursts only (at 1 MB each of its appends costs about a second).
    count, warm, pairs = 1_000_000 // size, 32_000 // size, 32
    peer_pairs = 5 if size > 1000 else 0
    bench = page.evaluate(SINK_BENCH_JS, {"delta": delta, "count": count, "warm": warm, "pairs": pairs,
                                          "peerPairs": peer_pairs})
    assert bench["exact"], "the sink's rendered text differs from what was appended"
    assert bench["segments"] >= 200

    floor = 0.1  # performance.now() resolution in a page that is not cross-origin isolated

    def medians(ms: dict[str, list[float]]) -> tuple[float, float, float]:
        """Median ms of the short and the long one, and the median of the pairs' ratios (a pair shares its load)."""
        ratios = [long / max(short, floor) for short, long in zip(ms["short"], ms["long"], strict=True)]
        return statistics.median(ms["short"]), statistics.median(ms["long"]), statistics.median(ratios)

    sink_short, sink_long, sink_ratio = medians(bench["sink"])
    line = (f"\n[e2e] text sink at 360 px, deltas of {size:,} chars, each with a frame's work (seams, layout, scroll "
            f"to the end), {pairs} paired appends, median ms: short ({warm} deltas shown) {sink_short:.2f}, long "
            f"({count} deltas, 1 MB, {bench['segments']} segments) {sink_long:.2f}; long/short {sink_ratio:.2f}x")
    assert sink_ratio < 3, f"the sink's cost per delta at 1 MB is {sink_ratio:.1f}x its cost at the start"
    if peer_pairs:
        peer_short, peer_long, peer_ratio = medians(bench["peer"])
        line += (f". Peer (one Text node in one paragraph, {peer_pairs} pairs): short {peer_short:.2f}, long "
                 f"{peer_long:.2f}; {peer_ratio:.1f}x. At 1 MB the sink costs {sink_long / max(peer_long, floor):.3f}x "
                 f"the peer")
        # The measurement sees growth where there is growth (the peer).
        assert peer_ratio > 5, "the benchmark did not see the peer's cost grow: it measures nothing"
        assert sink_long < peer_long / 5
    print(line)
    watch.assert_clean(since)


# --- every scenario at phone width; accessibility ----------------------------------------------------------------


@pytest.mark.parametrize("scenario", [s.slug for s in SCENARIOS if s.slug != "big"])
def test_every_scenario_at_phone_width_fits_explains_itself_and_has_no_serious_accessibility_violation(
        phone: Any, scenario: str) -> None:
    attempt = ask(phone, "openai-chat", scenario, shot=f"phone-{scenario}",
                  idle_s=1.5 if scenario == "stall" else None)
    assert attempt.sentence and attempt.sentence in attempt.announced
    assert_fits(phone)
    assert axe_violations(phone) == []


#: One tool card per state (tool_card.js, the page's own template), with no test hooks, in a sample section at
#: the end of the conversation; the last one has run.
CARD_SAMPLES_JS = """async (states) => {
  const { ToolCard } = await import("/tool_card.js");
  const samples = document.createElement("section");
  samples.id = "card-samples";
  samples.setAttribute("aria-label", "Tool card samples");
  document.getElementById("transcript").append(samples);
  for (const state of states) {
    const card = new ToolCard(document.getElementById("tool-card-template"), samples);
    card.identify("get_weather");
    card.appendInput('{"location": "Paris, France"}');
    card.arguments = { location: "Paris, France" };
    card._show(state);
    if (state === "ready") card.run.click();
  }
  for (const el of samples.querySelectorAll("[data-testid]")) el.removeAttribute("data-testid");
  return [...samples.querySelectorAll(".tool-card")].map((card) => {
    const run = card.querySelector(".tool-run");
    return { state: card.dataset.state, runDisabled: run.disabled,
             reason: document.getElementById(run.getAttribute("aria-describedby")).textContent,
             dashed: getComputedStyle(card).borderTopStyle === "dashed" };
  });
}"""


@pytest.mark.parametrize("width", [PHONE, DESKTOP])
def test_every_transient_state_has_no_serious_accessibility_violation_while_an_answer_streams(
        pages: dict[int, tuple[Any, PageWatch]], browser: Any, demo: str, width: int) -> None:
    """The scenario tests run axe after the outcome; this one runs it mid-stream (the provisional label, Stop
    enabled, Send disabled) with a tool card in every state, so no colour is left unchecked."""
    page, watch = at(pages, browser, demo, width)
    since = watch.mark()
    # The stall scenario sends its first words, then nothing: with a long idle deadline the answer stays streaming
    # for as long as the check takes.
    sent_at = send(page, "openai-chat", "stall", idle_s=15)
    page.wait_for_function("() => document.querySelector('[data-testid=\"provisional\"]').textContent.length > 5")
    states = list(TOOL_STATE_RANK)
    try:
        cards = page.evaluate(CARD_SAMPLES_JS, states)
        assert [card["state"] for card in cards] == states
        for card in cards:
            # Every state says why Run is disabled (or, after the one run, that it ran); only ready is solid.
            assert card["runDisabled"] and card["reason"], card
            assert card["dashed"] is (card["state"] != "ready"), card
        assert "Ran once" in cards[states.index("ready")]["reason"]
        assert page.get_by_test_id("provisional").get_attribute("data-state") == "streaming"
        assert page.get_by_test_id("cancel").is_enabled()
        assert axe_violations(page) == []
        page.locator("#card-samples").scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / f"chat-{width}-streaming-card-states.png"))
    finally:
        page.evaluate("() => document.getElementById('card-samples')?.remove()")
    # What the reader started typing while the answer streamed is theirs: stopping does not replace it.
    page.get_by_test_id("prompt").fill("a new question")
    page.keyboard.press("Escape")
    attempt = wait_for_outcome(page, "openai-chat", "stall", sent_at)
    assert attempt.outcome == "cancelled"
    assert page.get_by_test_id("prompt").input_value() == "a new question", "the draft was overwritten"
    watch.assert_clean(since)


def test_the_live_regions_are_the_announcer_and_status_lines_never_the_streaming_text(desktop: Any) -> None:
    live = desktop.evaluate("""() => [...document.querySelectorAll('[aria-live], [role="status"], [role="log"],'
                                                                   + ' [role="alert"]')]
        .map((el) => el.id || el.dataset.testid || el.className)""")
    assert set(live) <= {"announcer", "boot-stage", "copy-status"}, live
    assert "announcer" in live
    assert desktop.locator("#transcript").evaluate("(el) => el.closest('[aria-live]')") is None


def test_the_developer_panel_is_collapsed_and_explains_an_attempt_that_had_no_body(desktop: Any) -> None:
    ask(desktop, "openai-chat", "http_502_html")
    toggle = desktop.locator("#dev-toggle")
    assert toggle.get_attribute("aria-expanded") == "false" and desktop.locator("#devpanel").is_hidden()
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true" and desktop.locator("#devpanel").is_visible()
    milestones = desktop.locator("#milestones").inner_text()
    assert "response HTTP 502, not an event stream: refused by the response gate, no body was read" in milestones
    assert re.search(r"ended: protocol_error \(stage status\)", milestones)
    assert desktop.locator("#chart-box").is_hidden(), "an empty plot for an attempt without a body"
    assert "Transport chunks\n0" in desktop.locator("#counts").inner_text()
    assert '"http_status": 502' in desktop.get_by_test_id("telemetry").text_content()
    assert axe_violations(desktop) == []
    desktop.screenshot(path=str(SCREENSHOTS / "chat-1280-developer-panel.png"))
    desktop.locator("#dev-close").click()
    assert desktop.locator("#devpanel").is_hidden()


def test_the_developer_panel_covers_the_chat_on_a_phone_and_charts_a_streamed_answer(phone: Any) -> None:
    ask(phone, "anthropic-messages", "tool")
    phone.locator("#dev-toggle").click()
    try:
        assert phone.locator("#chart-box").is_visible(), "no chart for an attempt with a body"
        assert phone.locator("#chart svg").count() == 1
        milestones = phone.locator("#milestones").inner_text()
        assert "ended: complete" in milestones
        assert_fits(phone)
        assert axe_violations(phone) == []
        phone.screenshot(path=str(SCREENSHOTS / "chat-360-developer-panel.png"))
    finally:
        phone.keyboard.press("Escape")
    assert phone.locator("#devpanel").is_hidden(), "Escape did not close the panel that covers the chat"
    assert phone.evaluate("() => document.activeElement.id") == "dev-toggle", "the focus was lost"

