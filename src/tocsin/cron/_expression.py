# SPDX-License-Identifier: Apache-2.0
""":class:`CronExpression`: a parsed cron expression (Quartz or Unix) and its optional zone."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from datetime import UTC, datetime, tzinfo
from typing import Literal, final

from tocsin.cron._describe import describe
from tocsin.cron._dialects import dialect_of, parse
from tocsin.cron._dst import DSTPolicy, is_fixed, next_fire_dst
from tocsin.cron._fields import CronFields
from tocsin.cron._next import epoch_seconds, matches, next_fire
from tocsin.cron._zones import zone
from tocsin.errors import InvalidTimezoneError

__all__ = ["CronDialect", "CronExpression"]

#: How an expression was read: ``"quartz"`` (6-7 fields), ``"unix"`` (5 fields) or
#: ``"macro"`` (``@daily`` and friends, which mean the same in both dialects).
CronDialect = Literal["quartz", "unix", "macro"]

_READINGS: dict[str, str] = {"quartz": "Quartz cron", "unix": "Unix cron"}


def _zone(timezone: tzinfo | str | None) -> tzinfo | None:
    if timezone is None or isinstance(timezone, tzinfo):
        return timezone
    if isinstance(timezone, str):
        return zone(timezone)  # the one lookup: an unknown name is refused by name
    raise InvalidTimezoneError(
        f"`timezone` must be an IANA zone name such as 'Europe/Paris', a tzinfo, or None "
        f"(the zone of each datetime), got {timezone!r}"
    )


def _require_aware(moment: datetime, name: str) -> None:
    if not isinstance(moment, datetime):
        raise TypeError(f"`{name}` must be a datetime, got {type(moment).__name__}")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(
            f"`{name}` must be an aware datetime (with tzinfo), got naive {moment.isoformat()}; "
            "attach a zone, e.g. datetime(..., tzinfo=timezone.utc) or "
            "dt.replace(tzinfo=ZoneInfo(...))"
        )


@final
class CronExpression:
    """A cron expression, parsed once, evaluated without reading any clock.

    Two dialects, chosen by field count: 6 or 7 fields are Quartz (with seconds, and
    years), exactly 5 are Unix cron as Debian's cron reads it (:attr:`dialect` tells
    which). Create one with :meth:`parse`. Instances are immutable and hashable; two
    expressions are equal when they fire at the same times in the same zone, whatever
    their spelling or dialect (``0 0 12 ? * MON`` equals ``0 0 12 ? * 2`` and the Unix
    ``0 12 * * 1``).
    """

    __slots__ = ("_fields", "_text", "_zone")

    _fields: CronFields
    _text: str
    _zone: tzinfo | None

    def __init__(self, text: str, fields: CronFields, zone: tzinfo | None) -> None:
        """Internal: use :meth:`CronExpression.parse`."""
        object.__setattr__(self, "_text", text)
        object.__setattr__(self, "_fields", fields)
        object.__setattr__(self, "_zone", zone)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"CronExpression is immutable; cannot set {name!r}")

    @classmethod
    def parse(cls, text: str, timezone: tzinfo | str | None = None) -> CronExpression:
        """Parse a cron expression: Quartz (6 or 7 fields), Unix (5 fields) or a macro.

        Args:
            text: the expression, e.g. ``"0 0 12 ? * 6L"`` (Quartz: seconds minutes hours
                day-of-month month day-of-week [year]) or ``"0 9 * * 1-5"`` (Unix: minute
                hour day-of-month month day-of-week, 0 and 7 are Sunday, and when both day
                fields are restricted a day matches if either does) or ``"@daily"``.
            timezone: the zone to evaluate in (IANA name or ``tzinfo``); ``None`` means
                the zone of each datetime passed to :meth:`next_after`.

        Returns:
            The parsed expression. Parsing takes a few microseconds (common
            spellings) to a few tens of microseconds.

        Raises:
            InvalidCronExpressionError: the text is not a valid expression (the error
                names the field, the offending text, its ``position`` and what is
                allowed). No other exception is raised, whatever ``text`` is.
            InvalidTimezoneError: ``timezone`` is not a known zone.
        """
        fields = parse(text)
        return cls(text, fields, None if timezone is None else _zone(timezone))

    @property
    def expression(self) -> str:
        """The text as given to :meth:`parse`."""
        return self._text

    @property
    def dialect(self) -> CronDialect:
        """How the text was read: ``"quartz"``, ``"unix"`` or ``"macro"``."""
        dialect = dialect_of(self._text)
        return "unix" if dialect == "unix" else "macro" if dialect == "macro" else "quartz"

    @property
    def timezone(self) -> tzinfo | None:
        """The evaluation zone, or ``None`` to use the zone of each datetime."""
        return self._zone

    @property
    def fields(self) -> CronFields:
        """The normalized fields (what equality compares)."""
        return self._fields

    def next_after(self, moment: datetime, *, dst: DSTPolicy | None = None) -> datetime | None:
        """Return the first fire time strictly after ``moment``, or ``None`` if none.

        Guarantees: the result is later than ``moment`` by at least the rest of its
        second (sub-seconds of ``moment`` are ignored, fire times are whole seconds);
        it is aware, in the evaluation zone; no clock is read; sparse and never-firing
        expressions answer in tens of microseconds. DST follows Quartz by default: a wall
        time that does not exist is skipped, one that occurs twice fires once, at its
        later (standard-time) instant. ``dst`` chooses otherwise (see
        :class:`~tocsin.DSTPolicy`); an instant a policy moves onto another fire time
        is one fire time.

        Raises:
            ValueError: ``moment`` is naive.
            TypeError: ``moment`` is not a datetime, or ``dst`` not a ``DSTPolicy``.
        """
        _require_aware(moment, "moment")
        zone = self._zone if self._zone is not None else moment.tzinfo
        assert zone is not None
        if dst is None:
            return next_fire(self._fields, moment, zone)
        if not isinstance(dst, DSTPolicy):
            raise TypeError(f"`dst` must be a DSTPolicy or None, got {type(dst).__name__}")
        if dst.is_quartz or is_fixed(zone):
            return next_fire(self._fields, moment, zone)  # no DST in a fixed offset
        return next_fire_dst(self._fields, moment, zone, dst.gap, dst.fold)

    def iter_after(self, moment: datetime, *, dst: DSTPolicy | None = None) -> Iterator[datetime]:
        """Yield the fire times after ``moment`` in increasing order, ending if they do.

        Raises:
            ValueError: ``moment`` is naive (raised at the first ``next()``).
        """
        current = self.next_after(moment, dst=dst)
        while current is not None:
            yield current
            current = self.next_after(current, dst=dst)

    def matches(self, moment: datetime, *, dst: DSTPolicy | None = None) -> bool:
        """Whether ``moment`` (rounded down to the second) is a fire time (under ``dst``).

        Raises:
            ValueError: ``moment`` is naive.
        """
        _require_aware(moment, "moment")
        zone = self._zone if self._zone is not None else moment.tzinfo
        assert zone is not None
        if dst is None or (isinstance(dst, DSTPolicy) and dst.is_quartz) or is_fixed(zone):
            return matches(self._fields, moment, zone)
        seconds = epoch_seconds(moment)
        found = self.next_after(datetime.fromtimestamp(seconds - 1, UTC), dst=dst)
        return found is not None and epoch_seconds(found) == seconds

    def describe(self) -> str:
        """Describe the schedule in plain English, naming the dialect it was read in.

        For example "At 12:00, on the last Friday of the month (Quartz cron)",
        "At 09:00, on Monday through Friday (Unix cron)", "At 00:00 (@daily)". The
        wording is for people and may change between releases.
        """
        dialect = self.dialect
        reading = self._text.strip(" \t").lower() if dialect == "macro" else _READINGS[dialect]
        return describe(self._fields, reading)

    def _key(self) -> tuple[CronFields, Hashable]:
        zone = self._zone
        return (self._fields, getattr(zone, "key", zone))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CronExpression):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        if self._zone is None:
            return f"CronExpression.parse({self._text!r})"
        zone = getattr(self._zone, "key", self._zone)
        return f"CronExpression.parse({self._text!r}, timezone={str(zone)!r})"
