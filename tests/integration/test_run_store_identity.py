# SPDX-License-Identifier: Apache-2.0
"""Two ``tocsin run`` on one ``--store``, each with its own default coordinator file (its
run directory's ``coordinator.db``), are two clusters on one store: the second refuses
(issue 19, item 2). Real arbiters and workers (``test_run_processes.Run``), bounded waits."""

from __future__ import annotations

import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.test_run_processes import Run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]


@pytest.fixture
def runs() -> Iterator[list[Run]]:
    started: list[Run] = []
    yield started
    for run in started:
        run.close()


def test_a_second_run_on_the_same_store_refuses_to_start(tmp_path: Path, runs: list[Run]) -> None:
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    first = Run(tmp_path / "first", "_run_app:main", "--workers", "1", "--store", store)
    runs.append(first)
    first.ready_pids(1)
    second = Run(tmp_path / "second", "_run_app:main", "--workers", "1", "--store", store)
    runs.append(second)
    second.wait_for(r"belongs to another cluster")
    text = second.text
    recorded = re.escape(f"sqlite:///{(tmp_path / 'first' / 'run' / 'coordinator.db').resolve()}")
    own = re.escape(f"sqlite:///{(tmp_path / 'second' / 'run' / 'coordinator.db').resolve()}")
    assert re.search(rf"coordinator {recorded}, and this node's coordinator is {own}", text)
    assert not re.search(r"worker \d+ \(pid \d+\) ready", text)  # it never served
    second.close()
    # The first run was never disturbed: it still serves, then stops cleanly.
    assert first.proc.poll() is None
    first.signal(signal.SIGTERM)
    assert first.wait_exit() == 0
    # The same run started again (same run directory, same coordinator file) is welcome.
    again = Run(
        tmp_path / "again",  # a fresh log; the first run's directory and coordinator
        *("_run_app:main", "--workers", "1", "--store", store),
        run_dir=tmp_path / "first" / "run",
    )
    runs.append(again)
    again.ready_pids(1)
    again.signal(signal.SIGTERM)
    assert again.wait_exit() == 0
