# SPDX-License-Identifier: Apache-2.0
"""The one validator of durations: schedules, delays, ask timeouts, supervisor windows,
passivation and durable task budgets all go through :func:`to_seconds`, so every bad
duration raises the same :class:`~tocsin.InvalidIntervalError` (a ``ValueError``)."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from ..errors import InvalidIntervalError

__all__ = ["MIN_SECONDS", "Seconds", "to_seconds"]

#: The shortest duration accepted anywhere (1 ms). Shorter ones meant nothing and broke
#: things: ``schedule(..., 5e-324)`` added nothing to its deadline (float absorption), so
#: the timer re-armed at the same instant and a ManualClock's ``advance`` never returned;
#: durable ``every(1e-7)`` ran ~34,000 times a second (issue 10, item 7).
MIN_SECONDS = 0.001

#: A duration as the public API accepts it: seconds (int or float) or a timedelta.
Seconds = float | int | timedelta

_INF = math.inf


def to_seconds(value: Any, name: str) -> float:
    """``value`` as positive finite seconds, or :class:`InvalidIntervalError` naming ``name``.

    Accepts ``int``/``float`` and ``datetime.timedelta`` of at least :data:`MIN_SECONDS`;
    rejects shorter ones, 0, negatives, NaN, infinities, ``bool``, strings and ``None``.
    """
    if type(value) is float and MIN_SECONDS <= value < _INF:
        return value  # the common case, checked in one comparison chain (NaN fails it)
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidIntervalError(
            f"`{name}` must be a positive finite number of seconds or a timedelta, "
            f"got {value!r} ({type(value).__name__})"
        )
    else:
        try:
            seconds = float(value)
        except OverflowError:
            raise InvalidIntervalError(
                f"`{name}` must be a positive finite number of seconds, got {value!r} (too large)"
            ) from None
    if not (seconds > 0 and math.isfinite(seconds)):
        nan = " (NaN)" if seconds != seconds else ""
        raise InvalidIntervalError(
            f"`{name}` must be a positive finite number of seconds, got {value!r}{nan}"
        )
    if seconds < MIN_SECONDS:
        raise InvalidIntervalError(
            f"`{name}` must be at least {MIN_SECONDS} seconds (1 ms), got {value!r}"
        )
    return seconds
