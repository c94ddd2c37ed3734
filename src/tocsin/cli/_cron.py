# SPDX-License-Identifier: Apache-2.0
"""``tocsin cron``: try a cron expression from the shell.

``tocsin cron next EXPR [--tz ZONE] [--count N] [--after ISO]`` prints the next fire
times (local and UTC); ``tocsin cron explain EXPR`` prints the description and a
field-by-field breakdown. An invalid expression prints the error with a caret under the
offending field, on stderr, and exits 2 (argparse's usage-error code).
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tocsin.clock import SystemClock
from tocsin.cron import CronExpression, InvalidCronExpressionError
from tocsin.cron._describe import describe_fields
from tocsin.cron._fields import FIELD_NAMES, DayKind
from tocsin.cron._parser import MACROS

__all__ = ["register"]

#: Exit code for bad input, as argparse uses for usage errors.
EXIT_USAGE = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``cron`` command (subcommands ``next`` and ``explain``) to a CLI parser."""
    cron = subparsers.add_parser(
        "cron",
        help="parse Quartz cron expressions and list their fire times",
        description="Parse Quartz cron expressions and list their fire times.",
    )
    commands = cron.add_subparsers(dest="cron_command", metavar="{next,explain}")
    commands.required = True

    upcoming = commands.add_parser("next", help="print the next fire times")
    upcoming.add_argument("expression", help='e.g. "0 0 12 ? * 6L" (quote it)')
    upcoming.add_argument(
        "--tz", default=None, help="IANA time zone to evaluate in (default: the system zone)"
    )
    upcoming.add_argument("--count", type=int, default=5, help="how many (default 5)")
    upcoming.add_argument(
        "--after",
        default=None,
        help="ISO 8601 start, e.g. 2025-01-01T00:00 (default: now; naive means --tz)",
    )
    upcoming.set_defaults(func=run_next)

    explain = commands.add_parser("explain", help="describe an expression field by field")
    explain.add_argument("expression", help='e.g. "0 0 12 ? * 6L" (quote it)')
    explain.set_defaults(func=run_explain)


def _local_zone() -> tzinfo:
    """The system zone as an IANA zone when it can be found (DST-aware), else UTC."""
    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    localtime = Path("/etc/localtime")
    try:
        target = str(localtime.resolve())
        if "/zoneinfo/" in target:
            return ZoneInfo(target.split("/zoneinfo/", 1)[1])
        with localtime.open("rb") as file:
            return ZoneInfo.from_file(file, key="localtime")
    except (OSError, ValueError, ZoneInfoNotFoundError):
        return UTC


def _report(error: InvalidCronExpressionError) -> int:
    print(f"tocsin: invalid cron expression: {error}", file=sys.stderr)
    if error.expression and error.position is not None:
        shown = error.expression.replace("\t", " ")
        print(f"  {shown}", file=sys.stderr)
        print("  " + " " * error.position + "^", file=sys.stderr)
    return EXIT_USAGE


def run_next(args: argparse.Namespace) -> int:
    """Print the next ``--count`` fire times after ``--after`` (default: now)."""
    if args.count < 1:
        print(f"tocsin: --count must be at least 1, got {args.count}", file=sys.stderr)
        return EXIT_USAGE
    try:
        cron = CronExpression.parse(args.expression, args.tz)
    except InvalidCronExpressionError as error:
        return _report(error)
    zone = cron.timezone if cron.timezone is not None else _local_zone()
    if args.after is None:
        after = datetime.fromtimestamp(SystemClock().wall(), zone)
    else:
        try:
            after = datetime.fromisoformat(args.after)
        except ValueError:
            print(
                f"tocsin: --after must be an ISO 8601 datetime, got {args.after!r}", file=sys.stderr
            )
            return EXIT_USAGE
        if after.tzinfo is None:
            after = after.replace(tzinfo=zone)
    zone_name = str(getattr(zone, "key", zone))
    print(f"{cron.expression}: {cron.describe()}")
    print(f"{'#':>3}  {zone_name:<27}  UTC")
    moment: datetime | None = after.astimezone(zone)
    for number in range(1, args.count + 1):
        assert moment is not None
        moment = cron.next_after(moment)
        if moment is None:
            print("     (no further fire times)")
            break
        local = moment.isoformat(sep=" ")
        utc = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        print(f"{number:>3}  {local:<27}  {utc}")
    return 0


def run_explain(args: argparse.Namespace) -> int:
    """Print the description and what each field means."""
    try:
        cron = CronExpression.parse(args.expression)
    except InvalidCronExpressionError as error:
        return _report(error)
    text = cron.expression.strip(" \t")
    tokens = MACROS.get(text.lower(), text).split()
    print(cron.expression)
    if text.lower() in MACROS:
        print(f"  = {MACROS[text.lower()]}")
    print(cron.describe())
    print()
    meanings = dict(describe_fields(cron.fields))
    days_from_dow = cron.fields.days.kind in (
        DayKind.DAYS_OF_WEEK,
        DayKind.LAST_OF_WEEKDAY,
        DayKind.NTH_OF_WEEKDAY,
    )
    for index, name in enumerate(FIELD_NAMES):
        token = tokens[index] if index < len(tokens) else "*"
        if name == "day-of-month":
            meaning = "(not used)" if days_from_dow else meanings["days"]
        elif name == "day-of-week":
            meaning = meanings["days"] if days_from_dow else "(not used)"
        else:
            meaning = meanings[name]
        print(f"  {name:<13} {token:<12} {meaning}")
    return 0
