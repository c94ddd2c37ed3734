# SPDX-License-Identifier: Apache-2.0
"""`tocsin cron next` and `tocsin cron explain`, driven through argparse."""

from __future__ import annotations

import argparse
import json

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


# --- five-field Unix cron, --json, and one-line errors ---------------------------------------


def test_next_reads_five_fields_as_unix_cron(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("cron", "next", "0 9 * * 1-5", "--tz", "UTC", "--after", "2025-01-03T12:00") == 0
    out = capsys.readouterr().out
    assert "(Unix cron)" in out
    assert "2025-01-06 09:00:00+00:00" in out  # Friday afternoon -> Monday 09:00


def test_explain_lists_the_five_unix_fields(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("cron", "explain", "30 4 1,15 * FRI") == 0
    out = capsys.readouterr().out
    assert "seconds" not in out
    assert "year" not in out
    assert "(Unix cron)" in out
    assert "and on every Friday" in out


def test_next_json_is_one_document_with_the_documented_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _run(
        "cron", "next", "0 0 12 ? * 6L", "--tz", "Europe/Paris", "--count", "2",
        "--after", "2025-01-01T00:00", "--json",
    )  # fmt: skip
    assert code == 0
    document = json.loads(capsys.readouterr().out)
    assert document == {
        "expression": "0 0 12 ? * 6L",
        "dialect": "quartz",
        "description": "At 12:00, on the last Friday of the month (Quartz cron)",
        "timezone": "Europe/Paris",
        "after": "2025-01-01T00:00:00+01:00",
        "fire_times": [
            {"local": "2025-01-31T12:00:00+01:00", "utc": "2025-01-31T11:00:00Z",
             "epoch": 1738321200},
            {"local": "2025-02-28T12:00:00+01:00", "utc": "2025-02-28T11:00:00Z",
             "epoch": 1740740400},
        ],
        "exhausted": False,
    }  # fmt: skip


def test_next_json_says_when_the_fire_times_end(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("cron", "next", "0 0 31 2 *", "--tz", "UTC", "--json") == 0
    document = json.loads(capsys.readouterr().out)
    assert document["fire_times"] == []
    assert document["exhausted"] is True
    assert document["dialect"] == "unix"


def test_explain_json_lists_each_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("cron", "explain", "*/15 9-17 * * MON-FRI", "--json") == 0
    document = json.loads(capsys.readouterr().out)
    assert document["dialect"] == "unix"
    assert document["expands_to"] is None
    assert [f["name"] for f in document["fields"]] == [
        "minutes", "hours", "day-of-month", "month", "day-of-week"
    ]  # fmt: skip
    assert document["fields"][1] == {
        "name": "hours",
        "text": "9-17",
        "meaning": "at hours 9 through 17",
    }
    assert document["fields"][2]["meaning"] == "(not used)"
    assert _run("cron", "explain", "@weekly", "--json") == 0
    macro = json.loads(capsys.readouterr().out)
    assert (macro["dialect"], macro["expands_to"]) == ("macro", "0 0 0 ? * SUN")


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", "../../etc/passwd"])
def test_a_bad_tz_is_one_line_on_stderr_and_exit_2(
    capsys: pytest.CaptureFixture[str], zone: str
) -> None:
    assert _run("cron", "next", "@daily", "--tz", zone) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert (
        f"--tz must be an IANA time zone such as Europe/Paris or UTC, got {zone!r}" in captured.err
    )


def test_an_invalid_expression_with_json_prints_nothing_on_stdout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _run("cron", "next", "0 12 ? * MON", "--json") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "6 fields starting with a seconds field" in captured.err


def test_next_with_dst_shows_the_policy_and_its_fire_times(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("cron", "next", "0 30 2 * * ?", "--tz", "Europe/Paris", "--count", "2")
    after = ("--after", "2025-03-29T12:00")
    assert _run(*argv, *after) == 0
    quartz = capsys.readouterr().out
    assert "2025-03-30" not in quartz  # 02:30 does not exist that day: Quartz skips it
    assert _run(*argv, *after, "--dst", "gap=next,fold=first") == 0
    out = capsys.readouterr().out
    assert "DST: gap=next,fold=first" in out
    assert "2025-03-30 03:00:00+02:00" in out  # the first instant after the gap
    assert _run(*argv, *after, "--dst", "gap=shift", "--json") == 0
    document = json.loads(capsys.readouterr().out)
    assert document["dst"] == {"gap": "shift", "fold": "quartz"}
    assert document["fire_times"][0]["local"] == "2025-03-30T03:30:00+02:00"


def test_explain_with_dst_says_what_the_policy_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("cron", "explain", "0 30 2 * * ?", "--dst", "never_skip") == 0
    out = capsys.readouterr().out
    assert "Daylight saving (gap=next,fold=first):" in out
    assert "first instant after the gap (gap=next)" in out
    assert "first (daylight-time) instant (fold=first)" in out
    assert _run("cron", "explain", "@daily", "--dst", "fold=both", "--json") == 0
    document = json.loads(capsys.readouterr().out)
    assert document["dst"]["fold"] == "both"
    assert document["dst"]["gap"] == "quartz"
    assert len(document["dst"]["effect"]) == 2


@pytest.mark.parametrize("command", ["next", "explain"])
@pytest.mark.parametrize("spec", ["gap=later", "fold", "gap=next;fold=first", "when=now"])
def test_a_bad_dst_spec_is_one_line_on_stderr_and_exits_2(
    capsys: pytest.CaptureFixture[str], command: str, spec: str
) -> None:
    assert _run("cron", command, "@daily", "--dst", spec) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1
    assert captured.err.startswith("tocsin: --dst: ")
