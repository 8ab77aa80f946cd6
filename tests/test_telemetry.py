"""Telemetry: exactly the nineteen fields, sanitized, and no payload content anywhere.

The canary test streams a secret through every place a provider or a response can put content
(text, refusal, reasoning, tool arguments, tool names, error bodies, SSE ids and event names, the
Content-Type header, stop reasons with junk) on every route and outcome, and checks that it never
reaches a telemetry record, a ``Failure``, a stage, or the text of any exception webclient raises.
"""

from __future__ import annotations

import json
import math

import pytest

from tests.route_fixtures import check, sse
from webclient import Outcome, StreamSession, UsageError
from webclient._limits import DEFAULT_LIMITS
from webclient._routes import route
from webclient._routes.gemini import PROMPT_BLOCK_REASONS
from webclient._telemetry import REDACTED, TELEMETRY_FIELDS, sanitize_code, sanitize_token, stop_reason_token
from webclient._toolcalls import ToolRegistry

FIELDS = (
    "observed_at", "request_id", "route", "model_alias", "http_status", "content_type_valid", "chunk_count",
    "bytes_received", "decoded_character_count", "complete_sse_event_count", "pending_line_character_count",
    "pending_event_character_count", "open_payload_accumulator_count", "terminal_condition_seen", "stop_reason",
    "stream_outcome", "buffer_limit_stage", "retry_decision", "duration_ms",
)

CANARY = "CANARY7f3a9c"
JUNK = f"{CANARY} {{\"x\": 1}} ünïcode"


def test_the_record_has_exactly_the_nineteen_fields_in_order() -> None:
    assert TELEMETRY_FIELDS == FIELDS
    session = StreamSession("openai-chat", request_id="req_123", model_alias="gpt-4o")
    result = session.abort()
    record = result.telemetry.to_dict()
    assert tuple(record) == FIELDS
    assert (record["request_id"], record["model_alias"], record["route"]) == ("req_123", "gpt-4o", "openai-chat")
    assert (record["observed_at"], record["retry_decision"], record["duration_ms"]) == (None, None, None)
    assert record["stream_outcome"] == "cancelled" and record["content_type_valid"] is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("", None), ("end_turn", "end_turn"), ("MAX_TOKENS", "MAX_TOKENS"), (429, "429"),
     ("anthropic/claude-sonnet-4.5", "anthropic/claude-sonnet-4.5"), ("has space", REDACTED), ("x" * 129, REDACTED),
     ("ünïcode", REDACTED), ('{"a":1}', REDACTED), (True, REDACTED), (1.5, REDACTED)],
)
def test_identifiers_outside_the_allow_list_are_redacted_whole(value: object, expected: str | None) -> None:
    assert sanitize_token(value) == expected


def test_error_codes_use_the_tighter_allow_list() -> None:
    assert sanitize_code("overloaded_error") == "overloaded_error"
    assert sanitize_code("a/b") == REDACTED and sanitize_code("x" * 65) == REDACTED


def test_transport_fields_are_added_by_with_fields_and_validated() -> None:
    telemetry = StreamSession("gemini").abort(Outcome.TIMEOUT, "first_event").telemetry
    filled = telemetry.with_fields(observed_at="2026-08-22T10:00:00Z", duration_ms=12.5, retry_decision="retry")
    assert (filled.observed_at, filled.duration_ms, filled.retry_decision) == ("2026-08-22T10:00:00Z", 12.5, "retry")
    assert telemetry.duration_ms is None  # frozen: a copy was made
    assert telemetry.with_fields(duration_ms=0).duration_ms == 0  # an instant attempt is a duration
    assert telemetry.with_fields(observed_at=1.7e9).observed_at == 1.7e9
    for bad in ({"observed_at": CANARY}, {"duration_ms": -1}, {"duration_ms": -0.001}, {"retry_decision": JUNK},
                {"observed_at": True}, {"duration_ms": math.nan}, {"duration_ms": math.inf},
                {"observed_at": math.nan}, {"observed_at": -math.inf}):
        with pytest.raises(UsageError) as info:
            telemetry.with_fields(**bad)  # type: ignore[arg-type]
        assert CANARY not in str(info.value)


def test_buffer_limit_stage_is_set_only_for_buffer_limit_outcomes() -> None:
    from webclient import Limits

    data = sse({"choices": [{"index": 0, "delta": {"content": "abcdef"}}]})
    result, _ = check("openai-chat", data, limits=Limits(max_text_chars=3))
    assert (result.telemetry.stream_outcome, result.telemetry.buffer_limit_stage) == ("buffer_limit", "text")
    result, _ = check("openai-chat", data)
    assert result.telemetry.buffer_limit_stage is None


def _canary_streams() -> list[tuple[str, bytes]]:
    secret_args = json.dumps({"password": CANARY})
    chat = sse(
        {"choices": [{"index": 0, "delta": {"content": CANARY, "refusal": CANARY, "reasoning": CANARY,
                                            "tool_calls": [{"index": 0, "id": CANARY, "function": {
                                                "name": CANARY, "arguments": secret_args}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": JUNK}]},
        "[DONE]",
    )
    chat_error = sse({"choices": [{"index": 0, "delta": {"content": CANARY}}]},
                     ("error", {"error": {"message": CANARY, "type": JUNK, "code": CANARY + " x",
                                          "failed_generation": CANARY}}))
    chat_error_object = sse({"error": {"code": 400, "message": CANARY, "metadata": {"raw": CANARY}}})
    anthropic = sse(
        ("message_start", {"type": "message_start", "message": {"id": CANARY, "content": []}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "tool_use", "id": CANARY, "name": CANARY, "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "input_json_delta", "partial_json": '{"k": "' + CANARY}}),
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": CANARY}}),
    )
    anthropic_bad_json = sse(
        {"type": "message_start", "message": {"content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": CANARY}},
        {"type": "content_block_stop", "index": 0},
    )
    responses = sse(
        {"type": "response.created", "response": {"id": CANARY}},
        {"type": "error", "error": {"type": "server_error", "code": CANARY + "!", "message": CANARY}},
    )
    responses_failed = sse(
        {"type": "response.created", "response": {}},
        {"type": "response.failed", "response": {"error": {"code": "x", "message": CANARY}}},
    )
    gemini = sse({"candidates": [{"content": {"parts": [{"text": CANARY}, {"functionCall": {
        "name": CANARY, "args": {"secret": CANARY}}}]}, "finishReason": JUNK}]})
    gemini_error = sse({"error": {"code": 500, "message": CANARY, "status": CANARY + "?"}})
    with_ids = b"id: " + CANARY.encode() + b"\nevent: " + CANARY.encode() + b"\ndata: " + CANARY.encode() + b"\n\n"
    return [
        ("openai-chat", chat), ("openai-chat", chat_error), ("openai-chat", chat_error_object),
        ("anthropic-messages", anthropic), ("anthropic-messages", anthropic_bad_json),
        ("openai-responses", responses), ("openai-responses", responses_failed),
        ("gemini", gemini), ("gemini", gemini_error),
        ("openai-chat", with_ids), ("anthropic-messages", with_ids), ("gemini", b"data: " + CANARY.encode()),
    ]


@pytest.mark.parametrize(("route", "data"), _canary_streams())
@pytest.mark.parametrize("content_type", ["text/event-stream; boundary=" + CANARY, "text/" + CANARY])
def test_a_canary_in_content_and_headers_never_reaches_telemetry(route: str, data: bytes, content_type: str) -> None:
    tools = {CANARY: {"type": "object"}} if route == "gemini" else None
    session = StreamSession(route, request_id="req-1", model_alias="model-a", tools=tools)
    texts = [repr(u) for u in session.open(200, content_type)]
    texts += [repr(u.outcome) + repr(u.stage) for u in session.feed(data) if hasattr(u, "stage")]
    result = session.finish()
    record = json.dumps(result.telemetry.to_dict())
    assert CANARY not in record and CANARY not in repr(result.telemetry)
    assert CANARY not in str(result.stage) and CANARY not in str(result.outcome)
    assert result.provider_error is None or CANARY not in repr(result.provider_error)
    assert all(CANARY not in t for t in texts)
    # The stream really was consumed whenever the gate let it through.
    assert (result.telemetry.bytes_received > 0) is content_type.startswith("text/event-stream")


def test_a_canary_in_an_unknown_stop_reason_is_recorded_as_unrecognized_but_kept_raw_in_the_result() -> None:
    data = sse({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": JUNK}]}, "[DONE]")
    result, _ = check("openai-chat", data)
    assert result.stop_reason == JUNK
    assert (result.outcome.value, result.stage) == ("protocol_error", "unrecognized_stop")
    assert result.telemetry.stop_reason == "unrecognized"


def test_a_junk_stop_reason_the_caller_accepted_is_still_redacted_in_telemetry() -> None:
    data = sse({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": JUNK}]}, "[DONE]")
    result, _ = check("openai-chat", data, accepted_stop_reasons=[JUNK])
    assert (result.outcome.value, result.stop_reason) == ("complete", JUNK)
    assert result.telemetry.stop_reason == REDACTED


def test_known_stop_reasons_are_recorded_verbatim_and_unknown_ones_as_unrecognized() -> None:
    def finish(reason: str) -> bytes:
        return sse({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": reason}]}, "[DONE]")

    assert check("openai-chat", finish("insufficient_system_resource"))[0].telemetry.stop_reason == (
        "insufficient_system_resource")
    assert check("openai-chat", finish("eos_token"))[0].telemetry.stop_reason == "unrecognized"
    accepted = check("openai-chat", finish("eos_token"), accepted_stop_reasons={"eos_token"})[0]
    assert (accepted.outcome.value, accepted.telemetry.stop_reason) == ("complete", "eos_token")


def test_exception_messages_never_echo_caller_or_payload_values() -> None:
    attempts = [
        lambda: StreamSession(CANARY),
        lambda: StreamSession("openai-chat", tools={CANARY: 5}),
        lambda: StreamSession("openai-chat", tools={"f": {"type": "object", "enum": CANARY}}),
        lambda: StreamSession("openai-chat", accepted_stop_reasons=CANARY),
        lambda: StreamSession("openai-chat").abort(Outcome.TIMEOUT, CANARY),
        lambda: StreamSession("openai-chat").open(CANARY, "text/event-stream"),  # type: ignore[arg-type]
        lambda: StreamSession("openai-chat").open(200, CANARY.encode()),  # type: ignore[arg-type]
    ]
    for attempt in attempts:
        with pytest.raises(UsageError) as info:
            attempt()
        assert CANARY not in str(info.value), str(info.value)
    session = StreamSession("openai-chat")
    session.open(200, "text/event-stream")
    session.feed(CANARY.encode())
    session.finish()
    for misuse in (lambda: session.feed(CANARY.encode()), session.finish, lambda: session.open(200, CANARY)):
        with pytest.raises(UsageError) as info:
            misuse()
        assert CANARY not in str(info.value)


@pytest.mark.parametrize("name", ["openai-chat", "openai-responses", "anthropic-messages", "gemini"])
def test_every_stop_reason_of_a_contract_is_spelled_as_the_sanitizer_spells_a_known_reason(name: str) -> None:
    entry = route(name)
    also_known = PROMPT_BLOCK_REASONS if name == "gemini" else {}  # Gemini's prompt refusals
    extra = "x-extra"
    for accepted in (None, frozenset({extra})):
        acc = entry.accumulator(DEFAULT_LIMITS, ToolRegistry(), accepted)
        for reason in [*entry.contract.stop_reasons, *also_known, extra, JUNK, "not_listed"]:
            acc.stop_reason = reason
            known = (reason in entry.contract.stop_reasons or reason in also_known
                     or (accepted is not None and reason in accepted))
            assert acc.telemetry_stop_reason() == stop_reason_token(reason, known)
        acc.stop_reason = None
        assert acc.telemetry_stop_reason() is None


def test_the_redaction_marker_is_the_documented_literal() -> None:
    """Dashboards and log filters match on this exact spelling."""
    assert sanitize_token("has space") == sanitize_code("a/b") == "[REDACTED]" == REDACTED


def test_a_missing_stop_reason_stays_missing_whether_or_not_the_route_would_know_it() -> None:
    assert stop_reason_token(None, known=False) is None and stop_reason_token(None, known=True) is None
    assert stop_reason_token("mystery", known=False) == "unrecognized"
