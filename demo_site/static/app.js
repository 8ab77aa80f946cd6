// The demo page: a chat built on the widget kit (/webclient/webclient.mjs), used exactly as any widget would use
// it. The kit runs Pyodide + webclient in its Web Worker, which owns the model request and the StreamSession; this
// thread only renders the plain update objects a stream yields: nothing here parses, decodes or decides. Whatever
// the model produced is inserted as text (Text nodes, textContent), never as HTML.
//
// What a person sees, per attempt (one question can have several attempts: Retry adds one):
//   * the answer streaming into a dashed box labelled provisional, following the stream unless they scrolled up;
//   * on `complete`, the same text becomes the committed answer in place (solid box, "Complete"): not re-rendered,
//     so nothing moves;
//   * on any other outcome the text stays, labelled "not committed" (or "stopped — not committed" after Stop),
//     with one plain sentence saying what happened, Retry where the telemetry's retry advice allows it, and the
//     technical detail one click away;
//   * one card per tool call (tool_card.js), runnable only once ready;
//   * one polite announcement per attempt for screen readers: the answer (or a summary) and the outcome.
// The developer panel (collapsed) shows the counts, a timeline and the sanitized telemetry of the last attempt.
//
// Test hooks (data-testid) name the latest attempt only: an older attempt loses its hooks when a new one starts.
// For the end-to-end tests, window.__demo exposes the boot time, the time spent rendering each text delta and
// the layout time of each frame that followed the stream.

import { createClient } from "/webclient/webclient.mjs";
import { TimelineChart } from "./chart.js";
import { Follower } from "./follow.js";
import { describeOutcome, RETRY_NOTE } from "./outcomes.js";
import { alignSeams, setFrameScheduler, TextSink } from "./text_sink.js";
import { ToolCard } from "./tool_card.js";

const demo = {
  bootMs: null,           // the kit's worker start -> webclient importable, as the kit measured it
  versions: null,
  attempts: 0,
  // One entry per rendered text delta of the current attempt: [characters shown before it, its length, ms].
  renderTimes: [],
  // One entry per animation frame that followed the stream: [characters shown, characters added since the last
  // such frame, ms spent aligning text seams, laying out the frame's appends and scrolling to the end].
  layoutTimes: [],
};
window.__demo = demo;

const $ = (id) => document.getElementById(id);
const ui = {
  boot: $("boot"), bootStage: $("boot-stage"), bootProgress: $("boot-progress"), bootDetail: $("boot-detail"),
  bootElapsed: $("boot-elapsed"), form: $("ask"), route: $("route"), scenario: $("scenario"),
  settings: $("settings"), settingsSummary: $("settings-summary"), expected: $("expected"), idle: $("idle"),
  firstEvent: $("first-event"), total: $("total"), resume: $("resume"), prompt: $("prompt"), send: $("send"),
  cancel: $("cancel"),
  mode: $("mode"), conversation: $("conversation"), transcript: $("transcript"), jump: $("jump"),
  announcer: $("announcer"), devToggle: $("dev-toggle"), devClose: $("dev-close"), devpanel: $("devpanel"),
  devOutcome: $("dev-outcome"), devStage: $("dev-stage"), counts: $("counts"), milestones: $("milestones"),
  chartBox: $("chart-box"), telemetry: $("telemetry"),
};

function clone(templateId) {
  return $(templateId).content.firstElementChild.cloneNode(true);
}

let shownAtLastFrame = 0;
const follower = new Follower(ui.conversation, ui.jump, {
  beforeFrame: alignSeams,
  onFrame: (ms) => {
    if (stream === null || !current) return;
    const shown = current.attempt.sink.length;
    demo.layoutTimes.push([shown, shown - shownAtLastFrame, ms]);
    shownAtLastFrame = shown;
  },
});
setFrameScheduler(() => follower.requestFrame());

// --- the developer panel ------------------------------------------------------------------------------------

class DevPanel {
  constructor() {
    this.chart = new TimelineChart($("chart"), $("legend"));
    this.chart.visible = false;
    ui.devToggle.addEventListener("click", () => this.toggle());
    ui.devClose.addEventListener("click", () => this.toggle(false));
  }

  toggle(open = ui.devpanel.hidden) {
    ui.devpanel.hidden = !open;
    ui.devToggle.setAttribute("aria-expanded", String(open));
    this.chart.visible = open;
    if (open) this._render();
    (open ? ui.devClose : ui.devToggle).focus();
  }

  start() {
    this.counts = { chunks: 0, bytes: 0, events: 0, textDeltas: 0, toolDeltas: 0 };
    this.marks = [["0 ms", "request sent"]];
    this.seen = new Set();
    ui.devOutcome.textContent = "";
    ui.devOutcome.dataset.outcome = "streaming";
    ui.devStage.textContent = "";
    ui.telemetry.textContent = "";
    this.chart.reset();
    ui.chartBox.hidden = false;
    this._render();
  }

  chunk(t) {
    Object.assign(this.counts, { chunks: t.chunks, bytes: t.bytes, events: t.events });
    this._mark("chunk", t, "first chunk of the response body");
    this.chart.add("chunks", t.t_ms, t.chunks);
    this.chart.add("events", t.t_ms, t.events);
    this._renderSoon();
  }

  update(u, shownChars) {
    const t = u.timeline;
    this.counts.events = t.events;
    if (u.kind === "text_delta") {
      this.counts.textDeltas += 1;
      this._mark("text", t, "first text shown (provisional)");
      this.chart.add("provisional", t.t_ms, shownChars);
    } else if (u.kind === "tool_input_delta") {
      this.counts.toolDeltas += 1;
      this._mark("tool", t, "first tool request data");
    }
    this.chart.add("events", t.t_ms, t.events);
    this._renderSoon();
  }

  finish(result, timeline) {
    const { outcome, stage } = result;
    const telemetry = result.telemetry;
    ui.devOutcome.textContent = outcome;
    ui.devOutcome.dataset.outcome = outcome;
    ui.devStage.textContent = stage ? `stage: ${stage}` : "";
    ui.telemetry.textContent = JSON.stringify(telemetry, null, 2);
    Object.assign(this.counts, { chunks: telemetry.chunk_count, bytes: telemetry.bytes_received,
                                 events: telemetry.complete_sse_event_count });
    const at = `${Math.round(telemetry.duration_ms ?? timeline?.t_ms ?? 0)} ms`;
    if (telemetry.chunk_count === 0) {
      // No body was read: say what happened instead of drawing an empty plot.
      ui.chartBox.hidden = true;
      const status = telemetry.http_status;
      let what = "no response arrived";
      if (status != null) {
        what = `response HTTP ${status}` + (telemetry.content_type_valid === false ? ", not an event stream" : "");
        what += stage === "status" || stage === "media_type"
          ? ": refused by the response gate, no body was read" : ", no body was read";
      }
      this.marks.push([at, what]);
    }
    this.marks.push([at, `ended: ${outcome}${stage ? ` (stage ${stage})` : ""}`]);
    this.chart.add("committed", timeline?.t_ms ?? 0, result.committed ? result.text.length : 0);
    this._render();
  }

  _mark(key, t, what) {
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.marks.push([`${Math.round(t.t_ms)} ms`, what]);
  }

  _renderSoon() {
    if (ui.devpanel.hidden) return;  // collapsed: drawn when opened
    if (!this.frame) this.frame = requestAnimationFrame(() => { this.frame = 0; this._render(); });
  }

  _render() {
    const c = this.counts;
    const rows = [["Transport chunks", c.chunks], ["Bytes", c.bytes], ["Complete SSE events", c.events],
                  ["Text deltas", c.textDeltas], ["Tool input deltas", c.toolDeltas]];
    ui.counts.replaceChildren(...rows.flatMap(([name, value]) => {
      const dt = document.createElement("dt");
      dt.textContent = name;
      const dd = document.createElement("dd");
      dd.textContent = Number(value).toLocaleString("en-US");
      return [dt, dd];
    }));
    ui.milestones.replaceChildren(...this.marks.map(([at, what]) => {
      const li = document.createElement("li");
      const time = document.createElement("span");
      time.className = "at";
      time.textContent = at;
      li.append(time, ` ${what}`);
      return li;
    }));
  }
}

const devPanel = new DevPanel();

// --- one attempt at an answer --------------------------------------------------------------------------------

const CHANNEL_NAMES = { refusal: "Refusal", reasoning: "Reasoning" };

class Attempt {
  constructor(turn, number) {
    this.turn = turn;
    this.root = clone("attempt-template");
    const part = (selector) => this.root.querySelector(selector);
    this.box = part(".answer-box");
    this.label = part(".box-label");
    this.provisional = part(".provisional-text");
    this.committed = part(".committed-text");
    this.sideChannels = part(".side-channels");
    this.toolCards = part(".tool-cards");
    this.outcome = part(".outcome");
    this.sentence = part(".outcome-sentence");
    this.retryButton = part(".retry");
    this.copyButton = part(".copy");
    this.copyStatus = part(".copy-status");
    this.technical = part(".technical-list");
    this.outcomeToken = part(".outcome-token");
    this.stageToken = part(".stage-token");
    this.number = number;
    this.title = part(".attempt-title");
    this.numberTag = part(".attempt-number");
    if (number > 1) this._showNumber();
    this.sink = new TextSink(this.provisional);
    this.channelSinks = new Map();
    this.cards = new Map();
    this.finalText = "";
    this.copyButton.addEventListener("click", () => this._copy());
    turn.attempts.appendChild(this.root);
  }

  /** An older attempt stays on screen but gives up the test hooks, which name the latest attempt only. */
  retire() {
    for (const el of this.root.querySelectorAll("[data-testid]")) el.removeAttribute("data-testid");
    this.retryButton.hidden = true;   // only the latest question can be retried
  }

  /** A Retry started the next attempt: this one says so (instead of offering to try again) and shows its number. */
  supersede() {
    this.root.dataset.superseded = "true";
    this._showNumber();
    const sentence = this.said?.sentence ?? this.sentence.textContent;
    const offered = sentence.endsWith(RETRY_NOTE) ? sentence.slice(0, -RETRY_NOTE.length) : sentence;
    this.sentence.textContent = `${offered} Retried below as attempt ${this.number + 1}.`;
  }

  _showNumber() {
    this.title.textContent = `Model answer, attempt ${this.number}`;
    this.numberTag.textContent = `Attempt ${this.number}`;
    this.numberTag.hidden = false;
  }

  textDelta(u) {
    if (u.channel === "text") {
      this.sink.append(u.text);
      return;
    }
    let sink = this.channelSinks.get(u.channel);
    if (!sink) {
      const box = document.createElement("div");
      box.className = `side-channel channel-${u.channel}`;
      const label = document.createElement("p");
      label.className = "box-label";
      label.textContent = `${CHANNEL_NAMES[u.channel] ?? u.channel} · provisional`;
      const text = document.createElement("div");
      text.className = "answer-text";
      box.append(label, text);
      this.sideChannels.appendChild(box);
      sink = new TextSink(text);
      this.channelSinks.set(u.channel, sink);
    }
    sink.append(u.text);
  }

  card(u) {
    let card = this.cards.get(u.call);
    if (!card) {
      card = new ToolCard($("tool-card-template"), this.toolCards);
      this.cards.set(u.call, card);
    }
    card.identify(u.name);
    return card;
  }

  /** The attempt committed: its text becomes the committed answer where it stands. */
  commit(result) {
    const text = result.text || (result.refusal ? `Refused: ${result.refusal}` : "");
    if (text && this.sink.length === text.length && this.sink.text === text) {
      // The streamed text is the committed answer: its element becomes the committed one where it stands (nothing
      // is laid out again, nothing moves) and the hooks follow the roles.
      [this.provisional, this.committed] = [this.committed, this.provisional];
      for (const [element, role] of [[this.provisional, "provisional"], [this.committed, "committed"]]) {
        element.dataset.testid = role;
        element.classList.toggle("provisional-text", role === "provisional");
        element.classList.toggle("committed-text", role === "committed");
      }
      this.committed.removeAttribute("data-state");
    } else {
      this.sink.clear();
      this.sink = new TextSink(this.committed);
      this.sink.append(text);
    }
    this.provisional.dataset.state = "committed";
    for (const sink of this.channelSinks.values()) sink.clear();
    this.sideChannels.replaceChildren();
    if (result.reasoning) this._reasoning(result.reasoning);
    result.tool_calls.forEach((call, i) => this.card({ call: i, name: call.name }));
    for (const [i, card] of this.cards) card.finish(result.tool_calls[i], true);
    this.finalText = text;
    this._ended(result, "committed");
  }

  /** The attempt ended without committing: the text stays, marked as never verified. */
  fail(result) {
    this.provisional.dataset.state = "withdrawn";
    for (const [i, card] of this.cards) card.finish(result.tool_calls[i], false);
    this.finalText = this.sink.text;
    this._ended(result, result.outcome === "cancelled" ? "stopped" : "failed");
  }

  /** The kit rejected the attempt (a bug in this page's options, or the worker died). */
  error(message) {
    this.provisional.dataset.state = "withdrawn";
    for (const card of this.cards.values()) card.finish(undefined, false);
    this.root.dataset.state = this.box.dataset.state = "failed";
    this.label.textContent = "⚠ No answer";
    this.sentence.textContent = `The page could not start this attempt (${message}).`;
    this.outcomeToken.textContent = "error";
    this.outcome.hidden = false;
    return this.sentence.textContent;
  }

  _ended(result, state) {
    const shownText = this.sink.length > 0 || this.channelSinks.size > 0;
    const said = describeOutcome(result, { deadlines: this.turn.request.options.deadlines, shownText });
    this.root.dataset.state = this.box.dataset.state = state;
    this.label.textContent = said.label;
    this.sentence.textContent = said.sentence;
    this.technical.replaceChildren(...said.technical.flatMap(([name, value]) => {
      const dt = document.createElement("dt");
      dt.textContent = name;
      const dd = document.createElement("dd");
      const code = name === "Outcome" ? this.outcomeToken : name === "Stage" ? this.stageToken
        : document.createElement("code");
      code.textContent = value;
      dd.appendChild(code);
      return [dt, dd];
    }));
    this.outcomeToken.dataset.outcome = result.outcome;
    this.stageToken.textContent = result.stage ?? "";
    this.retryButton.hidden = !said.retry;
    this.copyButton.hidden = !this.finalText;
    this.outcome.hidden = false;
    this.said = said;
  }

  _reasoning(text) {
    const details = document.createElement("details");
    details.className = "reasoning";
    const summary = document.createElement("summary");
    summary.textContent = "The model's reasoning";
    const body = document.createElement("div");
    body.className = "answer-text";
    details.append(summary, body);
    this.sideChannels.appendChild(details);
    new TextSink(body).append(text);
  }

  async _copy() {
    try {
      await navigator.clipboard.writeText(this.finalText);
      this.copyStatus.textContent = "Copied.";
      clearTimeout(this.copyTimer);
      this.copyTimer = setTimeout(() => { this.copyStatus.textContent = ""; }, 4000);
    } catch {
      this.copyStatus.textContent = "Copying is not allowed here: select the text and copy it instead.";
    }
  }
}

// --- one question ------------------------------------------------------------------------------------------------

class Turn {
  constructor(request, scenarioTitle) {
    this.request = request;
    this.root = clone("turn-template");
    this.root.querySelector(".prompt-text").textContent = request.prompt;
    this.root.querySelector(".turn-meta").textContent = `${request.options.route} · ${scenarioTitle}`;
    this.attempts = this.root.querySelector(".attempts");
    this.attempt = null;
    this.count = 0;
    ui.transcript.appendChild(this.root);
  }

  /** A new attempt for this question; the previous one (if any) keeps its text but loses its hooks. */
  next() {
    if (this.attempt) {
      this.attempt.retire();
      this.attempt.supersede();
    }
    this.count += 1;
    this.attempt = new Attempt(this, this.count);
    return this.attempt;
  }
}

// --- the attempt controller ----------------------------------------------------------------------------------

let config = null;       // GET /demo/config.json
let tools = null;        // GET /demo/tools.json: tool name -> JSON Schema, given with every stream
let client = null;       // the kit's client, once booted
let current = null;      // {turn, attempt} of the attempt in flight or last shown
let stream = null;       // the kit's stream of the attempt in flight
let sequence = 0;

function setControls() {
  const idle = client !== null && config !== null && stream === null;
  ui.send.disabled = !idle || ui.prompt.value.trim() === "";
  ui.cancel.disabled = stream === null;
}

function secondsToMs(input, fallback) {
  const value = Number(input.value);
  return Number.isFinite(value) && value > 0 ? Math.round(value * 1000) : fallback;
}

/** The request body a client of `route` sends for one user prompt. */
function requestBody(route, model, prompt) {
  switch (route) {
    case "openai-chat":
      return { model, stream: true, stream_options: { include_usage: true },
               messages: [{ role: "user", content: prompt }] };
    case "openai-responses":
      return { model, stream: true, input: prompt };
    case "anthropic-messages":
      return { model, max_tokens: 1024, stream: true,
               messages: [{ role: "user", content: [{ type: "text", text: prompt }] }] };
    case "gemini":
      return { contents: [{ role: "user", parts: [{ text: prompt }] }] };
    default:
      throw new Error(`unknown route ${route}`);
  }
}

/** Resuming a cut Responses stream: the request asks for background mode (the server keeps the response), and
 *  the client may follow a cut with up to this many `GET …?stream=true&starting_after=N` requests. */
const RESUME = { max_resumes: 2, delay_ms: 250 };

/** Everything one question sends, from the settings and the prompt (Retry sends it again unchanged). */
function newRequest(prompt) {
  const route = ui.route.value;
  const entry = config.routes.find((r) => r.route === route);
  const path = entry.path.replace("{model}", encodeURIComponent(entry.default_model));
  const body = requestBody(route, entry.default_model, prompt);
  const resume = route === "openai-responses" && ui.resume.checked;
  if (resume) body.background = true;
  return {
    prompt,
    options: {
      route,
      url: path + (route === "gemini" ? "?alt=sse" : ""),
      body: JSON.stringify(body),
      ...(resume ? { resume: RESUME } : {}),
      headers: { "content-type": "application/json", [config.scenario_header]: ui.scenario.value },
      deadlines: {
        connect_ms: 10_000,
        first_event_ms: secondsToMs(ui.firstEvent, 10_000),
        idle_ms: secondsToMs(ui.idle, 3_000),
        total_ms: secondsToMs(ui.total, 120_000),
      },
      tools,
      request_id: `demo-${++sequence}`,
      model_alias: entry.default_model,
      idempotent: true,   // plain generation: repeating it only costs tokens (the retry advice relies on it)
    },
  };
}

function send() {
  if (client === null || config === null || stream !== null || ui.prompt.value.trim() === "") return;
  const request = newRequest(ui.prompt.value);
  if (current) current.attempt.retire();
  const turn = new Turn(request, ui.scenario.selectedOptions[0]?.textContent ?? ui.scenario.value);
  ui.prompt.value = "";
  ui.prompt.focus();
  follower.toLatest();
  run(turn);
}

function retry(turn) {
  if (client === null || stream !== null || current?.turn !== turn) return;
  ui.prompt.focus();
  run(turn);
}

async function run(turn) {
  const attempt = turn.next();
  current = { turn, attempt };
  demo.attempts += 1;
  demo.renderTimes = [];
  demo.layoutTimes = [];
  shownAtLastFrame = 0;
  ui.announcer.textContent = "";
  attempt.retryButton.addEventListener("click", () => retry(turn));
  devPanel.start();
  let last = null;
  stream = client.stream({
    ...turn.request.options,
    attempt: turn.count,
    onChunk: (timeline) => devPanel.chunk(timeline),
  });
  setControls();
  follower.changed();
  let said;
  try {
    for await (const update of stream) {
      render(attempt, update);
      last = update;
    }
    const result = await stream.result;
    devPanel.finish(result, last?.timeline);
    said = announcement(attempt, result);
    if (result.outcome !== "complete" && ui.prompt.value === "") ui.prompt.value = turn.request.prompt;
  } catch (err) {
    said = attempt.error(err.message);
    if (ui.prompt.value === "") ui.prompt.value = turn.request.prompt;
  } finally {
    stream = null;
    setControls();
  }
  ui.announcer.textContent = said;
  follower.changed();
  const focus = document.activeElement;
  if (!focus || focus === document.body || focus.disabled) ui.prompt.focus();
}

/** The one thing a screen reader hears per attempt: the answer (or a summary of it) and how it ended. */
function announcement(attempt, result) {
  const text = attempt.finalText;
  const sentence = attempt.said?.sentence ?? "";
  if (!text) return sentence;
  const size = `${text.length.toLocaleString("en-US")} characters`;
  if (result.outcome === "complete") {
    return text.length <= 600 ? `Answer: ${text} ${sentence}`
      : `Answer of ${size}, starting: ${text.slice(0, 200)}… ${sentence}`;
  }
  return `${sentence} The partial answer on screen has ${size}.`;
}

function render(attempt, u) {
  switch (u.kind) {
    case "text_delta": {
      const before = attempt.sink.length;
      const started = performance.now();
      attempt.textDelta(u);
      if (u.channel === "text") demo.renderTimes.push([before, u.text.length, performance.now() - started]);
      break;
    }
    case "tool_input_delta":
      attempt.card(u).appendInput(u.fragment);
      break;
    case "tool_call":
      attempt.card(u).update(u);
      break;
    case "committed":
      attempt.commit(u.result);
      break;
    case "failed":
      attempt.fail(u.result);
      break;
    default:
      break;
  }
  devPanel.update(u, attempt.sink.length);
  follower.changed();
}

function cancel() {
  if (stream === null) return;
  stream.cancel();
  ui.cancel.disabled = true;
  ui.prompt.focus();
}

// --- boot ------------------------------------------------------------------------------------------------------

const bootStarted = performance.now();
const elapsedTimer = setInterval(() => {
  ui.bootElapsed.textContent = `${((performance.now() - bootStarted) / 1000).toFixed(1)} s`;
}, 100);

// The kit's boot stages: label and the share of the progress bar each covers.
const STAGES = {
  download: ["Downloading the Python runtime", 0, 60],
  start: ["Starting Python (compiling WebAssembly)", 60, 90],
  import: ["Importing webclient", 90, 98],
};

function bootProgress({ stage, loaded, total }) {
  const [label, from, to] = STAGES[stage] || [stage, 0, 0];
  if (ui.bootStage.textContent !== `${label}…`) ui.bootStage.textContent = `${label}…`;
  if (stage === "start") {
    ui.bootProgress.removeAttribute("value");  // indeterminate while WebAssembly compiles
    ui.bootDetail.textContent = "";
    return;
  }
  const share = total > 0 ? Math.min(loaded / total, 1) : 0;
  ui.bootProgress.value = from + (to - from) * share;
  // A share, not megabytes: `loaded` and `total` are decompressed bytes (the kit's standard library is 13 MB of
  // them, 2.6 MB on the wire), so "13 MB" would overstate the download fivefold.
  ui.bootDetail.textContent = total > 0 ? `${Math.round(share * 100)}%` : "";
}

function bootDone() {
  const { bootMs, versions } = client;
  clearInterval(elapsedTimer);
  demo.bootMs = bootMs;
  demo.versions = versions;
  ui.boot.dataset.state = "ready";
  ui.bootProgress.value = 100;
  ui.bootStage.textContent = "ready";
  ui.bootStage.title = `Pyodide ${versions.pyodide}, Python ${versions.python}, webclient ${versions.webclient}`;
  ui.bootDetail.textContent = `webclient ${versions.webclient} on Python ${versions.python}`;
  // The kit keeps a snapshot of the booted Python: the next visit restores it instead of starting from scratch.
  const from = client.snapshot === "restored" ? " (from the saved snapshot)" : "";
  ui.bootElapsed.textContent = `in ${(bootMs / 1000).toFixed(1)} s${from}`;
  const marker = document.createElement("span");
  marker.className = "ready-marker";
  marker.dataset.testid = "ready";
  marker.setAttribute("aria-hidden", "true");
  marker.textContent = "✔";
  ui.boot.appendChild(marker);
  setControls();
}

function bootFailed(message) {
  clearInterval(elapsedTimer);
  ui.boot.dataset.state = "error";
  ui.bootProgress.value = 0;
  ui.bootStage.textContent = `failed to start: ${message} ` +
    "(the site must be built with the widget kit: build_scripts/demo.sh does it)";
}

// --- settings ----------------------------------------------------------------------------------------------------

function option(value, text) {
  const element = document.createElement("option");
  element.value = value;
  element.textContent = text;
  return element;
}

function showSettings() {
  const scenario = config.scenarios.find((s) => s.slug === ui.scenario.value);
  const model = config.routes.find((r) => r.route === ui.route.value)?.default_model;
  ui.resume.disabled = ui.route.value !== "openai-responses";
  const resumed = !ui.resume.disabled && ui.resume.checked && scenario?.resumable === true;
  const expected = resumed ? "complete, after a resume"
    : scenario?.expected_by_route?.[ui.route.value] ?? scenario?.expected;
  ui.expected.textContent = `Model ${model}` +
    (scenario && config.mode !== "proxy" ? ` · expected outcome: ${expected}.` : ".");
  ui.settingsSummary.textContent = config.mode === "proxy" ? ui.route.value
    : `${ui.route.value} · ${scenario?.title ?? ui.scenario.value}`;
}

async function getJSON(path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`GET ${path} answered HTTP ${response.status}`);
  return response.json();
}

async function loadConfig() {
  [config, tools] = await Promise.all([getJSON("/demo/config.json"), getJSON("/demo/tools.json")]);
  ui.route.replaceChildren(...config.routes.map((r) => option(r.route, r.route)));
  ui.scenario.replaceChildren(...config.scenarios.map((s) => option(s.slug, s.title)));
  ui.route.addEventListener("change", showSettings);
  ui.scenario.addEventListener("change", showSettings);
  ui.resume.addEventListener("change", showSettings);
  showSettings();
  if (config.mode === "proxy") {
    ui.scenario.disabled = true;
    ui.mode.textContent = "Proxy mode: requests go to the real upstream; scenarios do not apply.";
  } else {
    ui.mode.textContent = "Embedded upstream: the scenario picks how the fake model answers.";
  }
  setControls();
}

// Open on wide screens, a one-line summary on phones.
ui.settings.open = window.matchMedia("(min-width: 720px)").matches;

// --- keyboard ------------------------------------------------------------------------------------------------

ui.form.addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});
ui.prompt.addEventListener("keydown", (event) => {
  // Enter sends, Shift+Enter is a new line; never while an input method is composing a character.
  if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
  event.preventDefault();
  send();
});
ui.prompt.addEventListener("input", setControls);
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  // Escape stops a streaming answer; otherwise it closes the developer panel (which covers the chat on phones).
  if (stream !== null) {
    event.preventDefault();
    cancel();
  } else if (!ui.devpanel.hidden) {
    event.preventDefault();
    devPanel.toggle(false);
  }
});
ui.cancel.addEventListener("click", cancel);

loadConfig().catch((err) => { ui.mode.textContent = `Could not load the demo configuration: ${err.message}`; });
createClient({ onBoot: bootProgress }).then((booted) => {
  client = booted;
  bootDone();
}, (err) => bootFailed(err.message));
