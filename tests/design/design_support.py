# SPDX-License-Identifier: Apache-2.0
"""What the DESIGN.md contract tests (tests/design/) share: a ManualClock system, a
recording actor and signature helpers."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from tocsin import (
    PID,
    Actor,
    ActorSystem,
    ManualClock,
    ReceiveContext,
)

T0 = datetime(2030, 1, 1, tzinfo=UTC)  # a Tuesday, midnight UTC
EMPTY = inspect.Parameter.empty


def params(fn: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(fn).parameters)


def shape(fn: Callable[..., Any]) -> list[tuple[str, str, Any]]:
    """(name, kind, default) of every parameter but ``self``."""
    return [
        (p.name, p.kind.name, p.default)
        for p in inspect.signature(fn).parameters.values()
        if p.name != "self"
    ]


PK, KW = "POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY"


@asynccontextmanager
async def manual(**kwargs: Any) -> AsyncIterator[tuple[ActorSystem, ManualClock]]:
    clock = ManualClock(wall=T0)
    async with ActorSystem("contract", clock=clock, **kwargs) as system:
        yield system, clock


class Recorder(Actor):
    """Records (message, sender, monotonic time) of everything it receives."""

    def __init__(self) -> None:
        self.got: list[tuple[Any, Any, float]] = []

    async def receive(self, ctx: ReceiveContext) -> None:
        self.got.append((ctx.message, ctx.sender, ctx.system.clock.monotonic()))
        if ctx.message == "fail":
            raise RuntimeError("fail")
        if isinstance(ctx.message, str) and ctx.message.startswith("q"):
            ctx.respond(ctx.message)


async def recorder(system: ActorSystem, name: str | None = None, **kw: Any) -> tuple[PID, Recorder]:
    box: list[Recorder] = []

    def factory() -> Recorder:
        box.append(Recorder())
        return box[-1]

    pid = await system.spawn(factory, name, **kw)
    return pid, box[-1]


def messages(actor: Recorder) -> list[Any]:
    return [m for m, _, _ in actor.got]
