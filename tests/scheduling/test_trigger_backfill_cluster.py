# SPDX-License-Identifier: Apache-2.0
"""`trigger_schedule` and `backfill_schedule` of a cron schedule in cluster mode (issue
23): three in-process nodes on one memory:// coordinator and one ManualClock. Each
instant is claimed with the regular tick's key, so none is delivered twice."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest

from tocsin import Actor, ActorSystem, Cluster, ManualClock, Outcome, ReceiveContext

T0 = datetime(2030, 1, 1, 9, 0, 30, tzinfo=UTC)


def _hm(h: int, m: int) -> datetime:
    return datetime(2030, 1, 1, h, m, tzinfo=UTC)


class Sink(Actor):
    def __init__(self, node: str, got: list[tuple[str, datetime, bool, bool]]) -> None:
        self.node = node
        self.got = got

    async def receive(self, ctx: ReceiveContext) -> None:
        tick = ctx.tick
        assert tick is not None
        self.got.append((self.node, tick.instant, tick.manual, tick.backfill))


@asynccontextmanager
async def three_nodes() -> AsyncIterator[
    tuple[list[ActorSystem], ManualClock, list[tuple[str, datetime, bool, bool]]]
]:
    clock = ManualClock(wall=T0.timestamp())
    url = f"memory://{uuid.uuid4().hex}"
    systems = [ActorSystem(n, clock=clock, cluster=Cluster(url, lease=3.0)) for n in "abc"]
    got: list[tuple[str, datetime, bool, bool]] = []
    try:
        for system in systems:
            await system.start()
            name = system.name
            pid = await system.spawn(lambda name=name: Sink(name, got), "sink")  # type: ignore[misc]
            await system.schedule_cron("t", pid, "0 * * * * ?", reference="report")
        yield systems, clock, got
    finally:
        for system in systems:
            await system.stop()


async def test_a_backfill_on_every_node_never_delivers_a_delivered_instant_again() -> None:
    async with three_nodes() as (systems, clock, got):
        await clock.advance(120)  # 09:01 and 09:02, each delivered by one node
        assert sorted(instant for _, instant, _, _ in got) == [_hm(9, 1), _hm(9, 2)]
        got.clear()
        for system in systems:
            listed = await system.backfill_schedule("report", _hm(9, 1), _hm(9, 3))
            assert listed == [_hm(9, 1), _hm(9, 2)]
        await clock.advance(0)
        assert got == []
        for system in systems:
            history = system.schedule_history("report")
            # Both claims are still kept (claim_retention): each node records the
            # backfilled instants as another's, or as its own already delivered.
            assert [h.outcome for h in history].count(Outcome.CLAIMED_ELSEWHERE) >= 2


async def test_an_instant_nobody_delivered_is_backfilled_once_cluster_wide() -> None:
    async with three_nodes() as (systems, clock, got):
        await systems[0].cluster.pause_cron("report")
        await clock.advance(40)  # 09:01 comes due while paused cluster-wide: not claimed
        await systems[0].cluster.resume_cron("report")
        assert got == []
        assert await systems[1].backfill_schedule("report", _hm(9, 0), _hm(9, 2), dry_run=True) == [
            _hm(9, 0),
            _hm(9, 1),
        ]
        await clock.advance(0)
        assert got == []  # a dry run delivers nothing
        for system in systems:
            await system.backfill_schedule("report", _hm(9, 1), _hm(9, 2))
        await clock.advance(0)
        assert [(instant, backfill) for _, instant, _, backfill in got] == [(_hm(9, 1), True)]


async def test_trigger_delivers_once_by_the_node_asked() -> None:
    async with three_nodes() as (systems, clock, got):
        await systems[1].trigger_schedule("report")
        await clock.advance(0)
        assert got == [("b", T0, True, False)]
        [entry] = systems[1].schedule_history("report")
        assert (entry.outcome, entry.detail) == (Outcome.DELIVERED, "manual")
        assert systems[0].schedule_history("report") == []
        await clock.advance(30)  # the regular 09:01 is not taken by the manual claim
        assert sorted(instant for _, instant, _, _ in got) == [T0, _hm(9, 1)]


async def test_a_manual_tick_runs_even_while_paused() -> None:
    """An operator's "run it now" is explicit: a pause (local or cluster-wide) does not
    refuse it (the manual claim has its own key)."""
    async with three_nodes() as (systems, clock, got):
        await systems[0].cluster.pause_cron("report")
        await systems[0].pause_schedule("report", note="frozen")
        await systems[0].trigger_schedule("report")
        await clock.advance(0)
        assert got == [("a", T0, True, False)]


async def test_a_backfill_of_the_last_hour_on_three_nodes_delivers_each_instant_once() -> None:
    async with three_nodes() as (systems, clock, got):
        await clock.advance(120)  # 09:01 and 09:02 delivered, one node each
        await systems[0].cluster.pause_cron("report")
        await clock.advance(3600)  # an hour paused cluster-wide: 09:03 ... 10:02 unclaimed
        await systems[0].cluster.resume_cron("report")
        assert sorted(instant for _, instant, _, _ in got) == [_hm(9, 1), _hm(9, 2)]
        got.clear()
        start, end = _hm(9, 3), _hm(10, 3)
        for system in systems:
            assert await system.backfill_schedule("report", start, end, dry_run=True) == [
                _hm(9 + (3 + m) // 60, (3 + m) % 60) for m in range(60)
            ]
        await clock.advance(0)
        assert got == []  # a dry run delivers nothing
        for system in systems:  # every node backfills the same hour, at once
            await system.backfill_schedule("report", start, end)
        await clock.advance(0)
        delivered = sorted(instant for _, instant, _, _ in got)
        assert delivered == [_hm(9 + (3 + m) // 60, (3 + m) % 60) for m in range(60)]
        assert all(backfill for _, _, _, backfill in got)
        # The nodes that asked later found each instant claimed: their history says so.
        for system in systems[1:]:
            elsewhere = [
                h.instant
                for h in system.schedule_history("report")
                if h.outcome is Outcome.CLAIMED_ELSEWHERE and start <= h.instant < end
            ]
            assert elsewhere, system.name


async def test_pause_cron_keeps_its_note_when_and_by_which_node() -> None:
    async with three_nodes() as (systems, clock, _):
        await systems[1].cluster.pause_cron("report", note="quarter close")
        await systems[2].cluster.pause_cron("report", note="ignored: already paused")
        notes = await systems[0].cluster.pause_notes()
        note = notes["report"]
        assert (note.note, note.paused_by) == ("quarter close", "b")
        assert note.paused_at == clock.wall()
        with pytest.raises(TypeError, match="note"):
            await systems[0].cluster.pause_cron("other", note=42)  # type: ignore[arg-type]
        await systems[0].cluster.resume_cron("report")
        assert await systems[2].cluster.pause_notes() == {}
