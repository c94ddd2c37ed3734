# SPDX-License-Identifier: Apache-2.0
"""A fenced durable write against an unfenced one on the PostgreSQL store (#24).

One throw-away local PostgreSQL (``tests/integration/pg.py``), one store, one identity
whose fence is already at epoch 1; then 20 rounds, each 100 one-task upserts
(``apply([UpsertTask])``, what a single node writes) followed by 100 fenced ones
(``apply([Fence, UpsertTask])``, what a cluster owner writes), one commit each. Rounds
interleave the two so machine noise falls on both; the figure is the median of the
per-round ratios fenced / unfenced.

Reproduce: ``.venv/bin/python bench/pg_fence.py durable`` (or ``nosync``), optionally
``--tree OTHER_CHECKOUT`` to import tocsin from another tree (A/B).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROUNDS, PER = 20, 100


async def _main(dsn: str, label: str) -> None:
    from tocsin.stores import Fence, TaskRow, UpsertTask
    from tocsin.stores.postgres import PostgresStore

    def row(i: int) -> TaskRow:
        return TaskRow(
            kind="K", identity="a", id=f"t{i}", name="n", payload=b"\x01", due=1.0,
            every=None, attempts=0, max_retries=5, created_at=1.0, state="pending",
            last_error=None, timeout=None,
        )  # fmt: skip

    store = PostgresStore(dsn, schema=f"f_{uuid.uuid4().hex[:8]}")
    await store.open()
    await store.apply([Fence("K", "a", 1, "n")])
    i = 0
    plain: list[float] = []
    fenced: list[float] = []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        for _ in range(PER):
            i += 1
            await store.apply([UpsertTask(row(i))])
        plain.append((time.perf_counter() - t) / PER * 1e6)
        t = time.perf_counter()
        for _ in range(PER):
            i += 1
            await store.apply([Fence("K", "a", 1, "n"), UpsertTask(row(i))])
        fenced.append((time.perf_counter() - t) / PER * 1e6)
    await store.close()
    ratios = [f / p for f, p in zip(fenced, plain, strict=True)]
    print(
        f"{label}: unfenced {statistics.median(plain):,.0f} µs, fenced "
        f"{statistics.median(fenced):,.0f} µs per write; fenced / unfenced "
        f"{statistics.median(ratios):.2f} (rounds {min(ratios):.2f}-{max(ratios):.2f}); "
        f"load {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("durable", "nosync"))
    parser.add_argument("--tree", default=None, help="import tocsin from this checkout")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    if args.tree:
        sys.path.insert(0, str(Path(args.tree).resolve() / "src"))
    from tests.integration.pg import temporary_server

    on = "on" if args.mode == "durable" else "off"
    settings = {"fsync": on, "synchronous_commit": on, "full_page_writes": on}
    with temporary_server({**settings, "shared_buffers": "256MB"}) as server:
        asyncio.run(_main(server.dsn, f"{args.mode}, {args.tree or 'this tree'}"))


if __name__ == "__main__":
    main()
