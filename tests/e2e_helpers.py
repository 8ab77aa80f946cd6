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
  outcome badge, tool cards and whether their Run button is enabled) after every DOM change, so a test can assert
  on the whole history of an attempt ("Run was never enabled before the outcome appeared"), however fast it
  streamed. It also records Content-Security-Policy violations.
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
      ready: q("ready") !== null,
      sendEnabled: q("send") ? !q("send").disabled : null,
      provisional: text("provisional"),
      provisionalState: provisional ? provisional.dataset.state : null,
      committed: text("committed"),
      outcome: text("outcome"),
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
