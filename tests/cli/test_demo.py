"""`tocsin demo` (what `make demo` runs) completes and shows every capability."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: Left out of `make check` (real processes); `make test` runs it.
pytestmark = pytest.mark.slow


def test_demo_runs_to_completion_and_shows_each_capability() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tocsin.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for expected in (
        "hello, Ada (#1)",
        "ActorRestarted: /user/greeter",
        "ActorPassivated: /user/sleepy",
        "DeadLetter: 'anyone there?'",
        "reminder: stretch your legs",
        "heartbeat paused",
        "heartbeat resumed",
        "cron tick",
        "attempt 3: sent",
        "tick delivered in the other process",
        "stopped",
    ):
        assert expected in out, f"missing {expected!r} in:\n{out}"
