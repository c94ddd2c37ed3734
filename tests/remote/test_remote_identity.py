# SPDX-License-Identifier: Apache-2.0
"""Remoting identity (issue 19 item 6) and backpressure's dead-letter reason (item 8).

* a live Unix socket is never taken over (a stale one is replaced); TCP "in use" is the
  same typed error;
* the system name in a PID is checked against the node's Hello: ``other@host`` answered
  by ``srv`` is ``NodeUnreachableError`` naming both, tells are ``unreachable``;
* a failed handshake is counted and logged (rate-limited) with the peer's address on the
  listening side, and the dialer's error says "authentication failed";
* a full send buffer is ``overflow`` (``BackpressureError`` for an ask), never
  ``unreachable``.

Real sockets and real time, every wait bounded.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import Any

import pytest
from tests.eventually import eventually, settled
from tests.remote.remote_support import (
    SECRET,
    FakePID,
    RecordingHost,
    config,
    make_node,
    running,
)

from tocsin import (
    Actor,
    ActorSystem,
    AddressInUseError,
    BackpressureError,
    DeadLetter,
    DeadLetterReason,
    ManualClock,
    NodeUnreachableError,
    ReceiveContext,
    Remoting,
)
from tocsin.remote import _handshake as hs
from tocsin.remote._address import parse_system_address
from tocsin.remote._messages import MessageRegistry, WireCodec
from tocsin.remote._node import LOG_EVERY, RemoteNode


class Echo(Actor):
    def __init__(self, box: list[Any] | None = None) -> None:
        self.box = box if box is not None else []

    async def receive(self, ctx: ReceiveContext) -> None:
        self.box.append(ctx.message)
        ctx.respond(ctx.message)


def remoting(listen: str = "tcp://127.0.0.1:0", /, secret: bytes = SECRET, **kw: Any) -> Remoting:
    return Remoting(listen, secret, **kw)


def port_of(address: str) -> int:
    return parse_system_address(address)[1].port


# -- (a) binding: a live listener is never taken over ----------------------------------


async def test_a_second_node_on_a_live_unix_socket_is_refused_and_the_first_keeps_serving(
    tmp_path: Path,
) -> None:
    path = tmp_path / "n.sock"
    async with running(config(f"unix://{path}"), "first") as first:
        second = make_node(config(f"unix://{path}"), "second")
        with pytest.raises(AddressInUseError, match="in use by a live listener") as caught:
            await second.start()
        assert isinstance(caught.value, OSError)
        assert str(path) in str(caught.value)
        await second.stop()  # a failed start's stop must not unlink the first's socket
        assert path.exists()
        async with running(config(), "peer") as peer:
            address = parse_system_address(first.address)[1]
            assert await peer.ask(address, "/user/x", "", "", peer.encode_message(7)) == 7
    assert not path.exists()  # the first removes its own socket when it stops


async def test_a_stale_unix_socket_left_by_a_dead_node_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "n.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # bound, never listening, then closed: a crashed node's file
    dead.close()
    assert path.exists()
    async with running(config(f"unix://{path}"), "n") as node, running(config(), "p") as peer:
        address = parse_system_address(node.address)[1]
        assert await peer.ask(address, "/user/x", "", "", peer.encode_message(1)) == 1


async def test_a_file_that_is_not_a_socket_is_never_removed(tmp_path: Path) -> None:
    path = tmp_path / "n.sock"
    path.write_text("precious")
    node = make_node(config(f"unix://{path}"), "n")
    with pytest.raises(AddressInUseError, match="not a socket"):
        await node.start()
    await node.stop()
    assert path.read_text() == "precious"


async def test_a_tcp_port_in_use_is_the_same_typed_error() -> None:
    async with running(config(), "first") as first:
        port = port_of(first.address)
        second = make_node(config(f"tcp://127.0.0.1:{port}"), "second")
        with pytest.raises(AddressInUseError, match="in use") as caught:
            await second.start()
        assert isinstance(caught.value, OSError)
        await second.stop()


# -- (b) the system name is checked --------------------------------------------------


async def test_a_pid_of_another_system_at_that_address_is_refused_naming_both() -> None:
    async with (
        ActorSystem("srv", remoting=remoting()) as srv,
        ActorSystem("client", remoting=remoting()) as client,
    ):
        box: list[Any] = []
        await srv.spawn(lambda: Echo(box), "echo")
        host_port = srv.address.partition("@")[2]
        wrong = f"tocsin://other@{host_port}/user/echo"
        # The first contact: the lookup is queued while dialling, then refused by the Hello.
        with pytest.raises(NodeUnreachableError) as caught:
            await client.actor_of(wrong)
        assert "expected system 'other'" in str(caught.value)
        assert "found 'srv'" in str(caught.value)
        # The right name works over the same connection.
        good = await client.actor_of(f"{srv.address}/user/echo")
        assert await good.ask("hi", timeout=10) == "hi"
        # A PID of the wrong system while the connection is up: refused at once.
        letters: list[DeadLetter] = []
        client.events.subscribe(letters.append, DeadLetter)
        pid = client._runtime.pid_from_wire(wrong)  # type: ignore[union-attr]
        with pytest.raises(NodeUnreachableError, match=r"expected system 'other'.*found 'srv'"):
            await pid.ask("no", timeout=10)
        pid.tell("never")
        assert [(d.message, d.reason) for d in letters] == [
            ("no", DeadLetterReason.UNREACHABLE),
            ("never", DeadLetterReason.UNREACHABLE),
        ]
        assert await good.ask("still", timeout=10) == "still"
        assert box == ["hi", "still"]  # nothing meant for 'other' reached srv's actor


async def test_a_held_pid_is_refused_once_another_system_listens_at_its_address() -> None:
    async with ActorSystem("client", remoting=remoting()) as client:
        first = ActorSystem("srv", remoting=remoting())
        await first.start()
        port = port_of(first.address)
        await first.spawn(Echo, "echo")
        pid = await client.actor_of(f"{first.address}/user/echo")
        assert await pid.ask(1, timeout=10) == 1
        await first.stop()
        box: list[Any] = []
        second = ActorSystem("intruder", remoting=remoting(f"tcp://127.0.0.1:{port}"))
        await second.start()
        try:
            await second.spawn(lambda: Echo(box), "echo")
            # The endpoint reconnects by itself; once it is up, the Hello says "intruder".
            errors: list[str] = []

            async def refused_by_name() -> bool:
                try:
                    await pid.ask(2, timeout=10)
                except NodeUnreachableError as exc:
                    errors.append(str(exc))
                    return "found 'intruder'" in str(exc)
                return False

            await eventually(refused_by_name, "the dial refused for the wrong name")
            assert "expected system 'srv'" in errors[-1]
            assert box == []
        finally:
            await second.stop()


# -- (c, d) a failed handshake: counted and logged by the listener, named by the dialer ----


async def test_a_dialer_with_another_secret_is_logged_and_counted_by_the_listener(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "tocsin.remote")
    async with (
        ActorSystem("srv", remoting=remoting()) as srv,
        ActorSystem("intruder", remoting=remoting(secret=b"another-secret-of-16+")) as intruder,
    ):
        await srv.spawn(Echo, "echo")
        letters: list[DeadLetter] = []
        intruder.events.subscribe(letters.append, DeadLetter)
        pid = intruder._runtime.pid_from_wire(f"{srv.address}/user/echo")  # type: ignore[union-attr]
        pid.tell("first")  # queued while dialling, dropped when the handshake fails
        with pytest.raises(NodeUnreachableError, match="authentication failed"):
            await pid.ask("x", timeout=10)
        # While the endpoint is down the same reason is given at once.
        with pytest.raises(NodeUnreachableError, match="authentication failed"):
            await pid.ask("y", timeout=10)
        await eventually(lambda: srv.remote_metrics().auth_failures >= 1)
        assert srv.remote_metrics().frames_in == 0
        assert any(d.message == "first" and d.reason == "unreachable" for d in letters)
        await eventually(
            lambda: any("refused from 127.0.0.1:" in r.getMessage() for r in caplog.records)
        )
        listener_lines = [
            r.getMessage() for r in caplog.records if "refused from" in r.getMessage()
        ]
        assert len(listener_lines) == 1  # once per peer host, however many retries
        assert "authentication failed" in listener_lines[0]
        dialer_lines = [
            r.getMessage() for r in caplog.records if "refused dialling" in r.getMessage()
        ]
        assert dialer_lines
        assert "authentication failed" in dialer_lines[0]


async def test_the_listener_counts_a_dialer_that_gives_up_after_the_challenge() -> None:
    async with running(config(), "srv") as srv:
        address = parse_system_address(srv.address)[1]
        # A port probe (connect, close, no byte sent) is not an authentication attempt.
        _, writer = await asyncio.open_connection(address.host, address.port)
        writer.close()
        await writer.wait_closed()
        await settled()  # the server has seen the close
        assert srv.metrics().auth_failures == 0
        # What a dialer holding another secret does: open, read the challenge, close.
        reader, writer = await asyncio.open_connection(address.host, address.port)
        writer.write(hs.dialer_hello(hs.new_nonce()))
        async with asyncio.timeout(10):
            challenge = await reader.readexactly(hs.LISTENER_REPLY_SIZE)
        assert challenge.startswith(hs.MAGIC)
        writer.close()
        await writer.wait_closed()
        await eventually(lambda: srv.metrics().auth_failures == 1)


async def test_connection_problems_are_logged_at_most_once_a_minute_per_peer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "tocsin.remote")
    clock = ManualClock()
    cfg = config()
    node = RemoteNode(
        cfg, "n", RecordingHost(), WireCodec(MessageRegistry(cfg.messages), FakePID, FakePID), clock
    )
    for _ in range(5):
        node.warn("auth:10.0.0.9", "remoting: refused from 10.0.0.9:4242: bad")
    node.warn("auth:10.0.0.7", "remoting: refused from 10.0.0.7:1: bad")
    assert [r.getMessage() for r in caplog.records] == [
        "remoting: refused from 10.0.0.9:4242: bad",
        "remoting: refused from 10.0.0.7:1: bad",
    ]
    await clock.advance(LOG_EVERY)
    node.warn("auth:10.0.0.9", "remoting: refused from 10.0.0.9:4243: bad")
    assert caplog.records[-1].getMessage() == (
        "remoting: refused from 10.0.0.9:4243: bad (and 4 more like it since the last report)"
    )


# -- item 8: a full send buffer is overflow, never unreachable --------------------------


async def test_a_full_send_buffer_is_overflow_not_unreachable() -> None:
    # A long heartbeat: the paused server must not declare the client silent meanwhile.
    small: dict[str, Any] = {"max_buffer": 64 * 1024, "heartbeat": 30.0}
    async with (
        ActorSystem("srv", remoting=remoting(**small)) as srv,
        ActorSystem("client", remoting=remoting(**small)) as client,
    ):
        box: list[Any] = []
        await srv.spawn(lambda: Echo(box), "sink")
        pid = await client.actor_of(f"{srv.address}/user/sink")
        assert await pid.ask("warm", timeout=10) == "warm"
        letters: list[DeadLetter] = []
        client.events.subscribe(letters.append, DeadLetter)
        # The server stops reading: TCP fills, then the client's send buffer does.
        [conn] = list(srv._remote.node._connections)  # type: ignore[union-attr]
        conn._transport.pause_reading()
        payload = b"x" * 4096
        for _ in range(4000):  # ~16 MiB offered; tell never blocks
            pid.tell(payload)
            if letters:
                break
            await asyncio.sleep(0)
        assert letters, "the send buffer never filled"
        with pytest.raises(BackpressureError, match=r"send buffer .* is full"):
            await pid.ask(payload, timeout=10)  # no smaller than the tell refused
        assert {d.reason for d in letters} == {DeadLetterReason.OVERFLOW}
        metrics = client.remote_metrics()
        assert metrics.overflow == len(letters)
        assert metrics.unreachable == 0
        conn._transport.resume_reading()
        assert await pid.ask("after", timeout=10) == "after"  # the node was up all along
