# SPDX-License-Identifier: Apache-2.0
"""The values of stored schedules: triggers (:class:`Interval`, :class:`Cron`,
:class:`Once`), the durable target (:class:`Durable`), :class:`Schedule` and what the
store answers (:class:`StoredSchedule`).

All are frozen, slotted and checked at construction: a bad value is a typed error at the
line that wrote it (DESIGN.md "Schedules as data", "Precisions for stored schedules and
jobs"). Each has a codec-safe wire form (:mod:`._spec`), so a schedule is data: stored,
compared field by field at an upsert, and read back equal on every node.

Prior art: APScheduler 4's ``IntervalTrigger``/``CronTrigger``/``DateTrigger`` and
``add_schedule(id=..., conflict_policy=...)``, Temporal's ``ScheduleSpec`` and
``ScheduleAction``, DBOS ``apply_schedules``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, final

from .._codec import encode
from .._deadlines import to_seconds
from ..actor import Misfire, Overlap
from ..cron import Calendar
from ..jobs import resolve
from ._instants import check_has_instant
from ._triggers import Cron, Delivery, Interval, Once, Trigger

if TYPE_CHECKING:
    from ..durable import DurableActor

__all__ = [
    "CHECKING",
    "DEFAULT_HISTORY",
    "Cron",
    "Delivery",
    "Durable",
    "Interval",
    "Once",
    "Schedule",
    "StoredSchedule",
    "Trigger",
    "trusted",
]

#: Ledger rows each stored schedule keeps by default (``Schedule(history=...)``).
DEFAULT_HISTORY: Final = 256
#: Most ledger rows one schedule may keep.
MAX_HISTORY: Final = 65_536

#: False while a stored spec is decoded: the 10-year check ran when it was stored, and a
#: schedule whose calendar has since run out must still read back (to be listed, removed).
CHECKING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "tocsin_schedule_check", default=True
)


@contextmanager
def trusted() -> Iterator[None]:
    """Construct schedules without the 10-year instant check (stored specs)."""
    token = CHECKING.set(False)
    try:
        yield
    finally:
        CHECKING.reset(token)


@final
@dataclass(frozen=True, slots=True)
class Durable:
    """A durable identity's method as a schedule's target, called as a durable task is:
    ``method(payload)`` in the identity's turn, wherever it is activated, at least once.

    Args:
        kind: the :class:`~tocsin.DurableActor` subclass, or its ``kind`` name.
        identity: the identity (a non-empty str).
        method: the method's name (a non-empty str).
        payload: a codec-safe value handed to the method.

    Raises:
        TypeError: ``kind`` is neither a DurableActor subclass nor a str.
        ValueError: an empty ``identity`` or ``method``.
        CodecError: ``payload`` is not codec-safe.
    """

    kind: str
    identity: str
    method: str
    payload: Any = None

    def __init__(
        self, kind: type[DurableActor] | str, identity: str, method: str, payload: Any = None
    ) -> None:
        name = kind if isinstance(kind, str) else getattr(kind, "kind", None)
        if not isinstance(name, str) or not name:
            raise TypeError(
                f"`kind` must be a DurableActor subclass or its kind name, got {kind!r}"
            )
        for option, value in (("identity", identity), ("method", method)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"`{option}` must be a non-empty str, got {value!r}")
        encode(payload)  # CodecError now, never at the first fire
        object.__setattr__(self, "kind", name)
        object.__setattr__(self, "identity", identity)
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "payload", payload)


def _job_name(target: object) -> str:
    """A job target's stable name: a ``@job`` function's registered name, or a name as
    given (registered by a module this process may not have imported)."""
    if isinstance(target, str):
        if not target:
            raise ValueError("`target` must name a job, got ''")
        return target
    if callable(target):
        return resolve(target).name
    raise TypeError(
        f"`target` must be a job (a function registered with @job, or its name) or "
        f"Durable(Kind, identity, method), got {target!r}"
    )


@final
@dataclass(frozen=True, slots=True)
class Schedule:
    """A stored schedule's spec: when (``trigger``), what (``target``) and how (the
    policies). Compared field by field when ``ActorSystem(schedules=[...])`` upserts it.

    Args:
        id: the schedule's stable name (non-empty, no ``@``): its key in the store and
            ``Tick.reference`` of its ticks.
        trigger: :class:`Interval`, :class:`Cron` or :class:`Once`.
        target: a job (a function registered with ``@job``, or its name) or a
            :class:`Durable` target.
        args, kwargs: a job target's arguments (codec-safe); ``ValueError`` with a
            :class:`Durable` target (its ``payload`` is its argument).
        overlap: default ``Overlap.BUFFER_ONE``: runs of a stored schedule never overlap.
        misfire: default ``Misfire.once()``.
        jitter: seconds in ``[0, jitter)`` added to each instant, the same on every node.
        exclude: a :class:`~tocsin.Calendar` of instants not delivered (``excluded``).
        delivery: :class:`Delivery` (or its string).
        history: ledger rows kept (1 to 65,536, default 256).
        enabled: ``False`` stores the schedule without firing it.

    Raises:
        ValueError: a bad option (named), args with a Durable target, or a calendar or
            policy that leaves no instant in the next 10 years.
        CodecError: arguments that are not codec-safe.
    """

    id: str
    trigger: Trigger
    target: str | Durable | Callable[..., Awaitable[Any]]
    args: tuple[Any, ...] = field(default=(), kw_only=True)
    kwargs: dict[str, Any] | None = field(default=None, kw_only=True)
    overlap: Overlap = field(default=Overlap.BUFFER_ONE, kw_only=True)
    misfire: Misfire = field(default=Misfire.ONCE, kw_only=True)
    jitter: float | None = field(default=None, kw_only=True)
    exclude: Calendar | None = field(default=None, kw_only=True)
    delivery: Delivery | str = field(default=Delivery.AT_MOST_ONCE, kw_only=True)
    history: int = field(default=DEFAULT_HISTORY, kw_only=True)
    enabled: bool = field(default=True, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id or "@" in self.id:
            raise ValueError(f"`id` must be a non-empty str without '@', got {self.id!r}")
        if not isinstance(self.trigger, (Interval, Cron, Once)):
            raise TypeError(f"`trigger` must be Interval, Cron or Once, got {self.trigger!r}")
        set_ = object.__setattr__
        if not isinstance(self.target, Durable):
            set_(self, "target", _job_name(self.target))
        elif self.args or self.kwargs:
            raise ValueError(
                f"`args`/`kwargs` belong to job targets; a Durable target takes its "
                f"argument as `payload`, got args={self.args!r}, kwargs={self.kwargs!r}"
            )
        if not isinstance(self.args, (tuple, list)):
            raise TypeError(f"`args` must be a tuple, got {self.args!r}")
        set_(self, "args", tuple(self.args))
        if self.kwargs is not None and not isinstance(self.kwargs, dict):
            raise TypeError(f"`kwargs` must be a dict or None, got {self.kwargs!r}")
        encode([list(self.args), self.kwargs], name="args")
        Overlap.check(self.overlap)
        Misfire.check(self.misfire)
        if self.jitter is not None:
            jitter = to_seconds(self.jitter, "jitter")
            if isinstance(self.trigger, Interval) and jitter >= self.trigger.seconds:
                raise ValueError(
                    f"`jitter` must be shorter than the interval ({self.trigger.seconds:g} s), "
                    f"got {jitter:g}"
                )
            set_(self, "jitter", jitter)
        if self.exclude is not None and not isinstance(self.exclude, Calendar):
            raise ValueError(f"`exclude` must be a tocsin.Calendar or None, got {self.exclude!r}")
        try:
            set_(self, "delivery", Delivery(self.delivery))
        except ValueError:
            raise ValueError(
                f"`delivery` must be Delivery.AT_MOST_ONCE or Delivery.AT_LEAST_ONCE, "
                f"got {self.delivery!r}"
            ) from None
        if isinstance(self.history, bool) or not isinstance(self.history, int):
            raise ValueError(
                f"`history` must be an int from 1 to {MAX_HISTORY}, got {self.history!r}"
            )
        if not 1 <= self.history <= MAX_HISTORY:
            raise ValueError(
                f"`history` must be an int from 1 to {MAX_HISTORY}, got {self.history!r}"
            )
        if not isinstance(self.enabled, bool):
            raise TypeError(f"`enabled` must be a bool, got {self.enabled!r}")
        if CHECKING.get():
            check_has_instant(self)

    def __hash__(self) -> int:
        return hash((self.id, self.trigger, self.target))


@final
@dataclass(frozen=True, slots=True)
class StoredSchedule:
    """A stored schedule as ``system.schedules.get/list`` read it (a snapshot; no public
    constructor use: the store makes them).

    Attributes:
        spec: the :class:`Schedule` (an :class:`Interval` carries its stored anchor, a
            :class:`Once` its absolute ``at``).
        id: ``spec.id``.
        version: bumped by every change of the spec (1 when added), never by pause or
            resume.
        paused, note, paused_by, paused_at: the pause state (operational, kept across
            upserts, restarts and deploys).
        next_fire_at: the next instant that will be delivered (calendar, DST policy and
            jitter applied; ``None`` while paused or when there is none).
        last_outcome: the ledger's newest row's outcome, or ``None``.
        created_at, updated_at: aware UTC.
    """

    spec: Schedule
    id: str
    version: int
    paused: bool
    note: str | None
    paused_by: str | None
    paused_at: datetime | None
    next_fire_at: datetime | None
    last_outcome: str | None
    created_at: datetime
    updated_at: datetime
