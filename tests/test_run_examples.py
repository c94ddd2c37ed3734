# SPDX-License-Identifier: Apache-2.0
"""Every runnable example in ``examples/`` exits cleanly (files starting with ``_`` are
helpers, not examples). New examples are picked up by the glob; none is skipped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: Left out of `make check` (each example runs as a process); `make test` runs it.
pytestmark = pytest.mark.slow

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
EXAMPLES = sorted(p for p in EXAMPLES_DIR.glob("*.py") if not p.name.startswith("_"))
#: Real seconds one example may take (they run in under 3 s; this catches hangs).
TIMEOUT = 60


def test_examples_are_found() -> None:
    assert EXAMPLES, f"no examples found in {EXAMPLES_DIR}"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_and_exits_cleanly(example: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(example)],
        cwd=EXAMPLES_DIR.parent,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, (
        f"{example.name} exited with {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )
