# SPDX-License-Identifier: Apache-2.0
"""A :class:`~._values.Schedule` to codec bytes and back, and the field-by-field diff an
upsert and ``tocsin schedules plan`` show.

The wire form is a plain dict of codec-safe values (never pickle): what a store holds is
data, decoded by :func:`decode_spec` into the same checked values a user constructs (a
stored row that is not a schedule is a ``ValueError``, never code run). Times are epoch
seconds; policies use their own ``to_wire()`` forms.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import msgspec

from .._codec import decode, encode
from ..actor import Misfire, Overlap
from ..cron import Calendar, DSTPolicy
from ._values import Cron, Durable, Interval, Once, Schedule, trusted

__all__ = ["FORMAT", "decode_spec", "diff", "encode_spec", "spec_to_wire"]

#: The wire form's version (``"v"``): a reader refuses one it does not know.
FORMAT: Final = 1


def _trigger_to_wire(trigger: Interval | Cron | Once) -> dict[str, Any]:
    if isinstance(trigger, Interval):
        anchor = None if trigger.anchor is None else trigger.anchor.timestamp()
        return {"interval": trigger.seconds, "anchor": anchor}
    if isinstance(trigger, Cron):
        dst = None if trigger.dst is None else trigger.dst.to_wire()
        return {"cron": trigger.expression, "timezone": trigger.timezone, "dst": dst}
    at = None if trigger.at is None else trigger.at.timestamp()
    return {"once": at, "delay": trigger.delay}


def _utc(value: object) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a stored time: {value!r}")
    return datetime.fromtimestamp(value, UTC)


def _trigger_from_wire(value: object) -> Interval | Cron | Once:
    if not isinstance(value, dict):
        raise ValueError(f"not a stored trigger: {value!r}")
    if "interval" in value:
        return Interval(value["interval"], anchor=_utc(value.get("anchor")))
    if "cron" in value:
        dst = value.get("dst")
        return Cron(
            value["cron"],
            timezone=value.get("timezone"),
            dst=None if dst is None else DSTPolicy.from_wire(dst),
        )
    if "once" in value:
        at = _utc(value["once"])
        return Once(at=at) if at is not None else Once(delay=value.get("delay"))
    raise ValueError(f"not a stored trigger: {value!r}")


def spec_to_wire(spec: Schedule) -> dict[str, Any]:
    """The codec-safe dict of ``spec``."""
    target = spec.target
    if isinstance(target, Durable):
        wire_target: dict[str, Any] = {
            "durable": [target.kind, target.identity, target.method],
            "payload": target.payload,
        }
    else:
        wire_target = {"job": target}
    return {
        "v": FORMAT,
        "id": spec.id,
        "trigger": _trigger_to_wire(spec.trigger),
        "target": wire_target,
        "args": list(spec.args),
        "kwargs": spec.kwargs,
        "overlap": spec.overlap.to_wire(),
        "misfire": spec.misfire.to_wire(),
        "jitter": spec.jitter,
        "exclude": None if spec.exclude is None else spec.exclude.to_wire(),
        "delivery": str(spec.delivery),
        "history": spec.history,
        "enabled": spec.enabled,
    }


def encode_spec(spec: Schedule) -> bytes:
    """``spec`` as codec bytes (what the store keeps)."""
    return encode(spec_to_wire(spec), name=f"schedule {spec.id!r}")


def decode_spec(data: bytes) -> Schedule:
    """The inverse of :func:`encode_spec`, without the 10-year check.

    Raises:
        ValueError: ``data`` is not a stored schedule of a known format.
        CodecError: ``data`` is not codec bytes.
    """
    wire = decode(data)
    if not isinstance(wire, dict) or wire.get("v") != FORMAT:
        raise ValueError(f"not a stored schedule (format {FORMAT}): {wire!r:.200}")
    target = wire.get("target")
    if not isinstance(target, dict):
        raise ValueError(f"not a stored schedule target: {target!r:.200}")
    if "durable" in target:
        kind, identity, method = target["durable"]
        what: str | Durable = Durable(kind, identity, method, target.get("payload"))
    else:
        # Interned: every schedule naming one job shares the one string.
        job = target["job"]
        what = sys.intern(job) if type(job) is str else job
    exclude = wire.get("exclude")
    with trusted():
        return Schedule(
            wire["id"],
            _shared(_TRIGGERS, wire.get("trigger"), _trigger_from_wire),
            what,
            args=tuple(wire.get("args") or ()),
            kwargs=wire.get("kwargs"),
            overlap=Overlap.from_wire(wire.get("overlap")),
            misfire=_shared(_MISFIRES, wire.get("misfire"), Misfire.from_wire),
            jitter=wire.get("jitter"),
            exclude=None if exclude is None else Calendar.from_wire(exclude),
            delivery=wire.get("delivery", "at_most_once"),
            history=wire.get("history", 256),
            enabled=wire.get("enabled", True),
        )


#: Misfire values and triggers read from the store, by wire form: a node holding
#: 100,000 stored schedules holds a handful of distinct policies, each once, and one
#: trigger for the schedules declared alike (an Interval's anchor is the second of its
#: first add, so schedules added together share it). They are frozen, so sharing is safe.
_MISFIRES: dict[bytes, Misfire] = {}
_TRIGGERS: dict[bytes, Interval | Cron | Once] = {}
#: Most distinct values each cache keeps (beyond it values are made, not shared).
_SHARED_MAX: Final = 1024

T = TypeVar("T")


def _shared(cache: dict[bytes, T], wire: Any, make: Callable[[Any], T]) -> T:
    """``make(wire)``, the one value made for an equal ``wire`` before when there is one."""
    try:
        key = msgspec.msgpack.encode(wire)
    except (TypeError, ValueError):
        return make(wire)  # make says what is wrong with it
    found = cache.get(key)
    if found is None:
        found = make(wire)
        if len(cache) < _SHARED_MAX:
            cache[key] = found
    return found


def diff(old: Schedule, new: Schedule) -> list[str]:
    """The fields whose wire forms differ between ``old`` and ``new`` (sorted): what an
    upsert changes, and what ``tocsin schedules plan`` prints."""
    a, b = spec_to_wire(old), spec_to_wire(new)
    return sorted(key for key in a.keys() | b.keys() if a.get(key) != b.get(key))
