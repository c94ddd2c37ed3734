# SPDX-License-Identifier: Apache-2.0
"""jitter_offset: stable across processes, bounded by the jitter and the next instant,
uniform over its window."""

from __future__ import annotations

import math
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import pytest

from tocsin.triggers import jitter_offset

MIDNIGHT = datetime(2026, 12, 1, tzinfo=UTC)


def test_100000_references_on_one_minute_spread_uniformly_over_the_window() -> None:
    buckets = [0] * 10
    for number in range(100_000):
        offset = jitter_offset(f"report-{number}", MIDNIGHT, 60, 60)
        assert 0.0 <= offset < 60.0
        buckets[int(offset // 6)] += 1
    # Each decile within 5% of the uniform 10,000 ...
    assert all(9_500 <= count <= 10_500 for count in buckets), buckets
    # ... and a chi-square (9 degrees of freedom) well under its 0.1% critical value 27.9.
    chi_square = sum((count - 10_000) ** 2 / 10_000 for count in buckets)
    assert chi_square < 27.9, (chi_square, buckets)


def test_the_offset_is_capped_by_the_gap_to_the_next_instant() -> None:
    offsets = [jitter_offset(f"r{n}", MIDNIGHT, 3600, 60) for n in range(2000)]
    assert all(0.0 <= offset < 60.0 for offset in offsets)
    assert max(offsets) > 55  # the cap is the window, not a clamp at the edge
    assert jitter_offset("r", MIDNIGHT, 30, None) < 30
    assert jitter_offset("r", MIDNIGHT, 0, 60) == 0.0
    assert jitter_offset("r", MIDNIGHT, 30, 0) == 0.0
    tiny = jitter_offset("r", MIDNIGHT, 5e-324, None)
    assert 0.0 <= tiny < 5e-324  # the window is one denormal: the offset is 0.0


def test_the_offset_depends_on_reference_and_instant_not_on_the_zone_or_process() -> None:
    same = MIDNIGHT.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert jitter_offset("nightly", same, 60, None) == jitter_offset("nightly", MIDNIGHT, 60, None)
    assert jitter_offset("nightly", MIDNIGHT, 60, None) != jitter_offset(
        "other", MIDNIGHT, 60, None
    )
    later = MIDNIGHT + timedelta(days=1)
    assert jitter_offset("nightly", later, 60, None) != jitter_offset("nightly", MIDNIGHT, 60, None)
    assert jitter_offset("nightly", MIDNIGHT, timedelta(minutes=1), None) == jitter_offset(
        "nightly", MIDNIGHT, 60, None
    )
    # A golden value: the hash is part of the cluster contract (every node, every version).
    code = (
        "from datetime import datetime, UTC\n"
        "from tocsin.triggers import jitter_offset\n"
        "print(repr(jitter_offset('nightly', datetime(2026, 12, 1, tzinfo=UTC), 60, None)))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert outputs == {repr(jitter_offset("nightly", MIDNIGHT, 60, None))}


@pytest.mark.parametrize(
    ("jitter", "gap", "error"),
    [
        (-1, None, ValueError),
        (math.nan, None, ValueError),
        (math.inf, None, ValueError),
        (10, -1, ValueError),
        ("10", None, TypeError),
        (True, None, TypeError),
    ],
)
def test_bad_values_are_refused(jitter: object, gap: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=r"jitter|gap_to_next"):
        jitter_offset("r", MIDNIGHT, jitter, gap)  # type: ignore[arg-type]


def test_a_naive_instant_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        jitter_offset("r", datetime(2026, 1, 1), 10, None)
