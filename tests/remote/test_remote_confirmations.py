# SPDX-License-Identifier: Apache-2.0
"""Nothing silently lost between nodes: a tell is held until the peer confirms the record
that carried it, and every tell not confirmed when the connection is lost is a dead
letter ``unreachable``, counted.

The review's case: a sender that did not yield for 6 s was declared silent by the
receiver, which closed; the sender then wrote 16.8 MB into the closed connection and
101,249 frames vanished (TCP takes them and gives no receipt). Here the receiver's
heartbeat ticks run on a ManualClock and the sender writes while the close is on its
way, as the busy sender did.
"""

from __future__ import annotations

import asyncio

import msgspec
from tests.eventually import eventually
from tests.remote.remote_support import (
    SECRET,
    FakePID,
    Ping,
    RawDialer,
    RecordingHost,
    config,
    frame,
    host_of,
    running,
)

from tocsin import ActorSystem, DeadLetter, DeadLetterReason, ManualClock, Remoting
from tocsin.remote import _handshake as hs
from tocsin.remote import _records as records
from tocsin.remote._address import NodeAddress, parse_system_address
from tocsin.remote._connection import CONFIRM_EVERY, FROM_FRAME
from tocsin.remote._envelopes import Tell
from tocsin.remote._messages import MessageRegistry, WireCodec
from tocsin.remote._node import SILENT_TICKS, RemoteNode


def node_of(address: str) -> NodeAddress:
    return parse_system_address(address)[1]


def manual_node(name: str, clock: ManualClock, **changes: object) -> RemoteNode:
    cfg = config(**changes)
    codec = WireCodec(MessageRegistry(cfg.messages), FakePID, FakePID)
    return RemoteNode(cfg, name, RecordingHost(), codec, clock)


async def test_tells_written_to_a_receiver_that_declared_the_sender_silent_are_dead_letters() -> (
    None
):
    clock = ManualClock()
    receiver = manual_node("r", clock)
    await receiver.start()
    try:
        async with running(config(), "s") as sender:
            target = node_of(receiver.address)
            assert sender.tell(target, "/user/x", "", "", sender.encode_message(0), 0)
            await host_of(receiver).wait_tells(1)
            # From here the sender is busy: no heartbeat, nothing read. The receiver's
            # ticks find its connection quiet and let it go...
            sender._heartbeat.cancel()
            [conn] = receiver._connections
            for _ in range(SILENT_TICKS + 2):
                if conn.closed:
                    break
                receiver._heartbeat_tick()
            assert conn.closed
            # ...while the sender, not having read the close yet, writes on.
            sent = 5000
            for i in range(1, sent + 1):
                assert sender.tell(target, "/user/x", "", "", sender.encode_message(i), i)
            lost = host_of(sender).undelivered_infos
            await eventually(lambda: len(lost) >= sent)
            await asyncio.sleep(0.05)  # (bounded) nothing more comes
            assert [m for (*_, m) in host_of(receiver).tells] == [0]
            # Every tell the receiver did not get is a dead letter, counted; the first
            # one only if its confirmation was lost with the connection.
            assert set(lost) - {0} == set(range(1, sent + 1))
            assert len(lost) in (sent, sent + 1)
            assert sender.metrics().held_lost == len(lost)
            assert any("confirmed receiving them" in why for why in host_of(sender).undelivered_why)
    finally:
        await receiver.stop()


async def test_confirmed_tells_are_not_dead_letters_when_the_peer_stops() -> None:
    async with running(config(), "s") as sender:
        receiver = await _started(config(), "r")
        target = node_of(receiver.address)
        for i in range(2000):
            assert sender.tell(target, "/user/x", "", "", sender.encode_message(i), i)
        await host_of(receiver).wait_tells(2000)
        await receiver.stop()  # confirms what it read on its way out
        await eventually(lambda: sender.endpoint(target).state != "up")
        assert host_of(sender).undelivered_infos == []
        assert sender.metrics().held_lost == 0


async def test_the_sender_stops_holding_a_tell_once_its_record_is_confirmed() -> None:
    async with running(config(), "s") as sender, running(config(), "r") as receiver:
        target = node_of(receiver.address)
        payload = sender.encode_message(b"x" * 1024)
        count = 2 * CONFIRM_EVERY // 1024 + 10
        for i in range(count):
            assert sender.tell(target, "/user/x", "", "", payload, i)
            if i % 64 == 0:
                await asyncio.sleep(0)
        await host_of(receiver).wait_tells(count)
        conn = sender.endpoint(target).conn
        assert conn is not None
        # Confirmed every CONFIRM_EVERY bytes without waiting for a heartbeat tick: what
        # is held is less than that (the tail waits for the next tick).
        await eventually(lambda: sum(len(f) for _, f, _ in conn._unconfirmed) < CONFIRM_EVERY)
        # What is held per record is its bytes and a marker per plain tell, nothing of
        # the sender's objects.
        assert all(all(i is FROM_FRAME for i in infos) for _, _, infos in conn._unconfirmed)


async def _started(cfg: object, name: str) -> RemoteNode:
    from tests.remote.remote_support import make_node

    node = make_node(cfg, name)  # type: ignore[arg-type]
    await node.start()
    return node


async def test_a_large_frame_still_arriving_is_not_silence() -> None:
    clock = ManualClock()
    receiver = manual_node("r", clock, max_frame=1 << 20)
    await receiver.start()
    try:
        at = node_of(receiver.address)
        peer = RawDialer(SECRET, "tocsin://p@127.0.0.1:1", str(at))
        reader, writer = await asyncio.open_connection(at.host, at.port)
        writer.write(peer.opening())
        head = await asyncio.wait_for(reader.readexactly(hs.HEAD_SIZE), 10)
        proof = peer.proof(
            head + await asyncio.wait_for(reader.readexactly(peer.reply_size(head)), 10)
        )
        assert proof is not None
        writer.write(proof + peer.hello("p"))
        await eventually(lambda: len(receiver._connections) == 1)
        conn = next(iter(receiver._connections))
        name, payload = receiver.encode_message("y" * 500_000)
        tell = msgspec.msgpack.encode(Tell("/user/x", "", "", name, msgspec.Raw(payload)))
        record = peer.record(frame(tell))
        step = len(record) // (SILENT_TICKS * 3)
        # A slice per heartbeat interval, over three times the silence threshold.
        for start in range(0, len(record), step):
            before = conn.rx_bytes
            writer.write(record[start : start + step])
            await eventually(lambda: conn.rx_bytes > before)  # noqa: B023
            await clock.advance(receiver.config.heartbeat)
            assert not conn.closed, f"declared silent at byte {start}"
        await host_of(receiver).wait_tells(1)
        # Then nothing at all: silent after SILENT_TICKS quiet ticks.
        for _ in range(SILENT_TICKS + 1):
            await clock.advance(receiver.config.heartbeat)
        assert conn.closed
        writer.close()
        assert records.HEAD  # (the record layer carried the frame whole)
    finally:
        await receiver.stop()


async def test_an_actor_systems_unconfirmed_tells_are_dead_letters_with_their_messages() -> None:
    clock = ManualClock()
    receiver = manual_node("r", clock)
    await receiver.start()
    try:
        remoting = Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[Ping])
        async with ActorSystem("s", remoting=remoting) as sender:
            letters: list[DeadLetter] = []
            sender.events.subscribe(letters.append, DeadLetter)
            pid = sender._runtime.pid_from_wire(f"{receiver.address}/user/x")  # type: ignore[union-attr]
            pid.tell(Ping(0))
            await host_of(receiver).wait_tells(1)
            node = sender._remote.node  # type: ignore[union-attr]
            node._heartbeat.cancel()  # busy from here: no heartbeat, nothing read
            [conn] = receiver._connections
            for _ in range(SILENT_TICKS + 2):
                if conn.closed:
                    break
                receiver._heartbeat_tick()
            assert conn.closed
            sent = 2000
            for i in range(1, sent + 1):
                pid.tell(Ping(i))
            await eventually(lambda: len(letters) >= sent)
            await asyncio.sleep(0.05)  # (bounded) nothing more comes
            lost = {letter.message.n for letter in letters}
            assert lost - {0} == set(range(1, sent + 1))
            assert {letter.reason for letter in letters} == {DeadLetterReason.UNREACHABLE}
            assert all(letter.target == pid for letter in letters)
            assert sender.remote_metrics().unreachable == len(letters)
            assert sender.remote_metrics().held_lost == len(letters)
    finally:
        await receiver.stop()
