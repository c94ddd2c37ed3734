# SPDX-License-Identifier: Apache-2.0
"""``tocsin demo``: a short, self-terminating tour, printing what happens as it happens."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from ..errors import InvalidStoreURLError, StoreError
from ..stores import open_store

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = subparsers.add_parser(
        "demo", help="a ~10 s tour: actors, supervision, timers, cron, durable tasks"
    )
    demo.add_argument(
        "--store",
        default=None,
        help="store URL for the durable part (default: a fresh SQLite file in a temp dir)",
    )
    # The second process of the demo's remote hop (started by the demo itself).
    demo.add_argument("--remote-peer", action="store_true", help=argparse.SUPPRESS)
    demo.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ._tour import run_demo

    if args.remote_peer:
        from ._remote_hop import serve_peer

        asyncio.run(serve_peer())
        return 0

    if args.store is not None:
        try:
            open_store(args.store)  # a bad URL is a usage error, before the tour starts
            asyncio.run(run_demo(args.store))
        except (InvalidStoreURLError, StoreError) as exc:
            # One line, no traceback (issue 10 item 14): a bad URL or an unopenable path.
            print(f"tocsin demo: error: {exc}", file=sys.stderr)
            return 2
        return 0
    with tempfile.TemporaryDirectory(prefix="tocsin-demo-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'demo.db'}"
        asyncio.run(run_demo(url))
    return 0
