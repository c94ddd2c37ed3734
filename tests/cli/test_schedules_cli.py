# SPDX-License-Identifier: Apache-2.0
"""`tocsin schedules`: every verb against a real SQLite store written by a system, exit
codes (0 done, 1 an unknown id named in one line, 2 bad usage), --json on reads."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.schedules import jobs_for_tests as jobs

from tocsin import ActorSystem, ManualClock
from tocsin.cli import main
from tocsin.schedules import Interval, Schedule

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC).timestamp()
RECORD = "tests.schedules.jobs_for_tests.record"


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'app.db'}"


async def _seed(url: str) -> ManualClock:
    """A store holding schedule "r" (every 10 s from T0) with three delivered instants."""
    clock = ManualClock(wall=T0)
    async with ActorSystem("n1", clock=clock, store=url) as system:
        await system.schedules.add(Schedule("r", Interval(10), RECORD))
        await clock.advance(31)
    jobs.RUNS.clear()
    return clock


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["schedules", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_reads_list_show_history_and_why_with_json(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_seed(store_url))
    code, out, _ = _cli(capsys, "list", "--store", store_url, "--json")
    assert code == 0
    [listed] = json.loads(out)["schedules"]
    assert (listed["id"], listed["version"], listed["last_outcome"]) == ("r", 1, "delivered")
    code, out, _ = _cli(capsys, "show", "r", "--store", store_url)
    assert code == 0
    assert "version: 1" in out
    code, out, _ = _cli(capsys, "history", "r", "--store", store_url, "--json")
    rows = json.loads(out)["history"]
    assert [r["outcome"] for r in rows] == ["delivered"] * 3
    assert all(r["node"] == "n1" and r["started"] for r in rows)
    # An instant: its row. Not an instant: says so, names the two nearest, exit 0.
    at = datetime.fromtimestamp(T0 + 20, UTC).isoformat()
    code, out, _ = _cli(capsys, "why", "r", "--at", at, "--store", store_url, "--json")
    document = json.loads(out)
    assert (code, document["is_instant"]) == (0, True)
    assert document["nearest"]["row"]["outcome"] == "delivered"
    between = datetime.fromtimestamp(T0 + 23, UTC).isoformat()
    code, out, _ = _cli(capsys, "why", "r", "--at", between, "--store", store_url)
    assert code == 0
    assert "is no instant of 'r'" in out
    assert "09:00:20" in out
    assert "09:00:30" in out


def test_pause_resume_remove_trigger_and_backfill_change_the_store(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = asyncio.run(_seed(store_url))
    assert _cli(capsys, "pause", "r", "--note", "OPS-42", "--store", store_url)[0] == 0
    code, out, _ = _cli(capsys, "show", "r", "--store", store_url, "--json")
    shown = json.loads(out)
    assert (shown["paused"], shown["note"], shown["version"]) == (True, "OPS-42", 1)
    assert shown["paused_by"].startswith("cli@")
    assert _cli(capsys, "resume", "r", "--store", store_url)[0] == 0
    start = datetime.fromtimestamp(T0 - 30, UTC).isoformat()
    end = datetime.fromtimestamp(T0, UTC).isoformat()
    code, out, _ = _cli(capsys, "backfill", "r", start, end, "--dry-run", "--store", store_url)
    assert (code, out.count("\n")) == (0, 4)
    assert _cli(capsys, "trigger", "r", "--store", store_url)[0] == 0

    # A node starting on the store runs the asked-for run (once).
    async def node() -> None:
        async with ActorSystem("n2", clock=clock, store=store_url):
            await clock.advance(0.5)

    asyncio.run(node())
    assert [(run[0], run[2]) for run in jobs.RUNS] == [("r", True)]
    assert _cli(capsys, "remove", "r", "--store", store_url)[0] == 0
    code, out, _ = _cli(capsys, "history", "r", "--store", store_url)
    assert code == 0  # a removed schedule's ledger stays


@pytest.mark.parametrize("verb", ["show", "history", "why", "pause", "resume", "trigger", "remove"])
def test_an_unknown_id_exits_1_with_one_line_naming_it(
    verb: str, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_seed(store_url))
    code, out, err = _cli(capsys, verb, "typo", "--store", store_url)
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert "'typo'" in err


def test_bad_usage_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOCSIN_STORE", raising=False)
    assert _cli(capsys, "list", "--store", "nope://x")[0] == 2
    assert _cli(capsys, "list")[0] == 2  # no store at all
    assert _cli(capsys, "list", "--store", f"sqlite:///{tmp_path / 'missing.db'}")[0] == 2
    assert _cli(capsys, "plan", "no_such_module:X", "--store", "memory://")[0] == 2
    with pytest.raises(SystemExit) as exc:
        main(["schedules", "pause"])
    assert exc.value.code == 2


def test_plan_prints_the_diff_and_apply_prune_removes_the_undeclared(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_seed(store_url))
    target = "tests.schedules.declared_for_tests:SCHEDULES"
    code, out, _ = _cli(capsys, "plan", target, "--prune", "--store", store_url, "--json")
    changes = {c["id"]: c["action"] for c in json.loads(out)["changes"]}
    assert (code, changes) == (0, {"nightly": "added", "refresh": "added", "r": "removed"})
    code, out, _ = _cli(capsys, "list", "--store", store_url, "--json")
    assert [s["id"] for s in json.loads(out)["schedules"]] == ["r"]  # plan changed nothing
    assert _cli(capsys, "apply", target, "--prune", "--store", store_url)[0] == 0
    code, out, _ = _cli(capsys, "list", "--store", store_url, "--json")
    assert [s["id"] for s in json.loads(out)["schedules"]] == ["nightly", "refresh"]


def test_the_store_comes_from_tocsin_store_when_not_given(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(_seed(store_url))
    monkeypatch.setenv("TOCSIN_STORE", store_url)
    code, out, _ = _cli(capsys, "list", "--json")
    assert code == 0
    assert [s["id"] for s in json.loads(out)["schedules"]] == ["r"]
