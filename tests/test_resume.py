"""Resuming an interrupted stream (``StreamSession.resume``, ``webclient._resume``): sequence numbers, the resume
point, overlap / gap / cut-again, every chunking of every capture, and the follow-up request plan.

Realistic streams come from the recordings in tests/resume_streams.py; small synthetic ones are built with
tests/route_fixtures.py's ``sse``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import assert_chunking_invariant
from tests.resume_streams import (
    AZURE_TOOL,
    BACKGROUND_FIRST,
    BACKGROUND_RESUMED,
    RECORDINGS,
    USAGE,
    answer_view,
    chain_view,
    cut_and_resumed,
    cut_inside,
    events_of,
    from_event,
    last_number_before,
    numbered,
    response_id,
    run_chain,
    uninterrupted_view,
)
from tests.route_fixtures import FIXTURES, RESPONSES, check, outcome_of, sse
from webclient import Outcome, ResumePoint, ResumePolicy, StreamSession, UsageError, plan_resume
from webclient._resume import RESUMABLE, RequestSpec, is_resumable, resume_url
from webclient._routes import ROUTES

# -- small synthetic Responses streams -------------------------------------------------------------------------


def numbered_stream(*numbers: int | None, text: str = "ab") -> bytes:
    """created, message item with one delta per character of ``text``, completed; event i gets ``numbers[i]``
    (``None``: no sequence_number). Needs ``len(text) + 4`` numbers."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_9", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {"id": "m", "type": "message"}},
        *({"type": "response.output_text.delta", "output_index": 0, "item_id": "m", "delta": c} for c in text),
        {"type": "response.output_item.done", "output_index": 0, "item": {"id": "m", "type": "message"}},
        {"type": "response.completed", "response": {"id": "resp_9", "status": "completed"}},
    ]
    assert len(numbers) == len(events)
    for event, number in zip(events, numbers, strict=True):
        if number is not None:
            event["sequence_number"] = number
    return sse(*((e["type"], e) for e in events))


def test_the_route_contract_names_the_sequence_key_and_the_id_event_as_data() -> None:
    resume = ROUTES[RESPONSES].contract.resume
    assert resume is not None
    assert (resume.sequence_key, resume.id_event, resume.id_path) == ("sequence_number", "response.created",
                                                                      ("response", "id"))
    assert all(entry.contract.resume is None for name, entry in ROUTES.items() if name != RESPONSES)


def test_consecutive_sequence_numbers_from_any_start_are_complete() -> None:
    assert outcome_of(RESPONSES, numbered_stream(0, 1, 2, 3, 4, 5)) == ("complete", None)
    assert outcome_of(RESPONSES, numbered_stream(7, 8, 9, 10, 11, 12)) == ("complete", None)


def test_absent_sequence_numbers_are_tolerated_and_do_not_break_the_count() -> None:
    assert outcome_of(RESPONSES, numbered_stream(None, None, 0, 1, 2, 3)) == ("complete", None)
    assert outcome_of(RESPONSES, numbered_stream(0, None, 1, None, 2, 3)) == ("complete", None)
    assert outcome_of(RESPONSES, numbered_stream(None, None, None, None, None, None)) == ("complete", None)


def test_a_gap_in_the_sequence_numbers_of_one_stream_is_protocol_error_sequence_gap() -> None:
    result, _ = check(RESPONSES, numbered_stream(0, 1, 2, 4, 5, 6))
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "sequence_gap", "a")


@pytest.mark.parametrize(("numbers", "stage"), [((0, 1, 2, 2, 3, 4), "sequence_order"),
                                               ((0, 1, 2, 1, 3, 4), "sequence_order"),
                                               ((0, 1, 3, 2, 4, 5), "sequence_gap")],  # a swap shows as a gap first
                         ids=["repeat", "backwards", "swapped"])
def test_a_repeated_or_reordered_sequence_number_is_protocol_error(numbers: tuple[int, ...], stage: str) -> None:
    assert outcome_of(RESPONSES, numbered_stream(*numbers)) == ("protocol_error", stage)


@pytest.mark.parametrize("bad", ['"1"', "-1", "1.5", "true", "2.0", "2e0"])
def test_a_sequence_number_that_is_not_a_non_negative_integer_is_an_envelope_error(bad: str) -> None:
    data = numbered_stream(0, 1, 2, 3, 4, 5).replace(b'"sequence_number":2', b'"sequence_number":' + bad.encode())
    assert outcome_of(RESPONSES, data) == ("protocol_error", "envelope")


# -- the resume point -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_every_recorded_responses_stream_numbers_its_events_consecutively_and_completes(name: str) -> None:
    data = RECORDINGS[name]
    view = uninterrupted_view(data)
    assert view[0]["outcome"] == "complete" and view[0]["resume"] is None  # type: ignore[index]


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_a_stream_cut_inside_an_event_exposes_the_response_id_and_the_last_number_delivered(name: str) -> None:
    data = RECORDINGS[name]
    k = numbered(data)[len(numbered(data)) // 2]
    session, _ = run_chain([[cut_inside(data, k)]])
    result = session.result
    assert result is not None and (result.outcome, result.stage) == (Outcome.TRUNCATED, "eof")
    point = ResumePoint(response_id(data), last_number_before(data, k))
    assert result.resume == point == session.resume_point
    assert result.to_dict()["resume"] == {"response_id": point.response_id, "sequence_number": point.sequence_number}
    assert session.resumable


def test_a_recorded_server_resume_after_starting_after_gives_the_uninterrupted_result() -> None:
    # The stream cut after its first event (response.created, number 0), then the server's own replay from
    # starting_after=0, as recorded: the answer of the whole first stream, under every chunking of both.
    first = from_event(BACKGROUND_FIRST, 0, 1)
    cut, _ = run_chain([[first]])
    assert cut.resume_point == ResumePoint(response_id(BACKGROUND_FIRST), 0)
    expected = uninterrupted_view(BACKGROUND_FIRST)
    assert expected[0]["outcome"] == "complete"  # type: ignore[index]
    view = assert_chunking_invariant(lambda chunks: chain_view([[first], chunks]), BACKGROUND_RESUMED,
                                     random_count=10)
    assert view == expected


def test_the_resume_point_is_none_when_the_answer_is_not_resumable() -> None:
    complete, _ = run_chain([[USAGE]])
    assert complete.result is not None and complete.result.resume is None and not complete.resumable
    error = sse({"type": "error", "sequence_number": last_number_before(USAGE, 6) + 1, "code": "server_error"})
    failed, _ = run_chain([[from_event(USAGE, 0, 6) + error]])
    assert failed.result is not None and failed.result.outcome is Outcome.UPSTREAM_ERROR
    assert failed.result.resume is None and not failed.resumable
    after_terminal, _ = run_chain([[USAGE + b"data: {"]])  # terminal seen, then a pending line
    assert after_terminal.result is not None and after_terminal.result.stage == "pending_line"
    assert after_terminal.result.resume is None and not after_terminal.resumable
    unnumbered = (FIXTURES / "pydantic-ai" /
                  "test_openai_responses__test_openai_responses_stream.interaction0.sse").read_bytes()
    no_numbers, _ = run_chain([[unnumbered[: len(unnumbered) // 2]]])  # March 2025: no sequence_number at all
    assert no_numbers.result is not None and no_numbers.result.outcome is Outcome.TRUNCATED
    assert no_numbers.result.resume is None and no_numbers.resumable  # a Last-Event-ID reconnect could continue


def test_a_cancelled_or_timed_out_session_is_resumable_from_its_point() -> None:
    for outcome, stage in ((Outcome.CANCELLED, "caller"), (Outcome.TIMEOUT, "idle")):
        session = StreamSession(RESPONSES)
        session.open(200, "text/event-stream")
        session.feed(cut_inside(USAGE, 5))
        result = session.abort(outcome, stage)
        assert result.resume == ResumePoint(response_id(USAGE), last_number_before(USAGE, 5))


def test_the_resumable_endings_are_one_table() -> None:
    assert is_resumable(Outcome.TRUNCATED, "eof") and is_resumable(Outcome.TRUNCATED, "network")
    assert not is_resumable(Outcome.TRUNCATED, "stop_reason") and not is_resumable(Outcome.TRUNCATED, "pending_line")
    assert is_resumable(Outcome.TIMEOUT, "total") and is_resumable(Outcome.CANCELLED, "caller")
    assert is_resumable(Outcome.PROTOCOL_ERROR, "sequence_gap") and not is_resumable(Outcome.PROTOCOL_ERROR, "order")
    assert not any(is_resumable(o, None) for o in Outcome if o not in RESUMABLE)
    assert not is_resumable(Outcome.COMPLETE, None)


# -- resuming: the same committed result as one stream ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(RECORDINGS))
@pytest.mark.parametrize("overlap", [0, 1, 3])
def test_a_resume_with_repeated_events_gives_the_uninterrupted_result(name: str, overlap: int) -> None:
    data = RECORDINGS[name]
    indexes = numbered(data)
    k = indexes[len(indexes) // 2]
    first = max(indexes[0] + 1, k - overlap)  # the server repeats `overlap` delivered events (never created)
    view = chain_view([[cut_inside(data, k)], [from_event(data, first)]])
    assert view == uninterrupted_view(data)
    assert view[0]["committed"] is True and view[0]["resume"] is None  # type: ignore[index]


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_a_resume_gives_the_uninterrupted_result_under_every_chunking_of_each_capture(name: str) -> None:
    data = RECORDINGS[name]
    indexes = numbered(data)
    k = indexes[len(indexes) // 2]
    captures = [cut_inside(data, k), from_event(data, k - 2)]
    expected = uninterrupted_view(data)
    for i, capture in enumerate(captures):
        def run(chunks: list[bytes], i: int = i) -> tuple[object, ...]:
            return chain_view([chunks if j == i else [c] for j, c in enumerate(captures)])

        assert_chunking_invariant(run, capture, expected, random_count=10, every_split_max=512)


def test_a_resume_cut_inside_a_tool_calls_arguments_continues_the_same_call() -> None:
    events = events_of(AZURE_TOOL)
    k = next(i for i, e in enumerate(events) if b'"delta":"San"' in e)  # the 4th argument fragment
    first, _ = run_chain([[cut_inside(AZURE_TOOL, k)]])
    assert first.result is not None and first.result.tool_calls[0].state == "streaming"
    session, _ = run_chain([[cut_inside(AZURE_TOOL, k)], [from_event(AZURE_TOOL, k - 1)]])
    assert session.result is not None and session.result.committed
    call = session.result.tool_calls[0]
    assert (call.name, call.arguments, call.ready, call.call) == ("weather", {"location": "San Francisco"},
                                                                  True, 0)


def test_the_updates_across_a_resume_add_up_to_the_uninterrupted_updates() -> None:
    k = numbered(AZURE_TOOL)[5]
    _, resumed = run_chain([[cut_inside(AZURE_TOOL, k)], [from_event(AZURE_TOOL, k - 3)]])
    _, whole = run_chain([[AZURE_TOOL]])
    fragments = "".join(u["fragment"] for u in resumed if u["kind"] == "tool_input_delta")
    assert fragments == '{"location":"San Francisco"}'
    assert [u["kind"] for u in resumed].count("tool_call") == [u["kind"] for u in whole].count("tool_call")


def test_a_resume_starting_right_after_the_point_needs_no_overlap() -> None:
    k = numbered(USAGE)[7]
    assert chain_view([[cut_inside(USAGE, k)], [from_event(USAGE, k)]]) == uninterrupted_view(USAGE)


def test_a_gap_at_the_resume_is_protocol_error_and_the_point_stays_for_another_resume() -> None:
    k = numbered(USAGE)[7]
    cut = cut_inside(USAGE, k)
    gapped, _ = run_chain([[cut], [from_event(USAGE, k + 1)]])  # event k (number N + 1) is missing
    result = gapped.result
    assert result is not None and (result.outcome.value, result.stage) == ("protocol_error", "sequence_gap")
    assert result.resume == ResumePoint(response_id(USAGE), last_number_before(USAGE, k))
    view = chain_view([[cut], [from_event(USAGE, k + 1)], [from_event(USAGE, k)]])
    assert view == uninterrupted_view(USAGE)


def test_a_stream_cut_again_during_the_resume_is_resumed_again_to_the_same_result() -> None:
    for name, data in RECORDINGS.items():
        indexes = numbered(data)
        k1, k2 = indexes[len(indexes) // 3], indexes[2 * len(indexes) // 3]
        second = from_event(data, k1 - 1, k2) + events_of(data)[k2][:7]  # repeats one event, is cut inside k2
        chain = [[cut_inside(data, k1)], [second], [from_event(data, k2 - 2)]]
        session, _ = run_chain(chain[:2])
        assert session.result is not None and session.result.resume == ResumePoint(
            response_id(data), last_number_before(data, k2)), name
        assert chain_view(chain) == uninterrupted_view(data), name


def test_a_resumed_stream_must_number_every_event() -> None:
    k = numbered(USAGE)[6]
    tail = from_event(USAGE, k)
    unnumbered = tail.replace(b'"sequence_number":%d,' % last_number_before(USAGE, k + 1), b"", 1)
    assert unnumbered != tail
    session, _ = run_chain([[cut_inside(USAGE, k)], [unnumbered]])
    assert session.result is not None and session.result.stage == "sequence_missing"


def test_a_resumed_stream_that_starts_a_new_response_is_duplicate_start() -> None:
    k = numbered(USAGE)[6]
    number = last_number_before(USAGE, k)
    created = events_of(USAGE)[0].replace(b'"sequence_number":0', b'"sequence_number":%d' % (number + 1))
    session, _ = run_chain([[cut_inside(USAGE, k)], [created]])
    assert session.result is not None and session.result.stage == "duplicate_start"


def test_a_repeat_after_the_resumed_stream_continued_is_sequence_order() -> None:
    k = numbered(USAGE)[6]
    events = events_of(USAGE)
    session, _ = run_chain([[cut_inside(USAGE, k)], [b"".join([events[k], events[k + 1], events[k]])]])
    assert session.result is not None and session.result.stage == "sequence_order"


def test_a_repeat_after_a_resumed_stream_continued_on_the_general_path_is_sequence_order() -> None:
    """The resumed stream's first new event is taken by the envelope step (these deltas are not in a fast-path
    key order): from then on a repeat is out of order, not an overlap to drop."""
    created, added, delta_a, delta_b, done, completed = numbered_stream(0, 1, 2, 3, 4, 5).split(b"\n\n")[:6]
    frames = [frame + b"\n\n" for frame in (created, added, delta_a, delta_b, done, completed)]
    first = StreamSession(RESPONSES)
    first.open(200, "text/event-stream")
    first.feed(b"".join(frames[:3]))
    first.abort(Outcome.TIMEOUT, "idle")
    resumed = StreamSession.resume(first)
    resumed.open(200, "text/event-stream")
    resumed.feed(b"".join([frames[1], frames[3], frames[2], *frames[4:]]))  # a repeat, the next, a repeat
    result = resumed.finish()
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "sequence_order", "ab")


def test_the_response_id_is_taken_from_the_start_event_after_a_numbered_unknown_event() -> None:
    """Unknown event types are tolerated (their numbers counted) even before ``response.created``, whose id is
    then still the resume point's."""
    data = sse(("response.future_thing", {"type": "response.future_thing", "sequence_number": 0}),
               ("response.created", {"type": "response.created", "sequence_number": 1,
                                     "response": {"id": "resp_9", "status": "in_progress"}}),
               ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 2,
                                               "output_index": 0, "item": {"id": "m", "type": "message"}}))
    session = StreamSession(RESPONSES)
    session.open(200, "text/event-stream")
    session.feed(data)
    result = session.finish()
    assert (result.outcome.value, result.stage) == ("truncated", "eof")
    assert session.resume_point == ResumePoint("resp_9", 2)


def test_a_repeat_after_the_id_event_ended_a_resumed_streams_overlap_is_sequence_order() -> None:
    """The first attempt was cut before ``response.created`` (after a numbered event of another type): the resumed
    stream repeats that event (dropped), then sends the created event as the next number, which the sequencer
    itself takes (it carries the id); from then on a repeat is out of order, not an overlap to drop."""
    future = ("response.future_thing", {"type": "response.future_thing", "sequence_number": 0})
    created = ("response.created", {"type": "response.created", "sequence_number": 1,
                                    "response": {"id": "resp_9", "status": "in_progress"}})
    session, _ = run_chain([[sse(future)], [sse(future, created, future)]])
    result = session.result
    assert result is not None and (result.outcome.value, result.stage) == ("protocol_error", "sequence_order")


@pytest.mark.parametrize("bad_id", ["", 7, None, ["resp_9"]])
def test_a_start_event_without_a_usable_id_gives_no_resume_point(bad_id: object) -> None:
    data = sse(("response.created", {"type": "response.created", "sequence_number": 0,
                                     "response": {"id": bad_id, "status": "in_progress"}}),
               ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                               "output_index": 0, "item": {"id": "m", "type": "message"}}))
    session = ended([data])
    assert session.result is not None and session.result.outcome.value == "truncated"
    assert session.resumable is True and session.resume_point is None and session.result.resume is None
    assert plan_resume(session, ResumePolicy(max_resumes=3, last_event_id=True), 0, ORIGINAL) is None


@pytest.mark.parametrize(("capture", "ending"), [
    (sse(("response.created", {"type": "response.created", "sequence_number": "zero", "response": {"id": "r"}})),
     ("protocol_error", "envelope")),  # an outcome with resumable stages, not this one
    (cut_inside(USAGE, 6) + b"\xff\n\n", ("decode_error", "utf8")),  # an outcome never resumable
])
def test_resumable_is_a_bool_for_an_ending_that_cannot_be_continued(capture: bytes, ending: tuple[str, str]) -> None:
    session = ended([capture])
    assert session.result is not None and (session.result.outcome.value, session.result.stage) == ending
    assert session.resumable is False and session.resume_point is None


def test_a_resume_from_a_refused_resume_request_continues_the_same_accumulation() -> None:
    k = numbered(USAGE)[7]
    session, _ = run_chain([[cut_inside(USAGE, k)], [b"busy"]], statuses=(200, 503))
    result = session.result
    assert result is not None and (result.outcome.value, result.stage, result.http_status) == (
        "protocol_error", "status", 503)
    assert result.resume is not None and result.resume.sequence_number == last_number_before(USAGE, k)


def test_resume_refuses_sessions_that_cannot_be_continued() -> None:
    with pytest.raises(UsageError):
        StreamSession.resume("not a session")  # type: ignore[arg-type]
    fresh = StreamSession(RESPONSES)
    with pytest.raises(UsageError):
        StreamSession.resume(fresh)  # not ended
    complete, _ = run_chain([[USAGE]])
    with pytest.raises(UsageError):
        StreamSession.resume(complete)
    cut, _ = run_chain([[cut_inside(USAGE, 6)]])
    resumed = StreamSession.resume(cut)
    assert not cut.resumable and cut.resume_point is None and cut.result is not None and cut.result.resume
    with pytest.raises(UsageError):
        StreamSession.resume(cut)  # already continued by `resumed`
    assert resumed.contract is cut.contract


def test_a_resumed_session_keeps_the_callers_settings() -> None:
    tools = {"final_result": {"type": "object", "properties": {"result": {"type": "string"}}}}
    session = StreamSession(RESPONSES, tools=tools, request_id="req-7")
    session.open(200, "text/event-stream")
    k = numbered(USAGE)[-3]
    session.feed(cut_inside(USAGE, k))
    session.finish()
    resumed = StreamSession.resume(session)
    resumed.open(200, "text/event-stream")
    resumed.feed(from_event(USAGE, k))
    result = resumed.finish()
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_schema")  # {"result": 6} is no string
    assert result.telemetry.request_id == "req-7"


# -- resuming on other routes (the transports' Last-Event-ID reconnect) -----------------------------------------


def chat_with_ids(parts: list[str]) -> list[bytes]:
    """Chat chunks carrying SSE ids 1, 2, ...; the finish chunk and [DONE] last."""
    events = [b"id: %d\ndata: %s\n\n" % (i + 1, sse({"choices": [{"index": 0, "delta": {"content": p}}]})[6:-2])
              for i, p in enumerate(parts)]
    events.append(b"id: %d\n" % (len(parts) + 1) + sse({"choices": [{"index": 0, "delta": {},
                                                                      "finish_reason": "stop"}]}))
    return [*events, sse("[DONE]")]


def test_a_chat_stream_continued_after_its_last_event_id_commits_the_joined_text() -> None:
    events = chat_with_ids(["Grü", "ße ", "€ ", "😀"])
    first = b"retry: 2500\n" + b"".join(events[:2]) + events[2][:9]
    session, _ = run_chain([[first]], route="openai-chat")
    assert (session.last_event_id, session.reconnect_ms, session.resumable) == ("2", 2500, True)
    assert session.result is not None and session.result.resume is None  # chat has no route resume point

    def run(chunks: list[bytes]) -> tuple[object, ...]:
        return chain_view([[first], chunks], route="openai-chat")

    view = assert_chunking_invariant(run, b"".join(events[2:]), random_count=10)
    assert view[0]["text"] == "Grüße € 😀" and view[0]["committed"] is True  # type: ignore[index]
    resumed, _ = run_chain([[first], [b"".join(events[2:])]], route="openai-chat")
    assert (resumed.last_event_id, resumed.reconnect_ms) == ("5", 2500)


def test_the_last_event_id_carries_over_a_resume_without_id_lines_and_counts_only_consumed_events() -> None:
    events = chat_with_ids(["a", "b"])
    session, _ = run_chain([[events[0] + b"id: 9\ndata: {\n"]], route="openai-chat")  # id 9 never dispatched
    assert session.last_event_id == "1"
    plain = sse({"choices": [{"index": 0, "delta": {"content": "b"}}]})
    resumed, _ = run_chain([[events[0]], [plain]], route="openai-chat")
    assert resumed.last_event_id == "1" and resumed.reconnect_ms is None


def test_keepalives_are_counted_per_attempt_after_a_resume() -> None:
    ping = sse(("ping", {"type": "ping"}))
    start = sse(("message_start", {"type": "message_start", "message": {"id": "msg_1", "content": [],
                                                                        "usage": {"input_tokens": 1}}}))
    session, _ = run_chain([[start + ping + ping]], route="anthropic-messages")
    assert (session.keepalives_seen, session.content_events_seen) == (2, 1)
    resumed = StreamSession.resume(session)
    resumed.open(200, "text/event-stream")
    resumed.feed(ping)
    assert (resumed.keepalives_seen, resumed.content_events_seen, resumed.events_seen) == (1, 0, 1)


# -- the follow-up request plan --------------------------------------------------------------------------------

ORIGINAL = RequestSpec("POST", "https://api.example/v1/responses", {"Authorization": "Bearer k",
                                                                    "content-type": "application/json",
                                                                    "accept": "text/event-stream"},
                       {"model": "m", "stream": True, "background": True})


def ended(captures: list[bytes], route: str = RESPONSES) -> StreamSession:
    return run_chain([[c] for c in captures], route)[0]


def test_the_resume_request_is_a_get_of_the_response_after_the_last_number_without_a_body() -> None:
    session = ended([cut_inside(USAGE, 6)])
    plan = plan_resume(session, ResumePolicy(max_resumes=2, delay=0.25), 0, ORIGINAL)
    assert plan is not None and plan.kind == "resume" and plan.delay == 0.25
    number = last_number_before(USAGE, 6)
    assert plan.request == RequestSpec(
        "GET", f"https://api.example/v1/responses/{response_id(USAGE)}?stream=true&starting_after={number}",
        {"authorization": "Bearer k", "accept": "text/event-stream"}, None)


def test_the_resume_url_keeps_the_request_query_and_encodes_the_id() -> None:
    contract = ROUTES[RESPONSES].contract.resume
    assert contract is not None
    url = resume_url("https://h/openai/v1/responses/?api-version=preview#x", contract, ResumePoint("r/1 ?", 41))
    assert url == "https://h/openai/v1/responses/r%2F1%20%3F?api-version=preview&stream=true&starting_after=41"
    # every character but the unreserved ones is escaped, a control character too
    assert resume_url("https://h/v1/responses", contract, ResumePoint("a\x00b#c&d", 1)) == (
        "https://h/v1/responses/a%00b%23c%26d?stream=true&starting_after=1")


def test_resumes_stop_at_the_budget_and_back_off_exponentially_up_to_the_cap() -> None:
    session = ended([cut_inside(USAGE, 6)])
    policy = ResumePolicy(max_resumes=3, delay=1.0, max_delay=3.0)
    delays = [plan.delay if (plan := plan_resume(session, policy, n, ORIGINAL)) else None for n in range(4)]
    assert delays == [1.0, 2.0, 3.0, None]
    assert plan_resume(session, ResumePolicy(), 0, ORIGINAL) is None  # no budget by default


def test_only_endings_the_retry_advice_would_retry_are_resumed() -> None:
    policy = ResumePolicy(max_resumes=5, delay=0)
    cut = ended([cut_inside(USAGE, 6)])
    assert plan_resume(cut, policy, 0, ORIGINAL) is not None
    cancelled = StreamSession(RESPONSES)
    cancelled.open(200, "text/event-stream")
    cancelled.feed(cut_inside(USAGE, 6))
    cancelled.abort(Outcome.CANCELLED, "caller")
    assert cancelled.resumable and plan_resume(cancelled, policy, 0, ORIGINAL) is None  # the caller's decision
    total = StreamSession(RESPONSES)
    total.open(200, "text/event-stream")
    total.feed(cut_inside(USAGE, 6))
    total.abort(Outcome.TIMEOUT, "total")
    assert plan_resume(total, policy, 0, ORIGINAL) is None  # the answer outgrew its budget
    for status, planned in ((503, True), (429, True), (404, False), (400, False)):
        refused = StreamSession.resume(ended([cut_inside(USAGE, 6)]))
        refused.open(status, "application/json")
        refused.finish()
        assert (plan_resume(refused, policy, 1, ORIGINAL) is not None) is planned, status
    assert plan_resume(ended([USAGE]), policy, 0, ORIGINAL) is None  # complete


def test_a_last_event_id_reconnect_repeats_the_request_with_the_header_after_the_servers_retry_time() -> None:
    events = chat_with_ids(["a", "b", "c"])
    session = ended([b"retry: 120000\n" + b"".join(events[:2])], route="openai-chat")
    chat = RequestSpec("POST", "https://h/v1/chat/completions", {"content-type": "application/json"}, b"{}")
    assert plan_resume(session, ResumePolicy(max_resumes=1), 0, chat) is None  # not opted in
    plan = plan_resume(session, ResumePolicy(max_resumes=1, last_event_id=True, max_delay=60), 0, chat)
    assert plan is not None and plan.kind == "last_event_id" and plan.delay == 60.0  # 120 s capped
    assert plan.request == RequestSpec("POST", chat.url, {"content-type": "application/json", "last-event-id": "2"},
                                       b"{}")
    no_ids = ended([sse({"choices": [{"index": 0, "delta": {"content": "a"}}]})], route="openai-chat")
    assert plan_resume(no_ids, ResumePolicy(max_resumes=1, last_event_id=True), 0, chat) is None


def test_the_resume_request_drops_the_body_headers_and_asks_for_an_event_stream() -> None:
    session = ended([cut_inside(USAGE, 6)])
    original = RequestSpec("POST", "https://api.example/v1/responses", {
        "Authorization": "Bearer k", "Content-Type": "application/json", "Content-Length": "57",
        "Content-Encoding": "gzip", "Last-Event-ID": "4", "Accept": "application/json", "X-Trace": "t"}, b"{}")
    plan = plan_resume(session, ResumePolicy(max_resumes=1), 0, original)
    assert plan is not None and plan.kind == "resume"
    assert plan.request.headers == {"authorization": "Bearer k", "accept": "text/event-stream", "x-trace": "t"}
    assert (plan.request.method, plan.request.body) == ("GET", None)


def test_a_resume_waits_the_servers_retry_time_in_seconds_below_the_cap() -> None:
    session = ended([b"retry: 1500\n" + cut_inside(USAGE, 6)])
    assert session.reconnect_ms == 1500
    plans = [plan_resume(session, ResumePolicy(max_resumes=3, delay=7.0, max_delay=60.0), n, ORIGINAL)
             for n in range(3)]
    assert [plan.delay if plan else None for plan in plans] == [1.5, 1.5, 1.5]  # the server's, not the doubling


def test_the_doubling_delay_stops_doubling_at_two_to_the_64th_and_never_overflows() -> None:
    session = ended([cut_inside(USAGE, 6)])
    policy = ResumePolicy(max_resumes=10**6, delay=1.0, max_delay=1e300)
    delays = [plan.delay if (plan := plan_resume(session, policy, n, ORIGINAL)) else None
              for n in (63, 64, 65, 5000)]
    assert delays == [2.0**63, 2.0**64, 2.0**64, 2.0**64]  # (2.0 ** 5000 would raise OverflowError)


def test_a_route_resume_without_a_point_plans_nothing_even_with_last_event_id_reconnects_allowed() -> None:
    # Cut inside the created event: resumable (truncated), but neither an id nor a number arrived, and no id line.
    session = ended([cut_inside(USAGE, 0)])
    assert session.resumable and session.resume_point is None and not session.last_event_id
    assert plan_resume(session, ResumePolicy(max_resumes=2, last_event_id=True), 0, ORIGINAL) is None


def test_a_resume_policy_validates_its_values() -> None:
    for bad in ({"max_resumes": -1}, {"max_resumes": True}, {"delay": -1.0}, {"max_delay": float("nan")},
                {"last_event_id": 1}):
        with pytest.raises(UsageError):
            ResumePolicy(**bad)  # type: ignore[arg-type]


# -- terminal grace: what the session reports ------------------------------------------------------------------


def test_finishable_holds_only_after_the_terminal_condition_with_nothing_pending() -> None:
    events = events_of(USAGE)

    def state(*chunks: bytes) -> bool:
        session = StreamSession(RESPONSES)
        session.open(200, "text/event-stream")
        for chunk in chunks:
            session.feed(chunk)
        return session.finishable

    assert not state(b"".join(events[:-1]))
    assert state(USAGE) and state(USAGE + b": keep-alive\n\n")
    assert not state(USAGE[:-1])  # the terminal event is not dispatched yet
    assert not state(USAGE + b"data")  # a pending line
    assert not state(USAGE + b"data: x\n")  # a pending event
    assert not state(USAGE + b"event: x\n")  # a pending event type
    assert not state(USAGE + b": \xe2\x82")  # a pending UTF-8 character
    assert not state(USAGE + b"data: {}\n\n")  # after_terminal: ended
    incomplete = b"".join(events[:-1]) + events[-1].replace(b'"response.completed"', b'"response.incomplete"')
    assert not state(incomplete)  # a stop reason that is not accepted ended the attempt


def test_finishable_is_false_before_open_and_after_finish() -> None:
    session = StreamSession(RESPONSES)
    assert not session.finishable
    session.open(200, "text/event-stream")
    session.feed(USAGE)
    assert session.finishable
    assert session.finish().committed and not session.finishable


def test_a_stream_that_is_finishable_finishes_complete_with_the_uninterrupted_result() -> None:
    session, _ = run_chain([[USAGE]])
    assert session.result is not None
    assert answer_view(session.result.to_dict()) == uninterrupted_view(USAGE)[0]


def test_a_cut_between_the_halves_of_a_pair_shows_u_fffd_and_the_resumed_answer_still_has_the_character() -> None:
    # The cut result shows its text encodable (the half pair as U+FFFD); the accumulation itself keeps the
    # text as it came, so the resumed stream's other half completes the character and the answer commits.
    cut, result = cut_and_resumed(RESPONSES, numbered_stream(*range(7), text="a\ud83d\ude00"), 4)
    assert (cut.outcome, cut.text) == (Outcome.TRUNCATED, "a\ufffd")
    assert (result.outcome, result.text) == (Outcome.COMPLETE, "a\U0001f600")


def test_a_cut_between_the_halves_of_a_pair_shows_neither_half_in_a_delta_and_the_resumed_delta_the_character() -> None:
    # The high half the cut stream's last delta held back waits in the accumulation the resumed session continues.
    parts = numbered_stream(*range(7), text="a\ud83d\ude00").split(b"\n\n")
    first, rest = b"\n\n".join(parts[:4]) + b"\n\n", b"\n\n".join(parts[4:])
    session, updates = run_chain([[first], [rest]])
    assert [u["text"] for u in updates if u["kind"] == "text_delta"] == ["a", "\U0001f600"]
    assert session.result is not None and session.result.text == "a\U0001f600"

