# SPDX-License-Identifier: Apache-2.0
"""Checks of the options every scheduling call shares, raised at the call with a message
naming the option, what was given and what is allowed (STYLE rule 21)."""

from __future__ import annotations

from typing import Final

from ..cron import Calendar, DSTPolicy

__all__ = ["MAX_NOTE_BYTES", "check_dst", "check_exclude", "check_note", "positive_int"]

#: The longest pause note, in UTF-8 bytes: a note says why for whoever looks later (it is
#: shown in every listing, stored with the schedule or on the coordinator, and copied into
#: the history of every instant it holds back), not a document.
MAX_NOTE_BYTES: Final = 4096


def check_note(note: object) -> str | None:
    """``note`` if it is ``None`` or a str of at most :data:`MAX_NOTE_BYTES` UTF-8 bytes.

    Raises:
        TypeError: not a str or None.
        ValueError: longer than :data:`MAX_NOTE_BYTES` (naming its size).
    """
    if note is None:
        return None
    if not isinstance(note, str):
        raise TypeError(f"`note` must be a str or None, got {note!r}")
    size = len(note.encode("utf-8", "surrogatepass"))
    if size > MAX_NOTE_BYTES:
        raise ValueError(
            f"`note` must be at most {MAX_NOTE_BYTES:,} bytes (UTF-8), got {size:,}: say why "
            "in a line or two and link the rest"
        )
    return note


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
