# SPDX-License-Identifier: Apache-2.0
"""An idle actor keeps no mailbox: the empty deque is dropped at the end of its turn and
made again by the next delivery (messages are neither lost nor reordered)."""

from __future__ import annotations

from tests.actor.actor_support import Echo, new_system


async def test_an_idle_actor_keeps_no_mailbox_and_the_next_message_makes_one() -> None:
    system, _ = new_system()
    async with system:
        pid = await system.spawn(Echo, "idle-mailbox")
        runtime = system._runtime
        assert runtime is not None
        cell = runtime.registry["/user/idle-mailbox"]
        assert await pid.ask("a") == "a"
        assert cell.mailbox is None
        answers = [pid.ask(str(i)) for i in range(5)]
        assert [await a for a in answers] == [str(i) for i in range(5)]
        assert cell.mailbox is None
