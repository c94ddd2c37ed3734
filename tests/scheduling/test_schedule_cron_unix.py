# SPDX-License-Identifier: Apache-2.0
"""`schedule_cron` with a five-field Unix expression: same path, same zone and DST rules."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from tests.scheduling.scheduling_support import Log, recorder, running_system

from tocsin.cron import CronExpression


async def test_a_five_field_expression_delivers_at_debians_fire_times() -> None:
    # Wednesday 2025-01-01 00:00 UTC; the 1st, the 15th and every Friday at 04:30.
    async with running_system(wall=datetime(2025, 1, 1, tzinfo=UTC)) as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, "30 4 1,15 * FRI", timezone="UTC")
        await clock.advance(16 * 86400)
        fired = [datetime.fromtimestamp(w, UTC).strftime("%a %d %H:%M") for w in log.walls]
        assert fired == ["Wed 01 04:30", "Fri 03 04:30", "Fri 10 04:30", "Wed 15 04:30"]
        [info] = system.list_schedules()
        assert (info.cron, info.timezone) == ("30 4 1,15 * FRI", "UTC")


async def test_a_five_field_expression_skips_the_dst_gap_as_quartz_does() -> None:
    paris = ZoneInfo("Europe/Paris")
    start = datetime(2025, 3, 29, 12, tzinfo=paris)
    async with running_system(wall=start, timezone="Europe/Paris") as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, "30 2 * * *")
        await clock.advance(3 * 86400)
        fired = [datetime.fromtimestamp(w, paris) for w in log.walls]
        # 2025-03-30 02:30 does not exist in Paris: skipped, not shifted.
        assert [f.strftime("%m-%d %H:%M") for f in fired] == ["03-31 02:30", "04-01 02:30"]
        quartz = CronExpression.parse("0 30 2 * * ?", "Europe/Paris")
        assert fired == list(quartz.iter_after(start))[:2]
