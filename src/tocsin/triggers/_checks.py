# SPDX-License-Identifier: Apache-2.0
"""Checks of the options every scheduling call shares, raised at the call with a message
naming the option, what was given and what is allowed (STYLE rule 21)."""

from __future__ import annotations

from ..cron import Calendar, DSTPolicy

__all__ = ["check_dst", "check_exclude", "positive_int"]


def positive_int(value: object, option: str) -> int:
    """``value`` if it is an int >= 1 (not a bool), else ``ValueError`` naming ``option``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{option} must be an int >= 1, got {value!r}")
    return value


def check_exclude(value: object) -> Calendar | None:
    """``exclude`` if it is ``None`` or a :class:`~tocsin.Calendar`, else ``ValueError``."""
    if value is None or isinstance(value, Calendar):
        return value
    raise ValueError(
        f"`exclude` must be a Calendar (Calendar.dates(...), Calendar.weekly(...), "
        f"Calendar.daily(...), Calendar.cron(...), Calendar.holidays(...), combined with |) "
        f"or None, got {value!r}"
    )


def check_dst(value: object) -> DSTPolicy | None:
    """``dst`` if it is ``None`` or a :class:`~tocsin.DSTPolicy`, else ``ValueError``.

    The default policy (both ``"quartz"``) is returned as ``None``: the engine's plain path.
    """
    if value is None:
        return None
    if isinstance(value, DSTPolicy):
        return None if value.is_quartz else value
    raise ValueError(
        f"`dst` must be a DSTPolicy (e.g. DSTPolicy(gap='next', fold='first') or "
        f"DSTPolicy.never_skip()) or None, got {value!r}"
    )
