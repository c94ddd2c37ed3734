# SPDX-License-Identifier: Apache-2.0
"""``Simulation``: a whole cluster in one process, on one clock, under seeded faults.

N ``ActorSystem`` nodes share one :class:`~tocsin.ManualClock`, one ``memory://``
coordinator and one :class:`~tocsin.stores.MemoryStore` (which outlives every node: a
crash loses a node's memory, never the store). Each node reaches the coordinator and the
store through its own gate (``_sim_gates``) and its peers through the simulated network
(``_sim_network``). A seeded ``random.Random`` draws the faults (``Faults``) before they
happen and decides every message's fate, so one seed is one run: same faults, same
messages, same record.

Prior art: FoundationDB's deterministic simulation (one process, one clock, the seed
printed with every failure), TigerBeetle's VOPR (a fault schedule drawn from a seed,
invariants checked over the recorded history).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, cast, final

from .._codec import decode
from ..clock import ManualClock
from ..cluster import Cluster, Coordinator
from ..cluster._spi import add_in_process_route, open_coordinator
from ..durable import Call
from ..errors import TocsinError
from ..stores import MemoryStore
from ..system import ActorSystem
from . import _sim_workload as workload
from ._sim_check import Expectations, check_record
from ._sim_clock import NodeClock
from ._sim_gates import GatedCoordinator, GatedStore, NodeGate, Outages
from ._sim_network import Network
from ._sim_values import Ack, Delivery, Entry, Fault, FaultKind, Faults, Write, draw_faults

if TYPE_CHECKING:
    from ..actor._spi import Runtime
    from ..stores import Store

__all__ = ["START_WALL", "Simulation"]

#: The wall time at which every simulation begins (2027-01-15 08:00 UTC): fixed, so a
#: seed replays the same instants on any day.
START_WALL = 1_800_000_000.0

#: The cluster lease of every node unless given (the :class:`~tocsin.Cluster` default).
DEFAULT_LEASE = 10.0

#: Simulated seconds between two rounds of the built-in driver's asks.
DRIVE_PERIOD = 1.0

#: Simulated seconds a stop or restart may take before the run gives up on it.
SETTLE_LIMIT = 600.0

_log = logging.getLogger("tocsin.testing.simulation")

Setup = Callable[[ActorSystem], Awaitable[None]]


@final
class _Node:
    """One simulated node: its name, gate, clock and current system (None while down)."""

    __slots__ = ("clock", "coordinator", "gate", "name", "restarting", "store", "system")

    def __init__(self, name: str, gate: NodeGate, clock: NodeClock) -> None:
        self.name = name
        self.gate = gate
        self.clock = clock
        self.system: ActorSystem | None = None
        self.coordinator: GatedCoordinator | None = None
        self.store: GatedStore | None = None
        self.restarting: asyncio.Task[None] | None = None


@final
class Simulation:
    """A cluster of ``nodes`` systems in this process, driven by ``seed``.

    Args:
        nodes: how many nodes (``n0``, ``n1``, ...), at least 1.
        seed: the seed of everything random in the run (faults, losses, latencies,
            the built-in workload's choices).
        faults: how often each kind of fault starts (default :meth:`Faults.default`).
        setup: ``async def setup(system)`` run on every node at each start (restarts
            included): spawn actors, declare schedules. Record what the invariants
            should see with :func:`record_tick` and :func:`record_ack`. ``None``: the
            built-in workload (``docs/testing.md``, "Simulating a cluster").
        lease: the cluster lease of every node, in seconds (default 10, the
            :class:`~tocsin.Cluster` default).
        at_least_once: the references your ``setup`` schedules with
            ``delivery="at_least_once"``: an instant of one may be delivered again, with a
            larger fence. Every other recorded reference is at most once: ``check()``
            fails on an instant delivered twice.

    Guarantees: two simulations of one seed, nodes, faults, setup and lease, run for the
    same seconds, give equal :attr:`record` and :attr:`faults`.

    Raises:
        ValueError: ``nodes`` is not an int >= 1, ``seed`` not an int, ``lease`` out of
            the cluster's range.
        TypeError: ``faults`` is not a :class:`Faults`, ``setup`` not callable.
    """

    #: The simulation running in this process, if any (one at a time).
    _running: ClassVar[Simulation | None] = None

    def __init__(
        self,
        nodes: int = 3,
        seed: int = 7,
        faults: Faults | None = None,
        setup: Setup | None = None,
        *,
        lease: float = DEFAULT_LEASE,
        at_least_once: Iterable[str] = (),
    ) -> None:
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            raise ValueError(f"`nodes` must be an int >= 1, got {nodes!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"`seed` must be an int, got {seed!r}")
        if faults is None:
            faults = Faults.default()
        if not isinstance(faults, Faults):
            raise TypeError(f"`faults` must be a tocsin.testing.Faults, got {faults!r}")
        if setup is not None and not callable(setup):
            raise TypeError(f"`setup` must be an async function of the system, got {setup!r}")
        Cluster("memory://", lease=lease)  # the cluster's own check of `lease`
        self.seed = seed
        self.node_count = nodes
        self.fault_rates = faults
        self.lease = float(lease)
        self._setup = setup
        if isinstance(at_least_once, str):
            raise TypeError(f"`at_least_once` must be a list of references, got {at_least_once!r}")
        self._at_least_once = frozenset(at_least_once)
        #: Every delivery, durable write and acknowledgement, in simulated time order.
        self.record: list[Entry] = []
        #: The faults the seed drew (kind, node, start, end, size), by start.
        self.faults: list[Fault] = []
        #: The one clock of every node.
        self.clock = ManualClock(wall=START_WALL)
        self.store = MemoryStore()
        # Separate streams: the faults a seed draws do not depend on how many messages
        # the workload sent, so changing the workload keeps the fault schedule.
        self._fault_rng = random.Random(f"tocsin-sim/{seed}/faults")
        self._rng = random.Random(f"tocsin-sim/{seed}/run")
        self._outages = Outages(self.clock.sleep, self._rng.random)
        self._nodes = {
            f"n{i}": _Node(
                f"n{i}",
                NodeGate(f"n{i}", self._outages),
                NodeClock(self.clock, functools.partial(self._resume_at, f"n{i}")),
            )
            for i in range(nodes)
        }
        self._by_address = {f"tocsin://{name}": name for name in self._nodes}
        self._network = Network(
            self.clock,
            self._rng,
            self._by_address.get,
            self._runtime_of,
            self._blocked,
            self._resume_at,
        )
        # Unique in the process: a coordinator's shared state is found by this name.
        self._cluster_name = f"sim-{seed}-{uuid.uuid4().hex}"
        self._active: list[Fault] = []
        #: When each paused node wakes (derived from the faults in force by _apply): read
        #: at every node timer's firing, so a lookup rather than a scan of the faults.
        self._wakes: dict[str, float] = {}
        self._ran = 0.0
        self._final: dict[tuple[str, str], Any] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._queued = 0
        #: What the run's own tasks raised (a node's restart whose setup failed).
        self._errors: list[BaseException] = []
        #: The durable kind of each (identity, key) written (Write entries name none).
        self._kinds: dict[tuple[str, str], str] = {}

    def __repr__(self) -> str:
        return (
            f"Simulation(nodes={self.node_count}, seed={self.seed}, "
            f"faults={self.fault_rates!r}, lease={self.lease:g})"
        )

    # -- running -------------------------------------------------------------------------

    async def run(self, seconds: float) -> None:
        """Start the nodes, let ``seconds`` of simulated time pass under the seed's faults
        (drawn into :attr:`faults` first), then stop every node. A simulation runs once.

        Raises:
            RuntimeError: the simulation already ran.
            ValueError: ``seconds`` is not a positive finite number.
        """
        if self._ran:
            raise RuntimeError(f"{self!r} already ran; make a new Simulation to run again")
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
            raise ValueError(f"`seconds` must be a positive number of seconds, got {seconds!r}")
        if Simulation._running is not None:
            raise RuntimeError(
                f"{Simulation._running!r} is running in this process: two simulations at "
                "once would share their nodes' in-process addresses; run them one after "
                "the other (or in two processes)"
            )
        self._ran = float(seconds)
        Simulation._running = self
        try:
            await self._run(float(seconds))
        finally:
            Simulation._running = None

    async def _run(self, seconds: float) -> None:
        self.faults = draw_faults(
            self.fault_rates,
            self._fault_rng,
            list(self._nodes),
            0.0,
            seconds,
            self.lease,
        )
        remove_route = add_in_process_route(self._network.route)
        try:
            for node in self._nodes.values():
                await self._start(node)
            for fault in self.faults:
                self.clock.call_at(fault.start, functools.partial(self._begin, fault))
                self.clock.call_at(fault.end, functools.partial(self._end, fault))
            if self._setup is None:
                self.clock.call_at(DRIVE_PERIOD, self._drive)
            await self.clock.advance(seconds)
            if self._errors:
                raise self._errors[0]
        except Exception as exc:
            # The run itself failed (a node that cannot start, a stop that hangs): say
            # which run, and leave nothing running behind.
            exc.add_note(self._describe())
            with contextlib.suppress(Exception):
                await self._heal_and_stop()
            remove_route()
            raise
        try:
            await self._heal_and_stop()
        except Exception as exc:
            exc.add_note(self._describe())
            raise
        finally:
            remove_route()
        await self._read_final()

    async def _heal_and_stop(self) -> None:
        self._active.clear()
        self._apply()
        await self._teardown()

    async def _teardown(self) -> None:
        """Every fault healed, every node stopped (the clock moves while they stop)."""
        for node in self._nodes.values():
            node.gate.revive()
            node.gate.unpause()
        stop = asyncio.ensure_future(self._stop_all())
        waited = 0.0
        while not stop.done() and waited < SETTLE_LIMIT:
            await self.clock.advance(1.0)
            waited += 1.0
        if not stop.done():
            stop.cancel()
            raise RuntimeError(f"{self!r}: the nodes did not stop within {SETTLE_LIMIT:g} s")
        await stop
        for coordinator in [n.coordinator for n in self._nodes.values()]:
            if coordinator is not None:
                await coordinator.close()

    async def _stop_all(self) -> None:
        for node in self._nodes.values():
            if node.restarting is not None:
                await asyncio.gather(node.restarting, return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for node in self._nodes.values():
            system, node.system = node.system, None
            if system is not None:
                await system.stop()

    async def _start(self, node: _Node) -> None:
        """Start (or restart) ``node``: a new system, new memory, the same store."""
        if node.coordinator is None:
            coordinator = GatedCoordinator(
                open_coordinator(f"memory://{self._cluster_name}", clock=self.clock), node.gate
            )
            await coordinator.open()
            node.coordinator = coordinator
        if node.store is None:
            node.store = GatedStore(self.store, node.gate, self._writer(node.name))
        system = ActorSystem(
            node.name,
            clock=node.clock,
            store=cast("Store", node.store),
            timezone="UTC",
            stop_timeout=5.0,
            cluster=Cluster(cast(Coordinator, node.coordinator), lease=self.lease),
        )
        workload.attach_recorder(system, _NodeRecorder(self, node.name))
        await system.start()
        node.system = system
        setup = self._setup if self._setup is not None else workload.builtin_setup
        try:
            await setup(system)
        except BaseException:
            # Not a node that runs without its application: down again, so a restart
            # tries the whole start once more (or the run fails with the error).
            node.system = None
            await system.stop(timeout=1.0)
            raise

    # -- faults --------------------------------------------------------------------------

    def _begin(self, fault: Fault) -> None:
        node = self._nodes[fault.node] if fault.node is not None else None
        self._active.append(fault)
        if fault.kind is FaultKind.CRASH and node is not None:
            node.gate.crash()
            self._spawn(self._crash(node))
        elif fault.kind is FaultKind.PAUSE and node is not None:
            node.gate.pause()
        self._apply()

    def _end(self, fault: Fault) -> None:
        if fault not in self._active:
            return
        self._active.remove(fault)
        node = self._nodes[fault.node] if fault.node is not None else None
        if fault.kind is FaultKind.CRASH and node is not None:
            node.gate.revive()
            previous = node.restarting
            node.restarting = self._spawn(self._restart(node, previous))
        elif fault.kind is FaultKind.PAUSE and node is not None:
            node.gate.unpause()
        self._apply()

    def _apply(self) -> None:
        """Derive the network's and the gates' state from the faults in force."""
        active = self._active
        delay = max((f.size for f in active if f.kind is FaultKind.DELAY), default=0.0)
        self._outages.set(
            coordinator=any(f.kind is FaultKind.COORDINATOR_OUTAGE for f in active),
            store=any(f.kind is FaultKind.STORE_OUTAGE for f in active),
            latency=delay,
        )
        self._network.set_faults(
            loss=max((f.size for f in active if f.kind is FaultKind.LOSS), default=0.0),
            delay=delay,
        )
        wakes: dict[str, float] = {}
        for f in active:
            if f.kind is FaultKind.PAUSE and f.node is not None:
                wakes[f.node] = max(f.end, wakes.get(f.node, f.end))
        self._wakes = wakes
        for node in self._nodes.values():
            node.gate.cut_off(
                any(f.kind is FaultKind.PARTITION and f.node == node.name for f in active)
            )
            skew = sum(f.size for f in active if f.kind is FaultKind.SKEW and f.node == node.name)
            if skew != node.clock.offset:
                node.clock.set_offset(skew)

    async def _crash(self, node: _Node) -> None:
        """The node dies: its calls already fail (its gate); its memory goes."""
        system, node.system = node.system, None
        if system is not None:
            await system.stop(timeout=1.0)

    async def _restart(self, node: _Node, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        while node.system is None and not node.gate.crashed:
            try:
                await self._start(node)
            except TocsinError as exc:  # its old lease not expired yet, an outage
                _log.debug("simulated node %s did not restart: %s", node.name, exc)
                await _clock_sleep(self.clock, self.lease / 3)

    def _spawn(self, coroutine: Awaitable[None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._settled)
        return task

    def _settled(self, task: asyncio.Task[None]) -> None:
        """A crash, restart or ask of the run ended: keep what it raised (a restart whose
        ``setup`` failed), for :meth:`run` to raise once the nodes are stopped."""
        self._tasks.discard(task)
        error = None if task.cancelled() else task.exception()
        if error is not None:
            self._errors.append(error)

    # -- what the network and the gates ask ---------------------------------------------

    def _runtime_of(self, name: str) -> Runtime | None:
        system = self._nodes[name].system
        return None if system is None else system.runtime

    def _blocked(self, name: str) -> bool:
        gate = self._nodes[name].gate
        return gate.crashed or gate.partitioned

    def _resume_at(self, name: str) -> float | None:
        return self._wakes.get(name)

    # -- the built-in workload's driver --------------------------------------------------

    def _drive(self) -> None:
        """One round of asks from every running node; re-arms itself."""
        now = self.clock.monotonic()
        if now + DRIVE_PERIOD <= self._ran:
            self.clock.call_at(now + DRIVE_PERIOD, self._drive)
        for node in self._nodes.values():
            system = node.system
            if system is None or not system.running or node.gate.paused:
                continue  # a frozen process sends nothing
            identity = self._rng.choice(workload.COUNTERS)
            if self._rng.random() < 0.2:
                self._queued += 1
                task_id = f"task-{self._queued}"
                self._spawn(self._ask(node.name, system, identity, Call("enqueue", task_id)))
            else:
                self._spawn(self._ask(node.name, system, identity, Call("inc")))

    async def _ask(self, node: str, system: ActorSystem, identity: str, call: Call) -> None:
        try:
            pid = await system.durable(workload.SimCounter, identity)
            value = await pid.ask(call, timeout=5.0)
        except Exception:  # a refused or lost ask acknowledges nothing
            return
        if call.method == "inc":
            self._append(Ack(identity, "count", value, node, self._now()))
        else:
            self._append(Ack(identity, f"queued/{value}", True, node, self._now()))

    def _expectations(self) -> Expectations:
        """What the invariants check: the built-in workload declares its references and
        keys; a user's setup gets the checks that need no declaration."""
        builtin = self._setup is None
        if builtin:
            at_most_once = frozenset({workload.AT_MOST_ONCE})
        else:
            recorded = {e.reference for e in self.record if isinstance(e, Delivery)}
            at_most_once = frozenset(recorded - self._at_least_once)
        return Expectations(
            at_most_once=at_most_once,
            at_least_once={workload.AT_LEAST_ONCE: 1.0} if builtin else {},
            counters=frozenset({"count"} if builtin else ()),
            queued=builtin,
            final=dict(self._final),
            seconds=self._ran,
            lease=self.lease,
            start_wall=START_WALL,
            nodes=self.node_count,
        )

    # -- the record ----------------------------------------------------------------------

    def _now(self) -> float:
        return self.clock.monotonic()

    def _append(self, entry: Entry) -> None:
        self.record.append(entry)

    def _writer(self, node: str) -> Callable[[str, str, str, Any, int], None]:
        def wrote(kind: str, identity: str, key: str, value: Any, epoch: int) -> None:
            self._kinds[identity, key] = kind
            self._append(Write(identity, key, value, epoch, node, self._now()))

        return wrote

    async def _read_final(self) -> None:
        """What the store holds at the end for every key the record saw written."""
        final: dict[tuple[str, str], Any] = {}
        for (identity, key), kind in sorted(self._kinds.items()):
            data = await self.store.get_state(kind, identity, key)
            final[identity, key] = None if data is None else decode(data)
        self._final = final

    # -- the invariants ------------------------------------------------------------------

    def check(self) -> None:
        """Assert the invariants over :attr:`record` (a forged entry appended to it is
        judged like any other).

        Raises:
            SimulationViolation: an invariant does not hold; the message names the seed,
                the first offending entries and the command that replays the run.
        """
        check_record(self.record, self.faults, self._expectations(), self._describe())

    def _describe(self) -> str:
        return f"seed {self.seed}; replay: {self.replay_command()}"

    def replay_command(self) -> str:
        """The one-line shell command that replays this run (the built-in workload), or,
        for a ``setup`` of yours, the simulation to make again with it."""
        if self._setup is not None:
            return f"{self!r} with your setup, run for {self._ran:g} s"
        command = (
            f"python -m tocsin.testing --seed {self.seed} --seconds {self._ran:g} "
            f"--nodes {self.node_count}"
        )
        if self.fault_rates != Faults.default():
            command += f" --faults {self.fault_rates.to_text()}"
        if self.lease != DEFAULT_LEASE:
            command += f" --lease {self.lease:g}"
        return command


@final
class _NodeRecorder:
    """What one node's system reports to its simulation (``record_tick``/``record_ack``)."""

    __slots__ = ("_node", "_sim")

    def __init__(self, sim: Simulation, node: str) -> None:
        self._sim = sim
        self._node = node

    def tick(self, reference: str, instant: float, fence: int | None) -> None:
        sim = self._sim
        sim.record.append(Delivery(reference, instant, self._node, fence, sim.clock.monotonic()))

    def ack(self, identity: str, key: str, value: Any) -> None:
        sim = self._sim
        sim.record.append(Ack(identity, key, value, self._node, sim.clock.monotonic()))


async def _clock_sleep(clock: ManualClock, seconds: float) -> None:
    """Wait ``seconds`` of ``clock``'s time."""
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not future.done():
            future.set_result(None)

    clock.call_at(clock.monotonic() + seconds, wake)
    await future
