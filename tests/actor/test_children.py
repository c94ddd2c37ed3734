# SPDX-License-Identifier: Apache-2.0
"""Children: ctx.spawn, paths, sibling names, stop order, lookups."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.actor.actor_support import new_system

from tocsin import (
    Actor,
    ActorNameTakenError,
    ActorNotFoundError,
    ActorStopped,
    DeadActorError,
    ReceiveContext,
)


class Leaf(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond((ctx.self.path, ctx.parent.path if ctx.parent else None))


class Spawner(Actor):
    """``("spawn", name)`` spawns a Leaf child and answers its PID; ``"children"`` lists."""

    async def receive(self, ctx: ReceiveContext) -> None:
        match ctx.message:
            case ("spawn", name):
                ctx.respond(await ctx.spawn(Leaf, name))
            case ("spawn-spawner", name):
                ctx.respond(await ctx.spawn(Spawner, name))
            case "children":
                ctx.respond([pid.name for pid in ctx.children])
            case ("stop", pid):
                ctx.stop(pid)
            case "parent":
                ctx.respond(ctx.parent)


async def test_child_paths_nest_under_the_parent() -> None:
    system, _ = new_system()
    async with system:
        parent = await system.spawn(Spawner, "parent")
        child = await parent.ask(("spawn", "child"))
        assert child.path == "/user/parent/child"
        assert await child.ask("?") == ("/user/parent/child", "/user/parent")
        mid = await parent.ask(("spawn-spawner", "mid"))
        leaf = await mid.ask(("spawn", "leaf"))
        assert leaf.path == "/user/parent/mid/leaf"
        assert str(leaf) == "tocsin://test/user/parent/mid/leaf"
        assert await system.actor_of("/user/parent/mid/leaf") == leaf
        assert await parent.ask("parent") is None


async def test_children_are_listed_in_spawn_order() -> None:
    system, _ = new_system()
    async with system:
        parent = await system.spawn(Spawner, "parent")
        for name in ["b", "a", "c"]:
            await parent.ask(("spawn", name))
        assert await parent.ask("children") == ["b", "a", "c"]


async def test_sibling_names_are_unique_but_cousins_may_share_a_name() -> None:
    system, _ = new_system()
    async with system:
        p1 = await system.spawn(Spawner, "p1")
        p2 = await system.spawn(Spawner, "p2")
        await p1.ask(("spawn", "kid"))
        await p2.ask(("spawn", "kid"))
        with pytest.raises(ActorNameTakenError, match="/user/p1/kid"):
            await p1.ask(("spawn", "kid"))
        # A child may share a top-level actor's name: paths differ.
        await p1.ask(("spawn", "p2"))


async def test_stopped_child_leaves_its_parents_children() -> None:
    system, _ = new_system()
    async with system:
        parent = await system.spawn(Spawner, "parent")
        child = await parent.ask(("spawn", "kid"))
        await system.stop_actor(child)
        assert await parent.ask("children") == []
        with pytest.raises(ActorNotFoundError):
            await system.actor_of("/user/parent/kid")
        again = await parent.ask(("spawn", "kid"))
        assert again != child


async def test_parent_stop_stops_grandchildren_depth_first() -> None:
    system, _ = new_system()
    stopped: list[str] = []
    async with system:
        system.events.subscribe(lambda e: stopped.append(e.pid.path), ActorStopped)
        root = await system.spawn(Spawner, "root")
        mid = await root.ask(("spawn-spawner", "mid"))
        await mid.ask(("spawn", "leaf"))
        await system.stop_actor(root)
    assert stopped == ["/user/root/mid/leaf", "/user/root/mid", "/user/root"]


async def test_ctx_stop_of_a_child_does_not_wait_and_the_child_stops() -> None:
    system, clock = new_system()
    async with system:
        parent = await system.spawn(Spawner, "parent")
        child = await parent.ask(("spawn", "kid"))
        parent.tell(("stop", child))
        await clock.advance(0)
        with pytest.raises(DeadActorError):
            await child.ask("?")


async def test_spawning_a_child_of_a_stopping_parent_raises_dead_actor() -> None:
    gate = asyncio.Event()
    outcome: list[Any] = []

    class Late(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            await gate.wait()
            try:
                await ctx.spawn(Leaf, "late")
            except DeadActorError as exc:
                outcome.append(exc)

    system, _clock = new_system()
    async with system:
        pid = await system.spawn(Late, "late-parent")
        pid.tell("go")
        await asyncio.sleep(0)
        stopping = asyncio.create_task(system.stop_actor(pid))
        await asyncio.sleep(0)
        gate.set()
        await stopping
    assert len(outcome) == 1
    assert "stopping" in str(outcome[0])


async def test_a_child_failing_with_restart_does_not_touch_its_parent() -> None:
    class Fails(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            raise RuntimeError("child")

    class Parent(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            await ctx.spawn(Fails, "kid")

        async def receive(self, ctx: ReceiveContext) -> None:
            ctx.respond(len(ctx.children))

    system, clock = new_system()
    async with system:
        parent = await system.spawn(Parent, "parent")
        kid = await system.actor_of("/user/parent/kid")
        kid.tell("x")
        await clock.advance(0)
        assert await parent.ask("?") == 1
        assert await system.actor_of("/user/parent/kid") == kid
