# SPDX-License-Identifier: Apache-2.0
"""Durable tasks on PostgreSQL: tocsin vs DBOS vs Procrastinate vs a raw asyncpg floor (#24).

The parent starts one throw-away local PostgreSQL per pass (``tests/integration/pg.py``:
initdb into a temp dir, a free port), the same settings for every system:

* pass ``durable``: ``fsync=on``, ``synchronous_commit=on`` (what users run);
* pass ``nosync``: both ``off`` (the CPU side alone).

Every configuration runs in its own fresh process, on a fresh database the child creates
and drops, 3 repetitions interleaved, medians (``bench/_common.py``). Systems and tests:
see ``bench/_pg_systems.py``. Ratios are per repetition, back to back, then the median.

``--scale`` runs the other question instead: a million pending tasks (``bench/_pg_scale.py``).

Reproduce: ``.venv/bin/python bench/postgres.py`` (about 15 minutes on 2 cores; DBOS and
Procrastinate need ``pip install dbos procrastinate``, else their columns say skipped);
``--quick`` for a smoke run; ``--only tocsin`` for a subset; ``--scale`` for the 1M table.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import Config, Runs, fmt, median_row, ratio, run_main, table

PASSES = {
    "durable": {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"},
    "nosync": {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"},
}
#: Identical for every system (and every pass).
COMMON_SETTINGS = {"shared_buffers": "256MB", "max_connections": "300"}
#: (configuration, label, required module) in table order.
SYSTEMS = [
    ("tocsin", "tocsin", None),
    ("tocsin-cluster", "tocsin cluster (fenced)", None),
    ("dbos-queue", "DBOS queue", "dbos"),
    ("dbos-start", "DBOS start_workflow", "dbos"),
    ("procrastinate", "Procrastinate", "procrastinate"),
    ("raw-row", "raw asyncpg, tocsin's row", None),
    ("raw", "raw asyncpg floor", None),
]
PRODUCERS = (1, 100)
_servers: dict[str, str] = {}
_stack = contextlib.ExitStack()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=int, default=None, help="tasks per run (10,000)")
    parser.add_argument("--passes", default="durable,nosync", help="comma list of passes")
    parser.add_argument("--scale", action="store_true", help="the 1M pending tasks question")
    parser.add_argument("--sizes", default=None, help="--scale: comma list of totals")
    parser.add_argument("--stores", default="sqlite,postgres", help="--scale: stores")
    parser.add_argument(
        "--alt-tasks",
        type=int,
        default=None,
        help="tasks per DBOS / Procrastinate run (default 2,000: ~100 tasks/s each)",
    )
    parser.add_argument(
        "--before",
        default=None,
        help="A/B: also run the tocsin rows from this checkout's src/ (e.g. a copy of main)",
    )
    parser.add_argument(
        "--systems", default=None, help="comma list of systems to run (default: all)"
    )
    parser.add_argument("--tree", default=None, help=argparse.SUPPRESS)


def _start_server(name: str) -> str:
    if name not in _servers:
        from tests.integration.pg import temporary_server

        if not _servers:
            atexit.register(_stack.close)
            # A killed run stops its servers too (atexit runs on SystemExit).
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        settings = {**COMMON_SETTINGS, **PASSES[name]}
        _servers[name] = _stack.enter_context(temporary_server(settings)).dsn
    return _servers[name]


def _systems(args: argparse.Namespace) -> list[tuple[str, str, str | None]]:
    systems = list(SYSTEMS)
    if args.before:  # A/B: the tocsin rows once more, from the other checkout
        systems[2:2] = [
            ("tocsin@before", "tocsin, before", None),
            ("tocsin-cluster@before", "tocsin cluster, before", None),
        ]
    if args.systems:
        chosen = set(args.systems.split(","))
        systems = [s for s in systems if s[0] in chosen or s[0].split("@")[0] in chosen]
    if args.quick:  # the smoke run: no start_workflow row (DBOS' queue row is enough)
        systems = [s for s in systems if s[0] != "dbos-start"]
    return systems


def configs(args: argparse.Namespace) -> list[Config]:
    if args.scale:
        from _pg_scale import scale_configs

        return scale_configs(args, _start_server)
    n = args.tasks or (200 if args.quick else 10_000)
    alt_n = args.alt_tasks or min(n, 2_000)
    out: list[Config] = []
    systems = _systems(args)
    for pass_name in args.passes.split(","):
        if args.quick and pass_name != "nosync":
            continue
        dsn = _start_server(pass_name)
        for test in ("enqueue", "e2e"):
            for producers in PRODUCERS:
                for system, _, requires in systems:
                    if system == "dbos-start" and test == "enqueue":
                        continue  # starts at once: no enqueue without a run
                    base, _, before = system.partition("@")
                    out.append(
                        Config(
                            f"{pass_name}/{test}/{producers}/{system}",
                            {
                                "system": base,
                                "test": test,
                                "n": alt_n if requires else n,
                                "producers": producers,
                                "dsn": dsn,
                                "tree": args.before if before else args.tree,
                            },
                            requires=requires,
                            timeout=600.0,
                        )
                    )
    return out


# -- child ------------------------------------------------------------------------------


def child(params: dict[str, Any]) -> dict[str, Any]:
    if params.get("tree"):  # A/B: this child imports tocsin from another checkout
        sys.path.insert(0, str(Path(params["tree"]).resolve() / "src"))
    if params.get("scale"):
        from _pg_scale import scale_child

        return scale_child(params)
    result = asyncio.run(_child(params))
    if params["system"].startswith("dbos"):
        # DBOS' executor threads outlive DBOS.destroy() and retry against the dropped
        # database forever, so the interpreter's exit would wait on them: leave now.
        from _common import print_json

        print_json(result)
        os._exit(0)
    return result


async def _child(params: dict[str, Any]) -> dict[str, Any]:
    import asyncpg

    base = params["dsn"]
    name = "b_" + uuid.uuid4().hex[:10]
    admin = await asyncpg.connect(base)
    await admin.execute(f"CREATE DATABASE {name}")
    # What the server really runs with, reported with every figure.
    settings = {k: await admin.fetchval(f"SHOW {k}") for k in ("fsync", "synchronous_commit")}
    await admin.close()
    dsn = base.rsplit("/", 1)[0] + "/" + name
    try:
        return {**await _run_system(params, dsn), **settings}
    finally:
        admin = await asyncpg.connect(base)
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await admin.close()


async def _run_system(params: dict[str, Any], dsn: str) -> dict[str, Any]:
    import _pg_systems as s

    system, test, n, producers = (params[k] for k in ("system", "test", "n", "producers"))
    load = os.getloadavg()[0]
    if system == "raw":
        out = await s.raw(dsn, test, n, producers)
    elif system == "raw-row":
        out = await s.raw_row(dsn, test, n, producers)
    elif system in ("tocsin", "tocsin-cluster"):
        out = await s.tocsin(dsn, test, n, producers, clustered=system == "tocsin-cluster")
    elif system == "dbos-queue":
        out = await s.dbos(dsn, test, n, producers, api="queue")
    elif system == "dbos-start":
        out = await s.dbos(dsn, test, n, producers, api="start")
    else:
        out = await s.procrastinate(
            dsn, test, n, producers, concurrency=1 if producers == 1 else 10
        )
    out["load_1min"] = load
    return out


# -- report -----------------------------------------------------------------------------


def report(args: argparse.Namespace, runs: Runs) -> dict[str, Any]:
    if args.scale:
        from _pg_scale import scale_report

        return scale_report(args, runs)
    payload: dict[str, Any] = {"ratios": {}, "targets": {}}
    for pass_name in args.passes.split(","):
        shown = next(
            (
                r
                for n, rs in runs.items()
                if n.startswith(pass_name)
                for r in rs
                if r and "fsync" in r
            ),
            {},
        )
        rows = []
        for system, label, _ in _systems(args):
            cells: list[Any] = [label]
            for test, key in (
                ("enqueue", "enqueue_us"),
                ("e2e", "tasks_per_s"),
                ("e2e", "cpu_us_per_task"),
            ):
                for producers in PRODUCERS:
                    row = median_row(runs.get(f"{pass_name}/{test}/{producers}/{system}", []))
                    cells.append(
                        row.get(key, row.get("skipped", "–") if "skipped" in row else None)
                    )
            rows.append(cells)
        if all(all(c is None for c in r[1:]) for r in rows):
            continue
        print(
            f"\n### Pass `{pass_name}` ({', '.join(f'{k}={v}' for k, v in PASSES[pass_name].items())}; "
            f"the server said fsync={shown.get('fsync')}, "
            f"synchronous_commit={shown.get('synchronous_commit')})\n"
        )
        print(
            table(
                [
                    "system",
                    "enqueue µs/task, 1",
                    "enqueue µs/task, 100",
                    "e2e tasks/s, 1",
                    "e2e tasks/s, 100",
                    "e2e CPU µs/task, 1",
                    "e2e CPU µs/task, 100",
                ],
                rows,
            )
        )
        ratio_rows = []
        for system, label, _ in _systems(args):
            if system == "raw":
                continue
            cells = [label]
            for producers in PRODUCERS:
                key = f"{pass_name}/%s/{producers}/%s"
                enq = ratio(runs, key % ("enqueue", system), key % ("enqueue", "raw"), "enqueue_us")
                tps = ratio(runs, key % ("e2e", "raw"), key % ("e2e", system), "tasks_per_s")
                cpu = ratio(runs, key % ("e2e", system), key % ("e2e", "raw"), "cpu_us_per_task")
                cells += [enq, tps, cpu]
                payload["ratios"][f"{pass_name}/{producers}/{system}"] = {
                    "enqueue_over_floor": enq,
                    "floor_tps_over_system": tps,
                    "cpu_over_floor": cpu,
                }
                if system == "tocsin" and enq == enq and tps == tps and cpu == cpu:
                    targets = payload["targets"]
                    targets[f"{pass_name}/{producers}: enqueue within 1.3x of the floor"] = (
                        enq <= 1.3
                    )
                    targets[f"{pass_name}/{producers}: e2e within 1.25x of the floor"] = tps <= 1.25
                    targets[f"{pass_name}/{producers}: CPU within 2x of the floor"] = cpu <= 2.0
            ratio_rows.append(cells)
        print(
            f"\nRatios to the floor (pass `{pass_name}`; per repetition, median; 1 = the floor)\n"
        )
        print(
            table(
                [
                    "system",
                    "enqueue ×, 1",
                    "e2e slower ×, 1",
                    "CPU ×, 1",
                    "enqueue ×, 100",
                    "e2e slower ×, 100",
                    "CPU ×, 100",
                ],
                ratio_rows,
            )
        )
    if args.before:
        ab_rows = []
        for pass_name in args.passes.split(","):
            for system in ("tocsin", "tocsin-cluster"):
                for test, key in (
                    ("enqueue", "enqueue_us"),
                    ("e2e", "tasks_per_s"),
                    ("e2e", "cpu_us_per_task"),
                ):
                    for producers in PRODUCERS:
                        k = f"{pass_name}/{test}/{producers}/{system}"
                        r = ratio(runs, k, k + "@before", key)
                        payload["ratios"][f"{k}/{key}/after_over_before"] = r
                        ab_rows.append((pass_name, system, test, producers, key, r))
        print("\nA/B: this tree / the --before tree (per repetition, median)\n")
        print(table(["pass", "system", "test", "producers", "figure", "after / before"], ab_rows))
    loads = [r.get("load_1min") for rs in runs.values() for r in rs if r and "load_1min" in r]
    if loads:
        payload["load_1min"] = (min(loads), max(loads))
        print(
            f"\nLoad average (1 min) at the start of each child: {fmt(min(loads))}–{fmt(max(loads))}"
        )
    for name, met in payload["targets"].items():
        print(f"- {name}: {'met' if met else 'NOT met'}")
    return payload


def main(argv: list[str] | None = None) -> int:
    return run_main(
        argv,
        description=__doc__ or "",
        script=__file__,
        add_arguments=add_arguments,
        child=child,
        configs=configs,
        report=report,
    )


if __name__ == "__main__":
    sys.exit(main())
