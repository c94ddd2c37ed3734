# SPDX-License-Identifier: Apache-2.0
"""The policy values every tier shares (Overlap, Misfire, Tick, Outcome) and the kernel's
hook under them: a runtime item's ``tick()`` is ``ctx.tick``, a tracked item's
``finished()`` is called once ``receive`` for it is over (an untracked one's never), and
plain messages see ``ctx.tick is None``."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.actor.actor_support import new_system

from tocsin import (
    PID,
    Actor,
    InvalidIntervalError,
    Misfire,
    Outcome,
    Overlap,
    ReceiveContext,
    Tick,
    TickNotDelivered,
    TickOutcome,
)
from tocsin.actor._spi import STALE, NoSender, RuntimeItem, target_of

_INSTANT = datetime(2026, 12, 25, 9, 0, tzinfo=UTC)
_HALF: Any = 2.5  # not an int: typed Any so the bad call type-checks


def test_overlap_values() -> None:
    assert Overlap.ALLOW.max_in_flight == math.inf
    assert not Overlap.ALLOW.tracks
    assert Overlap.SKIP.max_in_flight == 1
    assert Overlap.SKIP.tracks
    assert Overlap.BUFFER_ONE.tracks
    assert Overlap.BUFFER_ONE != Overlap.SKIP
    assert Overlap.limit(3) == Overlap.limit(3)
    assert Overlap.limit(3).max_in_flight == 3
    assert repr(Overlap.limit(3)) == "Overlap.limit(3)"
    assert repr(Overlap.SKIP) == "Overlap.SKIP"
    for policy in (Overlap.ALLOW, Overlap.SKIP, Overlap.BUFFER_ONE, Overlap.limit(7)):
        assert Overlap.from_wire(policy.to_wire()) == policy
        assert Overlap.check(policy) is policy


@pytest.mark.parametrize("n", [0, -1, 1.5, True, "2", None])
def test_overlap_limit_rejects_what_is_not_a_positive_int(n: Any) -> None:
    with pytest.raises(ValueError, match=r"Overlap\.limit"):
        Overlap.limit(n)


@pytest.mark.parametrize("value", ["skip", None, 1, Misfire.once()])
def test_overlap_check_names_the_option(value: Any) -> None:
    with pytest.raises(ValueError, match="`overlap` must be"):
        Overlap.check(value)
    with pytest.raises(ValueError, match="not a stored overlap"):
        Overlap.from_wire("limit:x" if value == "skip" else value)


def test_misfire_values() -> None:
    assert Misfire.once().is_default
    assert Misfire.once() == Misfire.ONCE
    assert not Misfire.once(grace=300).is_default
    assert Misfire.once(grace=timedelta(minutes=5)).grace == 300.0
    replay = Misfire.all(max=100, rate=10)
    assert (replay.mode, replay.max, replay.rate, replay.grace) == ("all", 100, 10.0, None)
    assert Misfire.all().max == 100  # never unbounded
    assert repr(replay) == "Misfire.all(max=100, rate=10)"
    for policy in (Misfire.once(), Misfire.skip(grace=5), replay, Misfire.all(3, grace=60)):
        assert Misfire.from_wire(policy.to_wire()) == policy


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: Misfire.all(max=0), ValueError, r"max"),
        (lambda: Misfire.all(max=_HALF), ValueError, r"max"),
        (lambda: Misfire.all(rate=0), ValueError, r"rate"),
        (lambda: Misfire.all(rate=math.inf), ValueError, r"rate"),
        (lambda: Misfire.all(rate=True), ValueError, r"rate"),
        (lambda: Misfire.once(grace=-1), InvalidIntervalError, r"grace"),
        (lambda: Misfire.skip(grace=math.nan), InvalidIntervalError, r"grace"),
        (lambda: Misfire.check("once"), ValueError, r"`misfire` must be"),
        (lambda: Misfire.from_wire({"mode": "sometimes"}), ValueError, r"misfire"),
    ],
)
def test_misfire_bad_values_are_typed_errors(make: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        make()


def test_tick_round_trips_the_wire() -> None:
    tick = Tick("nightly", _INSTANT, attempt=2, manual=True, backfill=False, fence=41)
    assert Tick.from_wire(tick.to_wire()) == tick
    assert Tick.from_wire(Tick("r", _INSTANT).to_wire()) == Tick("r", _INSTANT)
    for bad in (None, [], ["r", 1.5, 1, False, False, None], ["r", 1, 1, 0, False, None]):
        with pytest.raises(ValueError, match="not a wire tick"):
            Tick.from_wire(bad)


def test_outcomes_are_the_design_list() -> None:
    assert [o.value for o in Outcome] == [
        "delivered",
        "skipped_overlap",
        "coalesced",
        "missed",
        "excluded",
        "paused",
        "dead_letter",
        "dst_gap",
        "dst_fold",
        "claimed_elsewhere",
        "claim_late",
        "claim_error",
        "failed",  # stored schedules' ledger (DESIGN.md "Schedules as data")
        "retried",
    ]
    assert Outcome("missed") is Outcome.MISSED
    assert str(Outcome.MISSED) == "missed"
    row = TickOutcome("r", _INSTANT, _INSTANT, Outcome.COALESCED, 3, "node-a")
    event = TickNotDelivered("r", _INSTANT, Outcome.COALESCED, 3, "node-a")
    assert row.detail == event.detail == 3


class _Item(RuntimeItem):
    """A runtime item as an upper layer would queue one (a schedule's tick whose
    overlap policy counts ticks in flight)."""

    __slots__ = ("events", "message", "stale")

    tracked = True

    def __init__(self, message: Any, events: list[str], *, stale: bool = False) -> None:
        self.message = message
        self.events = events
        self.stale = stale

    def open(self) -> Any:
        return STALE if self.stale else self.message

    def rejected(self) -> Any:
        self.events.append(f"rejected {self.message}")
        return self.message

    def tick(self) -> Tick | None:
        return Tick(f"ref-{self.message}", _INSTANT)

    def finished(self) -> None:
        self.events.append(f"finished {self.message}")


class _Recorder(Actor):
    events: list[str]

    async def receive(self, ctx: ReceiveContext) -> None:
        tick = ctx.tick
        self.events.append(f"receive {ctx.message} tick={tick.reference if tick else None}")
        if ctx.message == "boom":
            raise RuntimeError("boom")
        ctx.respond(None)


async def _deliver_and_record(sends: Callable[[PID, list[str]], None]) -> list[str]:
    """Run ``sends`` (items and tells to a recording actor), then an ask that syncs:
    what the actor and the items recorded, in order."""
    system, clock = new_system()
    events: list[str] = []

    def make() -> _Recorder:
        actor = _Recorder()
        actor.events = events
        return actor

    async with system:
        pid = await system.spawn(make)
        sends(pid, events)
        assert await pid.ask("sync") is None
        await clock.advance(0)
    return events


async def test_an_item_is_finished_once_receive_returns_and_plain_messages_have_no_tick() -> None:
    def sends(pid: PID, events: list[str]) -> None:
        target = target_of(pid)
        target.deliver(_Item("a", events), NoSender, None)
        pid.tell("plain")
        target.deliver(_Item("boom", events), NoSender, None)  # receive raises: still finished
        target.deliver(_Item("gone", events, stale=True), NoSender, None)  # dropped: not
        target.deliver(_Item("b", events), NoSender, None)

    assert await _deliver_and_record(sends) == [
        "receive a tick=ref-a",
        "finished a",
        "receive plain tick=None",
        "receive boom tick=ref-boom",
        "finished boom",
        "receive b tick=ref-b",
        "finished b",
        "receive sync tick=None",
    ]


class _Untracked(_Item):
    """An item nobody waits on (a plain schedule's tick): never told ``finished()``."""

    __slots__ = ()

    tracked = False


async def test_an_untracked_item_is_not_finished_even_when_receive_raises() -> None:
    def sends(pid: PID, events: list[str]) -> None:
        target = target_of(pid)
        target.deliver(_Untracked("a", events), NoSender, None)
        target.deliver(_Untracked("boom", events), NoSender, None)
        target.deliver(_Item("b", events), NoSender, None)

    assert await _deliver_and_record(sends) == [
        "receive a tick=ref-a",
        "receive boom tick=ref-boom",
        "receive b tick=ref-b",
        "finished b",
        "receive sync tick=None",
    ]


def test_lost_defaults_to_finished() -> None:
    events: list[str] = []
    _Item("x", events).lost()
    assert events == ["finished x"]


def test_a_tick_instant_crosses_the_wire_to_the_microsecond() -> None:
    # Float rounding of timestamp() * 1e6 used to move some instants by 1 µs.
    for micro in (0, 1, 499_999, 500_001, 999_999, 123_457):
        instant = datetime(2026, 12, 2, 3, 4, 5, micro, tzinfo=UTC)
        assert Tick.from_wire(Tick("r", instant).to_wire()).instant == instant
    with pytest.raises(ValueError, match="out of range"):
        Tick.from_wire(["r", 10**20, 1, False, False, None])
