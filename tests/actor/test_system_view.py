# SPDX-License-Identifier: Apache-2.0
"""``ctx.system`` is the facade, typed by the kernel's SystemView Protocol it meets."""

from __future__ import annotations

from typing import Any

from tocsin import Actor, ActorSystem, ReceiveContext
from tocsin.actor import SystemView


class _Reports(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond(ctx.system)


async def test_ctx_system_is_the_facade_and_meets_the_system_view() -> None:
    async with ActorSystem("view") as system:
        pid = await system.spawn(_Reports)
        seen: Any = await pid.ask("who")
        assert seen is system
        # That the facade meets the Protocol is checked statically (system.py, mypy).


def test_the_view_names_the_verbs_of_one_vocabulary() -> None:
    verbs = {
        "cancel_schedule",
        "pause_schedule",
        "resume_schedule",
        "trigger_schedule",
        "backfill_schedule",
        "schedule_history",
    }
    assert verbs <= set(dir(SystemView))
    assert verbs <= set(dir(ActorSystem))
