# SPDX-License-Identifier: Apache-2.0
"""The simulated network: order per pair of nodes, loss, cuts and pauses."""

from __future__ import annotations

import functools
import random

from tocsin import ManualClock
from tocsin.testing._sim_network import LATENCY, Network


def _network(
    clock: ManualClock, *, blocked: set[str] | None = None, paused: dict[str, float] | None = None
) -> Network:
    cut = blocked if blocked is not None else set()
    resume = paused if paused is not None else {}
    return Network(
        clock,
        random.Random(1),
        lambda address: address,
        lambda name: None,
        lambda name: name in cut,
        lambda name: resume.get(name),
    )


async def test_messages_between_two_nodes_arrive_in_the_order_sent_however_late() -> None:
    clock = ManualClock(wall=0)
    net = _network(clock)
    net.set_faults(loss=0.0, delay=0.5)
    arrived: list[tuple[int, float]] = []
    for i in range(100):
        net.carry("a", "b", functools.partial(lambda i: arrived.append((i, clock.monotonic())), i))
    await clock.advance(10)
    assert [i for i, _ in arrived] == list(range(100))
    assert all(0.5 + LATENCY[0] <= at <= 0.5 + LATENCY[1] for _, at in arrived)
    assert (net.sent, net.lost, net.delivered) == (100, 0, 100)


async def test_loss_drops_about_its_share_and_a_cut_node_gets_nothing() -> None:
    clock = ManualClock(wall=0)
    cut: set[str] = set()
    net = _network(clock, blocked=cut)
    net.set_faults(loss=0.3, delay=0.0)
    arrived: list[int] = []
    for i in range(1000):
        net.carry("a", "b", functools.partial(arrived.append, i))
    await clock.advance(1)
    assert 600 < len(arrived) < 800
    net.set_faults(loss=0.0, delay=0.0)
    net.carry("a", "b", lambda: arrived.append(-1))
    cut.add("b")  # cut while on its way: lost on arrival
    await clock.advance(1)
    net.carry("b", "a", lambda: arrived.append(-2))
    await clock.advance(1)
    assert -1 not in arrived
    assert -2 not in arrived


async def test_a_message_to_a_paused_node_arrives_when_it_wakes() -> None:
    clock = ManualClock(wall=0)
    net = _network(clock, paused={"b": 30.0})
    arrived: list[float] = []
    net.carry("a", "b", lambda: arrived.append(clock.monotonic()))
    await clock.advance(29)
    assert arrived == []
    await clock.advance(2)
    assert arrived == [30.0]
