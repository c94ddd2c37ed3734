# SPDX-License-Identifier: Apache-2.0
"""Two ``RemoteNode`` in one process, one core: the transport's own cost per ask round
trip, without a second process's scheduling in the figure.

Usage::

    .venv/bin/python bench/_remote_inproc.py [--tree /tmp/before] [--repeats 3]

Each repetition runs this tree and, with ``--tree``, another checkout's ``src/`` (each in
a fresh process pinned to core 0), one after the other; it prints the p50 of 5,000
sequential ``RemoteNode.ask`` after 500 of warm-up, per tree. Not run by
``bench/run_all.py`` (the leading underscore).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SECRET = b"bench-secret-0123456789"


async def _measure(asks: int) -> dict[str, Any]:
    from tocsin.remote._address import parse_system_address
    from tocsin.remote._config import Remoting
    from tocsin.remote._messages import WireCodec
    from tocsin.remote._node import RemoteNode

    class Host:
        def deliver_tell(self, *args: Any) -> None:
            return None

        def deliver_ask(self, path: str, inc: str, sender: str, message: Any, reply: Any) -> None:
            reply.respond(message)

        def resolve(self, path: str) -> str:
            return ""

        def undelivered(self, *args: Any) -> None:
            raise AssertionError("undelivered")

        def undelivered_frame(self, *args: Any) -> None:
            raise AssertionError("undelivered")

    config = Remoting(listen="tcp://127.0.0.1:0", secret=SECRET)
    a = RemoteNode(config, "a", Host(), WireCodec(config.registry, type(None), str))
    b = RemoteNode(config, "b", Host(), WireCodec(config.registry, type(None), str))
    await a.start()
    await b.start()
    try:
        target = parse_system_address(b.address)[1]
        message = a.encode_message(1)
        for _ in range(asks // 10):
            await a.ask(target, "/user/x", "", "", message)
        samples = []
        for _ in range(asks):
            started = time.perf_counter()
            await a.ask(target, "/user/x", "", "", message)
            samples.append(time.perf_counter() - started)
        return {"ask_p50_us": statistics.median(samples) * 1e6}
    finally:
        await a.stop()
        await b.stop()


def child(tree: str, asks: int) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    if tree:
        sys.path.insert(0, os.path.join(tree, "src"))
    print(json.dumps(asyncio.run(_measure(asks))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tree", default="", help="another checkout, side by side")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--asks", type=int, default=5000)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child if args.child != "." else "", args.asks)
        return 0
    trees = {"this tree": "."} | ({"--tree": os.path.abspath(args.tree)} if args.tree else {})
    results: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.repeats):
        for name, tree in trees.items():
            out = subprocess.run(
                [sys.executable, __file__, "--child", tree, "--asks", str(args.asks)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            results[name].append(json.loads(out.strip().splitlines()[-1])["ask_p50_us"])
    for name, values in results.items():
        print(f"{name}: ask round trip p50 {statistics.median(values):.1f} µs {values}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
