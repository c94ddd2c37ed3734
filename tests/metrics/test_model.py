# SPDX-License-Identifier: Apache-2.0
"""RingHistogram and Metric naming: pure logic, no system."""

from __future__ import annotations

import pytest

from tocsin.metrics import Metric, MetricKind, RingHistogram


def test_update_counts_each_new_observation_into_its_bucket() -> None:
    h = RingHistogram([0.1, 1.0])
    ring = [0.0] * 8
    for i, v in enumerate([0.05, 0.1, 0.5, 2.0]):
        ring[i] = v
    h.update(4, ring)
    value = h.value()
    assert value.counts == (2, 1, 1)  # <=0.1 (0.1 included), <=1.0, +Inf
    assert value.count == 4
    assert value.sum == pytest.approx(2.65)
    assert value.cumulative() == [("0.1", 2), ("1.0", 3), ("+Inf", 4)]
    assert value.new == (0.05, 0.1, 0.5, 2.0)


def test_update_reads_only_observations_made_since_the_last_one() -> None:
    h = RingHistogram([1.0])
    ring = [0.5, 0.5, 3.0, 0.0]
    h.update(2, ring)
    h.update(3, ring)
    assert h.value().counts == (2, 1)
    assert h.value().new == (3.0,)
    h.update(3, ring)
    assert h.value().new == ()
    assert h.value().count == 3


def test_observations_beyond_the_ring_are_counted_as_unsampled_not_lost() -> None:
    h = RingHistogram([1.0])
    ring = [0.5] * 4
    h.update(10, ring)  # 10 made, only the last 4 still in the ring
    assert h.value().count == 4
    assert h.unsampled == 6


def test_a_restarted_counter_starts_again_without_going_backwards() -> None:
    h = RingHistogram([1.0])
    h.update(5, [0.1] * 8)
    h.update(2, [0.1] * 8)  # a new scheduler: its counter began again
    assert h.value().count == 5
    h.update(3, [0.1] * 8)
    assert h.value().count == 6


def test_bounds_must_be_sorted_and_distinct() -> None:
    with pytest.raises(ValueError, match="sorted"):
        RingHistogram([1.0, 0.5])
    with pytest.raises(ValueError, match="non-empty"):
        RingHistogram([])


def test_names_follow_each_ecosystem() -> None:
    m = Metric("schedule.lateness", MetricKind.HISTOGRAM, "x", "s")
    assert m.prometheus_name == "tocsin_schedule_lateness_seconds"
    assert m.otel_name == "tocsin.schedule.lateness"
    assert Metric("durable.task_runs", MetricKind.COUNTER, "x").prometheus_name == (
        "tocsin_durable_task_runs"
    )


def test_metrics_import_without_aiohttp_and_the_console_says_what_to_install() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['aiohttp'] = None\n"
        "import tocsin.metrics\n"
        "try:\n"
        "    import tocsin.console\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'tocsin[console]'" in out.stdout
