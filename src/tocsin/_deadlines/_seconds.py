# SPDX-License-Identifier: Apache-2.0
"""The one validator of durations: schedules, delays, ask timeouts, supervisor windows,
passivation and durable task budgets all go through :func:`to_seconds`, so every bad
duration raises the same :class:`~tocsin.InvalidIntervalError` (a ``ValueError``)."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from ..errors import InvalidIntervalError

__all__ = ["Seconds", "to_seconds"]

#: A duration as the public API accepts it: seconds (int or float) or a timedelta.
Seconds = float | int | timedelta

_INF = math.inf


def to_seconds(value: Any, name: str) -> float:
    """``value`` as positive finite seconds, or :class:`InvalidIntervalError` naming ``name``.

    Accepts ``int``/``float`` and ``datetime.timedelta``; rejects 0, negatives, NaN,
    infinities, ``bool``, strings and ``None``.
    """
    if type(value) is float and 0.0 < value < _INF:
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
        raise InvalidIntervalError(
            f"`{name}` must be a positive finite number of seconds, got {value!r}"
        )
    return seconds
