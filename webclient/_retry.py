"""Retry advice, kept apart from parsing: what to do after one attempt ended.

:func:`advise_retry` looks at how the attempt ended (its outcome, stage, HTTP status and, when the
result carries one, the provider's sanitized error type/code) and at what the caller already did
(showed provisional text, ran tools, whether repeating the request is safe, which attempt this
was). It returns a :class:`RetryAdvice`: a decision from :class:`RetryDecision` and a short fixed
reason. Each reason belongs to exactly one decision and matches ``[a-z_]{1,32}``, so the reason
alone can go into the telemetry field ``retry_decision``.

How the advice is reached, in this order:

1. **Classify the ending** with the tables below (one place): ``complete`` and ``cancelled`` are
   final; then a known provider error type/code; then a non-200 HTTP status; then
   ``(outcome, stage)``; then the outcome alone.
2. **Side effects.** A retry is only advised when it cannot repeat an effect the caller did not
   declare safe. With ``idempotent=False``:

   * ``tools_run`` -> ``surface_to_user`` / ``tools_run``: tools ran on this attempt's output, and a
     retry would produce (and perhaps run) new calls;
   * otherwise the request may have acted on the server (stored a response, run a server tool,
     been billed) as soon as it reached the server, so the only retryable endings are HTTP
     statuses that say the request was *refused* before processing (429, 503, 529); anything else
     -> ``surface_to_user`` / ``not_idempotent``.

   Showing provisional text is not a side effect: it was marked provisional, so with
   ``idempotent=True`` a retry is still advised and ``discard_shown_text`` tells the caller to
   withdraw what it showed before the new attempt streams. (For a non-idempotent request, text
   proves the server processed it, which rule 2 already covers.) Plain generation is safe to
   repeat (it only costs tokens): callers pass ``idempotent=True`` unless the request has
   server-side effects.
3. **Attempts.** ``attempt`` is the 1-based number of the attempt that just ended; a retry is
   advised only while ``attempt < max_attempts``, else ``surface_to_user`` /
   ``attempts_exhausted``.

There is no "retry at once" decision: every transient cause here is either load (429, 5xx,
overloaded, timeouts: backing off is what the provider asks for) or a cut stream (a short backoff
costs little and avoids hammering a gateway that is cutting streams). The caller owns the delay
(exponential with jitter; honour ``Retry-After`` when it has one). Pure logic: no clock, no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final, Protocol

from ._errors import UsageError
from ._outcome import Outcome


class RetryDecision(enum.Enum):
    """What to do after an attempt. ``value`` is the telemetry spelling."""

    #: Send the same request again, after a backoff delay.
    RETRY_AFTER_BACKOFF = "retry_after_backoff"
    #: The attempt's result stands (it completed, the caller cancelled, or the stop is
    #: deterministic so a retry would end the same way). Nothing to retry, nothing to alarm.
    DO_NOT_RETRY = "do_not_retry"
    #: The attempt failed and automatic retry is unsafe (possible side effects) or futile (the
    #: request or the response is broken, or the attempts are used up): show the failure so a person
    #: or the caller's policy decides (resend, change the request, send the error to the model).
    SURFACE_TO_USER = "surface_to_user"


@dataclass(frozen=True, slots=True)
class RetryAdvice:
    """One piece of advice. ``reason`` is a fixed short string (``[a-z_]{1,32}``) naming the cause."""

    decision: RetryDecision
    reason: str
    #: True when the advice is to retry and provisional text was shown: withdraw it first.
    discard_shown_text: bool = False


class AttemptResult(Protocol):
    """What :func:`advise_retry` reads from a result (``StreamResult`` has all three).

    If the object also has ``provider_error`` with ``type``/``code`` strings (``StreamResult``
    does), a known error type/code refines the advice.
    """

    @property
    def outcome(self) -> Outcome: ...

    @property
    def stage(self) -> str | None: ...

    @property
    def http_status(self) -> int | None: ...


_BACKOFF: Final = RetryDecision.RETRY_AFTER_BACKOFF
_DONE: Final = RetryDecision.DO_NOT_RETRY
_SURFACE: Final = RetryDecision.SURFACE_TO_USER
_Rule = tuple[RetryDecision, str]

# -- the decision table ------------------------------------------------------------------------

#: Outcomes that settle the question before anything else is looked at.
_FINAL: Final[dict[Outcome, _Rule]] = {
    Outcome.COMPLETE: (_DONE, "complete"),
    Outcome.CANCELLED: (_DONE, "cancelled"),  # the caller's own decision
}

#: Provider error types/codes (``provider_error.type`` then ``.code``; numeric codes are looked up
#: in ``_BY_STATUS``). Anthropic: ``overloaded_error`` (HTTP 529), ``rate_limit_error``,
#: ``api_error`` (500), ``timeout_error``; OpenAI: ``server_error``, ``rate_limit_exceeded``;
#: Gemini statuses; CometAPI: a ``code: invalid_request`` is not transient even on HTTP 500.
#: Other types (``invalid_request_error``, ``insufficient_quota`` ...) fall through to the outcome.
_BY_PROVIDER_ERROR: Final[dict[str, _Rule]] = {
    "overloaded_error": (_BACKOFF, "upstream_overloaded"),
    "UNAVAILABLE": (_BACKOFF, "upstream_overloaded"),
    "rate_limit_error": (_BACKOFF, "upstream_rate_limited"),
    "rate_limit_exceeded": (_BACKOFF, "upstream_rate_limited"),
    "RESOURCE_EXHAUSTED": (_BACKOFF, "upstream_rate_limited"),
    "api_error": (_BACKOFF, "upstream_server_error"),
    "server_error": (_BACKOFF, "upstream_server_error"),
    "INTERNAL": (_BACKOFF, "upstream_server_error"),
    "timeout_error": (_BACKOFF, "upstream_timeout"),
    "DEADLINE_EXCEEDED": (_BACKOFF, "upstream_timeout"),
    "insufficient_quota": (_SURFACE, "request_rejected"),
    "invalid_request": (_SURFACE, "request_rejected"),
}

#: Non-200 response statuses (the gate refused the response). CometAPI's retry guidance: 429, 500,
#: 502, 503, 504 and 524 (Cloudflare "a timeout occurred"); 529 is Anthropic's "overloaded".
_BY_STATUS: Final[dict[int, _Rule]] = {
    429: (_BACKOFF, "rate_limited"),
    500: (_BACKOFF, "server_error"),
    502: (_BACKOFF, "bad_gateway"),
    503: (_BACKOFF, "unavailable"),
    504: (_BACKOFF, "gateway_timeout"),
    524: (_BACKOFF, "origin_timeout"),
    529: (_BACKOFF, "overloaded"),
}
_CLIENT_ERROR: Final[_Rule] = (_SURFACE, "client_error")  # any other 4xx: fix the request
_OTHER_STATUS: Final[_Rule] = (_SURFACE, "unexpected_status")  # 1xx/2xx/3xx (a 301 to HTML ...)

#: Statuses that say the request was refused before processing, so even a non-idempotent request
#: had no effect and may be retried.
_REFUSED_STATUSES: Final = frozenset({429, 503, 529})

#: ``(outcome, stage)`` refinements of the outcome rows below.
_BY_STAGE: Final[dict[tuple[Outcome, str], _Rule]] = {
    # the stream ended with a stop reason the caller does not accept (length, content filter):
    # the same request stops the same way
    (Outcome.TRUNCATED, "stop_reason"): (_DONE, "limit_stop"),
    # the transport failed (connection refused or reset, a broken chunked body)
    (Outcome.TRUNCATED, "network"): (_BACKOFF, "network_error"),
    # an event went missing or came twice on the way (a proxy, a resume that skipped one); rejected before it
    # was consumed, so the stream (or a resume of it) can simply be fetched again
    (Outcome.PROTOCOL_ERROR, "sequence_gap"): (_BACKOFF, "sequence_break"),
    (Outcome.PROTOCOL_ERROR, "sequence_order"): (_BACKOFF, "sequence_break"),
    (Outcome.TIMEOUT, "connect"): (_BACKOFF, "connect_timeout"),
    (Outcome.TIMEOUT, "first_event"): (_BACKOFF, "first_event_timeout"),
    (Outcome.TIMEOUT, "idle"): (_BACKOFF, "idle_timeout"),
    # the answer is longer than the budget: a retry repeats the cost and most likely the cut
    (Outcome.TIMEOUT, "total"): (_SURFACE, "total_timeout"),
}

#: One row per outcome (the fallback).
_BY_OUTCOME: Final[dict[Outcome, _Rule]] = {
    **_FINAL,
    # EOF before the terminal condition, pending bytes/line/event, a terminal without a stop
    # reason: the connection or a gateway cut the stream
    Outcome.TRUNCATED: (_BACKOFF, "truncated"),
    Outcome.TIMEOUT: (_BACKOFF, "timeout"),
    # an in-stream provider error not known to be transient
    Outcome.UPSTREAM_ERROR: (_SURFACE, "upstream_error"),
    # a 200 response that is not a valid stream (wrong media type, broken envelope, bad order)
    Outcome.PROTOCOL_ERROR: (_SURFACE, "protocol_error"),
    Outcome.DECODE_ERROR: (_SURFACE, "decode_error"),
    # the model's tool input is invalid: send the problem back to the model in a new request
    Outcome.PAYLOAD_ERROR: (_SURFACE, "payload_error"),
    # the response outgrew a configured ceiling: the same request grows the same way
    Outcome.BUFFER_LIMIT: (_SURFACE, "buffer_limit"),
}

_NOT_IDEMPOTENT: Final[_Rule] = (_SURFACE, "not_idempotent")
_TOOLS_RUN: Final[_Rule] = (_SURFACE, "tools_run")
_EXHAUSTED: Final[_Rule] = (_SURFACE, "attempts_exhausted")


def _provider_rule(result: AttemptResult) -> _Rule | None:
    error = getattr(result, "provider_error", None)
    for token in (getattr(error, "type", None), getattr(error, "code", None)):
        if not isinstance(token, str):
            continue
        rule = _BY_PROVIDER_ERROR.get(token)
        if rule is None and token.isdigit() and len(token) == 3:
            rule = _BY_STATUS.get(int(token))
        if rule is not None:
            return rule
    return None


def _classify(result: AttemptResult) -> _Rule:
    """Step 1: the ending alone, looked up in the tables above."""
    outcome = result.outcome
    if outcome in _FINAL:
        return _FINAL[outcome]
    rule = _provider_rule(result)
    if rule is not None:
        return rule
    status = result.http_status
    if status is not None and status != 200:
        return _BY_STATUS.get(status) or (_CLIENT_ERROR if 400 <= status < 500 else _OTHER_STATUS)
    stage = result.stage
    return (_BY_STAGE.get((outcome, stage)) if stage is not None else None) or _BY_OUTCOME[outcome]


def check_count(name: str, count: object) -> int:
    """``count`` if it is a positive integer (an attempt number, a maximum), else ``UsageError``."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise UsageError(f"{name} must be a positive integer")
    return count


def advise_retry(result: AttemptResult, *, text_shown: bool, tools_run: bool, idempotent: bool, attempt: int,
                 max_attempts: int = 3) -> RetryAdvice:
    """Advise what to do after the attempt that produced ``result`` (see the module docstring).

    Raises :class:`~webclient.UsageError` when ``result.outcome`` is not an :class:`Outcome`, a
    flag is not a ``bool``, or ``attempt``/``max_attempts`` is not a positive integer.
    """
    if not isinstance(result.outcome, Outcome):
        raise UsageError("result.outcome must be an Outcome")
    for name, flag in (("text_shown", text_shown), ("tools_run", tools_run), ("idempotent", idempotent)):
        if not isinstance(flag, bool):
            raise UsageError(f"{name} must be a bool")
    check_count("attempt", attempt)
    check_count("max_attempts", max_attempts)
    decision, reason = _classify(result)
    if decision is _BACKOFF and not idempotent:
        if tools_run:
            decision, reason = _TOOLS_RUN
        elif result.http_status not in _REFUSED_STATUSES:
            decision, reason = _NOT_IDEMPOTENT
    if decision is _BACKOFF and attempt >= max_attempts:
        decision, reason = _EXHAUSTED
    return RetryAdvice(decision, reason, discard_shown_text=decision is _BACKOFF and text_shown)


#: Every rule in the tables above (each reason must belong to exactly one decision).
_ALL_RULES: Final[tuple[_Rule, ...]] = (
    *_BY_PROVIDER_ERROR.values(), *_BY_STATUS.values(), _CLIENT_ERROR, _OTHER_STATUS, *_BY_STAGE.values(),
    *_BY_OUTCOME.values(), _NOT_IDEMPOTENT, _TOOLS_RUN, _EXHAUSTED,
)

#: Every reason :func:`advise_retry` can return, with its decision (for dashboards and tests).
REASONS: Final[dict[str, RetryDecision]] = {reason: decision for decision, reason in _ALL_RULES}
