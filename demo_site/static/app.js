// The demo page: it uses the widget kit (/webclient/webclient.mjs) exactly as any widget would. The kit runs
// Pyodide + webclient in its Web Worker, which owns the model request and the StreamSession; this thread only
// renders the plain update objects a stream yields; nothing here parses, decodes or decides. Everything the model produced is inserted as text (Text nodes and
// textContent), never as HTML.
//
// What a person sees, per attempt:
//   * provisional text (dashed box, labelled "Provisional"), appended delta by delta in O(delta);
//   * on `complete`, the committed text (solid box, labelled "Committed") replaces it;
//   * on any other outcome the provisional text stays, relabelled "Withdrawn" and struck through, and the
//     committed box stays empty;
//   * one card per tool call with its raw input as inert text, its state, and a Run button enabled only
//     when the call is ready (valid, and the attempt committed);
//   * the outcome badge, the sanitized telemetry record and a timeline chart.
//
// For the end-to-end tests, window.__demo exposes the boot time, the time spent rendering each update and the
// layout time of each frame that followed the streaming text.

import { createClient } from "/webclient/webclient.mjs";
import { TextSink } from "./text_sink.js";
import { TimelineChart } from "./chart.js";

const demo = {
  bootMs: null,           // the kit's worker start -> webclient importable, as the kit measured it
  versions: null,
  attempts: 0,
  // One entry per rendered text delta of the current attempt: [characters shown before it, its length, ms].
  renderTimes: [],
  // One entry per animation frame that followed the provisional text's tail: [characters shown, ms spent
  // laying out the frame's appends and scrolling to the end].
  layoutTimes: [],
};
window.__demo = demo;

const $ = (id) => document.getElementById(id);
const ui = {
  boot: $("boot"), bootStage: $("boot-stage"), bootProgress: $("boot-progress"), bootDetail: $("boot-detail"),
  bootElapsed: $("boot-elapsed"), form: $("ask"), route: $("route"), scenario: $("scenario"),
  expected: $("expected"), idle: $("idle"), firstEvent: $("first-event"), total: $("total"), prompt: $("prompt"),
  send: $("send"), cancel: $("cancel"), mode: $("mode"), transcript: $("transcript"),
  outcome: $("outcome-badge"), stage: $("stage"), telemetry: $("telemetry"),
};
const chart = new TimelineChart($("chart"), $("legend"));

// What each non-complete outcome means for the withdrawn answer's label.
const OUTCOME_EXPLAINED = {
  truncated: "the stream ended before the model finished",
  protocol_error: "the response was not a valid stream for this route",
  decode_error: "the bytes were not valid UTF-8",
  payload_error: "an event's payload was malformed or failed validation",
  buffer_limit: "the stream exceeded a size ceiling",
  upstream_error: "the provider reported an error mid-stream",
  timeout: "a deadline passed",
  cancelled: "you cancelled it",
};

function clone(templateId) {
  return $(templateId).content.firstElementChild.cloneNode(true);
}

// --- tool cards ------------------------------------------------------------------------------------------

/** A simulated tool run (the demo executes nothing real). */
function simulateTool(name, args) {
  if (name === "get_weather") {
    return { location: args.location, temperature: args.unit === "fahrenheit" ? 64 : 18,
             unit: args.unit || "celsius", conditions: "partly cloudy" };
  }
  if (name === "get_local_time") {
    let time;
    try {
      time = new Date().toLocaleTimeString("en-GB", { timeZone: args.timezone });
    } catch {
      time = "unknown time zone";
    }
    return { timezone: args.timezone, local_time: time };
  }
  return { note: "no simulation for this tool" };
}

class ToolCard {
  constructor(turn, call) {
    this.turn = turn;
    this.call = call;
    this.root = clone("tool-card-template");
    this.name = this.root.querySelector(".tool-name");
    this.id = this.root.querySelector(".tool-id");
    this.stateBadge = this.root.querySelector(".tool-state");
    this.input = document.createTextNode("");
    this.root.querySelector(".tool-input").appendChild(this.input);
    this.error = this.root.querySelector(".tool-error");
    this.run = this.root.querySelector(".tool-run");
    this.gate = this.root.querySelector(".tool-gate");
    this.output = this.root.querySelector(".tool-output");
    this.arguments = null;
    this.run.addEventListener("click", () => this._run());
    this._show("streaming", false);
    turn.toolCards.appendChild(this.root);
  }

  identify(id, name) {
    if (name && !this.name.textContent) this.name.textContent = name;
    if (id && !this.id.textContent) this.id.textContent = id;
  }

  appendInput(fragment) {
    this.input.appendData(fragment);
  }

  /** A state change reported while streaming (never makes the call runnable on its own). */
  update(u) {
    this.identify(u.id, u.name);
    if (u.arguments && !this.input.length) this.input.appendData(JSON.stringify(u.arguments));
    this.arguments = u.arguments;
    this._show(u.state, u.ready && u.state === "valid" && this.turn.committed);
  }

  /** The attempt ended: `call` is this call as the final result has it (or undefined). */
  finish(call, committed, outcome) {
    if (call) {
      this.identify(call.id, call.name);
      this.arguments = call.arguments;
    }
    const state = call ? call.state : this.root.dataset.state;
    const ready = Boolean(committed && call && call.ready && call.state === "valid");
    this._show(state, ready, committed ? null : outcome);
  }

  _show(state, ready, failedOutcome = null) {
    this.root.dataset.state = state;
    this.stateBadge.textContent = state;
    this.stateBadge.dataset.state = state;
    this.run.disabled = !ready;
    this.root.classList.toggle("ready", ready);
    const invalid = state === "invalid";
    this.error.hidden = !invalid;
    this.error.textContent = invalid
      ? "Invalid tool input: it is not a JSON object that satisfies this tool's schema. This call cannot be run."
      : "";
    if (ready) this.gate.textContent = "Ready: input closed, parsed, validated; response complete.";
    else if (failedOutcome) this.gate.textContent = `Not runnable: the attempt ended ${failedOutcome}.`;
    else if (invalid) this.gate.textContent = "Disabled: invalid input.";
    else if (state === "valid") this.gate.textContent = "Input valid; waiting for the response to complete.";
    else this.gate.textContent = "Disabled until the call is ready.";
  }

  _run() {
    if (this.run.disabled || !this.arguments) return;
    const name = this.name.textContent;
    this.output.hidden = false;
    this.output.textContent = `${name}(${JSON.stringify(this.arguments)})\n→ ` +
      `${JSON.stringify(simulateTool(name, this.arguments))}   (simulated locally)`;
  }
}

// --- one turn of the conversation ----------------------------------------------------------------------

class Turn {
  constructor(id, prompt, route, scenario) {
    this.id = id;
    this.committed = false;
    this.root = clone("turn-template");
    this.root.querySelector(".prompt-text").textContent = prompt;
    this.root.querySelector(".turn-meta").textContent = `${route} · ${scenario}`;
    this.badge = this.root.querySelector(".turn-outcome");
    this.provisionalBox = this.root.querySelector(".provisional-box");
    this.provisionalLabel = this.root.querySelector(".provisional-label");
    this.provisional = this.root.querySelector(".provisional-text");
    this.sink = new TextSink(this.provisional);
    this.sideChannels = this.root.querySelector(".side-channels");
    this.channelSinks = new Map();
    this.committedBox = this.root.querySelector(".committed-box");
    this.committedText = this.root.querySelector(".committed-text");
    this.toolCards = this.root.querySelector(".tool-cards");
    this.cards = new Map();
    // Follow the streaming text's tail unless the reader scrolled up (back to the end: follow again).
    this.stickToBottom = true;
    this.autoScrollTop = 0;
    this.scrollFrame = 0;
    this.provisional.addEventListener("scroll", () => {
      const el = this.provisional;
      this.stickToBottom = el.scrollTop >= this.autoScrollTop - 4 ||
        el.scrollHeight - el.scrollTop - el.clientHeight < 24;
    }, { passive: true });
    this.provisionalLabel.textContent =
      "⋯ Provisional: still streaming; not verified, may be withdrawn.";
    ui.transcript.appendChild(this.root);
    this.root.scrollIntoView({ block: "nearest" });
  }

  /** A previous turn stays on screen but gives up the test hooks, which name the current answer only. */
  retire() {
    for (const el of this.root.querySelectorAll("[data-testid]")) el.removeAttribute("data-testid");
  }

  textDelta(u) {
    if (u.channel === "text") {
      this.sink.append(u.text);
      this._followTail();
      return;
    }
    let sink = this.channelSinks.get(u.channel);
    if (!sink) {
      const box = document.createElement("div");
      box.className = `side-channel channel-${u.channel}`;
      const label = document.createElement("p");
      label.className = "box-label";
      label.textContent = `${u.channel} (provisional)`;
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
      card = new ToolCard(this, u.call);
      this.cards.set(u.call, card);
    }
    card.identify(u.id, u.name);
    return card;
  }

  commit(result) {
    this.committed = true;
    this.badge.textContent = result.outcome;
    this.badge.dataset.outcome = result.outcome;
    this.committedBox.hidden = false;
    new TextSink(this.committedText).append(result.text || (result.refusal ? `Refused: ${result.refusal}` : ""));
    // The provisional text has become the committed answer: drop the provisional copy.
    this.provisionalBox.hidden = true;
    this.provisionalBox.dataset.state = "committed";
    this.provisional.dataset.state = "committed";
    this.sink.clear();
    for (const sink of this.channelSinks.values()) sink.clear();
    this.sideChannels.replaceChildren();
    result.tool_calls.forEach((call, i) => this.card({ call: i, id: call.id, name: call.name }));
    for (const [i, card] of this.cards) card.finish(result.tool_calls[i], true, result.outcome);
  }

  fail(outcome, stage, result) {
    this.badge.textContent = outcome;
    this.badge.dataset.outcome = outcome;
    this.provisionalBox.dataset.state = "withdrawn";
    this.provisional.dataset.state = "withdrawn";
    const status = result.telemetry.http_status;
    const why = (OUTCOME_EXPLAINED[outcome] || "it did not complete") +
      (status && status !== 200 ? ` (HTTP ${status})` : "");
    this.provisionalLabel.textContent = this.sink.length || this.channelSinks.size
      ? `⚠ Withdrawn, incomplete: ${why} (outcome ${outcome}, stage ${stage}). ` +
        "This text was never committed; do not use it."
      : `⚠ No answer: ${why} (outcome ${outcome}, stage ${stage}). Nothing was committed.`;
    for (const [i, card] of this.cards) card.finish(result.tool_calls[i], false, outcome);
  }

  showError(message) {
    this.provisionalBox.dataset.state = "withdrawn";
    this.provisional.dataset.state = "withdrawn";
    this.provisionalLabel.textContent = `⚠ The attempt could not run: ${message}`;
    for (const card of this.cards.values()) card.finish(undefined, false, "with an error");
  }

  _followTail() {
    if (this.scrollFrame || !this.stickToBottom) return;
    this.scrollFrame = requestAnimationFrame(() => {
      this.scrollFrame = 0;
      // Reading scrollHeight lays out what the appends changed: timed as this frame's layout cost.
      const started = performance.now();
      this.provisional.scrollTop = this.provisional.scrollHeight;
      this.autoScrollTop = this.provisional.scrollTop;
      demo.layoutTimes.push([this.sink.length, performance.now() - started]);
    });
  }
}

// --- the attempt controller ----------------------------------------------------------------------------

let config = null;       // GET /demo/config.json
let tools = null;        // GET /demo/tools.json: tool name -> JSON Schema, given with every stream
let client = null;       // the kit's client, once booted
let current = null;      // the Turn of the attempt in flight or last shown
let stream = null;       // the kit's stream of the attempt in flight
let sequence = 0;

function setControls() {
  ui.send.disabled = client === null || config === null || stream !== null;
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

async function send() {
  if (client === null || config === null || stream !== null) return;
  const id = `demo-${++sequence}`;
  const route = ui.route.value;
  const scenario = ui.scenario.value;
  const prompt = ui.prompt.value;
  const entry = config.routes.find((r) => r.route === route);
  if (current) current.retire();
  const turn = current = new Turn(id, prompt, route, scenario);
  demo.attempts += 1;
  demo.renderTimes = [];
  demo.layoutTimes = [];
  ui.outcome.textContent = "";
  ui.outcome.dataset.outcome = "streaming";
  ui.stage.textContent = "";
  ui.telemetry.textContent = "";
  chart.reset();
  const path = entry.path.replace("{model}", encodeURIComponent(entry.default_model));
  stream = client.stream({
    route,
    url: path + (route === "gemini" ? "?alt=sse" : ""),
    body: JSON.stringify(requestBody(route, entry.default_model, prompt)),
    headers: { "content-type": "application/json", [config.scenario_header]: scenario },
    deadlines: {
      connect_ms: 10_000,
      first_event_ms: secondsToMs(ui.firstEvent, 10_000),
      idle_ms: secondsToMs(ui.idle, 3_000),
      total_ms: secondsToMs(ui.total, 120_000),
    },
    tools,
    request_id: id,
    model_alias: entry.default_model,
    onChunk: (timeline) => {
      chart.add("chunks", timeline.t_ms, timeline.chunks);
      chart.add("events", timeline.t_ms, timeline.events);
    },
  });
  setControls();
  try {
    for await (const update of stream) render(turn, update);
    await stream.result;
  } catch (err) {
    turn.showError(err.message);
    ui.outcome.textContent = "error";
    ui.outcome.dataset.outcome = "error";
  } finally {
    stream = null;
    setControls();
  }
}

function finish(result, outcome, stage) {
  ui.outcome.textContent = outcome;
  ui.outcome.dataset.outcome = outcome;
  ui.stage.textContent = stage ? `stage: ${stage}` : "";
  ui.telemetry.textContent = JSON.stringify(result.telemetry, null, 2);
}

function render(turn, u) {
  const t = u.timeline;
  switch (u.kind) {
    case "text_delta": {
      const before = turn.sink.length;
      const started = performance.now();
      turn.textDelta(u);
      demo.renderTimes.push([before, u.text.length, performance.now() - started]);
      chart.add("provisional", t.t_ms, turn.sink.length);
      break;
    }
    case "tool_input_delta":
      turn.card(u).appendInput(u.fragment);
      break;
    case "tool_call":
      turn.card(u).update(u);
      break;
    case "committed":
      turn.commit(u.result);
      finish(u.result, u.result.outcome, null);
      chart.add("committed", t.t_ms, u.result.text.length);
      break;
    case "failed":
      turn.fail(u.outcome, u.stage, u.result);
      finish(u.result, u.outcome, u.stage);
      chart.add("committed", t.t_ms, 0);
      break;
    default:
      break;
  }
  chart.add("events", t.t_ms, t.events);
}

// --- boot ------------------------------------------------------------------------------------------------

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
  ui.bootStage.textContent = `${label}…`;
  if (stage === "start") {
    ui.bootProgress.removeAttribute("value");  // indeterminate while WebAssembly compiles
    ui.bootDetail.textContent = "";
    return;
  }
  const share = total > 0 ? Math.min(loaded / total, 1) : 0;
  ui.bootProgress.value = from + (to - from) * share;
  ui.bootDetail.textContent = total > 0
    ? `${(loaded / 1048576).toFixed(1)} / ${(total / 1048576).toFixed(1)} MB` : "";
}

function bootDone() {
  const { bootMs, versions } = client;
  clearInterval(elapsedTimer);
  demo.bootMs = bootMs;
  demo.versions = versions;
  ui.boot.dataset.state = "ready";
  ui.bootProgress.value = 100;
  ui.bootStage.textContent = `ready: Pyodide ${versions.pyodide}, Python ${versions.python}, ` +
    `webclient ${versions.webclient}`;
  ui.bootDetail.textContent = "";
  ui.bootElapsed.textContent = `booted in ${(bootMs / 1000).toFixed(1)} s`;
  const marker = document.createElement("span");
  marker.className = "ready-marker";
  marker.dataset.testid = "ready";
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

// --- pickers ---------------------------------------------------------------------------------------------

function option(value, text) {
  const element = document.createElement("option");
  element.value = value;
  element.textContent = text;
  return element;
}

function showExpected() {
  const scenario = config.scenarios.find((s) => s.slug === ui.scenario.value);
  ui.expected.textContent = scenario ? `expected outcome: ${scenario.expected}` : "";
}

async function getJSON(path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`GET ${path} answered HTTP ${response.status}`);
  return response.json();
}

async function loadConfig() {
  [config, tools] = await Promise.all([getJSON("/demo/config.json"), getJSON("/demo/tools.json")]);
  ui.route.replaceChildren(...config.routes.map((r) => option(r.route, `${r.route} (${r.default_model})`)));
  ui.scenario.replaceChildren(...config.scenarios.map((s) => option(s.slug, s.title)));
  ui.scenario.addEventListener("change", showExpected);
  showExpected();
  if (config.mode === "proxy") {
    ui.scenario.disabled = true;
    ui.mode.textContent = "Proxy mode: requests go to the real upstream; scenarios do not apply.";
  } else {
    ui.mode.textContent = "Embedded upstream: the scenario picks how the fake model answers.";
  }
  setControls();
}

ui.form.addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});
ui.prompt.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    send();
  }
});
ui.cancel.addEventListener("click", () => {
  if (stream === null) return;
  stream.cancel();
  ui.cancel.disabled = true;
});

loadConfig().catch((err) => { ui.mode.textContent = `Could not load the demo configuration: ${err.message}`; });
createClient({ onBoot: bootProgress }).then((booted) => {
  client = booted;
  bootDone();
}, (err) => bootFailed(err.message));
