# SPDX-License-Identifier: Apache-2.0
"""Calendar values: each rule, unions, zones, equality, the wire form, the holidays extra."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from tocsin import Calendar, InvalidCronExpressionError, InvalidTimezoneError
from tocsin._codec import decode, encode

PARIS = ZoneInfo("Europe/Paris")


def _paris(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=PARIS)


def test_dates_exclude_whole_days_in_the_schedules_zone() -> None:
    christmas = Calendar.dates("2026-12-25")
    assert christmas == Calendar.dates(date(2026, 12, 25))
    assert christmas.excludes(_paris(2026, 12, 25, 0, 0), PARIS)
    assert christmas.excludes(_paris(2026, 12, 25, 23, 59, 59), "Europe/Paris")
    assert not christmas.excludes(_paris(2026, 12, 24, 23, 59, 59), PARIS)
    assert not christmas.excludes(_paris(2026, 12, 26), PARIS)
    # 23:30Z on the 24th is already the 25th in Paris, not in UTC.
    late = datetime(2026, 12, 24, 23, 30, tzinfo=UTC)
    assert christmas.excludes(late, PARIS)
    assert not christmas.excludes(late, "UTC")


def test_a_christmas_calendar_skips_exactly_that_day_of_a_daily_schedule() -> None:
    from tocsin import CronExpression

    cron = CronExpression.parse("0 0 9 * * ?", "Europe/Paris")
    calendar = Calendar.dates("2026-12-25")
    fires = [f for f in cron.iter_after(_paris(2026, 12, 1)) if f < _paris(2027, 1, 1)]
    kept = [f.date() for f in fires if not calendar.excludes(f, PARIS)]
    assert len(fires) == 31
    assert len(kept) == 30
    assert date(2026, 12, 25) not in kept


def test_weekly_excludes_days_of_the_week_by_name() -> None:
    weekend = Calendar.weekly("SAT", "sun")
    assert weekend == Calendar.weekly("Sunday", "saturday")
    assert weekend.excludes(_paris(2026, 12, 5, 12), PARIS)  # a Saturday
    assert weekend.excludes(_paris(2026, 12, 6, 12), PARIS)
    assert not weekend.excludes(_paris(2026, 12, 7, 12), PARIS)
    with pytest.raises(ValueError, match=r"MON, TUE, WED, THU, FRI, SAT, SUN.*'SOL'"):
        Calendar.weekly("SOL")
    with pytest.raises(ValueError, match="at least one"):
        Calendar.weekly()


def test_daily_windows_may_wrap_midnight_and_exclude_their_end() -> None:
    night = Calendar.daily("22:00", "06:00")
    assert night.excludes(_paris(2026, 3, 1, 22, 0), PARIS)
    assert night.excludes(_paris(2026, 3, 1, 23, 59, 59), PARIS)
    assert night.excludes(_paris(2026, 3, 2, 0, 0), PARIS)
    assert night.excludes(_paris(2026, 3, 2, 5, 59, 59), PARIS)
    assert not night.excludes(_paris(2026, 3, 2, 6, 0), PARIS)
    assert not night.excludes(_paris(2026, 3, 2, 21, 59, 59), PARIS)
    lunch = Calendar.daily(time(12, 0), "13:30:00")
    assert lunch.excludes(_paris(2026, 3, 2, 13, 29), PARIS)
    assert not lunch.excludes(_paris(2026, 3, 2, 13, 30), PARIS)
    for bad in ("25:00", "7:00", "12:60", "noon"):
        with pytest.raises(ValueError, match="HH:MM"):
            Calendar.daily(bad, "13:00")
    with pytest.raises(ValueError, match="must differ"):
        Calendar.daily("06:00", "06:00")


def test_cron_excludes_the_instants_it_matches_in_the_zone() -> None:
    early = Calendar.cron("* * 0-6 ? * *")
    assert early.excludes(_paris(2026, 3, 2, 6, 59, 59), PARIS)
    assert not early.excludes(_paris(2026, 3, 2, 7, 0), PARIS)
    assert not early.excludes(datetime(2026, 3, 2, 6, 30, tzinfo=UTC), PARIS)  # 07:30 Paris
    assert Calendar.cron("0 0 12 ? * MON").excludes(_paris(2026, 3, 2, 12), PARIS)
    with pytest.raises(InvalidCronExpressionError):
        Calendar.cron("not cron")


def test_rules_combine_with_or_and_compare_as_values() -> None:
    combined = (
        Calendar.dates("2026-12-25") | Calendar.weekly("SUN") | Calendar.daily("22:00", "06:00")
    )
    assert combined.excludes(_paris(2026, 12, 25, 12), PARIS)
    assert combined.excludes(_paris(2026, 12, 27, 12), PARIS)  # a Sunday
    assert combined.excludes(_paris(2026, 12, 28, 23), PARIS)
    assert not combined.excludes(_paris(2026, 12, 28, 12), PARIS)
    assert Calendar.dates("2026-12-25") | Calendar.dates("2027-01-01") == Calendar.dates(
        "2027-01-01", "2026-12-25"
    )
    assert hash(Calendar.weekly("SAT") | Calendar.weekly("SUN")) == hash(
        Calendar.weekly("SUN", "SAT")
    )
    assert Calendar.weekly("SAT") != Calendar.weekly("SUN")
    assert Calendar.weekly("SAT") != "SAT"
    assert {combined, combined} == {combined}
    with pytest.raises(TypeError):
        combined | "SAT"  # __or__ takes any object and returns NotImplemented
    with pytest.raises(AttributeError):
        combined._rules = None  # type: ignore[assignment]
    assert "Calendar.weekly('SUN')" in repr(combined)


def test_bad_inputs_are_refused_at_the_call() -> None:
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        Calendar.dates("25/12/2026")
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        Calendar.dates("2026-02-30")
    with pytest.raises(TypeError, match="not datetimes"):
        Calendar.dates(datetime(2026, 12, 25))
    with pytest.raises(ValueError, match="at least one"):
        Calendar.dates()
    calendar = Calendar.weekly("SUN")
    with pytest.raises(ValueError, match="aware"):
        calendar.excludes(datetime(2026, 1, 1), PARIS)
    with pytest.raises(InvalidTimezoneError):
        calendar.excludes(datetime(2026, 1, 1, tzinfo=UTC), "Mars/Olympus")


def test_the_wire_form_is_canonical_codec_safe_and_round_trips() -> None:
    one = Calendar.dates("2027-01-01", "2026-12-25") | Calendar.weekly("SUN", "SAT")
    two = Calendar.weekly("SAT") | Calendar.dates("2026-12-25") | Calendar.weekly("SUN")
    two = two | Calendar.dates("2027-01-01")
    both = one | Calendar.daily("22:00", "06:00") | Calendar.cron("0 0 12 ? * MON")
    assert one.to_wire() == two.to_wire()
    assert one.fingerprint == two.fingerprint
    assert one.fingerprint != both.fingerprint
    wire = both.to_wire()
    assert decode(encode(wire)) == wire  # codec-safe
    assert Calendar.from_wire(decode(encode(wire))) == both
    assert Calendar.from_wire(wire).fingerprint == both.fingerprint
    bad: object
    for bad in (
        None,
        [],
        {**wire, "calendar": 2},
        {**wire, "dates": ["tomorrow"]},
        {**wire, "weekly": ["SOL"]},
        {**wire, "daily": [["22:00"]]},
        {**wire, "daily": [["06:00:00", "06:00:00"]]},
        {**wire, "cron": ["bad"]},
        {**wire, "holidays": [["FR", 3]]},
        {key: value for key, value in wire.items() if key != "cron"},
    ):
        with pytest.raises(ValueError):
            Calendar.from_wire(bad)


def test_the_fingerprint_is_the_same_in_every_process() -> None:
    code = (
        "from tocsin import Calendar\n"
        "print((Calendar.weekly('SAT', 'SUN') | Calendar.dates('2026-12-25')).fingerprint)"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert outputs == {(Calendar.weekly("SAT", "SUN") | Calendar.dates("2026-12-25")).fingerprint}


def test_holidays_without_the_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "holidays", None)  # makes `import holidays` fail
    with pytest.raises(ImportError, match=r"pip install 'tocsin\[holidays\]'"):
        Calendar.holidays("FR")
    stored = {**Calendar.weekly("SUN").to_wire(), "holidays": [["FR", None]]}
    calendar = Calendar.from_wire(stored)  # reading a stored one imports nothing ...
    with pytest.raises(ImportError, match=r"tocsin\[holidays\]"):
        calendar.excludes(_paris(2026, 12, 25, 12), PARIS)  # ... using it needs the package
    assert calendar.excludes(_paris(2026, 12, 27, 12), PARIS)  # other rules answer first


def test_importing_tocsin_does_not_import_holidays() -> None:
    code = "import sys, tocsin; print('holidays' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "False"


class _FakeHolidays:
    """Stands for the holidays package: its two functions Calendar uses."""

    __version__ = "fake"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, object]] = []

    def country_holidays(
        self, country: str, subdiv: str | None = None, years: object = None
    ) -> dict[date, str]:
        self.calls.append((country, subdiv, years))
        if country != "FR" or subdiv not in (None, "57"):
            raise NotImplementedError(f"Country {country} not available")
        year = years if isinstance(years, int) else 2026
        days = {date(year, 12, 25): "Christmas"}
        if subdiv == "57":
            days[date(year, 12, 26)] = "Saint Stephen's Day"
        return days

    def list_supported_countries(self) -> dict[str, list[str]]:
        return {"FR": ["57"]}


def test_holidays_ask_the_package_per_year_once_and_map_its_unknown_country(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tocsin.cron import _calendar

    fake = _FakeHolidays()
    monkeypatch.setitem(sys.modules, "holidays", fake)
    _calendar._holiday_dates.cache_clear()
    try:
        moselle = Calendar.holidays("fr", subdiv="57")
        assert moselle.excludes(_paris(2031, 12, 26, 9), PARIS)
        assert moselle.excludes(_paris(2031, 12, 25, 10), PARIS)
        assert not moselle.excludes(_paris(2031, 12, 27, 9), PARIS)
        assert [call for call in fake.calls if call[2] == 2031] == [("FR", "57", 2031)]
        with pytest.raises(ValueError, match=r"unknown country 'XX'.*known countries: FR"):
            Calendar.holidays("XX")
    finally:
        _calendar._holiday_dates.cache_clear()


def test_holidays_exclude_public_holidays_of_a_country_and_subdivision() -> None:
    # The real package (the `holidays` extra, in `dev`).
    france = Calendar.holidays("fr")
    assert france == Calendar.holidays("FR")
    assert france.excludes(_paris(2026, 12, 25, 9), PARIS)
    assert france.excludes(_paris(2027, 7, 14, 9), PARIS)
    assert not france.excludes(_paris(2026, 12, 26, 9), PARIS)
    moselle = Calendar.holidays("FR", subdiv="57")
    assert moselle != france
    assert moselle.excludes(_paris(2026, 12, 26, 9), PARIS)  # Saint Stephen's Day there
    assert Calendar.from_wire(moselle.to_wire()) == moselle
    with pytest.raises(ValueError, match="unknown country 'XX'"):
        Calendar.holidays("XX")
    with pytest.raises(ValueError, match="subdivision 'ZZ'"):
        Calendar.holidays("FR", subdiv="ZZ")
    with pytest.raises(ValueError, match="country code"):
        Calendar.holidays("")
    # One evaluation per day and zone is cheap: the year's dates are cached.
    start = _paris(2026, 1, 1, 9)
    days = [start + timedelta(days=n) for n in range(365)]
    assert sum(france.excludes(day, PARIS) for day in days) == 11
