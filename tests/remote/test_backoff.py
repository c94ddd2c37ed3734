# SPDX-License-Identifier: Apache-2.0
"""Reconnect backoff and heartbeats on a ManualClock: the transport's timers run on the
system clock, so their timing is tested without sleeping (the sockets are real: a dial to
a closed port is refused at once)."""

from __future__ import annotations

import socket

from tests.eventually import eventually
from tests.remote.remote_support import FakePID, RecordingHost, config

from tocsin import ManualClock
from tocsin.remote._address import NodeAddress
from tocsin.remote._endpoint import _BACKOFF_BASE
from tocsin.remote._messages import MessageRegistry, WireCodec
from tocsin.remote._node import RemoteNode


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def manual_node(clock: ManualClock, **changes: object) -> RemoteNode:
    cfg = config(**changes)
    codec = WireCodec(MessageRegistry(cfg.messages), FakePID, FakePID)
    return RemoteNode(cfg, "a", RecordingHost(), codec, clock)


async def test_retries_back_off_exponentially_with_jitter_up_to_the_cap() -> None:
    clock = ManualClock()
    node = manual_node(clock, reconnect_max=0.4)
    await node.start()
    try:
        dead = NodeAddress("tcp", host="127.0.0.1", port=free_port())
        endpoint = node.endpoint(dead)
        assert node.tell(dead, "/user/x", "", "", node.encode_message(1), "m")
        await eventually(lambda: endpoint.state == "down")
        delays = []
        for attempt in range(6):
            retry = endpoint._retry
            assert retry is not None
            delay = retry.deadline - clock.monotonic()
            delays.append(delay)
            cap = min(0.4, _BACKOFF_BASE * 2**attempt)
            assert cap * 0.5 <= delay <= cap + 1e-9
            await clock.advance(delay)
            await eventually(lambda: endpoint._retry is not None)  # refused, re-armed
        assert max(delays) <= 0.4
        # A node listens there now: the next retry connects.
        peer = RemoteNode(
            config(f"tcp://127.0.0.1:{dead.port}"),
            "b",
            RecordingHost(),
            WireCodec(MessageRegistry([]), FakePID, FakePID),
        )
        await peer.start()
        try:
            await clock.advance(0.4)
            await eventually(lambda: endpoint.state == "up")
            assert node.metrics().reconnects == 0  # it had never been up before
        finally:
            await peer.stop()
    finally:
        await node.stop()


async def test_no_retry_fires_while_manual_time_stands_still() -> None:
    clock = ManualClock()
    node = manual_node(clock)
    await node.start()
    try:
        dead = NodeAddress("tcp", host="127.0.0.1", port=free_port())
        node.tell(dead, "/user/x", "", "", node.encode_message(1), "m")
        endpoint = node.endpoint(dead)
        await eventually(lambda: endpoint.state == "down")
        # Everything that can happen without time passing has happened once the loop is
        # idle (no real sleep to guess with): the retry waits for clock.advance.
        await clock.settle()
        assert endpoint.state == "down"
        assert not node.tell(dead, "/user/x", "", "", node.encode_message(2), "m2")
    finally:
        await node.stop()
