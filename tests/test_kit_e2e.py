"""The widget kit end to end: the site as ``pyodide_tools.py site`` builds it, the real demo server with its embedded
upstream, Debian's Chromium driven by Playwright.

* the README's example widget (``/examples/widget.html``): text, a tool call gated on completion, a refusal, a
  provider error's type and code, cancel; the kit's API edge cases (a throwing consumer, caller bugs, AbortSignal,
  close) and its fast path under the demo's CSP;
* a stock use of the kit's runtime (micropip offline) and the fast path's fallback where eval is refused;
* cross-origin: the kit folder copied to a bare static server on another port, and the kit imported from the demo
  server by a page of another origin, both streaming from a demo server started with ``allow_origins``;
* caching: a reload fetches no runtime bytes.

One site build, one demo server and one browser per module; a fresh context per test.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.host]

pytest.importorskip("aiohttp")
sync_api = pytest.importorskip("playwright.sync_api")

from demo_site import server as demo_server  # noqa: E402  (after the importorskip guards)
from demo_site.upstream import UpstreamConfig  # noqa: E402
from tests.bridge_streams import CHAT, REASONING, TOOL, UNKNOWN_ITEM, UNKNOWN_TOOL, comparable  # noqa: E402
from tests.e2e_helpers import CHROMIUM, CHROMIUM_ARGS, server_stats, wait_for_stat  # noqa: E402
from tests.kit_pages import (  # noqa: E402
    KIT_API_JS,
    SNAPSHOT_KEYS_JS,
    STRICT_SCRIPT_SRC,
    WIDGET_RECORDER_JS,
    cross_origin_page,
    options_page,
    static_server,
    stock_page,
)
from tests.resume_streams import (  # noqa: E402
    USAGE,
    USAGE_K,
    USAGE_N,
    answer_view,
    cut_inside,
    from_event,
    resume_path,
    uninterrupted_view,
)
from tests.sse_test_server import Script, Send, SSETestServer, Stall, sse_script  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BOOT_TIMEOUT_MS = 90_000
ATTEMPT_TIMEOUT_MS = 30_000
TIME_SCALE = 0.5
#: A content-hashed directory of the kit (interfaces.md): served immutable, so never fetched again once cached.
HASHED = re.compile(r"/webclient/(?:runtime|wheels|kit)-[0-9a-f]{16}/")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kit-site")
    proc = subprocess.run([sys.executable, str(REPO / "build_scripts" / "pyodide_tools.py"), "site", str(root)],
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root


@pytest.fixture(scope="module")
def demo(site: Path) -> Iterator[str]:
    running = demo_server.start_in_background(static_dir=site, config=UpstreamConfig(time_scale=TIME_SCALE))
    try:
        yield running.base_url
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: install Debian's chromium package"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    """A fresh context with the widget recorder; fails the test on an uncaught page error or a CSP violation."""
    context = browser.new_context()
    context.add_init_script(WIDGET_RECORDER_JS)
    context.set_default_timeout(ATTEMPT_TIMEOUT_MS)
    errors: list[str] = []
    console: list[str] = []
    context.on("weberror", lambda err: errors.append(str(err.error)))
    context.on("console", lambda msg: console.append(msg.text))
    context.errors, context.console_lines = errors, console
    try:
        yield context
        assert errors == [], f"uncaught errors: {errors}"
        assert not [line for line in console if "Content Security Policy" in line], console
    finally:
        context.close()


# --- the example widget ------------------------------------------------------------------------------------------


def open_widget(context: Any, base: str, query: str = "") -> Any:
    page = context.new_page()
    page.goto(f"{base}/examples/widget.html{query}")
    page.wait_for_function("() => document.querySelector('#status').textContent === 'Ready.'",
                           timeout=BOOT_TIMEOUT_MS)
    return page


def ask(page: Any, scenario: str) -> dict[str, Any]:
    """Point the widget at ``scenario`` (its ?scenario= knob is read once, so reload with it), press Send, wait for
    the outcome; return the final state and the recorded history."""
    page.evaluate("() => window.__widget.reset()")
    page.locator("form button").first.click()
    page.wait_for_function("() => !document.querySelector('form button').disabled && "
                           "document.querySelector('#status').textContent !== 'Ready.'", timeout=ATTEMPT_TIMEOUT_MS)
    state: dict[str, Any] = page.evaluate("""() => ({ answer: document.querySelector('#answer').textContent,
        status: document.querySelector('#status').textContent, snaps: window.__widget.snaps,
        violations: window.__widget.violations,
        runs: Array.from(document.querySelectorAll('#tools button'), (b) => !b.disabled) })""")
    assert state["violations"] == []
    return state


def widget(context: Any, demo: str, scenario: str) -> dict[str, Any]:
    page = open_widget(context, demo, f"?scenario={scenario}")
    return ask(page, scenario)


def test_the_widget_streams_provisional_text_and_shows_the_committed_answer(context: Any, demo: str) -> None:
    state = widget(context, demo, "plain")

    assert state["status"] == "complete"
    assert state["answer"].startswith("You asked: “What's the weather in Paris?”")
    streamed = [s["answer"] for s in state["snaps"] if s["status"] == "Ready." and s["answer"]]
    assert len(streamed) >= 3, "the answer did not grow delta by delta before the outcome"
    assert streamed[-1] == state["answer"]


def test_the_widget_enables_a_tool_call_only_once_the_response_is_complete(context: Any, demo: str) -> None:
    state = widget(context, demo, "tool")

    assert state["status"] == "complete" and state["runs"] == [True]
    before = [s for s in state["snaps"] if s["status"] == "Ready."]
    assert any(s["runs"] == [False] for s in before), "the call was not shown while streaming"
    assert not any(any(s["runs"]) for s in before), "Run was enabled before the outcome"


def test_the_widget_never_enables_a_tool_call_cut_by_max_tokens(context: Any, demo: str) -> None:
    state = widget(context, demo, "max_tokens_in_tool")

    assert state["status"] == "truncated"
    assert state["runs"] == [False] and not any(any(s["runs"]) for s in state["snaps"])
    assert state["answer"].startswith("(withdrawn, never committed) Checking the forecast.")


def test_the_widget_shows_a_refusal(context: Any, demo: str) -> None:
    state = widget(context, demo, "refusal")

    assert state["status"] == "complete"
    assert state["answer"].startswith("Refused: I can't help with")


def test_the_widget_shows_the_provider_errors_type_and_code(context: Any, demo: str) -> None:
    state = widget(context, demo, "upstream_error")

    assert state["status"] == "upstream_error (comet_api_error: upstream_overloaded)"
    assert state["answer"].startswith("(withdrawn, never committed) Starting an answer")


def test_the_widgets_stop_button_cancels_and_the_server_sees_the_disconnect(context: Any, demo: str) -> None:
    page = open_widget(context, demo, "?scenario=slow_drip")
    disconnected = server_stats(demo)["slow_drip"]["disconnected"]
    page.evaluate("() => window.__widget.reset()")
    page.locator("form button").first.click()
    page.wait_for_function("() => document.querySelector('#answer').textContent.length > 20")
    page.locator("form button").nth(1).click()
    page.wait_for_function("() => !document.querySelector('form button').disabled")

    assert page.text_content("#status") == "cancelled"
    assert page.text_content("#answer").startswith("(withdrawn, never committed) Thinking slowly")
    assert wait_for_stat(demo, "slow_drip", "disconnected", disconnected + 1) == disconnected + 1


# --- the kit's API from a page under the demo's CSP --------------------------------------------------------------


def test_the_kit_api_keeps_results_from_consumer_bugs_and_reports_caller_bugs_in_one_line(
        context: Any, demo: str) -> None:
    page = open_widget(context, demo)
    report = page.evaluate(KIT_API_JS, [f"{demo}/webclient/webclient.mjs", demo])

    # The fast path runs the kit's static pump under script-src 'self' 'wasm-unsafe-eval' (no eval).
    assert "'unsafe-eval'" not in page.evaluate("async () => (await fetch('/')).headers.get('content-security-policy')")
    assert report["fastPath"] == "module"
    assert report["throwingConsumer"] == {"caught": "consumer bug at text_delta", "outcome": "complete",
                                          "text": report["throwingConsumer"]["text"], "committed": True}
    assert report["throwingConsumer"]["text"].startswith("You asked: “hello”")
    assert report["throwingOnChunk"] == "complete"
    # Reported like a throwing event listener (the page's error event), once per chunk, and nothing else.
    assert "onChunk bug" in report["reported"]
    assert set(context.errors) == {"onChunk bug"}
    context.errors.clear()
    for name, failure in report["usage"].items():
        assert failure is not None, name
        assert failure["name"] == "WebclientUsageError" and failure["isUsage"], (name, failure)
        assert "\n" not in failure["message"] and "Traceback" not in failure["message"], (name, failure)
    assert "bogus" in report["usage"]["unknownKey"]["message"]
    assert "idle_ms" in report["usage"]["badDeadline"]["message"]
    assert "no-such-route" in report["usage"]["badRoute"]["message"] or "route" in report["usage"]["badRoute"][
        "message"]
    assert "limits" in report["usage"]["badLimit"]["message"]
    assert "once" in report["usage"]["iterateTwice"]["message"]
    assert "closed" in report["usage"]["closed"]["message"]
    assert report["signal"] == {"outcome": "cancelled", "stage": "caller"}
    assert report["preAborted"] == "cancelled"


def test_the_demo_page_runs_on_the_kit_with_its_fast_path_under_its_csp(context: Any, demo: str) -> None:
    page = context.new_page()
    page.goto(demo + "/")
    page.get_by_test_id("ready").wait_for(timeout=BOOT_TIMEOUT_MS)
    page.get_by_test_id("scenario-select").select_option("plain")
    page.get_by_test_id("send").click()
    page.wait_for_function("() => document.querySelector('[data-testid=\"outcome\"]').textContent !== ''")

    assert page.get_by_test_id("outcome").text_content() == "complete"
    assert page.get_by_test_id("committed").text_content().startswith("You asked:")
    assert "'unsafe-eval'" not in page.evaluate("async () => (await fetch('/')).headers.get('content-security-policy')")
    # The demo's own files load the kit like any widget: no private worker of its own.
    assert not (Path(demo_server.__file__).parent / "static" / "worker.js").exists()


# --- every stream option of the Python library, through the kit -------------------------------------------------

#: Kit options that are caller bugs -> the words their one-line message must name.
BAD_OPTIONS = {
    "resume_key": ({"resume": {"retries": 1}}, "retries"),
    "resume_delay": ({"resume": {"delay_ms": -1}}, "resume.delay_ms"),
    "resume_count": ({"resume": {"max_resumes": 1.5}}, "resume.max_resumes"),
    "resume_flag": ({"resume": {"last_event_id": "yes"}}, "resume.last_event_id"),
    "grace": ({"deadlines": {"terminal_grace_ms": 0}}, "terminal_grace_ms"),
    "keep": ({"keep_unknown_items": "yes"}, "keep_unknown_items"),
    "reasoning": ({"include_reasoning_content": 1}, "include_reasoning_content"),
    "limit_name": ({"limits": {"max_no_such_chars": 5}}, "max_no_such_chars", "max_citations"),  # and the real ones
    "limit_value": ({"limits": {"max_citations": 0}}, "limits.max_citations"),
}


def test_the_kit_takes_every_stream_option_of_the_python_library(
        context: Any, site: Path, tmp_path: Path) -> None:
    options_site(site, tmp_path)
    with SSETestServer(static_root=tmp_path) as srv:
        held = {grace: srv.url(Script([Send(CHAT), Stall(30)])) for grace in ("short", "none")}
        cut = srv.url(Script([Send(cut_inside(USAGE, USAGE_K))]))
        resumed = srv.add(sse_script(from_event(USAGE, USAGE_K - 1)), path=resume_path(cut))
        page = context.new_page()
        page.goto(f"{srv.base_url}/options.html")
        page.wait_for_function("() => window.__ready === true", timeout=BOOT_TIMEOUT_MS)
        run = functools.partial(page.evaluate, "(options) => window.run(options)")
        chat = {"route": "openai-chat"}
        out = {
            "grace": run({**chat, "url": held["short"], "deadlines": {"idle_ms": 20_000, "terminal_grace_ms": 300}}),
            # Still open when the grace ended the attempt: the kit closed the connection, not the browser.
            "grace_closed": srv.exchange(held["short"]).disconnected.wait(10),
            "no_grace": run({**chat, "url": held["none"], "deadlines": {"idle_ms": 1_500, "terminal_grace_ms": None}}),
            "unknown": run({**chat, "url": srv.url(sse_script(UNKNOWN_ITEM))}),
            "kept": run({**chat, "url": srv.url(sse_script(UNKNOWN_ITEM)), "keep_unknown_items": True}),
            "kept_limited": run({**chat, "url": srv.url(sse_script(UNKNOWN_ITEM)), "keep_unknown_items": True,
                                 "limits": {"max_item_chars": 10}}),
            "reasoning": run({**chat, "url": srv.url(sse_script(REASONING)), "include_reasoning_content": True}),
            "resumed": run({"route": "openai-responses", "url": cut,
                            "resume": {"max_resumes": 1, "delay_ms": 0, "max_delay_ms": 10}}),
            "bad": {name: run({**chat, "url": "/unused", **bad}) for name, (bad, *_) in BAD_OPTIONS.items()},
        }
        resume_query = srv.exchange(resumed).query

    assert (out["grace"]["result"]["outcome"], out["grace"]["kinds"][-1]) == ("complete", "committed")
    assert out["grace"]["ms"] < 10_000 and out["grace_closed"]
    assert "error" not in out["no_grace"], out["no_grace"]
    assert (out["no_grace"]["result"]["outcome"], out["no_grace"]["result"]["stage"]) == ("timeout", "idle")
    assert (out["unknown"]["result"]["outcome"], out["unknown"]["result"]["stage"]) == ("protocol_error",
                                                                                        "unknown_type")
    assert (out["kept"]["result"]["outcome"], out["kept"]["result"]["items"]) == ("complete", [UNKNOWN_TOOL])
    assert (out["kept_limited"]["result"]["outcome"], out["kept_limited"]["result"]["stage"]) == ("buffer_limit",
                                                                                                 "items")
    assert out["reasoning"]["result"]["assistant_message"]["reasoning_content"] == "Thinking…"
    assert answer_view(out["resumed"]["result"]) == uninterrupted_view(USAGE)[0]
    assert resume_query == f"stream=true&starting_after={USAGE_N}"
    for name, (_, *words) in BAD_OPTIONS.items():
        error = out["bad"][name].get("error")
        assert error is not None and error["isUsage"] and error["name"] == "WebclientUsageError", (name, error)
        assert all(w in error["message"] for w in words) and "\n" not in error["message"], (name, error)


# --- memory snapshots ------------------------------------------------------------------------------------------


def options_site(site: Path, root: Path) -> dict[str, str]:
    """The kit folder and the options page under ``root``; the kit's directory names."""
    shutil.copytree(site / "webclient", root / "webclient")
    for name, text in options_page().items():
        (root / name).write_text(text)
    return kit_dirs(site)


def boot_options_page(page: Any, url: str) -> str:
    """Load the options page; the client's ``snapshot`` once it is ready."""
    page.goto(url)
    page.wait_for_function("() => window.__ready === true", timeout=BOOT_TIMEOUT_MS)
    snapshot: str = page.evaluate("() => window.__snapshot")
    return snapshot


def stored_snapshots(page: Any, *, at_least: int = 0) -> list[str]:
    """The snapshot store's keys, once it holds ``at_least`` of them (it is written after ready)."""
    for _ in range(80):
        keys: list[str] = page.evaluate(SNAPSHOT_KEYS_JS)
        if len(keys) >= at_least:
            return keys
        page.wait_for_timeout(250)
    raise AssertionError(f"the snapshot store holds {keys}")


def test_a_reload_boots_from_the_snapshot_the_first_boot_stored_and_answers_the_same(
        context: Any, site: Path, tmp_path: Path) -> None:
    options_site(site, tmp_path)
    with SSETestServer(static_root=tmp_path) as srv:
        page = context.new_page()
        first = boot_options_page(page, f"{srv.base_url}/options.html")
        keys = stored_snapshots(page, at_least=1)
        tool = {"route": "openai-chat", "url": srv.url(sse_script(TOOL, chunk_size=64)), "tools": {
            "get_weather": {"type": "object", "properties": {"city": {"type": "string"}}}}}
        cold = page.evaluate("(options) => window.run(options)", tool)
        page.reload()
        page.wait_for_function("() => window.__ready === true", timeout=BOOT_TIMEOUT_MS)
        second = page.evaluate("() => window.__snapshot")
        again = {**tool, "url": srv.url(sse_script(TOOL, chunk_size=64))}
        warm = page.evaluate("(options) => window.run(options)", again)

    assert (first, second) == ("made", "restored")
    assert len(keys) == 1 and "/webclient/snapshot/runtime-" in keys[0]
    # How many delta updates a run gets follows how the 64-byte chunks happened to arrive together (one update per
    # batch the pump hands over; under load a tool's input deltas can land in the batch that completes it), so the
    # runs must agree on every other update, in order, and on the result.
    settled = [[kind for kind in run["kinds"] if not kind.endswith("_delta")] for run in (warm, cold)]
    assert settled[0] == settled[1] and warm["kinds"][-1] == "committed"
    assert comparable(warm["result"]) == comparable(cold["result"])
    assert warm["result"]["tool_calls"][0]["ready"] is True


def test_a_snapshot_the_runtime_refuses_or_cannot_read_is_replaced_and_older_versions_are_deleted(
        context: Any, site: Path, tmp_path: Path) -> None:
    dirs = options_site(site, tmp_path)
    with SSETestServer(static_root=tmp_path) as srv:
        page = context.new_page()
        page.goto(f"{srv.base_url}/webclient/webclient.d.ts")  # this origin, no kit booted yet
        key = f"{srv.base_url}/webclient/snapshot/{dirs['runtime']}/{dirs['wheels']}/"
        outcomes = []
        # Bytes that are not a snapshot; then a well-formed stored snapshot of a memory Pyodide refuses.
        for junk in ("() => new Uint8Array([1, 2, 3])",
                     f"async () => (await import('/webclient/{dirs['kit']}/snapshots.mjs'))"
                     ".encode(new Uint8Array(1 << 18).fill(7))"):
            page.evaluate(f"""async ([key, old]) => {{
                const cache = await caches.open('webclient-snapshots');
                for (const request of await cache.keys()) await cache.delete(request);
                await cache.put(key, new Response(await ({junk})()));
                await cache.put(old, new Response(new Uint8Array([0])));
            }}""", [key, f"{srv.base_url}/webclient/snapshot/runtime-0000000000000000/wheels-0000000000000000/"])
            snapshot = boot_options_page(page, f"{srv.base_url}/options.html")
            run = page.evaluate("(options) => window.run(options)",
                                {"route": "openai-chat", "url": srv.url(sse_script(CHAT))})
            stored = page.evaluate("""async (key) => (await (await (await caches.open('webclient-snapshots'))
                .match(key)).arrayBuffer()).byteLength""", key) if stored_snapshots(page, at_least=1) else 0
            outcomes.append((snapshot, run["result"]["outcome"], stored_snapshots(page, at_least=1), stored))

    for snapshot, outcome, keys, stored in outcomes:
        assert (snapshot, outcome, keys) == ("made", "complete", [key])
        assert stored > 1_000_000  # the new snapshot, not what was there


def test_a_client_without_snapshots_boots_from_scratch_and_stores_nothing(
        context: Any, site: Path, tmp_path: Path) -> None:
    options_site(site, tmp_path)
    with SSETestServer(static_root=tmp_path) as srv:
        page = context.new_page()
        snapshots = [boot_options_page(page, f"{srv.base_url}/options.html?snapshot=0") for _ in range(2)]
        run = page.evaluate("(options) => window.run(options)",
                            {"route": "openai-chat", "url": srv.url(sse_script(CHAT))})
        page.wait_for_timeout(1000)
        keys = page.evaluate(SNAPSHOT_KEYS_JS)

    assert snapshots == ["none", "none"] and run["result"]["outcome"] == "complete"
    assert keys == []


# --- stock Pyodide from the kit folder, and the fallback where eval is refused -----------------------------------


def kit_dirs(site: Path) -> dict[str, str]:
    names = {p.name.split("-")[0]: p.name for p in (site / "webclient").iterdir() if p.is_dir()}
    [wheel] = (site / "webclient" / names["wheels"]).glob("webclient-*.whl")
    return {**names, "wheel": f"{names['wheels']}/{wheel.name}"}


def test_stock_pyodide_from_the_kit_installs_micropip_offline_and_falls_back_to_the_pull_loop_without_eval(
        context: Any, site: Path, tmp_path: Path) -> None:
    shutil.copytree(site / "webclient", tmp_path / "webclient")
    dirs = kit_dirs(site)
    for name, text in stock_page(dirs["runtime"], dirs["wheel"]).items():
        (tmp_path / name).write_text(text)
    with static_server(tmp_path, csp=f"{STRICT_SCRIPT_SRC}; connect-src 'self'") as base:
        page = context.new_page()
        page.goto(base + "/stock.html")
        page.wait_for_function("() => window.__stock !== undefined", timeout=BOOT_TIMEOUT_MS)
        stock = page.evaluate("() => window.__stock")
    warnings = [line for line in context.console_lines if "fast path unavailable" in line]
    context.console_lines.clear()  # the refused eval is the point of this test

    assert "error" not in stock, stock
    assert stock["micropip"] == ["micropip"]
    assert stock["fastPath"] == "pull" and len(warnings) == 1
    assert (stock["outcome"], stock["text"]) == ("complete", "Hello from the pump")


# --- cross-origin ----------------------------------------------------------------------------------------------


def serve_widget_copy(site: Path, root: Path) -> None:
    """The kit folder and the example widget, copied as a widget author would to another static host."""
    shutil.copytree(site / "webclient", root / "webclient")
    shutil.copytree(site / "examples", root / "examples")


def test_the_kit_folder_copied_to_a_bare_static_server_streams_from_another_origin(
        context: Any, site: Path, tmp_path: Path) -> None:
    serve_widget_copy(site, tmp_path)
    with static_server(tmp_path) as page_origin:
        model = demo_server.start_in_background(static_dir=None, config=UpstreamConfig(time_scale=TIME_SCALE),
                                                allow_origins=[page_origin])
        try:
            page = open_widget(context, page_origin, f"?scenario=tool&endpoint={model.base_url}")
            state = ask(page, "tool")
        finally:
            model.stop()

    assert state["status"] == "complete" and state["runs"] == [True]
    assert "Let me look up the weather" in state["answer"]


def test_a_page_of_another_origin_imports_the_kit_from_the_demo_server_and_streams_from_it(
        context: Any, site: Path, tmp_path: Path) -> None:
    for name, text in cross_origin_page().items():
        (tmp_path / name).write_text(text)
    with static_server(tmp_path) as page_origin:
        model = demo_server.start_in_background(static_dir=site, config=UpstreamConfig(time_scale=TIME_SCALE),
                                                allow_origins=[page_origin])
        try:
            page = context.new_page()
            page.goto(f"{page_origin}/cross.html?kit={model.base_url}/webclient/webclient.mjs"
                      f"&endpoint={model.base_url}")
            page.wait_for_function("() => window.__cross !== undefined", timeout=BOOT_TIMEOUT_MS)
            cross = page.evaluate("() => window.__cross")
        finally:
            model.stop()

    assert "error" not in cross, cross
    assert cross["outcome"] == "complete" and cross["ready"] == [True]
    assert cross["kinds"][-1] == "committed" and "tool_call" in cross["kinds"]


# --- caching ---------------------------------------------------------------------------------------------------


def test_a_boot_fetches_the_wasm_once_and_a_reload_fetches_no_runtime_bytes(browser: Any, demo: str) -> None:
    context = browser.new_context()
    try:
        fetched: list[tuple[str, int]] = []
        context.on("requestfinished", lambda request: fetched.append(
            (request.url, request.sizes()["responseBodySize"])))
        page = context.new_page()
        page.goto(demo + "/")
        page.get_by_test_id("ready").wait_for(timeout=BOOT_TIMEOUT_MS)
        # Playwright reports a streamed response when it has finished, which can be after ready: wait for the wasm,
        # then a moment more for a second fetch of it to show up if there is one.
        for _ in range(40):
            if any(url.endswith("pyodide.asm.wasm") for url, _ in fetched):
                break
            page.wait_for_timeout(250)
        page.wait_for_timeout(500)
        cold = [(url, n) for url, n in fetched if HASHED.search(url)]
        fetched.clear()
        page.reload()
        page.get_by_test_id("ready").wait_for(timeout=BOOT_TIMEOUT_MS)
        warm = [(url, n) for url, n in fetched if HASHED.search(url) and n > 0]
    finally:
        context.close()

    print(f"\n[kit] cold boot: {sum(n for _, n in cold):,} runtime bytes in {len(cold)} responses; reload: "
          f"{json.dumps(warm)}")
    assert sum(url.endswith("pyodide.asm.wasm") for url, _ in cold) == 1, "the wasm is fetched once per boot"
    assert sum(n for _, n in cold) > 1_000_000
    assert warm == [], "a reload downloaded runtime bytes again"
