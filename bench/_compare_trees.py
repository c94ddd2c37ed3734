# SPDX-License-Identifier: Apache-2.0
"""Compare two checkouts of tocsin side by side, in one run, interleaved.

Usage::

    git worktree add /tmp/before main
    .venv/bin/python bench/_compare_trees.py --before /tmp/before --after . --repeats 5

For each repetition and each selected configuration, the configuration runs once against
each tree (in a fresh process, ``PYTHONPATH=<tree>/src``, that tree's own bench script),
alternating which tree goes first, so machine noise falls on both alike. It prints one
Markdown table of medians (with min-max) and the after/before ratio per metric, and the
raw runs as the last JSON line. Not run by ``bench/run_all.py`` (the leading underscore).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

#: (script, configuration params, metric, lower is better), as the scripts define them.
CASES: list[tuple[str, str, dict[str, Any], str, bool]] = [
    (
        "scheduler",
        "create 100k",
        {"test": "create", "system": "tocsin", "n": 100_000, "traced": False},
        "create_us",
        True,
    ),
    (
        "scheduler",
        "cancel 100k",
        {"test": "create", "system": "tocsin", "n": 100_000, "traced": False},
        "cancel_us",
        True,
    ),
    (
        "scheduler",
        "fire 100k",
        {"test": "fire", "system": "tocsin", "n": 100_000, "window": 1.0},
        "fire_all_s",
        True,
    ),
    (
        "actor_runtime",
        "tell 1 actor",
        {"system": "tocsin", "test": "tell", "n": 1_000_000, "actors": 1},
        "msgs_per_s",
        False,
    ),
    (
        "actor_runtime",
        "tell 1000 actors",
        {"system": "tocsin", "test": "tell", "n": 1_000_000, "actors": 1000},
        "msgs_per_s",
        False,
    ),
    (
        "actor_runtime",
        "ask (timeout=5)",
        {"system": "tocsin", "test": "ask", "n": 20_000, "warmup": 1000, "timeout": 5.0},
        "ask_p50_us",
        True,
    ),
    (
        "actor_runtime",
        "ask (timeout=None)",
        {"system": "tocsin", "test": "ask", "n": 20_000, "warmup": 1000, "timeout": None},
        "ask_p50_us",
        True,
    ),
    (
        "actor_runtime",
        "spawn 20k",
        {"system": "tocsin", "test": "spawn", "n": 20_000, "traced": False},
        "spawn_us",
        True,
    ),
    (
        "remote",
        "remote tell 20k",
        {"system": "tocsin", "test": "tell", "n": 20_000},
        "msgs_per_s",
        False,
    ),
    (
        "remote",
        "remote ask 2k",
        {"system": "tocsin", "test": "ask", "n": 2_000, "warmup": 200},
        "ask_p50_us",
        True,
    ),
    (
        "durable",
        "schedule 10k, 1 actor, loop (one commit each)",
        {"test": "schedule", "system": "tocsin", "n": 10_000, "shape": "1 actor", "mode": "loop"},
        "us_per_op",
        True,
    ),
    (
        "durable",
        "schedule 10k, 1 actor, tx",
        {"test": "schedule", "system": "tocsin", "n": 10_000, "shape": "1 actor", "mode": "tx"},
        "us_per_op",
        True,
    ),
    (
        "durable",
        "e2e 10k, 1 actor, loop",
        {"test": "run/e2e", "system": "tocsin", "n": 10_000, "shape": "1 actor", "mode": "loop"},
        "tasks_per_s",
        False,
    ),
    (
        "durable",
        "e2e 10k, 1 actor, tx",
        {"test": "run/e2e", "system": "tocsin", "n": 10_000, "shape": "1 actor", "mode": "tx"},
        "tasks_per_s",
        False,
    ),
    (
        "durable",
        "e2e 10k, N/100 actors, loop",
        {"test": "run/e2e", "system": "tocsin", "n": 10_000, "shape": "many", "mode": "loop"},
        "tasks_per_s",
        False,
    ),
    (
        "durable",
        "e2e 10k, N/100 actors, tx",
        {"test": "run/e2e", "system": "tocsin", "n": 10_000, "shape": "many", "mode": "tx"},
        "tasks_per_s",
        False,
    ),
    (
        "durable",
        "preloaded run 10k, 1 identity",
        {
            "test": "run/preloaded",
            "system": "tocsin",
            "n": 10_000,
            "identities": 1,
            "body": "async",
        },
        "tasks_per_s",
        False,
    ),
]


def _child(tree: Path, script: str, params: dict[str, Any], rep: int) -> dict[str, Any] | None:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = [
        sys.executable,
        str(tree / "bench" / f"{script}.py"),
        "--child",
        json.dumps({**params, "rep": rep}),
    ]
    proc = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=900, check=False
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        print(
            f"!! {tree} {script} {params}: exit {proc.returncode}\n{proc.stderr[-2000:]}",
            file=sys.stderr,
        )
        return None
    # The child's whole CPU time (imports and setup included, the same in both trees):
    # on a shared machine it varies far less than wall-clock rates do.
    return {**json.loads(lines[-1]), "child_cpu_s": cpu}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default=None, help="comma-separated parts of path names")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    wanted = None if args.only is None else args.only.split(",")
    cases = [c for c in CASES if wanted is None or any(w in c[1] for w in wanted)]
    # One run per (script, params) gives every metric of that run (create and cancel).
    runs: dict[tuple[str, str], dict[str, list[dict[str, Any] | None]]] = {}
    for rep in range(args.repeats):
        order = ["before", "after"] if rep % 2 == 0 else ["after", "before"]
        for script, label, params, _, _ in cases:
            key = (script, json.dumps(params, sort_keys=True))
            slot = runs.setdefault(key, {"before": [], "after": []})
            if len(slot["before"]) > rep:
                continue  # this run already measured another metric of the same config
            for name in order:
                print(
                    f"[rep {rep + 1}/{args.repeats}] {name}: {label}", file=sys.stderr, flush=True
                )
                slot[name].append(_child(trees[name], script, params, rep))
    print("| path | metric | before (median, min-max) | after (median, min-max) | after/before |")
    print("|---|---|---|---|---|")
    summary = []
    for script, label, params, metric, lower in cases:
        slot = runs[(script, json.dumps(params, sort_keys=True))]
        vals = {name: [r[metric] for r in slot[name] if r and metric in r] for name in slot}
        if not vals["before"] or not vals["after"]:
            print(f"| {label} | {metric} | failed | failed | |")
            continue
        med = {name: statistics.median(v) for name, v in vals.items()}
        change = med["after"] / med["before"]
        slower = (change - 1) if lower else (1 / change - 1)
        cells = {n: f"{med[n]:.4g} ({min(v):.4g}-{max(v):.4g})" for n, v in vals.items()}
        print(
            f"| {label} | {metric} ({'lower' if lower else 'higher'} is better) | {cells['before']} | {cells['after']} | {change:.3f} ({slower:+.1%} time) |"
        )
        cpu = {n: [r["child_cpu_s"] for r in slot[n] if r] for n in slot}
        cpu_change = statistics.median(cpu["after"]) / statistics.median(cpu["before"])
        print(
            f"| {label} | child CPU s (lower is better) | "
            f"{statistics.median(cpu['before']):.3f} | {statistics.median(cpu['after']):.3f} | "
            f"{cpu_change:.3f} |"
        )
        summary.append(
            {
                "path": label,
                "metric": metric,
                "before": vals["before"],
                "after": vals["after"],
                "slower": slower,
            }
        )
    print(json.dumps({"cases": summary, "load": os.getloadavg()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
