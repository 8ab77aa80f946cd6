import { createClient } from "../webclient/webclient.mjs";

const [form, answer, status, toolBox] = ["form", "#answer", "#status", "#tools"].map((s) => document.querySelector(s));
const [send, stop] = form.querySelectorAll("button");
const knobs = new URLSearchParams(location.search);  // the demo's own: ?endpoint=ORIGIN&scenario=NAME
const url = new URL("/v1/chat/completions", knobs.get("endpoint") ?? location.href);
const headers = { "x-demo-scenario": knobs.get("scenario") ?? "plain" };
const tools = { get_weather: { type: "object", properties: { location: { type: "string" } }, required: ["location"] } };
const button = (name) => toolBox.appendChild(Object.assign(document.createElement("button"), { disabled: true,
                                                                                               textContent: name }));
const client = await createClient({ onBoot: (p) => { status.textContent = `Loading Python: ${p.stage}…`; } });
let stream = null;
[status.textContent, send.disabled, stop.onclick] = ["Ready.", false, () => stream?.cancel()];
form.onsubmit = async (event) => {
  event.preventDefault();
  [answer.textContent, send.disabled, toolBox.textContent] = ["", true, ""];
  const body = { model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: form.prompt.value }] };
  stream = client.stream({ route: "openai-chat", url, headers, tools, body });
  const buttons = [];  // one Run button per tool call: disabled until the call is ready
  for await (const update of stream) {
    if (update.kind === "text_delta") answer.append(update.text);  // provisional: may still be withdrawn
    if (update.kind === "tool_call") buttons[update.call] ??= button(`Run ${update.name}`);
  }
  const result = await stream.result;  // resolves for every outcome: complete, truncated, cancelled, ...
  result.tool_calls.forEach((call, i) => Object.assign(buttons[i] ??= button(`Run ${call.name}`), {
    disabled: !call.ready, onclick: () => { status.textContent = `${call.name}(${JSON.stringify(call.arguments)})`; } }));
  if (result.refusal) answer.textContent = `Refused: ${result.refusal}`;
  else if (!result.committed) answer.textContent = `(withdrawn, never committed) ${answer.textContent}`;
  const error = result.provider_error ? ` (${result.provider_error.type}: ${result.provider_error.code})` : "";
  [status.textContent, send.disabled] = [`${result.outcome}${error}`, false];
};
