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
from tests.remote.remote_support import SECRET, RecordingHost, config, make_node

from tocsin.remote import _handshake as hs
from tocsin.remote._connection import Connection
from tocsin.remote._envelopes import PROTOCOL_VERSION, Hello, Tell
from tocsin.remote._node import RemoteNode

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


def frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


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
    conn = Connection(node, dialer=False, host="fuzzer")
    transport = FakeTransport()
    conn.connection_made(transport)
    return conn, transport, host


def authenticate(conn: Connection, transport: FakeTransport) -> None:
    """Play a correct dialer up to and including its Hello."""
    nonce_d = hs.new_nonce()
    conn.data_received(hs.dialer_hello(nonce_d))
    reply = bytes(transport.written[: hs.LISTENER_REPLY_SIZE])
    nonce_l = hs.verify_listener_reply(SECRET, nonce_d, reply)
    assert nonce_l is not None
    hello = msgspec.msgpack.encode(Hello(PROTOCOL_VERSION, "fuzzer", "tocsin://f@127.0.0.1:8"))
    conn.data_received(hs.dialer_proof(SECRET, nonce_d, nonce_l) + frame(hello))
    assert conn.peer is not None
    assert not transport.aborted


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
        # Bad opening bytes close at once; a random proof after a good opening too.
        if len(data) >= hs.DIALER_HELLO_SIZE and data[:8] != hs.MAGIC:
            assert transport.aborted
        if len(data) >= hs.DIALER_HELLO_SIZE + hs.DIALER_PROOF_SIZE:
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
        conn = Connection(node, dialer=True, host="listener")
        transport = FakeTransport()
        conn.connection_made(transport)
        conn.data_received(hs.MAGIC + nonce_l + mac)
        assert transport.aborted
        assert node.counters.auth_failures == 1
        assert len(transport.written) == hs.DIALER_HELLO_SIZE  # no proof, no frame sent

    run(body)


@FUZZ
@given(other=st.binary(min_size=16, max_size=40).filter(lambda s: s != SECRET))
def test_a_dialer_proof_made_with_another_secret_is_refused(other: bytes) -> None:
    def body() -> None:
        conn, transport, host = listener()
        nonce_d = hs.new_nonce()
        conn.data_received(hs.dialer_hello(nonce_d))
        nonce_l = bytes(transport.written[8:40])
        assert host.tells == []
        hello = frame(msgspec.msgpack.encode(Hello(PROTOCOL_VERSION, "x", "tocsin://x@h:1")))
        conn.data_received(hs.dialer_proof(other, nonce_d, nonce_l) + hello)
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
        authenticate(conn, transport)
        feed(conn, b"".join(frame(f) for f in frames), chunks)
        # Random bodies are either valid envelopes (handled) or close the connection.
        assert conn.closed == transport.aborted

    run(body)


@FUZZ
@given(size=st.integers(min_value=4097, max_value=2**32 - 1), tail=st.binary(max_size=64))
def test_a_huge_length_prefix_closes_the_connection_before_reading_the_body(
    size: int, tail: bytes
) -> None:
    def body() -> None:
        conn, transport, _ = listener()
        authenticate(conn, transport)
        conn.data_received(size.to_bytes(4, "big") + tail)
        assert transport.aborted
        assert conn.node.counters.protocol_errors == 1

    run(body)


@FUZZ
@given(cut=st.integers(min_value=1, max_value=200))
def test_a_truncated_frame_waits_for_the_rest_and_delivers_once_whole(cut: int) -> None:
    def body() -> None:
        conn, transport, host = listener()
        authenticate(conn, transport)
        node = conn.node
        assert isinstance(node, RemoteNode), node  # listener() made it with make_node
        name, payload = node.codec.encode({"k": list(range(40))})
        data = frame(msgspec.msgpack.encode(Tell("/user/x", "", "", name, msgspec.Raw(payload))))
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
        authenticate(conn, transport)
        conn.data_received(b"\x00\x00\x00\x00")
        assert transport.aborted

    run(body)


def test_a_frame_before_hello_that_is_not_hello_closes() -> None:
    def body() -> None:
        conn, transport, host = listener()
        nonce_d = hs.new_nonce()
        conn.data_received(hs.dialer_hello(nonce_d))
        nonce_l = bytes(transport.written[8:40])
        tell = frame(msgspec.msgpack.encode(Tell("/user/x", "", "", "", msgspec.Raw(b"\x01"))))
        conn.data_received(hs.dialer_proof(SECRET, nonce_d, nonce_l) + tell)
        assert transport.aborted
        assert host.tells == []

    run(body)
