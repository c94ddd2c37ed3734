# SPDX-License-Identifier: Apache-2.0
"""The ``memory://`` coordinator: the systems of one process, on one clock.

``memory://NAME`` instances of one process share one state while at least one of them is
open; plain ``memory://`` is one more shared state (the default name ``""``). Only a
``MemoryCoordinator()`` made without a name is private. Every method runs without awaiting
anything, so each is atomic on the event loop. Time is the given clock's ``wall()``: with
one :class:`~tocsin.ManualClock` for every system, a test decides when leases expire and
ticks are late, deterministically.

Being in-process, it also offers what a remote coordinator cannot (``Membership`` uses
both when it has a MemoryCoordinator): :meth:`MemoryCoordinator.on_change` calls back at
once when a node joins or leaves, so the members need no polling between renewals (a
simulated cluster's weeks cost their renewals, not a read per ``poll_interval``); and
:meth:`MemoryCoordinator.holder_renewing` tells whether a name's lease is held by a node
of this process that is still renewing it, so a duplicate name fails at once instead of
waiting (on a ManualClock nobody advances, for ever) for a lease that will never lapse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, final

from ..clock import Clock, SystemClock
from . import _protocol
from ._protocol import EXPIRED_LEASE_RETENTION as RETENTION
from ._protocol import ClaimOutcome, LeaseRow, Ownership, PauseNote, TickClaim, TickRequest
from ._protocol import ClaimsInBatches as _OneClaimAsBatch
from ._rendezvous import rendezvous_owner

__all__ = ["MemoryCoordinator"]


@dataclass(slots=True)
class _Lease:
    incarnation: str
    address: str
    joined: float
    renewed: float
    expires: float
    zone: str = "UTC"
    #: The row last read of this lease: every node reads every lease at each of its
    #: renewals (``leases_nowait``), so one immutable row serves them all until the
    #: lease is renewed or lapses (a simulated cluster reads millions).
    row: LeaseRow | None = field(default=None, compare=False, repr=False)


@dataclass(slots=True)
class _Claim:
    node: str
    expires: float
    fence: int
    #: The delivery lease's end while an at_least_once claim is undone; 0: done.
    held: float


@dataclass(slots=True)
class _State:
    leases: dict[str, _Lease] = field(default_factory=dict)
    directory: dict[tuple[str, str], tuple[str, str, int]] = field(default_factory=dict)
    claims: dict[str, _Claim] = field(default_factory=dict)
    fences: dict[str, int] = field(default_factory=dict)
    paused: set[str] = field(default_factory=set)
    notes: dict[str, PauseNote] = field(default_factory=dict)
    users: int = 0
    #: Called (synchronously, with no argument) after each join and leave.
    listeners: list[Callable[[], None]] = field(default_factory=list)
    #: node -> (incarnation, whether its holder still renews), registered by the holder.
    holders: dict[str, tuple[str, Callable[[], bool]]] = field(default_factory=dict)


@final
class MemoryCoordinator(_OneClaimAsBatch):
    """A :class:`~tocsin.cluster.Coordinator` in this process's memory.

    Args:
        name: instances with the same name (``""`` included: plain ``memory://``) share
            their state while any of them is open; ``None`` keeps it private.
        clock: the clock judging leases and lateness (``SystemClock`` by default).
    """

    _shared: ClassVar[dict[str, _State]] = {}

    def __init__(self, name: str | None = None, *, clock: Clock | None = None) -> None:
        self.name = name
        self.url = f"memory://{name or ''}"
        self._clock = clock if clock is not None else SystemClock()
        self._state: _State | None = None

    def __repr__(self) -> str:
        return f"MemoryCoordinator({self.url!r})"

    @classmethod
    def is_open(cls, name: str) -> bool:
        """Whether a ``memory://NAME`` coordinator of this process is open (its shared
        state exists), e.g. for the store's cluster record (``cluster/_identity.py``)."""
        return name in cls._shared

    async def open(self) -> None:
        if self._state is not None:
            return
        state = _State() if self.name is None else self._shared.setdefault(self.name, _State())
        state.users += 1
        self._state = state

    async def close(self) -> None:
        state, self._state = self._state, None
        if state is None:
            return
        state.users -= 1
        if state.users == 0 and self.name is not None and self._shared.get(self.name) is state:
            del self._shared[self.name]

    @property
    def _s(self) -> _State:
        if self._state is None:
            from ..errors import CoordinatorError

            raise CoordinatorError(f"{self!r} is not open: `await coordinator.open()` first")
        return self._state

    async def now(self) -> float:
        return self._clock.wall()

    # -- in-process extras (not part of the Coordinator protocol) ----------------------

    def on_change(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` after every join and leave of any node (for as long as this
        coordinator is open); returns the function that removes it. ``listener`` runs
        inside the join or leave call: it must only schedule work, not await.
        """
        listeners = self._s.listeners
        listeners.append(listener)

        def remove() -> None:
            if listener in listeners:
                listeners.remove(listener)

        return remove

    def hold(self, node: str, incarnation: str, renewing: Callable[[], bool]) -> None:
        """Record that ``node``'s lease of ``incarnation`` is held by a node of this
        process, which renews it as long as ``renewing()`` is true."""
        self._s.holders[node] = (incarnation, renewing)

    def holder_renewing(self, node: str) -> bool:
        """Whether ``node``'s live lease is held by a node of this process that still
        renews it: a lease that will not lapse by waiting."""
        state = self._s
        held = state.leases.get(node)
        holder = state.holders.get(node)
        if held is None or holder is None or held.expires <= self._clock.wall():
            return False
        incarnation, renewing = holder
        return incarnation == held.incarnation and renewing()

    def _changed(self) -> None:
        for listener in list(self._s.listeners):
            listener()

    # -- membership ------------------------------------------------------------------

    def _row(self, node: str, lease: _Lease, now: float) -> LeaseRow:
        alive = lease.expires > now
        row = lease.row
        if row is None or row.alive is not alive:
            row = lease.row = LeaseRow(
                node,
                lease.incarnation,
                lease.address,
                lease.joined,
                lease.renewed,
                lease.expires,
                alive,
                lease.zone,
            )
        return row

    async def join(
        self, node: str, incarnation: str, address: str, lease: float, zone: str = "UTC"
    ) -> LeaseRow | None:
        state, now = self._s, self._clock.wall()
        held = state.leases.get(node)
        if held is not None and held.incarnation != incarnation and held.expires > now:
            return None
        for name in [n for n, old in state.leases.items() if old.expires < now - RETENTION]:
            del state.leases[name]
        joined = held.joined if held is not None and held.incarnation == incarnation else now
        state.leases[node] = new = _Lease(incarnation, address, joined, now, now + lease, zone)
        self._changed()
        return self._row(node, new, now)

    async def renew(self, node: str, incarnation: str, lease: float) -> LeaseRow | None:
        state, now = self._s, self._clock.wall()
        held = state.leases.get(node)
        if held is None or held.incarnation != incarnation or held.expires <= now:
            return None
        held.renewed, held.expires, held.row = now, now + lease, None
        return self._row(node, held, now)

    async def leave(self, node: str, incarnation: str) -> bool:
        state = self._s
        held = state.leases.get(node)
        if held is None or held.incarnation != incarnation:
            return False
        del state.leases[node]
        self._changed()
        return True

    async def leases(self) -> tuple[float, list[LeaseRow]]:
        return self.leases_nowait()

    def leases_nowait(self) -> tuple[float, list[LeaseRow]]:
        """:meth:`leases`, synchronously (in-process: nothing to wait for)."""
        state, now = self._s, self._clock.wall()
        return now, [self._row(n, state.leases[n], now) for n in sorted(state.leases)]

    # -- directory -------------------------------------------------------------------

    def _alive(self, node: str, incarnation: str, now: float) -> bool:
        held = self._s.leases.get(node)
        return held is not None and held.incarnation == incarnation and held.expires > now

    async def owner(self, kind: str, identity: str) -> Ownership | None:
        entry = self._s.directory.get((kind, identity))
        if entry is None:
            return None
        node, incarnation, epoch = entry
        alive = self._alive(node, incarnation, self._clock.wall())
        return Ownership(kind, identity, node, incarnation, epoch, alive)

    async def claim_owner(
        self,
        kind: str,
        identity: str,
        node: str,
        incarnation: str,
        *,
        floor: int = 0,
        place: bool = False,
    ) -> Ownership | None:
        state, now = self._s, self._clock.wall()
        current = await self.owner(kind, identity)
        if not self._alive(node, incarnation, now):
            return current
        if current is not None and (current.node, current.incarnation) == (node, incarnation):
            if current.epoch >= floor:
                return current
            state.directory[(kind, identity)] = (node, incarnation, floor)
            return Ownership(kind, identity, node, incarnation, floor, True)
        if current is not None and current.alive:
            return current
        epoch = max(1 if current is None else current.epoch + 1, floor)
        if place:
            live = {
                n: lease.incarnation for n, lease in state.leases.items() if lease.expires > now
            }
            chosen = rendezvous_owner(kind, identity, live)
            if chosen is not None:
                node, incarnation = chosen, live[chosen]
        state.directory[(kind, identity)] = (node, incarnation, epoch)
        return Ownership(kind, identity, node, incarnation, epoch, True)

    async def hand_over(
        self, kind: str, identity: str, node: str, incarnation: str, *, floor: int = 0
    ) -> Ownership | None:
        state, now = self._s, self._clock.wall()
        current = await self.owner(kind, identity)
        if current is None or (current.node, current.incarnation) != (node, incarnation):
            return current
        if not self._alive(node, incarnation, now):
            return current
        live = {n: lease.incarnation for n, lease in state.leases.items() if lease.expires > now}
        chosen = rendezvous_owner(kind, identity, live)
        if chosen is None or chosen == node:
            return current
        epoch = max(current.epoch + 1, floor)
        state.directory[(kind, identity)] = (chosen, live[chosen], epoch)
        return Ownership(kind, identity, chosen, live[chosen], epoch, True)

    # -- cron single fire ------------------------------------------------------------

    async def claim_ticks(self, requests: Sequence[TickRequest], node: str) -> list[TickClaim]:
        # Nothing here suspends: the batch is one atomic step, as it must be.
        return [self._decide(request, node) for request in requests]

    def _decide(self, request: TickRequest, node: str) -> TickClaim:
        state, now = self._s, self._clock.wall()
        key, reference, lease = request.key, request.reference, request.lease
        if reference in state.paused:
            return TickClaim(ClaimOutcome.PAUSED)
        if request.late(now):
            return TickClaim(ClaimOutcome.LATE)
        held = state.claims.get(key)
        if held is not None and held.expires > now:
            if lease is None or held.held == 0.0:
                return TickClaim(ClaimOutcome.LOST)
            if held.held > now:
                return TickClaim(ClaimOutcome.LOST, retry_in=held.held - now)
            expires = held.expires  # a re-claim keeps the claim's expiry
        else:
            expires = request.expiry(now)
        fence = max(state.fences.get(reference, 0) + 1, _protocol.least_fence(now))
        state.fences[reference] = fence
        state.claims[key] = _Claim(node, expires, fence, 0.0 if lease is None else now + lease)
        if len(state.claims) > 1024 and len(state.claims) & 1023 == 0:
            # Claims expire only: drop the expired ones now and then.
            state.claims = {k: v for k, v in state.claims.items() if v.expires > now}
        return TickClaim(ClaimOutcome.WON, fence)

    async def renew_tick(self, key: str, fence: int, lease: float) -> bool:
        state, now = self._s, self._clock.wall()
        held = state.claims.get(key)
        if held is None or held.fence != fence or held.held == 0.0:
            return False
        held.held = now + lease
        return True

    async def finish_tick(self, key: str, fence: int) -> bool:
        held = self._s.claims.get(key)
        if held is None or held.fence != fence:
            return False
        held.held = 0.0
        return True

    async def set_cron_paused(self, reference: str, paused: bool) -> None:
        if paused:
            self._s.paused.add(reference)
        else:
            self._s.paused.discard(reference)

    async def paused_crons(self) -> frozenset[str]:
        return frozenset(self._s.paused)

    async def set_pause_note(self, reference: str, note: PauseNote | None) -> None:
        if note is None:
            self._s.notes.pop(reference, None)
        else:
            self._s.notes[reference] = note

    async def pause_notes(self) -> dict[str, PauseNote]:
        return dict(self._s.notes)

    def _claim_holder(self, key: str) -> tuple[str, float] | None:
        """Test hook: the node holding ``key`` and until when (expired ones included)."""
        held = self._s.claims.get(key)
        return None if held is None else (held.node, held.expires)
