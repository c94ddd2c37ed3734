# SPDX-License-Identifier: Apache-2.0
"""The cron example runs and prints what the docs say it prints."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cron_next.py"


def test_cron_next_example_prints_five_fire_times_per_expression(
    capsys: pytest.CaptureFixture[str],
) -> None:
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert (
        "0 0 12 ? * 6L  [Europe/Paris]  At 12:00, on the last Friday of the month (Quartz cron)"
        in out
    )
    assert "30 4 1,15 * FRI  [UTC]  At 04:30, on days 1 and 15 of the month, and on every" in out
    # Vixie's rule: Friday 28 March, then Tuesday 1 April, then Friday 4 April.
    assert "    2025-03-28T04:30:00+00:00\n    2025-04-01T04:30:00+00:00\n" in out
    assert "    2025-03-28T12:00:00+01:00" in out
    # 02:30 does not exist in Paris on 2025-03-30: that day is skipped.
    assert "2025-03-29T02:30:00+01:00" in out
    assert "2025-03-30T02:30" not in out
    assert "2025-03-31T02:30:00+02:00" in out
    assert out.count("\n    ") == 25
