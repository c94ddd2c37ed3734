# SPDX-License-Identifier: Apache-2.0
"""The kernel's face for the layers above it (DESIGN.md "Layers"), as trio's ``_core``.

:mod:`tocsin.actor` is the face for users; this module is the one for tocsin's own upper
layers (scheduling, stores, durable, remote, cluster, the facade, the operators' view, the
CLI): they import kernel names from here and from no other ``actor._*`` module, so what
the kernel promises them is this ``__all__`` and nothing else. It only re-exports: the
objects are the kernel's own (a mutable registry such as ``ITEM_TYPES`` is the same set),
so no call gets slower for going through it.

What the names are for:

- PIDs and sending: ``PID``, ``NoSender``, ``parse_pid``, ``local_address``,
  ``new_incarnation``, ``SendTarget`` (what a PID sends to: a cell, a durable identity, a
  remote node; ``target_of(pid)`` reads it on cold paths), ``Reply`` (an ask's answer),
  ``PID_EXTENSION_CODE`` (a PID on the wire).
- Cells and the runtime: ``Cell`` and ``new_cell`` (a cell of a given ``mailbox_bound``;
  ``check_mailbox_bound`` validates one), ``Runtime`` (the shared services ``start()`` hands
  down), ``Turn`` and ``RuntimeItem`` / ``ITEM_TYPES`` / ``STALE`` (mailbox items that
  are not plain messages, and "drop it").
- Actors and supervision: ``Actor``, ``ReceiveContext``, ``Supervisor``, ``Directive``,
  ``DEFAULT_SUPERVISOR``.
- Events: ``EventStream``, ``DeadLetter``, ``DeadLetterReason``.
- Scheduling's seat in the kernel: ``ScheduleService``, ``SchedulingCalls``,
  ``ScheduleInfo``, ``ScheduleKind``, ``SchedulerMetrics``; the policy values every
  tier shares (``Overlap``, ``Misfire``, ``Tick``) and what became of an instant
  (``Outcome``, ``TickOutcome``, ``TickNotDelivered``).
- Introspection: ``ActorStat``, ``actor_stats``.
"""

from __future__ import annotations

from ..triggers import Misfire, Outcome, Overlap, Tick, TickOutcome
from ._actor import Actor
from ._cell import Cell, new_cell
from ._context import ReceiveContext, SystemView
from ._events import DeadLetter, DeadLetterReason, EventStream, TickNotDelivered
from ._lookup import PID_EXTENSION_CODE
from ._mailbox import ITEM_TYPES, STALE, RuntimeItem, Turn
from ._ops import ActorStat, actor_stats
from ._pid import PID, NoSender, local_address, new_incarnation, parse_pid, target_of
from ._reply import Reply
from ._runtime import Runtime, check_mailbox_bound, running_loop
from ._schedule_info import ScheduleInfo, ScheduleKind, SchedulerMetrics
from ._scheduling import ScheduleService, SchedulingCalls
from ._supervision import DEFAULT_SUPERVISOR, Directive, Supervisor
from ._target import SendTarget

__all__ = [
    "DEFAULT_SUPERVISOR",
    "ITEM_TYPES",
    "PID",
    "PID_EXTENSION_CODE",
    "STALE",
    "Actor",
    "ActorStat",
    "Cell",
    "DeadLetter",
    "DeadLetterReason",
    "Directive",
    "EventStream",
    "Misfire",
    "NoSender",
    "Outcome",
    "Overlap",
    "ReceiveContext",
    "Reply",
    "Runtime",
    "RuntimeItem",
    "ScheduleInfo",
    "ScheduleKind",
    "ScheduleService",
    "SchedulerMetrics",
    "SchedulingCalls",
    "SendTarget",
    "Supervisor",
    "SystemView",
    "Tick",
    "TickNotDelivered",
    "TickOutcome",
    "Turn",
    "actor_stats",
    "check_mailbox_bound",
    "local_address",
    "new_cell",
    "new_incarnation",
    "parse_pid",
    "running_loop",
    "target_of",
]
