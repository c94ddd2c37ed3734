# SPDX-License-Identifier: Apache-2.0
"""The bench scripts still run: each in ``--quick`` mode, exit 0, last line is JSON.

No speed assertions (STYLE.md: tests never assert on speed). The comparison columns for
pykka and APScheduler are skipped, not failed, when those packages are missing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: Left out of `make check` (each bench script runs in its own processes); `make test` runs it.
pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = ["actor_runtime.py", "multicore.py", "remote.py", "scheduler.py"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_script_runs_in_quick_mode_and_prints_json(script: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload = json.loads(proc.stdout.strip().splitlines()[-1])
    assert payload["quick"] is True
    assert payload["failed"] == []
    assert payload["medians"]


def test_durable_bench_runs_in_quick_mode_and_prints_json() -> None:
    """``bench/durable.py --quick``: exit 0, JSON last line; Huey is skipped if missing."""
    proc = subprocess.run(
        [sys.executable, str(BENCH / "durable.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload = json.loads(proc.stdout.strip().splitlines()[-1])
    assert payload["quick"] is True
    assert payload["failed"] == []
    assert payload["medians"]
    huey = payload["medians"].get("schedule/500/huey", {})
    assert "skipped" in huey or "us_per_op" in huey


def test_cron_bench_runs_in_quick_mode_and_prints_json() -> None:
    """``bench/cron.py --quick``: exit 0, JSON last line, tocsin figures for every case."""
    proc = subprocess.run(
        [sys.executable, str(BENCH / "cron.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload = json.loads(proc.stdout.strip().splitlines()[-1])
    assert payload["quick"] is True
    assert {row["group"] for row in payload["results"]} == {"unix", "quartz"}
    assert all(row["tocsin_parse_us"] is not None for row in payload["results"])


def test_cluster_bench_runs_in_quick_mode_and_prints_json() -> None:
    """``bench/cluster.py --quick`` starts its own PostgreSQL and Redis; exit 0, JSON last."""
    proc = subprocess.run(
        [sys.executable, str(BENCH / "cluster.py"), "--quick", "--claims", "50"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload = json.loads(proc.stdout.strip().splitlines()[-1])
    assert payload["quick"] is True
    assert payload["failed"] == []
    assert "p50_us" in payload["medians"]["claim/sqlite/tocsin"]


def test_console_bench_runs_in_quick_mode_and_prints_json() -> None:
    """``bench/console.py --quick``: exit 0, page latency and fan-out figures as JSON."""
    proc = subprocess.run(
        [sys.executable, str(BENCH / "console.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload = json.loads(proc.stdout.strip().splitlines()[-1])
    assert payload["quick"] is True
    assert payload["page_p50_ms"] > 0
    assert "fanout_10_p50_ms" in payload


def test_postgres_bench_runs_in_quick_mode_and_prints_json() -> None:
    """``bench/postgres.py --quick`` starts its own PostgreSQL; tocsin and the raw floors
    (the floor's row and tocsin's row) always run, DBOS and Procrastinate when installed
    (else their rows say skipped)."""
    proc = subprocess.run(
        [sys.executable, str(BENCH / "postgres.py"), "--quick", "--tasks", "100"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload = json.loads(proc.stdout.strip().splitlines()[-1])
    assert payload["quick"] is True
    assert payload["failed"] == []
    for system in ("tocsin", "tocsin-cluster", "raw-row", "raw"):
        assert payload["medians"][f"nosync/e2e/100/{system}"]["tasks_per_s"] > 0
    dbos = payload["medians"]["nosync/e2e/1/dbos-queue"]
    assert "skipped" in dbos or dbos["tasks_per_s"] > 0
