# SPDX-License-Identifier: Apache-2.0
""":class:`Calendar`: instants on which a schedule's tick is not delivered (Quartz Calendars).

Pure: no clock, no asyncio. A calendar is a value made of rules, combined with ``|``
(a union: an instant is excluded when any rule excludes it):

* ``Calendar.dates("2026-12-25", date(2027, 1, 1))``: whole days, in the zone given to
  :meth:`Calendar.excludes` (the schedule's zone);
* ``Calendar.weekly("SAT", "SUN")``: days of the week (``SUN`` … ``SAT`` or full names,
  any case);
* ``Calendar.daily("22:00", "06:00")``: a window of wall-clock time every day, from the
  start (included) to the end (excluded); an end earlier than the start wraps midnight;
* ``Calendar.cron("* * 0-6 ? * *")``: the instants (to the second) a cron expression
  matches, evaluated in the schedule's zone, as Quartz's ``CronCalendar``;
* ``Calendar.holidays("FR", subdiv=None)``: public holidays from the optional
  ``holidays`` package (``pip install 'tocsin[holidays]'``), imported only when used.

API for the layers that store and compare calendars (durable tasks, cluster cron):

* :meth:`Calendar.to_wire` gives a codec-safe value (``dict``/``list``/``str``/``int``/
  ``None`` only, canonical: equal calendars give equal values, whatever the order the
  rules were written in) and :meth:`Calendar.from_wire` reads it back (``ValueError`` on
  anything malformed; it runs nothing and imports nothing). The durable layer stores it
  as is, or registers an ``Extension(code, Calendar, Calendar.to_wire,
  Calendar.from_wire)`` with ``tocsin._codec.Codec``.
* ``==`` and ``hash`` compare the rules; :attr:`Calendar.fingerprint` is a BLAKE2b digest
  of the canonical wire form, the same in every process (Python's ``hash`` of strings is
  not), for nodes that must check they hold the same calendar.
* :meth:`Calendar.excludes` answers for one instant and one zone, in microseconds.

Decision: a holidays rule is the country and subdivision, not a list of dates, so two
nodes agree on it as a value; the dates come from the ``holidays`` package installed on
the node that evaluates it (keep its version the same on every node). A node without the
package raises ``ImportError`` (naming the extra) at :meth:`Calendar.excludes`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, tzinfo
from functools import lru_cache
from typing import Any, Final, final

from tocsin.cron._expression import CronExpression, _zone

__all__ = ["Calendar"]

_WEEKDAYS: Final = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")  # date.weekday() order
_FULL_WEEKDAYS: Final = (
    "MONDAY",
    "TUESDAY",
    "WEDNESDAY",
    "THURSDAY",
    "FRIDAY",
    "SATURDAY",
    "SUNDAY",
)
_DATE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME: Final = re.compile(r"(\d{2}):(\d{2})(?::(\d{2}))?")
_HINT: Final = "Calendar.holidays needs the holidays package: pip install 'tocsin[holidays]'"
_WIRE_VERSION: Final = 1


def _holidays_module() -> Any:
    try:
        return importlib.import_module("holidays")
    except ImportError as exc:
        raise ImportError(_HINT) from exc


@lru_cache(maxsize=256)
def _holiday_dates(country: str, subdiv: str | None, year: int) -> frozenset[date]:
    """The public holidays of one country (and subdivision) in one year, cached."""
    module = _holidays_module()
    return frozenset(module.country_holidays(country, subdiv=subdiv, years=year))


@lru_cache(maxsize=256)
def _parsed(text: str) -> CronExpression:
    """A calendar's cron expression, parsed once (raises InvalidCronExpressionError)."""
    return CronExpression.parse(text)


def _day(value: object) -> date:
    if isinstance(value, datetime):
        raise TypeError(
            f"Calendar.dates takes dates, not datetimes (a whole day is excluded), got {value!r}"
        )
    if isinstance(value, date):
        return value
    if isinstance(value, str) and _DATE.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise ValueError(f"Calendar.dates takes dates or 'YYYY-MM-DD' strings, got {value!r}")


def _seconds_of_day(value: object, name: str) -> int:
    if isinstance(value, time):
        if value.tzinfo is not None:
            raise ValueError(f"Calendar.daily {name} is a wall time, without tzinfo, got {value!r}")
        return value.hour * 3600 + value.minute * 60 + value.second
    if isinstance(value, str):
        match = _TIME.fullmatch(value)
        if match:
            hour, minute, second = int(match[1]), int(match[2]), int(match[3] or 0)
            if hour < 24 and minute < 60 and second < 60:
                return hour * 3600 + minute * 60 + second
    raise ValueError(
        f"Calendar.daily {name} must be 'HH:MM' or 'HH:MM:SS' (00:00 to 23:59:59) or a "
        f"datetime.time, got {value!r}"
    )


def _clock(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


@final
@dataclass(frozen=True, slots=True)
class _Rules:
    dates: frozenset[date] = frozenset()
    weekdays: frozenset[int] = frozenset()  # date.weekday(): Monday 0 … Sunday 6
    windows: frozenset[tuple[int, int]] = frozenset()  # seconds of day, [start, end)
    crons: frozenset[str] = frozenset()  # expression texts, validated
    holidays: frozenset[tuple[str, str | None]] = frozenset()

    def __or__(self, other: _Rules) -> _Rules:
        return _Rules(
            self.dates | other.dates,
            self.weekdays | other.weekdays,
            self.windows | other.windows,
            self.crons | other.crons,
            self.holidays | other.holidays,
        )


@final
class Calendar:
    """A set of excluded instants: whole dates, weekdays, daily windows, cron matches and
    public holidays, combined with ``|``.

    Immutable and hashable; two calendars are equal when they have the same rules
    (``Calendar.dates("2026-12-25") | Calendar.dates("2027-01-01")`` equals
    ``Calendar.dates("2027-01-01", "2026-12-25")``). Build one with the class methods;
    see the module docs for the storage API.
    """

    __slots__ = ("_rules",)

    _rules: _Rules

    def __init__(self, rules: _Rules) -> None:
        """Internal: use the class methods (:meth:`dates`, :meth:`weekly`, …)."""
        object.__setattr__(self, "_rules", rules)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Calendar is immutable; cannot set {name!r}")

    @classmethod
    def dates(cls, *days: date | str) -> Calendar:
        """Exclude whole days (``date`` or ``"YYYY-MM-DD"``) in the schedule's zone.

        Raises:
            ValueError: no day, or a string that is not a ``YYYY-MM-DD`` date.
            TypeError: a ``datetime`` (a calendar excludes whole days).
        """
        if not days:
            raise ValueError("Calendar.dates needs at least one date, got none")
        return cls(_Rules(dates=frozenset(_day(day) for day in days)))

    @classmethod
    def weekly(cls, *days: str) -> Calendar:
        """Exclude days of the week: ``"SAT"``, ``"SUN"`` … (or full names, any case).

        Raises:
            ValueError: no day, or a name that is not a day of the week.
        """
        if not days:
            raise ValueError("Calendar.weekly needs at least one day name, got none")
        numbers = set()
        for day in days:
            name = day.strip().upper() if isinstance(day, str) else None
            if name in _WEEKDAYS:
                numbers.add(_WEEKDAYS.index(name))
            elif name in _FULL_WEEKDAYS:
                numbers.add(_FULL_WEEKDAYS.index(name))
            else:
                raise ValueError(
                    f"Calendar.weekly takes day names {', '.join(_WEEKDAYS)} (or full names), "
                    f"got {day!r}"
                )
        return cls(_Rules(weekdays=frozenset(numbers)))

    @classmethod
    def daily(cls, start: str | time, end: str | time) -> Calendar:
        """Exclude a wall-clock window every day, ``start`` included, ``end`` excluded.

        ``daily("22:00", "06:00")`` wraps midnight (22:00 to 06:00 the next morning);
        ``daily("12:00", "00:00")`` is noon to midnight. Times are ``"HH:MM"``,
        ``"HH:MM:SS"`` or naive ``datetime.time`` values, read in the schedule's zone.

        Raises:
            ValueError: a malformed time, or ``start == end`` (an empty or whole-day
                window: use :meth:`weekly` or :meth:`dates` for whole days).
        """
        first, last = _seconds_of_day(start, "start"), _seconds_of_day(end, "end")
        if first == last:
            raise ValueError(
                f"Calendar.daily start and end must differ (got {start!r} twice); a window "
                "may wrap midnight, e.g. daily('22:00', '06:00')"
            )
        return cls(_Rules(windows=frozenset({(first, last)})))

    @classmethod
    def cron(cls, expression: str | CronExpression) -> Calendar:
        """Exclude the instants (to the second) a cron expression matches.

        ``Calendar.cron("* * 0-6 ? * *")`` excludes every second from 00:00 to 06:59.
        The expression is evaluated in the schedule's zone (a zone parsed into a given
        :class:`CronExpression` is ignored).

        Raises:
            InvalidCronExpressionError: the expression is not valid.
        """
        text = expression.expression if isinstance(expression, CronExpression) else expression
        _parsed(text)  # validates
        return cls(_Rules(crons=frozenset({text})))

    @classmethod
    def holidays(cls, country: str, subdiv: str | None = None) -> Calendar:
        """Exclude the public holidays of a country (ISO 3166 code, e.g. ``"FR"``), or of
        one of its subdivisions (e.g. ``"FR", subdiv="57"``, Moselle).

        Uses the optional ``holidays`` package, imported here (to check the country)
        and when the calendar is evaluated, never at ``import tocsin``.

        Raises:
            ImportError: the ``holidays`` package is not installed (the message says
                ``pip install 'tocsin[holidays]'``).
            ValueError: an unknown country or subdivision.
        """
        if not isinstance(country, str) or not country.strip():
            raise ValueError(f"Calendar.holidays country must be a country code, got {country!r}")
        if subdiv is not None and (not isinstance(subdiv, str) or not subdiv.strip()):
            raise ValueError(f"Calendar.holidays subdiv must be a code or None, got {subdiv!r}")
        code = country.strip().upper()
        region = None if subdiv is None else subdiv.strip()
        module = _holidays_module()
        try:
            module.country_holidays(code, subdiv=region)
        except NotImplementedError as exc:  # how the package says "unknown"
            known = sorted(module.list_supported_countries())
            raise ValueError(
                f"Calendar.holidays: unknown country {country!r} or subdivision {subdiv!r} "
                f"({exc}); known countries: {', '.join(known[:12])}, … "
                f"({len(known)} in holidays {getattr(module, '__version__', '?')})"
            ) from None
        return cls(_Rules(holidays=frozenset({(code, region)})))

    def __or__(self, other: object) -> Calendar:
        if not isinstance(other, Calendar):
            return NotImplemented
        return Calendar(self._rules | other._rules)

    def excludes(self, instant: datetime, zone: tzinfo | str) -> bool:
        """Whether a tick at ``instant`` is excluded, reading ``instant`` in ``zone``.

        Raises:
            ValueError: ``instant`` is naive.
            InvalidTimezoneError: ``zone`` is not a known zone.
            ImportError: a holidays rule on a node without the ``holidays`` package.
        """
        if not isinstance(instant, datetime):
            raise TypeError(f"`instant` must be a datetime, got {type(instant).__name__}")
        if instant.tzinfo is None or instant.utcoffset() is None:
            raise ValueError(f"`instant` must be an aware datetime, got {instant.isoformat()}")
        where = _zone(zone)
        assert where is not None
        local = instant.astimezone(where)
        rules = self._rules
        day = local.date()
        if day in rules.dates or local.weekday() in rules.weekdays:
            return True
        if rules.windows:
            now = local.hour * 3600 + local.minute * 60 + local.second
            for start, end in rules.windows:
                if (start <= now < end) if start < end else (now >= start or now < end):
                    return True
        for text in rules.crons:
            if _parsed(text).matches(local):
                return True
        return any(day in _holiday_dates(code, sub, day.year) for code, sub in rules.holidays)

    def to_wire(self) -> dict[str, object]:
        """The calendar as a canonical codec-safe value (see the module docs)."""
        rules = self._rules
        return {
            "calendar": _WIRE_VERSION,
            "dates": sorted(day.isoformat() for day in rules.dates),
            "weekly": [_WEEKDAYS[number] for number in sorted(rules.weekdays)],
            "daily": [[_clock(start), _clock(end)] for start, end in sorted(rules.windows)],
            "cron": sorted(rules.crons),
            "holidays": [
                [code, sub]
                for code, sub in sorted(rules.holidays, key=lambda h: (h[0], h[1] or ""))
            ],
        }

    @classmethod
    def from_wire(cls, value: object) -> Calendar:
        """The calendar :meth:`to_wire` gave. Imports nothing, runs nothing.

        Raises:
            ValueError: a malformed value (wrong shape, version, date, time, name or
                expression).
        """
        keys = {"calendar", "dates", "weekly", "daily", "cron", "holidays"}
        if not isinstance(value, dict) or set(value) != keys:
            raise ValueError(f"a stored calendar is a dict with keys {sorted(keys)}, got {value!r}")
        if value["calendar"] != _WIRE_VERSION:
            raise ValueError(f"unknown stored calendar version {value['calendar']!r}")
        try:
            rules = _Rules(
                dates=frozenset(_day(day) for day in _strings(value["dates"])),
                weekdays=frozenset(_WEEKDAYS.index(name) for name in _strings(value["weekly"])),
                windows=frozenset(
                    (_seconds_of_day(start, "start"), _seconds_of_day(end, "end"))
                    for start, end in _pairs(value["daily"])
                ),
                crons=frozenset(_parsed(text).expression for text in _strings(value["cron"])),
                holidays=frozenset(
                    (code, sub) for code, sub in _pairs(value["holidays"], optional_second=True)
                ),
            )
        except (TypeError, ValueError) as exc:  # InvalidCronExpressionError is a ValueError
            raise ValueError(f"malformed stored calendar {value!r}: {exc}") from None
        if any(start == end for start, end in rules.windows):
            raise ValueError(f"malformed stored calendar {value!r}: an empty daily window")
        return cls(rules)

    @property
    def fingerprint(self) -> str:
        """A digest of the canonical wire form: the same for equal calendars in every process."""
        text = json.dumps(self.to_wire(), sort_keys=True, separators=(",", ":"))
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Calendar):
            return NotImplemented
        return self._rules == other._rules

    def __hash__(self) -> int:
        return hash(self._rules)

    def __repr__(self) -> str:
        rules = self._rules
        parts: list[str] = []
        if rules.dates:
            parts.append(
                f"Calendar.dates({', '.join(repr(d.isoformat()) for d in sorted(rules.dates))})"
            )
        if rules.weekdays:
            names = ", ".join(repr(_WEEKDAYS[n]) for n in sorted(rules.weekdays))
            parts.append(f"Calendar.weekly({names})")
        for start, end in sorted(rules.windows):
            parts.append(
                f"Calendar.daily({_clock(start)[:5]!r}, {_clock(end)[:5]!r})"
                if start % 60 == end % 60 == 0
                else f"Calendar.daily({_clock(start)!r}, {_clock(end)!r})"
            )
        parts.extend(f"Calendar.cron({text!r})" for text in sorted(rules.crons))
        for code, sub in sorted(rules.holidays, key=lambda h: (h[0], h[1] or "")):
            parts.append(
                f"Calendar.holidays({code!r})"
                if sub is None
                else f"Calendar.holidays({code!r}, subdiv={sub!r})"
            )
        return " | ".join(parts) if parts else "Calendar(<empty>)"


def _strings(value: object) -> Iterable[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"expected a list of strings, got {value!r}")
    return value


def _pairs(value: object, *, optional_second: bool = False) -> Iterable[tuple[str, Any]]:
    if not isinstance(value, list):
        raise ValueError(f"expected a list of pairs, got {value!r}")
    out = []
    for item in value:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not isinstance(item[0], str)
            or not (isinstance(item[1], str) or (optional_second and item[1] is None))
        ):
            raise ValueError(f"expected a pair of strings, got {item!r}")
        out.append((item[0], item[1]))
    return out
