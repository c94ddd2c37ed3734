# SPDX-License-Identifier: Apache-2.0
"""The misfire decision: which overdue instants are delivered, coalesced or missed."""

from __future__ import annotations

import pytest

from tocsin.triggers import Misfire, MisfirePlan, past_grace, plan_misfire, supersede
from tocsin.triggers import goes_on_from_now as goes_on


def test_once_delivers_the_first_overdue_instant_standing_for_the_others() -> None:
    plan = plan_misfire(Misfire.once(), 10.0, 5, [50.0])
    assert plan == MisfirePlan((10.0,), coalesced=4, judged_by=50.0)


def test_skip_delivers_none_and_misses_them_all() -> None:
    assert plan_misfire(Misfire.skip(), 10.0, 5, [50.0]) == MisfirePlan((), missed=5)


def test_all_replays_the_most_recent_max_oldest_first() -> None:
    misfire = Misfire.all(max=3, rate=2)
    assert misfire.keep() == 3
    plan = plan_misfire(misfire, 10.0, 5, [30.0, 40.0, 50.0])
    assert plan.deliver == (30.0, 40.0, 50.0)
    assert plan.missed == 2
    assert plan.rate == 2.0


def test_all_with_fewer_overdue_than_max_misses_none() -> None:
    plan = plan_misfire(Misfire.all(max=10), 10.0, 2, [10.0, 20.0])
    assert plan.deliver == (10.0, 20.0)
    assert plan.missed == 0


def test_keep_is_one_but_for_all() -> None:
    assert Misfire.once().keep() == 1
    assert Misfire.skip().keep() == 1


def test_a_plan_needs_one_instant() -> None:
    with pytest.raises(ValueError, match="count >= 1"):
        plan_misfire(Misfire.once(), 1.0, 0, [])


def test_grace_misses_only_a_tick_later_than_it() -> None:
    assert not past_grace(Misfire.once(), 1e9)
    assert not past_grace(Misfire.once(grace=5), 5.0)
    assert past_grace(Misfire.once(grace=5), 5.001)


def test_misfire_round_trips_through_its_wire_form() -> None:
    for misfire in (Misfire.once(grace=3), Misfire.skip(), Misfire.all(max=4, rate=1.5)):
        assert Misfire.from_wire(misfire.to_wire()) == misfire


def test_supersede_keeps_the_newer_tick_waiting_and_coalesces_the_older() -> None:
    assert supersede(None, "t1") == ("t1", None)
    assert supersede("t1", "t2") == ("t2", "t1")


def test_on_a_ledger_once_delivers_the_latest_and_skip_notes_the_latest() -> None:
    # One row per instant, the newest marking how far the schedule was decided.
    once = plan_misfire(Misfire.once(), 10.0, 5, [50.0], ledger=True)
    assert once == MisfirePlan((50.0,), coalesced=4, judged_by=50.0)
    skip = plan_misfire(Misfire.skip(), 10.0, 5, [50.0], ledger=True)
    assert skip == MisfirePlan((), missed=5, noted=50.0)
    replay = plan_misfire(Misfire.all(max=2), 10.0, 5, [40.0, 50.0], ledger=True)
    assert replay == plan_misfire(Misfire.all(max=2), 10.0, 5, [40.0, 50.0])
    assert replay.noted is None  # the older ones are missed on the first


def test_a_stalled_walk_goes_on_from_now_unless_the_policy_replays() -> None:
    assert goes_on(Misfire.once(), 20.0, 25.0)
    assert goes_on(Misfire.skip(), 20.0, 20.0)
    assert not goes_on(Misfire.all(max=5), 20.0, 25.0)
    assert not goes_on(Misfire.once(), 30.0, 25.0)  # not overdue
    assert not goes_on(Misfire.once(), None, 25.0)  # no next instant
