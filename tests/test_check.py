"""The ``check`` engine (webclient/_check.py): green on every complete recording, red on broken sessions.

Each deliberately broken session below is a small subclass or wrapper of the real
:class:`~webclient.StreamSession` with one classic stream-client bug; the test asserts that the
check designed for that bug fails on it (and says where, without content), while the real session
passes the same battery.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

from tests.helpers import assert_chunking_invariant
from tests.route_fixtures import CHAT, GEMINI, Case, cases, comparable, outcome_of, replay, sse
from webclient import Limits, Outcome, StreamSession
from webclient._check import (
    CATEGORIES,
    CHECKS,
    EOF_TIERS,
    Canary,
    CaseFailure,
    CheckConfig,
    CheckedSession,
    CheckReport,
    CheckResult,
    Positions,
    SessionFactory,
    _chunks,
    _spread,
    _vocabulary_key,
    break_tool_json,
    canary_capture,
    check_capture,
    check_growth,
    check_oversized,
    cut_patterns,
    error_event,
    growth_site,
    inject_event,
    inject_line,
    injection_sites,
    scan_capture,
    select_positions,
    session_factory,
)
from webclient._check_growth import cases as growth_cases
from webclient._check_growth import expected_stages, feed_chunks
from webclient._check_growth import frame as growth_frame
from webclient._check_growth import verdict as growth_verdict
from webclient._limits import DEFAULT_LIMITS
from webclient._pipeline import EventStreamParser
from webclient._routes import ROUTE_NAMES
from webclient._updates import ProviderError, StreamResult
from webclient._utf8 import UTF8Decoder

CASES = cases()
COMPLETE = [c for c in CASES if c.outcome == "complete"]
NOT_COMPLETE = [c for c in CASES if c.outcome != "complete"]

#: Small but real: every position for captures up to 1 KiB, 48 sampled positions above.
SMALL = CheckConfig(every_position_max=1024, work_budget=48 * 1024, patterns=4)


def limits_for(data: bytes) -> Limits:
    """Ceilings comfortably above the capture's longest line and what it retains, so injections
    (oversized lines and events, growth) stay cheap."""
    longest = max(len(line) for line in data.split(b"\n"))
    return Limits(max_line_chars=2 * longest + 1024, max_event_chars=4 * longest + 4096,
                  max_retained_chars=4 * len(data) + 65536)


def small_config(data: bytes) -> CheckConfig:
    return SMALL if len(data) <= 1024 else dataclasses.replace(SMALL, max_splits=48)


def run_check(route: str, data: bytes, make: Callable[..., CheckedSession] | None = None,
              config: CheckConfig | None = None, **kwargs: Any) -> CheckReport:
    limits = limits_for(data)
    factory: SessionFactory
    if make is None:
        factory = session_factory(route, limits=limits, **kwargs)
    else:
        def factory() -> CheckedSession:
            return make(route, limits=limits, **kwargs)
    return check_capture(data, factory, route=route, limits=limits, config=config or small_config(data))


def by_name(report: CheckReport) -> dict[str, Any]:
    return {c.name: c for c in report.checks}


def failed_checks(report: CheckReport) -> set[str]:
    return {c.name for c in report.checks if not c.passed}


# -- synthetic captures with everything the checks look for ------------------------------------


def chat_capture(sep: str = "\n") -> bytes:
    """A Chat stream with raw multi-byte text and tool arguments, usage and [DONE]."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    items: list[object] = [chunk({"role": "assistant", "content": ""})]
    items += [chunk({"content": t}) for t in ("Grüße", " aus ", "Köln — ", "世界 ", "🎉!")]
    items.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                        "function": {"name": "weather", "arguments": ""}}]}))
    for fragment in ('{"city": "Zü', 'rich", "note": "naïve ☃', '"}'):
        items.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}))
    items.append(chunk({}, "tool_calls"))
    items.append({**base, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 9}})
    items.append("[DONE]")
    text = sse(*items).decode("utf-8")
    return json_raw_utf8(text).replace("\n", sep).encode("utf-8")


def json_raw_utf8(text: str) -> str:
    """``sse`` writes ASCII-escaped JSON; put the characters back as raw UTF-8 text."""
    return "\n".join(
        "data: " + json.dumps(json.loads(line[6:]), ensure_ascii=False, separators=(",", ":"))
        if line.startswith("data: {") else line
        for line in text.split("\n")
    )


CHAT_DATA = chat_capture()
CHAT_CRLF = chat_capture("\r\n")


# -- the real session passes ---------------------------------------------------------------------


@pytest.mark.parametrize("case", COMPLETE, ids=[c.id for c in COMPLETE])
def test_every_complete_recording_passes_every_check(case: Case) -> None:
    report = run_check(case.route, case.data)
    assert report.exit_code == 0, [c.to_dict() for c in report.checks if not c.passed]
    assert [c.name for c in report.checks] == list(CHECKS)
    assert all(c.cases > 0 for c in report.checks)
    leak = by_name(report)["leak"].coverage
    if leak["substitutions"]["text"] or leak["substitutions"]["tool_arguments"] or leak["substitutions"]["kept"]:
        assert leak["canary_reached_output"] is True


@pytest.mark.parametrize("case", NOT_COMPLETE, ids=[c.id for c in NOT_COMPLETE])
def test_a_capture_that_is_not_complete_is_reported_with_its_outcome_and_exit_code_2(case: Case) -> None:
    report = run_check(case.route, case.data)
    assert report.exit_code == 2
    assert report.whole_outcome == case.outcome
    assert [c.name for c in report.checks] == ["whole"]
    assert not report.passed


@pytest.mark.parametrize("data", [CHAT_DATA, CHAT_CRLF], ids=["lf", "crlf"])
def test_synthetic_multibyte_tool_call_capture_passes_with_every_position_checked(data: bytes) -> None:
    report = run_check(CHAT, data, config=CheckConfig(patterns=6))
    assert report.exit_code == 0, [c.to_dict() for c in report.checks if not c.passed]
    split = by_name(report)["split"]
    assert split.cases == len(data) - 1
    assert split.coverage["sampled"] is False
    assert by_name(report)["eof"].cases == len(data)
    for category in ("multibyte", "tool_json", "boundary", "tail") + (("crlf",) if b"\r\n" in data else ()):
        assert split.coverage["by_category"][category] > 0, category


def test_tool_schema_failures_on_canary_arguments_keep_the_canary_out_of_problems() -> None:
    tools = {"weather": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                          "note": {"type": "string"}},
                         "required": ["city"], "additionalProperties": False}}
    report = run_check(CHAT, CHAT_DATA, tools=tools)
    assert report.exit_code == 0, [c.to_dict() for c in report.checks if not c.passed]
    # The canary arguments break the schema (too long), so the leak check also walked the
    # payload_error path: its problems must not quote the value.
    planted, counts = canary_capture(CHAT_DATA, CHAT, Canary.from_seed(0))
    assert counts["tool_arguments"] == 2
    session = StreamSession(CHAT, tools=tools)
    session.open(200, "text/event-stream")
    session.feed(planted)
    result = session.finish()
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_schema")
    assert result.tool_calls[0].problems
    assert not Canary.from_seed(0).found_in(" ".join(result.tool_calls[0].problems))


# -- deliberately broken sessions ------------------------------------------------------------------


class FreshDecoderPerChunk(StreamSession):
    """Bug: a new UTF-8 decoder for every chunk, so a character split across chunks is lost."""

    def feed(self, data: bytes) -> list[Any]:
        parser: EventStreamParser = self._parser
        old = parser.decoder
        fresh = UTF8Decoder("strict")
        fresh.bytes_received, fresh.chars_decoded = old.bytes_received, old.chars_decoded
        parser.decoder = fresh
        return super().feed(data)


class _ChunkwiseDecoder(UTF8Decoder):
    """``bytes.decode(errors="replace")`` on every chunk on its own."""

    def feed(self, data: bytes) -> str:
        text = data.decode("utf-8", "replace")
        self.bytes_received += len(data)
        self.chars_decoded += len(text)
        return text


class DecodesEachChunk(StreamSession):
    """Bug: each chunk decoded independently (U+FFFD where a character was split)."""

    def __init__(self, route: str, **kwargs: Any) -> None:
        super().__init__(route, **kwargs)
        self._parser.decoder = _ChunkwiseDecoder("replace")


class EofIsCompletion(StreamSession):
    """Bug: a clean socket close counts as the terminal condition."""

    def finish(self) -> StreamResult:
        if not self.done:
            self._route.terminal_seen = True
            self._route.stop_reason = self._route.stop_reason or "stop"
        return super().finish()


class ReadyBeforeCommit(StreamSession):
    """Bug: a validated tool call is ready even when the response did not complete."""

    def finish(self) -> StreamResult:
        result = super().finish()
        calls = tuple(dataclasses.replace(c, ready=c.state == "valid") for c in result.tool_calls)
        return dataclasses.replace(result, tool_calls=calls)


class TextInTelemetry(StreamSession):
    """Bug: the answer's first words logged as the model alias."""

    def finish(self) -> StreamResult:
        result = super().finish()
        return result.with_telemetry(dataclasses.replace(result.telemetry, model_alias=result.text[:40] or None))


class ContentInStage(StreamSession):
    """Bug: a failure stage that quotes the offending tool input."""

    def finish(self) -> StreamResult:
        result = super().finish()
        if result.stage is not None and result.tool_calls:
            return dataclasses.replace(result, stage=f"{result.stage}: {result.tool_calls[0].input_text[:60]}")
        return result


class StaleAcrossSessions(StreamSession):
    """Bug: state shared at class level survives a failed session (a pooled, unreset parser)."""

    stale: ClassVar[list[bytes]] = []

    def open(self, status: int, content_type: str | None) -> list[Any]:
        updates = super().open(status, content_type)
        if self.stale:
            super().feed(self.stale[-1])
        return updates

    def finish(self) -> StreamResult:
        result = super().finish()
        if not result.committed and not self.stale:
            self.stale.append(b": leftover from a failed attempt\n")
        return result


class IgnoresSSECeilings(StreamSession):
    """Bug: the SSE buffers are unbounded whatever limits the caller configured."""

    def __init__(self, route: str, **kwargs: Any) -> None:
        super().__init__(route, **kwargs)
        self._parser = EventStreamParser(Limits(max_line_chars=1 << 30, max_event_chars=1 << 30))


class OpaqueWrapper:
    """A composition wrapper that forwards the session calls but exposes no pending counters."""

    def __init__(self, route: str, **kwargs: Any) -> None:
        self._inner = StreamSession(route, **kwargs)

    @property
    def done(self) -> bool:
        return self._inner.done

    def open(self, status: int, content_type: str | None) -> list[Any]:
        return self._inner.open(status, content_type)

    def feed(self, data: bytes) -> list[Any]:
        return self._inner.feed(data)

    def finish(self) -> StreamResult:
        return self._inner.finish()

    def abort(self, outcome: Outcome = Outcome.CANCELLED, stage: str = "caller") -> StreamResult:
        return self._inner.abort(outcome, stage)


def test_a_decoder_recreated_per_chunk_fails_split_at_a_multibyte_position_with_decode_error() -> None:
    report = run_check(CHAT, CHAT_DATA, FreshDecoderPerChunk, CheckConfig(patterns=2))
    assert report.exit_code == 1
    split = by_name(report)["split"]
    first = split.first_failure
    assert first is not None
    assert (first.category, first.outcome, first.stage) == ("multibyte", "decode_error", "utf8")
    assert first.position == CHAT_DATA.index("ü".encode()) + 1
    # Every interior byte of every multi-byte character fails, and nothing else does.
    interior = scan_capture(CHAT_DATA, CHAT).special["multibyte"]
    assert split.failures == len(interior)
    assert "multisplit" in failed_checks(report)
    assert not {"eof", "oversized", "leak"} & failed_checks(report)


def test_decoding_each_chunk_independently_fails_split_with_different_text_and_tool_calls() -> None:
    report = run_check(CHAT, CHAT_DATA, DecodesEachChunk, CheckConfig(patterns=2))
    first = by_name(report)["split"].first_failure
    assert report.exit_code == 1 and first is not None
    assert first.category == "multibyte" and first.outcome == "complete"
    assert first.problem.startswith("differs in ") and "text" in first.problem
    tool_failures = [p for p in scan_capture(CHAT_DATA, CHAT).special["tool_json"]
                     if p in scan_capture(CHAT_DATA, CHAT).special["multibyte"]]
    assert tool_failures, "the synthetic capture must split a character inside tool JSON"


def test_decoding_each_chunk_independently_is_caught_on_a_real_recording() -> None:
    case = next(c for c in COMPLETE if c.id == "stream-a-refusal.sse")
    report = run_check(case.route, case.data, DecodesEachChunk)
    first = by_name(report)["split"].first_failure
    assert first is not None and first.category == "multibyte"


def test_treating_eof_as_completion_fails_eof_at_the_first_event_boundary() -> None:
    report = run_check(CHAT, CHAT_DATA, EofIsCompletion, CheckConfig(patterns=2))
    eof = by_name(report)["eof"]
    assert report.exit_code == 1 and eof.first_failure is not None
    assert eof.first_failure.position == 0  # an empty body "completes"
    assert eof.first_failure.problem == "complete at a proper prefix"
    boundaries = [b for b in scan_capture(CHAT_DATA, CHAT).boundaries if b < len(CHAT_DATA)]
    assert eof.failures >= len(boundaries)
    assert by_name(report)["split"].passed


@pytest.mark.parametrize("case_id", ["basic_response.txt[terminated]", "azure__azure-tool-call.1.chunks.txt",
                                     "google__google-tool-call.chunks.txt"])
def test_treating_eof_as_completion_is_caught_on_every_route(case_id: str) -> None:
    case = next(c for c in COMPLETE if c.id == case_id)
    report = run_check(case.route, case.data, EofIsCompletion)
    assert "eof" in failed_checks(report)


def test_a_tool_call_ready_before_the_response_completed_fails_eof() -> None:
    report = run_check(CHAT, CHAT_DATA, ReadyBeforeCommit)
    eof = by_name(report)["eof"]
    assert eof.first_failure is not None
    assert eof.first_failure.problem == "1 tool call(s) ready at a proper prefix"
    assert eof.first_failure.outcome == "truncated"
    assert failed_checks(report) == {"eof"}


def test_text_logged_into_telemetry_fails_the_leak_check_only() -> None:
    report = run_check(CHAT, CHAT_DATA, TextInTelemetry)
    leak = by_name(report)["leak"]
    assert failed_checks(report) == {"leak"}
    assert leak.first_failure is not None and leak.first_failure.problem == "canary in telemetry"
    assert not Canary.from_seed(0).found_in(json.dumps(report.to_dict(), ensure_ascii=False))


def test_tool_input_quoted_in_a_stage_fails_the_leak_check_and_the_report_redacts_the_stage() -> None:
    report = run_check(CHAT, CHAT_DATA, ContentInStage)
    leak = by_name(report)["leak"]
    assert leak.first_failure is not None
    assert leak.first_failure.problem == "canary in stage"
    assert leak.first_failure.stage == "[REDACTED]"
    text = json.dumps(report.to_dict(), ensure_ascii=False)
    assert not Canary.from_seed(0).found_in(text)
    assert "Zürich" not in text and "city" not in text


def test_state_surviving_a_failed_session_fails_the_reset_check() -> None:
    StaleAcrossSessions.stale.clear()
    report = run_check(CHAT, CHAT_DATA, StaleAcrossSessions)
    StaleAcrossSessions.stale.clear()
    reset = by_name(report)["reset"]
    assert reset.failures == reset.cases
    assert reset.first_failure is not None
    assert reset.first_failure.problem == "fresh session differs in telemetry"
    assert by_name(report)["split"].passed and by_name(report)["multisplit"].passed


def test_unbounded_sse_buffers_fail_the_oversized_check_at_the_ceiling() -> None:
    report = run_check(CHAT, CHAT_DATA, IgnoresSSECeilings)
    oversized = by_name(report)["oversized"]
    assert oversized.failures == oversized.cases
    assert oversized.first_failure is not None
    assert oversized.first_failure.problem == "no failure one character past the line ceiling"
    assert failed_checks(report) == {"oversized"}


UNBOUNDED = {name: 1 << 40 for name in ("max_text_chars", "max_tool_input_chars", "max_tool_calls", "max_blocks",
                                         "max_item_chars", "max_signature_chars", "max_citations",
                                         "max_retained_chars")}


@pytest.mark.parametrize("route", ROUTE_NAMES)
def test_a_session_without_retained_or_structure_ceilings_fails_every_growth_case(route: str) -> None:
    case = next(c for c in COMPLETE if c.route == route)
    limits = limits_for(case.data)
    loose = Limits(max_line_chars=limits.max_line_chars, max_event_chars=limits.max_event_chars, **UNBOUNDED)
    report = check_capture(case.data, session_factory(route, limits=loose), route=route, limits=limits,
                           config=small_config(case.data))
    growth = by_name(report)["growth"]
    assert growth.cases >= 5 and growth.failures == growth.cases
    assert growth.first_failure is not None and growth.first_failure.problem.endswith("without a ceiling")
    assert failed_checks(report) == {"growth"}


def test_one_structure_left_out_of_the_account_fails_its_growth_case_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from webclient._routes.openai_chat import OpenAIChatAccumulator

    def alias_without_ceiling(self: Any, st: Any, index: int, call: Any) -> bool:
        st.by_index[index] = call
        return True

    monkeypatch.setattr(OpenAIChatAccumulator, "_alias", alias_without_ceiling)
    growth = by_name(run_check(CHAT, CHAT_DATA))["growth"]
    assert growth.failures == 1
    assert growth.first_failure is not None and growth.first_failure.case == "growth:call_index_aliases"


def test_growth_cases_trip_within_twice_the_retained_ceiling_at_a_plain_stage() -> None:
    growth = by_name(run_check(GEMINI, next(c.data for c in COMPLETE if c.route == GEMINI)))["growth"]
    assert growth.passed and growth.cases == len(growth.coverage["structures"])
    assert growth.coverage["budget"] == 2 * growth.coverage["retained_ceiling"] + 4 * 64 * 1024
    assert all("retained" in stages for stages in growth.coverage["structures"].values())


def test_a_wrapper_without_pending_counters_cannot_pass_the_memory_bound() -> None:
    report = run_check(CHAT, CHAT_DATA, OpaqueWrapper)
    assert failed_checks(report) == {"oversized"}
    first = by_name(report)["oversized"].first_failure
    assert first is not None and first.problem == "session exposes no pending counters"


def test_a_session_that_raises_fails_the_whole_check_with_exit_code_1() -> None:
    def factory() -> CheckedSession:
        raise ValueError("secret payload detail")

    report = check_capture(CHAT_DATA, factory, route=CHAT)
    assert report.exit_code == 1
    assert report.checks[0].first_failure is not None
    assert (report.checks[0].first_failure.case, report.checks[0].first_failure.problem) == (
        "whole", "session raised ValueError")
    assert "secret" not in json.dumps(report.to_dict())


# -- the pieces ------------------------------------------------------------------------------------


def test_injected_lines_and_events_trip_exactly_one_character_past_their_ceilings() -> None:
    limits = Limits(max_line_chars=300, max_event_chars=1000)

    def factory() -> CheckedSession:
        return StreamSession(CHAT, limits=limits)

    site = injection_sites(scan_capture(CHAT_DATA, CHAT), 3, 0)[1]
    result, problem = inject_line(factory, CHAT_DATA[:site], limits)
    assert problem is None and result is not None
    assert (result.outcome.value, result.stage) == ("buffer_limit", "line")
    result, problem = inject_event(factory, CHAT_DATA[:site], limits)
    assert problem is None and result is not None
    assert (result.outcome.value, result.stage) == ("buffer_limit", "event")
    # One character less than the ceiling allows is not enough to trip, so a ceiling off by one
    # in either direction is reported.
    loose = Limits(max_line_chars=301, max_event_chars=1001)
    _, problem = inject_line(lambda: StreamSession(CHAT, limits=loose), CHAT_DATA[:site], limits)
    assert problem == "no failure one character past the line ceiling"
    tight = Limits(max_line_chars=299, max_event_chars=999)
    _, problem = inject_line(lambda: StreamSession(CHAT, limits=tight), CHAT_DATA[:site], limits)
    assert problem == "tripped before the line reached its ceiling"


@pytest.mark.parametrize(("line", "event"), [
    (300, 1000), (300, 885), (300, 886), (300, 884), (10, 15), (10, 14), (6, 12), (5, 12), (300, 1),
    (300, 300 * 296), (300, 300 * 296 + 7),  # more lines than one injection chunk holds (217)
    (DEFAULT_LIMITS.max_line_chars, 3 * (64 * 1024 - 6)), (DEFAULT_LIMITS.max_line_chars, 4 * (64 * 1024 - 6) - 1)],
    ids=lambda v: str(v))
def test_an_injected_event_trips_one_character_past_its_ceiling_and_a_ceiling_off_by_one_is_reported(
        line: int, event: int) -> None:
    limits = Limits(max_line_chars=line, max_event_chars=event)
    prefix = b""  # (at the stream's start: the small ceilings would not take the capture's first event)
    result, problem = inject_event(lambda: StreamSession(CHAT, limits=limits), prefix, limits)
    assert problem is None and result is not None and (result.outcome.value, result.stage) == ("buffer_limit", "event")
    loose = Limits(max_line_chars=line, max_event_chars=event + 1)
    _, problem = inject_event(lambda: StreamSession(CHAT, limits=loose), prefix, limits)
    assert problem == "no failure one character past the event ceiling"
    tight = Limits(max_line_chars=line, max_event_chars=event - 1) if event > 1 else None
    if tight is not None:
        _, problem = inject_event(lambda: StreamSession(CHAT, limits=tight), prefix, limits)
        assert problem == "tripped before the event reached its ceiling"


def test_the_injected_event_is_fed_in_reads_of_at_most_one_injection_chunk() -> None:
    # a full line is one chunk, "data:" + 65,530 characters + LF, and adds 65,531 to the event's data
    limits = Limits(max_event_chars=5 * 65531 + 4)
    sizes: list[int] = []

    class Recording(StreamSession):
        def feed(self, data: bytes) -> list[Any]:
            sizes.append(len(data))
            return super().feed(data)

    _, problem = inject_event(lambda: Recording(CHAT, limits=limits), b"", limits)
    assert problem is None and sizes == [64 * 1024] * 5 + [len(b"data:yyy\n"), len(b"data:\n")]


def test_scan_finds_characters_crlf_pairs_tool_json_and_event_boundaries() -> None:
    cmap = scan_capture(CHAT_CRLF, CHAT)
    data = CHAT_CRLF
    for p in cmap.special["multibyte"]:
        assert 0x80 <= data[p] <= 0xBF, "a cut inside a character lands before a continuation byte"
    assert cmap.special["crlf"] == [i + 1 for i in range(len(data) - 1) if data[i : i + 2] == b"\r\n"]
    assert all(data[b - 4 : b] == b"\r\n\r\n" for b in cmap.boundaries)
    assert cmap.events == data.count(b"\r\n\r\n")
    spans = bytes(data[p] for p in cmap.special["tool_json"])
    assert "Zü".encode() in spans and b"rich" in spans and b"weather" not in spans
    assert cmap.complete_from == len(data) - 1  # the final blank line's CR already dispatches
    assert set(CATEGORIES) == set(cmap.special)


def test_trailer_after_the_terminal_event_may_complete_but_nothing_before_it() -> None:
    body = sse({"type": "response.created", "response": {}},
               {"type": "response.completed", "response": {"status": "completed"}})
    cmap = scan_capture(body + b": keep-alive\n\ndata: [DONE]\n\n\n", "openai-responses")
    assert cmap.complete_from == len(body)
    # On Chat, [DONE] is the terminal event itself.
    assert scan_capture(CHAT_DATA, CHAT).complete_from == len(CHAT_DATA)


def test_positions_are_every_position_when_small_and_a_seeded_tiered_sample_when_capped() -> None:
    cmap = scan_capture(CHAT_DATA, CHAT)
    every = select_positions(cmap, CheckConfig(), include_zero=False, salt=1)
    assert [p for p, _ in every.items] == list(range(1, len(CHAT_DATA)))
    assert not every.sampled
    capped = select_positions(cmap, CheckConfig(max_splits=10), include_zero=False, salt=1)
    assert len(capped.items) == 10 and capped.sampled
    assert {c for _, c in capped.items} == {"multibyte", "tool_json"}  # the first tier, round-robin
    eof = select_positions(cmap, CheckConfig(max_splits=10), include_zero=True, salt=2, tiers=EOF_TIERS)
    assert {c for _, c in eof.items} == {"boundary", "tail"}
    first_tier = len(cmap.special["multibyte"]) + len(set(cmap.special["tool_json"]) - set(cmap.special["multibyte"]))
    roomy = select_positions(cmap, CheckConfig(max_splits=first_tier + 5), include_zero=False, salt=1)
    assert roomy.coverage()["by_category"]["multibyte"] == len(cmap.special["multibyte"])
    assert sum(1 for _, c in roomy.items if c in ("boundary", "tail")) == 5
    again = select_positions(cmap, CheckConfig(max_splits=10), include_zero=False, salt=1)
    other = select_positions(cmap, CheckConfig(max_splits=10, seed=7), include_zero=False, salt=1)
    assert capped == again and capped != other
    budget = select_positions(cmap, CheckConfig(every_position_max=100, work_budget=300 * len(CHAT_DATA)),
                              include_zero=False, salt=1)
    assert len(budget.items) == 300


def test_cut_patterns_include_bytewise_every_special_position_and_seeded_randoms() -> None:
    cmap = scan_capture(CHAT_DATA, CHAT)
    patterns = dict(cut_patterns(cmap, 0, 3))
    assert patterns["bytewise"] == list(range(1, len(CHAT_DATA)))
    assert set(patterns["every-special"]) == {p for ps in cmap.special.values() for p in ps}
    assert {"random#0", "random#1", "random#2", "random#3-dense"} <= set(patterns)
    assert dict(cut_patterns(cmap, 0, 3)) == patterns != dict(cut_patterns(cmap, 1, 3))


def _result_view(route: str) -> Callable[[list[bytes]], tuple[object, ...]]:
    return lambda chunks: comparable(route, chunks)


def _content(result: StreamResult) -> str:
    parts = [result.text, result.refusal, result.reasoning]
    for choice in result.choices:
        parts += [choice.text, choice.refusal, choice.reasoning, *(c.input_text for c in choice.tool_calls)]
    return "\n".join(parts)


@pytest.mark.parametrize("case", COMPLETE, ids=[c.id for c in COMPLETE])
def test_canary_rewrite_keeps_every_complete_recording_complete_with_the_canary_in_its_output(case: Case) -> None:
    canary = Canary.from_seed(3)
    planted, counts = canary_capture(case.data, case.route, canary)
    assert planted.count(b"\n\n") == case.data.count(b"\n\n")
    data, *_ = assert_chunking_invariant(_result_view(case.route), planted, every_split_max=0, random_count=3)
    assert data["outcome"] == "complete", data["stage"]  # type: ignore[index]
    result = replay(case.route, [planted]).result
    assert result is not None
    if counts["text"] or counts["tool_arguments"]:
        assert canary.found_in(_content(result))
    assert not canary.found_in(json.dumps(data["telemetry"]))  # type: ignore[index]


@pytest.mark.parametrize("route", ["openai-chat", "openai-responses", "anthropic-messages", "gemini"])
def test_the_injected_error_event_is_an_upstream_error_on_its_route(route: str) -> None:
    start = {"openai-chat": b"",
             "openai-responses": sse({"type": "response.created", "response": {}}),
             "anthropic-messages": sse({"type": "message_start", "message": {"id": "m", "content": []}}),
             "gemini": b""}[route]
    data = start + error_event(route, "boom")
    view = assert_chunking_invariant(_result_view(route), data, random_count=5)
    assert (view[0]["outcome"], view[0]["stage"]) in {  # type: ignore[index]
        ("upstream_error", "error_event"), ("upstream_error", "error_object")}
    # each in the route's own error shape, so the route reads its type and code
    assert view[0]["provider_error"] == {  # type: ignore[index]
        "openai-chat": ProviderError("server_error", "check"), "openai-responses": ProviderError(None, "server_error"),
        "anthropic-messages": ProviderError("overloaded_error", None),
        "gemini": ProviderError("INTERNAL", "500")}[route].to_dict()


# -- captures with the provider vocabulary of issue 9 ----------------------------------------------


def _vocab_captures() -> list[tuple[str, str, bytes]]:
    """One synthetic capture per route carrying the new types: client calls of every kind the route
    has, signatures, encrypted items, hosted items, citations, logprobs (shapes from the
    test_vocab_* modules, which cite their doc sources)."""
    from tests import test_vocab_anthropic_messages as am
    from tests import test_vocab_gemini as gm
    from tests import test_vocab_openai_chat as oc
    from tests import test_vocab_openai_responses as orr

    custom = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_c", "name": "code_exec",
              "input": 'print("grüße")'}
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAAABo-opaque=="}
    responses = orr.stream(
        *orr.whole_item(0, reasoning, added={**reasoning, "encrypted_content": None}),
        *orr.whole_item(1, orr.HOSTED[0][0]),
        *orr.message(2, "Grüße aus Köln", [{"type": "url_citation", "start_index": 0, "end_index": 5,
                                          "url": "https://example.com", "title": "Ex"}]),
        *orr.whole_item(3, custom, orr.ev("response.custom_tool_call_input.delta", item_id="ctc_1", output_index=3,
                                          delta='print("grü'),
                        orr.ev("response.custom_tool_call_input.delta", item_id="ctc_1", output_index=3,
                               delta='ße")'),
                        orr.ev("response.custom_tool_call_input.done", item_id="ctc_1", output_index=3,
                               input='print("grüße")'), added={**custom, "input": ""}),
        *orr.whole_item(4, orr.COMPUTER))
    anthropic = am.message(
        am.start(0, {"type": "thinking", "thinking": ""}), am.delta(0, type="thinking_delta", thinking="Hmm… ✓"),
        am.delta(0, type="signature_delta", signature="EqQBCgIYAhIM1gbcDa9G"), am.stop(0),
        *am.whole(1, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3p"}),
        am.start(2, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        am.delta(2, type="input_json_delta", partial_json='{"query": "Köln"}'), am.stop(2),
        *am.whole(3, am.RESULT_BLOCKS[0]),
        am.start(4, {"type": "text", "text": ""}), am.delta(4, type="text_delta", text="Grüße"),
        am.delta(4, type="citations_delta", citation={"type": "web_search_result_location", "cited_text": "Köln",
                                                      "url": "https://example.com", "title": "Ex",
                                                      "encrypted_index": "Eo8BCioIAhgB"}), am.stop(4))
    gemini = sse(gm.chunk({"text": "Plan ✓", "thought": True, "thoughtSignature": "QUJD"}),
                 gm.chunk({"functionCall": {"name": "f", "args": {"city": "Zürich"}}, "thoughtSignature": "REVG"}),
                 gm.chunk(gm.DATA_PARTS[0]), gm.chunk(gm.DATA_PARTS[1]),
                 gm.chunk({"text": "Grüße"}, citationMetadata={"citationSources": [{"startIndex": 0, "endIndex": 3}]}),
                 gm.chunk({"text": "", "thoughtSignature": "R0hJ"}, finish="STOP",
                          groundingMetadata={"webSearchQueries": ["Köln"]}))
    tok = [{"token": "Grü", "logprob": -0.1, "bytes": [71, 114, 195, 188], "top_logprobs": []}]
    chat = sse(oc.chunk(oc.ch(content="Grü", logprobs={"content": tok})),
               oc.chunk(oc.ch(content="ße", annotations=[{"type": "url_citation", "url_citation": {"url": "u"}}])),
               oc.chunk(oc.ch(tool_calls=[{"index": 0, "id": "call_1", "type": "custom",
                                           "custom": {"name": "code_exec", "input": "print('ü"}}])),
               oc.chunk(oc.ch(tool_calls=[{"index": 0, "custom": {"input": "')"}}])),
               oc.chunk(oc.ch(finish="tool_calls")), "[DONE]")
    return [("openai-responses", "responses", responses), ("anthropic-messages", "anthropic", anthropic),
            ("gemini", "gemini", gemini), (CHAT, "chat", chat)]


VOCAB_CAPTURES = _vocab_captures()


@pytest.mark.parametrize(("route", "data"), [(r, d) for r, _, d in VOCAB_CAPTURES],
                         ids=[n for _, n, _ in VOCAB_CAPTURES])
def test_check_passes_captures_carrying_the_new_item_types_signatures_and_citations(route: str, data: bytes) -> None:
    reference = replay(route, [data]).result
    assert reference is not None and reference.outcome.value == "complete"
    assert reference.assistant_message and (reference.items or reference.citations or reference.logprobs)
    report = run_check(route, data)
    assert report.exit_code == 0, [c.to_dict() for c in report.checks if not c.passed]


def _whole_input_captures() -> list[tuple[str, str, bytes]]:
    """Captures whose tool input arrives whole or names its call in an unusual way: a Responses call
    whose arguments come only in ``function_call_arguments.done`` (LM Studio's shape, the recording
    ``lmstudio-tool-call``) or only in its closed item, a custom call whose input comes only in
    ``custom_tool_call_input.done``, an MCP approval request (its arguments in the item), an Anthropic
    ``tool_use`` whose input comes whole in the block's start, and Chat calls whose later fragments name
    their call by id alone, interleaved; and Responses items of several parts (two summaries, two text
    parts and a refusal) whose closed copies hold each part."""
    from tests import test_vocab_anthropic_messages as am
    from tests import test_vocab_openai_chat as oc
    from tests import test_vocab_openai_responses as orr

    function = {"type": "function_call", "id": "fc_1", "call_id": "call_f", "name": "weather",
                "arguments": '{"city": "Zürich", "days": 3}', "status": "completed"}
    custom = {"type": "custom_tool_call", "id": "ctc_2", "call_id": "call_c", "name": "code_exec",
              "input": 'print("grüße")'}
    approval = {"type": "mcp_approval_request", "id": "mcpr_3", "server_label": "deepwiki", "name": "ask_question",
                "arguments": '{"question": "Wie geht\'s?"}'}
    responses = orr.stream(
        *orr.whole_item(0, function, added={**function, "arguments": "", "status": "in_progress"}),
        *orr.whole_item(1, custom, orr.ev("response.custom_tool_call_input.done", item_id="ctc_2", output_index=1,
                                          input='print("grüße")'), added={**custom, "input": ""}),
        *orr.whole_item(2, approval, added=approval))
    anthropic = am.message(am.start(0, {"type": "tool_use", "id": "toolu_1", "name": "weather",
                                        "input": {"city": "Köln", "units": ["c"]}}), am.stop(0), stop="tool_use")
    chat = sse(oc.chunk(oc.ch(tool_calls=[{"index": 0, "id": "call_a", "type": "function",
                                           "function": {"name": "f", "arguments": '{"q": '}}])),
               oc.chunk(oc.ch(tool_calls=[{"index": 1, "id": "call_b", "type": "function",
                                           "function": {"name": "g", "arguments": '{"r": '}}])),
               oc.chunk(oc.ch(tool_calls=[{"id": "call_a", "function": {"arguments": '"alpha"}'}}])),
               oc.chunk(oc.ch(tool_calls=[{"id": "call_b", "function": {"arguments": '"beta"}'}}])),
               oc.chunk(oc.ch(finish="tool_calls")), "[DONE]")
    ev = orr.ev
    parts = orr.stream(
        ev("response.output_item.added", output_index=0, item={"id": "rs_0", "type": "reasoning", "summary": []}),
        *(ev("response.reasoning_summary_text.delta", item_id="rs_0", output_index=0, summary_index=n, delta=d)
          for n, d in enumerate(("Plan ", "Prüfen"))),
        ev("response.output_item.done", output_index=0,
           item={"id": "rs_0", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan "},
                                                                 {"type": "summary_text", "text": "Prüfen"}]}),
        ev("response.output_item.added", output_index=1, item={"id": "msg_1", "type": "message", "content": []}),
        *(ev(f"response.{kind}.delta", item_id="msg_1", output_index=1, content_index=n, delta=d)
          for n, (kind, d) in enumerate((("output_text", "Grüße "), ("output_text", "aus Köln"), ("refusal", "Nein")))),
        ev("response.output_item.done", output_index=1,
           item={"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Grüße ", "annotations": []},
                             {"type": "output_text", "text": "aus Köln", "annotations": []},
                             {"type": "refusal", "refusal": "Nein"}]}))
    return [("openai-responses", "responses-whole", responses), ("anthropic-messages", "anthropic-whole", anthropic),
            (CHAT, "chat-by-id", chat), ("openai-responses", "responses-parts", parts)]


WHOLE_INPUT_CAPTURES = _whole_input_captures()


def _kept_captures() -> list[tuple[str, str, bytes]]:
    """Captures whose answers keep provider objects verbatim: every hosted Responses item with its
    progress events, annotations, a computer call that types text, the whole-item shell, local shell
    and apply_patch calls (shell commands streamed), and a completed snapshot holding copies of the
    items; every Anthropic result block, citations in a text block's start and in a ``citations_delta``,
    and a compaction block filled by its delta; every Gemini result part with grounding, URL context and
    citation metadata."""
    from tests import test_vocab_anthropic_messages as am
    from tests import test_vocab_gemini as gm
    from tests import test_vocab_openai_responses as orr

    ev = orr.ev
    typing = {"type": "computer_call", "id": "cu_2", "call_id": "call_t", "status": "completed",
              "actions": [{"type": "click", "button": "left", "x": 1, "y": 2}, {"type": "type", "text": "hunter2 ✓"}],
              "pending_safety_checks": []}
    def fields(kind: str, item: dict[str, Any]) -> dict[str, Any]:  # what each progress event carries
        if kind.endswith(".delta"):
            return {"delta": "ß"}
        if kind.endswith(("_code.done", "_arguments.done")):
            return {key: item[key] for key in ("code", "arguments") if key in item}
        return {"partial_image_b64": "iVBO", "partial_image_index": 0} if kind.endswith(".partial_image") else {}

    events: list[Any] = []
    for index, (item, progress) in enumerate(orr.HOSTED):
        between = [ev(kind, item_id=item["id"], output_index=index, **fields(kind, item)) for kind in progress]
        events += orr.whole_item(index, item, *between)
    citation = {"type": "url_citation", "start_index": 0, "end_index": 4, "url": "https://example.com/ü", "title": "Ü"}
    one = {**typing, "id": "cu_3", "call_id": "call_u", "action": {"type": "type", "text": "swordfish"}}
    del one["actions"]
    message = orr.message(len(orr.HOSTED), "Grüße", [citation])
    events += message + orr.whole_item(len(orr.HOSTED) + 1, typing)
    events += orr.whole_item(len(orr.HOSTED) + 2, one)
    n = len(orr.HOSTED) + 3
    steps = (("added", {"command": ""}), ("delta", {"delta": "ls "}), ("delta", {"delta": "-la"}),
             ("done", {"command": "ls -la"}))
    command = [ev(f"response.shell_call_command.{step}", output_index=n, command_index=0, **fields)
               for step, fields in steps]
    events += orr.whole_item(n, orr.SHELL, *command, added={**orr.SHELL, "action": {"commands": []}})
    shell_output = {"type": "shell_call_output", "id": "sho_1", "call_id": "call_sh", "status": "completed",
                    "output": [{"stdout": "a.txt\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}
    events += orr.whole_item(n + 1, shell_output, ev("response.shell_call_output_content.delta", item_id="sho_1",
                                                     output_index=n + 1, command_index=0, delta={"stdout": "a.txt\n"}))
    events += orr.whole_item(n + 2, orr.LOCAL_SHELL) + orr.whole_item(n + 3, orr.APPLY_PATCH)
    output = [item for item, _ in orr.HOSTED] + [message[-1][1]["item"], typing, one, orr.SHELL, shell_output,
                                                 orr.LOCAL_SHELL, orr.APPLY_PATCH]
    responses = orr.stream(*events, terminal=ev("response.completed", response={
        "id": "resp_67c", "status": "completed", "output": output, "usage": {"total_tokens": 9}}))
    anthropic = am.message(
        *(e for n, block in enumerate(am.RESULT_BLOCKS) for e in am.whole(n, block)),
        am.start(20, {"type": "text", "text": "", "citations": [{"type": "char_location", "cited_text": "Köln",
                                                                  "document_index": 0, "document_title": "Atlas"}]}),
        am.delta(20, type="text_delta", text="Grüße"),
        am.delta(20, type="citations_delta", citation={"type": "page_location", "cited_text": "Bonn",
                                                       "document_title": "Atlas", "start_page_number": 1}),
        am.stop(20),
        am.start(21, {"type": "compaction", "content": None, "encrypted_content": None}),
        am.delta(21, type="compaction_delta", content="Earlier: Köln.", encrypted_content="EpwBCioIDxgC"),
        am.stop(21),
        *am.whole(22, {"type": "compaction", "content": "Before: Trier.", "encrypted_content": "EqQBCgIYAhIM"}))
    gemini = sse(*(gm.chunk(part) for part in gm.DATA_PARTS),
                 gm.chunk({"text": "Grüße"}, citationMetadata={"citationSources": [
                     {"startIndex": 0, "endIndex": 3, "uri": "https://example.com/ö", "title": "Ö"}]}),
                 gm.chunk({"text": ""}, finish="STOP", urlContextMetadata={"urlMetadata": [
                     {"retrievedUrl": "https://example.com/ä", "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS"}]},
                     groundingMetadata={"webSearchQueries": ["Köln"], "groundingChunks": [
                         {"web": {"uri": "https://example.com/k", "title": "Kö"}}]}))
    return [("openai-responses", "responses-kept", responses), ("anthropic-messages", "anthropic-kept", anthropic),
            ("gemini", "gemini-kept", gemini)]


KEPT_CAPTURES = _kept_captures()


def _unknown_captures() -> list[tuple[str, str, bytes]]:
    """Captures that commit only with ``keep_unknown_items``, each with content in what the route does not
    know: Chat audio, generated images and a tool-call fragment of an unknown type; a Responses item of an
    unknown type, a content part of one in a message, an event type the route does not handle, and a reasoning
    item's ``encrypted_content``; an Anthropic block and a delta of unknown types and an unknown event; a
    Gemini part with fields the route does not know."""
    from tests import test_vocab_anthropic_messages as am
    from tests import test_vocab_gemini as gm
    from tests import test_vocab_openai_responses as orr

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "c", "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": delta, "finish_reason": finish}]}

    chat = sse(chunk({"role": "assistant", "content": "Grüße"}),
               chunk({"audio": {"id": "audio_1", "data": "UklGRiQAAABXQVZF", "transcript": "Hallo Köln",
                                "expires_at": 1729018505}}),
               chunk({"images": [{"type": "image_url",
                                  "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}),
               chunk({"tool_calls": [{"index": 0, "id": "ws_1", "type": "web_search",
                                      "web_search": {"query": "wetter köln"}}]}),
               chunk({"reasoning_details": [{"type": "reasoning.diagram", "index": 0, "svg": "<svg>Dom</svg>"}]}),
               chunk({}, "stop"), "[DONE]")
    ev = orr.ev
    program = {"type": "hologram_program", "id": "prg_1", "call_id": "call_p", "code": "run('Köln')",
               "fingerprint": "fp-Speyer", "content": [{"type": "program_line", "text": "x = 'Ulm'"}]}
    reasoning = {"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAAABo-sealed==",
                 "summary": [{"type": "summary_image", "url": "https://example.com/plan-Köln"}]}
    done = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "Grüße", "annotations": []},
                        {"type": "output_audio", "transcript": "Hallo Bonn", "data": "UklGRbonn"}]}
    message = orr.whole_item(
        1, done,
        ev("response.content_part.added", item_id="msg_1", output_index=1, content_index=0,
           part={"type": "output_text", "text": "", "annotations": []}),
        ev("response.output_text.delta", item_id="msg_1", output_index=1, content_index=0, delta="Grüße"),
        ev("response.content_part.added", item_id="msg_1", output_index=1, content_index=1,
           part={"type": "output_audio", "transcript": "", "data": ""}),
        ev("response.output_audio_transcript.delta", item_id="msg_1", output_index=1, content_index=1,
           delta="Hallo Bonn"),
        ev("response.content_part.done", item_id="msg_1", output_index=1, content_index=1,
           part={"type": "output_audio", "transcript": "Hallo Bonn", "data": "UklGRbonn"}),
        added={"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []})
    responses = orr.stream(
        *orr.whole_item(0, reasoning, added={**reasoning, "encrypted_content": "gAAAAABo-early"}), *message,
        *orr.whole_item(2, program, added=program),
        ev("response.future_progress.note", item_id="prg_1", output_index=2, note="Lagebericht Trier"),
        terminal=ev("response.completed", response={"id": "resp_67c", "status": "completed",
                                                    "output": [reasoning, done, program],
                                                    "usage": {"total_tokens": 9}}))
    anthropic = am.message(
        *am.whole(0, {"type": "hologram", "id": "hg_1", "payload": "Köln bei Nacht"}),
        am.start(1, {"type": "text", "text": ""}), am.delta(1, type="text_delta", text="Grüße"),
        am.delta(1, type="sparkle_delta", sparkle="✨ geheim"), am.stop(1),
        {"type": "future_event", "note": "Lagebericht Mainz"})
    gemini = sse(gm.chunk({"text": "Grüße"}),
                 gm.chunk({"futurePart": {"id": "fp_1", "note": "Dom zu Köln"}, "futureHint": "geheim"}),
                 gm.chunk({"text": ""}, finish="STOP"))
    return [("openai-chat", "chat-unknown", chat), ("openai-responses", "responses-unknown", responses),
            ("anthropic-messages", "anthropic-unknown", anthropic), ("gemini", "gemini-unknown", gemini)]


UNKNOWN_CAPTURES = _unknown_captures()


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value (keys left out)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    return [s for item in value for s in _strings(item)] if isinstance(value, list) else []


def _content_strings(value: Any) -> list[str]:
    """The strings of a kept provider object but those under its vocabulary keys (types, ids ...)."""
    if isinstance(value, dict):
        return [s for key, item in value.items() if not _vocabulary_key(key) for s in _content_strings(item)]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _content_strings(item)]
    return [value] if isinstance(value, str) else []


#: Responses calls whose arguments are their item's fields (``_WHOLE_CALL_FIELDS`` of the check).
WHOLE_ITEM_KINDS = ("shell", "local_shell", "apply_patch")


def _not_the_canary(result: StreamResult, canary: Canary) -> list[str]:
    """Where the committed content holds anything but the canary: each choice's text channels, each
    tool call's arguments and input (every string of JSON; free-text input as a whole), and the content
    strings of its kept objects (items, citations, logprobs). Of a computer call only the typed text
    counts: its other actions are the route's vocabulary (``click``, ``left``), not content."""
    found: list[str] = []
    for choice in result.choices:
        for name in ("text", "refusal", "reasoning"):
            if getattr(choice, name).replace(canary.value, "").strip():
                found.append(f"choice {choice.index} {name}")
        for name in ("items", "citations", "logprobs"):
            if any(v != canary.value for v in _content_strings(getattr(choice, name))):
                found.append(f"choice {choice.index} {name}")
        for call in choice.tool_calls:
            if call.kind == "computer":
                arguments = call.arguments if isinstance(call.arguments, dict) else {}
                for action in [arguments.get("action"), *(arguments.get("actions") or ())]:
                    if isinstance(action, dict) and action.get("text", canary.value) != canary.value:
                        found.append(f"choice {choice.index} call {call.call} typed text")
                continue
            if call.kind in WHOLE_ITEM_KINDS:  # its arguments (and input) are its item's fields, types included
                values = _content_strings(call.arguments)
            else:
                values = _strings(call.arguments)  # parsed arguments, or an input sent whole
                try:
                    values += _strings(json.loads(call.input_text)) if call.input_text else []
                except ValueError:
                    values.append(call.input_text.replace(canary.value, ""))
            # (a value streamed in pieces, Gemini's partialArgs, holds the canary once per piece)
            if any(v.replace(canary.value, "") for v in values):
                found.append(f"choice {choice.index} call {call.call} ({call.kind})")
    return found


ALL_CAPTURES = ([(c.route, c.id, c.data) for c in COMPLETE] + [(r, n, d) for r, n, d in VOCAB_CAPTURES]
                + WHOLE_INPUT_CAPTURES + KEPT_CAPTURES)


@pytest.mark.parametrize(("route", "data"), [(r, d) for r, _, d in ALL_CAPTURES], ids=[n for _, n, _ in ALL_CAPTURES])
def test_canary_rewrite_leaves_no_committed_text_or_tool_argument_but_the_canary(route: str, data: bytes) -> None:
    reference = replay(route, [data]).result
    assert reference is not None and reference.outcome.value == "complete"
    canary = Canary.from_seed(8)
    planted, counts = canary_capture(data, route, canary)
    result = replay(route, [planted]).result
    assert result is not None and result.outcome.value == "complete", result and result.stage
    assert _not_the_canary(result, canary) == []
    if _not_the_canary(reference, canary):  # the capture had content of its own: it was all replaced
        assert sum(counts.values()) > 0 and canary.found_in(json.dumps(result.to_dict(), ensure_ascii=False))


class LosesSignaturesWhenChunked(StreamSession):
    """Bug: signatures kept from the first network chunk only (state reset per feed)."""

    def __init__(self, route: str, **kwargs: Any) -> None:
        super().__init__(route, **kwargs)
        self.feeds = 0

    def feed(self, data: bytes) -> list[Any]:
        self.feeds += 1 if data else 0
        return super().feed(data)

    def finish(self) -> StreamResult:
        result = super().finish()
        if self.feeds > 1 and isinstance(result.assistant_message, dict):
            content = [{**b, "signature": ""} if "signature" in b else b
                       for b in result.assistant_message.get("content", [])]
            return dataclasses.replace(result, assistant_message={**result.assistant_message, "content": content})
        return result


def test_a_session_that_loses_signatures_under_chunking_fails_split_on_the_assistant_message() -> None:
    route, _, data = VOCAB_CAPTURES[1]
    report = run_check(route, data, LosesSignaturesWhenChunked)
    first = by_name(report)["split"].first_failure
    assert first is not None and first.problem == "differs in assistant_message"
    assert "multisplit" in failed_checks(report)


# -- more of the check engine's contract (from a mutation run of webclient/_check.py) -------------

CHUNK = {"id": "c", "object": "chat.completion.chunk"}


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {**CHUNK, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_a_capture_above_the_exhaustive_size_gets_the_work_budget_in_positions() -> None:
    line = b"data: " + json.dumps(chat_chunk({"content": "x" * 1000})).encode() + b"\n\n"
    data = (line * (256 * 1024 // len(line) + 1))[: 256 * 1024]
    positions = select_positions(scan_capture(data, CHAT), CheckConfig(), include_zero=False, salt=1)
    assert positions.sampled
    assert len(positions.items) == 256 * 1024 * 1024 // len(data) == 1024


def test_check_values_are_frozen_and_slotted() -> None:
    failure = CaseFailure("split", "split@1", 1, "every", "complete", None, "differs in text")
    result = CheckResult("split", 1, 1, failure)
    report = CheckReport(CHAT, 10, 1, "complete", None, "stop", 0, (result,))
    positions = Positions(((1, "every"),), 1, 0, False)
    for value in (failure, result, report, Canary.from_seed(0), CheckConfig(), positions):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, dataclasses.fields(value)[0].name, "x")
        assert not hasattr(value, "__dict__")
    assert hash(failure) == hash(dataclasses.replace(failure))


def test_position_coverage_counts_every_position_once_by_category() -> None:
    positions = select_positions(scan_capture(CHAT_DATA, CHAT), CheckConfig(max_splits=40), include_zero=False,
                                 salt=1)
    coverage = positions.coverage()
    assert coverage["positions"] == 40 == sum(coverage["by_category"].values())
    assert coverage["candidates"] == len(CHAT_DATA) - 1
    assert set(coverage) == {"positions", "candidates", "special_candidates", "sampled", "by_category"}


def test_the_canary_is_found_by_its_token_alone() -> None:
    canary = Canary.from_seed(5)
    token = canary.marker[-10:]
    assert canary.found_in(f"model {token}") and canary.found_in(canary.marker)
    assert not canary.found_in(canary.marker[:-1])


def test_the_leak_check_runs_every_failure_path_on_a_capture_with_tool_arguments() -> None:
    report = by_name(run_check(CHAT, CHAT_DATA))
    # the oversized check runs a line and an event at each site, passing or not
    assert report["oversized"].cases == 2 * report["oversized"].coverage["sites"] == 6
    leak = report["leak"]
    # whole, chunked by 7, three cut-short prefixes, cut mid-line, error event, bad envelope,
    # bad UTF-8 after the canary, broken tool JSON, oversized line
    assert leak.cases == 11 and leak.passed


class PendingLineAtCompletion(StreamSession):
    """Bug: a complete result whose telemetry still counts pending line characters."""

    def finish(self) -> StreamResult:
        result = super().finish()
        if result.outcome is Outcome.COMPLETE:
            return result.with_telemetry(dataclasses.replace(result.telemetry, pending_line_character_count=3))
        return result


def test_a_wrapper_without_pending_counters_fails_every_line_and_event_injection() -> None:
    oversized = by_name(run_check(CHAT, CHAT_DATA, OpaqueWrapper))["oversized"]
    assert oversized.cases == oversized.failures == 2 * oversized.coverage["sites"] == 6


def test_a_complete_result_with_pending_line_characters_fails_the_whole_check() -> None:
    report = run_check(CHAT, CHAT_DATA, PendingLineAtCompletion)
    whole = report.checks[0]
    assert whole.first_failure is not None
    assert whole.first_failure.problem == "complete with pending line/event characters in telemetry"
    assert report.exit_code == 1


def test_canary_rewrite_covers_legacy_function_call_arguments_and_chat_reasoning() -> None:
    data = sse(chat_chunk({"role": "assistant", "reasoning": "mull"}),
               chat_chunk({"function_call": {"name": "f", "arguments": ""}}),
               chat_chunk({"function_call": {"arguments": '{"q": "'}}),
               chat_chunk({"function_call": {"arguments": 'abc"}'}}),
               chat_chunk({}, "function_call"), "[DONE]")
    canary = Canary.from_seed(1)
    planted, counts = canary_capture(data, CHAT, canary)
    assert counts == {"text": 1, "tool_arguments": 1, "error": 0, "kept": 0}
    result = StreamSession(CHAT)
    result.open(200, "text/event-stream")
    result.feed(planted)
    done = result.finish()
    assert done.outcome is Outcome.COMPLETE
    assert done.reasoning == canary.value
    assert json.loads(done.tool_calls[0].input_text) == {"q": canary.value}


def test_scan_marks_the_bytes_of_a_gemini_argument_object_as_tool_json() -> None:
    args = '{"q":"a}","n":[1,{"b":"]"}],"s":"x"}'
    line = ('data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":' + args
            + '}}]},"index":0}]}\n\n').encode()
    cmap = scan_capture(line, GEMINI)
    start = line.index(args.encode())
    assert cmap.special["tool_json"] == list(range(start + 1, start + len(args)))


def test_canary_rewrite_keeps_tool_calls_of_each_anthropic_message_apart() -> None:
    def message(n: int) -> list[dict[str, Any]]:
        return [{"type": "message_start", "message": {"id": f"m{n}", "content": []}},
                {"type": "content_block_start", "index": 0,
                 "content_block": {"type": "tool_use", "id": f"t{n}", "name": "f", "input": {}}},
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "input_json_delta", "partial_json": f'{{"m": "{n}"}}'}}]

    canary = Canary.from_seed(2)
    planted, counts = canary_capture(sse(*message(1), *message(2)), "anthropic-messages", canary)
    assert counts["tool_arguments"] == 2
    fragments = [json.loads(line[6:])["delta"]["partial_json"] for line in planted.split(b"\n")
                 if b"input_json_delta" in line]
    assert [json.loads(f) for f in fragments] == [{"m": canary.value}] * 2


def test_growth_site_is_none_when_the_capture_lacks_the_start_event() -> None:
    body = sse({"type": "response.completed", "response": {"status": "completed"}})
    assert growth_site(scan_capture(body, "openai-responses"), "openai-responses") is None


class RaisesWithInput(StreamSession):
    """Bug: an exception whose message quotes the line that broke the envelope."""

    def feed(self, data: bytes) -> list[Any]:
        if b"data: {" + Canary.from_seed(0).value.encode() in data:
            raise ValueError(data.decode("utf-8", "replace")[:200])
        return list(super().feed(data))


def test_an_exception_quoting_the_payload_fails_the_leak_check_and_says_so() -> None:
    report = run_check(CHAT, CHAT_DATA, RaisesWithInput)
    leak = by_name(report)["leak"]
    assert leak.first_failure is not None
    assert leak.first_failure.problem == "session raised ValueError with the canary in its text"
    assert not Canary.from_seed(0).found_in(json.dumps(report.to_dict(), ensure_ascii=False))


class AbortPoisonsTheNext(StreamSession):
    """Bug: cancelling a session leaves state behind that the next session picks up."""

    poisoned: ClassVar[list[bool]] = []

    def abort(self, outcome: Outcome = Outcome.CANCELLED, stage: str = "caller") -> StreamResult:
        self.poisoned.append(True)
        return super().abort(outcome, stage)

    def finish(self) -> StreamResult:
        result = super().finish()
        if self.poisoned and result.outcome is Outcome.COMPLETE:
            return dataclasses.replace(result, text=result.text + "!")
        return result


def run_with_shared_state(session: type[StreamSession], shared: list[Any]) -> CheckReport:
    """``run_check`` on the Chat capture with a bug that keeps state in the class-level list ``shared``,
    emptied before and after."""
    shared.clear()
    try:
        return run_check(CHAT, CHAT_DATA, session)
    finally:
        shared.clear()


def test_state_left_by_a_cancelled_session_fails_the_reset_check() -> None:
    report = run_with_shared_state(AbortPoisonsTheNext, AbortPoisonsTheNext.poisoned)
    reset = by_name(report)["reset"]
    assert failed_checks(report) == {"reset"}
    assert reset.first_failure is not None and reset.first_failure.case == "after-cancel"


class PendingDecoderBytes(StreamSession):
    """A session that holds ``held`` undecoded bytes at every step (3 is a legal partial character)."""

    held = 3

    @property
    def pending_bytes(self) -> int:
        return self.held


@pytest.mark.parametrize(("held", "problem"), [(3, None), (4, "4 pending decoder bytes")])
def test_the_oversized_check_allows_three_pending_decoder_bytes_not_four(held: int, problem: str | None) -> None:
    class Held(PendingDecoderBytes):
        pass

    Held.held = held
    oversized = by_name(run_check(CHAT, CHAT_DATA, Held))["oversized"]
    assert (oversized.first_failure.problem if oversized.first_failure else None) == problem


class IgnoresEventCeiling(StreamSession):
    """Bug: the event buffer is unbounded; the line ceiling still holds."""

    def __init__(self, route: str, **kwargs: Any) -> None:
        super().__init__(route, **kwargs)
        limits = kwargs["limits"]
        self._parser = EventStreamParser(Limits(max_line_chars=limits.max_line_chars, max_event_chars=1 << 30))


def test_an_unbounded_event_buffer_fails_the_event_injection_at_an_event_boundary() -> None:
    oversized = by_name(run_check(CHAT, CHAT_DATA, IgnoresEventCeiling))["oversized"]
    first = oversized.first_failure
    assert first is not None
    assert (first.case, first.category, first.problem) == (
        "event@boundary 0", "boundary", "no failure one character past the event ceiling")


@pytest.mark.parametrize("route", ["openai-chat", "openai-responses", "anthropic-messages", "gemini"])
def test_canary_rewrite_plants_the_canary_in_provider_error_messages(route: str) -> None:
    canary = Canary.from_seed(4)
    planted, counts = canary_capture(error_event(route, "upstream overloaded"), route, canary)
    assert counts == {"text": 0, "tool_arguments": 0, "error": 1, "kept": 0}
    assert canary.marker.encode() in planted and b"upstream overloaded" not in planted


def test_canary_rewrite_joins_chat_argument_fragments_that_name_their_call_by_id_only() -> None:
    def call(**fields: Any) -> dict[str, Any]:
        return chat_chunk({"tool_calls": [fields]})

    data = sse(call(index=0, id="a", type="function", function={"name": "f", "arguments": '{"q": '}),
               call(id="a", function={"arguments": '"abc"}'}), chat_chunk({}, "tool_calls"), "[DONE]")
    canary = Canary.from_seed(6)
    planted, counts = canary_capture(data, CHAT, canary)
    assert counts["tool_arguments"] == 1
    fragments = [json.loads(line[6:])["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                 for line in planted.split(b"\n") if b'"arguments"' in line]
    assert json.loads("".join(fragments)) == {"q": canary.value}


def test_the_dense_random_pattern_can_cut_at_every_position() -> None:
    cmap = scan_capture(b"data: 1\n\n", CHAT)
    cuts: set[int] = set()
    for seed in range(40):
        cuts.update(dict(cut_patterns(cmap, seed, 0))["random#0-dense"])
    assert cuts == set(range(1, cmap.size))
    sparse: set[int] = set()  # and so can the sparse ones
    for seed in range(40):
        sparse.update(c for label, cs in cut_patterns(cmap, seed, 2) if label in ("random#0", "random#1") for c in cs)
    assert sparse == set(range(1, cmap.size))


def test_scan_skips_a_byte_order_mark_at_the_start_of_the_capture_only() -> None:
    plain = scan_capture(CHAT_DATA, CHAT)
    marked = scan_capture(b"\xef\xbb\xbf" + CHAT_DATA, CHAT)
    assert [line.value_start for line in marked.data_lines] == [line.value_start + 3 for line in plain.data_lines]
    assert marked.boundaries == [b + 3 for b in plain.boundaries]
    assert len(marked.slots) == len(plain.slots) > 0


# -- the growth cases themselves (webclient/_check_growth.py) ------------------------------------

#: Every structure ceiling small, the retained ceiling out of reach: a growth case must trip at a
#: ceiling of the structure it names.
OWN_CEILINGS = Limits(max_text_chars=65536, max_tool_input_chars=65536, max_tool_calls=64, max_blocks=64,
                      max_item_chars=65536, max_signature_chars=65536, max_citations=64,
                      max_retained_chars=1 << 40)


#: The growth cases that grow an answer channel, and the channel.
TEXT_CHANNELS = {"text": "text", "reasoning": "reasoning", "thinking": "reasoning", "thought": "reasoning",
                 "refusal": "refusal"}

#: Per route: each structure the growth check grows and the stages that may end it.
STRUCTURES = {
    "openai-chat": {"text": ["retained", "text"], "reasoning": ["retained", "text"],
                    "tool_input": ["retained", "tool_input"],
                    "call_index_aliases": ["retained", "tool_calls"], "choices": ["blocks", "retained"],
                    "logprobs": ["items", "retained"], "citations": ["citations", "items", "retained"]},
    "openai-responses": {"text": ["retained", "text"], "refusal": ["retained", "text"],
                         "arguments": ["retained", "tool_input"], "items": ["blocks", "items", "retained"],
                         "citations": ["citations", "items", "retained"]},
    "anthropic-messages": {"text": ["retained", "text"], "thinking": ["retained", "text"],
                           "tool_input": ["retained", "tool_input"], "server_tool_input": ["retained", "tool_input"],
                           "blocks": ["blocks", "retained"], "usage_keys": ["items", "retained"],
                           "citations": ["citations", "items", "retained"]},
    "gemini": {"text": ["retained", "text"], "thought": ["retained", "text"],
               "argument_paths": ["retained", "tool_input"], "argument_values": ["retained", "tool_input"],
               "candidates": ["blocks", "retained"], "message_parts": ["retained"],
               "items": ["items", "retained"], "calls": ["retained", "tool_calls"]},
}


def growth_prefix(route: str) -> bytes:
    data = next(c.data for c in COMPLETE if c.route == route)
    site = growth_site(scan_capture(data, route), route)
    assert site is not None
    return data[:site]


def grow(route: str, case: Any, limits: Limits, budget: int = 8 * 1024 * 1024) -> tuple[StreamResult, bool]:
    """The route's growth prefix, then ``case``'s events up to ``budget`` bytes (as the growth check feeds
    them): the result, and whether the session ended within the budget."""
    session = session_factory(route, limits=limits)()
    session.open(200, "text/event-stream")
    session.feed(growth_prefix(route))
    assert not session.done
    for chunk in feed_chunks(case, budget):
        session.feed(chunk)
        if session.done:
            break
    done = session.done
    return session.finish(), done


@pytest.mark.parametrize("route", ROUTE_NAMES)
def test_every_growth_case_trips_a_ceiling_of_the_structure_it_names(route: str) -> None:
    tripped = {}
    for case in growth_cases(route, OWN_CEILINGS):
        result, _ = grow(route, case, OWN_CEILINGS)
        tripped[case.name] = (result.outcome, result.stage in case.stages)
        grown = [name for name in ("text", "reasoning", "refusal") if len(getattr(result, name)) >= 1024]
        assert grown == ([TEXT_CHANNELS[case.name]] if case.name in TEXT_CHANNELS else []), case.name
        assert (len(result.usage or {}) >= 1024) == (case.name == "usage_keys"), case.name  # the usage kept grew
    assert len(tripped) >= 5
    assert tripped == dict.fromkeys(tripped, (Outcome.BUFFER_LIMIT, True))


@pytest.mark.parametrize("route", ROUTE_NAMES)
@pytest.mark.parametrize("ceiling", [512, 1000, 4096, 40_000])
def test_growth_events_fit_the_line_and_event_ceilings_they_are_sized_for(route: str, ceiling: int) -> None:
    for limits in (Limits(max_line_chars=ceiling), Limits(max_event_chars=ceiling)):
        growth = growth_cases(route, limits)
        assert growth
        longest = max(len(line) for case in growth for event in (*case.head, case.grow(0), case.grow(1))
                      for line in growth_frame(event).split(b"\n"))
        assert longest <= ceiling


@pytest.mark.parametrize("route", ROUTE_NAMES)
def test_growth_is_not_applicable_below_a_line_or_event_ceiling_of_512(route: str) -> None:
    for name in ("max_line_chars", "max_event_chars"):
        assert growth_cases(route, Limits(**{name: 511})) == []
        assert len(growth_cases(route, Limits(**{name: 512}))) >= 5
    assert growth_cases("no-such-route", DEFAULT_LIMITS) == []


def test_a_growth_check_below_the_smallest_line_ceiling_runs_no_case_and_passes() -> None:
    data = sse({"id": "c", "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}, "[DONE]")
    reports = {}
    for ceiling in (511, 512):
        limits = Limits(max_line_chars=ceiling, max_retained_chars=4096)
        report = check_capture(data, session_factory(CHAT, limits=limits), route=CHAT, limits=limits,
                               config=SMALL)
        reports[ceiling] = by_name(report)["growth"]
    assert reports[511].passed and reports[511].cases == 0 and reports[511].coverage["structures"] == {}
    assert reports[512].passed and reports[512].cases == len(reports[512].coverage["structures"]) >= 5


def test_frame_writes_an_event_line_only_for_a_named_event_and_compact_json() -> None:
    assert growth_frame(("content_block_delta", {"a": [1, 2]})) == (
        b'event: content_block_delta\ndata: {"a":[1,2]}\n\n')
    assert growth_frame((None, {"a": {"b": "c"}})) == b'data: {"a":{"b":"c"}}\n\n'


@pytest.mark.parametrize("name", ["text", "blocks"])
def test_feed_chunks_yields_the_head_then_stops_as_soon_as_the_budget_is_reached(name: str) -> None:
    case = next(c for c in growth_cases("anthropic-messages", DEFAULT_LIMITS) if c.name == name)
    head, first = itertools.islice(feed_chunks(case, 1 << 40), 2)
    assert head == b"".join(growth_frame(e) for e in case.head)
    assert 32 * 1024 <= len(first) <= 96 * 1024 and first.endswith(b"\n\n")
    exact = list(itertools.islice(feed_chunks(case, len(head) + len(first)), 5))
    assert exact == [head, first]
    assert len(list(itertools.islice(feed_chunks(case, len(head) + len(first) + 1), 5))) == 3
    assert list(itertools.islice(feed_chunks(case, len(head)), 5)) == [head]


def test_growth_events_of_a_growing_case_open_the_next_fresh_index_every_time() -> None:
    case = next(c for c in growth_cases("anthropic-messages", DEFAULT_LIMITS) if c.name == "blocks")
    first = next(itertools.islice(feed_chunks(case, 1 << 40), 1, 2))
    indexes = [json.loads(line[6:])["index"] for line in first.split(b"\n") if line.startswith(b"data: ")]
    assert len(indexes) > 1 and min(indexes) >= 1000
    assert indexes == list(range(indexes[0], indexes[0] + len(indexes)))


def test_growth_verdict_accepts_buffer_limit_at_retained_or_the_structures_own_stages_only() -> None:
    case = next(c for c in growth_cases(CHAT, DEFAULT_LIMITS) if c.name == "citations")
    assert case.stages == {"citations", "items"}
    assert growth_verdict(case, "buffer_limit", "retained", True) is None
    assert growth_verdict(case, "buffer_limit", "citations", True) is None
    assert growth_verdict(case, "buffer_limit", "items", True) is None
    wrong = "citations did not end as buffer_limit at retained or citations/items"
    assert growth_verdict(case, "buffer_limit", "text", True) == wrong
    assert growth_verdict(case, "buffer_limit", None, True) == wrong
    assert growth_verdict(case, "protocol_error", "citations", True) == wrong
    assert growth_verdict(case, "complete", None, True) == wrong
    unbounded = "citations grew past the budget without a ceiling"
    assert growth_verdict(case, "buffer_limit", "retained", False) == unbounded
    assert growth_verdict(case, None, None, False) == unbounded
    parts = next(c for c in growth_cases(GEMINI, DEFAULT_LIMITS) if c.name == "message_parts")
    assert parts.stages == set() and growth_verdict(parts, "buffer_limit", "retained", True) is None
    assert growth_verdict(parts, "buffer_limit", "signatures", True) == (
        "message_parts did not end as buffer_limit at retained")


@pytest.mark.parametrize("route", ROUTE_NAMES)
def test_growth_coverage_lists_each_structure_of_the_route_with_its_stages_and_retained(route: str) -> None:
    assert expected_stages(growth_cases(route, DEFAULT_LIMITS)) == STRUCTURES[route]
    assert expected_stages([]) == {}


def test_growth_cases_are_frozen_and_slotted() -> None:
    case = growth_cases(CHAT, DEFAULT_LIMITS)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.name = "x"  # type: ignore[misc]
    assert not hasattr(case, "__dict__")


# -- each growth case fails when the structure it names is left unbounded ---------------------------


def growth_only(route: str, limits: Limits) -> CheckResult:
    """The growth check alone, as ``check_capture`` runs it, on the route's complete recording."""
    data = next(c.data for c in COMPLETE if c.route == route)
    return check_growth(data, session_factory(route, limits=limits), scan_capture(data, route), route, limits)


def _merged_usage_uncharged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Anthropic usage merged without its charge: nothing bounds its keys."""
    from webclient._routes._base import RouteAccumulator

    monkeypatch.setattr(RouteAccumulator, "_charge_merged_usage", lambda self, usage: True)


def _parts_uncharged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini message parts kept without their entry against retained."""
    from webclient._routes.gemini import GeminiAccumulator

    def add_part(self: Any, st: Any, part: Any) -> bool:
        st.parts.append(part)
        return True

    monkeypatch.setattr(GeminiAccumulator, "_add_part", add_part)


def _calls_uncharged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls opened without the call ceiling or their entry, and a whole Gemini call's message part kept
    without its entry: only each call's own (two-character) input is charged."""
    from webclient._routes._base import RouteAccumulator
    from webclient._routes.gemini import GeminiAccumulator
    from webclient._toolcalls import ToolCallBuffer, ToolCallState
    from webclient._updates import new_call_update

    def new_call(self: Any, call_id: str | None, name: str | None, kind: str = "function") -> ToolCallBuffer:
        call = ToolCallBuffer(len(self.calls), call_id, name, kind)
        self.calls.append(call)
        self._emit(new_call_update(call.call, call_id, name, ToolCallState.STREAMING.value, None, False))
        return call

    add_part = GeminiAccumulator._add_part

    def add_call_part(self: Any, st: Any, part: Any) -> bool:
        if isinstance(part, dict) and "functionCall" in part:
            st.parts.append(part)
            return True
        return add_part(self, st, part)

    monkeypatch.setattr(RouteAccumulator, "_new_call", new_call)
    monkeypatch.setattr(GeminiAccumulator, "_add_part", add_call_part)


def _input_spread_over_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chat tool-call fragments each opening a new call: no tool input ever grows."""
    from webclient._routes.openai_chat import OpenAIChatAccumulator

    monkeypatch.setattr(OpenAIChatAccumulator, "_resolve",
                        lambda self, st, index, call_id, name, kind: self._open(st, call_id, name, kind))


#: A growth case, how a session leaves its structure unbounded, and ceilings under which the case used to pass
#: anyway, through something else: every message_delta charged whole (usage_keys), the signature ceiling
#: (message_parts), a tool-input ceiling below each call's arguments (calls), the call ceiling (tool_input).
UNBOUNDED_STRUCTURES = [
    pytest.param("anthropic-messages", "usage_keys", _merged_usage_uncharged, {}, id="anthropic-usage_keys"),
    pytest.param(GEMINI, "message_parts", _parts_uncharged, {"max_signature_chars": 4096}, id="gemini-message_parts"),
    pytest.param(GEMINI, "calls", _calls_uncharged, {"max_tool_input_chars": 100}, id="gemini-calls"),
    pytest.param(CHAT, "tool_input", _input_spread_over_calls, {"max_retained_chars": 1 << 20}, id="chat-tool_input"),
]


@pytest.mark.parametrize(("route", "name", "unbound", "ceilings"), UNBOUNDED_STRUCTURES)
def test_a_growth_case_fails_when_the_structure_it_names_is_left_unbounded(
        route: str, name: str, unbound: Callable[[pytest.MonkeyPatch], None], ceilings: dict[str, int],
        monkeypatch: pytest.MonkeyPatch) -> None:
    limits = dataclasses.replace(limits_for(next(c.data for c in COMPLETE if c.route == route)), **ceilings)
    assert growth_only(route, limits).passed
    unbound(monkeypatch)
    growth = growth_only(route, limits)
    assert growth.failures == 1
    assert growth.first_failure is not None and growth.first_failure.case == f"growth:{name}"


def test_usage_key_growth_fails_check_when_merged_usage_is_not_charged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole ``check`` run: only its growth verdict, for usage_keys only, fails."""
    data = next(c.data for c in COMPLETE if c.route == "anthropic-messages")
    assert run_check("anthropic-messages", data).passed
    _merged_usage_uncharged(monkeypatch)
    report = run_check("anthropic-messages", data)
    assert failed_checks(report) == {"growth"}
    growth = by_name(report)["growth"]
    assert growth.failures == 1 and growth.first_failure is not None
    assert (growth.first_failure.case, growth.first_failure.problem) == (
        "growth:usage_keys", "usage_keys grew past the budget without a ceiling")


def test_usage_keys_trip_only_because_new_keys_arrive() -> None:
    """The same events with their keys sent again (cumulative counts, as Anthropic sends them) never trip:
    what ends the case is the merged usage's key growth, not the events."""
    case = next(c for c in growth_cases("anthropic-messages", OWN_CEILINGS) if c.name == "usage_keys")
    result, done = grow("anthropic-messages", case, OWN_CEILINGS, 1 << 20)
    assert done and (result.outcome, result.stage) == (Outcome.BUFFER_LIMIT, "items")
    again = dataclasses.replace(case, grow=lambda k: case.grow(0))
    result, done = grow("anthropic-messages", again, OWN_CEILINGS, 1 << 20)
    keys = case.grow(0)[1]["usage"].keys()
    assert not done and result.usage is not None and keys <= result.usage.keys() and len(result.usage) < 2 * len(keys)


def test_message_parts_accept_the_signature_ceiling_only_when_it_comes_before_the_retained_one() -> None:
    """Each part grown is one entry (64) and one signature character: below ``max_retained_chars // 64``
    the signature ceiling may end the case first, and only then is it accepted."""
    def stages(retained: int) -> frozenset[str]:
        limits = Limits(max_signature_chars=4096, max_retained_chars=retained)
        return next(c for c in growth_cases(GEMINI, limits) if c.name == "message_parts").stages

    assert stages(64 * 4096 + 63) == set()
    assert stages(64 * 4097) == {"signatures"}
    # At the boundary the retained ceiling does come first.
    limits = Limits(max_signature_chars=4096, max_retained_chars=64 * 4096 + 63)
    case = next(c for c in growth_cases(GEMINI, limits) if c.name == "message_parts")
    result, done = grow(GEMINI, case, limits)
    assert done and (result.outcome, result.stage) == (Outcome.BUFFER_LIMIT, "retained")


# -- the canary rewrite, the failure paths and the reset check (a mutation sample of _check.py, seed 41) -------


def test_scan_finds_the_data_line_of_a_capture_that_ends_without_a_line_terminator() -> None:
    cmap = scan_capture(b'data: {"a": 1}\n\ndata: {"b": 2}', CHAT)
    assert [line.obj for line in cmap.data_lines] == [{"a": 1}, {"b": 2}]
    assert cmap.boundaries == [16] and cmap.event_starts == [0, 16]


def test_scan_marks_a_tool_keys_object_value_and_skips_its_scalar_values() -> None:
    call = b'{"functionCall":{"name":"f","args":{"q":"x"}}}'
    scalar = b'{"functionCall":{"args":7,"meta":{"k":1},"name":"g"}}'  # an object follows the number
    line = b'data: {"candidates":[{"content":{"parts":[' + scalar + b"," + call + b"]}}]}\n\n"
    cmap = scan_capture(line, GEMINI)
    start = line.index(b'{"q"')
    assert cmap.special["tool_json"] == list(range(start + 1, start + len(b'{"q":"x"}')))


def test_canary_rewrite_keeps_responses_calls_that_name_themselves_by_output_index_apart() -> None:
    from tests import test_vocab_openai_responses as orr

    def args(index: int, delta: str) -> tuple[str, dict[str, Any]]:
        return orr.ev("response.function_call_arguments.delta", output_index=index, delta=delta)

    data = orr.stream(args(0, '{"q": '), args(1, '{"r": '), args(0, '"alpha"}'), args(1, '"beta"}'))
    canary = Canary.from_seed(9)
    planted, counts = canary_capture(data, "openai-responses", canary)
    assert counts["tool_arguments"] == 2
    assert b"alpha" not in planted and b"beta" not in planted


def test_canary_rewrite_keeps_two_tool_blocks_of_one_anthropic_message_apart() -> None:
    from tests import test_vocab_anthropic_messages as am

    def block(index: int, key: str, value: str) -> list[dict[str, Any]]:
        return [am.start(index, {"type": "tool_use", "id": f"t{index}", "name": "f", "input": {}}),
                am.delta(index, type="input_json_delta", partial_json=f'{{"{key}": ')]

    data = am.message(*block(0, "q", "alpha"), *block(1, "r", "beta"),
                      am.delta(0, type="input_json_delta", partial_json='"alpha"}'),
                      am.delta(1, type="input_json_delta", partial_json='"beta"}'), am.stop(0), am.stop(1),
                      stop="tool_use")
    canary = Canary.from_seed(10)
    planted, counts = canary_capture(data, "anthropic-messages", canary)
    assert counts["tool_arguments"] == 2
    assert b"alpha" not in planted and b"beta" not in planted
    result = replay("anthropic-messages", [planted]).result
    assert result is not None and [c.arguments for c in result.tool_calls] == [{"q": canary.value},
                                                                               {"r": canary.value}]


def test_canary_rewrite_plants_the_canary_in_the_blocks_an_anthropic_message_starts_with_and_check_passes() -> None:
    # Programmatic tool calling: the message starts with its blocks whole (tests/test_vocab_anthropic_messages.py).
    from tests import test_vocab_anthropic_messages as am

    result_block = {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_1",
                    "content": {"type": "code_execution_result", "stdout": "alpha-out", "stderr": "", "return_code": 0,
                                "content": []}}
    content = [result_block, {"type": "text", "text": "beta-text"},
               {"type": "thinking", "thinking": "gamma-thought", "signature": "sig-1"},
               {**am.ROLL, "input": {"player": "delta-arg"}},
               {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "echo", "server_name": "zeta-server",
                "input": {"text": "eta-input"}}]
    data = am.started_with(content, *am.text(5, "epsilon"), stop=None, tail=[
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}, {"type": "message_stop"}])
    canary = Canary.from_seed(12)
    planted, counts = canary_capture(data, "anthropic-messages", canary)
    # the result's stdout and stderr, the MCP call's server name and the message's container (its expiry: the id
    # stays) are kept content; the two inputs arguments
    assert counts == {"text": 3, "tool_arguments": 2, "error": 0, "kept": 4}
    for word in (b"alpha", b"beta", b"gamma", b"delta-arg", b"epsilon", b"zeta", b"eta-input"):
        assert word not in planted
    assert b'"signature":"sig-1"' in planted and b"srvtoolu_1" in planted  # signatures and ids as they came
    result = replay("anthropic-messages", [planted]).result
    assert result is not None and result.committed
    assert result.text == canary.value * 2 and result.reasoning == canary.value
    assert result.details == {"container": {"id": "container_011CWHPPTDTn1XufeRB9uHeH", "expires_at": canary.value}}
    assert [c.arguments for c in result.tool_calls] == [{"player": canary.value}]
    report = run_check("anthropic-messages", data)
    assert report.exit_code == 0, [c.to_dict() for c in report.checks if not c.passed]


@pytest.mark.parametrize("block", ["text", ["text"], None, 7])
def test_canary_rewrite_skips_anthropic_blocks_that_are_not_objects(block: Any) -> None:
    from tests import test_vocab_anthropic_messages as am

    started = am.started_with([block, {"type": "text", "text": "kept-apart"}])
    streamed = am.message(am.start(0, block), *am.text(1, "kept-apart"))
    for data in (started, streamed):
        planted, counts = canary_capture(data, "anthropic-messages", Canary.from_seed(13))
        assert counts["text"] == 1 and b"kept-apart" not in planted


def test_canary_rewrite_skips_gemini_parts_that_are_not_objects_and_counts_each_argument_string() -> None:
    part = {"functionCall": {"name": "f", "args": {"city": "Köln", "days": 3, "tags": ["a", "b"]}}}
    data = sse({"candidates": [{"content": {"role": "model", "parts": [7, {"text": "Grüße"}, part]}, "index": 0}]})
    canary = Canary.from_seed(11)
    planted, counts = canary_capture(data, GEMINI, canary)
    assert counts == {"text": 1, "tool_arguments": 3, "error": 0, "kept": 0}
    parts = json.loads(planted[6:])["candidates"][0]["content"]["parts"]
    assert parts == [7, {"text": canary.value},
                     {"functionCall": {"name": "f", "args": {"city": canary.value, "days": 3,
                                                            "tags": [canary.value, canary.value]}}}]


def test_canary_rewrite_skips_gemini_candidates_that_are_not_objects_and_plants_the_kept_fields_of_the_rest() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
    data = sse({"candidates": [7, {"content": {"parts": [7, code]}, "index": 1,
                                   "groundingMetadata": {"webSearchQueries": ["Köln", "Bonn"]}}]})
    canary = Canary.from_seed(11)
    planted, counts = canary_capture(data, GEMINI, canary)
    assert counts == {"text": 0, "tool_arguments": 0, "error": 0, "kept": 3}
    assert json.loads(planted[6:])["candidates"] == [7, {
        "content": {"parts": [7, {"executableCode": {"language": "PYTHON", "code": canary.value}}]}, "index": 1,
        "groundingMetadata": {"webSearchQueries": [canary.value, canary.value]}}]


#: Vocabulary keys each kept capture holds in its kept objects (so each key's exemption is seen).
KEPT_VOCABULARY = {"responses-kept": {"type", "id", "status", "name", "call_id", "item_id"},
                   "anthropic-kept": {"type", "name", "tool_use_id", "file_id"},
                   "gemini-kept": {"language", "outcome", "mimeType"},
                   "chat-unknown": {"id", "type"},  # (and the unknown reasoning detail's type)
                   "responses-unknown": {"type", "id", "call_id", "item_id", "status"},
                   "anthropic-unknown": {"type", "id"},
                   "gemini-unknown": {"id"}}


@pytest.mark.parametrize(("route", "name", "data"), KEPT_CAPTURES + UNKNOWN_CAPTURES,
                         ids=[n for _, n, _ in KEPT_CAPTURES + UNKNOWN_CAPTURES])
def test_canary_rewrite_leaves_the_types_ids_and_statuses_of_kept_objects_as_they_came(route: str, name: str,
                                                                                      data: bytes) -> None:
    def vocabulary(value: Any, path: str = "") -> list[tuple[str, Any]]:
        """(path, value) of every string under a vocabulary key."""
        if isinstance(value, dict):
            items = [(f"{path}/{key}", item) for key, item in value.items()]
        elif isinstance(value, list):
            items = [(f"{path}/{index}", item) for index, item in enumerate(value)]
        else:
            return []
        return [(p, item) for p, item in items if isinstance(item, str) and _vocabulary_key(p.rpartition("/")[2])] + [
            found for p, item in items for found in vocabulary(item, p)]

    planted, counts = canary_capture(data, route, Canary.from_seed(8))
    before = [vocabulary(line.obj) for line in scan_capture(data, route).data_lines]
    assert [vocabulary(line.obj) for line in scan_capture(planted, route).data_lines] == before
    assert counts["kept"] > 0
    assert KEPT_VOCABULARY[name] <= {path.rpartition("/")[2] for line in before for path, _ in line}


def test_canary_rewrite_finds_an_error_message_inside_a_json_array() -> None:
    canary = Canary.from_seed(12)
    planted, counts = canary_capture(sse([{"error": {"code": 503, "message": "overloaded"}}]), GEMINI, canary)
    assert counts == {"text": 0, "tool_arguments": 0, "error": 1, "kept": 0}
    assert b"overloaded" not in planted and canary.marker.encode() in planted


def test_rewritten_arguments_are_cut_in_proportion_to_the_original_fragments() -> None:
    assert _spread("abcdef", [1, 2, 3]) == ["a", "bc", "def"]
    assert _spread("abcdef", [0, 1]) == ["", "abcdef"]  # an empty first fragment stays empty
    assert _spread("abc", [0, 0]) == ["abc", ""]


def test_cut_points_at_or_past_the_end_never_make_an_empty_chunk() -> None:
    assert _chunks(b"abcd", [0, 2, 2, 4, 9]) == [b"ab", b"cd"]


def test_a_seeded_sample_fills_a_cap_of_every_position_but_one() -> None:
    data = b"data: " + b"x" * 43 + b"\n\n"  # 50 candidates, 3 of them special
    cmap = scan_capture(data, CHAT)
    for seed in range(10):
        positions = select_positions(cmap, CheckConfig(seed=seed, max_splits=49), include_zero=False, salt=1)
        assert positions.sampled and len(positions.items) == 49


def test_growth_starts_after_the_start_event_not_after_an_earlier_event() -> None:
    start = {"type": "message_start", "message": {"id": "m", "content": []}}
    data = sse(("ping", {"type": "ping"}), ("message_start", start), ("ping", {"type": "ping"}),
               ("message_stop", {"type": "message_stop"}))
    cmap = scan_capture(data, "anthropic-messages")
    assert growth_site(cmap, "anthropic-messages") == cmap.boundaries[1]


@pytest.mark.parametrize("route", [CHAT, GEMINI])
def test_growth_on_a_route_without_a_start_event_starts_at_the_first_byte(route: str) -> None:
    data = next(c.data for c in COMPLETE if c.route == route)
    assert growth_site(scan_capture(data, route), route) == 0


def test_a_position_one_that_splits_a_byte_order_mark_is_labelled_multibyte() -> None:
    data = b"\xef\xbb\xbf" + CHAT_DATA
    positions = select_positions(scan_capture(data, CHAT), CheckConfig(), include_zero=False, salt=1)
    assert positions.items[:3] == ((1, "multibyte"), (2, "multibyte"), (3, "every"))


def test_a_two_byte_capture_gets_random_patterns_of_its_one_cut() -> None:
    patterns = dict(cut_patterns(scan_capture(b"ab", CHAT), seed=3, count=2))
    assert patterns["random#0"] == patterns["random#1"] == patterns["random#2-dense"] == [1]


def test_a_session_that_raises_on_the_whole_planted_capture_never_reaches_the_output() -> None:
    leak = by_name(run_check(CHAT, CHAT_DATA, raises_when(lambda data: b"wc-canary-" in data)))["leak"]
    assert leak.first_failure is not None and leak.first_failure.case == "canary-whole"
    assert leak.coverage["canary_reached_output"] is False


@pytest.mark.parametrize(("route", "name", "data"), KEPT_CAPTURES[:1] + WHOLE_INPUT_CAPTURES[:1],
                         ids=["kept", "whole"])
def test_the_canary_is_planted_as_utf8_not_as_json_escapes(route: str, name: str, data: bytes) -> None:
    canary = Canary.from_seed(8)
    planted, _ = canary_capture(data, route, canary)
    assert canary.value.split('"')[0].encode("utf-8") in planted and b"\\u" not in planted  # (up to its quotes)


class CopiesTheErrorMessage(StreamSession):
    """Bug: the provider's error record keeps the event it came in (its message included) as its code."""

    def __init__(self, route: str, **kwargs: Any) -> None:
        super().__init__(route, **kwargs)
        self.last = b""

    def feed(self, data: bytes) -> list[Any]:
        self.last = data
        return super().feed(data)

    def finish(self) -> StreamResult:
        result = super().finish()
        if result.provider_error is None:
            return result
        error = ProviderError(result.provider_error.type, self.last.decode("utf-8", "replace"))
        return dataclasses.replace(result, provider_error=error)


def test_an_error_record_quoting_the_message_fails_the_leak_check_on_the_error_event_only() -> None:
    leak = by_name(run_check(CHAT, CHAT_DATA, CopiesTheErrorMessage))["leak"]
    assert leak.failures == 1 and leak.first_failure is not None
    assert (leak.first_failure.case, leak.first_failure.problem) == ("canary-error-event", "canary in provider_error")


#: Content each kept capture carries (results, code, commands, citations, metadata), none of which may
#: be left anywhere in it once planted: provisional events (code and command deltas) included.
KEPT_CONTENT = {
    "responses-kept": ["positive news today", "What is deep research?", "print(4 + 4)", "ß", "8\n", "iVBO",
                       "iVBORw0KGgo=", "deepwiki", '"question', "answer", "gAAAAABo-opaque",
                       "https://example.com/", "hunter2", "swordfish", "ls ", "-la", "a.txt", "lib/fib.py", "def fib"],
    "anthropic-kept": ["Weather in New York City", "weatherspark", "Ev0DCioIAxgCIiQ3NmU4ZmI4OC1k", "Full text",
                       "Article Title", "Mean: 5.5", "total 0", "print(1)", "get_weather", "Hello", "Looks right.",
                       "example-mcp", "claude-opus-4-7", "Köln", "Atlas", "Bonn", "Earlier: Köln.", "EpwBCioIDxgC",
                       "Trier", "EqQBCgIYAhIM"],
    "gemini-kept": ["print(sum(range(1, 51)))", "1275", "iVBORw0KGgoAAAANSUhEUgAAAAE=", "files/abc",
                    "https://example.com/", "Köln", "Kö"],
    "chat-unknown": ["UklGRiQAAABXQVZF", "Hallo Köln", "iVBORw0KGgo", "wetter köln", "<svg>Dom</svg>"],
    "responses-unknown": ["run('Köln')", "fp-Speyer", "gAAAAABo-sealed", "gAAAAABo-early", "Hallo Bonn", "UklGRbonn",
                          "Lagebericht Trier", "Ulm", "plan-Köln"],
    "anthropic-unknown": ["Köln bei Nacht", "✨ geheim", "Lagebericht Mainz"],
    "gemini-unknown": ["Dom zu Köln", "geheim"],
}


@pytest.mark.parametrize(("route", "name", "data"), KEPT_CAPTURES + UNKNOWN_CAPTURES,
                         ids=[n for _, n, _ in KEPT_CAPTURES + UNKNOWN_CAPTURES])
def test_canary_rewrite_leaves_none_of_a_kept_objects_content_in_the_capture(route: str, name: str,
                                                                             data: bytes) -> None:
    def strings(capture: bytes) -> str:  # every string value of every payload
        return "\n".join(s for line in scan_capture(capture, route).data_lines for s in _strings(line.obj))

    planted, counts = canary_capture(data, route, Canary.from_seed(8))
    before, after = strings(data), strings(planted)
    assert all(content in before for content in KEPT_CONTENT[name])  # (the list is the capture's)
    assert [content for content in KEPT_CONTENT[name] if content in after] == []
    assert counts["kept"] > 0


class ShowsTheSourcesOfAFailure(StreamSession):
    """Bug: a failed answer's stage lists what it kept verbatim (search results, citations, code
    parts, logprobs), for debugging."""

    def finish(self) -> StreamResult:
        result = super().finish()
        if result.outcome is Outcome.COMPLETE:
            return result
        kept = [[c.items, c.citations, c.logprobs] for c in result.choices]
        return dataclasses.replace(result, stage="kept " + json.dumps(kept, ensure_ascii=False))


KEPT_LEAK_CASES = [(r, n, d) for r, n, d in VOCAB_CAPTURES if r == CHAT] + KEPT_CAPTURES


@pytest.mark.parametrize(("route", "data"), [(r, d) for r, _, d in KEPT_LEAK_CASES],
                         ids=[n for _, n, _ in KEPT_LEAK_CASES])
def test_a_failure_that_shows_the_objects_an_answer_kept_verbatim_fails_the_leak_check(route: str,
                                                                                        data: bytes) -> None:
    leak = by_name(run_check(route, data, ShowsTheSourcesOfAFailure))["leak"]
    assert leak.coverage["substitutions"]["kept"] > 0
    assert leak.first_failure is not None and leak.first_failure.problem == "canary in stage"


def test_the_canary_reaches_the_output_of_an_answer_whose_only_content_is_kept_verbatim() -> None:
    from tests import test_vocab_gemini as gm

    data = sse(gm.chunk(gm.DATA_PARTS[0]), gm.chunk(gm.DATA_PARTS[1], finish="STOP"))
    leak = by_name(run_check(GEMINI, data))["leak"]
    assert leak.passed and leak.coverage["substitutions"] == {"text": 0, "tool_arguments": 0, "error": 0, "kept": 2}
    assert leak.coverage["canary_reached_output"] is True


@pytest.mark.parametrize(("route", "data"), [(r, d) for r, _, d in UNKNOWN_CAPTURES],
                         ids=[n for _, n, _ in UNKNOWN_CAPTURES])
def test_check_runs_every_check_on_types_the_route_does_not_know_when_the_session_keeps_them(route: str,
                                                                                           data: bytes) -> None:
    refused = run_check(route, data)
    assert (refused.exit_code, refused.whole_outcome, refused.whole_stage) == (2, "protocol_error", "unknown_type")
    report = run_check(route, data, keep_unknown_items=True)
    assert report.exit_code == 0, [c.to_dict() for c in report.checks if not c.passed]
    assert [c.name for c in report.checks] == list(CHECKS)
    leak = by_name(report)["leak"].coverage
    assert leak["substitutions"]["kept"] > 0 and leak["canary_reached_output"] is True


@pytest.mark.parametrize(("route", "data"), [(r, d) for r, _, d in UNKNOWN_CAPTURES],
                         ids=[n for _, n, _ in UNKNOWN_CAPTURES])
def test_canary_rewrite_leaves_nothing_but_the_canary_in_what_an_answer_keeps_of_unknown_types(route: str,
                                                                                              data: bytes) -> None:
    canary = Canary.from_seed(8)
    planted, _ = canary_capture(data, route, canary)
    result = replay(route, [planted], keep_unknown_items=True).result
    assert result is not None and result.outcome.value == "complete", result and result.stage
    assert result.items and _not_the_canary(result, canary) == []


#: Strings planted in each capture of types the route does not know: every copy of each, once.
UNKNOWN_COUNTS = {"chat-unknown": {"text": 1, "tool_arguments": 0, "error": 0, "kept": 5},
                  # encrypted content 3, the reasoning summary part 3, the program 3 x 3 (code, fingerprint, line),
                  # the audio part in its added and done events and 2 closed messages 4 x 2, the 2 unknown events 1 each
                  "responses-unknown": {"text": 1, "tool_arguments": 0, "error": 0, "kept": 25},
                  "anthropic-unknown": {"text": 1, "tool_arguments": 0, "error": 0, "kept": 3},
                  "gemini-unknown": {"text": 1, "tool_arguments": 0, "error": 0, "kept": 2}}


@pytest.mark.parametrize(("route", "name", "data"), UNKNOWN_CAPTURES, ids=[n for _, n, _ in UNKNOWN_CAPTURES])
def test_canary_rewrite_counts_each_planted_string_of_an_unknown_object_once(route: str, name: str,
                                                                            data: bytes) -> None:
    assert canary_capture(data, route, Canary.from_seed(8))[1] == UNKNOWN_COUNTS[name]


@pytest.mark.parametrize("route", ROUTE_NAMES)
@pytest.mark.parametrize("kind", [7, None, ["program"], {"x": 1}])
def test_canary_rewrite_leaves_objects_whose_type_is_not_a_name_as_they_came(route: str, kind: Any) -> None:
    strange = {"type": kind, "note": "Trier"}
    own = {"openai-responses": [{"type": "response.output_item.done", "item": strange},
                                {"type": "response.content_part.added", "part": strange}],
           "anthropic-messages": [{"type": "content_block_start", "content_block": strange},
                                  {"type": "content_block_delta", "delta": strange}]}
    lines = [{"type": kind, "item": strange, "part": strange, "response": {"output": [strange]},
              "content_block": strange, "delta": strange},
             {"type": kind, "delta": "Trier"}, *own.get(route, ()),
             {"choices": [{"index": 0, "delta": {"tool_calls": [strange], "reasoning_details": [strange]}}]}]
    data = sse(*lines)
    planted, counts = canary_capture(data, route, Canary.from_seed(8))
    assert (planted, counts["kept"]) == (data, 0)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every scalar in a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))
    else:
        yield path


@pytest.mark.parametrize(("route", "data"), [(r, d) for r, _, d in ALL_CAPTURES + UNKNOWN_CAPTURES],
                         ids=[n for _, n, _ in ALL_CAPTURES + UNKNOWN_CAPTURES])
def test_canary_rewrite_and_tool_json_break_take_a_list_or_object_wherever_a_scalar_was(route: str,
                                                                                       data: bytes) -> None:
    # An index, id or type that is a list or an object (a malformed capture) once made the rewrite raise
    # TypeError (unhashable) instead of planting what it could: check must report on any capture.
    rng = random.Random(len(data))
    lines = scan_capture(data, route).data_lines
    for _ in range(12):
        line = lines[rng.randrange(len(lines))]
        obj = json.loads(data[line.value_start : line.end])
        path = rng.choice(list(_paths(obj)))
        if not path:
            continue
        node = obj
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = rng.choice([[], {}, [1], {"a": "b"}])
        broken = data[: line.value_start] + json.dumps(obj).encode() + data[line.end :]
        planted, _ = canary_capture(broken, route, Canary.from_seed(8))  # (raised TypeError before)
        assert len(scan_capture(planted, route).data_lines) == len(lines)
        break_tool_json(broken, route, "x")


def test_check_plants_the_canary_in_reasoning_details_but_leaves_their_signatures() -> None:
    from tests.test_vocab_openai_chat import DETAILED

    report = run_check(CHAT, DETAILED)
    assert report.exit_code == 0, [c.to_dict() for c in report.checks if not c.passed]
    leak = by_name(report)["leak"].coverage
    # the three text fragments (the last one empty) and the encrypted data
    assert leak["substitutions"]["kept"] == 4 and leak["canary_reached_output"] is True
    canary = Canary.from_seed(8)
    result = replay(CHAT, [canary_capture(DETAILED, CHAT, canary)[0]]).result
    assert result is not None and result.outcome.value == "complete"
    text, encrypted = result.assistant_message["reasoning_details"]
    assert (text["text"].replace(canary.value, ""), encrypted["data"]) == ("", canary.value)
    assert (text["signature"], encrypted["id"]) == ("EqQBCkgIARAB", "tool_1")


def test_a_failure_that_shows_the_reasoning_details_it_would_send_back_fails_the_leak_check() -> None:
    # the answer's only content is an encrypted reasoning detail
    data = sse(chat_chunk({"reasoning_details": [{"type": "reasoning.encrypted", "index": 0, "data": "CiQB4/H"}]}),
               chat_chunk({"content": ""}, "stop"), "[DONE]")
    leak = by_name(run_check(CHAT, data, ShowsTheAnswerOfAFailure))["leak"]
    assert leak.first_failure is not None and leak.first_failure.problem == "canary in stage"
    assert leak.coverage["substitutions"] == {"text": 0, "tool_arguments": 0, "error": 0, "kept": 1}


def test_canary_rewrite_plants_a_reasoning_items_encrypted_content_in_every_copy() -> None:
    case = next(c for c in COMPLETE if c.id.endswith("test_openai_responses_streaming_usage.interaction0.sse"))
    canary = Canary.from_seed(8)
    planted, counts = canary_capture(case.data, case.route, canary)
    result = replay(case.route, [planted]).result
    assert result is not None and result.outcome.value == "complete"
    sealed = [item["encrypted_content"] for item in result.assistant_message if item["type"] == "reasoning"]
    assert sealed == [canary.value] and counts["kept"] == 3  # added, closed, and the completed snapshot's copy
    assert b"gAAAAAB" not in planted


class ShowsTheAnswerOfAFailure(StreamSession):
    """Bug: a failed answer's stage holds the assistant message it would have sent back, for debugging."""

    def finish(self) -> StreamResult:
        result = super().finish()
        if result.outcome is Outcome.COMPLETE:
            return result
        return dataclasses.replace(result, stage="answer " + json.dumps(result.assistant_message, ensure_ascii=False))


def test_a_failure_that_shows_the_encrypted_reasoning_it_would_send_back_fails_the_leak_check() -> None:
    # the recording's only strings of content are its reasoning items' encrypted_content (the call's
    # arguments hold a number)
    case = next(c for c in COMPLETE if c.id.endswith("test_openai_responses_streaming_usage.interaction0.sse"))
    leak = by_name(run_check(case.route, case.data, ShowsTheAnswerOfAFailure))["leak"]
    assert leak.first_failure is not None and leak.first_failure.problem == "canary in stage"
    assert leak.coverage["substitutions"] == {"text": 0, "tool_arguments": 0, "error": 0, "kept": 3}


@pytest.mark.parametrize(("route", "data"), [(r, d) for r, _, d in UNKNOWN_CAPTURES],
                         ids=[n for _, n, _ in UNKNOWN_CAPTURES])
def test_a_failure_that_shows_the_unknown_objects_it_kept_fails_the_leak_check(route: str, data: bytes) -> None:
    leak = by_name(run_check(route, data, ShowsTheSourcesOfAFailure, keep_unknown_items=True))["leak"]
    assert leak.first_failure is not None and leak.first_failure.problem == "canary in stage"


@pytest.mark.parametrize("options", [{"keep_unknown_items": True}, {"include_reasoning_content": True},
                                     {"accepted_stop_reasons": iter(["length"])}, {"utf8_errors": "replace"}])
def test_the_session_factory_builds_every_session_with_the_options_it_was_given(options: dict[str, Any]) -> None:
    audio = chat_chunk({"audio": {"id": "a", "transcript": "Hi"}})
    data = sse(chat_chunk({"role": "assistant", "reasoning_content": "Plan.", "content": "Hi"}),
               audio if "keep_unknown_items" in options else {"choices": []},
               chat_chunk({}, "length" if "accepted_stop_reasons" in options else "stop"), "[DONE]")
    if "utf8_errors" in options:
        data = data.replace(b"Hi", b"H\xff", 1)
    default = session_factory(CHAT)
    configured = session_factory(CHAT, **options)
    for make in (configured, configured):  # every session the factory builds, not the first one only
        session = make()
        session.open(200, "text/event-stream")
        session.feed(data)
        result = session.finish()
        assert result.outcome is Outcome.COMPLETE, result.stage
        assert ("reasoning_content" in result.assistant_message) is ("include_reasoning_content" in options)
    session = default()
    session.open(200, "text/event-stream")
    session.feed(data)
    assert (session.finish().outcome is Outcome.COMPLETE) is ("include_reasoning_content" in options)


class QuotesTheTextOfALineCutShort(StreamSession):
    """Bug: an answer cut off in the middle of a line is reported with its text in the stage."""

    def finish(self) -> StreamResult:
        pending = self.pending_line_chars
        result = super().finish()
        if pending and result.outcome is Outcome.TRUNCATED:
            return dataclasses.replace(result, stage="cut " + result.text)
        return result


def test_text_quoted_when_eof_comes_mid_line_fails_the_leak_check_at_that_case() -> None:
    leak = by_name(run_check(CHAT, CHAT_DATA, QuotesTheTextOfALineCutShort))["leak"]
    assert leak.failures == 1 and leak.first_failure is not None
    assert (leak.first_failure.case, leak.first_failure.stage, leak.first_failure.problem) == (
        "canary-eof-mid-line", "[REDACTED]", "canary in stage")


class OnePooledParser(StreamSession):
    """Bug: one parser handed to each session as it opens, reset at checkout, so sessions that are
    live at the same time share it."""

    live: ClassVar[list[OnePooledParser]] = []

    def open(self, status: int, content_type: str | None) -> list[Any]:
        for other in self.live:
            other._parser = self._parser
        self.live.append(self)
        return super().open(status, content_type)

    def finish(self) -> StreamResult:
        if self in self.live:
            self.live.remove(self)
        return super().finish()


def test_a_parser_shared_by_live_sessions_fails_the_reset_check_when_interleaved_only() -> None:
    report = run_with_shared_state(OnePooledParser, OnePooledParser.live)
    reset = by_name(report)["reset"]
    assert failed_checks(report) == {"reset"} and reset.failures == 1
    assert reset.first_failure is not None and reset.first_failure.case == "interleaved"





# -- the second look at _check.py: every line of the first sample's survivors and of the new slot rules --------


def test_scan_counts_no_event_for_a_last_line_without_its_blank_line() -> None:
    cmap = scan_capture(b'data: {"a": 1}\n\ndata: {"b": 2}\n', CHAT)
    assert cmap.boundaries == [16] and len(cmap.data_lines) == 2


def _planted(route: str, *items: object, seed: int = 13) -> tuple[bytes, dict[str, int]]:
    return canary_capture(sse(*items), route, Canary.from_seed(seed))


def test_canary_rewrite_skips_chat_choices_and_calls_that_are_not_objects() -> None:
    planted, counts = _planted(CHAT, {**CHUNK, "choices": [7, {"index": 0, "finish_reason": "stop"},
                                                           {"index": 1, "delta": "x"},
                                                           {"index": 2, "delta": {"content": "Grüße",
                                                                                  "tool_calls": [3, None]}}]})
    assert counts == {"text": 1, "tool_arguments": 0, "error": 0, "kept": 0} and "Grüße".encode() not in planted


def _chat_call(choice: int = 0, **fields: Any) -> dict[str, Any]:
    return {**CHUNK, "choices": [{"index": choice, "delta": {"tool_calls": [fields]}, "finish_reason": None}]}


@pytest.mark.parametrize("shape", ["two choices", "by index, interleaved", "empty ids", "neither, next chunk"])
def test_canary_rewrite_joins_each_chat_calls_fragments_however_they_name_it(shape: str) -> None:
    def fn(arguments: str, **fields: Any) -> dict[str, Any]:
        return {**fields, "function": {"arguments": arguments}}

    chunks = {
        "two choices": [_chat_call(0, **fn('{"q": ', index=0, id="a")),
                        _chat_call(1, **fn('{"r": ', index=0, id="b")),
                        _chat_call(0, **fn('"alpha"}', index=0)), _chat_call(1, **fn('"beta"}', index=0))],
        "by index, interleaved": [_chat_call(**fn('{"q": ', index=0, id="a")),
                                  _chat_call(**fn('{"r": ', index=1, id="b")),
                                  _chat_call(**fn('"alpha"}', index=0)), _chat_call(**fn('"beta"}', index=1))],
        "empty ids": [_chat_call(**fn('{"q": ', id="a")), _chat_call(**fn('"alpha"}', id="")),
                      _chat_call(**fn('{"r": ', id="b")), _chat_call(**fn('"beta"}', id=""))],
        "neither, next chunk": [_chat_call(**fn('{"q": ', id="a")), _chat_call(**fn('"alpha"}')),
                                _chat_call(**fn('{"r": ', id="b")), _chat_call(**fn('"beta"}'))],
    }[shape]
    planted, counts = _planted(CHAT, *chunks)
    assert counts["tool_arguments"] == 2
    assert b"alpha" not in planted and b"beta" not in planted


def test_canary_rewrite_leaves_arguments_without_strings_byte_for_byte() -> None:
    data = sse(_chat_call(index=0, id="a", function={"name": "f", "arguments": '{"n":1,'}),
               _chat_call(index=0, function={"arguments": '"ok":true}'}))
    planted, counts = canary_capture(data, CHAT, Canary.from_seed(14))
    assert planted == data and counts["tool_arguments"] == 0


@pytest.mark.parametrize("route", ["openai-responses", "anthropic-messages"])
def test_canary_rewrite_passes_over_payloads_that_are_not_objects(route: str) -> None:
    planted, counts = _planted(route, [1, {"type": "x"}], "[DONE]", 5)
    assert counts == {"text": 0, "tool_arguments": 0, "error": 0, "kept": 0}
    assert planted == sse([1, {"type": "x"}], "[DONE]", 5)


def test_canary_rewrite_leaves_anthropic_deltas_of_the_wrong_shape_alone() -> None:
    def delta(value: Any) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": 0, "delta": value}

    items = [{"type": "message_start", "message": {"id": "m", "content": []}}, delta("text"), delta(None),
             delta({"type": "text_delta", "text": 5}), delta({"type": "thinking_delta", "thinking": 7}),
             delta({"type": "input_json_delta", "partial_json": 3}), delta({"type": "citations_delta", "text": "x"}),
             {"type": "message_delta", "delta": {"type": "text_delta", "text": "y"}}]
    planted, counts = _planted("anthropic-messages", *items)
    assert counts == {"text": 0, "tool_arguments": 0, "error": 0, "kept": 0} and planted == sse(*items)


def test_canary_rewrite_finds_an_error_message_nested_in_an_object() -> None:
    failed = {"type": "response.failed", "response": {"id": "r", "status": "failed",
                                                       "error": {"code": "server_error", "message": "overloaded"}}}
    planted, counts = _planted("openai-responses", failed)
    assert counts["error"] == 1 and b"overloaded" not in planted


def test_the_closed_custom_call_keeps_the_rewritten_input_its_deltas_join_to() -> None:
    route, _, data = VOCAB_CAPTURES[0]
    planted, _ = canary_capture(data, route, Canary.from_seed(15))
    events = [json.loads(line[6:]) for line in planted.split(b"\n") if line.startswith(b"data: {")]
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.custom_tool_call_input.delta")
    closed = [e["item"]["input"] for e in events
              if e["type"] == "response.output_item.done" and e["item"]["type"] == "custom_tool_call"]
    done = [e["input"] for e in events if e["type"] == "response.custom_tool_call_input.done"]
    assert closed == done == [deltas] and deltas.count(Canary.from_seed(15).marker) == 2


def test_injection_sites_are_the_start_and_every_boundary_up_to_the_terminal_events_start() -> None:
    cmap = scan_capture(CHAT_DATA, CHAT)
    inner = [b for b in cmap.boundaries if b <= cmap.last_event]
    assert cmap.last_event in inner and inner[-1] < cmap.size
    assert injection_sites(cmap, 1000, 0) == [0, *inner]
    comments = scan_capture(b": keep-alive\n\n", CHAT)  # nothing significant: no boundary is inside
    assert comments.boundaries == [comments.size] and injection_sites(comments, 5, 0) == [0]


def test_the_event_injection_is_skipped_where_no_data_line_fits_the_line_ceiling() -> None:
    limits = Limits(max_line_chars=4, max_event_chars=64)
    cmap = scan_capture(b"", CHAT)
    result = check_oversized(b"", session_factory(CHAT, limits=limits), cmap, limits, CheckConfig())
    assert (result.cases, result.failures, result.coverage["sites"]) == (1, 0, 1)


class EndsAtTheFirstEvent(StreamSession):
    """Bug: takes the first event for the whole answer, and ends the attempt there."""

    def feed(self, data: bytes) -> list[Any]:
        updates = super().feed(data)
        if b"\n\n" in data and not self.done:
            self.abort(Outcome.PROTOCOL_ERROR, "first_event")
        return updates


def test_a_session_ended_by_the_prefix_fails_each_growth_case_once() -> None:
    route, _, data = VOCAB_CAPTURES[1]
    limits = limits_for(data)
    make: SessionFactory = lambda: EndsAtTheFirstEvent(route, limits=limits)  # noqa: E731
    result = check_growth(data, make, scan_capture(data, route), route, limits)
    assert result.cases == result.failures == len(growth_cases(route, limits)) > 0
    assert result.first_failure is not None and result.first_failure.problem == "the prefix alone ended the session"


class PoisonedByAFailure(StreamSession):
    """Bug: after a session ends with one outcome, the next one starts from a dirty pooled buffer."""

    poisoned: ClassVar[list[bool]] = []
    by: ClassVar[Outcome] = Outcome.DECODE_ERROR

    def open(self, status: int, content_type: str | None) -> list[Any]:
        self.tainted = bool(self.poisoned)
        self.poisoned.clear()
        return super().open(status, content_type)

    def finish(self) -> StreamResult:
        result = super().finish()
        if result.outcome is self.by:
            self.poisoned.append(True)
        if self.tainted and result.committed:
            return dataclasses.replace(result, text=result.text + "!")
        return result


@pytest.mark.parametrize(("outcome", "case"), [
    (Outcome.TRUNCATED, "after-truncated"), (Outcome.DECODE_ERROR, "after-decode-error"),
    (Outcome.PROTOCOL_ERROR, "after-protocol-error"),
    (Outcome.UPSTREAM_ERROR, "after-upstream-error"), (Outcome.BUFFER_LIMIT, "after-buffer-limit"),
    (Outcome.PAYLOAD_ERROR, "after-payload-error")])
def test_state_left_by_each_failure_fails_the_reset_check_at_its_case(outcome: Outcome, case: str) -> None:
    class Poisoned(PoisonedByAFailure):
        poisoned: ClassVar[list[bool]] = []
        by = outcome

    reset = by_name(run_check(CHAT, CHAT_DATA, Poisoned))["reset"]
    assert reset.first_failure is not None
    assert (reset.first_failure.case, reset.first_failure.problem) == (case, "fresh session differs in text")


def raises_when(feeds: Callable[[bytes], bool]) -> type[StreamSession]:
    """A session that raises (instead of ending with an outcome) when fed a chunk ``feeds`` picks."""

    class Raising(StreamSession):
        def feed(self, data: bytes) -> list[Any]:
            if feeds(data):
                raise ValueError("unexpected input")
            return super().feed(data)

    return Raising


@pytest.mark.parametrize(("feeds", "expected"), [
    # an empty read, which fetch and httpx both deliver
    (lambda data: not data, {"multisplit": ("empty-chunks", 1)}),
    # a line that grows past what the client expected
    (lambda data: data.startswith(b'data: {"injected"'), {"oversized": ("line@boundary 0", 3)}),
    # a network read that does not end at a line boundary (a naive line reader)
    (lambda data: bool(data) and not data.endswith(b"\n"),
     {"split": (None, None), "eof": (None, None), "leak": ("canary-chunk-size-7", None)}),
    # the failing stream of the interleaved case
    (lambda data: data.startswith(b"data: \xff{"), {"reset": ("interleaved", 1)}),
], ids=["empty read", "injected line", "partial line", "interleaved bad byte"])
def test_a_session_that_raises_fails_the_checks_that_feed_it_that_input_naming_the_exception(
        feeds: Callable[[bytes], bool], expected: dict[str, tuple[str | None, int | None]]) -> None:
    report = by_name(run_check(CHAT, CHAT_DATA, raises_when(feeds)))
    for name, (case, failures) in expected.items():
        first = report[name].first_failure
        assert first is not None and (first.problem, first.outcome) == ("session raised ValueError", None)
        assert case is None or first.case == case
        assert failures is None or report[name].failures == failures


def _strings_of(capture: bytes) -> list[str]:
    """Every string value in the capture's JSON data lines."""
    return [s for line in capture.split(b"\n") if line.startswith((b"data: [", b"data: {"))
            for s in _strings(json.loads(line[6:]))]


def test_canary_rewrite_replaces_each_part_of_a_multi_part_item_and_its_closed_copy() -> None:
    route, _, data = next(c for c in WHOLE_INPUT_CAPTURES if c[1] == "responses-parts")
    planted, counts = canary_capture(data, route, Canary.from_seed(16))
    assert counts["text"] == 5
    assert not {"Plan ", "Prüfen", "Grüße ", "aus Köln", "Nein"} & set(_strings_of(planted))


def test_canary_rewrite_keeps_whole_responses_calls_without_ids_apart() -> None:
    from tests import test_vocab_openai_responses as orr

    def call(index: int, arguments: str) -> tuple[str, dict[str, Any]]:
        item = {"type": "function_call", "call_id": f"c{index}", "name": "f", "arguments": arguments}
        return orr.ev("response.output_item.done", output_index=index, item=item)

    planted, counts = canary_capture(orr.stream(call(0, '{"q": "alpha"}'), call(1, '{"r": "beta"}')),
                                     "openai-responses", Canary.from_seed(17))
    assert counts["tool_arguments"] == 2 and not {"alpha", "beta"} & set(_strings_of(planted))


def test_broken_tool_json_breaks_every_copy_of_the_arguments_alike() -> None:
    from tests import test_vocab_openai_responses as orr

    ev = orr.ev
    fc = {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "status": "completed"}
    data = orr.stream(
        ev("response.output_item.added", output_index=0, item={**fc, "arguments": ""}),
        *(ev("response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta=d)
          for d in ('{"q": ', '"abc"}')),
        ev("response.function_call_arguments.done", item_id="fc_1", output_index=0, arguments='{"q": "abc"}'),
        ev("response.output_item.done", output_index=0, item={**fc, "arguments": '{"q": "abc"}'}))
    broken = break_tool_json(data, "openai-responses", "x")
    assert broken is not None
    events = [json.loads(line[6:]) for line in broken.split(b"\n") if line.startswith(b"data: {")]
    deltas = "".join(e["delta"] for e in events if e["type"].endswith("arguments.delta"))
    copies = [e["arguments"] for e in events if e["type"].endswith("arguments.done")]
    copies += [e["item"]["arguments"] for e in events if e["type"] == "response.output_item.done"]
    assert deltas == '{"q": "abc"}x"}' and copies == [deltas, deltas]
    assert outcome_of("openai-responses", broken) == ("payload_error", "tool_json")


# -- a second sample of _check.py (80 of 1,325, seed 42) ------------------------------------------------------


class MiscountsBytes(StreamSession):
    """Bug: telemetry counts one byte fewer than the session was fed."""

    def finish(self) -> StreamResult:
        result = super().finish()
        telemetry = dataclasses.replace(result.telemetry, bytes_received=result.telemetry.bytes_received - 1)
        return result.with_telemetry(telemetry)


def test_telemetry_that_miscounts_the_bytes_fails_the_whole_check() -> None:
    whole = run_check(CHAT, CHAT_DATA, MiscountsBytes).checks[0]
    assert whole.first_failure is not None
    size = len(CHAT_DATA)
    assert whole.first_failure.problem == f"telemetry bytes_received {size - 1} != capture size {size}"


class CompletesOverABadByte(StreamSession):
    """Bug: a stream holding a byte that is not UTF-8 before a brace is reported complete."""

    def __init__(self, route: str, **kwargs: Any) -> None:
        self.bad = False
        super().__init__(route, **kwargs)

    def feed(self, data: bytes) -> list[Any]:
        self.bad = self.bad or b"\xff{" in data
        return super().feed(data)

    def finish(self) -> StreamResult:
        result = super().finish()
        return dataclasses.replace(result, outcome=Outcome.COMPLETE) if self.bad else result


def test_a_failing_session_that_completes_fails_the_interleaved_case_saying_so() -> None:
    reset = by_name(run_check(CHAT, CHAT_DATA, CompletesOverABadByte))["reset"]
    assert reset.failures == 1 and reset.first_failure is not None
    assert (reset.first_failure.case, reset.first_failure.problem) == (
        "interleaved", "the failing session ended complete")


def test_a_capture_of_exactly_the_exhaustive_size_gets_every_position() -> None:
    data = (b"data: " + b"x" * 1016 + b"\n\n")[:1024]
    positions = select_positions(scan_capture(data, CHAT), CheckConfig(every_position_max=1024, work_budget=2048),
                                 include_zero=False, salt=1)
    assert not positions.sampled and len(positions.items) == 1023


def test_scan_keeps_special_positions_strictly_inside_the_capture() -> None:
    assert scan_capture(b"\r\ndata: 1\r\n\r\n", CHAT).special["crlf"][0] == 1  # the second byte is inside
    cmap = scan_capture(b"data: 1\n\n", CHAT)  # its tail starts at 0 and its boundary is its end: neither is
    assert cmap.special["tail"] == list(range(1, cmap.size)) and cmap.special["boundary"] == [cmap.size - 1]


def test_above_four_mib_the_finest_pattern_is_three_byte_chunks() -> None:
    big = b": " + b"x" * (4 * 1024 * 1024 - 3) + b"\n"
    assert dict(cut_patterns(scan_capture(big, CHAT), 0, 0)).keys() >= {"bytewise"}
    bigger = big[:-1] + b"x\n"
    patterns = dict(cut_patterns(scan_capture(bigger, CHAT), 0, 0))
    assert "bytewise" not in patterns and patterns["chunk-size-3"][:2] == [3, 6]


def test_canary_rewrite_plants_the_canary_in_groq_s_executed_tools_but_not_in_their_index_or_type() -> None:
    from tests.route_fixtures import LOCAL

    data = (LOCAL / "pydantic-ai" / "test_groq__test_groq_model_web_search_tool_stream.interaction0.sse").read_bytes()
    canary = Canary.from_seed(3)
    planted, _ = canary_capture(data, CHAT, canary)
    result = replay(CHAT, [planted]).result
    assert result is not None and result.committed
    (tool,) = result.items[0]["executed_tools"]
    assert (tool["index"], tool["type"]) == (0, "search")
    assert canary.value in tool["output"] and canary.value in tool["arguments"]
