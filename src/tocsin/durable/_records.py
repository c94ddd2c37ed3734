# SPDX-License-Identifier: Apache-2.0
"""What users see of durable tasks: :class:`TaskRecord`, :class:`TaskParked`, :class:`Call`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from .._codec import Extension, decode
from ..errors import CodecError

if TYPE_CHECKING:
    from ..actor._spi import PID
    from ..stores import TaskRow

__all__ = [
    "CALL_EXTENSION",
    "CALL_EXTENSION_CODE",
    "Call",
    "TaskParked",
    "TaskRecord",
    "TaskState",
    "record_from_row",
    "running_record",
]

TaskState = Literal["pending", "running", "parked"]


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """A snapshot of one persistent task of a durable actor.

    Attributes:
        id: unique within its actor (generated, or the stable ``id`` given).
        name: the method it calls (``self.<name>(payload)``).
        payload: the decoded payload.
        due: when it next runs (aware UTC); for a parked task, when it last failed.
        every: the interval in seconds of a recurring task, else ``None``.
        attempts: failed runs since the last success.
        max_retries: retries allowed after the first run before it is parked.
        created_at: when it was first scheduled (aware UTC).
        state: ``pending``, ``running`` (its method is running now) or ``parked``.
        last_error: the last failure, if any: its type and text on the first line, then
            its innermost traceback frames (at most 4 KiB in all).
        kind, identity: the durable actor it belongs to.
        cron: the cron expression of a cron task, else ``None``.
        timezone: the IANA zone its cron expression is evaluated in, else ``None``.
        paused: whether it is paused (``pause_schedule``): its instants pass without a
            run; ``note``, ``paused_at`` (aware UTC) and ``paused_by`` (the system
            that paused it) say why, when and who (``None`` while not paused).
    """

    id: str
    name: str
    payload: Any
    due: datetime
    every: float | None
    attempts: int
    max_retries: int
    created_at: datetime
    state: TaskState = "pending"
    last_error: str | None = None
    kind: str = ""
    identity: str = ""
    cron: str | None = None
    timezone: str | None = None
    paused: bool = False
    note: str | None = None
    paused_at: datetime | None = None
    paused_by: str | None = None


def record_from_row(row: TaskRow, *, running: bool = False) -> TaskRecord:
    """Decode a stored row into a :class:`TaskRecord`."""
    return TaskRecord(
        id=row.id,
        name=row.name,
        payload=decode(row.payload),
        due=datetime.fromtimestamp(row.due, tz=UTC),
        every=row.every,
        attempts=row.attempts,
        max_retries=row.max_retries,
        created_at=datetime.fromtimestamp(row.created_at, tz=UTC),
        state="running" if running else row.state,
        last_error=row.last_error,
        kind=row.kind,
        identity=row.identity,
        cron=row.cron,
        timezone=row.timezone,
        paused=row.paused_at is not None,
        note=row.pause_note,
        paused_at=None if row.paused_at is None else datetime.fromtimestamp(row.paused_at, UTC),
        paused_by=row.paused_by,
    )


def running_record(row: TaskRow, payload: Any) -> TaskRecord:
    """The task being run, as ``ctx.message`` shows it (payload already decoded)."""
    return TaskRecord(
        id=row.id,
        name=row.name,
        payload=payload,
        due=datetime.fromtimestamp(row.due, tz=UTC),
        every=row.every,
        attempts=row.attempts,
        max_retries=row.max_retries,
        created_at=datetime.fromtimestamp(row.created_at, tz=UTC),
        state="running",
        last_error=row.last_error,
        kind=row.kind,
        identity=row.identity,
    )


@dataclass(frozen=True, slots=True)
class TaskParked:
    """Event: a task failed ``max_retries + 1`` times and was parked (it will not run again
    unless ``retry_parked`` is called)."""

    pid: PID
    task: TaskRecord
    error: BaseException


@dataclass(frozen=True, slots=True)
class Call:
    """A message asking a durable actor to run ``method(payload)`` and reply with its result.

    Methods whose name starts with ``_`` are not callable by messages (the ask fails with
    ``PermissionError``); they remain schedulable as tasks.
    """

    method: str
    payload: Any = None


#: The codec extension code of a :class:`Call`.
CALL_EXTENSION_CODE = 17


def _call_to_wire(call: Call) -> object:
    return [call.method, call.payload]


def _call_from_wire(value: object) -> Call:
    if type(value) is not list or len(value) != 2 or type(value[0]) is not str:
        raise CodecError("cannot decode a Call: expected [method: str, payload]")
    return Call(value[0], value[1])


#: How a :class:`Call` crosses the wire: ``[method, payload]`` (the payload encoded by
#: the same codec). Add it to a :class:`~tocsin._codec.Codec`.
CALL_EXTENSION = Extension(CALL_EXTENSION_CODE, Call, _call_to_wire, _call_from_wire)
