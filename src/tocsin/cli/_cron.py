# SPDX-License-Identifier: Apache-2.0
"""``tocsin cron``: try a cron expression (Quartz or Unix) from the shell.

``tocsin cron next EXPR [--tz ZONE] [--count N] [--after ISO] [--dst SPEC] [--json]``
prints the next fire times (local and UTC); ``tocsin cron explain EXPR [--dst SPEC]
[--json]`` prints the description and a field-by-field breakdown. ``--dst`` takes a
:class:`~tocsin.DSTPolicy` spelling, ``gap=next,fold=first`` or ``never_skip``
(default: Quartz's rule): ``next`` applies it, ``explain`` says what it does. ``--json``
prints one JSON document instead (field names in ``docs/cli.md``, stable; a ``dst``
field only with ``--dst``). Bad input (an invalid expression, an unknown ``--tz``, a bad
``--after`` or ``--count``) prints one line on stderr (an invalid expression adds the text
with a caret under the offending field), nothing on stdout, and exits 2 (argparse's
usage-error code).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime

from tocsin.clock import SystemClock
from tocsin.cron import CronExpression, DSTPolicy, InvalidCronExpressionError
from tocsin.cron._spi import FIELD_NAMES, MACROS, DayKind, describe_fields, local_zone
from tocsin.errors import InvalidTimezoneError

__all__ = ["register"]

#: Exit code for bad input, as argparse uses for usage errors.
EXIT_USAGE = 2


_DST_HELP = (
    "daylight-saving policy: gap=quartz|next|shift|skip,fold=quartz|first|last|both "
    "(either part optional) or never_skip (default: Quartz's rule)"
)

#: What each policy value does, as ``explain`` says it.
_GAP_WORDS = {
    "quartz": "is not fired (Quartz: the search goes on from that time plus the gap)",
    "next": "fires at the first instant after the gap",
    "shift": "fires at that time plus the gap's length",
    "skip": "is not fired that day",
}
_FOLD_WORDS = {
    "quartz": "fires once, at its later (standard-time) instant, as Quartz does",
    "first": "fires once, at its first (daylight-time) instant",
    "last": "fires once, at its later (standard-time) instant",
    "both": "fires at both instants",
}


def _dst(spec: str | None) -> DSTPolicy | None:
    """The ``--dst`` policy; raises ValueError with a one-line message."""
    return None if spec is None else DSTPolicy.parse(spec)


def dst_effect(policy: DSTPolicy) -> list[str]:
    """What a policy does, in two sentences (gap, fold)."""
    return [
        f"a wall time that does not exist that day {_GAP_WORDS[policy.gap]} (gap={policy.gap})",
        f"a wall time that occurs twice {_FOLD_WORDS[policy.fold]} (fold={policy.fold})",
    ]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``cron`` command (subcommands ``next`` and ``explain``) to a CLI parser."""
    cron = subparsers.add_parser(
        "cron",
        help="parse cron expressions (Quartz or Unix) and list their fire times",
        description=(
            "Parse cron expressions and list their fire times. Five fields are Unix cron "
            "(minute hour day-of-month month day-of-week); six or seven are Quartz "
            "(seconds first, optional year)."
        ),
    )
    commands = cron.add_subparsers(dest="cron_command", metavar="{next,explain}")
    commands.required = True

    upcoming = commands.add_parser("next", help="print the next fire times")
    upcoming.add_argument("expression", help='e.g. "0 0 12 ? * 6L" or "0 9 * * 1-5" (quote it)')
    upcoming.add_argument(
        "--tz", default=None, help="IANA time zone to evaluate in (default: the system zone)"
    )
    upcoming.add_argument("--count", type=int, default=5, help="how many (default 5)")
    upcoming.add_argument(
        "--after",
        default=None,
        help="ISO 8601 start, e.g. 2025-01-01T00:00 (default: now; naive means --tz)",
    )
    upcoming.add_argument("--dst", default=None, help=_DST_HELP)
    upcoming.add_argument("--json", action="store_true", help="print one JSON document")
    upcoming.set_defaults(func=run_next)

    explain = commands.add_parser("explain", help="describe an expression field by field")
    explain.add_argument("expression", help='e.g. "0 0 12 ? * 6L" or "0 9 * * 1-5" (quote it)')
    explain.add_argument("--dst", default=None, help=_DST_HELP)
    explain.add_argument("--json", action="store_true", help="print one JSON document")
    explain.set_defaults(func=run_explain)


def _report(error: InvalidCronExpressionError) -> int:
    print(f"tocsin: invalid cron expression: {error}", file=sys.stderr)
    if error.expression and error.position is not None:
        shown = error.expression.replace("\t", " ")
        print(f"  {shown}", file=sys.stderr)
        print("  " + " " * error.position + "^", file=sys.stderr)
    return EXIT_USAGE


def _usage(message: str) -> int:
    print(f"tocsin: {message}", file=sys.stderr)
    return EXIT_USAGE


def run_next(args: argparse.Namespace) -> int:
    """Print the next ``--count`` fire times after ``--after`` (default: now)."""
    if args.count < 1:
        return _usage(f"--count must be at least 1, got {args.count}")
    try:
        dst = _dst(args.dst)
    except ValueError as error:
        return _usage(f"--dst: {error}")
    try:
        cron = CronExpression.parse(args.expression, args.tz)
    except InvalidCronExpressionError as error:
        return _report(error)
    except InvalidTimezoneError:
        return _usage(
            f"--tz must be an IANA time zone such as Europe/Paris or UTC, got {args.tz!r}"
        )
    # The zone a schedule without `timezone=` fires in (the one local-zone lookup).
    zone = cron.timezone if cron.timezone is not None else local_zone()
    if args.after is None:
        after = datetime.fromtimestamp(SystemClock().wall(), zone)
    else:
        try:
            after = datetime.fromisoformat(args.after)
        except ValueError:
            return _usage(f"--after must be an ISO 8601 datetime, got {args.after!r}")
        if after.tzinfo is None:
            after = after.replace(tzinfo=zone)
        try:
            after = after.astimezone(zone)
        except (OverflowError, ValueError):  # e.g. year 1 or 9999 shifted out of range
            return _usage(f"--after is out of range in {zone}, got {args.after!r}")
    zone_name = str(getattr(zone, "key", zone))
    fires: list[datetime] = []
    moment: datetime | None = after
    while len(fires) < args.count:
        assert moment is not None
        moment = cron.next_after(moment, dst=dst)
        if moment is None:
            break
        fires.append(moment)
    policy = dst if dst is not None else DSTPolicy()
    if args.json:
        document = {
            "expression": cron.expression,
            "dialect": cron.dialect,
            "description": cron.describe(),
            "timezone": zone_name,
            "after": after.isoformat(),
            **({} if dst is None else {"dst": policy.to_wire()}),
            "fire_times": [
                {
                    "local": fire.isoformat(),
                    "utc": fire.astimezone(UTC).isoformat().replace("+00:00", "Z"),
                    "epoch": int(fire.timestamp()),
                }
                for fire in fires
            ],
            "exhausted": len(fires) < args.count,
        }
        print(json.dumps(document, indent=2))
        return 0
    print(f"{cron.expression}: {cron.describe()}")
    if dst is not None:
        print(f"DST: {policy}")
    print(f"{'#':>3}  {zone_name:<27}  UTC")
    for number, fire in enumerate(fires, start=1):
        local = fire.isoformat(sep=" ")
        utc = fire.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        print(f"{number:>3}  {local:<27}  {utc}")
    if len(fires) < args.count:
        print("     (no further fire times)")
    return 0


#: The fields of each dialect, as ``explain`` lists them (indexes into FIELD_NAMES).
_DIALECT_FIELDS = {"quartz": range(7), "unix": range(1, 6)}


def run_explain(args: argparse.Namespace) -> int:
    """Print the description and what each field means (and the DST policy's effect)."""
    try:
        dst = _dst(args.dst)
    except ValueError as error:
        return _usage(f"--dst: {error}")
    policy = dst if dst is not None else DSTPolicy()
    try:
        cron = CronExpression.parse(args.expression)
    except InvalidCronExpressionError as error:
        return _report(error)
    text = cron.expression.strip(" \t")
    expands_to = MACROS.get(text.lower())
    tokens = (expands_to or text).split()
    dialect = "quartz" if expands_to is not None else cron.dialect
    meanings = dict(describe_fields(cron.fields))
    days_from_dow = cron.fields.days.kind in (
        DayKind.DAYS_OF_WEEK,
        DayKind.LAST_OF_WEEKDAY,
        DayKind.NTH_OF_WEEKDAY,
    )
    both_days = cron.fields.days.kind in (
        DayKind.DAYS_OF_MONTH_OR_WEEK,
        DayKind.DAYS_OF_MONTH_AND_WEEK,
    )
    fields = []
    for position, index in enumerate(_DIALECT_FIELDS[dialect]):
        name = FIELD_NAMES[index]
        token = tokens[position] if position < len(tokens) else "*"
        if name == "day-of-month":
            used = both_days or not days_from_dow
            meaning = meanings["days"] if used else "(not used)"
        elif name == "day-of-week":
            used = both_days or days_from_dow
            meaning = meanings["days"] if used else "(not used)"
        else:
            meaning = meanings[name]
        fields.append({"name": name, "text": token, "meaning": meaning})
    if args.json:
        document: dict[str, object] = {
            "expression": cron.expression,
            "dialect": cron.dialect,
            "expands_to": expands_to,
            "description": cron.describe(),
            "fields": fields,
        }
        if dst is not None:
            document["dst"] = {**policy.to_wire(), "effect": dst_effect(policy)}
        print(json.dumps(document, indent=2))
        return 0
    print(cron.expression)
    if expands_to is not None:
        print(f"  = {expands_to}")
    print(cron.describe())
    print()
    for field in fields:
        print(f"  {field['name']:<13} {field['text']:<12} {field['meaning']}")
    if dst is not None:
        print()
        print(f"Daylight saving ({policy}):")
        for line in dst_effect(policy):
            print(f"  {line}")
    return 0
