# SPDX-License-Identifier: Apache-2.0
"""Shared helpers for the bench scripts (method as in /work/shared/bench-baselines.md).

Every bench script has the same shape:

* **Parent mode** (the default) builds a list of :class:`Config`, runs each one in its
  own **fresh process** (``python bench/x.py --child '<json>'``), ``--repeats`` times,
  **interleaving** the configurations within each repetition so machine noise falls on
  all of them alike. It prints Markdown tables of the **medians**, then one JSON line
  (always the last line of stdout) with medians, (min, max) spreads and every raw run.
* **Child mode** (``--child``) runs one configuration and prints one JSON line.
* A configuration that needs a missing optional package (pykka, apscheduler) is not run;
  its rows say ``skipped: <pkg> not installed``.
* ``--quick`` runs tiny sizes once, for smoke tests. No number from it means anything.

Ratios between two systems are taken per repetition from back-to-back runs and the
median of those ratios is reported, as in the baselines.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = [
    "Config",
    "Runs",
    "base_parser",
    "fmt",
    "have",
    "lateness_ms",
    "machine",
    "median_row",
    "percentile",
    "print_json",
    "ratio",
    "rss_bytes",
    "run_configs",
    "run_main",
    "table",
]

#: Per configuration and repetition: the child's result dict, or None if it failed.
Runs = dict[str, list[dict[str, Any] | None]]


@dataclasses.dataclass(frozen=True)
class Config:
    """One configuration: run in a fresh process with ``params``."""

    name: str
    params: dict[str, Any]
    #: Only in repetition 1 (deterministic measurements, or over-budget ones).
    once: bool = False
    #: Optional package the configuration imports; skipped when it is missing.
    requires: str | None = None
    #: Seconds before the child is killed and the run counted as failed.
    timeout: float = 900.0


def have(module: str) -> bool:
    """Whether ``module`` can be imported."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def rss_bytes() -> int:
    """Resident set size of this process (psutil if installed, else /proc)."""
    try:
        import psutil
    except ImportError:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return int(psutil.Process().memory_info().rss)


def steal_jiffies() -> tuple[int, int]:
    """(steal, total) CPU jiffies of the whole machine from /proc/stat, or (0, 0).

    Steal is time the hypervisor ran something else while this VM wanted a CPU: a
    latency tail that no code in this process can cause or cure, so benches report it.
    """
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return (fields[7] if len(fields) > 7 else 0), sum(fields)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (nan when empty)."""
    if not sorted_values:
        return math.nan
    index = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[index]


def lateness_ms(samples: Iterable[float], prefix: str = "late") -> dict[str, float]:
    """p50/p99/max/min of lateness samples (seconds in, milliseconds out)."""
    values = sorted(samples)
    return {
        f"{prefix}_p50_ms": percentile(values, 0.50) * 1e3,
        f"{prefix}_p99_ms": percentile(values, 0.99) * 1e3,
        f"{prefix}_max_ms": (values[-1] * 1e3) if values else math.nan,
        f"{prefix}_min_ms": (values[0] * 1e3) if values else math.nan,
    }


def machine() -> dict[str, Any]:
    """Where the figures come from."""
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        info["loadavg_at_start"] = os.getloadavg()
    except OSError:
        pass
    return info


def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat (smoke)")
    parser.add_argument("--repeats", type=int, default=None, help="repetitions (default 3)")
    parser.add_argument("--only", default=None, help="run configurations whose name contains this")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return parser


def run_configs(
    script: str, configs: Sequence[Config], repeats: int, *, log: Callable[[str], None]
) -> Runs:
    """Run every configuration ``repeats`` times, each in a fresh process, interleaved."""
    runs: Runs = {c.name: [] for c in configs}
    skipped_packages: set[str] = set()
    for config in configs:
        if (
            config.requires
            and not have(config.requires)
            and config.requires not in skipped_packages
        ):
            print(f"skipped: {config.requires} not installed")
            skipped_packages.add(config.requires)
    for rep in range(repeats):
        for config in configs:
            if config.once and rep > 0:
                continue
            if config.requires and not have(config.requires):
                runs[config.name].append({"skipped": f"{config.requires} not installed"})
                continue
            started = time.perf_counter()
            log(f"[rep {rep + 1}/{repeats}] {config.name} ...")
            runs[config.name].append(_run_child(script, config, rep))
            log(f"    done in {time.perf_counter() - started:.1f} s")
    return runs


def _run_child(script: str, config: Config, rep: int) -> dict[str, Any] | None:
    params = {**config.params, "rep": rep}
    command = [sys.executable, script, "--child", json.dumps(params)]
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=config.timeout, check=False
        )
    except subprocess.TimeoutExpired:
        print(f"!! {config.name}: timed out after {config.timeout} s", file=sys.stderr)
        return None
    if proc.returncode != 0:
        print(f"!! {config.name}: exit {proc.returncode}\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        print(f"!! {config.name}: no JSON output\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    return dict(json.loads(lines[-1]))


def median_row(runs: Sequence[dict[str, Any] | None]) -> dict[str, Any]:
    """Median of every numeric field over the runs; other fields from the first run.

    Also adds ``<field>_spread`` = (min, max) for numeric fields and ``runs`` = count.
    """
    good = [r for r in runs if r is not None]
    if not good:
        return {"failed": True}
    if "skipped" in good[0]:
        return {"skipped": good[0]["skipped"]}
    row: dict[str, Any] = {}
    for key in good[0]:
        values = [r.get(key) for r in good]
        numbers = [
            v
            for v in values
            if isinstance(v, int | float) and not isinstance(v, bool) and not math.isnan(v)
        ]
        if numbers and len(numbers) == len([v for v in values if v is not None]):
            row[key] = statistics.median(numbers)
            if len(numbers) > 1:
                row[f"{key}_spread"] = (min(numbers), max(numbers))
        else:
            row[key] = values[0]
    row["runs"] = len(good)
    return row


def ratio(runs: Runs, numerator: str, denominator: str, key: str) -> float:
    """Median over repetitions of ``runs[numerator][i][key] / runs[denominator][i][key]``."""
    values = []
    for a, b in zip(runs.get(numerator, []), runs.get(denominator, []), strict=False):
        if not a or not b or key not in a or key not in b:
            continue
        x, y = a[key], b[key]
        if isinstance(x, int | float) and isinstance(y, int | float) and y:
            values.append(x / y)
    return statistics.median(values) if values else math.nan


def fmt(value: Any, digits: int = 2) -> str:
    """Table cell: thousands separators for big numbers, ``–`` for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    return str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def print_json(payload: dict[str, Any]) -> None:
    """The last line of stdout: one JSON object (NaN becomes null)."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    print(json.dumps(clean(payload), separators=(",", ":")), flush=True)


def run_main(
    argv: Sequence[str] | None,
    *,
    description: str,
    script: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    child: Callable[[dict[str, Any]], dict[str, Any]],
    configs: Callable[[argparse.Namespace], list[Config]],
    report: Callable[[argparse.Namespace, Runs], dict[str, Any]],
) -> int:
    """The whole parent/child protocol of a bench script."""
    parser = base_parser(description)
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.child is not None:
        result = child(json.loads(args.child))
        print_json(result)
        return 0
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    chosen = [c for c in configs(args) if args.only is None or args.only in c.name]
    started = time.perf_counter()

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    runs = run_configs(script, chosen, repeats, log=log)
    payload = report(args, runs)
    failed = sorted(name for name, rs in runs.items() if rs and any(r is None for r in rs))
    payload.update(
        {
            "repeats": repeats,
            "quick": args.quick,
            "machine": machine(),
            "elapsed_s": time.perf_counter() - started,
            "failed": failed,
            "medians": {name: median_row(rs) for name, rs in runs.items()},
            "runs": runs,
        }
    )
    print_json(payload)
    return 1 if failed else 0
