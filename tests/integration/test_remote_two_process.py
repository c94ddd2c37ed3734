# SPDX-License-Identifier: Apache-2.0
"""Remoting between two real processes on loopback: every bullet of the contract.

The peer (``_remote_peer.py``) is a separate Python process hosting echo, boom, replier,
forwarder and recorder actors; this test's own system talks to it only through PIDs.
Waits are bounded and poll for outcomes (never a fixed sleep standing for "enough"),
so the tests hold on a busy machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.certs import make_certs
from tests.procs import close_pipes, ready_line

from tocsin import (
    PID,
    Actor,
    ActorNotFoundError,
    ActorSystem,
    AskTimeoutError,
    CodecError,
    DeadActorError,
    DeadLetter,
    DeadLetterReason,
    NodeUnreachableError,
    ReceiveContext,
    RemoteActorError,
    RemotingDisabledError,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PEER = Path(__file__).with_name("_remote_peer.py")
sys.path.insert(0, str(PEER.parent))
from tests.eventually import eventually  # noqa: E402
from tests.integration._remote_peer import Forward, Get, Ping, Pong, remoting  # noqa: E402

#: Real seconds any wait for a remote outcome may take before the test fails.
WAIT = 20.0
SECRET = secrets.token_hex(16)


@dataclass
class Peer:
    proc: subprocess.Popen[str]
    address: str
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

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        close_pipes(self.proc)


def start_peer(name: str, listen: str, *, tls_dir: Path | None = None) -> Peer:
    env = dict(os.environ, TOCSIN_SECRET=SECRET, PYTHONPATH=os.pathsep.join(sys.path))
    if tls_dir is not None:
        env["TOCSIN_TLS_DIR"] = str(tls_dir)
    proc = subprocess.Popen(
        [sys.executable, str(PEER), name, listen],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = ready_line(proc, f"peer {name}")
    if not line:
        proc.wait(10)
        close_pipes(proc)
        pytest.fail(f"peer {name} did not start (exit {proc.returncode})")
    info = json.loads(line)
    return Peer(proc, info["address"], info["pids"])


@pytest.fixture
def peer() -> Iterator[Peer]:
    p = start_peer("b", "tcp://127.0.0.1:0")
    try:
        yield p
    finally:
        p.stop()


@contextlib.asynccontextmanager
async def node(name: str = "a", listen: str = "tcp://127.0.0.1:0") -> AsyncIterator[ActorSystem]:
    async with ActorSystem(name, remoting=remoting(listen, SECRET)) as system:
        yield system


class Inbox(Actor):
    """Collects (message, sender) pairs in a shared list."""

    def __init__(self, box: list[tuple[Any, Any]]) -> None:
        self.box = box

    async def receive(self, ctx: ReceiveContext) -> None:
        self.box.append((ctx.message, ctx.sender))


async def recorded(system: ActorSystem, peer: Peer) -> list[Any]:
    recorder = await system.actor_of(peer.pids["recorder"])
    return await recorder.ask(Get(), timeout=WAIT)  # type: ignore[no-any-return]


# -- addresses and lookup ---------------------------------------------------------------


async def test_address_has_the_real_port_and_pid_strings_resolve_on_the_other_node(
    peer: Peer,
) -> None:
    async with node() as system:
        assert system.address.startswith("tocsin://a@127.0.0.1:")
        assert not system.address.endswith(":0")
        assert peer.address.startswith("tocsin://b@127.0.0.1:")
        echo = await system.actor_of(peer.pids["echo"])
        assert str(echo) == peer.pids["echo"]
        assert echo.address == peer.address
        local = await system.spawn(Echo, "mine")
        assert str(local) == f"{system.address}/user/mine"


async def test_actor_of_an_absent_remote_actor_is_actor_not_found(peer: Peer) -> None:
    async with node() as system:
        with pytest.raises(ActorNotFoundError, match="no live actor"):
            await system.actor_of(peer.address + "/user/nobody")


# -- tell and ask -----------------------------------------------------------------------


async def test_remote_tells_arrive_in_order_with_a_usable_sender(peer: Peer) -> None:
    async with node() as system:
        recorder = await system.actor_of(peer.pids["recorder"])
        me = await system.spawn(Echo, "me")
        for i in range(300):
            recorder.tell(Ping(i), me)
        seen = await recorder.ask(Get(), timeout=WAIT)
        assert [m for m, _ in seen] == [Ping(i) for i in range(300)]
        assert {s for _, s in seen} == {str(me)}


async def test_remote_ask_returns_the_reply_and_values_keep_their_types(peer: Peer) -> None:
    async with node() as system:
        echo = await system.actor_of(peer.pids["echo"])
        assert await echo.ask(Ping(1), timeout=WAIT) == Ping(1)
        value = {"t": (1, 2), "s": {3}, (4, 5): [b"x", None]}
        assert await echo.ask(value, timeout=WAIT) == value


async def test_a_raising_remote_handler_fails_the_ask_with_remote_actor_error(peer: Peer) -> None:
    async with node() as system:
        boom = await system.actor_of(peer.pids["boom"])
        with pytest.raises(RemoteActorError) as info:
            await boom.ask(Ping(7), timeout=WAIT)
        assert info.value.type_name == "KeyError"
        assert "no such thing: Ping(n=7)" in info.value.text


async def test_actor_of_a_wire_pid_of_an_incarnation_that_is_gone_is_not_found(
    peer: Peer,
) -> None:
    async with node() as system:
        echo = await system.actor_of(peer.pids["echo"])
        assert echo.wire.startswith(peer.pids["echo"] + "#")
        assert await system.actor_of(echo.wire) == echo
        stale = echo.wire.rpartition("#")[0] + "#1"
        with pytest.raises(ActorNotFoundError, match="incarnation"):
            await system.actor_of(stale)


async def test_ctx_sender_from_another_node_is_a_usable_pid(peer: Peer) -> None:
    async with node() as system:
        box: list[tuple[Any, Any]] = []
        inbox = await system.spawn(lambda: Inbox(box), "inbox")
        replier = await system.actor_of(peer.pids["replier"])
        replier.tell(Ping(5), inbox)  # the replier answers with ctx.respond -> a tell to inbox
        await eventually(lambda: box)
        message, sender = box[0]
        assert message == Pong(5)
        assert isinstance(sender, PID)
        assert str(sender) == peer.pids["replier"]
        # ... and usable: reply to it, get an answer.
        assert await sender.ask(Ping(6), timeout=WAIT) == Pong(6)


async def test_pids_inside_messages_cross_and_are_usable(peer: Peer) -> None:
    async with node() as system:
        box: list[tuple[Any, Any]] = []
        inbox = await system.spawn(lambda: Inbox(box), "inbox")
        forwarder = await system.actor_of(peer.pids["forwarder"])
        forwarder.tell(Forward(inbox, 9))
        await eventually(lambda: box)
        assert box[0][0] == Pong(9)
        assert str(box[0][1]) == peer.pids["forwarder"]


async def test_a_message_that_cannot_cross_is_a_codec_error_at_the_sending_call(
    peer: Peer,
) -> None:
    async with node() as system:
        echo = await system.actor_of(peer.pids["echo"])
        with pytest.raises(CodecError, match="cannot encode"):
            echo.tell(object())
        with pytest.raises(CodecError):
            await echo.ask(lambda: 1, timeout=WAIT)
        with pytest.raises(CodecError):
            await system.schedule_once(object(), echo, 1.0)
        assert system.list_schedules() == []


# -- scheduling to a remote target ------------------------------------------------------


async def test_every_scheduling_call_accepts_a_remote_pid_and_ticks_are_remote_sends(
    peer: Peer,
) -> None:
    async with node() as system:
        recorder = await system.actor_of(peer.pids["recorder"])
        await system.schedule_once(Ping(1), recorder, 0.05, reference="once")
        await system.schedule(Ping(2), recorder, 0.05, reference="every")
        await system.schedule_cron(Ping(3), recorder, "* * * * * ?", reference="cron")
        infos = {i.reference: i for i in system.list_schedules()}
        assert infos["every"].target == peer.pids["recorder"]
        assert infos["cron"].target == peer.pids["recorder"]

        async def kinds() -> set[int]:
            return {m.n for m, _ in await recorded(system, peer)}

        async with asyncio.timeout(WAIT):
            while await kinds() != {1, 2, 3}:
                await asyncio.sleep(0.1)
        await system.pause_schedule("every")
        await system.resume_schedule("every")
        for reference in ("every", "cron"):
            await system.cancel_schedule(reference)
        assert system.list_schedules() == []


async def test_no_tick_arrives_after_cancel_schedule_returned_and_a_later_ask(peer: Peer) -> None:
    """The cross-node stale-tick rule (docs/remoting.md): a tick already on the wire may
    still arrive; none is sent once cancel_schedule returned."""
    async with node() as system:
        recorder = await system.actor_of(peer.pids["recorder"])
        await system.schedule(Ping(0), recorder, 0.01, reference="fast")
        await eventually(lambda: system.list_schedules()[0].ticks >= 20)
        await system.cancel_schedule("fast")
        sent = system.list_schedules()
        assert sent == []
        # The ask travels behind every tick sent on the same connection: what it sees
        # is everything that will ever arrive.
        first = len(await recorded(system, peer))
        for _ in range(5):
            await asyncio.sleep(0.05)
            assert len(await recorded(system, peer)) == first


# -- failure ------------------------------------------------------------------------------


async def test_a_sigkilled_node_fails_asks_promptly_dead_letters_tells_and_comes_back() -> None:
    first = start_peer("b", "tcp://127.0.0.1:0")
    port = first.address.rpartition(":")[2]
    try:
        async with node() as system:
            letters: list[DeadLetter] = []
            system.events.subscribe(letters.append, DeadLetter)
            echo = await system.actor_of(first.pids["echo"])
            assert await echo.ask(1, timeout=WAIT) == 1
            # An ask in flight when the node dies fails with NodeUnreachableError, long
            # before its timeout.
            recorder = await system.actor_of(first.pids["recorder"])
            boom_never = asyncio.ensure_future(recorder.ask(Ping(0), timeout=600))
            await asyncio.sleep(0)
            first.kill()
            started = asyncio.get_running_loop().time()
            with pytest.raises((NodeUnreachableError, DeadActorError)):
                async with asyncio.timeout(WAIT):
                    await boom_never
            with pytest.raises(NodeUnreachableError):
                await echo.ask(2, timeout=600)
            assert asyncio.get_running_loop().time() - started < WAIT
            echo.tell("lost")
            await eventually(
                lambda: any(
                    d.message == "lost" and d.reason == DeadLetterReason.UNREACHABLE
                    for d in letters
                )
            )
            assert system.remote_metrics().unreachable >= 1
            # A node listens at that address again: the connection comes back.
            second = start_peer("b", f"tcp://127.0.0.1:{port}")
            try:
                again = await _retry_actor_of(system, second.pids["echo"])
                assert await again.ask(3, timeout=WAIT) == 3
                # The old incarnation's PID is gone there: a dead letter on that node,
                # an ask fails at once.
                with pytest.raises(DeadActorError):
                    await echo.ask(4, timeout=WAIT)
                assert system.remote_metrics().reconnects >= 1
            finally:
                second.stop()
    finally:
        first.stop()


async def _retry_actor_of(system: ActorSystem, text: str) -> PID:
    async with asyncio.timeout(WAIT):
        while True:
            try:
                return await system.actor_of(text)
            except NodeUnreachableError:
                await asyncio.sleep(0.1)


async def test_a_node_nobody_listens_at_is_unreachable() -> None:
    async with node("dead") as dead:
        address = dead.address
    async with node() as system:
        with pytest.raises(NodeUnreachableError):
            await system.actor_of(address + "/user/x")


async def test_ask_times_out_when_the_node_is_reachable_but_silent(peer: Peer) -> None:
    async with node() as system:
        recorder = await system.actor_of(peer.pids["recorder"])
        with pytest.raises(AskTimeoutError):
            await recorder.ask(Ping(1), timeout=0.2)  # the recorder records, never answers


async def test_a_node_with_another_secret_is_refused(peer: Peer) -> None:
    other = remoting("tcp://127.0.0.1:0", "a-completely-different-secret")
    async with ActorSystem("c", remoting=other) as system:
        with pytest.raises(NodeUnreachableError):
            await system.actor_of(peer.pids["echo"])
        # This node dialled: the listener's proof (made with the other secret) failed here.
        assert system.remote_metrics().auth_failures >= 1
        assert system.remote_metrics().frames_in == 0


async def test_hostile_bytes_close_only_their_connection_to_the_peer_process(peer: Peer) -> None:
    host, _, port = peer.address.removeprefix("tocsin://b@").rpartition(":")
    for junk in (b"\x00\x00\x00\x10" * 64, b"GET / HTTP/1.1\r\n\r\n" + b"x" * 100):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(junk)
        await writer.drain()
        async with asyncio.timeout(WAIT):
            await reader.read()  # the peer closes this connection
        writer.close()
    async with node() as system:
        echo = await system.actor_of(peer.pids["echo"])
        assert await echo.ask(Ping(3), timeout=WAIT) == Ping(3)


async def test_mutual_tls_between_two_processes(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    peer = start_peer("t", "tcp://127.0.0.1:0", tls_dir=tmp_path)
    try:
        tls = {key: str(value) for key, value in certs.items()}
        config = remoting("tcp://127.0.0.1:0", SECRET).replace(**tls)
        async with ActorSystem("a", remoting=config) as system:
            echo = await system.actor_of(peer.pids["echo"])
            assert await echo.ask(Ping(4), timeout=WAIT) == Ping(4)
        async with node("plain") as plain:  # no certificate: refused
            with pytest.raises(NodeUnreachableError):
                await plain.actor_of(peer.pids["echo"])
    finally:
        peer.stop()


# -- without remoting, unix sockets --------------------------------------------------------


async def test_without_remoting_another_nodes_pid_is_remoting_disabled(peer: Peer) -> None:
    async with ActorSystem("plain") as system:
        with pytest.raises(RemotingDisabledError):
            await system.actor_of(peer.pids["echo"])
        with pytest.raises(RemotingDisabledError):
            system.remote_metrics()


async def test_nodes_on_unix_sockets(tmp_path: Path) -> None:
    peer = start_peer("u", f"unix://{tmp_path}/u.sock")
    try:
        assert peer.address.startswith("tocsin://u@unix:")
        async with node("a", f"unix://{tmp_path}/a.sock") as system:
            echo = await system.actor_of(peer.pids["echo"])
            assert await echo.ask(Ping(2), timeout=WAIT) == Ping(2)
    finally:
        peer.stop()


class Echo(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond(ctx.message)
