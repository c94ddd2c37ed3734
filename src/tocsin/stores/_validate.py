# SPDX-License-Identifier: Apache-2.0
"""One validation pass shared by every store, run on a whole batch before any write.

Why here and not in the databases: the stores must reject the same batches for the same
reasons (the contract suite checks it), and a refusal must come before the first write so
that even the in-memory store is atomic without an undo log. PostgreSQL refuses NUL in
``text`` and SQLite turns NaN into NULL; rejecting both up front keeps the three stores
identical.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from ..errors import StoreError
from ._protocols import (
    DeleteHistory,
    DeleteState,
    DeleteTask,
    Fence,
    Op,
    PauseTask,
    PutState,
    RecordTick,
    TaskRow,
    UpsertTask,
)

__all__ = ["TASK_STATES", "validate_ops"]

TASK_STATES: Final = ("pending", "running", "parked")
_INT32_MAX: Final = 2**31 - 1


def validate_ops(ops: Sequence[Op]) -> None:
    """Check every op of a batch; raise before anything is written.

    Raises:
        StoreError: an op is not one of the four op types, or a field has the wrong type
            or an impossible value; the message names ``ops[i]`` and the field.
    """
    for i, op in enumerate(ops):
        if _plainly_valid(op):
            continue  # the common case: no message text is built for a valid op
        where = f"ops[{i}]"
        if isinstance(op, UpsertTask):
            _row(op.row, f"{where}.row")
        elif isinstance(op, PutState):
            _keys(where, op.kind, op.identity, ("key", op.key))
            if type(op.value) is not bytes:
                raise StoreError(f"{where}.value must be bytes, got {type(op.value)!r}")
        elif isinstance(op, DeleteState):
            _keys(where, op.kind, op.identity, ("key", op.key))
        elif isinstance(op, DeleteTask):
            _keys(where, op.kind, op.identity, ("id", op.id))
        elif isinstance(op, RecordTick):
            _keys(where, op.kind, op.identity, ("id", op.id))
            _time(f"{where}.instant", op.instant)
            _time(f"{where}.at", op.at)
            _text(f"{where}.outcome", op.outcome)
            _text(f"{where}.node", op.node)
            if op.detail is not None:
                _text(f"{where}.detail", op.detail)
        elif isinstance(op, DeleteHistory):
            _keys(where, op.kind, op.identity, ("id", op.id))
        elif isinstance(op, PauseTask):
            _keys(where, op.kind, op.identity, ("id", op.id))
            _pause(where, op.paused_at, op.note, op.by)
        elif isinstance(op, Fence):
            _text(f"{where}.kind", op.kind)
            _text(f"{where}.identity", op.identity)
            if type(op.epoch) is not int or not 1 <= op.epoch <= 2**63 - 1:
                raise StoreError(f"{where}.epoch must be an int in [1, 2**63-1], got {op.epoch!r}")
            if type(op.owner) is not str or "\x00" in op.owner:
                raise StoreError(f"{where}.owner must be a str without NUL, got {op.owner!r}")
        else:
            raise StoreError(
                f"{where} must be PutState, DeleteState, UpsertTask, DeleteTask, Fence, "
                "RecordTick, DeleteHistory or PauseTask, "
                f"got {type(op)!r}"
            )


def _ok_text(value: object) -> bool:
    return type(value) is str and "\x00" not in value


def _ok_time(value: object) -> bool:
    return (type(value) is float or type(value) is int) and math.isfinite(value)


def _plainly_valid(op: object) -> bool:
    """A fast yes for a well-formed op; ``False`` sends it to the checks that explain why."""
    cls = type(op)
    if cls is UpsertTask:
        row = op.row  # type: ignore[attr-defined]
        return (
            type(row) is TaskRow
            and _ok_text(row.kind)
            and _ok_text(row.identity)
            and _ok_text(row.id)
            and _ok_text(row.name)
            and type(row.payload) is bytes
            and _ok_time(row.due)
            and _ok_time(row.created_at)
            and (row.every is None or (_ok_time(row.every) and row.every > 0))
            and (row.timeout is None or (_ok_time(row.timeout) and row.timeout > 0))
            and type(row.attempts) is int
            and 0 <= row.attempts <= _INT32_MAX
            and type(row.max_retries) is int
            and 0 <= row.max_retries <= _INT32_MAX
            and row.state in TASK_STATES
            and (row.last_error is None or _ok_text(row.last_error))
            and (row.cron is None or _ok_text(row.cron))
            and (row.timezone is None or _ok_text(row.timezone))
            and (row.policy is None or type(row.policy) is bytes)
            and row.paused_at is None
        )
    if cls is PutState:
        return (
            _ok_text(op.kind)  # type: ignore[attr-defined]
            and _ok_text(op.identity)  # type: ignore[attr-defined]
            and _ok_text(op.key)  # type: ignore[attr-defined]
            and type(op.value) is bytes  # type: ignore[attr-defined]
        )
    if cls is DeleteState:
        return _ok_text(op.kind) and _ok_text(op.identity) and _ok_text(op.key)  # type: ignore[attr-defined]
    if cls is DeleteTask:
        return _ok_text(op.kind) and _ok_text(op.identity) and _ok_text(op.id)  # type: ignore[attr-defined]
    return False


def _keys(where: str, kind: object, identity: object, last: tuple[str, object]) -> None:
    for name, value in (("kind", kind), ("identity", identity), last):
        _text(f"{where}.{name}", value)


def _text(where: str, value: object) -> None:
    if type(value) is not str:
        raise StoreError(f"{where} must be a str, got {type(value)!r}")
    if "\x00" in value:
        raise StoreError(f"{where} must not contain NUL characters, got {value!r}")


def _row(row: object, where: str) -> None:
    if not isinstance(row, TaskRow):
        raise StoreError(f"{where} must be a TaskRow, got {type(row)!r}")
    _keys(where, row.kind, row.identity, ("id", row.id))
    _text(f"{where}.name", row.name)
    if type(row.payload) is not bytes:
        raise StoreError(f"{where}.payload must be bytes, got {type(row.payload)!r}")
    _time(f"{where}.due", row.due)
    _time(f"{where}.created_at", row.created_at)
    for name, value in (("every", row.every), ("timeout", row.timeout)):
        if value is not None:
            _time(f"{where}.{name}", value)
            if value <= 0:
                raise StoreError(f"{where}.{name} must be > 0 or None, got {value!r}")
    for name, count in (("attempts", row.attempts), ("max_retries", row.max_retries)):
        # int32: the PostgreSQL column type; nobody retries two billion times.
        if type(count) is not int or not 0 <= count <= _INT32_MAX:
            raise StoreError(f"{where}.{name} must be an int in [0, 2**31), got {count!r}")
    if row.state not in TASK_STATES:
        raise StoreError(f"{where}.state must be one of {TASK_STATES}, got {row.state!r}")
    for name, text in (
        ("last_error", row.last_error),
        ("cron", row.cron),
        ("timezone", row.timezone),
    ):
        if text is not None:
            _text(f"{where}.{name}", text)
    if row.policy is not None and type(row.policy) is not bytes:
        raise StoreError(f"{where}.policy must be bytes or None, got {type(row.policy)!r}")
    _pause(where, row.paused_at, row.pause_note, row.paused_by)


def _pause(where: str, at: object, note: object, by: object) -> None:
    if at is not None:
        _time(f"{where}.paused_at", at)
    for name, text in (("note", note), ("by", by)):
        if text is not None:
            _text(f"{where}.{name}", text)


def _time(where: str, value: object) -> None:
    if type(value) not in (int, float) or not math.isfinite(value):  # type: ignore[arg-type]
        raise StoreError(f"{where} must be finite epoch seconds (float), got {value!r}")
