# SPDX-License-Identifier: Apache-2.0
"""The transport on real loopback sockets (two nodes in one process, no actor system):
tell order, ask answers and failures, lookups, one connection per pair, unreachable peers,
reconnects, wrong secrets, hostile bytes, the frame cap, backpressure, TLS, Unix sockets."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.certs import make_certs
from tests.eventually import eventually, settled
from tests.remote.remote_support import (
    SECRET,
    FakePID,
    Note,
    Ping,
    config,
    host_of,
    make_node,
    running,
)

from tocsin import (
    CodecError,
    DeadActorError,
    ManualClock,
    NodeUnreachableError,
    RemoteActorError,
)
from tocsin.remote._address import NodeAddress, parse_system_address


def node_of(address: str) -> NodeAddress:
    return parse_system_address(address)[1]


async def test_tells_arrive_in_order_with_sender_and_message() -> None:
    async with running(config(), "a") as a, running(config(), "b") as b:
        target = node_of(b.address)
        for i in range(500):
            assert a.tell(
                target, "/user/x", "7", "tocsin://a@h:1/user/s", a.encode_message(Ping(i)), i
            )
        await host_of(b).wait_tells(500)
        assert [m for (_, _, _, m) in host_of(b).tells] == [Ping(i) for i in range(500)]
        assert host_of(b).tells[0][:3] == ("/user/x", "7", "tocsin://a@h:1/user/s")


async def test_ask_gets_the_reply_and_a_raising_handler_gives_remote_actor_error() -> None:
    async with running(config(), "a") as a, running(config(), "b") as b:
        target = node_of(b.address)
        reply = await a.ask(target, "/user/x", "", "", a.encode_message(Note("hi", (1, 2))))
        assert reply == Note("hi", (1, 2))

        def boom(message: object) -> object:
            raise KeyError("missing")

        host_of(b).answer = boom
        with pytest.raises(RemoteActorError) as info:
            await a.ask(target, "/user/x", "", "", a.encode_message(1))
        assert info.value.type_name == "KeyError"
        assert info.value.text == "'missing'"

        def stopped(message: object) -> object:
            raise DeadActorError("actor /user/x is stopped")

        host_of(b).answer = stopped
        with pytest.raises(DeadActorError, match="stopped"):
            await a.ask(target, "/user/x", "", "", a.encode_message(1))


async def test_a_reply_that_cannot_cross_fails_the_ask_with_codec_error() -> None:
    async with running(config(), "a") as a, running(config(), "b") as b:
        host_of(b).answer = lambda message: object()
        with pytest.raises(CodecError, match="reply"):
            await a.ask(node_of(b.address), "/user/x", "", "", a.encode_message(1))


async def test_lookup_returns_the_pid_string_or_empty() -> None:
    async with running(config(), "a") as a, running(config(), "b") as b:
        host_of(b).actors["/user/here"] = b.address + "/user/here"
        target = node_of(b.address)
        assert await a.lookup(target, "/user/here", timeout=5) == b.address + "/user/here"
        assert await a.lookup(target, "/user/absent", timeout=5) == ""


async def test_one_connection_per_peer_pair_is_reused_both_ways() -> None:
    async with running(config(), "a") as a, running(config(), "b") as b:
        assert a.tell(node_of(b.address), "/user/x", "", "", a.encode_message(1), None)
        await host_of(b).wait_tells(1)
        # b answers on the connection a opened: no second connection.
        assert b.tell(node_of(a.address), "/user/y", "", "", b.encode_message(2), None)
        await host_of(a).wait_tells(1)
        for _ in range(3):
            await a.ask(node_of(b.address), "/user/x", "", "", a.encode_message(3))
            await b.ask(node_of(a.address), "/user/y", "", "", b.encode_message(4))
        assert a.metrics().connections == 1
        assert b.metrics().connections == 1


async def test_a_node_nobody_listens_at_is_unreachable() -> None:
    async with running(config(), "gone") as gone:
        dead = node_of(gone.address)
    async with running(config(), "a") as a:
        # Queued while dialling, then dropped: the host is told, for the dead letter.
        assert a.tell(dead, "/user/x", "", "", a.encode_message(1), "first")
        with pytest.raises(NodeUnreachableError):
            await a.ask(dead, "/user/x", "", "", a.encode_message(2))
        await eventually(lambda: host_of(a).undelivered_infos == ["first"])
        # Known down now: refused at once.
        assert not a.tell(dead, "/user/x", "", "", a.encode_message(3), "second")
        with pytest.raises(NodeUnreachableError):
            await a.lookup(dead, "/user/x", timeout=5)


async def test_pending_asks_fail_promptly_when_the_peer_goes_away() -> None:
    async with running(config(), "a") as a:
        b = make_node(config(), "b")
        await b.start()
        never: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        host_of(b).answer = lambda message: never  # never answered: reply can't encode either
        b.host.deliver_ask = lambda *args: None  # type: ignore[method-assign]
        pending = a.ask(node_of(b.address), "/user/x", "", "", a.encode_message(1))
        await eventually(lambda: b.metrics().frames_in >= 2)
        await b.stop()
        with pytest.raises(NodeUnreachableError):
            async with asyncio.timeout(5):
                await pending


async def test_the_connection_comes_back_when_a_node_listens_there_again() -> None:
    a_cfg = config()
    async with running(a_cfg, "a") as a:
        b = make_node(config(), "b")
        await b.start()
        address = node_of(b.address)
        assert a.tell(address, "/user/x", "", "", a.encode_message(1), None)
        await host_of(b).wait_tells(1)
        await b.stop()
        await eventually(lambda: a.endpoint(address).state == "down")
        assert not a.tell(address, "/user/x", "", "", a.encode_message(2), "lost")
        again = make_node(config(f"tcp://127.0.0.1:{address.port}"), "b")
        await again.start()
        try:
            await eventually(lambda: a.endpoint(address).state == "up")
            assert a.tell(address, "/user/x", "", "", a.encode_message(3), None)
            await host_of(again).wait_tells(1)
            assert host_of(again).tells[0][3] == 3
            assert a.metrics().reconnects == 1
        finally:
            await again.stop()


async def test_a_peer_with_another_secret_is_refused_and_counted_and_nothing_is_decoded() -> None:
    async with running(config(), "a") as a, running(config(secret=b"another-secret-16b"), "b") as b:
        assert a.tell(node_of(b.address), "/user/x", "", "", a.encode_message(1), "x")
        await eventually(lambda: host_of(a).undelivered_infos == ["x"])
        await eventually(lambda: a.metrics().auth_failures + b.metrics().auth_failures >= 1)
        assert host_of(b).tells == []
        assert b.metrics().frames_in == 0
        assert a.metrics().frames_in == 0


async def test_hostile_bytes_close_only_their_connection() -> None:
    # On a ManualClock: the handshake timeout of the half-sent frame is simulated time the
    # test passes, not 5 real seconds waited out.
    clock = ManualClock()
    async with running(config(), "a", clock) as a, running(config(), "b", clock) as b:
        assert a.tell(node_of(b.address), "/user/x", "", "", a.encode_message(1), None)
        await host_of(b).wait_tells(1)
        listen = node_of(b.address)
        for junk in (b"GET / HTTP/1.1\r\n\r\n" + b"x" * 64, b"\xff" * 4096, b"TOCSIN\x00\x01"):
            reader, writer = await asyncio.open_connection(listen.host, listen.port)
            writer.write(junk)
            await writer.drain()
            read = asyncio.ensure_future(reader.read())
            await clock.advance(b.config.connect_timeout)  # a handshake never finished
            async with asyncio.timeout(10):
                data = await read  # the node closes it (or times the handshake out)
            assert not data or len(data) == 72  # at most the listener's challenge
            writer.close()
        # The node still serves its good peer.
        assert a.tell(node_of(b.address), "/user/x", "", "", a.encode_message(2), None)
        await host_of(b).wait_tells(2)
        assert b.metrics().auth_failures >= 2


async def test_an_oversized_length_prefix_closes_the_connection_before_the_body() -> None:
    cfg = config(max_frame=1024)
    async with running(cfg, "a") as a, running(cfg, "b") as b:
        target = node_of(b.address)
        assert a.tell(target, "/user/x", "", "", a.encode_message(1), None)
        await host_of(b).wait_tells(1)
        conn = a.endpoint(target).conn
        assert conn is not None
        # Only the prefix is sent: the cap is checked before any body is awaited.
        conn._transport.write((1 << 30).to_bytes(4, "big"))  # type: ignore[union-attr]
        await eventually(lambda: b.metrics().protocol_errors == 1)
        await eventually(lambda: a.endpoint(target).state in ("down", "up"))
        with pytest.raises(CodecError, match="max_frame"):
            a.encode_message("x" * 2048)


async def test_a_peer_that_stops_reading_fills_the_buffer_and_sends_are_refused_not_blocked() -> (
    None
):
    cfg = config(max_buffer=64 * 1024)
    async with running(cfg, "a") as a, running(cfg, "b") as b:
        target = node_of(b.address)
        assert a.tell(target, "/user/x", "", "", a.encode_message(0), None)
        await host_of(b).wait_tells(1)
        peer = next(iter(b._connections))
        peer._transport.pause_reading()  # type: ignore[union-attr]
        payload = a.encode_message(b"x" * 4096)
        refused = 0
        for _ in range(2000):  # ~8 MiB offered; the loop never blocks
            if not a.tell(target, "/user/x", "", "", payload, None):
                refused += 1
            await asyncio.sleep(0)
        assert refused > 0
        peer._transport.resume_reading()  # type: ignore[union-attr]
        await eventually(lambda: len(host_of(b).tells) == 1 + 2000 - refused)


async def test_unix_socket_nodes_talk(tmp_path: Path) -> None:
    async with (
        running(config(f"unix://{tmp_path}/a.sock"), "a") as a,
        running(config(f"unix://{tmp_path}/b.sock"), "b") as b,
    ):
        assert b.address.startswith("tocsin://b@unix:")
        assert a.tell(node_of(b.address), "/user/x", "", "", a.encode_message(Ping(1)), None)
        await host_of(b).wait_tells(1)
        assert await b.ask(node_of(a.address), "/user/y", "", "", b.encode_message(5)) == 5
    assert not (tmp_path / "b.sock").exists()


async def test_mutual_tls_carries_traffic_and_refuses_a_certificate_of_another_ca(
    tmp_path: Path,
) -> None:
    certs = make_certs(tmp_path, "ca")
    other = make_certs(tmp_path, "other")
    async with running(config(**certs), "a") as a, running(config(**certs), "b") as b:
        assert await a.ask(
            node_of(b.address), "/user/x", "", "", a.encode_message(Note("tls"))
        ) == Note("tls")
        async with running(config(**other), "c") as c:
            with pytest.raises(NodeUnreachableError):
                await c.ask(node_of(b.address), "/user/x", "", "", c.encode_message(1))
            assert host_of(b).tells == []


async def test_a_plain_dialer_is_refused_by_a_tls_node(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    async with running(config(**certs), "b") as b, running(config(), "a") as a:
        with pytest.raises(NodeUnreachableError):
            await a.ask(node_of(b.address), "/user/x", "", "", a.encode_message(1))


async def test_heartbeats_keep_an_idle_connection_and_count_frames() -> None:
    cfg = config(heartbeat=0.05)
    async with running(cfg, "a") as a, running(cfg, "b") as b:
        assert a.tell(node_of(b.address), "/user/x", "", "", a.encode_message(1), None)
        await host_of(b).wait_tells(1)
        before = b.metrics().frames_in
        await eventually(lambda: b.metrics().frames_in >= before + 3)
        assert a.endpoint(node_of(b.address)).state == "up"
        assert a.metrics().connections == 1


async def test_a_silent_peer_is_dropped_after_three_heartbeats() -> None:
    cfg = config(heartbeat=0.05)
    async with running(cfg, "a") as a, running(cfg, "b") as b:
        target = node_of(b.address)
        assert a.tell(target, "/user/x", "", "", a.encode_message(1), None)
        await host_of(b).wait_tells(1)
        # b stops sending anything (its heartbeats included): a declares it lost.
        b._heartbeat.cancel()
        b.stopping = True
        await eventually(lambda: a.endpoint(target).state != "up" or a.metrics().connections == 0)


def test_fake_pid_round_trips_through_str() -> None:
    assert str(FakePID("tocsin://a@h:1/user/x")) == "tocsin://a@h:1/user/x"
    assert SECRET


async def test_a_peer_dialled_at_another_name_than_it_advertises_is_still_seen_going_down() -> None:
    async with running(config(), "a") as a:
        b = make_node(config(), "b")
        await b.start()
        other_name = NodeAddress("tcp", host="localhost", port=node_of(b.address).port)
        assert await a.ask(other_name, "/user/x", "", "", a.encode_message(1)) == 1
        await b.stop()
        await eventually(lambda: a.endpoint(other_name).state != "up")
        assert not a.tell(other_name, "/user/x", "", "", a.encode_message(2), None)


async def test_requests_whose_asker_gave_up_are_forgotten_at_the_next_heartbeat() -> None:
    cfg = config(heartbeat=0.05)
    async with running(cfg, "a") as a, running(cfg, "b") as b:
        b.host.deliver_ask = lambda *args: None  # type: ignore[method-assign]  # never answers
        target = a.endpoint(node_of(b.address))
        answers: list[object] = []
        waiting = {"asker": True}
        corr = a.ask_then(
            target,
            "/user/x",
            "",
            "",
            a.encode_message(1),
            lambda value, error: answers.append(error or value),
            lambda: not waiting["asker"],
        )
        assert corr
        await eventually(lambda: target.state == "up")
        conn = target.conn
        assert conn is not None
        await eventually(lambda: corr in conn.pending)
        await settled()
        assert corr in conn.pending  # still waited for
        waiting["asker"] = False  # the asker timed out
        await eventually(lambda: corr not in conn.pending)
        assert answers == []
