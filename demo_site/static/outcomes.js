// Plain-language outcomes: for every way an attempt can end (its outcome, and within it the stage, the stop
// reason, the HTTP status, the provider's error), one sentence a person who is not a developer understands, and
// the technical facts behind it for the "Technical details" disclosure. Pure functions over the kit's result
// object (webclient.d.ts StreamResult); nothing here touches the DOM.

/** What each route's stop reasons mean (the library's per-route allow-lists, webclient/_routes/*.py
 *  STOP_REASONS; the e2e tests check this table against them). A reason in no list never commits. */
export const STOP_CATEGORIES = {
  "openai-chat": {
    success: ["stop", "tool_calls", "function_call"],
    length: ["length", "model_length"],
    filter: ["content_filter"],
    failure: ["insufficient_system_resource", "error", "abort", "repetition"],
  },
  "openai-responses": {
    success: ["completed"],
    length: ["max_output_tokens", "max_messages", "steered", "incomplete"],
    filter: ["content_filter"],
    failure: ["failed", "cancelled"],
  },
  "anthropic-messages": {
    success: ["end_turn", "stop_sequence", "tool_use", "pause_turn", "refusal", "compaction"],
    length: ["max_tokens", "model_context_window_exceeded"],
    filter: [],
    failure: [],
  },
  gemini: {
    success: ["STOP"],
    length: ["MAX_TOKENS"],
    filter: ["SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
      "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
      // promptFeedback.blockReason (the prompt itself was refused)
      "BLOCK_REASON_UNSPECIFIED", "BLOCKED_REASON_UNSPECIFIED", "OTHER"],
    failure: ["FINISH_REASON_UNSPECIFIED", "OTHER", "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL",
      "TOO_MANY_TOOL_CALLS", "MISSING_THOUGHT_SIGNATURE", "MALFORMED_RESPONSE", "NO_IMAGE", "IMAGE_OTHER"],
  },
};

/** "success" | "length" | "filter" | "failure" | null (unknown) for `reason` on `route`. */
export function stopCategory(route, reason) {
  const table = STOP_CATEGORIES[route];
  if (!table || reason == null) return null;
  for (const category of ["success", "length", "filter", "failure"]) {
    if (table[category].includes(reason)) return category;
  }
  return null;
}

/** Refusals of a response before any answer (the response gate: a non-200 status), in words. */
const HTTP_STATUS = {
  400: "the service rejected the request as invalid",
  401: "the service refused the request because it is not signed in",
  403: "the service refused access to this request",
  404: "the service address was not found",
  408: "the server gave up waiting for the request",
  413: "the request was too large for the server",
  429: "too many requests were sent; the service asked to slow down",
  500: "the AI service had an internal error",
  502: "a gateway between this page and the AI service failed",
  503: "the AI service is temporarily unavailable",
  504: "a gateway timed out waiting for the AI service",
  524: "the AI service took too long to respond",
  529: "the AI service is overloaded",
};

function statusWords(status) {
  if (HTTP_STATUS[status]) return HTTP_STATUS[status];
  if (status >= 500) return "the server had a problem";
  if (status >= 400) return "the service refused the request";
  return "the server answered with something other than an answer";
}

/** A provider's error type/code (sanitized tokens such as "overloaded_error", "UNAVAILABLE") in words. */
function providerWords(error) {
  const token = `${error?.type ?? ""} ${error?.code ?? ""}`.toLowerCase();
  if (/overload|unavailable|capacity/.test(token)) return "it is overloaded right now";
  if (/rate_limit|resource_exhausted|quota/.test(token)) return "it has received too many requests";
  if (/timeout|deadline/.test(token)) return "it ran out of time";
  if (/invalid|bad_request/.test(token)) return "it could not accept the request";
  if (/server_error|api_error|internal/.test(token)) return "it had an internal error";
  return null;
}

const seconds = (ms) => {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
};

/** The sentence for an attempt that did not complete. `deadlines` (ms) are the ones the attempt ran with. */
function failureSentence(result, deadlines) {
  const { outcome, stage } = result;
  const status = result.http_status ?? result.telemetry?.http_status;
  switch (outcome) {
    case "cancelled":
      return "You stopped the answer.";
    case "truncated": {
      if (stage === "stop_reason") {
        const category = stopCategory(result.route, result.stop_reason);
        if (category === "length") {
          return "The answer is incomplete: the model reached its maximum length and stopped mid-answer.";
        }
        if (category === "filter") return "The answer is incomplete: the provider's content filter stopped it.";
        return "The model stopped in a way this page is set not to accept, so the answer was not saved.";
      }
      if (stage === "network") return "The connection was lost before the answer finished.";
      if (stage === "eof") return "The server closed the connection before the answer finished.";
      if (stage === "missing_stop") {
        return "The reply ended without saying the answer was finished, so it may be incomplete.";
      }
      if (stage?.startsWith("pending_")) {
        return "The connection closed in the middle of a message, so the answer is incomplete.";
      }
      return "The answer ended early and is incomplete.";
    }
    case "protocol_error":
      if (stage === "status" && status) {
        const words = statusWords(status);
        return `No answer: ${words} (HTTP ${status}).`;
      }
      if (stage === "media_type") {
        return "No answer: the server replied in a format this chat cannot read (a finished document instead of a " +
          "live stream).";
      }
      if (stage === "unrecognized_stop") {
        return "The model stopped for a reason this page does not recognise, so the answer was not accepted.";
      }
      if (stage === "sequence_gap" || stage === "sequence_order") {
        return "Part of the answer went missing or arrived out of order on the way, so it was rejected.";
      }
      return "The server's reply broke the rules of this service's format, so it was rejected.";
    case "decode_error":
      return "The reply contained garbled characters (not valid text), so it was rejected.";
    case "payload_error":
      if (stage?.startsWith("tool")) {
        return "The model asked to use a tool but sent malformed instructions, so nothing was run.";
      }
      return "Part of the reply was malformed, so the answer was rejected.";
    case "buffer_limit":
      if (stage === "line" || stage === "event") {
        return "One message in the reply kept growing without end, so the page stopped it at its size limit.";
      }
      if (stage === "text") return "The answer grew beyond this page's size limit, so it was stopped.";
      if (stage?.startsWith("tool")) return "A tool request grew beyond this page's size limit, so it was stopped.";
      return "The reply grew beyond this page's size limits, so it was stopped.";
    case "upstream_error": {
      if (stage === "error_stop") return "The AI service stopped with an error before finishing the answer.";
      const words = providerWords(result.provider_error);
      return words ? `The AI service reported an error while answering: ${words}.`
        : "The AI service reported an error while answering.";
    }
    case "timeout": {
      const limit = deadlines?.[`${stage}_ms`];
      const after = limit ? ` within ${seconds(limit)}` : " in time";
      if (stage === "connect") return `Could not reach the server${after}.`;
      if (stage === "first_event") return `The server did not start answering${after}.`;
      if (stage === "idle") {
        return `The answer stalled: nothing arrived for ${limit ? seconds(limit) : "too long"}, so the page ` +
          "stopped waiting.";
      }
      if (stage === "total") return `The answer took longer than the ${limit ? seconds(limit) : "time"} limit.`;
      return "A time limit passed before the answer finished.";
    }
    default:
      return "The answer did not finish.";
  }
}

/** Whether a complete answer is the model declining: a refusal channel's text (Chat, Responses), or Anthropic's
 * `refusal` stop reason (its text, if any, is the answer; `details.stop_details` says why). */
function declined(result) {
  return Boolean(result.refusal) || result.stop_reason === "refusal";
}

function completeSentence(result) {
  if (declined(result)) return "The model declined to answer this request.";
  const calls = result.tool_calls?.length ?? 0;
  if (calls) {
    const [what, them] = calls === 1 ? ["a tool", "it"] : [`${calls} tools`, "them"];
    return `The answer is complete and verified. The model asked to use ${what}; you can run ${them} below.`;
  }
  return "The answer is complete and verified.";
}

/**
 * Everything the page says about how an attempt ended.
 * @param {object} result the kit's result object
 * @param {{deadlines?: object, shownText?: boolean}} context what the attempt ran with and showed
 * @returns {{sentence: string, label: string, tone: string, retry: boolean, technical: Array<[string, string]>}}
 */
/** Appended to the sentence when the retry advice allows another attempt (and taken off once it was retried). */
export const RETRY_NOTE = " You can try again.";

export function describeOutcome(result, { deadlines = {}, shownText = false } = {}) {
  const telemetry = result.telemetry ?? {};
  const retry = telemetry.retry_decision === "retry_after_backoff";
  let sentence;
  let label;
  let tone;
  if (result.outcome === "complete") {
    sentence = completeSentence(result);
    label = declined(result) ? "✓ Complete · the model declined" : "✓ Complete · verified and committed";
    tone = "ok";
  } else {
    sentence = failureSentence(result, deadlines);
    if (result.outcome === "cancelled") {
      label = shownText ? "■ Stopped — not committed" : "■ Stopped before any answer";
      tone = "stopped";
      if (shownText) sentence += " The text so far stays, marked “not committed”: it was never verified.";
    } else {
      label = shownText ? "⚠ Incomplete — not committed" : "⚠ No answer";
      tone = "failed";
      if (shownText) sentence += " The text so far is kept for reference but was never verified.";
    }
    if (retry) sentence += RETRY_NOTE;
    else if (result.outcome === "truncated" && result.stage === "stop_reason") {
      sentence += " Trying again would most likely stop at the same place.";
    }
  }
  const status = result.http_status ?? telemetry.http_status;
  const error = result.provider_error;
  const technical = [
    ["Outcome", result.outcome],
    ["Stage", result.stage ?? "—"],
    ["Stop reason", result.stop_reason ?? "—"],
    ["HTTP status", status == null ? "—" : String(status)],
    ["Provider error", error ? [error.type, error.code].filter(Boolean).join(" / ") || "—" : "—"],
    ["Retry advice", telemetry.retry_decision ?? "—"],
    ["Request id", telemetry.request_id ?? "—"],
  ];
  const stopDetails = result.details?.stop_details;
  if (stopDetails) technical.splice(3, 0, ["Refusal category", stopDetails.category ?? "—"]);
  return { sentence, label, tone, retry, technical };
}
