# SPDX-License-Identifier: Apache-2.0
"""Membership: this node's lease, renewed every ``lease/3``, and the view of live nodes.

The coordinator judges leases on its own clock: a node not renewed within ``lease`` is
dead for everyone else. The node also judges itself, on its own monotonic clock: its
lease is held until ``t0 + lease`` where ``t0`` is when the last accepted renewal was
*sent*. The coordinator set the expiry at ``coordinator_now + lease`` with
``coordinator_now`` at or after ``t0``, so the node gives up no later than the cluster
does (clock rates assumed equal; drift of a few ppm is far inside the margin) — and a node
that was frozen (SIGSTOP, a VM pause) finds its lease gone before it acts on it.

Peers notice a dead node when they next read the lease table: at each renewal, and, when
``watch_every`` (the cluster's ``poll_interval``) is shorter than ``lease/3``, every
``watch_every`` seconds in between. On ``memory://`` (one process) nothing is polled: the
coordinator calls back on each join and leave, and a timer at the earliest expiry among
the peers' leases reads the view then, so a dead node is noticed at its expiry and a
simulated cluster pays for its renewals only (``_memory.py``). ``NodeLeft`` then makes
the durable runtime look for the dead node's due tasks at once, so they run elsewhere
within ``lease + poll_interval`` (one lease-table read per ``poll_interval`` is the price).

Every lease carries the node's cron zone. At ``start`` a node whose zone differs from a
live member's (not merely another name of the same zone: ``UTC`` and ``Etc/UTC``) leaves
again and raises :class:`~tocsin.errors.TimezoneMismatchError`:
the check runs after this node's own lease is written, so of two nodes of different zones
joining at the same moment at least one sees the other (both may refuse: never both stay).

When the lease is lost the ``on_lease_lost`` callback runs (the system stops its durable
activations: their epochs may already belong to another node) and the node joins again
as a new incarnation.

Prior art: Akka Cluster's split-brain "down yourself" timeout, Chubby's lease timeout on
the client side, GoAkt's membership (whose dead-node detection this replaces: a lease on
an existing engine instead of gossip).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal, Protocol, cast, final

from ..clock import Clock, TimerHandle
from ..durable._spi import Outage
from ..errors import CoordinatorError, NodeNameTakenError, TimezoneMismatchError
from ..scheduling._spi import same_zone
from ._periodic import Periodic, sleep
from ._protocol import Coordinator, LeaseRow
from ._time import ClusterTime
from ._values import Counters, LeaseLost, LeaseRegained, Member, NodeJoined, NodeLeft

__all__ = ["Membership", "PushesMembership"]

_log = logging.getLogger("tocsin.cluster")


class PushesMembership(Protocol):
    """A coordinator of this process that pushes joins and leaves (``memory://``, and
    a wrapper that binds its methods, such as a simulated node's gated view of it).

    Membership recognises the capability by these methods, not by the class, so a
    wrapper that binds them gets the push path too. Every method is synchronous and
    must only schedule work: they run inside a join, a leave or a renewal.
    """

    def on_change(self, listener: Callable[[], None]) -> Callable[[], None]: ...

    def hold(self, node: str, incarnation: str, renewing: Callable[[], bool]) -> None: ...

    def holder_renewing(self, node: str) -> bool: ...

    def leases_nowait(self) -> tuple[float, list[LeaseRow]]: ...


_PUSH_METHODS = ("on_change", "hold", "holder_renewing", "leases_nowait")


def _pushes(coordinator: Coordinator) -> PushesMembership | None:
    """``coordinator`` as a :class:`PushesMembership`, if it defines or binds every one
    of its methods as a plain function. Looked up statically: a wrapper that forwards
    *any* name through ``__getattr__`` (a test's fault injector turning each into a
    coroutine) does not push, and is polled as before."""
    for name in _PUSH_METHODS:
        method = inspect.getattr_static(coordinator, name, None)
        if method is None or inspect.iscoroutinefunction(method):
            return None
    return cast(PushesMembership, coordinator)


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


@final
class Membership:
    """This node's lease and its view of the cluster (one per node).

    Args:
        coordinator: an opened coordinator.
        name: this node's name (unique in the cluster).
        address: where peers reach this node.
        lease: seconds; renewals every ``lease / 3``.
        clock: the node's clock.
        publish: called with each :class:`NodeJoined` / :class:`NodeLeft`.
        counters: where renewals and losses are counted.
        on_lease_lost: called once each time this node loses its lease.
        watch_every: seconds between two reads of the view (``NodeJoined``/``NodeLeft``
            noticed within that); ``None`` or anything from ``lease/3`` up: at each
            renewal only.
        zone: the IANA zone this node evaluates cron in (recorded with its lease and
            compared with the live members' at ``start``).
        time: measures this node's offset to the coordinator's clock from each join and
            renewal (the coordinator's clock at the step is the row's ``renewed``).
    """

    def __init__(
        self,
        coordinator: Coordinator,
        *,
        name: str,
        address: str,
        lease: float,
        clock: Clock,
        publish: Callable[[object], None],
        counters: Counters,
        on_lease_lost: Callable[[], None] | None = None,
        watch_every: float | None = None,
        zone: str = "UTC",
        time: ClusterTime | None = None,
    ) -> None:
        self.coordinator = coordinator
        self.time = time
        self.name = name
        self.address = address
        self.lease = lease
        self.zone = zone
        self.incarnation = ""
        self._clock = clock
        self._publish = publish
        self._counters = counters
        self._on_lease_lost = on_lease_lost
        self._holding = False
        #: The lease was lost and not held since: the next one held is a LeaseRegained.
        self._lost = False
        #: The coordinator as the renewals and view reads see it (logged once an outage).
        self.outage = Outage(
            f"node {name}: cluster coordinator calls (lease, members)",
            _log,
            f"every renewal (each {lease / 3:g} s) tries again; the lease is lost once "
            "not renewed within it, and held again at the first renewal that answers",
        )
        self._valid_until = 0.0
        self._expiry: TimerHandle | None = None
        self._view: dict[str, LeaseRow] = {}
        #: Built from ``_view`` when first asked for after a read (None: not yet): a
        #: renewal's read costs no datetime per member unless someone looks.
        self._members: list[Member] | None = []
        self._renewer = Periodic(clock, lease / 3, self.tick, f"tocsin-cluster-renew-{name}")
        self._watcher: Periodic | None = None
        #: memory://: the view is read on the coordinator's change callbacks and at the
        #: earliest peer expiry (``_arm_expiry``) instead of every ``watch_every``.
        self._pushed = _pushes(coordinator)
        #: A pushed change may have been missed (a read of the view failed): the next
        #: renewal that answers reads the whole view instead of touching the known rows.
        self._stale = False
        self._unlisten: Callable[[], None] | None = None
        self._peer_expiry: TimerHandle | None = None
        #: When (monotonic) the first peer lease of the last read runs out.
        self._peer_due = math.inf
        self._rereading: asyncio.Task[None] | None = None
        #: The read in flight has begun, so a change now needs one more read after it.
        self._rereading_started = False
        self._reread_again = False
        if self._pushed is None and watch_every is not None and watch_every < lease / 3:
            self._watcher = Periodic(
                clock, watch_every, self._watch, f"tocsin-cluster-watch-{name}"
            )
        # Two reads of the view in flight (a renewal's and a watch) must not apply out of
        # order: an older read applied last would announce a dead node joining again.
        self._refreshing = asyncio.Lock()
        #: Peers missing from a read that also lacked this node's own live lease (the
        #: coordinator lost its data): kept in the view until their last known expiry,
        #: so they can join again without a NodeLeft being invented for them.
        self._vanished: dict[str, LeaseRow] = {}
        #: When (monotonic) the read that last found this node's lease missing was sent.
        self._reset_seen: float | None = None
        self._rejoined_at = -math.inf
        self._recovering = asyncio.Lock()

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Join (waiting at most ``2 * lease`` for a previous life's lease to lapse),
        read the first view, start renewing.

        Raises:
            NodeNameTakenError: another live node holds this name.
            TimezoneMismatchError: a live member evaluates cron in another zone (this
                node left again).
            CoordinatorError: the coordinator failed.
        """
        await self._join(wait=2 * self.lease)
        try:
            await self._refresh(announce=False)
            self._check_zone()
        except BaseException:
            await self.stop()  # leave: peers must not count on a node that did not start
            raise
        self._renewer.start()
        if self._watcher is not None:
            self._watcher.start()
        if self._pushed is not None:
            self._unlisten = self._pushed.on_change(self._reread)

    async def stop(self) -> None:
        """Stop renewing and leave (delete the lease). A coordinator that fails here is
        logged: the lease then simply expires."""
        await self._renewer.stop()
        if self._watcher is not None:
            await self._watcher.stop()
        await self._stop_pushed()
        self._cancel_expiry()
        was_holding, self._holding = self._holding, False
        if was_holding:
            try:
                await self.coordinator.leave(self.name, self.incarnation)
            except CoordinatorError as exc:
                _log.warning("node %s: leave failed (%s); its lease will expire", self.name, exc)

    async def _join(self, *, wait: float) -> None:
        deadline = self._clock.monotonic() + wait
        incarnation = uuid.uuid4().hex
        while True:
            sent = self._clock.monotonic()
            begun = self._begin()
            row = await self.coordinator.join(
                self.name, incarnation, self.address, self.lease, self.zone
            )
            if row is not None:
                self._measured(begun, row)
                self.incarnation = incarnation
                self._held_from(sent)
                return
            if self._clock.monotonic() >= deadline or (
                self._pushed is not None and self._pushed.holder_renewing(self.name)
            ):
                raise NodeNameTakenError(
                    f"node name {self.name!r} is held by another live node of the cluster "
                    f"(waited {wait:g} s for its lease to lapse); give each node its own name"
                )
            await sleep(self._clock, self.lease / 3)

    def _check_zone(self) -> None:
        """Refuse to be a member when a live member's cron zone differs from ours."""
        others: dict[str, list[str]] = {}
        for row in self._view.values():
            if row.node != self.name and not same_zone(row.zone, self.zone):
                others.setdefault(row.zone, []).append(row.node)
        if not others:
            return
        theirs = "; ".join(
            f"{zone!r} ({', '.join(sorted(nodes))})" for zone, nodes in sorted(others.items())
        )
        raise TimezoneMismatchError(
            f"node {self.name!r} evaluates cron in {self.zone!r}, but live members of the "
            f"cluster evaluate it in {theirs}: every node must compute the same cron "
            "instants. Give every node the same ActorSystem(timezone=...) (without it a "
            "node uses its machine's zone)"
        )

    # -- the lease ---------------------------------------------------------------------

    def holds_lease(self) -> bool:
        """Whether this node may act as a member now (by its own clock, conservatively)."""
        return self._holding and self._clock.monotonic() < self._valid_until

    # -- cluster time ------------------------------------------------------------------

    def _begin(self) -> tuple[float, float] | None:
        return None if self.time is None else self.time.begin()

    def _measured(self, begun: tuple[float, float] | None, row: LeaseRow) -> None:
        """A join or renewal answered: its row's ``renewed`` is the coordinator's clock
        at that step, one sample of this node's offset (``cluster/_time.py``)."""
        if self.time is not None and begun is not None:
            self.time.sample(begun, row.renewed)

    def _held_from(self, sent: float) -> None:
        self._holding = True
        self._valid_until = sent + self.lease
        if self._pushed is not None:
            self._pushed.hold(self.name, self.incarnation, self._renewer.running)
        # One timer, moved lazily: it fires at the validity it was armed for and, if a
        # renewal extended it since, arms again for the new one (a renewal costs no
        # timer of its own: O(1), and no dead entry left in the clock's heap).
        if self._expiry is None:
            self._expiry = self._clock.call_at(self._valid_until, self._expired_locally)
        if self._lost:
            self._regained()

    def _regained(self) -> None:
        """The lease is held again after a loss: say so; the system then looks for due
        durable work at once (issue 20, item 3: nothing else would until the next poll)."""
        self._lost = False
        _log.warning("node %s holds its lease again", self.name)
        self._publish(LeaseRegained(self.name))

    def _cancel_expiry(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None

    def _expired_locally(self) -> None:
        self._expiry = None
        if self._holding and self._clock.monotonic() < self._valid_until:
            self._expiry = self._clock.call_at(self._valid_until, self._expired_locally)
            return
        self._lose("not renewed within the lease by this node's clock")

    def _lose(self, why: str) -> None:
        if not self._holding:
            return
        self._holding = False
        self._lost = True
        self._counters.leases_lost += 1
        _log.warning("node %s lost its lease: %s", self.name, why)
        self._publish(LeaseLost(self.name, why))
        if self._on_lease_lost is not None:
            self._on_lease_lost()

    async def tick(self) -> None:
        """One renewal and one refresh of the view (run every ``lease / 3``)."""
        sent = self._clock.monotonic()
        begun = self._begin()
        answered = False
        try:
            row = await self.coordinator.renew(self.name, self.incarnation, self.lease)
        except CoordinatorError as exc:
            self._counters.renew_failures += 1
            self.outage.failed(exc, "renewing the lease")
        else:
            self.outage.ok()
            answered = True
            if row is not None:
                self._measured(begun, row)
                self._counters.leases_renewed += 1
                self._held_from(sent)
            elif not await self._rejoin_after_reset(sent):
                self._cancel_expiry()
                self._lose("the coordinator refused the renewal (expired or replaced)")
                try:
                    await self._join(wait=2 * self.lease)
                except CoordinatorError as exc:  # the next renewal tries again
                    self.outage.failed(exc, "joining again")
        if self._pushed is None or self._stale:
            await self._watch()
        elif answered:
            # Unanswered, the coordinator is out of reach: the view is not read, as a
            # poll would fail too (a simulated partition must not see its peers renew).
            self._touch_view(self._pushed)

    async def _rejoin_after_reset(self, seen: float) -> bool:
        """The coordinator no longer has this node's lease although, by this node's own
        clock, it cannot have expired: the coordinator lost its data (Redis restarted
        empty or flushed, its SQLite file deleted, a restore). Join again under the *same*
        incarnation, so peers see no departure; whether the join is accepted is the
        coordinator's call (a live lease of another incarnation refuses it). The
        directory went with the data, so every durable activation of this node stops
        (``on_lease_lost``) and reactivates on demand, claiming above the store's fence.

        ``seen``: when (monotonic) the read that found the lease missing was sent; a
        rejoin since then already answered it (a renewal and a view read can both find
        the same reset).

        Returns whether this node holds its lease again this way.
        """
        async with self._recovering:
            if self._rejoined_at >= seen:
                return self.holds_lease()
            if not self.holds_lease():
                return False
            sent = self._clock.monotonic()
            begun = self._begin()
            try:
                row = await self.coordinator.join(
                    self.name, self.incarnation, self.address, self.lease
                )
            except CoordinatorError as exc:
                _log.warning(
                    "node %s: rejoining after a coordinator reset failed: %s", self.name, exc
                )
                return False
            if row is None:
                return False
            self._measured(begun, row)
            self._held_from(sent)
            self._rejoined_at = sent
            self._counters.leases_lost += 1
            why = "the coordinator lost its data (joined again with the same incarnation)"
            self._publish(LeaseLost(self.name, why))
            self._publish(LeaseRegained(self.name))
            # The peers lost their leases with this node's: until they join again (or
            # their last known lease runs out) they are carried, not announced as gone.
            for node, old in self._view.items():
                if node != self.name:
                    self._vanished.setdefault(node, old)
            _log.warning(
                "node %s: the coordinator no longer held this node's live lease (it lost its "
                "data?); joined again with the same incarnation; durable activations stop and "
                "reactivate on their next message or due task",
                self.name,
            )
            if self._on_lease_lost is not None:
                self._on_lease_lost()
            return True

    # -- the view pushed by a coordinator of this process (PushesMembership) ----------

    def _reread(self) -> None:
        """A node joined or left, or a peer's lease reached its expiry: read the view
        (one read in flight at a time; a change meanwhile is seen by a read after it)."""
        if self._rereading is not None and not self._rereading.done():
            if self._rereading_started:
                self._reread_again = True
            return
        self._rereading_started = False
        self._reread_again = False
        self._rereading = asyncio.get_running_loop().create_task(
            self._reread_now(), name=f"tocsin-cluster-view-{self.name}"
        )

    async def _reread_now(self) -> None:
        self._rereading_started = True
        while True:
            await self._watch()
            if not self._reread_again:
                return
            self._reread_again = False

    def _touch_view(self, coordinator: PushesMembership) -> None:
        """memory://, at each renewal: joins and leaves are pushed and the first peer
        expiry has its timer, so no read of the view is needed; the rows of the members
        already known are refreshed in place (their expiries carry a peer through a
        coordinator reset, ``_vanished``), without a task, a lock or an announcement."""
        now, rows = coordinator.leases_nowait()
        view = self._view
        for row in rows:
            old = view.get(row.node)
            if old is not None and row.alive and old.incarnation == row.incarnation:
                view[row.node] = row
        self._members = None
        self._arm_expiry(now, view)

    def _arm_expiry(self, now: float, live: dict[str, LeaseRow]) -> None:
        """Read the view again when the first peer lease runs out unless renewed. Lazy,
        like the lease's own timer: a read that finds it later moves only the target,
        and the armed timer, when it fires early, arms again for it."""
        if self._pushed is None:
            return
        first = min((row.expires for node, row in live.items() if node != self.name), default=None)
        if first is None:
            self._peer_due = math.inf
            return
        self._peer_due = self._clock.monotonic() + max(0.0, first - now)
        if self._peer_expiry is None:
            self._peer_expiry = self._clock.call_at(self._peer_due, self._peer_expired)

    def _peer_expired(self) -> None:
        self._peer_expiry = None
        if self._peer_due == math.inf:
            return
        if self._clock.monotonic() < self._peer_due:
            self._peer_expiry = self._clock.call_at(self._peer_due, self._peer_expired)
            return
        self._reread()

    async def _stop_pushed(self) -> None:
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        if self._peer_expiry is not None:
            self._peer_expiry.cancel()
            self._peer_expiry = None
        task, self._rereading = self._rereading, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    # -- the view ----------------------------------------------------------------------

    def members(self) -> list[Member]:
        """Live nodes (this one included) as of the last refresh (at most ``lease/3`` old,
        or ``poll_interval`` when that is shorter), sorted by name."""
        return list(self._member_list())

    def address_of(self, node: str) -> str | None:
        """The address of live node ``node`` as of the last refresh (None if unknown)."""
        if node == self.name:
            return self.address
        row = self._view.get(node)
        return None if row is None else row.address

    def member_names(self) -> list[str]:
        """Names of the live nodes of the last refresh."""
        return [member.name for member in self._member_list()]

    def _member_list(self) -> list[Member]:
        if self._members is None:
            self._members = [
                Member(row.node, row.address, _utc(row.joined), _utc(row.renewed))
                for row in sorted(self._view.values(), key=lambda r: r.node)
            ]
        return self._members

    async def refresh(self) -> None:
        """Read the member list now (a directory entry named a node this view lacks)."""
        await self._watch()

    async def _watch(self) -> None:
        """Read the view and announce what changed (a failure is logged: next time)."""
        try:
            await self._refresh(announce=True)
        except CoordinatorError as exc:
            self.outage.failed(exc, "reading the members")
            self._stale = self._pushed is not None
            return
        self._stale = False
        self.outage.ok()
        seen, self._reset_seen = self._reset_seen, None
        if seen is not None:
            await self._rejoin_after_reset(seen)

    async def _refresh(self, *, announce: bool) -> None:
        async with self._refreshing:
            await self._apply_view(announce=announce)

    async def _apply_view(self, *, announce: bool) -> None:
        sent = self._clock.monotonic()
        now, rows = await self.coordinator.leases()
        known = {row.node: row for row in rows}
        live = {row.node: row for row in rows if row.alive}
        # This node's own live lease missing from the read while it holds it by its own
        # (conservative) clock: the coordinator lost its data. Peers missing from such a
        # read did not leave; they will join again (as this node does).
        reset = self.holds_lease() and self.name not in known
        if reset:
            self._reset_seen = sent
        if reset:
            for node, old in self._view.items():
                if node == self.name:
                    live[node] = old  # this node is rejoining at once (_rejoin_after_reset)
                elif node not in known:
                    self._vanished.setdefault(node, old)
        expired: set[str] = set()
        for node, old in list(self._vanished.items()):
            if node in known:
                del self._vanished[node]  # back (or replaced): judged as usual below
            elif old.expires > now:
                live[node] = old  # still within its last known lease: carried
            else:
                del self._vanished[node]  # never came back within its lease: expired
                expired.add(node)
        if announce:
            for node, old in self._view.items():
                if node == self.name:
                    continue
                new = live.get(node)
                if new is not None and new.incarnation == old.incarnation:
                    continue
                reason = "expired" if node in expired else self._left_reason(old, known.get(node))
                self._publish(NodeLeft(node, old.address, reason))
            for node, joined in live.items():
                before = self._view.get(node)
                if node != self.name and (
                    before is None or before.incarnation != joined.incarnation
                ):
                    self._publish(NodeJoined(node, joined.address))
        self._view = live
        self._arm_expiry(now, live)
        self._members = None

    @staticmethod
    def _left_reason(old: LeaseRow, now: LeaseRow | None) -> Literal["left", "expired"]:
        """``left`` if the lease was removed, ``expired`` if it ran out. A name taken by a
        new life: the old one expired if the new one joined after its expiry (a live
        lease of another incarnation is never replaced), else it left first."""
        if now is None:
            return "left"
        if now.incarnation == old.incarnation:
            return "expired"
        return "expired" if now.joined >= old.expires else "left"
