# SPDX-License-Identifier: Apache-2.0
"""The schedule policies of one durable task, as the user chose them (checked at the call).

A task row's ``policy`` column holds ``_plan.encode_policy`` bytes (the codec's msgpack,
never pickle): ``{"p": <TaskPolicy wire>, "c": <Cursor wire>}``. ``None`` there (every row
written before policies existed, and every task that passes no option) is the defaults,
today's behaviour, and never enters :mod:`._plan`: the drain's plain path is unchanged.

:class:`TaskPolicy` is what the user chose (checked at the call, ``ValueError`` naming
the option); :class:`Cursor` is what the planner must remember between runs, because a
task row has a single ``due``: the nominal instant of the pending run (jitter and pacing
move ``due`` away from it), the instants waiting behind a run (``Overlap.limit(n)``) or
being replayed (``Misfire.all``), and the horizon below which instants were dealt with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..cron import Calendar, DSTPolicy
from ..triggers import Misfire, Overlap, needs_policy

__all__ = ["TaskPolicy", "check_policy"]


@dataclass(frozen=True, slots=True)
class TaskPolicy:
    """The policies of one durable task (DESIGN.md "Schedule policies").

    Attributes:
        overlap: instants that come due while a run of the task is in flight (default
            ``Overlap.BUFFER_ONE``).
        misfire: instants missed while the system was down or the identity passivated
            (default ``Misfire.once()``).
        dst: cron only: wall times daylight saving skips or repeats (``None``: Quartz's).
        jitter: seconds added to each instant, from a hash of (task id, instant); 0: none.
        exclude: instants on which the task does not run.
    """

    overlap: Overlap = Overlap.BUFFER_ONE
    misfire: Misfire = Misfire.ONCE
    dst: DSTPolicy | None = None
    jitter: float = 0.0
    exclude: Calendar | None = None

    @property
    def is_default(self) -> bool:
        """Whether this is what a task without options does (stored as ``None``)."""
        return (
            not needs_policy(self.overlap, self.misfire, Overlap.BUFFER_ONE)
            and (self.dst is None or self.dst.is_quartz)
            and self.jitter == 0.0
            and self.exclude is None
        )

    def to_wire(self) -> dict[str, Any]:
        return {
            "overlap": self.overlap.to_wire(),
            "misfire": self.misfire.to_wire(),
            "dst": None if self.dst is None or self.dst.is_quartz else self.dst.to_wire(),
            "jitter": self.jitter,
            "exclude": None if self.exclude is None else self.exclude.to_wire(),
        }

    @classmethod
    def from_wire(cls, value: Any) -> TaskPolicy:
        if not isinstance(value, dict):
            raise ValueError(f"not a stored task policy: {value!r}")
        dst, exclude = value.get("dst"), value.get("exclude")
        return cls(
            overlap=Overlap.from_wire(value.get("overlap", "buffer_one")),
            misfire=Misfire.from_wire(value.get("misfire", Misfire.ONCE.to_wire())),
            dst=None if dst is None else DSTPolicy.from_wire(dst),
            jitter=float(value.get("jitter", 0.0)),
            exclude=None if exclude is None else Calendar.from_wire(exclude),
        )


def _jitter_seconds(value: object, interval: float | None) -> float:
    if value is None:
        return 0.0
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"`jitter` must be seconds (int, float) or a timedelta, got {value!r}")
    else:
        seconds = float(value)
    if not (seconds >= 0 and math.isfinite(seconds)):
        raise ValueError(f"`jitter` must be finite seconds >= 0, got {value!r}")
    if interval is not None and seconds and seconds >= interval:
        raise ValueError(
            f"`jitter` ({seconds:g} s) must be shorter than the interval ({interval:g} s) "
            "of an `every` task"
        )
    return seconds


def check_policy(
    *,
    overlap: object = Overlap.BUFFER_ONE,
    misfire: object = Misfire.ONCE,
    dst: object = None,
    jitter: object = None,
    exclude: object = None,
    interval: float | None = None,
) -> TaskPolicy | None:
    """The policy the call's options give, ``None`` for the defaults.

    Raises:
        ValueError: an option of the wrong kind (the message names it and what is
            allowed), or an ``every`` task's jitter not shorter than its interval.
    """
    if (
        not needs_policy(overlap, misfire, Overlap.BUFFER_ONE)
        and dst is None
        and jitter is None
        and exclude is None
    ):
        # The defaults (every call that passes no option): nothing to check or build.
        return None
    checked_overlap = Overlap.check(overlap)
    checked_misfire = Misfire.check(misfire)
    if dst is not None and not isinstance(dst, DSTPolicy):
        raise ValueError(
            f"`dst` must be a DSTPolicy (e.g. DSTPolicy(gap='next', fold='first')) or None, "
            f"got {dst!r}"
        )
    if exclude is not None and not isinstance(exclude, Calendar):
        raise ValueError(
            f"`exclude` must be a Calendar (Calendar.dates(...), .weekly(...), .daily(...), "
            f".cron(...), .holidays(...), combined with |) or None, got {exclude!r}"
        )
    policy = TaskPolicy(
        overlap=checked_overlap,
        misfire=checked_misfire,
        dst=dst,
        jitter=_jitter_seconds(jitter, interval),
        exclude=exclude,
    )
    return None if policy.is_default else policy
