# SPDX-License-Identifier: Apache-2.0
"""A schedule with a policy shows its pause note in ``ScheduleInfo`` too (the policy and
the note used to come from two copies of the snapshot, and the policy one had no note)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from tests.scheduling.scheduling_support import TickRecorder, running_system

from tocsin import Actor, ActorSystem, Overlap, Tick


async def test_a_paused_schedule_with_a_policy_keeps_its_note() -> None:
    log: list[tuple[object, Tick | None, float]] = []
    async with running_system(wall=datetime(2026, 1, 1, tzinfo=UTC), timezone="UTC") as (
        system,
        _,
    ):
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule("t", pid, 10, reference="r", overlap=Overlap.SKIP)
        await system.pause_schedule("r", note="maintenance")
        [info] = system.list_schedules()
        assert info.overlap == Overlap.SKIP
        assert (info.note, info.paused_by) == ("maintenance", system.name)
        assert info.paused_at is not None


async def test_a_pause_note_is_bounded_at_the_call() -> None:
    from tocsin import ManualClock

    clock = ManualClock()
    async with ActorSystem("notes", clock=clock) as system:
        pid = await system.spawn(_NoteSink)
        await system.schedule("t", pid, 1.0, reference="r")
        with pytest.raises(
            ValueError, match=r"`note` must be at most 4,096 bytes \(UTF-8\), got 4,097"
        ):
            await system.pause_schedule("r", note="x" * 4097)
        [info] = system.list_schedules()
        assert not info.paused  # refused: nothing changed
        await system.pause_schedule("r", note="é" * 2048)  # 4,096 bytes: accepted
        [info] = system.list_schedules()
        assert info.paused
        assert info.note == "é" * 2048


class _NoteSink(Actor):
    async def receive(self, ctx: Any) -> None:
        pass
