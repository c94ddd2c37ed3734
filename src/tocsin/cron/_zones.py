# SPDX-License-Identifier: Apache-2.0
"""Time zones, the one way tocsin reads them: a zone by its IANA name, this machine's zone
name, and whether two names are one zone.

Everything that names a zone goes through here: a cron expression's zone
(``CronExpression.parse``), a schedule's and a durable cron task's (``timezone=``), the
system's default zone, ``tocsin cron next --tz`` and the cluster's zone check. So an
unknown name is refused with the same :class:`~tocsin.errors.InvalidTimezoneError`
everywhere, and "the local zone" is the same zone for the scheduler and the CLI.

Pure: no asyncio and no clock (cron is the bottom layer); reading ``TZ`` and the zone
files is all it does.
"""

from __future__ import annotations

import importlib.resources
import os
import zoneinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tocsin.errors import InvalidTimezoneError

__all__ = ["local_zone", "local_zone_name", "same_zone", "zone"]

#: The link naming this machine's zone (``/usr/share/zoneinfo/<name>``).
LOCALTIME = "/etc/localtime"


@lru_cache(maxsize=256)
def zone(name: str) -> ZoneInfo:
    """The :class:`~zoneinfo.ZoneInfo` of an IANA zone name (``"Europe/Paris"``, ``"UTC"``).

    Raises:
        InvalidTimezoneError: ``name`` is not a str, is empty, or is no zone this machine
            knows (its zone files, then the ``tzdata`` package); the message names it.
    """
    if not isinstance(name, str) or not name:
        raise InvalidTimezoneError(
            f"`timezone` must be an IANA zone name such as 'Europe/Paris' or 'UTC', got {name!r}"
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidTimezoneError(
            f"unknown time zone {name!r}: `timezone` must be an IANA zone name such as "
            "'Europe/Paris' or 'UTC'"
        ) from None


def local_zone_name() -> str:
    """The IANA name of this machine's zone: ``TZ`` (a leading ``:`` ignored) when it names
    a known zone, else the target of the ``/etc/localtime`` link below a ``zoneinfo/``
    directory, else ``"UTC"`` (also for an ``/etc/localtime`` that is a copy, not a link:
    its rules have no name to record, and the CLI shows what schedules would do).

    Only a named zone will do: a fixed UTC offset (what ``astimezone()`` on a naive local
    time gives) would not follow DST, and a name is what a schedule records and what the
    nodes of a cluster compare.
    """
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and _known(tz):
        return tz
    target = os.path.realpath(LOCALTIME)  # not strict: a missing file is no error
    marker = "zoneinfo/"
    if marker in target:
        name = target.split(marker, 1)[1]
        if _known(name):
            return name
    return "UTC"


def local_zone() -> ZoneInfo:
    """The :class:`~zoneinfo.ZoneInfo` of :func:`local_zone_name`."""
    return zone(local_zone_name())


def _known(name: str) -> bool:
    try:
        zone(name)
    except InvalidTimezoneError:
        return False
    return True


def same_zone(a: str, b: str) -> bool:
    """Whether two IANA names are one zone: equal, or links to the same data (``UTC``,
    ``Etc/UTC`` and ``Zulu``; ``Asia/Calcutta`` and ``Asia/Kolkata``), so cron fires at the
    same instants in both. A name this machine does not know is only itself."""
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
