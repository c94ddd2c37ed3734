# SPDX-License-Identifier: Apache-2.0
"""The invariants a simulation's record must satisfy, as functions of the record.

``check_record`` reads only the record, the faults and what the workload declared, so a
test can append a forged entry and see it caught. The first violation in record order is
reported, with the entries that show it.

* **At most once**: an instant of an ``at_most_once`` reference is delivered at most once.
* **At least once**: every instant of an ``at_least_once`` reference is delivered, except
  near a fault no delivery can survive (a coordinator outage; every node down at once);
  each delivery of one instant carries its own fence (the claim it was delivered under),
  so a handler can refuse a duplicate. A zombie (a winner that froze past its delivery
  lease and delivers on waking) may deliver after its replacement: its fence is then
  the smaller one, which is what lets the handler refuse it.
* **One activation per identity at a time**: the durable writes of an identity carry
  ownership epochs that never go back, and one epoch is one node's.
* **No acknowledged durable write lost**: an acknowledged value was written first; a
  counter never goes back below an acknowledged value; the store ends with every
  acknowledged counter at or above it; an acknowledged queued task runs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, final

from ..errors import SimulationViolation
from ._sim_values import Ack, Delivery, Entry, Fault, FaultKind, Write

__all__ = ["Expectations", "check_record"]

#: Simulated seconds after the start during which instants are not expected yet.
WARM_UP = 2.0


@final
@dataclass(frozen=True, slots=True)
class Expectations:
    """What the workload declared: the references' delivery modes and periods, the
    counter keys, whether queued tasks are tracked, the store's final values, and the
    run's length, lease, delivery lease and starting wall time."""

    at_most_once: frozenset[str] = frozenset()
    #: reference -> its period in seconds (every instant on that grid is expected)
    at_least_once: Mapping[str, float] = field(default_factory=dict)
    counters: frozenset[str] = frozenset()
    queued: bool = False
    final: Mapping[tuple[str, str], Any] = field(default_factory=dict)
    seconds: float = 0.0
    lease: float = 10.0
    delivery_lease: float = 5.0
    start_wall: float = 0.0
    nodes: int = 1


def check_record(
    record: list[Entry], faults: list[Fault], expect: Expectations, describe: str
) -> None:
    """Raise :class:`~tocsin.errors.SimulationViolation` at the first broken invariant.

    Args:
        describe: names the seed and the replay command (ends every message).
    """
    found: list[tuple[int, str, list[Entry]]] = []
    found += _deliveries(record, expect)
    found += _writes(record, expect)
    missing = _missing_instants(record, faults, expect)
    if found:
        found.sort(key=lambda item: item[0])
        _, what, entries = found[0]
        shown = "\n  ".join(repr(e) for e in entries)
        raise SimulationViolation(f"{what}\n  {shown}\n{describe}")
    if missing:
        raise SimulationViolation(f"{missing}\n{describe}")


def _deliveries(record: list[Entry], expect: Expectations) -> list[tuple[int, str, list[Entry]]]:
    found: list[tuple[int, str, list[Entry]]] = []
    seen: dict[tuple[str, float], list[Delivery]] = {}
    for index, entry in enumerate(record):
        if not isinstance(entry, Delivery):
            continue
        earlier = seen.setdefault((entry.reference, entry.instant), [])
        if earlier:
            first = earlier[0]
            if entry.reference in expect.at_most_once:
                found.append((index, "at-most-once: one instant delivered twice", [first, entry]))
            elif entry.fence is not None and any(d.fence == entry.fence for d in earlier):
                found.append(
                    (
                        index,
                        "at-least-once: one instant delivered twice under one claim (fence)",
                        [*earlier, entry],
                    )
                )
        earlier.append(entry)
    return found


def _writes(record: list[Entry], expect: Expectations) -> list[tuple[int, str, list[Entry]]]:
    found: list[tuple[int, str, list[Entry]]] = []
    newest: dict[str, Write] = {}
    holder: dict[tuple[str, int], Write] = {}
    written: dict[tuple[str, str, Any], Write] = {}
    acked: dict[tuple[str, str], Ack] = {}
    ran: set[tuple[str, str]] = set()
    queued: list[tuple[int, Ack]] = []
    last_of: dict[tuple[str, str], Write] = {}
    for index, entry in enumerate(record):
        if isinstance(entry, Write):
            last_of[entry.identity, entry.key] = entry
            last = newest.get(entry.identity)
            if last is not None and entry.epoch < last.epoch:
                found.append(
                    (
                        index,
                        "one activation at a time: a write of an older epoch after a newer one",
                        [last, entry],
                    )
                )
            owner = holder.setdefault((entry.identity, entry.epoch), entry)
            if owner.node != entry.node:
                found.append(
                    (
                        index,
                        "one activation at a time: two nodes wrote under one epoch",
                        [owner, entry],
                    )
                )
            if last is None or entry.epoch >= last.epoch:
                newest[entry.identity] = entry
            ack = acked.get((entry.identity, entry.key))
            if (
                entry.key in expect.counters
                and ack is not None
                and not (_number(entry.value) > _number(ack.value))
            ):
                found.append((index, "acknowledged write lost: a counter went back", [ack, entry]))
            written[entry.identity, entry.key, _hashable(entry.value)] = entry
            if entry.key.startswith("ran/"):
                ran.add((entry.identity, entry.key[4:]))
        elif isinstance(entry, Ack):
            if entry.key.startswith("queued/") and expect.queued:
                queued.append((index, entry))
                continue
            if (entry.identity, entry.key, _hashable(entry.value)) not in written:
                found.append(
                    (index, "acknowledged write lost: acknowledged but never stored", [entry])
                )
            previous = acked.get((entry.identity, entry.key))
            if previous is None or _number(entry.value) >= _number(previous.value):
                acked[entry.identity, entry.key] = entry
    for (identity, key), stored in expect.final.items():
        last_write = last_of.get((identity, key))
        if last_write is not None and _hashable(stored) != _hashable(last_write.value):
            found.append(
                (
                    len(record),
                    f"write lost: the store ends with {key}={stored!r}, not the last write",
                    [last_write],
                )
            )
    for (identity, key), ack in acked.items():
        if key in expect.counters and (identity, key) in expect.final:
            stored = expect.final[identity, key]
            if _number(stored) < _number(ack.value):
                found.append(
                    (
                        len(record),
                        f"acknowledged write lost: the store ends with {key}={stored!r}",
                        [ack],
                    )
                )
    horizon = expect.seconds - _settle_margin(expect)
    for index, ack in queued:
        task = ack.key[len("queued/") :]
        if ack.at <= horizon and (ack.identity, task) not in ran:
            found.append((index, "acknowledged queued task never ran", [ack]))
    return found


def _settle_margin(expect: Expectations) -> float:
    """Seconds after a fault or before the end within which work may still be pending:
    a dead owner's lease, the delivery lease, a restart, a few polls."""
    return 3.0 * expect.lease + expect.delivery_lease + 5.0


def _missing_instants(record: list[Entry], faults: list[Fault], expect: Expectations) -> str:
    if not expect.at_least_once:
        return ""
    excused = _excused(faults, expect)
    delivered = {(e.reference, e.instant) for e in record if isinstance(e, Delivery)}
    last = expect.seconds - _settle_margin(expect)
    for reference, period in sorted(expect.at_least_once.items()):
        step = math.ceil(WARM_UP / period)
        while step * period <= last:
            offset = step * period
            step += 1
            if any(a <= offset <= b for a, b in excused):
                continue
            if (reference, expect.start_wall + offset) not in delivered:
                return (
                    f"at-least-once: instant {expect.start_wall + offset!r} of {reference!r} "
                    f"(t={offset:g} s) was never delivered"
                )
    return ""


def _excused(faults: list[Fault], expect: Expectations) -> list[tuple[float, float]]:
    """Windows (simulated seconds) in which no at-least-once delivery is promised: a
    coordinator outage, or every node down (crashed, paused, cut off, or its clock
    stepped) at once."""
    margin = _settle_margin(expect)
    # An instant claimed just before an outage whose winner then died is claimed again
    # once its delivery lease lapses: inside the outage, that claim errs, and a claim
    # that errs loses its tick (docs/cluster.md, "Not guaranteed").
    before = expect.delivery_lease + 2.0
    windows = [
        (f.start - before, f.end + margin) for f in faults if f.kind is FaultKind.COORDINATOR_OUTAGE
    ]
    down: dict[str, list[tuple[float, float]]] = {}
    for f in faults:
        if f.kind in (FaultKind.CRASH, FaultKind.PAUSE, FaultKind.PARTITION) and f.node:
            down.setdefault(f.node, []).append((f.start, f.end + 2.0 * expect.lease))
        elif f.kind is FaultKind.SKEW and f.node:
            # Known loss, reported: a node whose clock steps forward re-arms its cron at
            # the skewed instant, and the cluster's correction (a backward step) leaves
            # it there, so it claims nothing until its wall clock gets back to it
            # (docs/cluster.md: "the other nodes deliver them"). The step back at the
            # end of a slow clock is one forward: its node may spend the instants of the
            # next |size| seconds early (a claim that errs, cut off, loses them). Counted
            # as down; the case is a strict xfail in
            # tests/cluster/test_found_by_simulation.py.
            reach = f.end + abs(f.size) + 2.0 * expect.lease
            down.setdefault(f.node, []).append((f.start, reach))
    if len(down) == expect.nodes:
        points = sorted({p for spans in down.values() for span in spans for p in span})
        for a, b in itertools.pairwise(points):
            middle = (a + b) / 2
            if all(any(s <= middle <= e for s, e in spans) for spans in down.values()):
                windows.append((a - before, b + margin))
    return windows


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value
