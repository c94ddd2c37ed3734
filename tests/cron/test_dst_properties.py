# SPDX-License-Identifier: Apache-2.0
"""Hypothesis properties of the DST policies: how the sets of fire times relate.

Anchored on the changes of offset the DST vectors use (27 zones), with a random start
within a day of each and random dense expressions (tests/strategies.py), so nearly
every example crosses a gap or a fold.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.cron.test_dst_vectors import ROWS
from tests.strategies import dense_cron_expressions

from tocsin.cron import CronExpression, DSTPolicy

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: (zone, an instant a little before one of its changes of offset), from the vectors.
_ANCHORS = sorted(
    {(row.tz, row.start_ms // 1000) for row in ROWS if row.category.endswith("-minute")}
)
_SPAN = 4 * 3600


def _fires(cron: CronExpression, start: datetime, policy: DSTPolicy) -> set[int]:
    out: set[int] = set()
    previous = -1
    end = int(start.timestamp()) + _SPAN
    for fire in cron.iter_after(start, dst=policy):
        seconds = int(fire.timestamp())
        if seconds > end or len(out) > 300:
            break
        # Strictly increasing, each once. (Compared as instants: two datetimes in the
        # same zone compare by wall time, ignoring fold, PEP 495.)
        assert seconds > previous
        assert cron.matches(fire, dst=policy)
        previous = seconds
        out.add(seconds)
    return out


@_SETTINGS
@given(
    anchor=st.sampled_from(_ANCHORS),
    offset=st.integers(min_value=-3 * 3600, max_value=2 * 3600),
    text=dense_cron_expressions(),
    gap=st.sampled_from(["next", "shift", "skip"]),
)
def test_fold_both_is_first_and_last_together(
    anchor: tuple[str, int], offset: int, text: str, gap: str
) -> None:
    zone, seconds = anchor
    cron = CronExpression.parse(text, zone)
    start = datetime.fromtimestamp(seconds + offset, UTC)
    first = _fires(cron, start, DSTPolicy(gap=gap, fold="first"))  # type: ignore[arg-type]
    last = _fires(cron, start, DSTPolicy(gap=gap, fold="last"))  # type: ignore[arg-type]
    both = _fires(cron, start, DSTPolicy(gap=gap, fold="both"))  # type: ignore[arg-type]
    horizon = min(max(fires | {0}) for fires in (first, last, both))  # all three complete
    assert {s for s in both if s <= horizon} == {s for s in first | last if s <= horizon}


@_SETTINGS
@given(
    anchor=st.sampled_from(_ANCHORS),
    offset=st.integers(min_value=-3 * 3600, max_value=2 * 3600),
    text=dense_cron_expressions(),
    fold=st.sampled_from(["first", "last", "both"]),
)
def test_skip_is_contained_in_next_and_shift_and_contains_quartz(
    anchor: tuple[str, int], offset: int, text: str, fold: str
) -> None:
    zone, seconds = anchor
    cron = CronExpression.parse(text, zone)
    start = datetime.fromtimestamp(seconds + offset, UTC)
    sets = {
        gap: _fires(cron, start, DSTPolicy(gap=gap, fold=fold))  # type: ignore[arg-type]
        for gap in ("quartz", "next", "shift", "skip")
    }
    horizon = min(max(fires | {0}) for fires in sets.values())
    cut = {gap: {s for s in fires if s <= horizon} for gap, fires in sets.items()}
    assert cut["skip"] <= cut["next"]
    assert cut["skip"] <= cut["shift"]
    assert cut["quartz"] <= cut["skip"]  # Quartz only passes over more


@_SETTINGS
@given(anchor=st.sampled_from(_ANCHORS), hour=st.integers(0, 23), minute=st.integers(0, 59))
def test_never_skip_fires_a_daily_job_once_on_each_day_around_a_change(
    anchor: tuple[str, int], hour: int, minute: int
) -> None:
    zone, seconds = anchor
    cron = CronExpression.parse(f"0 {minute} {hour} * * ?", zone)
    start = datetime.fromtimestamp(seconds - 3 * 86400, UTC)
    fires = [
        fire
        for _, fire in zip(
            range(6), cron.iter_after(start, dst=DSTPolicy.never_skip()), strict=False
        )
    ]
    # The day each fire is the run of: a nominal time inside a gap runs at the gap's end,
    # which is the next day when the gap spans midnight (America/Nuuk, 2024-03-30 23:00
    # runs at 2024-03-31 00:00 -01:00): still that day's one run.
    days = [
        (
            fire.replace(tzinfo=None)
            - timedelta(minutes=(fire.hour * 60 + fire.minute - hour * 60 - minute) % 1440)
        ).date()
        for fire in fires
    ]
    if zone == "Pacific/Apia" and seconds < 1_400_000_000:
        # Samoa skipped 30 December 2011 whole: that day has no instant to fire at.
        assert len(set(days)) == len(days)
        return
    assert days == [days[0] + timedelta(days=n) for n in range(6)]


_REFERENCE_ZONES: dict[str, Any] = {}
_MINUTES = st.sampled_from(["*", "0", "30", "*/15", "10,35", "0-20/7", "5-55/10", "59", "1,2,3"])
_HOURS = st.sampled_from(["*", "*/2", "0-4", "1,2,3", "2", "23,0,1", "*/5"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    anchor=st.sampled_from(_ANCHORS),
    offset=st.integers(min_value=-2 * 3600, max_value=2 * 3600),
    minutes=_MINUTES,
    hours=_HOURS,
    gap=st.sampled_from(["quartz", "next", "shift", "skip"]),
    fold=st.sampled_from(["quartz", "first", "last", "both"]),
)
def test_the_engine_agrees_with_the_reference_on_random_expressions_and_starts(
    anchor: tuple[str, int], offset: int, minutes: str, hours: str, gap: str, fold: str
) -> None:
    from tests.cron import dst_reference as reference

    zone_name, seconds = anchor
    text = f"0 {minutes} {hours} * * ?"
    start = seconds + offset
    zone = _REFERENCE_ZONES.setdefault(zone_name, reference.Zone(zone_name))  # its cache
    window = reference.Window(
        zone,
        reference.Matcher.parse(text),
        start - start % 60 - 86400,
        start - start % 60 + 7 * 86400,
    )
    cron = CronExpression.parse(text, zone_name)
    policy = DSTPolicy(gap=gap, fold=fold)  # type: ignore[arg-type]
    moment = datetime.fromtimestamp(start, UTC)
    expected = start
    for _ in range(4):
        expected = window.next_after(gap, fold, expected)
        fire = cron.next_after(moment, dst=policy)
        assert fire is not None
        assert int(fire.timestamp()) == expected, (text, zone_name, start, gap, fold)
        moment = fire
