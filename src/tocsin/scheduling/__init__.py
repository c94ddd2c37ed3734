# SPDX-License-Identifier: Apache-2.0
"""Scheduling: one-shot, repeating and cron messages on one shared deadline heap.

The calls live on :class:`~tocsin.ActorSystem` and :class:`~tocsin.ReceiveContext`;
this package exports the snapshot types they return.
"""

from ..actor._spi import ScheduleInfo, ScheduleKind, SchedulerMetrics

__all__ = ["ScheduleInfo", "ScheduleKind", "SchedulerMetrics"]
