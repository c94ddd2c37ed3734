# SPDX-License-Identifier: Apache-2.0
"""Epoch seconds as aware UTC datetimes, for every snapshot and tick (a leaf module)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

__all__ = ["utc"]

_MAX_UTC: Final = datetime.max.replace(tzinfo=UTC)
_MIN_UTC: Final = datetime.min.replace(tzinfo=UTC)


def utc(epoch: float) -> datetime:
    """``epoch`` as an aware UTC datetime, clamped to the datetime range.

    Delays have no upper bound beyond being finite, so a fire time may lie past year 9999.
    """
    try:
        return datetime.fromtimestamp(epoch, tz=UTC)
    except (OverflowError, ValueError, OSError):
        return _MAX_UTC if epoch > 0 else _MIN_UTC
