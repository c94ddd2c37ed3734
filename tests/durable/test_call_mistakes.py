# SPDX-License-Identifier: Apache-2.0
"""A caller's ``Call`` mistake fails the ask with a typed error and leaves the callee alone
(no restart, its state kept): issue 31, item 4."""

from __future__ import annotations

from typing import Any

import pytest

from tocsin import ActorRestarted, ActorSystem, ManualClock, MethodNotFoundError
from tocsin.durable import Call, DurableActor


class Counter(DurableActor):
    kind = "CallMistakesCounter"

    async def pre_start(self, ctx: Any) -> None:
        self.count = 0
        self.starts = getattr(type(self), "starts", 0) + 1
        type(self).starts = self.starts

    async def increment(self, payload: Any) -> int:
        self.count += 1
        return self.count


@pytest.mark.parametrize(
    ("method", "error", "match"),
    [
        ("incremnt", MethodNotFoundError, r"did you mean 'increment'\?"),
        ("nothing", MethodNotFoundError, "has no callable method 'nothing'"),
        ("_private", PermissionError, "not callable by messages"),
        ("queue", PermissionError, "reserved"),
    ],
)
async def test_a_call_mistake_fails_the_ask_and_the_actor_keeps_its_state(
    method: str, error: type[Exception], match: str
) -> None:
    restarts: list[object] = []
    async with ActorSystem(clock=ManualClock()) as system:
        system.events.subscribe(restarts.append, ActorRestarted)
        pid = await system.durable(Counter, "c")
        assert await pid.ask(Call("increment"), timeout=5) == 1
        with pytest.raises(error, match=match):
            await pid.ask(Call(method), timeout=5)
        assert await pid.ask(Call("increment"), timeout=5) == 2  # same activation
    assert restarts == []


async def test_method_not_found_is_an_attribute_error_and_a_tell_is_only_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert issubclass(MethodNotFoundError, AttributeError)
    async with ActorSystem(clock=ManualClock()) as system:
        pid = await system.durable(Counter, "t")
        pid.tell(Call("incremnt"))
        assert await pid.ask(Call("increment"), timeout=5) == 1
    assert "Call sent without ask was refused" in caplog.text
