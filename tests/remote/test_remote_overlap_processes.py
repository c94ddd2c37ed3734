# SPDX-License-Identifier: Apache-2.0
"""A remote target with ``Overlap.SKIP`` across two real processes (issue 22's check).

The hosting process (``_overlap_peer.py``) runs a handler that stays in ``receive`` until
the test opens its gate: "slow" for exactly as long as the test wants, with no sleep
standing for it on that side. The schedule lives in this process; the hosting node's
completion frame is what tells it the tick is over. Real time, every wait bounded;
outcomes are asserted, never speed.

The discriminating outcome is the instant of the second delivery (``ctx.tick`` crosses
the wire): with ``SKIP`` it is the first instant due after the completion came back,
every instant between being skipped; with ``ALLOW`` (the control) the ticks queued in
the remote mailbox run, and the second is the instant right after the first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.procs import close_pipes, ready_line

from tocsin import PID, ActorSystem, Outcome, Overlap, Remoting, Tick, TickNotDelivered

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PEER = Path(__file__).with_name("_overlap_peer.py")
SECRET = secrets.token_hex(16)
#: Real seconds any wait for a remote outcome may take before the test fails.
WAIT = 20.0
#: The schedule's interval, and how long the first tick's handler is kept in ``receive``.
INTERVAL = 0.05
BLOCKED = 0.6


@dataclass
class Peer:
    proc: subprocess.Popen[str]
    pids: dict[str, str]

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        close_pipes(self.proc)


@pytest.fixture
def peer() -> Iterator[Peer]:
    env = dict(os.environ, TOCSIN_SECRET=SECRET, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen(
        [sys.executable, str(PEER), "host"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = ready_line(proc, "the overlap peer")
    if not line:
        proc.wait(10)
        close_pipes(proc)
        pytest.fail(f"the overlap peer did not start (exit {proc.returncode})")
    p = Peer(proc, json.loads(line)["pids"])
    try:
        yield p
    finally:
        p.stop()


@contextlib.asynccontextmanager
async def sender(peer: Peer) -> AsyncIterator[tuple[ActorSystem, PID, PID, PID]]:
    async with ActorSystem("a", remoting=Remoting("tcp://127.0.0.1:0", SECRET)) as system:
        pids = [await system.actor_of(peer.pids[k]) for k in ("slow", "gate", "log")]
        yield system, pids[0], pids[1], pids[2]


async def records(log: PID, count: int) -> list[list[Any]]:
    """The peer's records once there are at least ``count`` (bounded wait)."""
    async with asyncio.timeout(WAIT):
        while True:
            seen: list[list[Any]] = await log.ask("get", timeout=WAIT)
            if len(seen) >= count:
                return seen
            await asyncio.sleep(0.02)


def instant(record: list[Any]) -> datetime:
    assert record[1] is not None, f"no ctx.tick on the hosting node: {record}"
    return Tick.from_wire(record[1]).instant


async def _scenario(
    peer: Peer, overlap: Overlap, skipped: list[TickNotDelivered] | None = None
) -> list[list[Any]]:
    async with sender(peer) as (system, slow, gate, log):
        if skipped is not None:
            system.events.subscribe(skipped.append, TickNotDelivered)
        await system.schedule("tick", slow, INTERVAL, reference="r", overlap=overlap)
        first = await records(log, 1)
        assert len(first) == 1
        await asyncio.sleep(BLOCKED)  # instants go by while the first tick is in receive
        assert len(await log.ask("get", timeout=WAIT)) == 1
        gate.tell("release")
        second = await records(log, 2)
        await system.cancel_schedule("r")
        # Open the gate for whatever is still queued there, then take the final records.
        for _ in range(3):
            gate.tell("release")
        await asyncio.sleep(0.2)
        done = await log.ask("get", timeout=WAIT)
        assert done[:2] == second[:2]
        return done  # type: ignore[no-any-return]


async def test_skip_across_two_processes_skips_exactly_the_ticks_due_while_in_flight(
    peer: Peer,
) -> None:
    skipped: list[TickNotDelivered] = []
    done = await _scenario(peer, Overlap.SKIP, skipped)
    t0, t1 = instant(done[0]), instant(done[1])
    # The first tick was in receive for BLOCKED seconds: every instant due meanwhile was
    # skipped (none queued behind it on the other node), and the next delivery is an
    # instant due after the completion came back, on the schedule's grid.
    gap = (t1 - t0).total_seconds()
    assert gap >= BLOCKED
    steps = round(gap / INTERVAL)
    assert abs(gap - steps * INTERVAL) < 0.002, (t0, t1)
    if skipped:  # the schedule reports what it skipped: exactly the instants between
        between = sorted(e.instant for e in skipped if t0 < e.instant < t1)
        grid = [t0 + timedelta(seconds=INTERVAL * k) for k in range(1, steps)]
        # An interval schedule's instant is its monotonic deadline read as wall time when
        # it is reported, so two reports of one grid may differ by microseconds.
        assert len(between) == len(grid), (between, grid)
        assert all(abs((b - g).total_seconds()) < 0.002 for b, g in zip(between, grid, strict=True))
        assert {e.outcome for e in skipped} == {Outcome.SKIPPED_OVERLAP}
    assert all(r[2] == 1 for r in done)  # never two handlers at once (trivially: one actor)
    # After the cancel nothing was left queued there: SKIP never sends a tick while its
    # predecessor is in flight, and the second one was in flight when it was cancelled.
    assert len(done) == 2, done
    assert [r[0] for r in done] == ["tick", "tick"]


async def test_allow_across_two_processes_queues_the_ticks_behind_a_slow_handler(
    peer: Peer,
) -> None:
    """The control: the scenario above discriminates (ALLOW sends every tick)."""
    done = await _scenario(peer, Overlap.ALLOW)
    t0, t1 = instant(done[0]), instant(done[1])
    assert (t1 - t0).total_seconds() < BLOCKED / 2  # the queued next instant, not a later one
    assert len(done) > 2
