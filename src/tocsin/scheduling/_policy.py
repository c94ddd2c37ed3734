# SPDX-License-Identifier: Apache-2.0
"""A schedule's policies (DESIGN.md "Schedule policies"), checked at the call, and the
little state they need while the schedule runs.

A schedule given no option (or only the defaults: ``Overlap.ALLOW``, ``Misfire.once()``,
no jitter, no calendar, no DST policy) has no :class:`SchedulePolicy` at all: its record's
``policy`` slot is ``None`` and its ticks take the plain path, so the defaults cost what
they cost before policies existed. Any other option makes one :class:`SchedulePolicy` per
schedule, holding the options and the run-time state behind them:

* ``in_flight`` (a :class:`~tocsin.triggers.Flight`'s): the ticks of this schedule sent
  and not yet finished (a ``receive`` that returned, raised or was cancelled; a tick
  rejected or dropped as stale), counted only when the overlap policy is not ``ALLOW``;
* ``held``: ``BUFFER_ONE``'s waiting tick (its nominal instant), delivered when the tick
  in flight finishes;
* ``nominal``: an interval schedule's nominal deadline (monotonic), when jitter moves the
  armed one.

Nothing here reads the clock, touches the heap or decides a policy: the tick path does
the first two, :mod:`tocsin.triggers` the last.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Any, final

from ..triggers import (
    Calendar,
    DSTPolicy,
    Flight,
    Misfire,
    Overlap,
    check_dst,
    check_exclude,
    check_jitter,
    counts_in_flight,
    needs_policy,
)

__all__ = ["SchedulePolicy", "check_dst", "check_exclude", "check_jitter", "make_policy"]


@final
class SchedulePolicy(Flight):
    """The non-default options of one schedule and their run-time state (internal).

    The overlap state (``in_flight``, ``held``) is a :class:`~tocsin.triggers.Flight`,
    decided by :func:`~tocsin.triggers.admit` / :func:`~tocsin.triggers.settle`.
    """

    __slots__ = (
        "dst",
        "exclude",
        "jitter",
        "misfire",
        "nominal",
        "overlap",
        "overlap_only",
        "replay",
        "tracked",
        "zone",
    )

    def __init__(
        self,
        overlap: Overlap,
        misfire: Misfire,
        jitter: float | None,
        exclude: Calendar | None,
        dst: DSTPolicy | None,
        zone: tzinfo,
    ) -> None:
        super().__init__()
        self.overlap = overlap
        self.misfire = misfire
        self.jitter = jitter
        self.exclude = exclude
        self.dst = dst
        #: The zone an interval or one-shot schedule's calendar reads instants in (the
        #: system's zone); a cron schedule's calendar reads them in the cron's zone.
        self.zone = zone
        #: Whether the overlap policy counts ticks in flight (asked once, here: a tick
        #: reads this flag).
        self.tracked = counts_in_flight(overlap)
        #: Only the overlap policy is set (the rest default): its ticks take the plain
        #: path, which asks the engine to admit them (``ScheduleRecord.fire``).
        self.overlap_only = (
            misfire.is_default and jitter is None and exclude is None and dst is None
        )
        self.nominal = 0.0
        #: The pacing deadline of a ``Misfire.all(rate=...)`` replay under way, or None.
        self.replay: Any = None

    def set_nominal(self, deadline: float) -> None:
        """Record an interval schedule's nominal deadline (the armed one adds jitter)."""
        self.nominal = deadline

    def set_replay(self, replay: Any) -> None:
        """Record (or, with None, forget) the replay under way."""
        self.replay = replay


def make_policy(
    overlap: object,
    misfire: object,
    jitter: float | None,
    exclude: Calendar | None,
    dst: DSTPolicy | None,
    zone: tzinfo,
) -> SchedulePolicy | None:
    """The checked policy of a new schedule, or ``None`` when every option is a default.

    Raises:
        ValueError: ``overlap`` or ``misfire`` is not a policy value (naming the option).
    """
    checked_overlap = Overlap.check(overlap, "overlap")
    checked_misfire = Misfire.check(misfire, "misfire")
    if (
        not needs_policy(checked_overlap, checked_misfire)
        and jitter is None
        and exclude is None
        and dst is None
    ):
        return None
    return SchedulePolicy(checked_overlap, checked_misfire, jitter, exclude, dst, zone)
