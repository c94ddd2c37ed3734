# SPDX-License-Identifier: Apache-2.0
"""One worker process per core with ``tocsin.run`` (the ``tocsin run`` command, embedded).

Each worker is its own ActorSystem ("example-1", "example-2", ...) whose ``main`` spawns a
ticker. After three ticks worker 1 asks the arbiter to stop, as ``systemctl stop`` (a
SIGTERM) would: every worker then stops gracefully and ``tocsin.run`` returns 0.

Run it: ``python examples/run_workers.py``; or, with the same ``main``, from a shell:
``tocsin run run_workers:main --workers 2`` (stop it with Ctrl-C).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import tempfile

import tocsin
from tocsin import Actor, ActorSystem, ReceiveContext

log = logging.getLogger("example")


class Ticker(Actor):
    def __init__(self) -> None:
        self.ticks = 0

    async def pre_start(self, ctx: ReceiveContext) -> None:
        await ctx.schedule("tick", ctx.self, 0.2, reference="ticker", replace=True)

    async def receive(self, ctx: ReceiveContext) -> None:
        self.ticks += 1
        log.info("%s: tick %d", ctx.system.name, self.ticks)
        if self.ticks == 3 and ctx.system.name == "example-1":
            os.kill(os.getppid(), signal.SIGTERM)  # the parent of a worker is the arbiter


async def main(system: ActorSystem) -> None:
    """Called in every worker once its system has started; returns, and the worker serves."""
    await system.spawn(Ticker, "ticker")


if __name__ == "__main__":
    # A throw-away run directory keeps the example tidy; by default it is ./.tocsin/NAME.
    with tempfile.TemporaryDirectory(prefix="tocsin-example-") as run_dir:
        sys.exit(tocsin.run(main, workers=2, name="example", run_dir=run_dir))
