# SPDX-License-Identifier: Apache-2.0
"""Schedules as data (``system.schedules``): stored, versioned, fired once cluster-wide
whatever their kind, one ledger (DESIGN.md "Schedules as data").

:class:`Schedule` with an :class:`Interval`, :class:`Cron` or :class:`Once` trigger and a
job or :class:`Durable` target; :class:`StoredSchedule` is what the store answers;
:class:`Delivery` the two delivery modes. The layer sits above ``cluster/`` (it claims
through the cluster's cron claims) and below the facade.
"""

from __future__ import annotations

from ._service import Schedules, Upserted
from ._values import Cron, Delivery, Durable, Interval, Once, Schedule, StoredSchedule

__all__ = [
    "Cron",
    "Delivery",
    "Durable",
    "Interval",
    "Once",
    "Schedule",
    "Schedules",
    "StoredSchedule",
    "Upserted",
]

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("tocsin.schedules."):
        _obj.__module__ = __name__
del _name, _obj
