# SPDX-License-Identifier: Apache-2.0
"""Split one collected suite into shards run by separate pytest processes side by side.

``make test`` runs the suite as several pytest processes on the 2-core CI machine: the
real-process tests (``tests/integration``, the CLI, the bench smoke tests) spend most of
their time waiting on children, so several of them share a core well, while the rest is
CPU in the pytest process. Each process collects the same files and keeps the files of
its shard: ``TOCSIN_SHARD=k/n`` (1 <= k <= n), read by ``tests/conftest.py``.

A whole file goes to one shard (its module fixtures, servers and processes started once).
Files are placed heaviest first on the shard with the least weight so far (the longest
processing time rule; ties by shard number), so every process computes the same split
from the same collection. A file's weight is its measured seconds in :data:`WEIGHTS`
(``pytest --durations=0``, summed per file, on the 2-core machine without coverage);
a file not listed weighs :data:`PER_TEST` seconds per test. Weights only balance the
shards: a wrong one makes a shard longer, never loses a test.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["PER_TEST", "WEIGHTS", "Shard", "files_of", "parse", "split"]

#: Seconds per test of a file without a measured weight.
PER_TEST = 0.003

#: Measured seconds per file, the files of 2 s or more (2026-12-07, ``main`` at
#: ``4bf57c3``, load 1-2, no coverage; ``test_cluster_graceful_stop.py`` from its own
#: runs). Any other file weighs :data:`PER_TEST` per test (pytest's own cost of a quick
#: test, about 2-3 ms here; the cron vectors less).
WEIGHTS: Mapping[str, float] = {
    "tests/integration/test_cluster_cron_chaos.py": 177.9,
    "tests/test_bench_smoke.py": 111.4,
    "tests/integration/test_run_processes.py": 101.5,
    "tests/integration/test_stored_schedule_sigstop.py": 96.1,
    "tests/integration/test_stored_schedule_processes.py": 77.7,
    "tests/integration/test_cluster_skew.py": 74.8,
    "tests/integration/test_cluster_processes.py": 73.9,
    "tests/integration/test_cluster_sigstop.py": 49.9,
    "tests/integration/test_coordinator_outage.py": 38.1,
    "tests/integration/test_store_restart.py": 25.7,
    "tests/testing/test_plugin.py": 24.0,
    "tests/testing/test_simulation.py": 22.4,
    "tests/integration/test_cluster_load.py": 20.0,
    "tests/test_run_examples.py": 18.3,
    "tests/integration/test_kill9.py": 17.5,
    "tests/cluster/test_simulated_weeks.py": 17.4,
    "tests/remote/test_remote_flood.py": 14.5,
    "tests/cron/test_properties.py": 9.7,
    "tests/integration/test_remote_two_process.py": 9.4,
    "tests/console/test_browser.py": 8.8,
    "tests/cli/test_demo.py": 8.3,
    "tests/integration/test_web_uvicorn.py": 7.1,
    "tests/durable/test_cron_tasks.py": 6.8,
    "tests/cron/test_dst_properties.py": 5.1,
    "tests/integration/test_sqlite_open_race.py": 5.0,
    "tests/durable/test_start_window.py": 5.0,
    "tests/durable/test_policies.py": 5.0,
    "tests/integration/test_cluster_rebalance_processes.py": 4.7,
    "tests/remote/test_transport.py": 4.3,
    "tests/cluster/test_coordinator_contract.py": 4.2,
    "tests/cli/test_cli_main.py": 4.1,
    "tests/schedules/test_stored_memory.py": 3.6,
    "tests/remote/test_remote_backpressure.py": 3.5,
    "tests/cli/test_cli_console_cluster.py": 3.2,
    "tests/cli/test_cli_console.py": 3.2,
    "tests/actor/test_local_flood.py": 3.2,
    "tests/test_state_owners.py": 3.1,
    "tests/cli/test_run_config.py": 2.9,
    "tests/stores/test_store_contract.py": 2.7,
    "tests/remote/test_remote_overlap_processes.py": 2.4,
    "tests/integration/test_run_store_identity.py": 2.2,
    "tests/test_import_surface.py": 2.1,
    "tests/test_codec.py": 2.1,
    "tests/integration/test_cluster_graceful_stop.py": 15.0,
}


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int


_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def parse(spec: str) -> Shard:
    """``"k/n"`` as a :class:`Shard`.

    Raises:
        ValueError: ``spec`` is not ``k/n`` with ``1 <= k <= n``.
    """
    match = _SPEC.fullmatch(spec)
    if match is None:
        raise ValueError(f"TOCSIN_SHARD={spec!r}: expected 'k/n' (1 <= k <= n), e.g. '2/4'")
    shard = Shard(int(match[1]), int(match[2]))
    if not 1 <= shard.index <= shard.count:
        raise ValueError(f"TOCSIN_SHARD={spec!r}: expected 'k/n' with 1 <= k <= n")
    return shard


def split(
    tests_per_file: Mapping[str, int],
    count: int,
    weights: Mapping[str, float] = WEIGHTS,
) -> list[set[str]]:
    """The files of each of ``count`` shards (index 0 is shard 1): every file in exactly
    one, heaviest first onto the lightest shard; the same input gives the same split."""
    loads = [0.0] * count
    shards: list[set[str]] = [set() for _ in range(count)]

    def weight(path: str) -> float:
        return weights.get(path, PER_TEST * tests_per_file[path])

    for path in sorted(tests_per_file, key=lambda p: (-weight(p), p)):
        lightest = min(range(count), key=lambda i: (loads[i], i))
        shards[lightest].add(path)
        loads[lightest] += weight(path)
    return shards


def files_of(paths: Iterable[str]) -> dict[str, int]:
    """Tests per file, from each collected test's file path (relative to the rootdir)."""
    return dict(Counter(paths))
