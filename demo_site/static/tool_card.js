// One card per tool call, with one state model on every route:
//
//   streaming -> closed -> valid | invalid -> ready        (the attempt committed and the call is ready)
//                        \-> incomplete                    (the attempt ended first: never runnable)
//
// `data-state` on the card is that state. Until `ready` the card is styled provisional (like streaming text) and
// its Run button is disabled with the reason next to it; after one run the button stays disabled and the
// (simulated) result is shown. The arguments are shown as the model sent them, as inert text.

/** What each state means: the badge, and the line next to Run (why it is disabled, or that it is ready). */
const STATES = {
  streaming: ["Streaming", "The model is still writing this request (provisional)."],
  closed: ["Closed", "The request is written; checking its arguments."],
  valid: ["Valid", "The arguments are valid; waiting for the answer to finish."],
  invalid: ["Invalid", "The arguments are not valid for this tool, so it cannot run."],
  ready: ["Ready", "Ready to run: the arguments are valid and the answer is complete."],
  incomplete: ["Incomplete", "The answer ended before this request was complete, so it cannot run."],
};

let cards = 0;

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

export class ToolCard {
  /** @param {HTMLTemplateElement} template @param {HTMLElement} parent where the card goes */
  constructor(template, parent) {
    const n = ++cards;
    this.root = template.content.firstElementChild.cloneNode(true);
    const part = (selector) => this.root.querySelector(selector);
    this.title = part(".tool-title");
    this.name = part(".tool-name");
    this.badge = part(".tool-state");
    this.inputBox = part(".tool-input");
    this.input = document.createTextNode("");
    this.inputBox.appendChild(this.input);
    this.error = part(".tool-error");
    this.run = part(".tool-run");
    this.gate = part(".tool-gate");
    this.output = part(".tool-output");
    this.title.id = `tool-${n}-title`;
    this.gate.id = `tool-${n}-gate`;
    this.root.setAttribute("aria-labelledby", this.title.id);
    this.root.setAttribute("aria-describedby", this.gate.id);
    this.run.setAttribute("aria-describedby", this.gate.id);
    this.inputBox.setAttribute("aria-label", "Arguments as the model sent them");
    this.output.setAttribute("aria-label", "Result");
    this.arguments = null;
    this.ran = false;
    this.run.addEventListener("click", () => this._run());
    this._show("streaming");
    parent.appendChild(this.root);
  }

  get state() {
    return this.root.dataset.state;
  }

  identify(name) {
    if (name && !this.name.textContent) this.name.textContent = name;
  }

  /** A provisional fragment of the raw argument text. */
  appendInput(fragment) {
    this.input.appendData(fragment);
  }

  /** A state change reported while streaming (streaming, closed, valid or invalid; never ready). */
  update(u) {
    this.identify(u.name);
    if (u.arguments && !this.input.length) this.input.appendData(JSON.stringify(u.arguments));
    if (u.arguments) this.arguments = u.arguments;
    this._show(u.state in STATES && u.state !== "ready" ? u.state : "streaming");
  }

  /** The attempt ended. `call` is this call in the final result (or undefined); `committed` says whether the
   *  attempt committed. */
  finish(call, committed) {
    if (call) {
      this.identify(call.name);
      if (call.arguments) this.arguments = call.arguments;
      // The raw input as the result has it (a route that assembles arguments from parts shows the whole).
      if (typeof call.input === "string" && call.input && call.input !== this.input.data) this.input.data = call.input;
    }
    const state = call?.state ?? this.state;
    if (committed && call?.ready && call.state === "valid") this._show("ready");
    else if (state === "invalid") this._show("invalid");
    else if (!committed) this._show("incomplete");
    else this._show(state, "This page cannot run this request.");
  }

  _show(state, reason = null) {
    const [badge, meaning] = STATES[state] ?? [state, ""];
    this.root.dataset.state = state;
    this.badge.textContent = badge;
    this.badge.dataset.state = state;
    this.run.disabled = state !== "ready" || this.ran;
    this.error.hidden = state !== "invalid";
    this.error.textContent = state === "invalid"
      ? "Not run: the arguments are not a JSON object that matches this tool's schema." : "";
    this.gate.textContent = this.ran ? "Ran once; the result is below." : reason ?? meaning;
  }

  _run() {
    if (this.run.disabled || !this.arguments || this.ran) return;
    this.ran = true;
    const name = this.name.textContent;
    this.output.hidden = false;
    this.output.textContent = `${name}(${JSON.stringify(this.arguments)})\n→ ` +
      `${JSON.stringify(simulateTool(name, this.arguments))}   (simulated locally)`;
    this.run.textContent = "Ran";
    this.root.dataset.ran = "true";
    this._show(this.state);
  }
}
