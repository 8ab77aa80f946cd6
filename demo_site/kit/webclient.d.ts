// Types of the webclient widget kit (webclient.mjs). The update and result objects are the Python library's own
// `Update.to_dict()` and `StreamResult.to_dict()`, passed through verbatim; their keys are listed here.

/** The webclient version this kit carries. */
export declare const version: string;

/** A caller bug (bad options, a stream iterated twice, a closed client). Its message is one line. */
export declare class WebclientUsageError extends Error {
  readonly name: "WebclientUsageError";
}

export type Route = "openai-chat" | "openai-responses" | "anthropic-messages" | "gemini";

/** How an attempt ended: exactly one of these, always (never an exception for a bad stream). */
export type Outcome =
  | "complete" | "truncated" | "protocol_error" | "decode_error" | "payload_error" | "buffer_limit"
  | "upstream_error" | "timeout" | "cancelled";

export type JSONValue = string | number | boolean | null | JSONValue[] | { [key: string]: JSONValue };
export type JSONObject = { [key: string]: JSONValue };

// --- booting -----------------------------------------------------------------------------------------------------

export interface BootProgress {
  /** "download": bytes of the runtime files so far (`loaded` of `total`, decompressed; the wasm streams into
   *  compilation and is not counted); "start": Python initialising;
   *  "import": webclient loading. The createClient promise resolves after the last. */
  stage: "download" | "start" | "import";
  loaded: number;
  total: number;
}

export interface CreateClientOptions {
  /** Called with boot progress; an exception it throws is reported (reportError) and ignored. */
  onBoot?: (progress: BootProgress) => void;
  /** Default true: keep a memory snapshot of the booted Python (about 16 MB) in this origin's Cache Storage, one per
   *  kit version, and boot from it next time, several times faster than from scratch. false: never read or write
   *  one. Without Cache Storage (a non-secure origin) the kit boots from scratch either way. */
  snapshot?: boolean;
}

/** Boot Pyodide and webclient in a Web Worker. Rejects with WebclientUsageError for bad options, or an Error named
 *  "WebclientBootError" if the runtime cannot start. */
export declare function createClient(options?: CreateClientOptions): Promise<Client>;

export interface Client {
  /** Versions running in the worker. */
  readonly versions: { pyodide: string; python: string; webclient: string };
  /** How `fast: true` reads: "module" (the kit's static pump, no eval), "eval" or "pull" (the pull loop). */
  readonly fastPath: "module" | "eval" | "pull";
  /** Milliseconds the worker took to boot Pyodide and import webclient. */
  readonly bootMs: number;
  /** "restored": booted from the snapshot an earlier boot stored; "made": booted from scratch, and storing a snapshot
   *  for the next boot; "none": booted from scratch without one. */
  readonly snapshot: "restored" | "made" | "none";
  /** Start one attempt. Never throws: bad options reject `result` (and the iteration) with WebclientUsageError. */
  stream(options: StreamOptions): WebclientStream;
  /** Cancel running attempts, wait for their results, stop the worker. Later `stream()` calls are usage errors. */
  close(): Promise<void>;
}

// --- one attempt -------------------------------------------------------------------------------------------------

/** Deadlines in milliseconds; a missing key keeps the default, `null` disables that deadline. */
export interface Deadlines {
  connect_ms?: number | null;
  first_event_ms?: number | null;
  idle_ms?: number | null;
  total_ms?: number | null;
  /** Once the route's terminal condition arrived with nothing pending, end the attempt `complete` this long after
   *  the last bytes if the body has not ended (a proxy holding the socket open); the connection is then closed.
   *  Default 1000; `null` waits for the end of the body (or another deadline). */
  terminal_grace_ms?: number | null;
}

/** Continue a cut stream with follow-up requests (the Python library's ResumePolicy). A Responses stream resumes
 *  from its last sequence number (request it with `background: true`); with `last_event_id`, any SSE stream that
 *  sent `id:` lines is asked again with `Last-Event-ID`. */
export interface ResumeOptions {
  /** Follow-up requests allowed (default 0: none). */
  max_resumes?: number;
  /** Also reconnect generic SSE streams with `Last-Event-ID` (default false). */
  last_event_id?: boolean;
  /** Wait before the first resume when the server sent no `retry:` (doubling after each; default 1000). */
  delay_ms?: number;
  /** Cap on that wait (default 30000). */
  max_delay_ms?: number;
}

/** Ceilings (positive integers); a missing key keeps the library's default (webclient/_limits.py). The kit
 *  accepts exactly the ceilings of the webclient it loaded (an unknown name is a WebclientUsageError). */
export interface Limits {
  max_line_chars?: number;
  max_event_chars?: number;
  max_text_chars?: number;
  max_tool_input_chars?: number;
  max_tool_calls?: number;
  max_blocks?: number;
  /** Characters of provider objects kept verbatim per response (items, opaque blocks, citations, logprobs). */
  max_item_chars?: number;
  /** Characters of opaque reasoning signatures kept per response. */
  max_signature_chars?: number;
  /** Citations / annotations per response. */
  max_citations?: number;
  [ceiling: string]: number | undefined;
}

export interface StreamOptions {
  route: Route;
  /** The endpoint; relative URLs are resolved against the page. */
  url: string | URL;
  /** A string is sent as is; an object or array as JSON (with content-type application/json). */
  body?: string | JSONObject | JSONValue[] | null;
  headers?: Record<string, string> | Headers;
  /** Default "POST". */
  method?: string;
  /** Tool name -> JSON Schema of its arguments: a call is `ready` only if valid and the response complete. */
  tools?: Record<string, JSONObject>;
  deadlines?: Deadlines;
  limits?: Limits;
  /** Follow-up requests that continue a cut stream into the same answer (default: none). */
  resume?: ResumeOptions;
  /** Replaces the route's rule of which stop reasons commit. */
  accepted_stop_reasons?: string[];
  utf8_errors?: "strict" | "replace";
  /** Recorded (sanitized) in the telemetry. */
  request_id?: string;
  model_alias?: string;
  /** For the retry advice recorded in the telemetry: which attempt this is (1, 2, ...) and whether it may repeat. */
  attempt?: number;
  idempotent?: boolean;
  /** Keep an item / block / part / delta type the route does not know verbatim in `items` instead of failing the
   *  attempt (`protocol_error`, stage `unknown_type`). It may carry content or a call you must act on: opt in only
   *  if you inspect `items`. Default false. */
  keep_unknown_items?: boolean;
  /** openai-chat only: `assistant_message` carries `reasoning_content` (servers such as DeepSeek want it back
   *  with tool calls). Default false. */
  include_reasoning_content?: boolean;
  /** Default true: the static JS pump (works under script-src 'self' 'wasm-unsafe-eval'); false: the pull loop. */
  fast?: boolean;
  /** Aborting it cancels the attempt (outcome "cancelled"). */
  signal?: AbortSignal;
  /** Called once per transport chunk; an exception it throws is reported and ignored. */
  onChunk?: (timeline: Timeline) => void;
}

/** An attempt: async-iterate its updates (one consumer; leaving the loop early does not cancel) and await its
 *  result, which resolves for every outcome and rejects only for a bug: the caller's (WebclientUsageError) or
 *  webclient's own (an Error named "WebclientError"). */
export interface WebclientStream extends AsyncIterable<StreamUpdate> {
  readonly result: Promise<StreamResult>;
  /** Stop the attempt (outcome "cancelled"); no effect once it has ended. */
  cancel(): void;
}

/** Where the attempt stood when an update was made. */
export interface Timeline {
  /** Milliseconds since the attempt started. */
  t_ms: number;
  /** Transport chunks and body bytes received. */
  chunks: number;
  bytes: number;
  /** Complete SSE events consumed. */
  events: number;
}

// --- updates -----------------------------------------------------------------------------------------------------

/** Provisional text: display it, never act on it (only `committed` is evidence that the answer is usable). */
export interface TextDeltaUpdate {
  kind: "text_delta";
  channel: "text" | "refusal" | "reasoning";
  /** The choice (Chat), block (Anthropic), output item (Responses) or candidate (Gemini). */
  index: number;
  text: string;
  timeline: Timeline;
}

/** A provisional, inert fragment of a tool call's raw input (display only). */
export interface ToolInputDeltaUpdate {
  kind: "tool_input_delta";
  call: number;
  id: string | null;
  name: string | null;
  fragment: string;
  timeline: Timeline;
}

export type ToolCallState = "streaming" | "closed" | "valid" | "invalid";

/** A tool call changed state. `ready` becomes true only at commit. */
export interface ToolCallUpdate {
  kind: "tool_call";
  call: number;
  id: string | null;
  name: string | null;
  state: ToolCallState;
  arguments: JSONObject | null;
  ready: boolean;
  timeline: Timeline;
}

/** Final: the attempt is complete and its output committed. */
export interface CommittedUpdate {
  kind: "committed";
  result: StreamResult;
  timeline: Timeline;
}

/** Final: any other outcome. Nothing is committed; no tool call is ready. */
export interface FailedUpdate {
  kind: "failed";
  outcome: Exclude<Outcome, "complete">;
  /** The check or transport stage that decided the outcome ("network", "idle", "stop_reason", ...). */
  stage: string;
  result: StreamResult;
  timeline: Timeline;
}

export type StreamUpdate = TextDeltaUpdate | ToolInputDeltaUpdate | ToolCallUpdate | CommittedUpdate | FailedUpdate;

// --- the result --------------------------------------------------------------------------------------------------

/** Calls the client must execute. Hosted tools are `items`, never tool calls. */
export type ToolCallKind =
  | "function" | "custom" | "computer" | "local_shell" | "shell" | "apply_patch" | "mcp_approval"
  | "tool_search";

export interface ToolCall {
  id: string | null;
  name: string | null;
  state: ToolCallState;
  /** The parsed argument object once the input closed and parsed to an object, else null. */
  arguments: JSONObject | null;
  /** Valid and the attempt complete: the only state in which the call may be run. */
  ready: boolean;
  // From the provider-vocabulary work (present once it lands):
  /** Position of the call in the attempt. */
  call?: number;
  kind?: ToolCallKind;
  /** The raw accumulated input text. */
  input?: string;
}

export interface ProviderError {
  /** e.g. "overloaded_error"; sanitized, never the provider's message. */
  type: string | null;
  code: string | null;
}

/** The sanitized telemetry record: counts, sizes and states, never content. */
export interface Telemetry {
  observed_at: string | number | null;
  request_id: string | null;
  route: string;
  model_alias: string | null;
  http_status: number | null;
  content_type_valid: boolean | null;
  chunk_count: number;
  bytes_received: number;
  decoded_character_count: number;
  complete_sse_event_count: number;
  pending_line_character_count: number;
  pending_event_character_count: number;
  open_payload_accumulator_count: number;
  terminal_condition_seen: boolean;
  stop_reason: string | null;
  stream_outcome: Outcome;
  buffer_limit_stage: string | null;
  retry_decision: "retry_after_backoff" | "do_not_retry" | "surface_to_user" | null;
  duration_ms: number | null;
}

/** One choice (Chat n>1) or candidate (Gemini); the single message on other routes. */
export interface ChoiceResult {
  index: number;
  text: string;
  refusal: string;
  reasoning: string;
  stop_reason: string | null;
  tool_calls: ToolCall[];
  // From the provider-vocabulary work (present once it lands), per choice as on the result:
  items?: JSONObject[];
  citations?: JSONObject[];
  logprobs?: JSONValue | null;
  assistant_message?: JSONObject | null;
}

/** Python's StreamResult.to_dict(), verbatim. Accumulated fields are provisional unless `committed`. */
export interface StreamResult {
  outcome: Outcome;
  /** The check that decided a non-complete outcome; null when complete. */
  stage: string | null;
  stop_reason: string | null;
  committed: boolean;
  /** Choice 0's (or the message's) text: trust it only when `committed`. */
  text: string;
  tool_calls: ToolCall[];
  telemetry: Telemetry;
  // The full serializer's keys (interfaces.md); optional until the provider-vocabulary work lands them:
  route?: Route;
  http_status?: number | null;
  refusal?: string;
  reasoning?: string;
  usage?: JSONObject | null;
  provider_error?: ProviderError | null;
  choices?: ChoiceResult[];
  /** Hosted-tool result items (web_search_call, *_tool_result, ...): never runnable. */
  items?: JSONObject[];
  /** The route-native assistant turn to send back with the next request. */
  assistant_message?: JSONObject | null;
  response_id?: string | null;
  model?: string | null;
  citations?: JSONObject[];
  /** Chat only. */
  logprobs?: JSONValue | null;
  // From the resume work: where an interrupted Responses stream can be resumed.
  resume?: { response_id: string; sequence_number: number } | null;
  /** Anthropic's message-level facts, verbatim: stop_sequence, stop_details (a refusal's category and
   *  explanation), container, context_management; null when there are none and on other routes. */
  details?: JSONObject | null;
}
