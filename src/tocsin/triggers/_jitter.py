# SPDX-License-Identifier: Apache-2.0
"""Jitter every node agrees on: an offset from a stable hash of (reference, instant).

:func:`jitter_offset` is pure (no clock, no randomness, no process state): the same
reference and nominal instant give the same offset in every process, on every node, in
every Python version, so a cluster spreads "everything at midnight" without breaking
single fire (claims keep the nominal instant as their key; only the delivery moves).

The hash is BLAKE2b (8-byte digest, the stdlib's :mod:`hashlib`) of the UTF-8 reference,
a NUL byte, and the instant as whole epoch microseconds in decimal; its top 53 bits are a
fraction ``u`` in ``[0, 1)`` (exactly representable as a float), and the offset is ``u``
times the window ``min(jitter, gap_to_next)``. Python's ``hash()`` is not used: it is
salted per process for strings.

Prior art: systemd's ``RandomizedDelaySec`` with ``FixedRandomDelay=`` (a per-timer
stable delay, hashed from the machine id and unit name), Jenkins' ``H`` in cron
triggers (a hash of the job name).
"""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime, timedelta
from typing import Final

from .._deadlines import to_seconds

__all__ = ["check_jitter", "jitter_delay", "jitter_offset"]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)
_SCALE: Final = 2.0**-53


def _seconds(value: float | timedelta, name: str) -> float:
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"`{name}` must be seconds (int, float) or a timedelta, got {value!r}")
    if not value >= 0 or (math.isinf(value) and name == "jitter"):  # NaN fails >= 0
        raise ValueError(f"`{name}` must be finite seconds >= 0, got {value!r}")
    return float(value)


def jitter_offset(
    reference: str,
    instant: datetime,
    jitter_seconds: float | timedelta,
    gap_to_next: float | timedelta | None,
) -> float:
    """The delay, in seconds, to add to the tick of ``reference`` due at ``instant``.

    Args:
        reference: the schedule's reference (its identity across nodes and restarts).
        instant: the nominal fire time (aware); equal instants in different zones give
            the same offset.
        jitter_seconds: the schedule's ``jitter`` (seconds or ``timedelta``, >= 0).
        gap_to_next: seconds from ``instant`` to the schedule's next instant, or
            ``None`` when there is none (then only ``jitter`` bounds the offset).

    Returns:
        A float in ``[0, min(jitter_seconds, gap_to_next))``, or ``0.0`` when that
        window is empty. Uniform over the window for distinct (reference, instant).

    Raises:
        ValueError: a negative or NaN jitter or gap, an infinite jitter, or a naive
            ``instant``.
        TypeError: a value of the wrong type.
    """
    if not isinstance(reference, str):
        raise TypeError(f"`reference` must be a str, got {type(reference).__name__}")
    if not isinstance(instant, datetime):
        raise TypeError(f"`instant` must be a datetime, got {type(instant).__name__}")
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"`instant` must be an aware datetime, got {instant.isoformat()}")
    window = _seconds(jitter_seconds, "jitter")
    if gap_to_next is not None:
        window = min(window, _seconds(gap_to_next, "gap_to_next"))
    if window <= 0.0:
        return 0.0
    micros = (instant - _EPOCH) // _MICROSECOND
    digest = hashlib.blake2b(
        reference.encode("utf-8", "surrogatepass") + b"\x00" + str(micros).encode("ascii"),
        digest_size=8,
    ).digest()
    fraction = (int.from_bytes(digest, "big") >> 11) * _SCALE  # [0, 1 - 2**-53]
    offset = fraction * window
    # The product can round up to the window itself; the bound is strict.
    return offset if offset < window else math.nextafter(window, 0.0)


def jitter_delay(key: str, instant: float, jitter: float, following: float | None) -> float:
    """The offset of ``instant`` (epoch seconds) under ``jitter`` for ``key``: a
    :func:`jitter_offset` capped at the gap to ``following`` (the schedule's next raw
    instant; ``None``: there is none, only ``jitter`` bounds it). Every trigger's
    delivery and the in-memory scheduler's armed ticks take it from here.

    An instant past the datetime range (a delay of millennia, which delays allow) gets
    no offset: it is never reached."""
    try:
        moment = datetime.fromtimestamp(instant, UTC)
    except (OverflowError, ValueError, OSError):
        return 0.0
    gap = None if following is None else max(0.0, following - instant)
    return jitter_offset(key, moment, jitter, gap)


def check_jitter(value: object, interval: float | None) -> float | None:
    """``jitter`` as seconds, or ``None`` for no jitter (checked at the scheduling call).

    ``None``, ``0`` and ``timedelta(0)`` mean no jitter. An interval schedule's jitter
    must be shorter than its interval (else two ticks could swap places); a cron
    schedule's is capped per tick at the gap to the next instant, never an error.

    Raises:
        InvalidIntervalError: not seconds (a bool, a string, NaN, inf, a negative number,
            or a positive one under 1 ms).
        ValueError: on an interval schedule, ``jitter >= interval``.
    """
    if value is None:
        return None
    if (type(value) is int and value == 0) or (type(value) is float and value == 0.0):
        return None
    if isinstance(value, timedelta) and value == timedelta(0):
        return None
    seconds = to_seconds(value, "jitter")
    if interval is not None and seconds >= interval:
        raise ValueError(
            f"`jitter` ({seconds:g} s) must be shorter than the schedule's interval "
            f"({interval:g} s): a tick is never delayed past the next one"
        )
    return seconds
