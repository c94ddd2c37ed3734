# SPDX-License-Identifier: Apache-2.0
"""Prometheus export: a ``prometheus_client`` collector, and the text exposition.

Needs the ``metrics`` extra (``pip install tocsin[metrics]``). Names follow Prometheus
conventions: ``tocsin_`` prefix, base unit suffix (``_seconds``), ``_total`` on counters
(added by ``prometheus_client``), labels for dimensions of one quantity.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, final

from ._model import HistogramValue, MetricKind
from ._registry import Metrics

__all__ = ["PrometheusCollector", "prometheus_endpoint"]

_HINT = "Prometheus export needs prometheus_client: pip install 'tocsin[metrics]'"


def _client() -> Any:
    try:
        import prometheus_client
        import prometheus_client.core
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(_HINT) from exc
    return prometheus_client


@final
class PrometheusCollector:
    """A ``prometheus_client`` collector that reads ``metrics`` on every scrape.

    Register it in any registry (``prometheus_client.REGISTRY.register(...)``) to serve
    tocsin's metrics from your own ``/metrics``; the console serves its own.
    """

    def __init__(self, metrics: Metrics) -> None:
        self._core = _client().core
        self.metrics = metrics

    def describe(self) -> list[Any]:
        # Empty: registering must not read the system (it may not be started yet).
        return []

    def collect(self) -> Iterator[Any]:
        core = self._core
        for metric in self.metrics.collect():
            name = metric.prometheus_name
            labels = sorted({k for s in metric.samples for k, _ in s.labels})
            if metric.kind is MetricKind.COUNTER:
                family: Any = core.CounterMetricFamily(name, metric.help, labels=labels)
            elif metric.kind is MetricKind.GAUGE:
                family = core.GaugeMetricFamily(name, metric.help, labels=labels)
            else:
                family = core.HistogramMetricFamily(name, metric.help, labels=labels)
            for sample in metric.samples:
                values = [dict(sample.labels).get(k, "") for k in labels]
                value = sample.value
                if isinstance(value, HistogramValue):
                    family.add_metric(values, value.cumulative(), value.sum)
                else:
                    family.add_metric(values, value)
            yield family


def prometheus_endpoint(metrics: Metrics) -> Callable[[], tuple[bytes, str]]:
    """A function returning ``(body, content type)`` of the text exposition of
    ``metrics``: what the console's ``/metrics`` serves (pass it as ``metrics=``)."""
    client = _client()
    registry = client.CollectorRegistry(auto_describe=False)
    registry.register(PrometheusCollector(metrics))

    def expose() -> tuple[bytes, str]:
        return client.generate_latest(registry), client.CONTENT_TYPE_LATEST

    return expose
