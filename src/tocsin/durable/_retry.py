# SPDX-License-Identifier: Apache-2.0
"""Retry policy of durable tasks and jobs: exponential backoff with jitter, then parking.

One value, :class:`Retry`, serves ``DurableActor.retry_policy``, ``@job(retry=...)`` and
stored schedules (DESIGN.md "Jobs"). It is checked when it is made: a ``RetryPolicy(base=-1)``
used to be accepted and retried a failing task in a hot loop.

Prior art: procrastinate's ``RetryStrategy`` (a frozen value with one method, ``retry_exceptions``
for the exceptions worth a retry), arq's ``retry_for`` idea.
"""

from __future__ import annotations

import math
import random
import sys
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Retry", "RetryDecision", "RetryPolicy"]


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """Run the task again ``delay`` seconds from now."""

    delay: float


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"`{what}` must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"`{what}` must be finite, got {value!r}")
    return number


def _exceptions(on: Any) -> tuple[type[BaseException], ...]:
    if isinstance(on, type):
        on = (on,)
    if not isinstance(on, tuple) or not on:
        raise ValueError(
            f"`on` must be a non-empty tuple of exception classes (e.g. (ConnectionError,)), "
            f"got {on!r}"
        )
    for cls in on:
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            raise ValueError(f"`on` must hold exception classes only, got {cls!r} in {on!r}")
    return on


def _exception_named(name: Any) -> type[BaseException]:
    module_name, _, qualname = name.partition(":") if isinstance(name, str) else ("", "", "")
    found: Any = sys.modules.get(module_name) if module_name and qualname else None
    for part in qualname.split(".") if found is not None else ():
        found = getattr(found, part, None)
    if not (isinstance(found, type) and issubclass(found, BaseException)):
        raise ValueError(
            f"stored Retry names {name!r} in `on`, which is no exception class of a module "
            "this process imported (import the module that defines it before loading)"
        )
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class Retry:
    """When a failed task or job runs again, and which failures are worth a retry.

    Before retry *k* (k >= 1, after the k-th failure) the delay is
    ``min(cap, base * factor ** (k - 1))`` seconds times a uniform random factor in
    ``[1 - jitter, 1]``: with the defaults about 1 s, 2 s, 4 s ... capped at 300 s, spread
    so that many tasks failing together do not retry in lock step. A failure that is not
    an instance of one of ``on`` is not retried: the task is parked at once. Past
    ``max_retries`` retries (the task's, or the job's) it is parked too.

    Every field is checked here, when the value is made, never at the first failure.

    Args:
        base: seconds before the first retry (> 0).
        factor: growth of the delay from one retry to the next (>= 1; 1: constant).
        cap: the largest delay in seconds (>= ``base``).
        jitter: share of the delay that is random, in ``[0, 1]`` (0: exact delays).
        on: the exception classes worth a retry (default: every ``Exception``).
        rng: random source (a seeded ``random.Random`` gives reproducible delays).

    Raises:
        ValueError: a non-positive or non-finite ``base``, ``factor`` below 1, ``cap``
            below ``base``, ``jitter`` outside ``[0, 1]``, an empty ``on`` or one holding
            something that is not an exception class.
    """

    base: float = 1.0
    factor: float = 2.0
    cap: float = 300.0
    jitter: float = 0.5
    on: tuple[type[BaseException], ...] = (Exception,)
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        base = _number(self.base, "base")
        if base <= 0:
            raise ValueError(f"`base` must be a positive number of seconds, got {self.base!r}")
        factor = _number(self.factor, "factor")
        if factor < 1:
            raise ValueError(f"`factor` must be at least 1, got {self.factor!r}")
        cap = _number(self.cap, "cap")
        if cap < base:
            raise ValueError(f"`cap` must be at least `base` ({base:g} s), got {self.cap!r}")
        jitter = _number(self.jitter, "jitter")
        if not 0 <= jitter <= 1:
            raise ValueError(f"`jitter` must be in [0, 1], got {self.jitter!r}")
        if not isinstance(self.rng, random.Random):
            raise ValueError(f"`rng` must be a random.Random, got {self.rng!r}")
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "factor", factor)
        object.__setattr__(self, "cap", cap)
        object.__setattr__(self, "jitter", jitter)
        object.__setattr__(self, "on", _exceptions(self.on))

    def to_wire(self) -> dict[str, Any]:
        """A codec-safe dict (stored schedules keep their retry this way): the numbers,
        and each class of ``on`` as ``"module:qualname"``. ``rng`` is not kept."""
        return {
            "base": self.base,
            "factor": self.factor,
            "cap": self.cap,
            "jitter": self.jitter,
            "on": [f"{cls.__module__}:{cls.__qualname__}" for cls in self.on],
        }

    @classmethod
    def from_wire(cls, value: Any) -> Retry:
        """The inverse of :meth:`to_wire`.

        An exception class is looked up only among modules this process has already
        imported: data read from a store never makes it import (or run) anything.

        Raises:
            ValueError: not a stored retry, or a class of ``on`` that is not an
                exception class of an imported module (the message names it).
        """
        if not isinstance(value, dict) or not isinstance(value.get("on"), (list, tuple)):
            raise ValueError(f"not a stored Retry: {value!r}")
        return cls(
            base=value.get("base", 1.0),
            factor=value.get("factor", 2.0),
            cap=value.get("cap", 300.0),
            jitter=value.get("jitter", 0.5),
            on=tuple(_exception_named(name) for name in value["on"]),
        )

    def backoff(self, attempts: int) -> float:
        """Delay in seconds before retry number ``attempts`` (>= 1)."""
        steps = max(0, attempts - 1)
        # Compared in log space: a task retried for years must not overflow the power.
        if self.factor > 1 and steps * math.log(self.factor) >= math.log(self.cap / self.base):
            raw = self.cap
        else:
            raw = min(self.cap, self.base * self.factor**steps)
        return raw * self.rng.uniform(1.0 - self.jitter, 1.0)

    def retries(self, exception: BaseException) -> bool:
        """Whether ``exception`` is worth a retry (an instance of one of ``on``)."""
        return isinstance(exception, self.on)

    def decide(
        self, exception: BaseException, attempts: int, max_retries: int
    ) -> RetryDecision | None:
        """The retry after failure number ``attempts``; ``None`` means park: the
        failure is not one of ``on``, or ``attempts`` failures used up ``max_retries``
        retries."""
        if attempts > max_retries or not isinstance(exception, self.on):
            return None
        return RetryDecision(self.backoff(attempts))


@dataclass(frozen=True, slots=True, init=False)
class RetryPolicy(Retry):
    """The former spelling of :class:`Retry` (positional arguments, ``jitter_min``).

    ``RetryPolicy(base, cap, jitter_min, rng)`` is ``Retry(base=base, cap=cap,
    jitter=1 - jitter_min, rng=rng)``, checked the same way; prefer :class:`Retry`.
    """

    def __init__(
        self,
        base: float = 1.0,
        cap: float = 300.0,
        jitter_min: float = 0.5,
        rng: random.Random | None = None,
    ) -> None:
        jitter = 1.0 - _number(jitter_min, "jitter_min")
        if not 0 <= jitter <= 1:
            raise ValueError(f"`jitter_min` must be in [0, 1], got {jitter_min!r}")
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "factor", 2.0)
        object.__setattr__(self, "cap", cap)
        object.__setattr__(self, "jitter", jitter)
        object.__setattr__(self, "on", (Exception,))
        object.__setattr__(self, "rng", random.Random() if rng is None else rng)
        self.__post_init__()

    @property
    def jitter_min(self) -> float:
        """The lower bound of the random scale factor (``1 - jitter``)."""
        return 1.0 - self.jitter
