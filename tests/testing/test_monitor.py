# SPDX-License-Identifier: Apache-2.0
"""SystemMonitor in-process (the plugin's own fixtures drive these tests)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tocsin import (
    Actor,
    ActorSystem,
    DeadLetterReason,
    Directive,
    ManualClock,
    ReceiveContext,
)
from tocsin.testing import Crash, SystemMonitor


class Fails(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "boom":
            raise ValueError("boom")


async def test_one_error_seen_as_log_record_and_event_is_one_crash_naming_the_actor(
    tocsin_clock: ManualClock,
) -> None:
    system = ActorSystem(clock=tocsin_clock)
    with SystemMonitor(system) as monitor:
        async with system:
            pid = await system.spawn(Fails, "fails")
            pid.tell("boom")
            await tocsin_clock.advance(0)
    [crash] = monitor.crashes
    assert isinstance(crash, Crash)
    assert crash.pid == pid
    assert str(crash.error) == "boom"
    assert "ValueError: boom in tocsin://tocsin/user/fails" in crash.describe()
    with pytest.raises(AssertionError, match="unexpected crash: ValueError: boom"):
        monitor.check()


async def test_debug_failure_records_are_recorded_but_hidden_below_the_users_level(
    tocsin_clock: ManualClock,
) -> None:
    logger = logging.getLogger("tocsin.actor")
    seen: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Collect()
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    try:
        system = ActorSystem(clock=tocsin_clock)
        with SystemMonitor(system) as monitor:
            assert logger.level == logging.DEBUG  # so the failure record exists at all
            async with system:
                pid = await system.spawn(Fails, supervisor=Directive.RESUME)
                pid.tell("boom")
                await tocsin_clock.advance(0)
        assert len(monitor.crashes) == 1  # RESUME publishes no event: the log carried it
        assert [r for r in seen if r.levelno < logging.WARNING] == []
        assert logger.level == logging.WARNING  # restored
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)


async def test_the_documented_sqlite_recipe_checks_after_the_stop(
    tocsin_clock: ManualClock, tmp_path: Path
) -> None:
    system = ActorSystem(clock=tocsin_clock, store=f"sqlite:///{tmp_path}/t.db", timezone="UTC")
    with SystemMonitor(system) as monitor:
        async with system:
            pid = await system.spawn(Fails)
        pid.tell("after the stop")
    with pytest.raises(AssertionError, match="unexpected dead letter: 'after the stop'"):
        monitor.check()
    assert [letter.message for letter in monitor.take_dead_letters()] == ["after the stop"]
    monitor.check()


async def test_expectations_count_and_reason_strings(
    tocsin_system: ActorSystem, tocsin_monitor: SystemMonitor
) -> None:
    tocsin_monitor.expect_dead_letters(3)  # the fixture's own monitor sees them all
    monitor = SystemMonitor(tocsin_system)
    monitor.start()
    monitor.start()  # idempotent
    pid = await tocsin_system.spawn(Fails)
    await tocsin_system.stop_actor(pid)
    pid.tell(1)
    pid.tell(2)
    monitor.expect_dead_letters(1, reason=DeadLetterReason.STOPPED)
    assert monitor.problems() == ["expected 1 dead letter(s) (reason stopped), got 2"]
    monitor.expect_dead_letters(2, reason="stopped")  # type: ignore[arg-type]
    monitor.allow_dead_letters()
    assert monitor.problems() == ["expected 1 dead letter(s) (reason stopped), got 2"]
    monitor.close()
    monitor.close()
    pid.tell(3)  # after close: not recorded by this monitor
    assert len(monitor.dead_letters) == 2


def test_bad_arguments_are_refused_at_the_call(tocsin_clock: ManualClock) -> None:
    monitor = SystemMonitor(ActorSystem(clock=tocsin_clock))
    with pytest.raises(ValueError, match="`count` must be an int >= 0 or None, got -1"):
        monitor.expect_crashes(count=-1)
    with pytest.raises(ValueError, match="got True"):
        monitor.expect_dead_letters(True)
    with pytest.raises(TypeError, match="crash types must be exception classes, got 'x'"):
        monitor.allow_crashes("x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`reason` must be one of DeadLetterReason\.STOPPED"):
        monitor.allow_dead_letters(reason="gone")  # type: ignore[arg-type]


async def test_a_level_the_user_sets_during_the_test_still_shows_the_failure_records(
    tocsin_clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    system = ActorSystem(clock=tocsin_clock)
    with SystemMonitor(system) as monitor:
        caplog.set_level(logging.DEBUG)  # on the root logger, after the monitor started
        async with system:
            pid = await system.spawn(Fails, supervisor=Directive.RESUME)
            pid.tell("boom")
            await tocsin_clock.advance(0)
    assert len(monitor.take_crashes()) == 1
    assert any(r.name == "tocsin.actor" and r.exc_info for r in caplog.records)
