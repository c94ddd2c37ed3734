# SPDX-License-Identifier: Apache-2.0
"""``tocsin console``: serve the web console from the stores alone (no running system).

Shows durable tasks and parked tasks (with retry / discard), and cluster members when a
coordinator is given, and serves ``/metrics`` (task counts by state) when
``prometheus_client`` is installed. Runs until Ctrl-C / SIGTERM. Exit codes: 0 stopped
cleanly, 1 the server failed (address in use, store error), 2 bad usage.

The token comes from ``--token`` or ``TOCSIN_CONSOLE_TOKEN`` (prefer the variable: a
command line is visible to other users of the machine).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from typing import Any

from ..errors import InvalidStoreURLError, StoreError
from ..stores import Store, open_store

__all__ = ["register"]

_HINT = "tocsin console needs aiohttp: pip install 'tocsin[console]'"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``console`` command to a ``tocsin`` parser."""
    parser = subparsers.add_parser(
        "console", help="serve the web console (tasks, parked tasks, members) from a store"
    )
    parser.add_argument(
        "--store",
        default=os.environ.get("TOCSIN_STORE"),
        help="store URL, e.g. sqlite:///tasks.db (default: $TOCSIN_STORE)",
    )
    parser.add_argument("--coordinator", help="cluster coordinator URL: show its members")
    parser.add_argument(
        "--bind", default="127.0.0.1:8765", help="HOST:PORT to listen on (default: %(default)s)"
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("TOCSIN_CONSOLE_TOKEN"),
        help="access token, required unless bound to loopback (default: $TOCSIN_CONSOLE_TOKEN)",
    )
    parser.add_argument(
        "--interval", type=float, default=1.0, help="seconds between live updates (default: 1)"
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        from .. import console
    except ImportError:
        print(f"tocsin console: error: {_HINT}", file=sys.stderr)
        return 1
    if not args.store:
        print("tocsin console: error: no store: pass --store URL or set TOCSIN_STORE",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        store = open_store(args.store)
    except InvalidStoreURLError as exc:
        print(f"tocsin console: error: {exc}", file=sys.stderr)
        return 2
    path = getattr(store, "path", None)  # SQLiteStore: never create an empty database
    if isinstance(path, str) and path != ":memory:" and not os.path.exists(path):
        print(f"tocsin console: error: no such SQLite store file: {os.path.abspath(path)}",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.coordinator:
        # Hook for issue 12: members come from the cluster package's coordinator.
        print("tocsin console: error: --coordinator needs the cluster package (issue 12), "
              "which this build does not have yet", file=sys.stderr)  # fmt: skip
        return 2
    try:
        return asyncio.run(_serve(console, store, args))
    except ValueError as exc:  # bad --bind / --token / --interval
        print(f"tocsin console: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, StoreError) as exc:
        print(f"tocsin console: error: {exc}", file=sys.stderr)
        return 1


async def _serve(console: Any, store: Store, args: argparse.Namespace) -> int:
    await store.open()
    try:
        metrics, refresh = _store_metrics(store, args.interval)
        server = await console.serve_store(
            store, args.bind, args.token, metrics=metrics, interval=args.interval
        )
        print(f"tocsin console: serving {server.url} (Ctrl-C to stop)", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        refresher = loop.create_task(refresh(stop)) if refresh is not None else None
        try:
            await stop.wait()
        finally:
            if refresher is not None:
                refresher.cancel()
                await asyncio.gather(refresher, return_exceptions=True)
            await server.close()
    finally:
        await store.close()
    return 0


def _store_metrics(store: Store, interval: float) -> tuple[Any, Any]:
    """``(endpoint, refresher)``: ``tocsin_durable_tasks{state}`` from the store, read every
    ``interval`` by the refresher (a Prometheus scrape cannot await a store); ``(None,
    None)`` without prometheus_client."""
    try:
        import prometheus_client  # noqa: F401

        from ..metrics import Metric, MetricKind, Metrics, Sample, prometheus_endpoint
    except ImportError:
        return None, None
    counts: dict[str, int] = {}

    def tasks() -> list[Metric]:
        samples = tuple(Sample(counts.get(s, 0), (("state", s),))
                        for s in ("pending", "running", "parked"))  # fmt: skip
        return [Metric("durable.tasks", MetricKind.GAUGE, "Durable tasks in the store by state.",
                       "", samples)]  # fmt: skip

    async def refresh(stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(StoreError):
                rows = await store.list_tasks()
                counts.clear()
                for row in rows:
                    counts[row.state] = counts.get(row.state, 0) + 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)

    return prometheus_endpoint(Metrics([tasks])), refresh
