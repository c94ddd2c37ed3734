# SPDX-License-Identifier: Apache-2.0
"""Bad input to durable actors, refused at the call, the same on every store (issue 10,
items 7 to 13): tiny intervals, strings the stores cannot hold, sizes, ``max_retries``,
two classes for one kind, failures logged with their traceback."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from tests.durable.durable_support import Backend

from tocsin import ActorSystem, InvalidIntervalError, ManualClock
from tocsin.durable import Call, DurableActor, TaskRecord
from tocsin.durable._failure import LAST_ERROR_LIMIT, describe_failure

T0 = 1_700_000_000.0
RUNS: list[str] = []

LONE = "\ud800"


class Limits(DurableActor):
    kind = "LimitsActor"

    async def ship(self, payload: Any) -> None:
        RUNS.append("ship")

    async def fail(self, payload: Any) -> None:
        _deep(3)

    async def attempt(self, payload: tuple[str, list[Any], dict[str, Any]]) -> str:
        name, args, kwargs = payload
        target = self.storage if name.startswith("storage.") else self
        try:
            await getattr(target, name.removeprefix("storage."))(*args, **kwargs)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return "ok"

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()


class Small(DurableActor):
    kind = "LimitsSmall"
    max_value_bytes = 100

    async def attempt(self, payload: tuple[str, list[Any]]) -> str:
        name, args = payload
        target = self.storage if name == "put" else self
        try:
            await getattr(target, name)(*args)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return "ok"

    async def ship(self, payload: Any) -> None:
        pass


def _deep(n: int) -> None:
    if n == 0:
        raise ValueError("bad sku 'x-1'")
    _deep(n - 1)


@asynccontextmanager
async def running(backend: Backend) -> AsyncIterator[tuple[ActorSystem, ManualClock]]:
    clock = ManualClock(wall=T0)
    async with ActorSystem("limits", clock=clock, store=backend.make()) as system:
        yield system, clock


# -- item 7: durations below 1 ms ---------------------------------------------------------


@pytest.mark.parametrize("call", ["every", "schedule"])
@pytest.mark.parametrize("value", [1e-7, 5e-324, 0.0009])
async def test_durable_every_and_schedule_below_one_millisecond_are_refused(
    backend: Backend, call: str, value: float
) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Limits, "l")
        got = await pid.ask(Call("attempt", (call, [value, "ship"], {})))
        assert got.startswith("InvalidIntervalError:")
        assert "at least 0.001 seconds (1 ms)" in got
        assert await pid.ask(Call("tasks")) == []
    assert issubclass(InvalidIntervalError, ValueError)


# -- item 9: strings the stores cannot hold ------------------------------------------------


@pytest.mark.parametrize(
    "payload", [LONE, {"k": LONE}, [1, "a" + LONE], {LONE: 1}], ids=["str", "value", "list", "key"]
)
async def test_lone_surrogate_in_a_payload_or_value_is_a_codec_error(
    backend: Backend, payload: Any
) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Limits, "l")
        got = await pid.ask(Call("attempt", ("queue", ["ship", payload], {})))
        assert got.startswith("CodecError: payload")
        assert "lone surrogate" in got
        got = await pid.ask(Call("attempt", ("storage.put", ["k", payload], {})))
        assert got.startswith("CodecError: storage['k']")
        assert await pid.ask(Call("tasks")) == []


@pytest.mark.parametrize("bad", ["a\x00b", "x" + LONE])
async def test_nul_or_lone_surrogate_in_ids_and_keys_is_a_value_error(
    backend: Backend, bad: str
) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Limits, "l")
        got = await pid.ask(Call("attempt", ("queue", ["ship"], {"id": bad})))
        assert got.startswith("ValueError: `id`")
        for call in ("storage.put", "storage.get", "storage.delete"):
            args = ["k" + bad, 1] if call == "storage.put" else ["k" + bad]
            got = await pid.ask(Call("attempt", (call, args, {})))
            assert got.startswith("ValueError: "), (call, got)
        assert await pid.ask(Call("tasks")) == []


@pytest.mark.parametrize("bad", ["a\x00b", "x" + LONE])
async def test_nul_or_lone_surrogate_in_an_identity_is_a_value_error(
    backend: Backend, bad: str
) -> None:
    async with running(backend) as (system, _clock):
        with pytest.raises(ValueError, match="`identity`") as info:
            await system.durable(Limits, bad)
        assert not isinstance(info.value, UnicodeError)


def test_a_kind_the_stores_cannot_hold_is_a_type_error_at_class_definition() -> None:
    with pytest.raises(TypeError, match="NUL"):

        class Bad(DurableActor):
            kind = "Bad\x00Kind"


# -- item 10: sizes -----------------------------------------------------------------------


async def test_payloads_and_values_over_the_cap_are_codec_errors(backend: Backend) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Small, "s")
        got = await pid.ask(Call("attempt", ("queue", ["ship", b"x" * 200])))
        assert got.startswith("CodecError: payload is 20")
        assert "the limit is 100 bytes" in got
        got = await pid.ask(Call("attempt", ("put", ["k", "y" * 200])))
        assert got.startswith("CodecError: storage['k'] is 20")
        assert await pid.ask(Call("attempt", ("queue", ["ship", b"x" * 50]))) == "ok"


async def test_the_default_cap_is_one_mebibyte() -> None:
    assert DurableActor.max_value_bytes == 1024 * 1024
    async with ActorSystem("limits", clock=ManualClock(wall=T0)) as system:
        pid = await system.durable(Limits, "l")
        just = b"x" * (1024 * 1024 - 16)
        assert await pid.ask(Call("attempt", ("queue", ["ship", just], {}))) == "ok"
        got = await pid.ask(Call("attempt", ("queue", ["ship", b"x" * (1024 * 1024 + 1)], {})))
        assert got.startswith("CodecError:")


@pytest.mark.parametrize("bad", [10**30, 2**31, -1])
async def test_max_retries_out_of_range_names_max_retries(backend: Backend, bad: int) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Limits, "l")
        got = await pid.ask(Call("attempt", ("queue", ["ship"], {"max_retries": bad})))
        assert got.startswith("ValueError: `max_retries` must be an int from 0 to")
        assert "StoreError" not in got
        assert await pid.ask(Call("attempt", ("queue", ["ship"], {"max_retries": 2**31 - 1})))


# -- item 11: one class per kind ----------------------------------------------------------


def test_a_second_class_claiming_a_kind_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"'LimitsActor'.*already used by") as info:

        class Impostor(DurableActor):
            kind = "LimitsActor"

    assert "Limits" in str(info.value)
    from tocsin.durable._kinds import registered_kind

    assert registered_kind("LimitsActor") is Limits


def test_redefining_the_same_class_is_fine() -> None:
    def define() -> type[DurableActor]:
        class Reloaded(DurableActor):
            kind = "LimitsReloaded"

        return Reloaded

    first, second = define(), define()
    from tocsin.durable._kinds import registered_kind

    assert registered_kind("LimitsReloaded") is second
    assert first is not second


# -- item 13: failures are visible --------------------------------------------------------


async def test_a_failing_task_is_logged_with_its_traceback_and_last_error_keeps_frames(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Limits, "l")
        with caplog.at_level(logging.WARNING, logger="tocsin.durable"):
            await pid.ask(Call("attempt", ("queue", ["fail"], {"max_retries": 1})))
            await clock.advance(60)
        [record] = await pid.ask(Call("tasks"))
    assert record.state == "parked"
    error = record.last_error or ""
    assert error.startswith("ValueError: bad sku 'x-1'\nTraceback (most recent call last")
    assert "in _deep" in error
    assert "in fail" in error
    logged = [r for r in caplog.records if "failed (attempt" in r.getMessage()]
    assert [r.levelname for r in logged] == ["WARNING", "ERROR"]  # retried, then parked
    assert all(r.exc_info is not None and r.exc_info[1] is not None for r in logged)


def test_last_error_is_bounded_and_keeps_the_innermost_frames() -> None:
    # Two functions calling each other: tracebacks collapse runs of identical frames.
    def ping(n: int) -> None:
        if n == 0:
            raise RuntimeError("x" * 5000)
        pong(n - 1)

    def pong(n: int) -> None:
        ping(n)

    try:
        ping(200)
    except RuntimeError as exc:
        text = describe_failure(exc)
    assert len(text) <= LAST_ERROR_LIMIT
    headline, title, *_ = text.split("\n")
    assert headline.startswith("RuntimeError: xxx")
    assert headline.endswith("…")
    assert "innermost" in title
    assert text.rstrip().endswith('raise RuntimeError("x" * 5000)')
