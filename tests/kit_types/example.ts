// The README's widget, typed: compiled with `tsc --noEmit` (strict) against the kit's webclient.d.ts by
// tests/test_kit_types.py. Every `@ts-expect-error` below must be an error, so the declarations are not `any`.
import {
  createClient, version, WebclientUsageError,
  type BootProgress, type Client, type StreamOptions, type StreamResult, type StreamUpdate, type ToolCall,
} from "./webclient/webclient.mjs";

export async function chat(prompt: string, answer: HTMLElement, status: HTMLElement): Promise<StreamResult> {
  const client: Client = await createClient({ onBoot: (p: BootProgress) => { status.textContent = p.stage; },
                                              snapshot: true });
  const booted: "restored" | "made" | "none" = client.snapshot;
  void booted;
  status.textContent = `webclient ${version} on Pyodide ${client.versions.pyodide} (${client.fastPath})`;
  const controller = new AbortController();
  const options: StreamOptions = {
    route: "openai-chat", url: new URL("/v1/chat/completions", location.href), signal: controller.signal,
    body: { model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: prompt }] },
    headers: new Headers({ authorization: "Bearer not-a-real-key" }),
    tools: { get_weather: { type: "object", properties: { location: { type: "string" } } } },
    deadlines: { connect_ms: 10_000, first_event_ms: null, idle_ms: 30_000, terminal_grace_ms: 1_000 },
    limits: { max_text_chars: 1 << 20, max_item_chars: 1 << 22, max_signature_chars: 1 << 16, max_citations: 64 },
    resume: { max_resumes: 2, last_event_id: true, delay_ms: 500, max_delay_ms: 5_000 },
    keep_unknown_items: false, include_reasoning_content: true,
    onChunk: (t) => { status.textContent = `${t.chunks} chunks, ${t.bytes} bytes, ${t.events} events`; },
  };
  const stream = client.stream(options);
  for await (const update of stream) describe(update, answer);
  const result = await stream.result;
  const runnable: ToolCall[] = result.tool_calls.filter((call) => call.ready && call.arguments !== null);
  const error = result.provider_error ? `${result.provider_error.type}/${result.provider_error.code}` : "";
  status.textContent = `${result.outcome} ${result.stage ?? ""} ${error} ${runnable.length} runnable ` +
    `${result.telemetry.duration_ms} ms ${result.telemetry.retry_decision ?? ""} ${result.refusal ?? ""}`;
  stream.cancel();
  await client.close();
  return result;
}

function describe(update: StreamUpdate, answer: HTMLElement): string {
  switch (update.kind) {
    case "text_delta":
      if (update.channel === "text") answer.append(update.text);
      return `${update.channel}#${update.index} at ${update.timeline.t_ms} ms`;
    case "tool_input_delta":
      return `${update.name ?? "?"} += ${update.fragment}`;
    case "tool_call":
      return `${update.call} ${update.state} ${update.ready} ${JSON.stringify(update.arguments)}`;
    case "committed":
      return update.result.text;
    case "failed":
      return `${update.outcome} at ${update.stage}: ${update.result.telemetry.stream_outcome}`;
  }
}

export function misuses(client: Client, err: unknown): void {
  if (err instanceof WebclientUsageError) console.log(err.name === "WebclientUsageError", err.message);
  // @ts-expect-error: snapshot is a boolean
  void createClient({ snapshot: "yes" });
  // @ts-expect-error: not a route
  client.stream({ route: "openai-chatt", url: "/v1/chat/completions" });
  // @ts-expect-error: url is required
  client.stream({ route: "gemini" });
  // @ts-expect-error: not a deadline
  client.stream({ route: "gemini", url: "/x", deadlines: { idle: 5 } });
  // @ts-expect-error: resume delays are numbers of milliseconds
  client.stream({ route: "gemini", url: "/x", resume: { delay_ms: "1s" } });
  // @ts-expect-error: not a resume option
  client.stream({ route: "gemini", url: "/x", resume: { retries: 2 } });
  // @ts-expect-error: keep_unknown_items is a boolean
  client.stream({ route: "gemini", url: "/x", keep_unknown_items: "yes" });
  // @ts-expect-error: the terminal grace is milliseconds or null
  client.stream({ route: "gemini", url: "/x", deadlines: { terminal_grace_ms: "1s" } });
  // @ts-expect-error: headers are strings
  client.stream({ route: "gemini", url: "/x", headers: { "x-n": 1 } });
  // @ts-expect-error: the result is a promise, not a result
  const outcome: string = client.stream({ route: "gemini", url: "/x" }).result.outcome;
  void outcome;
}

export function narrowing(update: StreamUpdate): void {
  // @ts-expect-error: only text_delta has text
  void update.text;
  if (update.kind === "failed") {
    // @ts-expect-error: a failed attempt is never "complete"
    const complete: "complete" = update.outcome;
    void complete;
  }
}
