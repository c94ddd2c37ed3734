# SPDX-License-Identifier: Apache-2.0
"""A durable identity on another node: reached by its path, activated on delivery,
called with ``Call`` (tocsin's own message type crosses the wire)."""

from __future__ import annotations

import pytest

from tocsin import ActorSystem, Call, DurableActor, RemoteActorError, Remoting

SECRET = b"durable-remote-secret-16"


class RemoteCounter(DurableActor):
    kind = "remote-counter"

    async def add(self, n: int) -> int:
        total: int = await self.storage.get("total", 0) + n
        await self.storage.put("total", total)
        return total


def remoting() -> Remoting:
    return Remoting(listen="tcp://127.0.0.1:0", secret=SECRET)


async def test_a_durable_identity_of_another_node_is_activated_by_a_remote_call() -> None:
    async with (
        ActorSystem("b", store="memory://", remoting=remoting()) as b,
        ActorSystem("a", remoting=remoting()) as a,
    ):
        counter = await a.actor_of(f"{b.address}/durable/remote-counter/c-1")
        assert str(counter) == f"{b.address}/durable/remote-counter/c-1"
        assert await counter.ask(Call("add", 2), timeout=10) == 2
        assert await counter.ask(Call("add", 3), timeout=10) == 5
        with pytest.raises(RemoteActorError) as info:
            await counter.ask(Call("_private"), timeout=10)
        assert info.value.type_name == "PermissionError"
