# SPDX-License-Identifier: Apache-2.0
"""The batch format on the wire: one MAC per record of many frames, checked before any
frame in it is decoded (DESIGN "Security": "HMAC-SHA256 per frame or per write batch,
with a sequence number").

A peer that proved the secret sends a good batch of tells (all handed on, in order),
then one record changed on the way by someone without the key: a byte flipped inside a
frame in the middle, two frames swapped, a frame dropped or added (the record's length
fixed up), a good record replayed, a good record's MAC on other frames. Every one is
refused as a whole (not even the frames before the change are handed on), counted in
``mac_failures``, and closes the connection.

Real loopback sockets; every wait is bounded; outcomes are asserted, not speed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import msgspec
import pytest
from tests.eventually import eventually
from tests.remote.remote_support import (
    SECRET,
    Ping,
    RawDialer,
    authenticate,
    config,
    frame,
    host_of,
    running,
)

from tocsin.remote import _records as records
from tocsin.remote._address import parse_system_address
from tocsin.remote._envelopes import Tell
from tocsin.remote._node import RemoteNode

BATCH = 5


def tells(node: RemoteNode, first: int) -> list[bytes]:
    """``BATCH`` tell frames to ``/user/x``, carrying ``Ping(first)``, ``Ping(first + 1)``..."""
    out = []
    for n in range(first, first + BATCH):
        name, payload = node.encode_message(Ping(n))
        out.append(
            frame(msgspec.msgpack.encode(Tell("/user/x", "", "", name, msgspec.Raw(payload))))
        )
    return out


def reheaded(record: bytes, frames: bytes) -> bytes:
    """``record``'s sequence number and MAC around other ``frames`` (the length fixed up):
    what an attacker without the key can build."""
    _, seq = records.unpack_head(record, 0)
    return records.pack_head(len(frames), seq) + frames + record[-records.MAC :]


def flip_inside_third(record: bytes, frames: list[bytes], dialer: RawDialer) -> bytes:
    at = records.HEAD + len(frames[0]) + len(frames[1]) + len(frames[2]) - 1
    return record[:at] + bytes([record[at] ^ 0x01]) + record[at + 1 :]


def swap_second_and_third(record: bytes, frames: list[bytes], dialer: RawDialer) -> bytes:
    return reheaded(record, b"".join([frames[0], frames[2], frames[1], *frames[3:]]))


def drop_third(record: bytes, frames: list[bytes], dialer: RawDialer) -> bytes:
    return reheaded(record, b"".join(frames[:2] + frames[3:]))


def add_one(record: bytes, frames: list[bytes], dialer: RawDialer) -> bytes:
    return reheaded(record, b"".join([*frames[:2], frames[0], *frames[2:]]))


def replay(record: bytes, frames: list[bytes], dialer: RawDialer) -> bytes:
    dialer.seq_out -= 1  # the sender's next record is the one already sent
    return record


def mac_of_another_record(record: bytes, frames: list[bytes], dialer: RawDialer) -> bytes:
    # Other good frames under the due sequence number, with the MAC of the record due.
    _, seq = records.unpack_head(record, 0)
    sealed = dialer.record(b"".join(reversed(frames)), seq=seq)
    return sealed[: -records.MAC] + record[-records.MAC :]


TAMPERINGS: list[Callable[[bytes, list[bytes], RawDialer], bytes]] = [
    flip_inside_third,
    swap_second_and_third,
    drop_third,
    add_one,
    replay,
    mac_of_another_record,
]


async def authenticated(
    node: RemoteNode,
) -> tuple[RawDialer, asyncio.StreamReader, asyncio.StreamWriter]:
    """A peer holding the secret, through the handshake and its Hello with ``node``."""
    at = parse_system_address(node.address)[1]
    peer = RawDialer(SECRET, "tocsin://d@127.0.0.1:1", str(at))
    reader, writer = await authenticate(peer, at, "d")
    return peer, reader, writer


async def closed_by_peer(reader: asyncio.StreamReader) -> bool:
    """Whether the node closes the connection within 10 s (what it sends is skipped)."""
    with contextlib.suppress(ConnectionError):
        async with asyncio.timeout(10):
            while await reader.read(65536):
                pass
    return reader.at_eof()


async def test_a_batch_of_frames_under_one_mac_is_handed_on_in_order() -> None:
    async with running(config(), "l") as node:
        peer, _, writer = await authenticated(node)
        try:
            frames = tells(node, 0) + tells(node, BATCH)
            writer.write(peer.record(b"".join(frames[:BATCH])))
            writer.write(peer.record(b"".join(frames[BATCH:])))
            await host_of(node).wait_tells(2 * BATCH)
            assert [t[3] for t in host_of(node).tells] == [Ping(n) for n in range(2 * BATCH)]
            assert node.metrics().mac_failures == 0
        finally:
            writer.close()


@pytest.mark.parametrize("tamper", TAMPERINGS, ids=lambda f: f.__name__)
async def test_a_changed_batch_is_refused_whole_and_closes_the_connection(
    tamper: Callable[[bytes, list[bytes], RawDialer], bytes],
) -> None:
    async with running(config(), "l") as node:
        peer, reader, writer = await authenticated(node)
        try:
            good = tells(node, 0)
            sent = peer.record(b"".join(good))
            writer.write(sent)
            await host_of(node).wait_tells(BATCH)
            # The next batch, changed on the way (or, for the replay, the same one again).
            frames = good if tamper is replay else tells(node, 100)
            record = sent if tamper is replay else peer.record(b"".join(frames))
            writer.write(tamper(record, frames, peer))
            assert await closed_by_peer(reader), "the connection stays open"
            await eventually(lambda: node.metrics().mac_failures == 1, "counted once")
            # Nothing of the changed record was handed on: not even its first frames.
            assert [t[3] for t in host_of(node).tells] == [Ping(n) for n in range(BATCH)]
        finally:
            writer.close()
