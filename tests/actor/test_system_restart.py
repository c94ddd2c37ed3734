# SPDX-License-Identifier: Apache-2.0
"""A stopped system can be started again; it comes back empty (docs/getting-started.md,
"Stopping and starting again"). These tests pin the documented behaviour."""

from __future__ import annotations

from pathlib import Path

import pytest

from tocsin import (
    Actor,
    ActorSystem,
    DeadActorError,
    DeadLetter,
    DurableActor,
    ManualClock,
    ReceiveContext,
)
from tocsin.stores import Store
from tocsin.testing import MemoryStore


class Echo(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond(ctx.message)


class Note(DurableActor):
    kind = "restart-note"

    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond(await self.storage.get("note", None))
        await self.storage.put("note", ctx.message)


async def test_restarted_system_has_no_actors_or_schedules_and_old_pids_stay_dead(
    tocsin_clock: ManualClock,
) -> None:
    system = ActorSystem(clock=tocsin_clock)
    letters: list[DeadLetter] = []
    system.events.subscribe(letters.append, DeadLetter)
    async with system:
        old = await system.spawn(Echo, "echo")
        await system.schedule("tick", old, 5, reference="tick")
    async with system:
        assert system.running
        assert system.list_schedules() == []
        with pytest.raises(DeadActorError):
            await old.ask("hi")
        old.tell("late")
        assert [letter.message for letter in letters] == ["hi", "late"]  # subscription kept
        new = await system.spawn(Echo, "echo")  # the name is free again
        assert new != old
        assert await new.ask("hi") == "hi"
        await tocsin_clock.advance(10)  # the old schedule does not come back
    assert not system.running


@pytest.mark.parametrize("kind", ["sqlite", "memory-object", "memory-url", "default"])
async def test_durable_state_survives_a_restart_only_when_the_store_does(
    tocsin_clock: ManualClock, tmp_path: Path, kind: str
) -> None:
    stores: dict[str, str | Store | None] = {
        "sqlite": f"sqlite:///{tmp_path}/notes.db",
        "memory-object": MemoryStore(),
        "memory-url": "memory://",
        "default": None,
    }
    store = stores[kind]
    system = ActorSystem(clock=tocsin_clock, store=store)
    async with system:
        await (await system.durable(Note, "n")).ask("kept?")
    async with system:
        before = await (await system.durable(Note, "n")).ask("again")
    assert before == ("kept?" if kind in ("sqlite", "memory-object") else None)
