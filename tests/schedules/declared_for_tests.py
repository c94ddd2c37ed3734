# SPDX-License-Identifier: Apache-2.0
"""Schedules declared in code, for `tocsin schedules plan/apply MODULE:ATTR` tests."""

from __future__ import annotations

from tocsin.schedules import Cron, Interval, Schedule

RECORD = "tests.schedules.jobs_for_tests.record"

SCHEDULES = [
    Schedule("nightly", Cron("0 0 2 * * ?"), RECORD),
    Schedule("refresh", Interval(300), RECORD),
]
