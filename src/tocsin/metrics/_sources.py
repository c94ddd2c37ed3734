# SPDX-License-Identifier: Apache-2.0
"""The built-in sources: what a running system already counts, read at scrape time.

A source factory takes the system and returns a zero-argument callable that reads it
and returns :class:`~tocsin.metrics.Metric` values. Factories that keep state between
scrapes (histograms built from ring buffers) hold it in their closure. Remoting and the
cluster add their own factory to :data:`SYSTEM_SOURCES` (one line each).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Final

from ..actor import ActorRestarted
from ..actor._spi import actor_stats
from ..cluster import ClusterMetrics
from ..durable import TaskParked
from ..durable._spi import DurableStatistics, durable_of
from ..errors import ActorSystemNotStartedError, RemotingDisabledError
from ..remote import RemoteMetrics
from ..schedules._spi import runner_of
from ..scheduling import SchedulerMetrics
from ..scheduling._spi import Scheduler
from ._model import Metric, MetricKind, RingHistogram, Sample
from ._store import OPERATIONS, TimedStore

if TYPE_CHECKING:
    from ..system import ActorSystem

__all__ = [
    "LATENESS_BOUNDS",
    "RUN_DURATION_BOUNDS",
    "STORE_CALL_BOUNDS",
    "SYSTEM_SOURCES",
    "Source",
    "SourceFactory",
    "actor_source",
    "cluster_source",
    "durable_source",
    "remote_source",
    "scheduler_source",
    "store_source",
]

Source = Callable[[], Iterable[Metric]]
SourceFactory = Callable[["ActorSystem"], Source]

_COUNTER, _GAUGE, _HISTOGRAM = MetricKind.COUNTER, MetricKind.GAUGE, MetricKind.HISTOGRAM

#: Bucket upper bounds (seconds) of ``tocsin_schedule_lateness_seconds``: a healthy loop
#: delivers within a millisecond; a blocked one shows up in the seconds buckets.
LATENESS_BOUNDS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                          1.0, 2.5, 5.0, 10.0, 30.0, 60.0)  # fmt: skip
#: Stored schedule ids labelled by name in ``tocsin_schedule_ticks_total`` (the first,
#: sorted); the others count as ``reference="other"`` (bounded cardinality).
STORED_LABELS: Final = 100
#: Bucket upper bounds (seconds) of ``tocsin_durable_task_run_duration_seconds``; the top
#: bucket is the default task budget (900 s).
RUN_DURATION_BOUNDS: Final = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0,
                              60.0, 300.0, 900.0)  # fmt: skip
#: Bucket upper bounds (seconds) of ``tocsin_store_call_duration_seconds``.
STORE_CALL_BOUNDS: Final = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                            0.05, 0.1, 0.25, 0.5, 1.0, 2.5)  # fmt: skip


def _one(name: str, kind: MetricKind, help: str, value: float, unit: str = "") -> Metric:
    return Metric(name, kind, help, unit, (Sample(value),))


def _empty(metrics: list[Metric]) -> list[Metric]:
    """The same families without samples: a source reports every family it has even when
    there is nothing to read yet (system not started, no durable store), so exporters
    that create instruments up front (OpenTelemetry) know every name from the start."""
    return [Metric(m.name, m.kind, m.help, m.unit) for m in metrics]


_ZERO_SCHEDULER: Final = SchedulerMetrics(0, 0, 0, 0, 0.0, 0.0, 0.0)


def scheduler_source(system: ActorSystem) -> Source:
    """Ticks, live schedules by kind, and the lateness histogram."""
    lateness = RingHistogram(LATENESS_BOUNDS)
    decided = RingHistogram(LATENESS_BOUNDS)
    started = RingHistogram(LATENESS_BOUNDS)

    def read() -> list[Metric]:
        if not system.running:
            return _empty(families(None))
        return families(system.scheduler_metrics())

    def stored() -> tuple[Sample, ...]:
        """Stored schedules (the ledger's outcomes decided on this node, but delivered),
        and their lateness rings."""
        runner = runner_of(system.runtime)
        if runner is None:
            return ()
        decided.update(runner.decided, runner.decided_lateness)
        started.update(runner.started, runner.started_lateness)
        named = sorted({sid for sid, _ in runner.counts})[:STORED_LABELS]
        totals: dict[tuple[str, str], int] = {}
        for (sid, outcome), n in runner.counts.items():
            if outcome != "delivered":
                key = (sid if sid in named else "other", outcome)
                totals[key] = totals.get(key, 0) + n
        return tuple(
            Sample(n, (("reference", sid), ("outcome", outcome)))
            for (sid, outcome), n in sorted(totals.items())
        )

    def durable_outcomes() -> tuple[Sample, ...]:
        """Durable tasks' schedules: the outcomes but delivered their drains recorded
        here, by task path (``/durable/<kind>/<identity>/<id>``) and outcome."""
        durable = durable_of(system.runtime)
        if durable is None:
            return ()
        return tuple(
            Sample(n, (("reference", label), ("outcome", outcome)))
            for label, outcome, n in durable.statistics().outcomes
        )

    def families(read: SchedulerMetrics | None) -> list[Metric]:
        m = read if read is not None else _ZERO_SCHEDULER
        runtime = system.runtime
        scheduler = None if runtime is None else runtime.schedules
        by_kind: Mapping[tuple[str, bool], int] = {}
        outcomes: tuple[Sample, ...] = ()
        if read is not None and isinstance(scheduler, Scheduler):
            stats = scheduler.statistics()
            lateness.update(stats.fired, stats.lateness)
            by_kind = stats.by_kind
            outcomes = tuple(
                Sample(n, (("reference", label), ("outcome", str(outcome))))
                for label, outcome, n in scheduler.history.counts()
            )
            outcomes += stored() + durable_outcomes()
        return [
            _one("schedule.ticks_delivered", _COUNTER,
                 "Schedule ticks handed to their target's mailbox.", m.ticks_delivered),
            _one("schedule.ticks_dead_lettered", _COUNTER,
                 "Schedule ticks whose target could not take them (dead letters).",
                 m.ticks_dead_lettered),
            Metric("schedule.ticks", _COUNTER,
                   "Schedule instants not delivered, by reference and outcome (the outcomes "
                   "of schedule_history but delivered, of actor schedules, stored "
                   "schedules and durable tasks (/durable/<kind>/<identity>/<id>); "
                   "generated references count as $generated, named ones past the first "
                   "100 as other).", "", outcomes),
            _one("schedule.ticks_discarded", _COUNTER,
                 "Ticks dropped as stale (schedule cancelled or replaced after the tick "
                 "was queued).", m.ticks_discarded),
            Metric("schedules", _GAUGE, "Live schedules by kind and paused state.", "",
                   tuple(Sample(n, (("kind", kind), ("paused", str(paused).lower())))
                         for (kind, paused), n in sorted(by_kind.items()))),
            Metric("schedule.lateness", _HISTOGRAM,
                   "How long after its deadline each tick was handed to its target.", "s",
                   (Sample(lateness.value()),)),
            _one("schedule.lateness_unsampled", _COUNTER,
                 "Ticks fired between two scrapes beyond the lateness ring buffer, so "
                 "missing from the lateness histogram (scrape more often if this grows).",
                 lateness.unsampled),
            Metric("schedule.decision_lateness", _HISTOGRAM,
                   "Stored schedules: how long after its instant each delivered instant "
                   "was claimed and decided on this node.", "s",
                   (Sample(decided.value()),)),
            Metric("schedule.start_lateness", _HISTOGRAM,
                   "Stored schedules: how long after its instant each run's handler "
                   "started on this node (a backlog shows here, not in the lateness of "
                   "the send).", "s", (Sample(started.value()),)),
        ]  # fmt: skip

    return read


def actor_source(system: ActorSystem) -> Source:
    """Live actors, mailbox depth now and high-water, restarts and dead letters."""

    def read() -> list[Metric]:
        stats = actor_stats(system.runtime)
        depths = [s.mailbox for s in stats]
        return [
            _one("actors", _GAUGE, "Live actors (durable activations included).", len(stats)),
            _one("mailbox.depth", _GAUGE, "Messages waiting in all mailboxes now.", sum(depths)),
            _one("mailbox.depth_max", _GAUGE, "Messages waiting in the fullest mailbox now.",
                 max(depths, default=0)),
            _one("mailbox.high_water", _GAUGE,
                 "Deepest any live actor's mailbox has been (sampled at each batch start).",
                 max((s.mailbox_high for s in stats), default=0)),
            _one("actor.restarts", _COUNTER, "Actor restarts by a supervisor.",
                 system.events.count(ActorRestarted)),
            _one("dead_letters", _COUNTER, "Messages that could not be delivered.",
                 system.dead_letters),
        ]  # fmt: skip

    return read


def durable_source(system: ActorSystem) -> Source:
    """Durable task runs by outcome, retries, parks, run duration and identities."""
    durations = RingHistogram(RUN_DURATION_BOUNDS)

    def read() -> list[Metric]:
        durable = durable_of(system.runtime)
        if durable is None:
            return _empty(families(DurableStatistics()))
        stats = durable.statistics()
        if not stats.timed:
            # Time runs from now on (a clock read per run only while someone reads);
            # a fresh durable runtime (restarted system) starts its ring again.
            durable.time_runs()
            durations.update(0, ())
        durations.update(stats.timed_runs, stats.durations)
        return families(stats)

    def families(counters: DurableStatistics) -> list[Metric]:
        parks = system.events.count(TaskParked)
        known, active = counters.identities_known, counters.identities_active
        ok = counters.runs - counters.failed - counters.interrupted - counters.dropped
        return [
            Metric("durable.task_runs", _COUNTER, "Durable task runs by outcome.", "", (
                Sample(ok, (("outcome", "ok"),)),
                Sample(counters.failed, (("outcome", "failed"),)),
                Sample(counters.interrupted, (("outcome", "interrupted"),)),
                Sample(counters.dropped, (("outcome", "dropped"),)),
            )),
            _one("durable.task_retries", _COUNTER,
                 "Failed task runs scheduled to run again with backoff.",
                 max(0, counters.failed - parks)),
            _one("durable.task_parks", _COUNTER,
                 "Tasks parked after their last retry failed.", parks),
            Metric("durable.task_run_duration", _HISTOGRAM, "How long each task run took.",
                   "s", (Sample(durations.value()),)),
            _one("durable.identities_active", _GAUGE, "Durable identities activated now.",
                 active),
            _one("durable.identities_known", _GAUGE,
                 "Durable identities this process holds a handle for (active or passivated).",
                 known),
        ]  # fmt: skip

    return read


def store_source(system: ActorSystem) -> Source:
    """Store call latency and errors by operation (times calls only once attached)."""
    histograms = {op: RingHistogram(STORE_CALL_BOUNDS) for op in OPERATIONS}

    def read() -> list[Metric]:
        durable = durable_of(system.runtime)
        if durable is None:
            return _empty(families({}))
        store = durable.store
        if not isinstance(store, TimedStore):
            # A fresh durable runtime (first durable actor, or a restarted system): time
            # its calls from now on. The counts start again with the new store.
            durable.wrap_store(lambda inner: TimedStore(inner, system.clock))
            store = durable.store
            assert isinstance(store, TimedStore)
            for h in histograms.values():
                h.update(0, ())
        for op, timing in store.timings.items():
            histograms[op].update(timing.calls, timing.ring)
        return families({op: t.errors for op, t in store.timings.items()})

    def families(errors_by_op: dict[str, int]) -> list[Metric]:
        samples = [Sample(h.value(), (("op", op),)) for op, h in histograms.items()]
        errors = [Sample(errors_by_op.get(op, 0), (("op", op),)) for op in histograms]
        return [
            Metric("store.call_duration", _HISTOGRAM, "Durable store call latency by operation.",
                   "s", tuple(samples)),
            Metric("store.call_errors", _COUNTER, "Durable store calls that raised, by operation.",
                   "", tuple(errors)),
        ]  # fmt: skip

    return read


#: ``RemoteMetrics`` field -> (metric name, kind, help), in the order they are reported.
_REMOTE: Final = (
    ("frames_in", "remote.frames_received", _COUNTER, "Frames received (heartbeats included)."),
    ("frames_out", "remote.frames_sent", _COUNTER, "Frames written (heartbeats included)."),
    ("bytes_in", "remote.received", _COUNTER, "Bytes received (handshakes and prefixes included)."),
    ("bytes_out", "remote.sent", _COUNTER, "Bytes written (handshakes and prefixes included)."),
    ("connections", "remote.connections", _GAUGE, "Remote connections open now (both directions)."),
    ("reconnects", "remote.reconnects", _COUNTER,
     "Connections re-established to a peer that had been up before."),
    ("auth_failures", "remote.auth_failures", _COUNTER,
     "Connections refused for a failed or unfinished handshake."),
    ("protocol_errors", "remote.protocol_errors", _COUNTER,
     "Connections closed for a bad frame (length, encoding, order)."),
    ("undecodable", "remote.undecodable", _COUNTER,
     "Frames whose message could not be decoded here (the connection stays open)."),
    ("unreachable", "remote.unreachable", _COUNTER,
     "Messages sent from here that became dead letters with reason unreachable."),
    ("overflow", "remote.overflow", _COUNTER,
     "Messages sent from here that became dead letters with reason overflow (send buffer full)."),
    ("not_found", "remote.not_found", _COUNTER,
     "Messages that arrived for an actor this node does not have."),
    ("mac_failures", "remote.mac_failures", _COUNTER,
     "Connections closed for a record whose MAC or sequence number was wrong."),
    ("handshakes_refused", "remote.handshakes_refused", _COUNTER,
     "Inbound connections refused at once: max_pending_handshakes strangers already."),
)  # fmt: skip


def remote_source(system: ActorSystem) -> Source:
    """Remoting counters (``system.remote_metrics()``); families without samples on a
    system without ``remoting`` or not running."""

    def read() -> list[Metric]:
        try:
            snapshot: RemoteMetrics | None = system.remote_metrics()
        except (RemotingDisabledError, ActorSystemNotStartedError):
            snapshot = None
        return [
            Metric(name, kind, help, "By" if field.startswith("bytes") else "",
                   () if snapshot is None else (Sample(getattr(snapshot, field)),))
            for field, name, kind, help in _REMOTE
        ]  # fmt: skip

    return read


#: ``ClusterMetrics`` field -> (metric name, kind, help).
_CLUSTER: Final = (
    ("leases_renewed", "cluster.leases_renewed", _COUNTER,
     "Lease renewals the coordinator accepted."),
    ("leases_lost", "cluster.leases_lost", _COUNTER,
     "Times this node lost its lease (it rejoins as a new incarnation)."),
    ("renew_failures", "cluster.renew_failures", _COUNTER,
     "Lease renewals that raised (coordinator unreachable)."),
    ("claims_won", "cluster.cron_claims_won", _COUNTER,
     "Cron ticks this node claimed, and so delivers."),
    ("claims_lost", "cluster.cron_claims_lost", _COUNTER,
     "Cron ticks another node claimed first."),
    ("claims_skipped_late", "cluster.cron_claims_skipped_late", _COUNTER,
     "Cron ticks reached more than their claim TTL late: not claimed."),
    ("claims_skipped_paused", "cluster.cron_claims_skipped_paused", _COUNTER,
     "Cron ticks of references paused cluster-wide: not claimed."),
    ("claims_failed", "cluster.cron_claims_failed", _COUNTER,
     "Cron claims that raised: the tick is not delivered by this node."),
    ("claims_coalesced", "cluster.cron_claims_coalesced", _COUNTER,
     "Cron ticks coalesced into a later one while a claim of theirs was in flight."),
    ("claims_reclaimed", "cluster.cron_claims_reclaimed", _COUNTER,
     "at_least_once cron ticks claimed again here after their winner's delivery lease lapsed."),
    ("claims_finished", "cluster.cron_claims_finished", _COUNTER,
     "at_least_once cron claims this node marked done (receive returned)."),
    ("claims_superseded", "cluster.cron_claims_superseded", _COUNTER,
     "at_least_once cron claims of this node re-claimed by another before it finished them."),
    ("claims_early", "cluster.cron_claims_early", _COUNTER,
     "Cron claims that waited for their instant on the coordinator's clock."),
    ("ownership_claims", "cluster.ownership_claims", _COUNTER,
     "Directory claims made for durable identities."),
    ("takeovers", "cluster.takeovers", _COUNTER,
     "Identities taken over from an owner whose lease had expired."),
    ("fenced_writes", "cluster.fenced_writes", _COUNTER,
     "Durable writes refused because a newer ownership epoch holds the identity."),
)  # fmt: skip


def cluster_source(system: ActorSystem) -> Source:
    """Cluster counters (``system.cluster.metrics()``) and live members; families without
    samples on a system without ``cluster`` or not running."""

    def read() -> list[Metric]:
        snapshot: ClusterMetrics | None = None
        members = 0
        offset: tuple[Sample, ...] = ()
        bound: tuple[Sample, ...] = ()
        if system.running:
            try:
                node = system.cluster
            except RuntimeError:  # made without cluster= (or not running any more)
                node = None
            if node is not None:
                snapshot, members = node.metrics(), len(node.members())
                offset = (Sample(node.offset),)
                bound = (Sample(node.offset_bound),)
        metrics = [
            Metric(name, kind, help, "",
                   () if snapshot is None else (Sample(getattr(snapshot, field)),))
            for field, name, kind, help in _CLUSTER
        ]  # fmt: skip
        metrics.append(
            Metric("cluster.members", _GAUGE, "Live nodes of the cluster (this one included).",
                   "", () if snapshot is None else (Sample(members),))
        )  # fmt: skip
        metrics.append(
            Metric("cluster.clock_offset", _GAUGE,
                   "Seconds to add to this node's clock to read the coordinator's "
                   "(measured at each lease renewal; applied in cluster mode).", "s", offset)
        )  # fmt: skip
        metrics.append(
            Metric("cluster.clock_offset_bound", _GAUGE,
                   "Error bound of cluster.clock_offset: half the round trip it was "
                   "measured in.", "s", bound)
        )  # fmt: skip
        return metrics

    return read


#: Sources every system's :class:`~tocsin.metrics.Metrics` reads.
SYSTEM_SOURCES: list[SourceFactory] = [
    scheduler_source,
    actor_source,
    durable_source,
    store_source,
    remote_source,
    cluster_source,
]
