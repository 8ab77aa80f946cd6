"""Helpers for the demo page's end-to-end tests (tests/test_demo_e2e.py): browser launch settings, scripts the
tests inject into every page, and small readers of what the page shows.

The injected scripts run before the page's own code (Playwright init scripts go through the DevTools protocol,
so the page's Content-Security-Policy does not apply to them) and observe the page from outside, through the DOM
and the ``data-testid`` hooks only:

* ``HEARTBEAT_JS``: two main-thread heartbeats, a 10 ms ``setInterval`` and a ``requestAnimationFrame`` loop,
  recording the gaps between beats. A main thread busy with anything (Python, a big parse, a re-render of the
  whole transcript) shows up as a long interval gap; a long frame gap means no frame was painted (on a loaded
  2-core machine this also happens when the browser's compositor is starved, so it gets a looser bound).
* ``RECORDER_JS``: a ``MutationObserver`` that snapshots what a person can see (provisional and committed text,
  outcome, what the polite live region says, tool cards and whether their Run button is enabled) after every DOM
  change, so a test can assert on the whole history of an attempt ("Run was never enabled before the outcome
  appeared"), however fast it streamed. It also records Content-Security-Policy violations.
* ``AXE_JS``: axe-core (npm, pinned in build_scripts/package.json, installed offline into build/node by
  ``pyodide_tools.py fetch``), injected the same way; :func:`axe_violations` runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
#: axe-core's browser build, from the pinned npm package.
AXE_JS = REPO / "build" / "node" / "node_modules" / "axe-core" / "axe.min.js"
#: Where the e2e tests keep their screenshots (look at them: build/artifacts/screenshots/*.png).
SCREENSHOTS = REPO / "build" / "artifacts" / "screenshots"

#: Debian's Chromium (the ``chromium`` package); Playwright never downloads a browser here.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 900}

HEARTBEAT_JS = """
(() => {
  // Two heartbeats: a 10 ms setInterval (the main thread is free to run JS) and requestAnimationFrame (frames
  // are being produced). Each keeps [time, gap since the previous beat] pairs.
  const hb = window.__hb = { ticks: [], frames: [] };
  let lastTick = performance.now();
  setInterval(() => {
    const now = performance.now();
    hb.ticks.push([now, now - lastTick]);
    lastTick = now;
  }, 10);
  let lastFrame = 0;
  function frame(now) {
    if (lastFrame) hb.frames.push([now, now - lastFrame]);
    lastFrame = now;
    requestAnimationFrame(frame);
  }
  requestAnimationFrame(frame);
  const within = (beats, from, to) => beats.filter(([t]) => t >= from && t <= to);
  // Longest gap between two beats whose second beat falls in [from, to] (performance.now() times), and the count.
  hb.measure = (from = 0, to = Infinity) => ({
    tickGap: within(hb.ticks, from, to).reduce((m, [, gap]) => Math.max(m, gap), 0),
    ticks: within(hb.ticks, from, to).length,
    frameGap: within(hb.frames, from, to).reduce((m, [, gap]) => Math.max(m, gap), 0),
    frames: within(hb.frames, from, to).length,
  });
})();
"""

RECORDER_JS = """
(() => {
  const rec = window.__rec = { snaps: [], violations: [], off: false, last: "" };
  document.addEventListener("securitypolicyviolation",
                            (e) => rec.violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  const q = (id) => document.querySelector(`[data-testid="${id}"]`);
  const text = (id) => { const el = q(id); return el ? el.textContent : null; };
  function snap() {
    if (rec.off) return;
    const provisional = q("provisional");
    const s = {
      boot: text("boot-stage"),
      bootDetail: document.getElementById("boot-detail")?.textContent ?? null,
      ready: q("ready") !== null,
      sendEnabled: q("send") ? !q("send").disabled : null,
      provisional: text("provisional"),
      provisionalState: provisional ? provisional.dataset.state : null,
      committed: text("committed"),
      outcome: text("outcome"),
      announced: text("announcer"),
      tools: Array.from(document.querySelectorAll('[data-testid="tool-card"]'), (card) => {
        const run = card.querySelector('[data-testid="tool-run"]');
        const input = card.querySelector('[data-testid="tool-input"]');
        return { state: card.dataset.state, input: input ? input.textContent : null,
                 runEnabled: run !== null && !run.disabled };
      }),
    };
    const key = JSON.stringify(s);
    if (key !== rec.last) {
      rec.last = key;
      s.t = performance.now();
      rec.snaps.push(s);
    }
  }
  new MutationObserver(snap).observe(document, { subtree: true, childList: true, characterData: true,
                                                 attributes: true });
  rec.reset = () => { rec.snaps = []; rec.last = ""; };
})();
"""


@dataclass
class Attempt:
    """What one Send produced, as the page showed it."""

    route: str
    scenario: str
    outcome: str
    stage: str
    committed: str
    provisional: str
    provisional_state: str | None
    provisional_label: str
    telemetry: dict[str, Any]
    #: Recorder snapshots from Send to the outcome (see RECORDER_JS).
    snaps: list[dict[str, Any]] = field(default_factory=list)
    #: Main-thread heartbeats while the attempt ran (see HEARTBEAT_JS): longest gaps (ms) and beat counts.
    max_tick_gap_ms: float = 0.0
    ticks: int = 0
    max_frame_gap_ms: float = 0.0
    frames: int = 0
    #: Wall time from the click to the outcome badge (s).
    seconds: float = 0.0
    #: The plain-language sentence under the answer, and what the polite live region said at the end.
    sentence: str = ""
    announced: str = ""

    def before_outcome(self) -> list[dict[str, Any]]:
        """Snapshots taken while the outcome badge was still empty."""
        return [s for s in self.snaps if not s["outcome"]]


def server_stats(base_url: str) -> dict[str, dict[str, int]]:
    """``GET /__demo/stats``: stream counters per scenario."""
    with urllib.request.urlopen(base_url + "/__demo/stats", timeout=5) as resp:
        counts: dict[str, dict[str, int]] = json.load(resp)["streams"]
    return counts


def wait_for_stat(base_url: str, scenario: str, event: str, at_least: int, timeout: float = 10.0) -> int:
    """Poll the server's counters until ``scenario``'s ``event`` count reaches ``at_least`` (or time runs out)."""
    deadline = time.monotonic() + timeout
    while True:
        value = server_stats(base_url)[scenario][event]
        if value >= at_least or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def axe_violations(page: Any, impacts: tuple[str, ...] = ("serious", "critical")) -> list[str]:
    """Run axe-core over the whole page (its context must have ``AXE_JS`` as an init script); one line per
    violation of the given impacts: rule id, impact, and the first offending elements."""
    found: list[dict[str, Any]] = page.evaluate("""async () => {
        const { violations } = await axe.run(document, { resultTypes: ["violations"] });
        return violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                                        nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
    }""")
    return [f"{v['id']} ({v['impact']}): {v['help']} at {v['nodes']}" for v in found if v["impact"] in impacts]


# --- driving the demo page (the data-testid hooks name the latest attempt only) --------------------------------

BOOT_TIMEOUT_MS = 60_000
ATTEMPT_TIMEOUT_MS = 30_000
PROMPT = "What's the weather like in Paris today?"
#: The page's default idle deadline (s), typed back before every send so one test's setting never leaks into the
#: next on a shared page.
DEFAULT_IDLE_S = 3.0


def open_demo(page: Any, base_url: str) -> None:
    page.goto(base_url + "/")
    page.get_by_test_id("ready").wait_for(timeout=BOOT_TIMEOUT_MS)


def choose(page: Any, route: str, scenario: str, *, idle_s: float | None = None) -> None:
    """Pick route, scenario and idle deadline in the settings (opening them where a phone layout keeps them
    collapsed, and closing them again)."""
    was_open = page.locator("#settings").evaluate("(el) => el.open")
    if not was_open:
        page.locator("#settings summary").click()
    page.get_by_test_id("route-select").select_option(route)
    page.get_by_test_id("scenario-select").select_option(scenario)
    page.get_by_test_id("idle-timeout").fill(str(idle_s if idle_s is not None else DEFAULT_IDLE_S))
    if not was_open:
        page.locator("#settings summary").click()


def send(page: Any, route: str, scenario: str, *, prompt: str = PROMPT, idle_s: float | None = None,
         record: bool = True) -> float:
    """Choose route and scenario, type the prompt, press Send; return the page's clock (ms) at the click."""
    choose(page, route, scenario, idle_s=idle_s)
    page.get_by_test_id("prompt").fill(prompt)
    sent_at: float = page.evaluate("(off) => { window.__rec.off = off; window.__rec.reset(); "
                                   "return performance.now(); }", not record)
    page.get_by_test_id("send").click()
    return sent_at


def wait_for_outcome(page: Any, route: str, scenario: str, sent_at: float, *, shot: str | None = None) -> Attempt:
    """Wait until the latest attempt shows its outcome and the page is idle again (Stop disabled); read back what
    the page shows."""
    started = time.monotonic()
    page.wait_for_function("() => document.querySelector('[data-testid=\"outcome\"]').textContent !== ''",
                           timeout=ATTEMPT_TIMEOUT_MS)
    seconds = time.monotonic() - started
    page.wait_for_function("() => document.querySelector('[data-testid=\"cancel\"]').disabled && "
                           "document.querySelector('[data-testid=\"announcer\"]').textContent !== ''")
    state = page.evaluate("""(sentAt) => {
        const q = (id) => document.querySelector(`[data-testid="${id}"]`);
        const now = performance.now();
        return {
          outcome: q("outcome").textContent, stage: q("stage").textContent,
          committed: q("committed").textContent, provisional: q("provisional").textContent,
          provisionalState: q("provisional").dataset.state, label: q("provisional-label").textContent,
          sentence: q("outcome-sentence").textContent, announced: q("announcer").textContent,
          telemetry: q("telemetry").textContent, snaps: window.__rec.snaps,
          beats: window.__hb.measure(sentAt, now),
        };
    }""", sent_at)
    if shot is not None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{shot}.png"))
    return Attempt(route=route, scenario=scenario, outcome=state["outcome"], stage=state["stage"],
                   committed=state["committed"], provisional=state["provisional"],
                   provisional_state=state["provisionalState"], provisional_label=state["label"],
                   telemetry=json.loads(state["telemetry"]), snaps=state["snaps"],
                   max_tick_gap_ms=state["beats"]["tickGap"], ticks=state["beats"]["ticks"],
                   max_frame_gap_ms=state["beats"]["frameGap"], frames=state["beats"]["frames"], seconds=seconds,
                   sentence=state["sentence"], announced=state["announced"])


# --- pages and what they must never do ---------------------------------------------------------------------------


@dataclass
class PageWatch:
    """Things a page must never do (open a dialog, throw an uncaught error, violate its CSP), collected while it
    lives; a shared page is checked per test with :meth:`assert_clean` from a :meth:`mark`."""

    page: Any
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        violations: list[str] = self.page.evaluate("() => window.__rec ? window.__rec.violations : []")
        return ([f"dialog: {d}" for d in self.dialogs] + [f"uncaught: {e}" for e in self.errors]
                + [f"CSP violation: {v}" for v in violations])

    def mark(self) -> int:
        return len(self.problems())

    def assert_clean(self, since: int = 0) -> None:
        new = self.problems()[since:]
        assert new == [], f"the page misbehaved: {new}"


def watched_page(browser: Any, viewport: dict[str, int], *, axe: bool = False,
                 permissions: tuple[str, ...] = ()) -> tuple[Any, PageWatch]:
    """A new context and page with the heartbeat and recorder (and axe-core) injected. Close its context."""
    context = browser.new_context(viewport=viewport)
    if permissions:
        context.grant_permissions(list(permissions))
    context.add_init_script(HEARTBEAT_JS)
    context.add_init_script(RECORDER_JS)
    if axe:
        context.add_init_script(path=str(AXE_JS))
    page = context.new_page()
    page.set_default_timeout(ATTEMPT_TIMEOUT_MS)
    watch = PageWatch(page)

    def on_dialog(dialog: Any) -> None:
        watch.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
    return page, watch


def build_site(site: Path) -> Path:
    """The static site exactly as the README's demo command builds it (a cached kit build: about a second)."""
    proc = subprocess.run([sys.executable, str(REPO / "build_scripts" / "pyodide_tools.py"), "site", str(site)],
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return site


def launch_chromium(sync_api: Any) -> Iterator[Any]:
    """Debian's Chromium driven by Playwright's sync API, for a module-scoped fixture (``yield from`` it). Not
    session-scoped: the sync API keeps an asyncio loop running in this thread until it stops, which would break a
    later ``asyncio.run()``."""
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: install Debian's chromium package (setup_env.sh does)"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
