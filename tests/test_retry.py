"""Retry advice: every row of the decision table, the side-effect gate, the attempt cap."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from tests.route_fixtures import check, sse
from webclient import Outcome, UsageError
from webclient._retry import (
    _ALL_RULES,
    _BY_OUTCOME,
    _BY_PROVIDER_ERROR,
    _BY_STAGE,
    _BY_STATUS,
    REASONS,
    RetryAdvice,
    RetryDecision,
    advise_retry,
    check_count,
)

BACKOFF = RetryDecision.RETRY_AFTER_BACKOFF
DONE = RetryDecision.DO_NOT_RETRY
SURFACE = RetryDecision.SURFACE_TO_USER


@dataclass(frozen=True)
class Result:
    """The minimal result shape (the Protocol's three attributes)."""

    outcome: Outcome
    stage: str | None = None
    http_status: int | None = 200


@dataclass(frozen=True)
class ProviderError:
    type: str | None
    code: str | None


@dataclass(frozen=True)
class ResultWithProviderError(Result):
    provider_error: ProviderError | None = None


def advise(result: object, *, text_shown: bool = False, tools_run: bool = False, idempotent: bool = True,
           attempt: int = 1, max_attempts: int = 3) -> RetryAdvice:
    return advise_retry(result, text_shown=text_shown, tools_run=tools_run,  # type: ignore[arg-type]
                        idempotent=idempotent, attempt=attempt, max_attempts=max_attempts)


# -- every row ----------------------------------------------------------------------------------

# (result, expected decision, expected reason): one case per row of each table, in table order.
ROWS = [
    # final outcomes
    (Result(Outcome.COMPLETE), DONE, "complete"),
    (Result(Outcome.CANCELLED, "caller"), DONE, "cancelled"),
    # (outcome, stage) refinements
    (Result(Outcome.TRUNCATED, "stop_reason"), DONE, "limit_stop"),
    (Result(Outcome.TRUNCATED, "network", None), BACKOFF, "network_error"),
    (Result(Outcome.PROTOCOL_ERROR, "sequence_gap"), BACKOFF, "sequence_break"),
    (Result(Outcome.PROTOCOL_ERROR, "sequence_order"), BACKOFF, "sequence_break"),
    (Result(Outcome.TIMEOUT, "connect", None), BACKOFF, "connect_timeout"),
    (Result(Outcome.TIMEOUT, "first_event"), BACKOFF, "first_event_timeout"),
    (Result(Outcome.TIMEOUT, "idle"), BACKOFF, "idle_timeout"),
    (Result(Outcome.TIMEOUT, "total"), SURFACE, "total_timeout"),
    # outcome fallbacks
    (Result(Outcome.TRUNCATED, "eof"), BACKOFF, "truncated"),
    (Result(Outcome.TRUNCATED, "pending_event"), BACKOFF, "truncated"),
    (Result(Outcome.TRUNCATED, "pending_line"), BACKOFF, "truncated"),
    (Result(Outcome.TRUNCATED, "pending_bytes"), BACKOFF, "truncated"),
    (Result(Outcome.TRUNCATED, "missing_stop"), BACKOFF, "truncated"),
    (Result(Outcome.TIMEOUT, "transport_specific"), BACKOFF, "timeout"),
    (Result(Outcome.UPSTREAM_ERROR, "error_event"), SURFACE, "upstream_error"),
    (Result(Outcome.PROTOCOL_ERROR, "media_type"), SURFACE, "protocol_error"),
    (Result(Outcome.PROTOCOL_ERROR, "envelope"), SURFACE, "protocol_error"),
    (Result(Outcome.DECODE_ERROR, "utf8"), SURFACE, "decode_error"),
    (Result(Outcome.PAYLOAD_ERROR, "tool_json"), SURFACE, "payload_error"),
    (Result(Outcome.BUFFER_LIMIT, "text"), SURFACE, "buffer_limit"),
    # HTTP statuses at the gate
    (Result(Outcome.PROTOCOL_ERROR, "status", 429), BACKOFF, "rate_limited"),
    (Result(Outcome.PROTOCOL_ERROR, "status", 500), BACKOFF, "server_error"),
    (Result(Outcome.PROTOCOL_ERROR, "status", 502), BACKOFF, "bad_gateway"),
    (Result(Outcome.PROTOCOL_ERROR, "status", 503), BACKOFF, "unavailable"),
    (Result(Outcome.PROTOCOL_ERROR, "status", 504), BACKOFF, "gateway_timeout"),
    (Result(Outcome.PROTOCOL_ERROR, "status", 524), BACKOFF, "origin_timeout"),
    (Result(Outcome.PROTOCOL_ERROR, "status", 529), BACKOFF, "overloaded"),
    (Result(Outcome.PROTOCOL_ERROR, "status", 400), SURFACE, "client_error"),
    (Result(Outcome.PROTOCOL_ERROR, "status", 401), SURFACE, "client_error"),
    (Result(Outcome.PROTOCOL_ERROR, "status", 404), SURFACE, "client_error"),
    (Result(Outcome.PROTOCOL_ERROR, "status", 301), SURFACE, "unexpected_status"),
    (Result(Outcome.PROTOCOL_ERROR, "status", 204), SURFACE, "unexpected_status"),
    (Result(Outcome.PROTOCOL_ERROR, "status", 501), SURFACE, "unexpected_status"),
]
# in-stream provider errors, one per row of that table
ROWS += [(ResultWithProviderError(Outcome.UPSTREAM_ERROR, "error_event", 200, ProviderError(token, None)),
          decision, reason) for token, (decision, reason) in _BY_PROVIDER_ERROR.items()]


@pytest.mark.parametrize(("result", "decision", "reason"), ROWS,
                         ids=[f"{r.outcome.value}-{r.stage}-{r.http_status}-{reason}" for r, _, reason in ROWS])
def test_each_table_row_gives_its_decision_and_reason(result: Result, decision: RetryDecision, reason: str) -> None:
    assert advise(result) == RetryAdvice(decision, reason)


def test_the_rows_cover_every_rule_in_the_tables() -> None:
    covered = {(decision, reason) for _, decision, reason in ROWS}
    table_rules = {*_BY_PROVIDER_ERROR.values(), *_BY_STATUS.values(), *_BY_STAGE.values(), *_BY_OUTCOME.values()}
    assert table_rules <= covered
    assert set(_BY_OUTCOME) == set(Outcome)


def test_every_reason_belongs_to_one_decision_and_fits_the_telemetry_field() -> None:
    assert len(REASONS) == len(set(_ALL_RULES))
    for reason in REASONS:
        assert re.fullmatch(r"[a-z_]{1,32}", reason), reason
    for decision in RetryDecision:
        assert re.fullmatch(r"[a-z_]{1,32}", decision.value)


# -- provider error refinements -----------------------------------------------------------------

def test_provider_error_code_is_used_when_the_type_is_unknown() -> None:
    result = ResultWithProviderError(Outcome.UPSTREAM_ERROR, "error_object", 200, ProviderError("weird", "503"))
    assert advise(result) == RetryAdvice(BACKOFF, "unavailable")


def test_unknown_provider_error_falls_back_to_the_outcome_row() -> None:
    result = ResultWithProviderError(Outcome.UPSTREAM_ERROR, "error_event", 200,
                                     ProviderError("invalid_request_error", "tool_use_failed"))
    assert advise(result) == RetryAdvice(SURFACE, "upstream_error")
    result = ResultWithProviderError(Outcome.UPSTREAM_ERROR, "error_object", 200, ProviderError(None, "400"))
    assert advise(result) == RetryAdvice(SURFACE, "upstream_error")


def test_cometapi_500_with_invalid_request_code_is_not_retried() -> None:
    result = ResultWithProviderError(Outcome.PROTOCOL_ERROR, "status", 500, ProviderError("comet_api_error",
                                                                                          "invalid_request"))
    assert advise(result) == RetryAdvice(SURFACE, "request_rejected")


def test_insufficient_quota_429_is_not_a_rate_limit() -> None:
    result = ResultWithProviderError(Outcome.PROTOCOL_ERROR, "status", 429, ProviderError("insufficient_quota", None))
    assert advise(result) == RetryAdvice(SURFACE, "request_rejected")


def test_missing_provider_error_changes_nothing() -> None:
    assert advise(ResultWithProviderError(Outcome.TRUNCATED, "eof")) == RetryAdvice(BACKOFF, "truncated")


# -- side effects -------------------------------------------------------------------------------

RETRYABLE = [Result(Outcome.TRUNCATED, "eof"), Result(Outcome.TIMEOUT, "idle"),
             Result(Outcome.TIMEOUT, "connect", None), Result(Outcome.PROTOCOL_ERROR, "status", 500),
             Result(Outcome.PROTOCOL_ERROR, "status", 502)]


@pytest.mark.parametrize("result", RETRYABLE)
def test_non_idempotent_request_is_never_retried_after_it_may_have_reached_the_server(result: Result) -> None:
    assert advise(result, idempotent=False) == RetryAdvice(SURFACE, "not_idempotent")


@pytest.mark.parametrize("status", [429, 503, 529])
def test_non_idempotent_request_is_retried_when_the_status_says_it_was_refused(status: int) -> None:
    advice = advise(Result(Outcome.PROTOCOL_ERROR, "status", status), idempotent=False)
    assert advice.decision is BACKOFF


def test_in_stream_overload_is_not_a_refusal_for_a_non_idempotent_request() -> None:
    overloaded = ProviderError("overloaded_error", None)
    result = ResultWithProviderError(Outcome.UPSTREAM_ERROR, "error_event", 200, overloaded)
    assert advise(result, idempotent=True).decision is BACKOFF
    assert advise(result, idempotent=False) == RetryAdvice(SURFACE, "not_idempotent")


def test_tools_run_blocks_retry_unless_the_request_is_idempotent() -> None:
    result = Result(Outcome.PROTOCOL_ERROR, "status", 429)
    assert advise(result, tools_run=True, idempotent=False) == RetryAdvice(SURFACE, "tools_run")
    assert advise(result, tools_run=True, idempotent=True) == RetryAdvice(BACKOFF, "rate_limited")


def test_shown_text_does_not_block_retry_but_must_be_discarded() -> None:
    advice = advise(Result(Outcome.TRUNCATED, "eof"), text_shown=True, idempotent=True)
    assert advice == RetryAdvice(BACKOFF, "truncated", discard_shown_text=True)
    assert advise(Result(Outcome.TRUNCATED, "eof"), text_shown=False).discard_shown_text is False


def test_shown_text_is_kept_when_there_is_no_retry() -> None:
    for result in (Result(Outcome.COMPLETE), Result(Outcome.TRUNCATED, "stop_reason"), Result(Outcome.DECODE_ERROR)):
        assert advise(result, text_shown=True).discard_shown_text is False
    assert advise(Result(Outcome.TRUNCATED, "eof"), text_shown=True, idempotent=False).discard_shown_text is False


@pytest.mark.parametrize("flags", [dict(tools_run=True, idempotent=False), dict(text_shown=True, idempotent=False),
                                   dict(tools_run=True, text_shown=True, idempotent=False)])
def test_final_and_non_retryable_rows_are_unchanged_by_side_effects(flags: dict[str, bool]) -> None:
    assert advise(Result(Outcome.COMPLETE), **flags) == RetryAdvice(DONE, "complete")
    assert advise(Result(Outcome.CANCELLED, "caller"), **flags) == RetryAdvice(DONE, "cancelled")
    assert advise(Result(Outcome.PAYLOAD_ERROR, "tool_schema"), **flags) == RetryAdvice(SURFACE, "payload_error")


# -- attempts -----------------------------------------------------------------------------------

def test_retry_is_advised_only_while_attempts_remain() -> None:
    result = Result(Outcome.TIMEOUT, "idle")
    assert advise(result, attempt=1, max_attempts=3).decision is BACKOFF
    assert advise(result, attempt=2, max_attempts=3).decision is BACKOFF
    assert advise(result, attempt=3, max_attempts=3) == RetryAdvice(SURFACE, "attempts_exhausted")
    assert advise(result, attempt=5, max_attempts=3) == RetryAdvice(SURFACE, "attempts_exhausted")
    assert advise(result, attempt=1, max_attempts=1) == RetryAdvice(SURFACE, "attempts_exhausted")


def test_default_max_attempts_is_three() -> None:
    result = Result(Outcome.TRUNCATED, "eof")
    kwargs = dict(text_shown=False, tools_run=False, idempotent=True)
    assert advise_retry(result, attempt=2, **kwargs).decision is BACKOFF
    assert advise_retry(result, attempt=3, **kwargs).reason == "attempts_exhausted"


def test_side_effect_reason_wins_over_exhausted_attempts() -> None:
    result = Result(Outcome.TRUNCATED, "eof")
    assert advise(result, idempotent=False, attempt=3).reason == "not_idempotent"


def test_exhausted_attempts_do_not_change_final_rows() -> None:
    assert advise(Result(Outcome.COMPLETE), attempt=9, max_attempts=3) == RetryAdvice(DONE, "complete")


# -- with the real StreamResult -----------------------------------------------------------------

def test_advice_reads_a_real_stream_result_and_its_reason_fits_telemetry() -> None:
    from webclient import StreamSession

    session = StreamSession("anthropic-messages")
    session.open(200, "text/event-stream")
    session.feed(b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
                 b'"role":"assistant","model":"x","content":[],"stop_reason":null,"usage":{"input_tokens":1,'
                 b'"output_tokens":1}}}\n\n')
    result = session.finish()
    assert (result.outcome, result.stage) == (Outcome.TRUNCATED, "eof")
    advice = advise(result, text_shown=True)
    assert advice == RetryAdvice(BACKOFF, "truncated", discard_shown_text=True)
    telemetry = result.telemetry.with_fields(retry_decision=advice.reason)
    assert telemetry.retry_decision == "truncated"


def test_advice_reads_a_real_gate_failure() -> None:
    from webclient import StreamSession

    session = StreamSession("openai-chat")
    session.open(503, "application/json")
    result = session.finish()
    assert advise(result, idempotent=False) == RetryAdvice(BACKOFF, "unavailable")


# -- validation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    dict(attempt=0), dict(attempt=-1), dict(attempt=1.0), dict(attempt=True), dict(max_attempts=0),
    dict(max_attempts="3"), dict(text_shown=1), dict(tools_run=None), dict(idempotent="yes"),
])
def test_bad_arguments_are_usage_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        advise(Result(Outcome.TRUNCATED, "eof"), **kwargs)  # type: ignore[arg-type]


def test_a_result_without_an_outcome_enum_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        advise(Result("truncated", "eof"))  # type: ignore[arg-type]


def test_advice_is_frozen() -> None:
    advice = advise(Result(Outcome.COMPLETE))
    with pytest.raises(AttributeError):
        advice.reason = "x"  # type: ignore[misc]


# -- the providers' own error forms, through a session ------------------------------------------
# The documented transient errors of each provider (Anthropic's error types, OpenAI's error types and
# codes, Gemini's canonical statuses), written out here rather than read from the table, each sent in
# its route's in-stream error form. The status-only reading of each would give another reason (Gemini's
# numeric code alone names the HTTP status row), so each case shows that its token is recognised.

def _anthropic(kind: str) -> bytes:
    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                  "content": [], "usage": {"input_tokens": 1}}}
    return sse(("message_start", start), ("error", {"type": "error", "error": {"type": kind, "message": "m"}}))


def _chat(error: dict[str, object]) -> bytes:
    first = {"id": "c1", "choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": None}]}
    return sse(first, {"error": {"message": "m", **error}})


def _responses(code: str) -> bytes:
    created = {"type": "response.created", "sequence_number": 0,
               "response": {"id": "resp_1", "status": "in_progress", "output": []}}
    return sse(("response.created", created),
               ("error", {"type": "error", "sequence_number": 1, "code": code, "message": "m", "param": None}))


def _gemini(code: int, status: str) -> bytes:
    first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "a"}]}, "index": 0}]}
    return sse(first, {"error": {"code": code, "message": "m", "status": status}})


PROVIDER_FORMS = [
    ("anthropic-messages", _anthropic("overloaded_error"), BACKOFF, "upstream_overloaded"),
    ("anthropic-messages", _anthropic("rate_limit_error"), BACKOFF, "upstream_rate_limited"),
    ("anthropic-messages", _anthropic("api_error"), BACKOFF, "upstream_server_error"),
    ("anthropic-messages", _anthropic("timeout_error"), BACKOFF, "upstream_timeout"),
    ("anthropic-messages", _anthropic("invalid_request_error"), SURFACE, "upstream_error"),
    ("openai-chat", _chat({"type": "server_error", "code": None}), BACKOFF, "upstream_server_error"),
    ("openai-chat", _chat({"type": "requests", "code": "rate_limit_exceeded"}), BACKOFF, "upstream_rate_limited"),
    ("openai-chat", _chat({"type": "insufficient_quota", "code": "insufficient_quota"}), SURFACE,
     "request_rejected"),
    ("openai-responses", _responses("server_error"), BACKOFF, "upstream_server_error"),
    ("openai-responses", _responses("rate_limit_exceeded"), BACKOFF, "upstream_rate_limited"),
    ("gemini", _gemini(503, "UNAVAILABLE"), BACKOFF, "upstream_overloaded"),
    ("gemini", _gemini(429, "RESOURCE_EXHAUSTED"), BACKOFF, "upstream_rate_limited"),
    ("gemini", _gemini(500, "INTERNAL"), BACKOFF, "upstream_server_error"),
    ("gemini", _gemini(504, "DEADLINE_EXCEEDED"), BACKOFF, "upstream_timeout"),
    ("gemini", _gemini(400, "INVALID_ARGUMENT"), SURFACE, "upstream_error"),
]


@pytest.mark.parametrize(("route", "data", "decision", "reason"), PROVIDER_FORMS,
                         ids=[f"{route}-{reason}-{i}" for i, (route, _, _, reason) in enumerate(PROVIDER_FORMS)])
def test_each_provider_s_documented_error_in_its_own_stream_form_gets_its_advice(
        route: str, data: bytes, decision: RetryDecision, reason: str) -> None:
    result, _ = check(route, data)
    assert result.outcome is Outcome.UPSTREAM_ERROR
    assert advise(result) == RetryAdvice(decision, reason)


def test_advice_is_a_frozen_value() -> None:
    advice = advise(Result(Outcome.COMPLETE))
    with pytest.raises(AttributeError):
        advice.reason = "other"  # type: ignore[misc]


@pytest.mark.parametrize(("name", "bad"), [("text_shown", {"text_shown": 1}), ("tools_run", {"tools_run": None}),
                                           ("idempotent", {"idempotent": "yes"}), ("attempt", {"attempt": 0}),
                                           ("max_attempts", {"max_attempts": True})])
def test_a_bad_argument_is_a_usage_error_that_names_it(name: str, bad: dict[str, object]) -> None:
    with pytest.raises(UsageError, match=rf"^{name} must be"):
        advise(Result(Outcome.TRUNCATED, "eof"), **bad)  # type: ignore[arg-type]


def test_a_final_outcome_settles_the_advice_whatever_else_the_result_carries() -> None:
    overloaded = ProviderError("overloaded_error", "529")
    for outcome, reason in ((Outcome.CANCELLED, "cancelled"), (Outcome.COMPLETE, "complete")):
        result = ResultWithProviderError(outcome, "error_event", 503, overloaded)
        assert advise(result) == RetryAdvice(DONE, reason)


def test_check_count_passes_a_positive_integer_through_and_refuses_anything_else() -> None:
    assert [check_count("attempt", n) for n in (1, 7)] == [1, 7]
    for bad in (0, -1, True, 1.0, "2", None):
        with pytest.raises(UsageError, match=r"^attempt must be a positive integer$"):
            check_count("attempt", bad)
