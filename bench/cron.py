# SPDX-License-Identifier: Apache-2.0
"""Cron parse and next-fire speed: tocsin vs croniter vs cronsim, side by side in one run.

Each case is a Quartz expression and its 5-field equivalent (minute resolution, which is
what croniter and cronsim read). Measured per call, best of several repeats:

* parse: building the expression object;
* next: one fire time, iterating successive fire times from 2025-01-01T00:00Z
  (tocsin: ``next_after(previous)``; croniter: ``get_next``; cronsim: ``next``).

A library that cannot express a case, or fails on it, shows "-".

Run: ``.venv/bin/python bench/cron.py`` (``pip install croniter cronsim`` first; add
``--json`` for JSON only).
"""

from __future__ import annotations

import json
import platform
import sys
import timeit
from collections.abc import Callable
from datetime import UTC, datetime

from tocsin.cron import CronExpression

try:
    from croniter import croniter
except ImportError:  # pragma: no cover
    croniter = None
try:
    from cronsim import CronSim
except ImportError:  # pragma: no cover
    CronSim = None

START = datetime(2025, 1, 1, tzinfo=UTC)
CASES = [
    ("every 5 minutes", "0 */5 * * * ?", "*/5 * * * *"),
    ("weekday office hours", "0 0/15 9-17 ? * MON-FRI", "*/15 9-17 * * 1-5"),
    ("noon daily", "0 0 12 * * ?", "0 12 * * *"),
    ("leap day (sparse)", "0 0 12 29 2 ?", "0 12 29 2 *"),
    ("last Friday", "0 0 12 ? * 6L", "0 12 * * 5L"),
    ("fifth Friday", "0 0 12 ? * 6#5", "0 12 * * 5#5"),
    ("last day of month", "0 0 0 L * ?", "0 0 L * *"),
    ("never (Feb 31)", "0 0 0 31 2 ?", "0 0 31 2 *"),
]
STEPS = 200  # successive fire times per timing run


def _best(func: Callable[[], object], number: int) -> float | None:
    try:
        func()
    except Exception:
        return None
    return min(timeit.repeat(func, number=number, repeat=5)) / number * 1e6


def _tocsin(quartz: str) -> tuple[Callable[[], object], Callable[[], int]]:
    cron = CronExpression.parse(quartz)

    def run() -> int:
        moment: datetime | None = START
        for step in range(STEPS):
            assert moment is not None
            moment = cron.next_after(moment)
            if moment is None:
                return step + 1  # the call that answered None counts too
        return STEPS

    return (lambda: CronExpression.parse(quartz)), run


def _croniter(five: str) -> tuple[Callable[[], object], Callable[[], int]]:
    def run() -> int:
        it = croniter(five, START)
        for _ in range(STEPS):
            it.get_next(datetime)
        return STEPS

    return (lambda: croniter(five, START)), run


def _cronsim(five: str) -> tuple[Callable[[], object], Callable[[], int]]:
    def run() -> int:
        it = CronSim(five, START)
        for _ in range(STEPS):
            next(it)
        return STEPS

    return (lambda: CronSim(five, START)), run


def main() -> None:
    results = []
    for name, quartz, five in CASES:
        row: dict[str, object] = {"case": name, "quartz": quartz, "five_field": five}
        makers = {"tocsin": (_tocsin, quartz)}
        if croniter is not None:
            makers["croniter"] = (_croniter, five)
        if CronSim is not None:
            makers["cronsim"] = (_cronsim, five)
        for library, (maker, text) in makers.items():
            parse, run = maker(text)
            row[f"{library}_parse_us"] = _best(parse, 2000)
            per_run = _best(run, 3)
            # Calls per run: fewer than STEPS when the fire times end (tocsin: year 2199).
            steps = run() if per_run is not None else 1
            row[f"{library}_next_us"] = None if per_run is None else per_run / steps
        results.append(row)
    meta = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "croniter": getattr(sys.modules.get("croniter"), "__version__", None),
        "steps": STEPS,
    }
    if "--json" in sys.argv:
        print(json.dumps({"meta": meta, "results": results}, indent=2))
        return
    libraries = ["tocsin", "croniter", "cronsim"]

    def cell(value: object) -> str:
        return "-" if value is None else f"{value:8.1f}"

    header = "case                   " + "".join(f"{lib + ' parse':>16}" for lib in libraries)
    header += "".join(f"{lib + ' next':>15}" for lib in libraries)
    print(f"µs per call, best of 5 (Python {meta['python']}, {meta['machine']})")
    print(header)
    for row in results:
        line = f"{row['case']:<23}"
        line += "".join(f"{cell(row.get(f'{lib}_parse_us')):>16}" for lib in libraries)
        line += "".join(f"{cell(row.get(f'{lib}_next_us')):>15}" for lib in libraries)
        print(line)
    print()
    print(json.dumps({"meta": meta, "results": results}))


if __name__ == "__main__":
    main()
