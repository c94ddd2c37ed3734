# SPDX-License-Identifier: Apache-2.0
"""Cron trigger state: a parsed expression, its zone, and its next wall-clock fire time.

Fire times are wall-clock instants computed by :mod:`tocsin.cron` in the schedule's zone;
the scheduler arms them on the monotonic heap (``deadline = now + (next_wall - wall)``)
and re-arms them when wall time jumps. ``next_wall`` only ever moves forward, which is
what guarantees that a backward wall jump never fires the same tick twice.
"""

from __future__ import annotations

import importlib.resources
import os
import zoneinfo
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import InvalidCronExpressionError, InvalidTimezoneError

if TYPE_CHECKING:
    from ..cron import CronExpression

__all__ = ["CronState", "local_zone_name", "same_zone", "zone"]


@final
class CronState:
    """The cron part of a schedule record (internal)."""

    __slots__ = ("expr", "last_wall", "next_wall", "text", "tz", "zone_name")

    def __init__(self, expr: CronExpression, text: str, zone_name: str) -> None:
        self.expr = expr
        self.text = text
        self.zone_name = zone_name
        self.tz = zone(zone_name)
        self.next_wall = 0.0
        self.last_wall: float | None = None

    @classmethod
    def create(cls, expression: str, zone_name: str, wall: float) -> CronState:
        """Parse and compute the first fire time after ``wall``.

        Raises:
            InvalidCronExpressionError: malformed, or no fire time after now.
            InvalidTimezoneError: unknown zone.
        """
        from ..cron import CronExpression

        if not isinstance(expression, str):
            raise InvalidCronExpressionError(
                f"`expression` must be a str, got {expression!r}", expression=repr(expression)
            )
        state = cls(CronExpression.parse(expression), expression, zone_name)
        first = state.expr.next_after(datetime.fromtimestamp(wall, state.tz))
        if first is None:
            raise InvalidCronExpressionError(
                f"cron expression {expression!r} has no fire time after now "
                f"({datetime.fromtimestamp(wall, state.tz).isoformat()} in {zone_name})",
                expression=expression,
            )
        state.next_wall = first.timestamp()
        return state

    def advance(self, after: float) -> bool:
        """Move to the first fire time strictly after ``after``; False if there is none."""
        nxt = self.expr.next_after(datetime.fromtimestamp(after, self.tz))
        if nxt is None:
            return False
        self.last_wall = self.next_wall
        self.next_wall = max(self.next_wall, nxt.timestamp())
        return True


@lru_cache(maxsize=256)
def zone(name: str) -> ZoneInfo:
    """The :class:`ZoneInfo` for an IANA name, or :class:`InvalidTimezoneError`."""
    if not isinstance(name, str) or not name:
        raise InvalidTimezoneError(f"`timezone` must be an IANA zone name, got {name!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidTimezoneError(
            f"`timezone` must be an IANA zone name such as 'Europe/Paris' or 'UTC', got {name!r}"
        ) from None


def local_zone_name() -> str:
    """The IANA name of this machine's zone (``TZ``, then ``/etc/localtime``), else ``UTC``.

    A fixed UTC offset (what ``astimezone()`` on a naive local time gives) would not follow DST,
    so only a named zone will do.
    """
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz:
        try:
            zone(tz)
            return tz
        except InvalidTimezoneError:
            pass
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        return "UTC"
    marker = "zoneinfo/"
    if marker in target:
        name = target.split(marker, 1)[1]
        try:
            zone(name)
            return name
        except InvalidTimezoneError:
            pass
    return "UTC"


def same_zone(a: str, b: str) -> bool:
    """Whether two IANA names are one zone: equal, or links to the same data (``UTC`` and
    ``Etc/UTC``, ``Asia/Calcutta`` and ``Asia/Kolkata``), so cron fires at the same
    instants in both. A name this machine does not know is only itself."""
    if a == b:
        return True
    data = _zone_data(a)
    return data is not None and data == _zone_data(b)


@lru_cache(maxsize=64)
def _zone_data(name: str) -> bytes | None:
    """The TZif bytes :mod:`zoneinfo` loads for ``name`` (its search order: ``TZPATH``,
    then the ``tzdata`` package), or None."""
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return None  # not a zone key (zoneinfo refuses these too)
    for root in zoneinfo.TZPATH:
        try:
            with open(os.path.join(root, *parts), "rb") as file:
                return file.read()
        except OSError:
            continue
    try:
        return importlib.resources.files("tzdata.zoneinfo").joinpath(*parts).read_bytes()
    except (ImportError, OSError):
        return None
