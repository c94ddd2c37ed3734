# SPDX-License-Identifier: Apache-2.0
"""Serve the live console of a running system, with Prometheus metrics on /metrics.

Run: python examples/console_tour.py [--forever] (needs `pip install tocsin[console,metrics]`)
and open the printed URL (it carries the console's token). Without --forever it fetches
its own page once and exits.
"""

from __future__ import annotations

import asyncio
import sys
import urllib.request
from typing import Any

from tocsin import Actor, ActorSystem, ReceiveContext
from tocsin.durable import DurableActor


class Clock(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        pass


class Invoice(DurableActor):
    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "bill":
            ctx.respond(await self.queue("send", {"to": "ada@example.com"}, max_retries=0))

    async def send(self, payload: Any) -> None:
        raise RuntimeError("mail server down")  # parks at once: see it under "Parked tasks"


async def main(forever: bool) -> None:
    # console=: served (with /metrics) once the system is up, closed first on stop.
    # Port 0 picks a free port here; the usual bind is "127.0.0.1:8765".
    async with ActorSystem("shop", console="127.0.0.1:0") as system:
        clock = await system.spawn(Clock, "clock")
        await system.schedule("tick", clock, 1.0, reference="every-second")
        await system.schedule_cron("report", clock, "0 0 9 ? * MON", reference="weekly-report")
        await (await system.durable(Invoice, "inv-1")).ask("bill")

        # The address to open: it carries the token made for this start
        # (http://127.0.0.1:PORT/?token=...), which the page swaps for a session cookie.
        url = system.console_url
        assert url is not None
        print(f"console at {url}")
        if forever:
            await asyncio.Event().wait()
        await asyncio.sleep(0.5)  # let the task fail and park
        loop = asyncio.get_running_loop()
        page = await loop.run_in_executor(None, _open, url)
        print("weekly-report shown:", "weekly-report" in page)
        print("parked task shown:", "mail server down" in page)
        # Scripts and Prometheus send the token as a bearer instead.
        base, _, token = url.partition("?token=")
        metrics = await loop.run_in_executor(None, _scrape, base + "metrics", token)
        print("metrics served:", "tocsin_schedule_ticks_delivered_total" in metrics)


def _open(url: str) -> str:
    """Open ``url`` as a browser does: keep the session cookie across the redirect."""
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    with browser.open(url, timeout=30) as response:
        body: bytes = response.read()
        return body.decode()


def _scrape(url: str, token: str) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        body: bytes = response.read()
        return body.decode()


if __name__ == "__main__":
    asyncio.run(main("--forever" in sys.argv))
