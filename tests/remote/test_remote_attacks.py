# SPDX-License-Identifier: Apache-2.0
"""The attacks of the security review, each replayed on real loopback sockets.

* a relay without the secret between a dialer and a listener (or back into the dialer's
  own listener) injects nothing: the listener refuses an address it does not listen
  at, and where the relay sits at the advertised address itself (on path), forged and
  replayed records close the connection, counted;
* a peer holding the secret cannot claim another node's name and receive its traffic,
  and an address a peer announces is never dialled;
* 1,100 idle strangers do not stop a node from serving its peers;
* a node bound off loopback without TLS warns once.

Every wait is bounded; outcomes are asserted, not speed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket

import msgspec
import pytest
from tests.eventually import eventually
from tests.remote.remote_support import (
    SECRET,
    FakePID,
    RawDialer,
    RecordingHost,
    authenticate,
    config,
    frame,
    host_of,
    make_node,
    running,
)

from tocsin import ManualClock, NodeUnreachableError
from tocsin.remote import _handshake as hs
from tocsin.remote import _records as records
from tocsin.remote._address import NodeAddress, parse_system_address
from tocsin.remote._envelopes import Ask, Envelope, Hello, Tell, decoder
from tocsin.remote._messages import MessageRegistry, WireCodec
from tocsin.remote._node import RemoteNode, own_addresses
from tocsin.remote._replies import RemoteReply

INJECTED = 8


def node_of(address: str) -> NodeAddress:
    return parse_system_address(address)[1]


class Relay:
    """A process without the secret that nodes dial: it connects on to ``target`` and
    forwards bytes both ways, recording what the dialer sent; ``inject`` writes its own
    bytes towards the target (or back to the dialer) on the last connection."""

    def __init__(self, target: NodeAddress) -> None:
        self.target = target
        self.port = 0
        self.dialled = 0
        self.from_dialer = bytearray()
        self._to_target: asyncio.StreamWriter | None = None
        self._to_dialer: asyncio.StreamWriter | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def address(self) -> NodeAddress:
        return NodeAddress("tcp", host="127.0.0.1", port=self.port)

    async def __aenter__(self) -> Relay:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        for writer in (self._to_target, self._to_dialer):
            if writer is not None:
                writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.dialled += 1
        self.from_dialer = bytearray()
        up_reader, up_writer = await asyncio.open_connection(self.target.host, self.target.port)
        self._to_target, self._to_dialer = up_writer, writer
        for task in (
            self._pipe(reader, up_writer, self.from_dialer),
            self._pipe(up_reader, writer, None),
        ):
            t = asyncio.get_running_loop().create_task(task)
            self._tasks.add(t)

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, log: bytearray | None
    ) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                if log is not None:
                    log += data
                writer.write(data)
        writer.close()

    def inject(self, data: bytes, *, to_dialer: bool = False) -> None:
        writer = self._to_dialer if to_dialer else self._to_target
        assert writer is not None
        writer.write(data)


def forged_frames(codec_node: RemoteNode) -> list[bytes]:
    """8 tells and 8 asks to ``/user/victim``, as the review's relay sent them."""
    name, payload = codec_node.encode_message("injected")
    tells = [Tell("/user/victim", "", "", name, msgspec.Raw(payload)) for _ in range(INJECTED)]
    asks = [
        Ask(900 + i, "/user/victim", "", "", name, msgspec.Raw(payload)) for i in range(INJECTED)
    ]
    return [frame(msgspec.msgpack.encode(e)) for e in [*tells, *asks]]


class AskRecordingHost(RecordingHost):
    """Records asks too (the attack counts both)."""

    def __init__(self) -> None:
        super().__init__()
        self.asks: list[object] = []

    def deliver_ask(
        self, path: str, incarnation: str, sender: str, message: object, reply: RemoteReply
    ) -> None:
        self.asks.append(message)
        reply.respond(message)


async def test_a_relay_to_another_node_is_refused_and_injects_nothing() -> None:
    victim = AskRecordingHost()
    async with running(config(), "d") as dialer:
        listener = make_node(config(), "l", victim)
        await listener.start()
        try:
            async with Relay(node_of(listener.address)) as relay:
                # The dialer is made to dial the relay (a rewritten coordinator entry).
                assert dialer.tell(relay.address, "/user/x", "", "", dialer.encode_message(1), "t")
                await eventually(lambda: host_of(dialer).undelivered_infos == ["t"])
                for forged in forged_frames(dialer):
                    relay.inject(forged)  # plaintext frames, as before the channel
                    relay.inject(forged, to_dialer=True)
                await eventually(lambda: listener.metrics().auth_failures >= 1)
                await asyncio.sleep(0.1)  # (bounded) give injected bytes a chance to land
            assert victim.tells == []
            assert victim.asks == []
            assert host_of(dialer).tells == []
            assert listener.metrics().frames_in == 0
        finally:
            await listener.stop()


async def test_a_relay_back_into_the_dialers_own_listener_injects_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "tocsin.remote")
    own = AskRecordingHost()
    node = make_node(config(), "d", own)
    await node.start()
    try:
        async with Relay(node_of(node.address)) as relay:
            with pytest.raises(NodeUnreachableError):
                await node.ask(relay.address, "/user/victim", "", "", node.encode_message(0))
            for forged in forged_frames(node):
                relay.inject(forged)
            await eventually(lambda: node.metrics().auth_failures >= 2)  # both ends refuse
            await asyncio.sleep(0.1)  # (bounded) give injected bytes a chance to land
        assert own.tells == []
        assert own.asks == []
        lines = [r.getMessage() for r in caplog.records]
        assert any("reflected handshake" in line or "relay" in line for line in lines), lines
    finally:
        await node.stop()


async def test_an_on_path_relay_cannot_forge_or_replay_a_record() -> None:
    victim = AskRecordingHost()
    async with running(config(), "d") as dialer:
        # The listener advertises the relay's address (a proxy in front of it): the
        # handshake passes through, and only the records' MACs stand in the way.
        relay = Relay(NodeAddress("tcp"))
        async with relay:
            listener = make_node(config(advertise=f"tcp://127.0.0.1:{relay.port}"), "l", victim)
            await listener.start()
            try:
                relay.target = node_of(
                    f"tocsin://l@127.0.0.1:{listener._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
                )
                target = relay.address
                assert await dialer.ask(target, "/user/x", "", "", dialer.encode_message(1)) == 1
                assert dialer.tell(target, "/user/x", "", "", dialer.encode_message(2), None)
                await victim.wait_tells(1)
                # 1. Records sealed under a key the relay made up.
                fake = RawDialer(b"not-the-secret-at-all", "tocsin://d@x:1", str(target))
                fake.key_out = b"k" * 32
                for i, forged in enumerate(forged_frames(dialer)):
                    relay.inject(fake.record(forged, seq=100 + i))
                await eventually(lambda: listener.metrics().mac_failures == 1)
                await asyncio.sleep(0.1)
                assert victim.tells == [("/user/x", "", "", 2)]
                assert len(victim.asks) == 1
                # 2. A replay of a record the dialer really sent (a tell) on its next
                # connection: the sequence number gives it away.
                await eventually(lambda: relay.dialled == 2)  # it redialled by itself
                await eventually(lambda: dialer.endpoint(target).state == "up")
                assert await dialer.ask(target, "/user/x", "", "", dialer.encode_message(3)) == 3
                sent = bytes(relay.from_dialer)
                recorded = _records_after_handshake(sent)
                assert recorded, "the relay saw no record"
                relay.inject(recorded[-1])
                await eventually(lambda: listener.metrics().mac_failures == 2)
                await asyncio.sleep(0.1)
                assert victim.tells == [("/user/x", "", "", 2)]
                assert len(victim.asks) == 2
            finally:
                await listener.stop()


def _records_after_handshake(stream: bytes) -> list[bytes]:
    """The whole records in what a dialer sent (after its opening and proof)."""
    head = hs.parse_head(stream[: hs.HEAD_SIZE])
    assert head is not None
    pos = hs.HEAD_SIZE + head.body + hs.MAC_SIZE
    found = []
    while len(stream) - pos >= records.HEAD:
        size, _ = records.unpack_head(stream, pos)
        end = pos + records.HEAD + size + records.MAC
        if end > len(stream):
            break
        found.append(stream[pos:end])
        pos = end
    return found


async def _envelopes(reader: asyncio.StreamReader, within: float) -> list[Envelope]:
    """Every frame a node sends a raw peer within ``within`` seconds (or until it closes)."""
    got: list[Envelope] = []
    decode = decoder().decode
    with contextlib.suppress(TimeoutError, asyncio.IncompleteReadError, ConnectionError):
        async with asyncio.timeout(within):
            while True:
                head = await reader.readexactly(records.HEAD)
                size, _ = records.unpack_head(head, 0)
                body = await reader.readexactly(size + records.MAC)
                pos = 0
                while pos < size:
                    length = int.from_bytes(body[pos : pos + 4], "big")
                    got.append(decode(body[pos + 4 : pos + 4 + length]))
                    pos += 4 + length
    return got


async def test_a_peer_cannot_claim_another_nodes_name_nor_get_an_announced_address_dialled() -> (
    None
):
    dials = 0

    def dialled(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal dials
        dials += 1
        writer.close()

    announced = await asyncio.start_server(dialled, "127.0.0.1", 0)
    announced_port = announced.sockets[0].getsockname()[1]
    async with running(config(heartbeat=0.05), "d") as d, running(config(), "q") as q:
        at_d = node_of(d.address)
        # An insider (it holds the secret) dials d first, claiming to be q.
        spy = RawDialer(SECRET, q.address, str(at_d))
        reader, writer = await authenticate(spy, at_d, "q")
        await eventually(lambda: d.metrics().connections == 1)
        # d's traffic for q goes to q itself, never on the spy's connection.
        assert await d.ask(node_of(q.address), "/user/x", "", "", d.encode_message(7)) == 7
        assert d.tell(node_of(q.address), "/user/x", "", "", d.encode_message(8), None)
        await host_of(q).wait_tells(1)
        seen = await _envelopes(reader, within=0.5)
        assert [type(e) for e in seen if type(e) in (Tell, Ask)] == []
        assert next(e for e in seen if type(e) is Hello).system == "d"
        writer.close()
        # An insider announcing an address d was never asked to dial, then leaving.
        liar = RawDialer(SECRET, f"tocsin://x@127.0.0.1:{announced_port}", str(at_d))
        reader, writer = await authenticate(liar, at_d, "x")
        await _envelopes(reader, within=0.3)  # d's Hello, then d lets the quiet one go
        writer.close()
        await asyncio.sleep(0.3)  # (bounded) the old code redialled within ~50 ms
        assert dials == 0
        assert NodeAddress("tcp", host="127.0.0.1", port=announced_port) not in d._endpoints
    announced.close()


async def test_a_thousand_idle_strangers_do_not_stop_the_node_serving_its_peers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "tocsin.remote")
    clock = ManualClock()  # the handshake deadline is read through the node's clock
    cfg = config(max_pending_handshakes=64)
    node = RemoteNode(
        cfg, "n", RecordingHost(), WireCodec(MessageRegistry(cfg.messages), FakePID, FakePID), clock
    )
    await node.start()
    at_n = node_of(node.address)
    strangers: list[socket.socket] = []
    try:
        async with running(config(), "a") as a, running(config(), "b") as b:
            assert await a.ask(at_n, "/user/x", "", "", a.encode_message(1)) == 1
            loop = asyncio.get_running_loop()

            async def connect() -> None:
                sock = socket.socket()
                sock.setblocking(False)
                strangers.append(sock)
                with contextlib.suppress(OSError):
                    await loop.sock_connect(sock, (at_n.host, at_n.port))

            async with asyncio.timeout(60):
                for start in range(0, 1100, 50):
                    await asyncio.gather(*(connect() for _ in range(start, start + 50)))
            await eventually(lambda: node.metrics().handshakes_refused >= 1100 - 64, within=30)
            # The peer already in keeps being served, and the node opens files.
            for i in range(8):
                assert await a.ask(at_n, "/user/x", "", "", a.encode_message(i)) == i
            with open(__file__, "rb") as own:
                assert own.read(1)
            # A new peer is refused while 64 strangers hold their handshakes...
            with pytest.raises(NodeUnreachableError):
                await b.ask(at_n, "/user/x", "", "", b.encode_message(0))
            # ...and gets in once their deadline (connect_timeout, 5 s) has passed.
            await clock.advance(cfg.connect_timeout)
            await eventually(lambda: node.metrics().auth_failures >= 64)

            async def served() -> bool:
                try:
                    return await b.ask(at_n, "/user/x", "", "", b.encode_message(2)) == 2
                except NodeUnreachableError:
                    await asyncio.sleep(0.05)
                    return False

            async with asyncio.timeout(30):
                while not await served():
                    pass
        refused_lines = [
            r.getMessage() for r in caplog.records if "refused a connection from" in r.getMessage()
        ]
        assert len(refused_lines) == 1  # once a minute per peer host, however many
        assert "max_pending_handshakes=64" in refused_lines[0]
    finally:
        for sock in strangers:
            sock.close()
        await node.stop()


async def test_a_listener_off_loopback_without_tls_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "tocsin.remote")
    async with running(config("tcp://0.0.0.0:0", advertise="tcp://127.0.0.1:1"), "open"):
        pass
    async with running(config(), "loopback"):
        pass
    lines = [r.getMessage() for r in caplog.records if "without TLS" in r.getMessage()]
    assert len(lines) == 1
    assert "0.0.0.0" in lines[0]


def test_a_node_answers_to_its_own_addresses_only() -> None:
    loopback = config("tcp://127.0.0.1:7100")
    own = own_addresses(loopback, loopback.dial_address, 7100)
    assert {"tcp://127.0.0.1:7100", "tcp://localhost:7100", "tcp://[::1]:7100"} <= own
    assert "tcp://127.0.0.1:7101" not in own
    assert "tcp://127.0.0.2:7100" not in own
    everywhere = config("tcp://0.0.0.0:0", advertise="tcp://10.0.0.5:7100")
    own = own_addresses(everywhere, everywhere.dial_address, 7100)
    assert {"tcp://10.0.0.5:7100", "tcp://127.0.0.1:7100", "tcp://localhost:7100"} <= own
    assert "tcp://10.0.0.6:7100" not in own
    unix = config("unix:///run/shop/n1.sock")
    assert own_addresses(unix, unix.dial_address) == {"unix:///run/shop/n1.sock"}
