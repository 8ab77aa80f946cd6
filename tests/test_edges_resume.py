"""Resuming at its edges (``webclient._resume``): which refusals can be continued, when no follow-up request is
planned, and value objects that cannot change.

Found by mutation testing (``build_scripts/mutation.py``): each test fails if an entry of the resumable table, a
guard of :func:`webclient.plan_resume` or the immutability of a resume value is changed.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.resume_streams import USAGE, cut_inside, from_event, last_number_before, numbered, run_chain
from tests.route_fixtures import RESPONSES
from webclient import Outcome, ResumePoint, ResumePolicy, StreamSession, UsageError, plan_resume
from webclient._resume import RequestSpec, ResumePlan, is_resumable
from webclient._routes import ROUTES

ORIGINAL = RequestSpec("POST", "https://api.example/v1/responses", {"content-type": "application/json"}, {"x": 1})
POLICY = ResumePolicy(max_resumes=3, delay=0)


def cut() -> StreamSession:
    return run_chain([[cut_inside(USAGE, numbered(USAGE)[6])]])[0]


@pytest.mark.parametrize(("stage", "resumable"), [("status", True), ("media_type", True), ("sequence_gap", True),
                                                  ("sequence_order", True), ("sequence_missing", False),
                                                  ("envelope", False), ("order", False), ("", False)])
def test_a_protocol_error_is_resumable_only_for_a_refused_response_or_a_rejected_sequence_number(
        stage: str, resumable: bool) -> None:
    assert is_resumable(Outcome.PROTOCOL_ERROR, stage) is resumable


def test_a_resume_answered_with_another_media_type_can_be_resumed_again_from_the_same_point() -> None:
    first = cut()
    point = first.resume_point
    refused = StreamSession.resume(first)
    refused.open(200, "application/json")
    result = refused.finish()
    assert (result.outcome.value, result.stage) == ("protocol_error", "media_type")
    assert refused.resumable and refused.resume_point == point is not None


def test_a_resumed_stream_that_repeats_a_number_after_continuing_can_be_resumed_again() -> None:
    k = numbered(USAGE)[6]
    first = run_chain([[cut_inside(USAGE, k)]])[0]
    again = StreamSession.resume(first)
    again.open(200, "text/event-stream")
    rest = from_event(USAGE, k)
    events = rest.split(b"\n\n")
    again.feed(b"\n\n".join(events[:2]) + b"\n\n" + events[1] + b"\n\n")  # the second event once more
    result = again.finish()
    assert (result.outcome.value, result.stage) == ("protocol_error", "sequence_order")
    assert again.resumable and again.resume_point is not None
    assert again.resume_point.sequence_number == last_number_before(USAGE, k) + 2


def test_no_follow_up_is_planned_for_a_session_still_streaming_or_already_continued() -> None:
    streaming = StreamSession(RESPONSES)
    streaming.open(200, "text/event-stream")
    streaming.feed(cut_inside(USAGE, 6))
    assert plan_resume(streaming, POLICY, 0, ORIGINAL) is None
    session = cut()
    assert plan_resume(session, POLICY, 0, ORIGINAL) is not None
    StreamSession.resume(session)
    assert plan_resume(session, POLICY, 0, ORIGINAL) is None  # its accumulation belongs to the new session


def test_a_budget_of_one_resume_plans_exactly_one() -> None:
    session = cut()
    policy = ResumePolicy(max_resumes=1, delay=0.5)
    plan = plan_resume(session, policy, 0, ORIGINAL)
    assert plan is not None and (plan.kind, plan.delay, plan.request.method) == ("resume", 0.5, "GET")
    assert plan_resume(session, policy, 1, ORIGINAL) is None


def test_resume_values_cannot_be_changed_and_hold_no_instance_dict() -> None:
    contract = ROUTES[RESPONSES].contract.resume
    assert contract is not None
    plan = plan_resume(cut(), POLICY, 0, ORIGINAL)
    assert plan is not None and isinstance(plan, ResumePlan)
    for value, field in ((ResumePoint("r", 1), "sequence_number"), (POLICY, "max_resumes"), (plan, "delay"),
                         (ORIGINAL, "url"), (contract, "path")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, field, getattr(value, field))
        assert not hasattr(value, "__dict__"), type(value).__name__


@pytest.mark.parametrize("field", ["delay", "max_delay"])
def test_a_bad_delay_is_a_caller_bug_that_names_its_field(field: str) -> None:
    with pytest.raises(UsageError, match=f"^{field} must be a finite number of seconds >= 0$"):
        ResumePolicy(max_resumes=1, **{field: -1.0})  # type: ignore[arg-type]
