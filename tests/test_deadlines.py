"""Deadlines as pure logic: a fake clock drives every case; nothing here sleeps or reads real time."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webclient import Failure, Outcome, UsageError
from webclient._deadlines import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_DEADLINES,
    DEFAULT_FIRST_EVENT_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
    Deadlines,
    DeadlineTracker,
)

START = 1000.0  # a monotonic clock reading, deliberately not zero


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def timeout(stage: str) -> Failure:
    return Failure(Outcome.TIMEOUT, stage)


def tracker(connect: float | None = 10, first_event: float | None = 20, idle: float | None = 5,
            total: float | None = 100) -> DeadlineTracker:
    return DeadlineTracker(Deadlines(connect, first_event, idle, total), started_at=START)


# -- each deadline ------------------------------------------------------------------------------

def test_connect_expires_exactly_at_start_plus_connect() -> None:
    t = tracker()
    assert t.next_deadline(START) == START + 10
    assert t.expired(START + 9.999) is None
    assert t.expired(START + 10) == timeout("connect")


def test_headers_end_the_connect_phase_and_arm_first_event_from_the_headers_time() -> None:
    t = tracker()
    t.headers_received(START + 9)
    assert t.next_deadline(START + 9) == START + 9 + 20
    assert t.expired(START + 28.5) is None
    assert t.expired(START + 29) == timeout("first_event")


def test_keep_alive_does_not_end_the_first_event_phase() -> None:
    t = tracker()
    t.headers_received(START + 1)
    for second in range(2, 21):
        t.event_received(START + second, keep_alive=True)
    assert t.expired(START + 21) == timeout("first_event")


def test_first_real_event_switches_to_idle_measured_from_that_event() -> None:
    t = tracker()
    t.headers_received(START + 1)
    t.event_received(START + 3)
    assert t.first_event_at == START + 3
    assert t.next_deadline(START + 3) == START + 3 + 5
    assert t.expired(START + 8) == timeout("idle")


def test_every_event_keep_alives_included_re_arms_idle() -> None:
    t = tracker(total=None)
    clock = FakeClock()
    t.headers_received(clock.advance(1))
    t.event_received(clock.advance(1))
    for i in range(30):
        t.event_received(clock.advance(4.9), keep_alive=i % 2 == 0)
        assert t.expired(clock.now) is None
    assert t.last_activity_at == clock.now
    assert t.expired(clock.advance(5)) == timeout("idle")


def test_total_expires_even_while_events_keep_flowing() -> None:
    t = tracker(idle=5, total=30)
    clock = FakeClock()
    t.headers_received(clock.advance(1))
    while clock.now < START + 29:
        t.event_received(clock.advance(1))
    assert t.expired(clock.now) is None
    assert t.next_deadline(clock.now) == START + 30
    assert t.expired(START + 30) == timeout("total")


def test_none_disables_a_deadline() -> None:
    t = tracker(connect=None, total=50)
    assert t.next_deadline(START) == START + 50
    assert t.expired(START + 49) is None
    assert t.expired(START + 50) == timeout("total")


def test_all_deadlines_disabled_never_expire_and_have_no_next_deadline() -> None:
    t = tracker(None, None, None, None)
    assert t.next_deadline(START) is None
    t.headers_received(START + 1e6)
    t.event_received(START + 2e6)
    assert t.expired(START + 1e9) is None
    assert t.next_deadline(START + 1e9) is None


def test_a_disabled_phase_leaves_only_total_armed() -> None:
    t = tracker(first_event=None, total=40)
    t.headers_received(START + 1)
    assert t.next_deadline(START + 1) == START + 40


# -- ordering, ties, late signals, stickiness ----------------------------------------------------

def test_first_expiry_in_time_order_wins_when_polled_late() -> None:
    t = tracker(connect=10, total=30)
    assert t.expired(START + 500) == timeout("connect")


def test_phase_deadline_wins_a_tie_with_total() -> None:
    t = tracker(connect=30, total=30)
    assert t.expired(START + 30) == timeout("connect")
    t = tracker(idle=5, total=10)
    t.headers_received(START + 1)
    t.event_received(START + 5)
    assert t.next_deadline(START + 5) == START + 10
    assert t.expired(START + 10) == timeout("idle")


def test_total_wins_when_it_falls_before_the_phase_deadline() -> None:
    t = tracker(first_event=60, total=30)
    t.headers_received(START + 5)
    assert t.next_deadline(START + 5) == START + 30
    assert t.expired(START + 65) == timeout("total")


def test_signal_stamped_after_a_due_deadline_does_not_rescue_the_attempt() -> None:
    t = tracker(connect=10)
    t.headers_received(START + 12)
    assert t.headers_at is None
    assert t.expired(START + 12) == timeout("connect")


def test_signal_stamped_exactly_at_the_deadline_is_too_late() -> None:
    t = tracker(connect=10)
    t.headers_received(START + 10)
    assert t.expired(START + 10) == timeout("connect")


def test_expiry_is_sticky_and_later_signals_are_ignored() -> None:
    t = tracker()
    t.headers_received(START + 1)
    t.event_received(START + 2)
    first = t.expired(START + 7)
    assert first == timeout("idle")
    t.event_received(START + 8)
    assert t.last_activity_at == START + 2
    assert t.expired(START + 9) == first
    assert t.next_deadline(START + 9) is None


def test_result_depends_only_on_timestamps_not_on_polling() -> None:
    def run(poll_every: float | None) -> Failure | None:
        t = tracker(connect=10, first_event=20, idle=5, total=100)
        clock = FakeClock()
        schedule = [(3.0, "headers"), (10.0, "event"), (14.0, "keep"), (18.5, "event"), (30.0, "event")]
        for at, kind in schedule:
            if poll_every is not None:
                while clock.now + poll_every < START + at:
                    t.expired(clock.advance(poll_every))
            clock.now = START + at
            if kind == "headers":
                t.headers_received(clock.now)
            else:
                t.event_received(clock.now, keep_alive=kind == "keep")
        return t.expired(START + 200)

    assert run(None) == timeout("idle")
    assert run(0.25) == run(None)
    assert run(3.0) == run(None)


# -- next_deadline lets a transport sleep exactly ------------------------------------------------

SIGNALS = st.lists(st.tuples(st.integers(0, 12), st.sampled_from(["event", "keep"])), max_size=12)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(connect=st.none() | st.integers(1, 15), first_event=st.none() | st.integers(1, 15),
       idle=st.none() | st.integers(1, 15), total=st.none() | st.integers(1, 60),
       headers_after=st.integers(0, 20), signals=SIGNALS)
def test_next_deadline_is_exactly_the_first_time_expired_reports(
        connect: int | None, first_event: int | None, idle: int | None, total: int | None,
        headers_after: int, signals: list[tuple[int, str]]) -> None:
    deadlines = Deadlines(connect, first_event, idle, total)

    def replay(upto: int) -> tuple[DeadlineTracker, float]:
        """A tracker fed the first ``upto`` signals, and the time of the last one."""
        t = DeadlineTracker(deadlines, START)
        now = START + headers_after
        t.headers_received(now)
        for gap, kind in signals[:upto]:
            now += gap
            t.event_received(now, keep_alive=kind == "keep")
        return t, now

    for upto in range(len(signals) + 1):
        t, now = replay(upto)
        if t.expired(now) is not None:
            assert t.next_deadline(now) is None
            continue
        nxt = t.next_deadline(now)
        if nxt is None:
            assert t.expired(now + 1e9) is None
            continue
        assert nxt > now
        probe, _ = replay(upto)
        assert probe.expired(nxt - 0.5) is None  # all times are whole seconds
        assert probe.expired(nxt) is not None


def test_transport_loop_sleeping_until_next_deadline_times_out_on_idle() -> None:
    """A transport's read loop, simulated: wait for the next chunk or the next deadline."""
    arrivals = [2.0, 3.0, 4.0, 30.0]  # headers at 2, events at 3 and 4, then a 26 s gap
    t = DeadlineTracker(Deadlines(connect=10, first_event=10, idle=15, total=100), START)
    clock = FakeClock()
    outcome = None
    woke_at = []
    for i, at in enumerate(arrivals):
        deadline = t.next_deadline(clock.now)
        if deadline is not None and deadline <= START + at:
            clock.now = deadline
            woke_at.append(deadline)
            outcome = t.expired(clock.now)
            break
        clock.now = START + at
        if i == 0:
            t.headers_received(clock.now)
        else:
            t.event_received(clock.now)
    assert outcome == timeout("idle")
    assert woke_at == [START + 4 + 15]


# -- validation ---------------------------------------------------------------------------------

def test_defaults_are_the_named_constants() -> None:
    assert Deadlines() == DEFAULT_DEADLINES
    assert Deadlines() == Deadlines(DEFAULT_CONNECT_TIMEOUT, DEFAULT_FIRST_EVENT_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
                                    DEFAULT_TOTAL_TIMEOUT)
    assert DEFAULT_IDLE_TIMEOUT > 2 * 30  # more than two 30 s keep-alive periods


@pytest.mark.parametrize("value", [0, -1, math.nan, math.inf, True, "10", [1]])
def test_deadline_values_must_be_positive_finite_numbers(value: object) -> None:
    for field in ("connect", "first_event", "idle", "total"):
        with pytest.raises(UsageError, match=field):
            Deadlines(**{field: value})  # type: ignore[arg-type]


def test_deadlines_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Deadlines().idle = 1  # type: ignore[misc]


def test_tracker_refuses_time_going_backwards() -> None:
    t = tracker()
    t.expired(START + 5)
    with pytest.raises(UsageError, match="backwards"):
        t.headers_received(START + 4)
    with pytest.raises(UsageError, match="backwards"):
        tracker().expired(START - 1)


@pytest.mark.parametrize("now", [math.nan, math.inf, None, "1", True])
def test_tracker_refuses_a_non_finite_time_naming_the_argument(now: object) -> None:
    with pytest.raises(UsageError, match=r"^now must be a finite number"):
        tracker().expired(now)  # type: ignore[arg-type]


def test_event_before_headers_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="before headers"):
        tracker().event_received(START + 1)


def test_headers_twice_is_a_usage_error() -> None:
    t = tracker()
    t.headers_received(START + 1)
    with pytest.raises(UsageError, match="twice"):
        t.headers_received(START + 2)


def test_tracker_requires_a_deadlines_instance_and_a_finite_start() -> None:
    with pytest.raises(UsageError, match=r"^deadlines must be"):
        DeadlineTracker({"connect": 1}, START)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"^started_at must be a finite number"):
        DeadlineTracker(DEFAULT_DEADLINES, math.nan)
