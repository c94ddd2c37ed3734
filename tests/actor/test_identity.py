# SPDX-License-Identifier: Apache-2.0
"""PID identity and the kernel protocols a remote layer plugs into (issue 9).

Incarnations unique across processes, ``str(pid)`` parseable back, PIDs and ``Call`` in
the codec, a resolver for other nodes' PIDs, and a send target whose ask reply is a
``Reply`` object answered later (as a remote reply, keyed by a correlation id, would be).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest
from tests.actor.actor_support import Echo, new_system

from tocsin import (
    ActorNotFoundError,
    AskTimeoutError,
    Call,
    CodecError,
    DeadLetter,
    DeadLetterReason,
    RemotingDisabledError,
    parse_pid,
)
from tocsin._codec import Codec
from tocsin.actor._pid import PID, new_incarnation
from tocsin.actor._reply import Reply
from tocsin.actor._target import SendTarget
from tocsin.durable._records import CALL_EXTENSION


def test_incarnations_differ_across_processes() -> None:
    code = "from tocsin.actor._pid import new_incarnation; print(new_incarnation())"
    # Both interpreters start at once: the test waits for one start-up, not two.
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = []
    for proc in procs:
        with proc:
            try:
                out, err = proc.communicate(timeout=60)
            finally:
                proc.kill()  # nothing once it has exited; a hung one must not outlive us
        assert proc.returncode == 0, err
        outputs.append(int(out))
    others = set(outputs)
    mine = {new_incarnation() for _ in range(3)}
    assert len(others) == 2
    assert not others & mine
    assert len(mine) == 3


async def test_str_of_a_pid_is_address_plus_path_and_parses_back() -> None:
    system, _ = new_system()
    async with system:
        pid = await system.spawn(Echo, "echo")
        assert system.address == "tocsin://test"
        assert str(pid) == "tocsin://test/user/echo"
        assert parse_pid(str(pid)) == ("tocsin://test", "/user/echo", None)
        assert parse_pid(pid.wire) == ("tocsin://test", "/user/echo", pid.incarnation)
        assert await system.actor_of(str(pid)) == pid
        assert await system.actor_of(pid.wire) == pid
        remote = parse_pid("tocsin://shop@10.0.0.5:7100/user/a/b#ff")
        assert remote == ("tocsin://shop@10.0.0.5:7100", "/user/a/b", 255)


@pytest.mark.parametrize("text", ["", "test/user/a", "tocsin://", "tocsin://x", "tocsin://x/a#zz"])
def test_parse_pid_rejects_what_is_not_a_pid_string(text: str) -> None:
    with pytest.raises(ValueError, match="not a PID string"):
        parse_pid(text)


async def test_a_respawned_actor_is_a_new_incarnation_and_the_old_wire_form_is_not_found() -> None:
    system, _ = new_system()
    async with system:
        old = await system.spawn(Echo, "echo")
        await system.stop_actor(old)
        new = await system.spawn(Echo, "echo")
        assert old != new
        assert old.incarnation != new.incarnation
        with pytest.raises(ActorNotFoundError):
            await system.actor_of(old.wire)
        assert await system.actor_of(str(old)) == new


async def test_another_nodes_pid_without_remoting_raises_remoting_disabled() -> None:
    system, _ = new_system()
    async with system:
        with pytest.raises(RemotingDisabledError):
            await system.actor_of("tocsin://other@127.0.0.1:7100/user/x")


async def test_pids_and_calls_round_trip_through_the_codec_as_strings() -> None:
    system, _ = new_system()
    async with system:
        pid = await system.spawn(Echo, "echo")
        codec = Codec([system._runtime.codec_extension(), CALL_EXTENSION])  # type: ignore[union-attr]
        value = {"to": pid, "call": Call("add", (1, {2, 3})), "list": [pid]}
        data = codec.encode(value)
        assert pid.wire.encode() in data  # a PID is its string form
        back: Any = codec.decode(data)
        assert back == value
        assert await back["to"].ask("hi") == "hi"
        with pytest.raises(CodecError):
            Codec().decode(data)  # no extensions: unknown code, a typed error
        await system.stop_actor(pid)
        gone: Any = codec.decode(data)
        letters: list[DeadLetter] = []
        system.events.subscribe(letters.append, DeadLetter)
        gone["to"].tell("late")
        assert letters[0].reason is DeadLetterReason.STOPPED


class _RemoteLike(SendTarget):
    """What a remote layer's target does: keep the reply by correlation id, answer later."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.sent: list[tuple[Any, Any, int | None]] = []
        self.pending: dict[int, Reply] = {}

    def deliver(self, message: Any, sender: Any, reply: Reply | None) -> bool:
        correlation = None
        if reply is not None:
            correlation = len(self.pending) + 1
            self.pending[correlation] = reply
        self.sent.append((message, sender, correlation))
        return True

    def alive(self) -> bool:
        return True

    async def stop(self) -> None:
        return None

    def request_stop(self) -> None:
        return None

    def reinstate(self) -> None:
        return None


async def test_a_resolver_routes_other_nodes_pids_and_replies_come_back_by_correlation() -> None:
    system, clock = new_system()
    async with system:
        runtime = system._runtime
        assert runtime is not None
        target = _RemoteLike(runtime)

        def resolve(address: str, path: str, incarnation: int | None) -> PID | None:
            if address != "tocsin://other@h:1":
                return None
            return PID(address, path, incarnation or 0, target)

        remove = runtime.add_resolver(resolve)
        pid = await system.actor_of("tocsin://other@h:1/user/x")
        local = await system.spawn(Echo, "echo")
        pid.tell("hello", local)
        assert target.sent[0] == ("hello", local, None)
        asking = asyncio.ensure_future(pid.ask("question", timeout=5))
        await asyncio.sleep(0)
        (_, _, correlation) = target.sent[1]
        assert correlation is not None
        target.pending[correlation].set_result("answer")  # the reply frame came back
        assert await asking == "answer"
        late = asyncio.ensure_future(pid.ask("again", timeout=5))
        await clock.advance(5)
        with pytest.raises(AskTimeoutError):
            await late
        remove()
        with pytest.raises(RemotingDisabledError):
            await system.actor_of("tocsin://other@h:1/user/x")


class _CorrelatedReply:
    """An incoming remote ask's reply: no future here, a correlation id to answer."""

    def __init__(self, correlation: int, frames: list[tuple[int, str, Any]]) -> None:
        self.correlation = correlation
        self.frames = frames
        self._done = False
        self._callbacks: list[Any] = []

    def done(self) -> bool:
        return self._done

    def set_result(self, result: Any, /) -> None:
        self._finish(("ok", result))

    def set_exception(self, exception: Any, /) -> None:
        self._finish(("error", type(exception).__name__))

    def add_done_callback(self, fn: Any, /) -> None:
        self._callbacks.append(fn)

    def _finish(self, outcome: tuple[str, Any]) -> None:
        self._done = True
        self.frames.append((self.correlation, *outcome))
        for fn in self._callbacks:
            fn(self)


async def test_an_incoming_ask_with_a_correlation_reply_is_answered_or_failed() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Echo, "echo")
        frames: list[tuple[int, str, Any]] = []
        pid._target.deliver("ping", None, _CorrelatedReply(7, frames))
        pid._target.deliver("fail", None, _CorrelatedReply(8, frames))
        await clock.advance(0)
        assert frames == [(7, "ok", "ping"), (8, "error", "RuntimeError")]
