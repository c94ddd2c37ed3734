# SPDX-License-Identifier: Apache-2.0
"""``tocsin console``: serve the web console from the stores alone (no running system).

Shows durable tasks and parked tasks (with retry / discard), and, with ``--coordinator
URL`` (PostgreSQL, Redis or a SQLite file, as ``tocsin cluster`` takes it), the cluster's
live members, read from the coordinator at every refresh; serves ``/metrics`` (task counts
by state, live members) when ``prometheus_client`` is installed. The console takes no
lease: it reads the coordinator and never joins the cluster. Runs until Ctrl-C / SIGTERM.
Exit codes: 0 stopped cleanly, 1 the server failed (address in use, store or coordinator
unreachable at start), 2 bad usage (bad store or coordinator URL, a missing SQLite file).
A coordinator that fails later is shown on the page, and read again at the next refresh.

The console always has a token unless ``--no-token`` is given (loopback binds only). The
token comes from ``--token`` or ``TOCSIN_CONSOLE_TOKEN`` (prefer the variable: a command
line is visible to other users of the machine); without either, a random one is made for
this run and the printed URL carries it (``http://127.0.0.1:8765/?token=...``, as Jupyter
prints it): open it once and the page swaps it for a session cookie (12 h).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import ssl
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from ..cluster import Coordinator, Member
from ..errors import CoordinatorError, InvalidStoreURLError, StoreError
from ..stores import Store, open_store
from ._cluster import UsageError, cli_coordinator
from ._urls import add_url_option, url_usage

__all__ = ["live_members", "register"]

_HINT = "tocsin console needs aiohttp: pip install 'tocsin[console]'"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``console`` command to a ``tocsin`` parser."""
    parser = subparsers.add_parser(
        "console", help="serve the web console (tasks, parked tasks, members) from a store"
    )
    add_url_option(parser, "store", "store URL, e.g. sqlite:///tasks.db")
    add_url_option(
        parser,
        "coordinator",
        "cluster coordinator URL (postgresql://, redis://, sqlite:///): show its live members",
    )
    parser.add_argument(
        "--bind", default="127.0.0.1:8765", help="HOST:PORT to listen on (default: %(default)s)"
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("TOCSIN_CONSOLE_TOKEN"),
        help="access token, at least 16 characters (default: $TOCSIN_CONSOLE_TOKEN, else a "
        "random one, carried by the printed URL)",
    )
    parser.add_argument(
        "--no-token",
        action="store_true",
        help="serve without a token: loopback binds only, and any user of this machine can "
        "then read the page and retry or discard tasks",
    )
    parser.add_argument(
        "--interval", type=float, default=1.0, help="seconds between live updates (default: 1)"
    )
    parser.add_argument(
        "--tls-cert",
        default=None,
        metavar="PATH",
        help="serve HTTPS with this certificate chain (PEM); the session cookie is then Secure",
    )
    parser.add_argument(
        "--tls-key", default=None, metavar="PATH", help="the private key of --tls-cert (PEM)"
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        from .. import console
    except ImportError:
        print(f"tocsin console: error: {_HINT}", file=sys.stderr)
        return 1
    if (status := url_usage(args, "tocsin console")) is not None:
        return status
    if not args.store:
        print("tocsin console: error: no store: pass --store URL or --store-file PATH, or "
              "set TOCSIN_STORE", file=sys.stderr)  # fmt: skip
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
    if args.no_token and args.token is not None:
        print("tocsin console: error: --no-token and a token (--token or TOCSIN_CONSOLE_TOKEN) "
              "were both given: choose one", file=sys.stderr)  # fmt: skip
        return 2
    try:
        args.ssl = _tls_context(args.tls_cert, args.tls_key)
    except (OSError, ssl.SSLError, ValueError) as exc:
        print(f"tocsin console: error: {exc}", file=sys.stderr)
        return 2
    coordinator: Coordinator | None = None
    if args.coordinator:
        try:
            coordinator = cli_coordinator(args.coordinator)
        except UsageError as exc:  # bad URL, memory://, no such SQLite file, no driver
            print(f"tocsin console: error: {exc}", file=sys.stderr)
            return 2
    try:
        return asyncio.run(_serve(console, store, coordinator, args))
    except ValueError as exc:  # bad --bind / --token / --interval
        print(f"tocsin console: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, StoreError, CoordinatorError) as exc:
        print(f"tocsin console: error: {exc}", file=sys.stderr)
        return 1


async def _serve(
    console: Any, store: Store, coordinator: Coordinator | None, args: argparse.Namespace
) -> int:
    await store.open()
    try:
        if coordinator is not None:
            await coordinator.open()
        try:
            return await _serve_open(console, store, coordinator, args)
        finally:
            if coordinator is not None:
                await coordinator.close()
    finally:
        await store.close()


async def _serve_open(
    console: Any, store: Store, coordinator: Coordinator | None, args: argparse.Namespace
) -> int:
    members = None if coordinator is None else live_members(coordinator)
    metrics, refresh = _store_metrics(store, members, args.interval)
    server = await console.serve_store(
        store,
        args.bind,
        args.token,
        no_token=args.no_token,
        metrics=metrics,
        members=members,
        interval=args.interval,
        ssl=args.ssl,
    )
    if args.no_token:
        print(f"tocsin console: serving {server.url} without a token (--no-token; "
              "Ctrl-C to stop)", flush=True)  # fmt: skip
    elif args.token is None:
        # The token made for this run, in the URL to open (Jupyter's way): nobody could
        # sign in otherwise. A token that was given is not printed: its owner knows it.
        print(f"tocsin console: serving {server.login_url} (Ctrl-C to stop)", flush=True)
    else:
        print(f"tocsin console: serving {server.url} (sign in with the token given; "
              "Ctrl-C to stop)", flush=True)  # fmt: skip
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
    return 0


def _tls_context(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    """The server context of ``--tls-cert`` / ``--tls-key`` (None without them).

    Raises:
        ValueError: one given without the other.
        OSError, ssl.SSLError: a file that cannot be read or is not a PEM chain and key.
    """
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ValueError("--tls-cert and --tls-key go together: give both, or neither")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


def live_members(coordinator: Coordinator) -> Callable[[], Awaitable[list[Member]]]:
    """The console's member list: the coordinator's live leases, read at each refresh
    (one ``leases()`` call, as ``tocsin cluster members`` makes), by node name.

    Nothing is written to the coordinator: the console is not a member and takes no lease.
    """

    async def members() -> list[Member]:
        _, rows = await coordinator.leases()
        return [
            Member(row.node, row.address, _utc(row.joined), _utc(row.renewed))
            for row in sorted(rows, key=lambda r: r.node)
            if row.alive
        ]

    return members


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def _store_metrics(
    store: Store, members: Callable[[], Awaitable[list[Member]]] | None, interval: float
) -> tuple[Any, Any]:
    """``(endpoint, refresher)``: ``tocsin_durable_tasks{state}`` from the store (and
    ``tocsin_cluster_members`` from the coordinator, when given), read every ``interval``
    by the refresher (a Prometheus scrape cannot await a store); ``(None, None)`` without
    prometheus_client."""
    try:
        import prometheus_client  # noqa: F401

        from ..metrics import Metric, MetricKind, Metrics, Sample, prometheus_endpoint
    except ImportError:
        return None, None
    counts: dict[str, int] = {}
    live: list[int] = []  # [count] once read; empty while the coordinator cannot be read

    def read() -> list[Metric]:
        samples = tuple(Sample(counts.get(s, 0), (("state", s),))
                        for s in ("pending", "running", "parked"))  # fmt: skip
        out = [Metric("durable.tasks", MetricKind.GAUGE, "Durable tasks in the store by state.",
                      "", samples)]  # fmt: skip
        if members is not None:
            out.append(Metric("cluster.members", MetricKind.GAUGE,
                              "Live nodes of the cluster, as the coordinator sees them.", "",
                              tuple(Sample(n) for n in live)))  # fmt: skip
        return out

    async def refresh(stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(StoreError):
                rows = await store.list_tasks()
                counts.clear()
                for row in rows:
                    counts[row.state] = counts.get(row.state, 0) + 1
            if members is not None:
                # No sample while the coordinator fails: a stale count would look live.
                try:
                    live[:] = [len(await members())]
                except CoordinatorError:
                    live.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)

    return prometheus_endpoint(Metrics([read])), refresh
