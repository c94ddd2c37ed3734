# SPDX-License-Identifier: Apache-2.0
"""Prometheus and OpenTelemetry exporters: names, types and values as each ecosystem reads them."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricsData
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tocsin import Actor, ActorSystem, ManualClock, ReceiveContext
from tocsin.metrics import Metrics, PrometheusCollector, instrument_otel, prometheus_endpoint

T0 = 1_700_000_000.0


def collect(reader: InMemoryMetricReader) -> MetricsData:
    """One collection (the reader is attached: it always has data)."""
    data = reader.get_metrics_data()
    assert data is not None
    return data


class Sink(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        pass


async def _system_with_ticks(clock: ManualClock) -> ActorSystem:
    system = ActorSystem(clock=clock)
    await system.start()
    pid = await system.spawn(Sink, "sink")
    await system.schedule("t", pid, 1.0, reference="every")
    await system.schedule_cron("t", pid, "0 0 12 * * ?", reference="noon", timezone="UTC")
    return system


def _families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


async def test_prometheus_exposition_parses_with_conventional_names_and_types() -> None:
    clock = ManualClock(wall=T0)
    system = await _system_with_ticks(clock)
    try:
        expose = prometheus_endpoint(Metrics.of(system))
        await clock.advance(3.0)
        body, content_type = expose()
        assert content_type.startswith("text/plain")
        families = _families(body.decode())
        # The parser strips _total from counter family names, as Prometheus does.
        ticks = families["tocsin_schedule_ticks_delivered"]
        assert ticks.type == "counter"
        assert ticks.samples[0].name == "tocsin_schedule_ticks_delivered_total"
        assert ticks.samples[0].value == 3
        lateness = families["tocsin_schedule_lateness_seconds"]
        assert lateness.type == "histogram"
        count = [s for s in lateness.samples if s.name.endswith("_count")]
        assert count[0].value == 3
        inf = [s for s in lateness.samples if s.labels.get("le") == "+Inf"]
        assert inf[0].value == 3
        schedules = families["tocsin_schedules"]
        assert schedules.type == "gauge"
        kinds = {(s.labels["kind"], s.labels["paused"]): s.value for s in schedules.samples}
        assert kinds == {("cron", "false"): 1, ("interval", "false"): 1}
        assert families["tocsin_actors"].samples[0].value == 1
    finally:
        await system.stop()


async def test_collector_registers_in_a_users_registry_before_the_system_starts() -> None:
    clock = ManualClock(wall=T0)
    system = ActorSystem(clock=clock)
    registry = CollectorRegistry()
    registry.register(PrometheusCollector(Metrics.of(system)))  # must not read the system
    before = _families(generate_latest(registry).decode())
    assert before["tocsin_schedule_ticks_delivered"].samples == []
    await system.start()
    try:
        after = _families(generate_latest(registry).decode())
        assert after["tocsin_schedule_ticks_delivered"].samples[0].value == 0
    finally:
        await system.stop()


async def test_otel_observable_instruments_report_counters_gauges_and_histograms() -> None:
    clock = ManualClock(wall=T0)
    system = await _system_with_ticks(clock)
    try:
        reader = InMemoryMetricReader()
        provider = MeterProvider(metric_readers=[reader])
        instruments = instrument_otel(Metrics.of(system), provider)
        assert instruments
        await clock.advance(2.0)
        reader.get_metrics_data()  # first collection: histograms record what was new
        await clock.advance(1.0)
        data = collect(reader)
        points: dict[str, Any] = {}
        units: dict[str, str | None] = {}
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                assert sm.scope.name == "tocsin"
                for metric in sm.metrics:
                    points[metric.name] = metric.data
                    units[metric.name] = metric.unit
        ticks = points["tocsin.schedule.ticks_delivered"]
        assert ticks.is_monotonic
        assert ticks.data_points[0].value == 3
        assert units["tocsin.schedule.lateness"] == "s"
        lateness = points["tocsin.schedule.lateness"].data_points[0]
        assert lateness.count >= 2  # recorded at collection time: this one or the last
        kinds = {
            (p.attributes["kind"], p.attributes["paused"]): p.value
            for p in points["tocsin.schedules"].data_points
        }
        assert kinds[("interval", "false")] == 1
        provider.shutdown()
    finally:
        await system.stop()


async def test_otel_instruments_made_before_start_cover_every_metric() -> None:
    from tocsin.stores import MemoryStore

    clock = ManualClock(wall=T0)
    system = ActorSystem(clock=clock, store=MemoryStore())
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instruments = instrument_otel(Metrics.of(system), provider)
    names = {i.name for i in instruments}
    assert {"tocsin.durable.task_runs", "tocsin.store.call_duration",
            "tocsin.schedule.lateness", "tocsin.actor.restarts"} <= names  # fmt: skip
    await system.start()
    try:
        data = collect(reader)
        seen = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics
                for m in sm.metrics}  # fmt: skip
        assert "tocsin.durable.task_runs" in seen
        assert "tocsin.schedule.ticks_delivered" in seen
    finally:
        await system.stop()
        provider.shutdown()


async def test_cluster_counters_reach_prometheus_and_otel_with_their_values() -> None:
    import uuid
    from datetime import UTC, datetime

    from tocsin import Cluster

    clock = ManualClock(wall=datetime(2030, 1, 1, 9, 0, 30, tzinfo=UTC).timestamp())
    url = f"memory://{uuid.uuid4().hex}"
    systems = [ActorSystem(n, clock=clock, cluster=Cluster(url, lease=3.0)) for n in "ab"]
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instrument_otel(Metrics.of(systems[0]), provider)
    try:
        for system in systems:
            await system.start()
            pid = await system.spawn(Sink, "sink")
            await system.schedule_cron("t", pid, "0 * * * * ?", reference="report")
        await clock.advance(120)  # 09:01 and 09:02: each claimed by one node, lost by one
        texts = [_families(prometheus_endpoint(Metrics.of(s))()[0].decode()) for s in systems]
        for families in texts:
            assert families["tocsin_cluster_members"].samples[0].value == 2
            assert families["tocsin_cluster_leases_renewed"].type == "counter"
            assert families["tocsin_cluster_leases_renewed"].samples[0].value > 0
            for name in ("leases_lost", "renew_failures", "cron_claims_skipped_late",
                         "cron_claims_skipped_paused", "cron_claims_failed",
                         "ownership_claims", "takeovers", "fenced_writes"):  # fmt: skip
                family = families[f"tocsin_cluster_{name}"]
                assert family.type == "counter"
                assert family.samples[0].name == f"tocsin_cluster_{name}_total"
                assert family.samples[0].value == 0

        def total(name: str) -> float:
            return float(sum(f[f"tocsin_cluster_{name}"].samples[0].value for f in texts))

        assert (total("cron_claims_won"), total("cron_claims_lost")) == (2, 2)
        points: dict[str, Any] = {
            m.name: m.data
            for rm in collect(reader).resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
        }
        mine = texts[0]
        assert points["tocsin.cluster.members"].data_points[0].value == 2
        for name in ("cron_claims_won", "cron_claims_lost", "takeovers", "fenced_writes"):
            counter = points[f"tocsin.cluster.{name}"]
            assert counter.is_monotonic
            assert counter.data_points[0].value == mine[f"tocsin_cluster_{name}"].samples[0].value
    finally:
        for system in systems:
            await system.stop()
        provider.shutdown()


def test_every_metric_is_listed_by_its_full_name_in_the_operations_guide() -> None:
    from pathlib import Path

    from tocsin.metrics import MetricKind

    guide = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    table = guide.split("### Every metric", 1)[1].split("\n\n", 2)[1]
    missing = []
    for metric in Metrics.of(ActorSystem()).collect():  # every family, before start
        name = metric.prometheus_name
        name += "_total" if metric.kind is MetricKind.COUNTER else ""
        if f"`{name}`" not in table:
            missing.append(name)
    assert missing == []


async def test_not_delivered_instants_are_counted_by_reference_and_outcome() -> None:
    from tocsin import Directive
    from tocsin.scheduling._history import GENERATED_LABEL, MAX_REFERENCE_LABELS, OTHER_LABEL

    clock = ManualClock(wall=T0)
    system = ActorSystem(clock=clock)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instrument_otel(Metrics.of(system), provider)
    expose = prometheus_endpoint(Metrics.of(system))
    await system.start()
    try:
        target = await system.spawn(Sink, "sink", supervisor=Directive.SUSPEND)
        refs = [f"r{n}" for n in range(MAX_REFERENCE_LABELS + 2)]
        for ref in refs:
            await system.schedule("t", target, 1.0, reference=ref)
            await system.pause_schedule(ref)
        await system.schedule("t", target, 1.0)  # generated: $schedule-1
        await system.pause_schedule("$schedule-1")
        await clock.advance(2.0)
        for ref in [*refs, "$schedule-1"]:
            await system.resume_schedule(ref)  # two instants each came due while paused
        family = _families(expose()[0].decode())["tocsin_schedule_ticks"]
        assert family.type == "counter"
        values = {(s.labels["reference"], s.labels["outcome"]): s.value for s in family.samples}
        assert values[("r0", "paused")] == 2
        assert values[(GENERATED_LABEL, "paused")] == 2
        assert values[(OTHER_LABEL, "paused")] == 4  # r100 and r101: past the cap
        assert len(values) == MAX_REFERENCE_LABELS + 2
        assert {s.name for s in family.samples} == {"tocsin_schedule_ticks_total"}
        points: dict[tuple[Any, Any], Any] = {
            (p.attributes["reference"], p.attributes["outcome"]): getattr(p, "value", None)
            for rm in collect(reader).resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == "tocsin.schedule.ticks"
            for p in m.data.data_points
            if p.attributes is not None
        }
        assert points == values
    finally:
        await system.stop()
        provider.shutdown()
