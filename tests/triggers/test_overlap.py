# SPDX-License-Identifier: Apache-2.0
"""The overlap decision: admit / settle / release over one schedule's Flight, and the
waiting room of runs that never overlap (durable tasks)."""

from __future__ import annotations

import math

import pytest

from tocsin.triggers import Admission, Flight, Overlap, admit, queue_admits, release, settle


def test_allow_sends_every_tick_and_counts_nothing_in_flight() -> None:
    flight = Flight()
    assert [admit(Overlap.ALLOW, flight, t) for t in (1.0, 2.0, 3.0)] == [Admission.SEND] * 3
    assert flight.in_flight == 0


def test_skip_sends_one_then_skips_until_it_settles() -> None:
    flight = Flight()
    assert admit(Overlap.SKIP, flight, 1.0) is Admission.SEND
    assert admit(Overlap.SKIP, flight, 2.0) is Admission.SKIP
    assert flight.held is None
    assert settle(Overlap.SKIP, flight) is None
    assert admit(Overlap.SKIP, flight, 3.0) is Admission.SEND


def test_buffer_one_holds_the_first_waiting_tick_and_skips_later_ones() -> None:
    flight = Flight()
    assert admit(Overlap.BUFFER_ONE, flight, 1.0) is Admission.SEND
    assert admit(Overlap.BUFFER_ONE, flight, 2.0) is Admission.HOLD
    assert admit(Overlap.BUFFER_ONE, flight, 3.0) is Admission.SKIP
    # The tick in flight finishes: the held one is released, to be offered again.
    assert settle(Overlap.BUFFER_ONE, flight) == 2.0
    assert flight.in_flight == 0
    assert flight.held is None
    assert admit(Overlap.BUFFER_ONE, flight, 2.0) is Admission.SEND


def test_limit_n_sends_n_then_skips() -> None:
    flight = Flight()
    overlap = Overlap.limit(3)
    decisions = [admit(overlap, flight, float(t)) for t in range(5)]
    assert decisions == [Admission.SEND] * 3 + [Admission.SKIP] * 2
    settle(overlap, flight)
    assert admit(overlap, flight, 9.0) is Admission.SEND


def test_settle_never_counts_below_zero() -> None:
    flight = Flight()
    settle(Overlap.SKIP, flight)
    assert flight.in_flight == 0


def test_release_drops_the_held_tick() -> None:
    flight = Flight()
    admit(Overlap.BUFFER_ONE, flight, 1.0)
    admit(Overlap.BUFFER_ONE, flight, 2.0)
    assert release(flight) == 2.0
    assert release(flight) is None


@pytest.mark.parametrize(
    ("overlap", "room"),
    [
        (Overlap.ALLOW, math.inf),
        (Overlap.SKIP, 0),
        (Overlap.BUFFER_ONE, 1),
        (Overlap.limit(1), 0),
        (Overlap.limit(4), 3),
    ],
)
def test_waiting_room_of_runs_that_never_overlap(overlap: Overlap, room: float) -> None:
    assert overlap.waiting_room() == room


def test_limit_zero_is_a_value_error_naming_the_option() -> None:
    with pytest.raises(ValueError, match=r"Overlap.limit\(n\): n must be an int >= 1, got 0"):
        Overlap.limit(0)


def test_only_buffer_one_buffers() -> None:
    assert Overlap.BUFFER_ONE.buffers
    assert not any(o.buffers for o in (Overlap.ALLOW, Overlap.SKIP, Overlap.limit(2)))


def test_overlap_round_trips_through_its_wire_form() -> None:
    for overlap in (Overlap.ALLOW, Overlap.SKIP, Overlap.BUFFER_ONE, Overlap.limit(7)):
        assert Overlap.from_wire(overlap.to_wire()) == overlap


@pytest.mark.parametrize(
    ("overlap", "most"),
    [(Overlap.SKIP, 1), (Overlap.BUFFER_ONE, 2), (Overlap.limit(1), 1), (Overlap.limit(3), 3)],
)
def test_a_queue_of_runs_takes_one_running_and_the_waiting_room(
    overlap: Overlap, most: int
) -> None:
    assert [queue_admits(overlap, queued) for queued in range(most + 2)] == (
        [True] * most + [False, False]
    )
    assert queue_admits(overlap, most + 5, asked=True)  # asked for by instant: it waits


def test_allow_queues_every_run() -> None:
    assert queue_admits(Overlap.ALLOW, 10**9)
