# SPDX-License-Identifier: Apache-2.0
"""Ticks that cross the wire keep their Tick and report completion (issue 22).

Two systems in one process over real sockets (real time, bounded waits): the transport is
what is tested. A test item (a ``RuntimeItem`` of its own, ``tracked`` when asked) stands
for a schedule's tick, so these tests do not depend on the scheduler's policies; the
policies over the wire are tested across two processes (``test_remote_overlap_processes``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from tests.eventually import eventually, settled

from tocsin import (
    Actor,
    ActorSystem,
    DeadLetter,
    DeadLetterReason,
    Overlap,
    ReceiveContext,
    Remoting,
)
from tocsin.actor._spi import PID, NoSender, RuntimeItem, Tick, target_of
from tocsin.remote._envelopes import Completed, Scheduled, Tell, decoder, encoder
from tocsin.remote._node import RemoteNode
from tocsin.remote._ticks import InboundTick, PendingCompletion

SECRET = b"remote-tick-completion-secret"
WAIT = 10.0
TICK = Tick("nightly", datetime(2026, 12, 2, 1, 30, 0, 123456, tzinfo=UTC), 2, True, False, 7)


class Item(RuntimeItem):
    """A tick the test queues itself: counts ``finished()``, never opens ``STALE``."""

    __slots__ = ("finishes", "message", "opened", "tracked", "value")

    def __init__(self, message: Any, value: Tick | None, *, tracked: bool) -> None:
        self.message = message
        self.value = value
        self.tracked = tracked
        self.finishes = 0
        self.opened = 0

    def open(self) -> Any:
        self.opened += 1
        return self.message

    def rejected(self) -> Any:
        return self.message

    def tick(self) -> Tick | None:
        return self.value

    def finished(self) -> None:
        self.finishes += 1


class LostItem(Item):
    """An item that tells "did not run, or may not have" apart (cluster cron's
    at_least_once claim): ``lost()`` instead of ``finished()`` then."""

    __slots__ = ("losses",)

    def __init__(self, message: Any, value: Tick | None) -> None:
        super().__init__(message, value, tracked=True)
        self.losses = 0

    def lost(self) -> None:
        self.losses += 1


class Seen(msgspec.Struct, frozen=True):
    message: Any
    tick: Tick | None


class Probe(Actor):
    """Records (message, ctx.tick); a message "block" waits for ``gate``; "boom" raises."""

    def __init__(self, seen: list[Seen], gate: asyncio.Event) -> None:
        self.seen = seen
        self.gate = gate

    async def receive(self, ctx: ReceiveContext) -> None:
        self.seen.append(Seen(ctx.message, ctx.tick))
        if ctx.message == "block":
            await self.gate.wait()
        elif ctx.message == "boom":
            raise RuntimeError("boom")


def remoting() -> Remoting:
    return Remoting("tcp://127.0.0.1:0", SECRET)


@contextlib.asynccontextmanager
async def pair() -> AsyncIterator[tuple[ActorSystem, ActorSystem, PID, list[Seen], asyncio.Event]]:
    """(sender a, host b, a's PID of b's probe, what the probe saw, its gate)."""
    seen: list[Seen] = []
    gate = asyncio.Event()
    async with (
        ActorSystem("b", remoting=remoting()) as b,
        ActorSystem("a", remoting=remoting()) as a,
    ):
        await b.spawn(lambda: Probe(seen, gate), "probe")
        probe = await a.actor_of(f"{b.address}/user/probe")
        yield a, b, probe, seen, gate
        gate.set()


def send(pid: PID, item: Item) -> bool:
    return target_of(pid).deliver(item, NoSender, None)


def node_of(system: ActorSystem) -> RemoteNode:
    remote = system._remote  # the transport behind the facade
    assert remote is not None
    return remote.node


async def test_ctx_tick_on_the_hosting_node_is_the_senders_tick() -> None:
    async with pair() as (a, _b, probe, seen, _gate):
        assert send(probe, Item("tick", TICK, tracked=False))
        probe.tell("plain")
        await eventually(lambda: len(seen) == 2)
        assert seen[0] == Seen("tick", TICK)
        assert seen[0].tick is not None
        assert (seen[0].tick.reference, seen[0].tick.instant) == (TICK.reference, TICK.instant)
        assert seen[1] == Seen("plain", None)  # a plain tell has no tick
        assert len(node_of(a).completions) == 0  # untracked: nothing waits


async def test_a_tracked_tick_is_finished_after_the_remote_receive_returns() -> None:
    async with pair() as (a, _b, probe, seen, gate):
        item = Item("block", TICK, tracked=True)
        assert send(probe, item)
        await eventually(lambda: len(seen) == 1)
        # The remote receive is still running: the tick is in flight.
        await settled()
        assert item.finishes == 0
        assert len(node_of(a).completions) == 1
        gate.set()
        await eventually(lambda: item.finishes == 1)
        assert len(node_of(a).completions) == 0
        assert seen == [Seen("block", TICK)]
        await settled()  # nothing more arrives
        assert item.finishes == 1
        assert item.opened == 1


async def test_a_tracked_tick_is_finished_when_the_remote_receive_raises() -> None:
    async with pair() as (_a, _b, probe, seen, _gate):
        item = Item("boom", TICK, tracked=True)
        assert send(probe, item)
        await eventually(lambda: item.finishes == 1)
        assert seen == [Seen("boom", TICK)]


async def test_a_tracked_tick_dead_lettered_on_the_hosting_node_is_finished() -> None:
    async with pair() as (a, b, _probe, _seen, _gate):
        letters: list[DeadLetter] = []
        b.events.subscribe(letters.append, DeadLetter)
        absent = await _remote_pid(a, f"{b.address}/user/nobody")
        item = Item("lost", TICK, tracked=True)
        assert send(absent, item)
        await eventually(lambda: item.finishes == 1)
        await eventually(lambda: any(d.message == "lost" for d in letters))
        assert letters[-1].reason == DeadLetterReason.NOT_FOUND


async def test_a_tracked_tick_is_finished_when_the_connection_is_lost() -> None:
    async with pair() as (a, b, probe, seen, gate):
        item = Item("block", TICK, tracked=True)
        assert send(probe, item)
        await eventually(lambda: len(seen) == 1)
        assert item.finishes == 0
        for conn in list(node_of(b)._connections):
            conn.abort()
        await eventually(lambda: item.finishes == 1)
        assert len(node_of(a).completions) == 0
        gate.set()  # the remote receive ends later: its completion has nowhere to go
        await settled()
        assert item.finishes == 1


async def test_a_tracked_tick_to_a_node_nobody_listens_at_is_a_dead_letter_and_finished() -> None:
    async with ActorSystem("gone", remoting=remoting()) as gone:
        address = gone.address
    async with ActorSystem("a", remoting=remoting()) as a:
        letters: list[DeadLetter] = []
        a.events.subscribe(letters.append, DeadLetter)
        probe = await _remote_pid(a, f"{address}/user/probe")
        item = Item("lost", TICK, tracked=True)
        send(probe, item)  # queued while dialling, dropped when the dial fails
        await eventually(lambda: item.finishes == 1)
        await eventually(lambda: any(d.message == "lost" for d in letters))
        assert letters[-1].reason == DeadLetterReason.UNREACHABLE
        assert len(node_of(a).completions) == 0
        # Refused at once now (the endpoint is down): a dead letter, finished at once.
        again = Item("again", TICK, tracked=True)
        assert not send(probe, again)
        assert again.finishes == 1


async def test_the_pending_table_is_bounded_the_oldest_is_finished_early() -> None:
    async with pair() as (a, _b, probe, seen, gate):
        table = node_of(a).completions
        table.limit = 2
        items = [Item("block", TICK, tracked=True) for _ in range(3)]
        for item in items:
            assert send(probe, item)
        assert [i.finishes for i in items] == [1, 0, 0]
        assert len(table) == 2
        assert table.evicted == 1
        await eventually(lambda: len(seen) == 1)
        gate.set()
        await eventually(lambda: [i.finishes for i in items] == [1, 1, 1])
        assert len(table) == 0


async def _remote_pid(system: ActorSystem, text: str) -> PID:
    remote = system._remote
    assert remote is not None
    address, _, path = text.partition("/user/")
    pid = remote.resolve_target(address, "/user/" + path, None)
    assert pid is not None
    return pid


# -- the frames ---------------------------------------------------------------------------


def test_plain_tell_frames_are_unchanged_and_a_tick_frame_round_trips() -> None:
    enc = encoder()
    # A Tell is what it was before tick frames existed: [tag 1, path, inc, sender, name,
    # payload], nothing appended.
    assert (
        enc.encode(Tell("/p", "", "", "", msgspec.Raw(b"\xc0")))
        == b"\x96\x01\xa2/p\xa0\xa0\xa0\xc0"
    )
    wire = tuple(TICK.to_wire())
    body = enc.encode(Scheduled("/user/p", "", "", "", msgspec.Raw(b"\xa1x"), wire, 5))
    frame = decoder().decode(body)
    assert isinstance(frame, Scheduled)
    assert frame.tick is not None
    assert Tick.from_wire(frame.tick) == TICK
    assert decoder().decode(enc.encode(Completed(5, True))) == Completed(5, True)
    assert len(enc.encode(Completed(5, True))) <= 4


async def test_a_tick_whose_instant_is_out_of_range_arrives_without_its_tick() -> None:
    from tests.remote.remote_support import config, host_of, make_node

    receiver = make_node(config(), "r")
    sender = make_node(config(), "s")
    await receiver.start()
    await sender.start()
    try:
        endpoint = sender.endpoint(receiver.node_address)
        bad = ("r", 2**62, 1, False, False, None)  # the shape is right, the year is not
        body = sender.encode(Scheduled("/user/p", "", "", "", msgspec.Raw(b"\xa1x"), bad, 0))
        assert endpoint.send(body, None)
        host = host_of(receiver)
        await host.wait_tells(1)
        (_, _, _, message) = host.tells[0]
        assert isinstance(message, InboundTick)
        assert message.open() == "x"
        assert receiver.metrics().undecodable == 0  # checked when ctx.tick reads it
        assert message.tick() is None
        assert message.tick() is None
        assert receiver.metrics().undecodable == 1
        assert receiver.metrics().protocol_errors == 0
    finally:
        await sender.stop()
        await receiver.stop()


def test_a_pending_completion_finishes_its_item_once() -> None:
    from tocsin.remote._ticks import Completions

    table = Completions()
    item = Item("x", TICK, tracked=True)
    waiting = table.pending(1, item, (None, "x", None))  # type: ignore[arg-type]
    waiting(Completed(1, True))
    waiting(Completed(1, True))
    waiting.resolve()
    assert item.finishes == 1
    assert isinstance(waiting, PendingCompletion)


@pytest.mark.parametrize("tracked", [False, True])
def test_an_inbound_tick_answers_once_only_when_asked(tracked: bool) -> None:
    sent: list[bytes] = []

    class Conn:
        def send(self, body: bytes, *, force: bool = False) -> bool:
            assert force
            sent.append(body)
            return True

    wire = tuple(TICK.to_wire())
    item = InboundTick("m", wire, Conn(), 9 if tracked else 0, encoder())  # type: ignore[arg-type]
    assert item.tracked is tracked
    assert item.open() == "m"
    assert item.tick() == TICK
    assert item.tick() is item.tick()  # rebuilt once
    item.finished()
    assert item.rejected() == "m"
    assert [decoder().decode(b) for b in sent] == ([Completed(9, True)] if tracked else [])


# -- a real schedule ----------------------------------------------------------------------


@pytest.mark.parametrize("overlap", [Overlap.ALLOW, Overlap.SKIP])
async def test_a_schedule_to_a_remote_pid_gives_ctx_tick_there(overlap: Overlap) -> None:
    async with pair() as (a, _b, probe, seen, _gate):
        await a.schedule("every", probe, 0.02, reference="r", overlap=overlap)
        await eventually(lambda: len(seen) >= 3)
        await a.cancel_schedule("r")
        ticks = [s.tick for s in seen[:3]]
        assert all(t is not None and t.reference == "r" for t in ticks)
        instants = [t.instant for t in ticks if t is not None]
        assert all(i.tzinfo is UTC for i in instants)
        assert instants == sorted(set(instants))  # one delivery per instant, in order
        assert len(node_of(a).completions) <= 1  # SKIP: at most the one in flight


async def test_an_item_with_lost_hears_lost_when_the_tick_did_not_or_may_not_have_run() -> None:
    async with pair() as (a, b, probe, seen, gate):
        ran = LostItem("ran", TICK)
        assert send(probe, ran)
        await eventually(lambda: ran.finishes == 1)
        assert ran.losses == 0
        dead = LostItem("dead", TICK)  # no such actor there: dead-lettered on b
        assert send(await _remote_pid(a, f"{b.address}/user/nobody"), dead)
        await eventually(lambda: dead.losses == 1)
        blocked = LostItem("block", TICK)  # in receive when the connection goes
        assert send(probe, blocked)
        await eventually(lambda: any(s.message == "block" for s in seen))
        for conn in list(node_of(b)._connections):
            conn.abort()
        await eventually(lambda: blocked.losses == 1)
        gate.set()
        await settled()
        assert (dead.finishes, blocked.finishes) == (0, 0)
        assert (dead.losses, blocked.losses) == (1, 1)
