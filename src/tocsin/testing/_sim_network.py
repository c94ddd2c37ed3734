# SPDX-License-Identifier: Apache-2.0
"""The simulated network between the nodes of a :class:`~tocsin.testing.Simulation`.

Nodes on ``memory://`` without remoting reach each other's actors in-process (a durable
identity's messages forwarded to its owner, asks and their replies). The simulation adds
an in-process route (``cluster._spi.add_in_process_route``): every PID a node gets for a
peer's actor sends through a :class:`_Link` instead, which hands each message to
:class:`Network`. The network decides, with the simulation's seeded ``random.Random``,
whether the message is lost and when it arrives (on the one ``ManualClock``), keeping the
order of each (sender node, receiver node) pair, as one connection does. Replies to asks
travel back the same way. A message to or from a crashed or partitioned node is lost; one
to or from a paused node waits for the pause to end.

Prior art: FoundationDB's ``sim2`` network (latency and loss drawn from the simulation's
seed; a clogged or partitioned pair), TigerBeetle's VOPR packet simulator.

Rejected: a socket-level transport under ``remote/`` (framing, handshake and MAC in one
process). It would test remoting's bytes, which its own suite tests, at many times the
cost per message, while what a cluster simulation explores is what the nodes do when
messages are late, lost or cut off; that is decided here, before any byte exists.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from ..actor._spi import PID, Reply, SendTarget, target_of
from ..cluster._spi import in_process_pid

if TYPE_CHECKING:
    from ..actor._spi import Runtime
    from ..clock import ManualClock

__all__ = ["LATENCY", "Network"]

#: Seconds a message between two nodes takes without a delay fault (drawn uniformly).
LATENCY = (0.0005, 0.005)


@final
class Network:
    """Who can reach whom, and how late, on one simulated network.

    Args:
        clock: the simulation's clock (deliveries are its timers).
        rng: the simulation's seeded random source.
        node_of: the node name of an address (``None``: not a node of this simulation).
        runtime_of: the runtime of a node's running system, if any.
        blocked: whether a node can neither send nor receive (crashed, partitioned).
        resume_at: when a paused node resumes (``None``: not paused).
    """

    def __init__(
        self,
        clock: ManualClock,
        rng: random.Random,
        node_of: Callable[[str], str | None],
        runtime_of: Callable[[str], Runtime | None],
        blocked: Callable[[str], bool],
        resume_at: Callable[[str], float | None],
    ) -> None:
        self._clock = clock
        self._rng = rng
        self._node_of = node_of
        self._runtime_of = runtime_of
        self._blocked = blocked
        self._resume_at = resume_at
        #: Probability that a message is lost, and extra seconds each takes (faults).
        self.loss = 0.0
        self.delay = 0.0
        #: Per (from, to) pair: when its last message arrives (arrivals keep send order).
        self._last: dict[tuple[str, str], float] = {}
        #: Messages sent, lost and delivered (``Simulation.stats``).
        self.sent = 0
        self.lost = 0
        self.delivered = 0

    def set_faults(self, *, loss: float, delay: float) -> None:
        """From now on each message is lost with probability ``loss`` and takes ``delay``
        seconds more."""
        self.loss = loss
        self.delay = delay

    # -- the route -----------------------------------------------------------------------

    def route(self, origin: str, pid: PID) -> PID:
        """What node ``origin`` sends to instead of the peer's ``pid``: a link to it."""
        source = self._node_of(origin)
        destination = self._node_of(pid.address)
        if source is None or destination is None or source == destination:
            return pid
        runtime = self._runtime_of(source)
        if runtime is None:
            return pid
        link = _Link(self, runtime, source, destination, pid)
        return PID(pid.address, pid.path, pid.incarnation, link)

    # -- carrying ------------------------------------------------------------------------

    def carry(self, source: str, destination: str, arrive: Callable[[], None]) -> None:
        """Carry one message from ``source`` to ``destination``: ``arrive()`` runs when it
        arrives, unless it is lost on the way."""
        self.sent += 1
        if self._blocked(source) or self._blocked(destination):
            self.lost += 1
            return
        if self.loss > 0 and self._rng.random() < self.loss:
            self.lost += 1
            return
        now = self._clock.monotonic()
        at = now + self._rng.uniform(*LATENCY) + self.delay
        for node in (source, destination):
            resume = self._resume_at(node)
            if resume is not None:
                at = max(at, resume)
        pair = (source, destination)
        at = max(at, self._last.get(pair, 0.0))
        self._last[pair] = at

        def arrived() -> None:
            # A partition or crash that began while the message was on its way.
            if self._blocked(source) or self._blocked(destination):
                self.lost += 1
                return
            self.delivered += 1
            arrive()

        self._clock.call_at(at, arrived)


@final
class _Link(SendTarget):
    """A peer's actor seen across the simulated network (one sender node's view)."""

    __slots__ = ("_destination", "_net", "_peer", "_source", "runtime")

    def __init__(
        self, net: Network, runtime: Runtime, source: str, destination: str, peer: PID
    ) -> None:
        self._net = net
        self.runtime = runtime
        self._source = source
        self._destination = destination
        self._peer = peer

    def deliver(self, message: Any, sender: Any, reply: Reply | None) -> bool:
        peer, net, source, destination = self._peer, self._net, self._source, self._destination

        def arrive() -> None:
            # The peer's PID as it is now: the node may have restarted since.
            current = in_process_pid(peer.address, peer.path)
            if current is None:
                net.lost += 1
                return  # nobody there: the asker's timeout tells it
            back = None if reply is None else _ReturnPath(reply, net, destination, source)
            target_of(current).deliver(message, sender, back)

        net.carry(source, destination, arrive)
        return True

    def alive(self) -> bool:
        return True  # across a network, the peer's fate is unknown until it answers

    async def stop(self) -> None:
        raise NotImplementedError("a peer's actor cannot be stopped across the simulated network")

    def request_stop(self) -> None:
        """Not across the network: the peer's own node decides."""

    def reinstate(self) -> None:
        """Not across the network: the peer's own node decides."""


@final
class _ReturnPath:
    """An ask's reply travelling back from ``source`` to ``destination`` (a ``Reply``)."""

    __slots__ = ("_destination", "_inner", "_net", "_sent", "_source")

    def __init__(self, inner: Reply, net: Network, source: str, destination: str) -> None:
        self._inner = inner
        self._net = net
        self._source = source
        self._destination = destination
        self._sent = False  # answered here (the answer may still be on its way)

    def done(self) -> bool:
        return self._sent or self._inner.done()

    def set_result(self, result: Any, /) -> None:
        self._sent = True
        inner = self._inner

        def arrive() -> None:
            if not inner.done():
                inner.set_result(result)

        self._net.carry(self._source, self._destination, arrive)

    def set_exception(self, exception: BaseException | type[BaseException], /) -> None:
        self._sent = True
        inner = self._inner

        def arrive() -> None:
            if not inner.done():
                inner.set_exception(exception)

        self._net.carry(self._source, self._destination, arrive)

    def add_done_callback(self, fn: Callable[[Any], object], /) -> None:
        self._inner.add_done_callback(lambda _: fn(self))
