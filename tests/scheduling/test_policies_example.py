# SPDX-License-Identifier: Apache-2.0
"""examples/schedule_policies.py runs and prints what docs/scheduling.md "Policies" shows."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_policies_example_prints_what_the_docs_show(
    capsys: pytest.CaptureFixture[str],
) -> None:
    runpy.run_path(str(ROOT / "examples" / "schedule_policies.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "  skip: instant Mon 23 08:03:00, ran 08:03:00\n" in out
    assert "08:02:00" not in out  # skipped: the 08:01 report still ran
    assert out.count("  all: instant") == 3
    assert "  daily: instant Wed 25" not in out
    assert out.endswith("  plain message 'hello': ctx.tick is None\n")
    docs = (ROOT / "docs" / "scheduling.md").read_text()
    assert out in docs
