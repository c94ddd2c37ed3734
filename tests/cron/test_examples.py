# SPDX-License-Identifier: Apache-2.0
"""The cron example runs and prints what the docs say it prints."""

from __future__ import annotations

import re
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


DST_EXAMPLE = EXAMPLE.with_name("cron_dst_policy.py")


def test_cron_dst_policy_example_prints_what_docs_cron_md_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    runpy.run_path(str(DST_EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    # One block per heading line (the lines that do not start with spaces).
    quartz, never_skip, hourly, calendar = re.split(r"\n(?=\S)", out)
    assert "Sun 29 Mar" not in quartz  # 02:30 does not exist that day
    assert "Sun 25 Oct 02:30 CET" in quartz  # the repeated 02:30: its later instant
    assert "Sun 29 Mar 03:00 CEST" in never_skip  # the first instant after the gap
    assert "Sun 25 Oct 02:30 CEST" in never_skip  # the repeated 02:30: its first instant
    assert hourly.splitlines()[1:] == ["  01:00 CET", "  03:00 CEST", "  04:00 CEST"]
    assert calendar.endswith("  Mon 21, Tue 22, Wed 23, Thu 24, Mon 28\n")
    # docs/cron.md shows this output: keep the two in step.
    docs = (EXAMPLE.parents[1] / "docs" / "cron.md").read_text()
    assert out in docs
