# SPDX-License-Identifier: Apache-2.0
"""Hypothesis against the frame decoder and the handshake: random bytes, truncated
frames, huge length prefixes, wrong-secret replies. Whatever arrives, the worst outcome
is that this one connection closes; nothing raises out of the protocol callbacks, and
nothing is delivered before authentication."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.remote.remote_support import (
    SECRET,
    RawDialer,
    RecordingHost,
    config,
    frame,
    make_node,
)

from tocsin.remote import _handshake as hs
from tocsin.remote import _records as records
from tocsin.remote._address import NodeAddress
from tocsin.remote._connection import Connection
from tocsin.remote._envelopes import Tell
from tocsin.remote._node import RemoteNode, own_addresses

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.aborted = False
        self.closed = False

    def write(self, data: Any) -> None:
        self.written += data

    def get_write_buffer_size(self) -> int:
        return 0

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.aborted or self.closed


def feed(conn: Connection, data: bytes, chunks: list[int]) -> None:
    """Deliver ``data`` split at the given chunk sizes (then the rest)."""
    pos = 0
    for size in chunks:
        if pos >= len(data):
            break
        conn.data_received(data[pos : pos + size])
        pos += size
    if pos < len(data):
        conn.data_received(data[pos:])


def listener() -> tuple[Connection, FakeTransport, RecordingHost]:
    host = RecordingHost()
    node = make_node(config(max_frame=4096), "b", host)
    node.address = "tocsin://b@127.0.0.1:9"
    node._own = own_addresses(node.config, NodeAddress("tcp", host="127.0.0.1", port=9))
    conn = Connection(node, dialer=False, host="fuzzer")
    transport = FakeTransport()
    conn.connection_made(transport)
    return conn, transport, host


def dialer() -> RawDialer:
    return RawDialer(SECRET, "tocsin://f@127.0.0.1:8", "tcp://127.0.0.1:9")


def challenge(conn: Connection, transport: FakeTransport, peer: RawDialer) -> bytes:
    """Send ``peer``'s opening; the listener's whole reply."""
    conn.data_received(peer.opening())
    size = hs.HEAD_SIZE + peer.reply_size(bytes(transport.written[: hs.HEAD_SIZE]))
    return bytes(transport.written[:size])


def authenticate(conn: Connection, transport: FakeTransport) -> RawDialer:
    """Play a correct dialer up to and including its Hello; the dialer, to seal more."""
    peer = dialer()
    proof = peer.proof(challenge(conn, transport, peer))
    assert proof is not None
    conn.data_received(proof + peer.hello("fuzzer"))
    assert conn.peer is not None
    assert not transport.aborted
    return peer


def run(body: Any) -> None:
    async def main() -> None:
        body()
        conn_tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in conn_tasks:
            task.cancel()

    asyncio.run(main())


chunking = st.lists(st.integers(min_value=1, max_value=64), max_size=8)


@FUZZ
@given(data=st.binary(max_size=512), chunks=chunking)
def test_random_bytes_before_authentication_deliver_nothing(data: bytes, chunks: list[int]) -> None:
    def body() -> None:
        conn, transport, host = listener()
        feed(conn, data, chunks)
        assert host.tells == []
        assert conn.peer is None
        # Bad opening bytes close at once (a random opening cannot name this node's
        # address, so even one with the magic is refused once its body is in).
        if len(data) >= hs.HEAD_SIZE and data[:8] != hs.MAGIC:
            assert transport.aborted

    run(body)


@FUZZ
@given(nonce_l=st.binary(min_size=32, max_size=32), mac=st.binary(min_size=32, max_size=32))
def test_a_listener_reply_without_the_secret_is_refused_by_the_dialer(
    nonce_l: bytes, mac: bytes
) -> None:
    def body() -> None:
        node = make_node(config(), "a")
        node.address = "tocsin://a@127.0.0.1:9"
        conn = Connection(node, dialer=True, host="listener", dialled="tcp://127.0.0.1:8")
        transport = FakeTransport()
        conn.connection_made(transport)
        opening = len(transport.written)
        listener_id = b"tocsin://b@127.0.0.1:8"
        conn.data_received(
            hs.MAGIC + nonce_l + len(listener_id).to_bytes(2, "big") + listener_id + mac
        )
        assert transport.aborted
        assert node.counters.auth_failures == 1
        assert len(transport.written) == opening  # no proof, no frame sent

    run(body)


@FUZZ
@given(other=st.binary(min_size=16, max_size=40).filter(lambda s: s != SECRET))
def test_a_dialer_proof_made_with_another_secret_is_refused(other: bytes) -> None:
    def body() -> None:
        conn, transport, host = listener()
        peer = dialer()
        reply = challenge(conn, transport, peer)
        assert host.tells == []
        assert peer.proof(reply) is not None
        impostor = RawDialer(other, peer.dialer_id, peer.dialled)
        impostor.nonce = peer.nonce
        assert impostor.proof(reply) is None  # it cannot check the listener's proof
        forged = hs.session_keys(
            other, peer.nonce, reply[8:40], peer.dialer_id, peer.listener_id, peer.dialled
        )
        conn.data_received(forged.mac_d() + peer.hello("x"))
        assert transport.aborted
        assert conn.peer is None
        assert conn.node.counters.auth_failures == 1

    run(body)


@FUZZ
@given(frames=st.lists(st.binary(min_size=1, max_size=64), max_size=6), chunks=chunking)
def test_random_frames_after_authentication_close_at_most_this_connection(
    frames: list[bytes], chunks: list[int]
) -> None:
    def body() -> None:
        conn, transport, _ = listener()
        peer = authenticate(conn, transport)
        feed(conn, b"".join(peer.record(frame(f)) for f in frames), chunks)
        # Random bodies are either valid envelopes (handled) or close the connection.
        assert conn.closed == transport.aborted

    run(body)


@FUZZ
@given(
    size=st.integers(min_value=records.cap(4096) + 1, max_value=2**32 - 1),
    tail=st.binary(max_size=64),
)
def test_a_huge_length_prefix_closes_the_connection_before_reading_the_body(
    size: int, tail: bytes
) -> None:
    def body() -> None:
        conn, transport, _ = listener()
        authenticate(conn, transport)
        # The record's head alone (length, sequence number): refused before its body.
        conn.data_received(size.to_bytes(4, "big") + (2).to_bytes(8, "big") + tail)
        assert transport.aborted
        assert conn.node.counters.protocol_errors == 1

    run(body)


@FUZZ
@given(cut=st.integers(min_value=1, max_value=200))
def test_a_truncated_frame_waits_for_the_rest_and_delivers_once_whole(cut: int) -> None:
    def body() -> None:
        conn, transport, host = listener()
        peer = authenticate(conn, transport)
        node = conn.node
        assert isinstance(node, RemoteNode), node  # listener() made it with make_node
        name, payload = node.codec.encode({"k": list(range(40))})
        tell = msgspec.msgpack.encode(Tell("/user/x", "", "", name, msgspec.Raw(payload)))
        data = peer.record(frame(tell))
        cut_at = min(cut, len(data) - 1)
        conn.data_received(data[:cut_at])
        assert host.tells == []
        conn.data_received(data[cut_at:])
        assert [m for (*_, m) in host.tells] == [{"k": list(range(40))}]
        assert not transport.aborted

    run(body)


def test_a_zero_length_frame_is_a_protocol_error() -> None:
    def body() -> None:
        conn, transport, _ = listener()
        peer = authenticate(conn, transport)
        conn.data_received(peer.record(b"\x00\x00\x00\x00"))
        assert transport.aborted

    run(body)


def test_a_frame_before_hello_that_is_not_hello_closes() -> None:
    def body() -> None:
        conn, transport, host = listener()
        peer = dialer()
        proof = peer.proof(challenge(conn, transport, peer))
        assert proof is not None
        tell = frame(msgspec.msgpack.encode(Tell("/user/x", "", "", "", msgspec.Raw(b"\x01"))))
        conn.data_received(proof + peer.record(tell))
        assert transport.aborted
        assert host.tells == []

    run(body)
