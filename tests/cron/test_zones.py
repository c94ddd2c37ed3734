# SPDX-License-Identifier: Apache-2.0
"""The one zone lookup (``tocsin.cron._zones``, issue 21): a cron expression's zone, a
schedule's zone, ``tocsin cron next`` and the system's default zone agree on the same
inputs (an unknown name, the names of UTC, the local zone from ``TZ``)."""

from __future__ import annotations

import argparse
import json
import zoneinfo
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tocsin import ActorSystem
from tocsin.cli._cron import register
from tocsin.cron import CronExpression, _zones
from tocsin.cron._zones import local_zone, local_zone_name, same_zone, zone
from tocsin.errors import InvalidTimezoneError
from tocsin.scheduling._cron import CronState

#: 2025-06-01T00:00:00Z: summer, so zones with equal winter offsets differ here.
WALL = datetime(2025, 6, 1, tzinfo=UTC).timestamp()
EXPRESSION = "0 0 12 * * ?"


def _cli_fires(capsys: pytest.CaptureFixture[str], *tz: str) -> tuple[str, list[str]]:
    """The zone and the UTC fire times ``tocsin cron next`` prints (JSON) after WALL."""
    parser = argparse.ArgumentParser(prog="tocsin")
    register(parser.add_subparsers(dest="command"))
    after = datetime.fromtimestamp(WALL, UTC).isoformat()
    argv = ["cron", "next", EXPRESSION, *tz, "--after", after, "--count", "2", "--json"]
    args = parser.parse_args(argv)
    assert args.func(args) == 0
    document = json.loads(capsys.readouterr().out)
    return document["timezone"], [fire["utc"] for fire in document["fire_times"]]


def _utc(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat().replace("+00:00", "Z")


def test_an_unknown_zone_is_refused_by_name_by_every_caller(
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = "Mars/Olympus"
    refusals = []
    for call in (
        lambda: zone(name),
        lambda: CronExpression.parse(EXPRESSION, name),
        lambda: CronState.create(EXPRESSION, name, WALL),
    ):
        with pytest.raises(InvalidTimezoneError) as caught:
            call()
        refusals.append(str(caught.value))
    assert len(set(refusals)) == 1  # one wording, naming the zone
    assert f"unknown time zone {name!r}" in refusals[0]
    parser = argparse.ArgumentParser(prog="tocsin")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["cron", "next", EXPRESSION, "--tz", name])
    assert args.func(args) == 2
    assert repr(name) in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["", "../../etc/passwd", "/usr/share/zoneinfo/UTC"])
def test_names_that_are_no_zone_key_are_refused(bad: str) -> None:
    with pytest.raises(InvalidTimezoneError, match="IANA zone name"):
        zone(bad)
    with pytest.raises(InvalidTimezoneError):
        CronExpression.parse(EXPRESSION, bad)


def test_the_names_of_utc_are_one_zone_for_every_caller(
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = ("UTC", "Etc/UTC", "Zulu")
    for a in names:
        for b in names:
            assert same_zone(a, b)
    expected = ["2025-06-01T12:00:00Z", "2025-06-02T12:00:00Z"]
    for name in names:
        expression = CronExpression.parse(EXPRESSION, name)
        fire = expression.next_after(datetime.fromtimestamp(WALL, UTC))
        assert fire is not None
        assert _utc(fire.timestamp()) == expected[0]
        assert _utc(CronState.create(EXPRESSION, name, WALL).next_wall) == expected[0]
        assert _cli_fires(capsys, "--tz", name) == (name, expected)
    assert not same_zone("UTC", "Europe/London")  # same offset in winter, not in summer


@pytest.mark.parametrize(
    ("tz", "name"), [("Asia/Kolkata", "Asia/Kolkata"), (":Europe/Paris", "Europe/Paris")]
)
def test_the_local_zone_from_tz_is_the_same_for_every_caller(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tz: str, name: str
) -> None:
    monkeypatch.setenv("TZ", tz)
    assert local_zone_name() == name
    assert local_zone() is zone(name)
    assert ActorSystem().timezone == name  # the default zone of schedules and durable cron
    shown, fires = _cli_fires(capsys)  # no --tz: the local zone
    assert shown == name
    state = CronState.create(EXPRESSION, local_zone_name(), WALL)
    assert fires[0] == _utc(state.next_wall)


def test_an_unknown_tz_falls_back_the_same_way_for_every_caller(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TZ", "Mars/Olympus")
    fallback = local_zone_name()  # /etc/localtime's zone, else UTC: never the unknown name
    assert fallback != "Mars/Olympus"
    zone(fallback)
    assert ActorSystem().timezone == fallback
    assert _cli_fires(capsys)[0] == fallback


@pytest.mark.parametrize("linked", [True, False], ids=["a link", "a copy"])
def test_the_local_zone_from_etc_localtime_is_the_same_for_every_caller(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    linked: bool,
) -> None:
    data = tmp_path / "zoneinfo" / "Asia" / "Tokyo"
    data.parent.mkdir(parents=True)
    tokyo = zone("Asia/Tokyo")
    source = next(
        Path(root, "Asia", "Tokyo")
        for root in zoneinfo.TZPATH
        if Path(root, "Asia", "Tokyo").is_file()
    )
    data.write_bytes(source.read_bytes())
    localtime = tmp_path / "localtime"
    if linked:
        localtime.symlink_to(data)
    else:
        localtime.write_bytes(data.read_bytes())  # a copy: rules without a name
    monkeypatch.delenv("TZ", raising=False)
    monkeypatch.setattr(_zones, "LOCALTIME", str(localtime))
    expected = "Asia/Tokyo" if linked else "UTC"
    assert local_zone_name() == expected
    assert (local_zone() is tokyo) is linked
    assert ActorSystem().timezone == expected
    assert _cli_fires(capsys)[0] == expected
