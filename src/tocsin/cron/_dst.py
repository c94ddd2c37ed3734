# SPDX-License-Identifier: Apache-2.0
""":class:`DSTPolicy` and the next fire time under it. Pure: no clock, no asyncio.

A cron expression matches *wall times* in its zone. Around a daylight-saving change a
matching wall time has one instant (ordinary), two (it falls in the repeated hour, a
*fold*: the earlier instant in daylight time, the later one in standard time) or none (it
falls in the skipped hour, a *gap*: from the gap's start wall time ``G0`` to its end
``G1``, ``L = G1 - G0`` long, the clocks jumping at the instant ``T`` whose wall time is
``G1``). The policy says which instants each matching wall time gives:

=========  ================================================================================
gap        a matching wall time ``W`` in a gap gives
=========  ================================================================================
quartz     nothing (default; Quartz: the search carries on from ``W + L``, so a start
           before ``T`` also passes over the matches in ``[G1, W + L)``)
next       ``T``: the first instant after the gap (wall time ``G1``)
shift      ``W + L`` (read with the offset from before the gap, as ``java.util`` does)
skip       nothing (not that day)
=========  ================================================================================

=========  ================================================================================
fold       a matching wall time that occurs twice gives
=========  ================================================================================
quartz     its later instant (default; Quartz: a start inside the earlier occurrence goes
           on as if it were at the same wall time in the later one)
first      its earlier instant (daylight time)
last       its later instant (standard time)
both       both instants
=========  ================================================================================

The fire times are the union of those instants, in increasing order, each once: an
instant moved onto another instant of the same schedule (an hourly job whose 02:00 moves
to 03:00) is one fire time, not two. ``next_after(t)`` is the first of them strictly
after ``t`` (one-second granularity). ``DSTPolicy()`` (both ``"quartz"``) is exactly what
the engine did before policies existed: the default path never enters this module's
search.

Prior art: Temporal's open issue 8205 (first/last/none in a fold, shift/skip in a gap),
Quartz's ``DailyTimeIntervalTrigger`` and ``CalendarIntervalTrigger``
(``skipDayIfHourDoesNotExist``), and Python's PEP 495 (``fold=0`` reads a gap wall time
with the offset from before it, ``fold=1`` with the one after). The search walks the
matching wall times with the engine's carry search and resolves each one; it reads the
zone only through ``utcoffset``, so any ``tzinfo`` works.
"""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Final, Literal, cast, final, get_args

from tocsin.cron._fields import MAX_YEAR, CronFields
from tocsin.cron._next import _END_EPOCH, _START_EPOCH, _next_wall, can_ever_fire, epoch_seconds

__all__ = [
    "FOLD_POLICIES",
    "GAP_POLICIES",
    "DSTPolicy",
    "FoldPolicy",
    "GapPolicy",
    "is_fixed",
    "next_fire_dst",
]

#: What to do with a wall time that does not exist (clocks spring forward).
GapPolicy = Literal["quartz", "next", "shift", "skip"]
#: What to do with a wall time that occurs twice (clocks fall back).
FoldPolicy = Literal["quartz", "first", "last", "both"]

GAP_POLICIES: Final[tuple[str, ...]] = get_args(GapPolicy)
FOLD_POLICIES: Final[tuple[str, ...]] = get_args(FoldPolicy)


@final
@dataclass(frozen=True, slots=True)
class DSTPolicy:
    """How a cron schedule treats wall times that daylight saving skips or repeats.

    Attributes:
        gap: a wall time that does not exist that day: ``"quartz"`` (default: not fired,
            as Quartz does), ``"next"`` (the first instant after the gap), ``"shift"``
            (the wall time plus the gap's length), ``"skip"`` (not that day).
        fold: a wall time that occurs twice: ``"quartz"`` (default: the later instant,
            as Quartz does), ``"first"``, ``"last"``, ``"both"``.

    A plain value: frozen, hashable, equal when its two fields are; :meth:`to_wire`
    gives a codec-safe form. ``str()`` gives the spelling :meth:`parse` reads.

    Raises:
        ValueError: an unknown ``gap`` or ``fold`` (the message names the option and
            the allowed values).
    """

    gap: GapPolicy = "quartz"
    fold: FoldPolicy = "quartz"

    def __post_init__(self) -> None:
        if self.gap not in GAP_POLICIES:
            raise ValueError(
                f"DSTPolicy gap must be one of {', '.join(map(repr, GAP_POLICIES))}, "
                f"got {self.gap!r}"
            )
        if self.fold not in FOLD_POLICIES:
            raise ValueError(
                f"DSTPolicy fold must be one of {', '.join(map(repr, FOLD_POLICIES))}, "
                f"got {self.fold!r}"
            )

    @classmethod
    def never_skip(cls) -> DSTPolicy:
        """``gap="next", fold="first"``: a daily job fires exactly once every day."""
        return cls(gap="next", fold="first")

    @property
    def is_quartz(self) -> bool:
        """Whether this is the default (both ``"quartz"``): the engine's plain path."""
        return self.gap == "quartz" and self.fold == "quartz"

    @classmethod
    def parse(cls, spec: str) -> DSTPolicy:
        """Read ``"gap=next,fold=first"`` (either part optional, any order) or ``"never_skip"``.

        The spelling of ``tocsin cron next --dst``; ``str(policy)`` gives it back.

        Raises:
            ValueError: anything else (the message says what was given and what is
                allowed).
        """
        if not isinstance(spec, str):
            raise TypeError(f"a DST policy spec must be a str, got {type(spec).__name__}")
        text = spec.strip()
        if text.replace("-", "_") == "never_skip":
            return cls.never_skip()
        options: dict[str, str] = {}
        for part in text.split(","):
            name, equals, value = part.strip().partition("=")
            name, value = name.strip(), value.strip()
            if not equals or name not in ("gap", "fold") or name in options or not value:
                raise ValueError(
                    f"a DST policy is 'gap=<{'|'.join(GAP_POLICIES)}>,"
                    f"fold=<{'|'.join(FOLD_POLICIES)}>' (either part optional) or "
                    f"'never_skip', got {spec!r}"
                )
            options[name] = value
        return cls(
            gap=cast("GapPolicy", options.get("gap", "quartz")),
            fold=cast("FoldPolicy", options.get("fold", "quartz")),
        )

    def to_wire(self) -> dict[str, str]:
        """A codec-safe form (``{"gap": ..., "fold": ...}``); :meth:`from_wire` reads it."""
        return {"gap": self.gap, "fold": self.fold}

    @classmethod
    def from_wire(cls, value: object) -> DSTPolicy:
        """The policy :meth:`to_wire` gave.

        Raises:
            ValueError: a malformed value.
        """
        if not isinstance(value, dict) or set(value) != {"gap", "fold"}:
            raise ValueError(f"a stored DST policy is a dict with gap and fold, got {value!r}")
        return cls(gap=value["gap"], fold=value["fold"])

    def __str__(self) -> str:
        return f"gap={self.gap},fold={self.fold}"


_ONE: Final = timedelta(seconds=1)

_Wall = tuple[int, int, int, int, int, int]


def _offset(seconds: int, zone: tzinfo) -> int:
    """The zone's UTC offset, in whole seconds, at an instant."""
    offset = datetime.fromtimestamp(seconds, zone).utcoffset()
    assert offset is not None
    return offset // _ONE


def _wall(seconds: int) -> _Wall:
    year, month, day, hour, minute, second = time.gmtime(seconds)[:6]
    return (year, month, day, hour, minute, second)


def _change(low: int, high: int, low_offset: int, zone: tzinfo) -> int:
    """The first instant in ``(low, high]`` whose offset is not ``low_offset`` (the offset
    at ``low``), for a ``high`` known to be past one change of offset: a binary search."""
    while high - low > 1:
        middle = (low + high) // 2
        if _offset(middle, zone) == low_offset:
            low = middle
        else:
            high = middle
    return high


def next_fire_dst(
    fields: CronFields, after: datetime, zone: tzinfo, gap: str, fold: str
) -> datetime | None:
    """The first fire time strictly after ``after`` under a non-default DST policy.

    ``zone`` must not be a fixed offset (those have no DST: the caller uses the plain
    engine). The result is aware, in ``zone`` (``fold=1`` for the later of two equal
    wall times), or ``None``.

    The search walks matching wall times from the start's own, resolving each to the
    instants the policy gives; only two cases need earlier wall times (a start inside
    the earlier occurrence of a repeated hour, whose later instants are still ahead,
    and a start at the end of a gap under ``"next"`` or less than a gap's length after
    it under ``"shift"``), and only two kinds
    of fire time can be undercut by a later wall time (a later instant under
    ``fold="both"``, a shifted one), so the walk stops at the first wall time past the
    best fire time's own, or past it plus the fold or gap for those two.
    """
    if not can_ever_fire(fields):
        return None
    start = epoch_seconds(after) + 1
    if start >= _END_EPOCH:
        return None
    start = max(start, _START_EPOCH)
    local = datetime.fromtimestamp(start, zone)
    own_delta = local.utcoffset()
    assert own_delta is not None
    own = own_delta // _ONE
    begin = start + own  # the start's wall time, as seconds
    if local.fold == 0:
        twin_delta = local.replace(fold=1).utcoffset()
        assert twin_delta is not None
        twin = twin_delta // _ONE
        if twin < own:  # the start is inside the earlier occurrence of a repeated hour
            if fold == "quartz":
                # Quartz searches wall times from the start's: it goes on from the
                # start's twin in the later occurrence.
                start += own - twin
            elif fold != "first":
                # The later instants of the repeated hour's earlier wall times are still
                # ahead: the walk starts at the repeated hour's first wall time.
                begin = _change(start, start + (own - twin), own, zone) + twin
    if gap == "next":
        before = _offset(start - 1, zone)
        if before < own:  # the start is the very end of a gap: its wall times give it
            begin = min(begin, start + before)
    elif gap == "shift":
        before = _offset(start - 86400, zone)
        # A gap ended less than its length ago: its wall times, shifted, are still ahead.
        if before < own and _offset(start - (own - before), zone) == before:
            begin = min(begin, start + before)
    cursor: _Wall | None = _wall(begin)
    best: int | None = None
    bound = 0  # the last wall time that can still give a fire time before best
    while cursor is not None:
        found = _next_wall(fields, cursor)
        if found is None:
            break
        wall = calendar.timegm(found)
        if best is not None and wall > bound:
            break
        moment = datetime(*found, tzinfo=zone)
        early_delta, late_delta = moment.utcoffset(), moment.replace(fold=1).utcoffset()
        assert early_delta is not None
        assert late_delta is not None
        early, late = early_delta // _ONE, late_delta // _ONE
        resume = wall + 1
        # (instant, how far past this wall time a later one can still undercut it)
        candidates: tuple[tuple[int, int], ...]
        if early == late:
            candidates = ((wall - early, 0),)
        elif early > late:  # a fold: early is the daylight-time instant's offset
            if fold == "first":
                candidates = ((wall - early, 0),)
            elif fold == "both":
                candidates = ((wall - early, 0), (wall - late, early - late))
            else:  # "last" and "quartz" (the start was moved out of the early occurrence)
                candidates = ((wall - late, 0),)
        elif gap == "shift":
            candidates = ((wall - early, late - early),)
        else:
            # "next", "skip", "quartz": every wall time of this gap gives the same, so
            # the search resumes at its end G1 (or, for Quartz, at W + L: see above).
            # The gap ends at T, in (W - late, W - early]: W - late is still before it.
            instant = _change(wall - late, wall - early, early, zone)
            resume = instant + late
            candidates = ((instant, 0),) if gap == "next" else ()
            if gap == "quartz" and start < instant:
                resume = wall + (late - early)
        for candidate, reach in candidates:
            if candidate >= start and (best is None or candidate < best):
                best, bound = candidate, wall + reach
        if best == start:
            break  # nothing can come earlier
        # Jump over wall times that can only give instants before the start: after an
        # ordinary one that did (a shifted gap's walk, past the gap's end), and, under
        # "both", after a repeated one whose earlier instant did (its later instants
        # only grow; the earlier ones reach the start at the start's own wall time).
        if (early == late or (early > late and fold == "both")) and wall - early < start:
            resume = max(resume, start + early)
        if resume >= _END_EPOCH + 86400:
            break
        cursor = _wall(resume)
        if cursor[0] > MAX_YEAR:
            break
    if best is None:
        return None
    return datetime.fromtimestamp(best, UTC).astimezone(zone)


def is_fixed(zone: tzinfo) -> bool:
    """Whether a zone is a fixed offset (no DST, so every policy is the plain engine)."""
    return isinstance(zone, timezone)
