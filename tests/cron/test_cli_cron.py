# SPDX-License-Identifier: Apache-2.0
"""`tocsin cron next` and `tocsin cron explain`, driven through argparse."""

from __future__ import annotations

import argparse

import pytest

from tocsin.cli._cron import register


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="tocsin")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(list(argv))
    result = args.func(args)
    assert isinstance(result, int)
    return result


def test_next_prints_local_and_utc_columns(capsys: pytest.CaptureFixture[str]) -> None:
    code = _run(
        "cron", "next", "0 0 12 ? * 6L", "--tz", "Europe/Paris", "--count", "3",
        "--after", "2025-01-01T00:00",
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "Europe/Paris" in out
    assert "UTC" in out
    assert "2025-01-31 12:00:00+01:00" in out
    assert "2025-01-31 11:00:00Z" in out
    assert "2025-03-28 12:00:00+01:00" in out
    assert out.count("Z\n") == 3


def test_next_says_when_there_are_no_further_fire_times(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("cron", "next", "0 0 0 31 2 ?", "--tz", "UTC", "--after", "2025-01-01") == 0
    assert "no further fire times" in capsys.readouterr().out


def test_next_without_after_starts_from_the_system_clock(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _run("cron", "next", "@hourly", "--tz", "UTC", "--count", "2") == 0
    assert capsys.readouterr().out.count("Z\n") == 2


def test_an_invalid_expression_prints_a_caret_under_the_field_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _run("cron", "next", "0 0 12 ? * 8L", "--tz", "UTC") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert "day-of-week" in lines[0]
    assert lines[1] == "  0 0 12 ? * 8L"
    assert lines[2] == "  " + " " * 11 + "^"


def test_a_bad_after_or_count_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("cron", "next", "@daily", "--after", "yesterday") == 2
    assert _run("cron", "next", "@daily", "--count", "0") == 2
    assert "--" in capsys.readouterr().err


def test_explain_prints_the_description_and_each_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("cron", "explain", "0 0 12 ? * 6L") == 0
    out = capsys.readouterr().out
    assert "At 12:00, on the last Friday of the month" in out
    for name in ("seconds", "minutes", "hours", "day-of-month", "month", "day-of-week", "year"):
        assert name in out
    assert "6L" in out


def test_explain_shows_what_a_macro_stands_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("cron", "explain", "@weekly") == 0
    assert "= 0 0 0 ? * SUN" in capsys.readouterr().out


def test_explain_of_an_invalid_expression_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("cron", "explain", "0 0 12 ? * 6L *X") == 2
    err = capsys.readouterr().err
    assert "year" in err
    assert err.splitlines()[-1] == "  " + " " * 14 + "^"
