# SPDX-License-Identifier: Apache-2.0
"""Test helpers for code built on tocsin (trio.testing, structlog's ``capture_logs``).

* :class:`ManualClock`: time that moves only when the test says so.
* :class:`MemoryStore`: an in-memory durable store, with ``reset()``.
* :func:`capture_events`: record the events a system publishes while a block runs.
* :class:`SystemMonitor`, :class:`Crash`: record a test's crashes and dead letters and fail
  on those it did not declare.
* :class:`Simulation`: a whole cluster in one process on one clock under faults drawn
  from a seed (:class:`Faults`), with a record of deliveries and durable writes
  (:class:`Delivery`, :class:`Write`, :class:`Ack`) and ``check()`` for the invariants
  (:class:`~tocsin.errors.SimulationViolation`); :func:`record_tick` and
  :func:`record_ack` put your own application's in the record.

The pytest plugin (``tocsin.testing._plugin``, registered through the ``pytest11`` entry
point, so installing tocsin is enough) builds on these: fixtures ``tocsin_clock``,
``tocsin_system`` and ``tocsin_monitor``, and plain ``async def`` tests. See
``docs/testing.md``. This package never imports pytest; only the plugin module does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..clock import ManualClock
from ..errors import SimulationViolation
from ..stores import MemoryStore
from ..system import ActorSystem
from ._monitor import Crash, SystemMonitor
from ._sim_values import Ack, Delivery, Fault, FaultKind, Faults, Write
from ._sim_workload import record_ack, record_tick
from ._simulation import Simulation

__all__ = [
    "Ack",
    "Crash",
    "Delivery",
    "Fault",
    "FaultKind",
    "Faults",
    "ManualClock",
    "MemoryStore",
    "Simulation",
    "SimulationViolation",
    "SystemMonitor",
    "Write",
    "capture_events",
    "record_ack",
    "record_tick",
]


@contextmanager
def capture_events(system: ActorSystem, *event_types: type) -> Iterator[list[Any]]:
    """Collect the events of ``event_types`` (all when none given) published in the block.

    Example::

        with capture_events(system, DeadLetter) as letters:
            pid.tell("late")
        assert letters[0].reason is DeadLetterReason.STOPPED
    """
    events: list[Any] = []
    subscription = system.events.subscribe(events.append, *event_types)
    try:
        yield events
    finally:
        subscription.cancel()
