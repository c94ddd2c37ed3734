# SPDX-License-Identifier: Apache-2.0
"""A system without remoting: another node's PID raises RemotingDisabledError wherever it
is used (lookup, tell, ask, every scheduling call), never a silent dead letter."""

from __future__ import annotations

import pytest

from tocsin import ActorSystem, Remoting, RemotingDisabledError

OTHER = "tocsin://b@127.0.0.1:7100/user/x"


async def test_another_nodes_pid_cannot_be_used_without_remoting() -> None:
    async with ActorSystem("plain") as system:
        assert system.address == "tocsin://plain"
        with pytest.raises(RemotingDisabledError, match="without remoting"):
            await system.actor_of(OTHER)
        # A PID of another node read from stored or received data (the codec's path):
        pid = system._runtime.pid_from_wire(OTHER + "#1f")  # type: ignore[union-attr]
        with pytest.raises(RemotingDisabledError):
            pid.tell("hello")
        with pytest.raises(RemotingDisabledError):
            await pid.ask("hello")
        with pytest.raises(RemotingDisabledError):
            await system.schedule_once("tick", pid, 1.0)
        with pytest.raises(RemotingDisabledError):
            await system.schedule("tick", pid, 1.0)
        with pytest.raises(RemotingDisabledError):
            await system.schedule_cron("tick", pid, "0 0 * * * ?")
        assert system.list_schedules() == []
        with pytest.raises(RemotingDisabledError):
            system.remote_metrics()


def test_remoting_must_be_a_remoting() -> None:
    with pytest.raises(TypeError, match=r"`remoting` must be a tocsin\.Remoting"):
        ActorSystem("x", remoting="tcp://127.0.0.1:0")  # type: ignore[arg-type]
    assert isinstance(Remoting(listen="tcp://127.0.0.1:0", secret=b"k" * 16), Remoting)
