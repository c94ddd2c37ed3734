# SPDX-License-Identifier: Apache-2.0
"""The values of a simulation: the fault rates, the faults a seed drew, the record's entries.

Everything here is a frozen slotted value, so a record can be compared (two runs of one
seed give equal records), printed and forged by a test (``check()`` must catch it).

Prior art: FoundationDB's simulation and TigerBeetle's VOPR keep the fault schedule and
the history apart from the system under test: the history is data, the invariants are
functions of it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, final

__all__ = ["Ack", "Delivery", "Entry", "Fault", "FaultKind", "Faults", "Write", "draw_faults"]


class FaultKind(StrEnum):
    """What a fault does (``docs/testing.md``, "Simulating a cluster")."""

    #: The node dies: its coordinator and store calls fail, its messages are lost, it is
    #: torn down (its in-memory state is gone) and started again, new, at ``end``.
    CRASH = "crash"
    #: The node freezes past its lease: every coordinator, store and network call it
    #: makes or receives waits until ``end`` (a stop-the-world pause, a SIGSTOP).
    PAUSE = "pause"
    #: The node is cut off from its peers and from the coordinator until ``end``.
    PARTITION = "partition"
    #: The node's wall clock is ``size`` seconds off until ``end``.
    SKEW = "skew"
    #: Every store call fails until ``end``.
    STORE_OUTAGE = "store_outage"
    #: Every coordinator call fails until ``end``.
    COORDINATOR_OUTAGE = "coordinator_outage"
    #: Each message between nodes is lost with probability ``size`` until ``end``.
    LOSS = "loss"
    #: Each message between nodes takes ``size`` seconds more until ``end``, and each
    #: leg of a coordinator or store call (there, back) up to ``size`` seconds.
    DELAY = "delay"


#: Kinds that touch one node (the others touch the whole cluster or the network).
NODE_KINDS = frozenset({FaultKind.CRASH, FaultKind.PAUSE, FaultKind.PARTITION, FaultKind.SKEW})


@final
@dataclass(frozen=True, slots=True)
class Fault:
    """One fault the seed drew: ``kind`` on ``node`` (``None``: cluster-wide) from
    ``start`` to ``end`` (simulated seconds since the simulation began), of ``size``
    (skew seconds, loss probability, extra delay seconds; 0 otherwise)."""

    kind: FaultKind
    node: str | None
    start: float
    end: float
    size: float = 0.0


@final
@dataclass(frozen=True, slots=True)
class Faults:
    """How often each kind of fault starts, per simulated minute (0 turns a kind off).

    Each kind is drawn as a Poisson process at its rate from the simulation's seeded
    ``random.Random``, so one seed always draws the same faults.

    Raises:
        ValueError: a rate is not a finite number >= 0 (names it).
    """

    crash: float = 0.0
    pause: float = 0.0
    partition: float = 0.0
    skew: float = 0.0
    store_outage: float = 0.0
    coordinator_outage: float = 0.0
    loss: float = 0.0
    delay: float = 0.0

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise ValueError(
                    f"`{spec.name}` must be a finite rate >= 0 per simulated minute, got {value!r}"
                )

    @classmethod
    def default(cls) -> Faults:
        """Every kind, each about once every three to ten simulated minutes: a ten-minute
        run sees a few of each."""
        return cls(
            crash=0.2,
            pause=0.15,
            partition=0.15,
            skew=0.2,
            store_outage=0.1,
            coordinator_outage=0.1,
            loss=0.3,
            delay=0.3,
        )

    @classmethod
    def none(cls) -> Faults:
        """No faults: the system on a perfect network and perfect services."""
        return cls()

    def to_text(self) -> str:
        """The rates as ``crash=0.2,pause=0.15,...`` (what ``--faults`` reads back);
        ``none`` when every rate is 0."""
        if self == Faults.none():
            return "none"
        return ",".join(f"{spec.name}={getattr(self, spec.name)!r}" for spec in fields(self))

    @classmethod
    def from_text(cls, text: str) -> Faults:
        """Read :meth:`to_text`'s form; kinds not named are 0 (``"none"``: no faults).

        Raises:
            ValueError: an unknown kind, a malformed pair or a bad rate (names it).
        """
        rates: dict[str, float] = {}
        known = {spec.name for spec in fields(cls)}
        for pair in text.split(","):
            if not pair.strip() or pair.strip() == "none":
                continue
            name, sep, value = pair.partition("=")
            name = name.strip()
            if not sep or name not in known:
                raise ValueError(
                    f"`faults` must be KIND=RATE pairs with KIND one of {sorted(known)}, "
                    f"got {pair!r}"
                )
            rates[name] = float(value)
        return cls(**rates)

    def rate(self, kind: FaultKind) -> float:
        """The rate of ``kind``, per simulated minute."""
        rate: float = getattr(self, kind.value)
        return rate


def draw_faults(
    faults: Faults,
    rng: random.Random,
    nodes: list[str],
    start: float,
    seconds: float,
    lease: float,
) -> list[Fault]:
    """The faults that begin in ``[start, start + seconds)``, sorted by start.

    Durations are scaled on the lease, so each kind tests what it is meant to: a pause
    always outlives the lease (the node's identities move while it sleeps), a crash
    sometimes ends before the old lease expires (the restart waits for it).
    """
    drawn: list[Fault] = []
    for kind in FaultKind:
        rate = faults.rate(kind) / 60.0
        if rate <= 0:
            continue
        at = start + rng.expovariate(rate)
        busy_until: dict[str | None, float] = {}
        while at < start + seconds:
            node = rng.choice(nodes) if kind in NODE_KINDS else None
            fault = _shape(kind, node, at, rng, lease)
            # One fault of a kind per node (or cluster-wide) at a time: a node crashed
            # twice at once is crashed once.
            if fault.start >= busy_until.get(node, -math.inf):
                drawn.append(fault)
                busy_until[node] = fault.end
            at += rng.expovariate(rate)
    drawn.sort(key=lambda f: (f.start, f.kind.value, f.node or ""))
    return drawn


def _shape(kind: FaultKind, node: str | None, at: float, rng: random.Random, lease: float) -> Fault:
    """The duration and size of one fault of ``kind`` starting ``at``."""
    size = 0.0
    if kind is FaultKind.CRASH:
        length = rng.uniform(0.5, 3.0 * lease)
    elif kind is FaultKind.PAUSE:
        length = rng.uniform(1.2 * lease, 3.0 * lease)
    elif kind is FaultKind.PARTITION:
        length = rng.uniform(0.5 * lease, 4.0 * lease)
    elif kind is FaultKind.SKEW:
        length = rng.uniform(5.0, 60.0)
        size = rng.choice((-1.0, 1.0)) * rng.uniform(0.5, 30.0)
    elif kind in (FaultKind.STORE_OUTAGE, FaultKind.COORDINATOR_OUTAGE):
        length = rng.uniform(0.5, 2.0 * lease)
    elif kind is FaultKind.LOSS:
        length = rng.uniform(2.0, 30.0)
        size = rng.uniform(0.05, 0.6)
    else:  # DELAY
        length = rng.uniform(2.0, 30.0)
        size = rng.uniform(0.01, 2.0)
    return Fault(kind, node, round(at, 6), round(at + length, 6), round(size, 6))


@final
@dataclass(frozen=True, slots=True)
class Delivery:
    """A scheduled tick reached its target's ``receive``: ``reference``'s ``instant``
    (epoch seconds, the nominal fire time) on ``node``, with the claim's ``fence``
    (``None`` outside cluster mode). ``at``: simulated seconds since the start."""

    reference: str
    instant: float
    node: str
    fence: int | None
    at: float = 0.0


@final
@dataclass(frozen=True, slots=True)
class Write:
    """A durable state write the store accepted: ``identity``'s ``key`` set to ``value``
    (decoded; ``None`` for a delete) under ownership ``epoch``, by ``node``."""

    identity: str
    key: str
    value: Any
    epoch: int
    node: str
    at: float = 0.0


@final
@dataclass(frozen=True, slots=True)
class Ack:
    """A caller on ``node`` was told that ``identity``'s write of ``key`` = ``value``
    succeeded (the reply to its ask arrived): that write must never be lost."""

    identity: str
    key: str
    value: Any
    node: str
    at: float = 0.0


#: One entry of ``Simulation.record``.
Entry = Delivery | Write | Ack
