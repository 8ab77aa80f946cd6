"""Terminal grace in the deadline tracker: pure logic on a fake clock (the transports' tests use a real server)."""

from __future__ import annotations

from webclient import Deadlines, DeadlineTracker, Failure, Outcome
from webclient._deadlines import DEFAULT_TERMINAL_GRACE

START = 500.0


def tracker(grace: float | None = 1.0, idle: float | None = 5.0, total: float | None = 100.0) -> DeadlineTracker:
    t = DeadlineTracker(Deadlines(connect=10, first_event=20, idle=idle, total=total, terminal_grace=grace), START)
    t.headers_received(START + 1)
    t.event_received(START + 2)
    return t


def test_the_grace_is_a_named_default_of_the_deadlines() -> None:
    assert Deadlines().terminal_grace == DEFAULT_TERMINAL_GRACE == 1.0


def test_ready_arms_the_grace_and_it_settles_exactly_when_it_passes() -> None:
    t = tracker()
    t.ready_to_finish(START + 3, True)
    assert t.next_deadline(START + 3) == START + 4
    assert not t.settled(START + 3.999)
    assert t.settled(START + 4) and t.expired(START + 4) is None
    assert t.next_deadline(START + 4) is None
    assert t.settled(START + 50) and t.expired(START + 200) is None  # sticky: no deadline expires afterwards


def test_not_ready_never_arms_the_grace() -> None:
    t = tracker()
    t.ready_to_finish(START + 3, False)
    assert t.next_deadline(START + 3) == START + 7  # idle
    assert not t.settled(START + 6.9)
    assert t.expired(START + 7) == Failure(Outcome.TIMEOUT, "idle") and not t.settled(START + 7)


def test_bytes_of_something_new_disarm_the_grace_and_the_next_ready_rearms_it_from_then() -> None:
    t = tracker()
    t.ready_to_finish(START + 3, True)
    t.ready_to_finish(START + 3.5, False)  # a partial line arrived after the terminal event
    assert not t.settled(START + 4.5) and t.next_deadline(START + 4.5) == START + 7
    t.ready_to_finish(START + 4.6, True)  # it turned out to be a comment
    assert not t.settled(START + 5.5) and t.settled(START + 5.6)


def test_repeated_ready_reports_keep_the_grace_where_it_started() -> None:
    t = tracker()
    t.ready_to_finish(START + 3, True)
    t.event_received(START + 3.5, keep_alive=True)  # a proxy's keep-alive comment after the terminal event
    t.ready_to_finish(START + 3.5, True)
    assert t.settled(START + 4)


def test_a_deadline_due_before_the_grace_wins_and_a_tie_goes_to_the_deadline() -> None:
    t = tracker(grace=10.0, idle=5.0)
    t.ready_to_finish(START + 3, True)
    assert t.expired(START + 20) == Failure(Outcome.TIMEOUT, "idle") and not t.settled(START + 20)
    tie = tracker(grace=5.0, idle=6.0)  # idle due at START + 8, grace at START + 3 + 5
    tie.ready_to_finish(START + 3, True)
    assert tie.expired(START + 8) == Failure(Outcome.TIMEOUT, "idle") and not tie.settled(START + 9)


def test_no_grace_waits_for_eof_under_the_other_deadlines() -> None:
    t = tracker(grace=None)
    t.ready_to_finish(START + 3, True)
    assert t.next_deadline(START + 3) == START + 7
    assert not t.settled(START + 6) and t.expired(START + 7) == Failure(Outcome.TIMEOUT, "idle")


def test_signals_after_the_grace_settled_change_nothing() -> None:
    t = tracker()
    t.ready_to_finish(START + 3, True)
    assert t.settled(START + 4.5)
    t.event_received(START + 5)
    t.ready_to_finish(START + 5, False)
    assert t.settled(START + 5) and t.expired(START + 500) is None
