# SPDX-License-Identifier: Apache-2.0
"""Cron parse and next-fire speed: tocsin vs croniter vs cronsim, side by side in one run.

Two groups of cases:

* **unix**: a five-field Unix expression, the *same text* given to all three libraries
  (tocsin reads five fields as Unix cron, as Debian's cron and cronsim do);
* **quartz**: a Quartz expression for tocsin and its five-field equivalent for croniter
  and cronsim (minute resolution, ``L`` and ``#`` as their extensions read them).

Measured per call, best of several repeats:

* parse: building the expression object;
* next: one fire time, iterating successive fire times from 2025-01-01T00:00Z
  (tocsin: ``next_after(previous)``; croniter: ``get_next``; cronsim: ``next``).

A library that cannot express a case, or fails on it, shows "-".

Run: ``.venv/bin/python bench/cron.py`` (``pip install croniter cronsim`` first; add
``--json`` for JSON only, ``--quick`` for a smoke run whose numbers mean nothing).
"""

from __future__ import annotations

import importlib.metadata
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
#: (group, case, tocsin's text, the five-field text croniter and cronsim read)
CASES = [
    ("unix", "every 5 minutes", "*/5 * * * *", "*/5 * * * *"),
    ("unix", "weekday office hours", "*/15 9-17 * * MON-FRI", "*/15 9-17 * * MON-FRI"),
    ("unix", "noon daily", "0 12 * * *", "0 12 * * *"),
    ("unix", "leap day (sparse)", "0 12 29 2 *", "0 12 29 2 *"),
    ("unix", "1st, 15th or Friday", "30 4 1,15 * 5", "30 4 1,15 * 5"),
    ("unix", "odd days that are Mondays", "0 0 */2 * 1", "0 0 */2 * 1"),
    ("unix", "Sunday as 7, in Jan-Jul", "0 6 * JAN-JUL 7", "0 6 * JAN-JUL 7"),
    ("quartz", "every 5 minutes", "0 */5 * * * ?", "*/5 * * * *"),
    ("quartz", "weekday office hours", "0 0/15 9-17 ? * MON-FRI", "*/15 9-17 * * 1-5"),
    ("quartz", "noon daily", "0 0 12 * * ?", "0 12 * * *"),
    ("quartz", "leap day (sparse)", "0 0 12 29 2 ?", "0 12 29 2 *"),
    ("quartz", "last Friday", "0 0 12 ? * 6L", "0 12 * * 5L"),
    ("quartz", "fifth Friday", "0 0 12 ? * 6#5", "0 12 * * 5#5"),
    ("quartz", "last day of month", "0 0 0 L * ?", "0 0 L * *"),
    ("quartz", "never (Feb 31)", "0 0 0 31 2 ?", "0 0 31 2 *"),
]
STEPS = 200  # successive fire times per timing run


QUICK = "--quick" in sys.argv
REPEAT = 1 if QUICK else 5


def _best(func: Callable[[], object], number: int) -> float | None:
    try:
        func()
    except Exception:
        return None
    number = 1 if QUICK else number
    return min(timeit.repeat(func, number=number, repeat=REPEAT)) / number * 1e6


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


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def main() -> None:
    results = []
    for group, name, text, five in CASES:
        row: dict[str, object] = {"group": group, "case": name, "tocsin": text, "five_field": five}
        makers = {"tocsin": (_tocsin, text)}
        if croniter is not None:
            makers["croniter"] = (_croniter, five)
        if CronSim is not None:
            makers["cronsim"] = (_cronsim, five)
        for library, (maker, library_text) in makers.items():
            parse, run = maker(library_text)
            row[f"{library}_parse_us"] = _best(parse, 2000)
            per_run = _best(run, 3)
            # Calls per run: fewer than STEPS when the fire times end (tocsin: year 2199).
            steps = run() if per_run is not None else 1
            row[f"{library}_next_us"] = None if per_run is None else per_run / steps
        results.append(row)
    meta = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "croniter": _version("croniter"),
        "cronsim": _version("cronsim"),
        "steps": STEPS,
        "repeat": REPEAT,
    }
    payload = {"meta": meta, "quick": QUICK, "failed": [], "results": results}
    if "--json" in sys.argv:
        print(json.dumps(payload, indent=2))
        return
    libraries = ["tocsin", "croniter", "cronsim"]

    def cell(value: object) -> str:
        return "-" if value is None else f"{value:8.1f}"

    print(f"µs per call, best of {REPEAT} (Python {meta['python']}, {meta['machine']})")
    for group in ("unix", "quartz"):
        print()
        what = "same five-field text for all" if group == "unix" else "Quartz text for tocsin"
        header = f"{group + ': ' + what:<40}"
        header += "".join(f"{lib + ' parse':>16}" for lib in libraries)
        header += "".join(f"{lib + ' next':>15}" for lib in libraries)
        print(header)
        for row in results:
            if row["group"] != group:
                continue
            line = f"{row['case']:<40}"
            line += "".join(f"{cell(row.get(f'{lib}_parse_us')):>16}" for lib in libraries)
            line += "".join(f"{cell(row.get(f'{lib}_next_us')):>15}" for lib in libraries)
            print(line)
    print()
    print(json.dumps(payload))


if __name__ == "__main__":
    main()
