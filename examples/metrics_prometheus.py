# SPDX-License-Identifier: Apache-2.0
"""Export a system's metrics to Prometheus: your own registry, or the text on stdout.

Run: python examples/metrics_prometheus.py (needs `pip install tocsin[metrics]`).
"""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, generate_latest

from tocsin import Actor, ActorSystem, ReceiveContext
from tocsin.metrics import Metrics, PrometheusCollector


class Heart(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        pass  # a tick arrived


async def main() -> None:
    async with ActorSystem("shop") as system:
        heart = await system.spawn(Heart, "heart")
        await system.schedule("beat", heart, 0.05, reference="heartbeat")

        # Register tocsin's collector in any prometheus_client registry: the default
        # REGISTRY served by prometheus_client.start_http_server(9000), an ASGI/WSGI app,
        # or (as here) a private one.
        registry = CollectorRegistry()
        registry.register(PrometheusCollector(Metrics.of(system)))

        await asyncio.sleep(0.3)  # a few ticks
        text = generate_latest(registry).decode()
        for line in text.splitlines():
            if line.startswith(("tocsin_schedule_ticks_delivered", "tocsin_schedules{")):
                print(line)


if __name__ == "__main__":
    asyncio.run(main())
