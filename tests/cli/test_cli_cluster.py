# SPDX-License-Identifier: Apache-2.0
"""``tocsin cluster members|pause|resume`` against real coordinators."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from tocsin.cli import main
from tocsin.cluster import open_coordinator


@pytest.fixture(params=["sqlite", "redis"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/cluster.db"
    base: str = request.getfixturevalue("redis_url")
    return f"{base}?prefix=cli{uuid.uuid4().hex[:8]}:"


async def seed(url: str) -> None:
    coordinator = open_coordinator(url)
    await coordinator.open()
    try:
        await coordinator.join("shop-1", "i1", "tocsin://shop-1@10.0.0.5:7100", 30.0)
        await coordinator.join("shop-2", "i2", "tocsin://shop-2@10.0.0.6:7100", 30.0)
        await coordinator.join("gone", "i3", "tocsin://gone@10.0.0.7:7100", 30.0)
        await coordinator.leave("gone", "i3")
    finally:
        await coordinator.close()


async def paused(url: str) -> frozenset[str]:
    coordinator = open_coordinator(url)
    await coordinator.open()
    try:
        return await coordinator.paused_crons()
    finally:
        await coordinator.close()


def test_members_lists_the_live_nodes(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    asyncio.run(seed(url))
    assert main(["cluster", "members", "--coordinator", url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAME", "ADDRESS", "JOINED", "(UTC)", "LAST", "SEEN", "(UTC)"]
    assert [line.split()[:2] for line in out[1:]] == [
        ["shop-1", "tocsin://shop-1@10.0.0.5:7100"],
        ["shop-2", "tocsin://shop-2@10.0.0.6:7100"],
    ]


def test_members_json_is_one_document(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    asyncio.run(seed(url))
    assert main(["cluster", "members", "--json", "--coordinator", url]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [m["name"] for m in document["members"]] == ["shop-1", "shop-2"]
    assert set(document["members"][0]) == {"name", "address", "joined", "last_seen"}
    assert document["members"][0]["joined"].endswith("+00:00")
    assert document["paused"] == []


def test_pause_and_resume_set_the_cluster_wide_flag(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(seed(url))
    monkeypatch.setenv("TOCSIN_COORDINATOR", url)
    assert main(["cluster", "pause", "nightly"]) == 0
    assert "paused 'nightly' on every node" in capsys.readouterr().out
    assert asyncio.run(paused(url)) == frozenset({"nightly"})
    assert main(["cluster", "members"]) == 0
    assert "paused cron references: nightly" in capsys.readouterr().out
    assert main(["cluster", "resume", "nightly"]) == 0
    assert asyncio.run(paused(url)) == frozenset()


def test_a_pause_note_shows_in_members(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(seed(url))
    monkeypatch.setenv("TOCSIN_COORDINATOR", url)
    assert main(["cluster", "pause", "nightly", "--note", "db migration"]) == 0
    capsys.readouterr()
    assert main(["cluster", "members", "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)["paused"]
    assert entry["reference"] == "nightly"
    assert entry["note"] == "db migration"
    assert entry["paused_by"].startswith("tocsin-cli@")
    assert entry["paused_at"].endswith("+00:00")
    assert main(["cluster", "members"]) == 0
    assert "nightly: since " in capsys.readouterr().out
    assert main(["cluster", "pause", "nightly", "--note", "other"]) == 0  # already paused
    assert "already paused" in capsys.readouterr().out
    assert main(["cluster", "resume", "nightly"]) == 0
    capsys.readouterr()
    assert main(["cluster", "members", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["paused"] == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["cluster", "members"], "no coordinator: pass --coordinator URL"),
        (["cluster", "members", "--coordinator", "mysql://x"], "unknown scheme 'mysql'"),
        (["cluster", "members", "--coordinator", "memory://x"], "inside one process"),
        (
            ["cluster", "pause", "r", "--coordinator", "sqlite:///does/not/exist.db"],
            "no such SQLite coordinator file",
        ),
    ],
)
def test_bad_usage_exits_2_with_a_message(
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TOCSIN_COORDINATOR", raising=False)
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_an_unreachable_coordinator_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "members", "--coordinator", "redis://127.0.0.1:1/0"]) == 1
    assert "tocsin cluster: error: Redis coordinator" in capsys.readouterr().err
