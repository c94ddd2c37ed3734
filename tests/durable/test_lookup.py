# SPDX-License-Identifier: Apache-2.0
"""A durable identity is found by path even when not active (``actor_of`` and the path
hook a remote layer uses to deliver to a passivated identity)."""

from __future__ import annotations

from tocsin import ActorNotFoundError, ActorSystem, Call, ManualClock
from tocsin.durable import DurableActor


class Box(DurableActor):
    kind = "LookupBox"

    async def put(self, value: int) -> int:
        await self.storage.put("v", value)
        return value


async def test_actor_of_a_durable_path_returns_the_stable_pid_and_activates_on_demand() -> None:
    clock = ManualClock(wall=1_700_000_000)
    async with ActorSystem("look", clock=clock, store="memory://") as system:
        pid = await system.actor_of("/durable/LookupBox/b-1")  # never activated so far
        assert await pid.ask(Call("put", 3)) == 3
        assert await system.durable(Box, "b-1") == pid
        assert await system.actor_of(str(pid)) == pid
        try:
            await system.actor_of("/durable/NoSuchKind/x")
        except ActorNotFoundError:
            pass
        else:
            raise AssertionError("an unknown kind must not be found")
