# SPDX-License-Identifier: Apache-2.0
"""Finding PIDs: by name, path or PID string (``actor_of``), from the codec (a PID that
crossed the wire or the store), and through the resolvers of other nodes.

A local PID string resolves through the runtime's registry; another node's address goes
to the registered :class:`~tocsin.actor._target.TargetResolver` callables (the remote
layer), in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, final

from .._codec import Extension
from ..errors import ActorNotFoundError, CodecError, RemotingDisabledError
from ._events import DeadLetterReason
from ._pid import PID, parse_pid
from ._state import CellState
from ._target import SendTarget

if TYPE_CHECKING:
    from ._reply import Reply
    from ._runtime import Runtime

__all__ = ["PID_EXTENSION_CODE", "local_pid", "pid_extension", "pid_from_wire", "pid_of"]

#: The codec extension code of a PID (its wire string).
PID_EXTENSION_CODE = 16


def pid_extension(runtime: Runtime) -> Extension:
    """The codec extension for PIDs of ``runtime``: a PID as its wire string."""

    def from_wire(value: object) -> PID:
        return _pid_from_codec(runtime, value)

    return Extension(PID_EXTENSION_CODE, PID, _pid_to_wire, from_wire)


def local_pid(runtime: Runtime, path: str) -> PID:
    """The PID of the live actor at ``path`` on this node, or ActorNotFoundError.

    Paths no cell holds are offered to the runtime's ``path_resolvers`` (the durable
    runtime answers ``/durable/<kind>/<identity>`` with the identity's stable PID, which
    activates it on the first message): this is also how a remote layer delivers an
    incoming message to a passivated durable identity.
    """
    cell = runtime.registry.get(path)
    if cell is not None and cell.state < CellState.STOPPING:
        return cell.pid
    for resolver in runtime.path_resolvers:
        found = resolver(path)
        if found is not None:
            return found
    raise ActorNotFoundError(f"no live actor at {path!r}")


def pid_of(runtime: Runtime, text: str) -> PID:
    """A PID from a name (``"a"``), a path (``"/user/a"``) or a PID string.

    A PID string of this node resolves through the registry; one of another node
    through the registered resolvers (the remote layer).

    Raises:
        ActorNotFoundError: no live actor there (this node).
        RemotingDisabledError: another node's address, and no resolver serves it.
        ValueError: not a name, path or PID string.
    """
    if not text.startswith("tocsin:"):
        return local_pid(runtime, text if text.startswith("/") else f"/user/{text}")
    address, path, incarnation = parse_pid(text)
    if address == runtime.address:
        pid = local_pid(runtime, path)
        if incarnation is not None and pid.incarnation != incarnation:
            raise ActorNotFoundError(f"no live actor {text!r} (that incarnation stopped)")
        return pid
    for resolver in runtime.resolvers:
        found = resolver(address, path, incarnation)
        if found is not None:
            return found
    raise RemotingDisabledError(
        f"{text!r} names an actor on node {address!r}, and this system "
        f"({runtime.address!r}) was started without remoting to reach it"
    )


def pid_from_wire(runtime: Runtime, text: str) -> PID:
    """A PID read from the codec (``pid.wire``): never raises for a gone actor.

    This node's actor of that incarnation, if it still lives; else a PID whose sends
    are dead letters. Another node's: through the resolvers; without one, a PID
    whose sends raise ``RemotingDisabledError``.

    Raises:
        ValueError: not a PID string.
    """
    address, path, incarnation = parse_pid(text)
    inc = 0 if incarnation is None else incarnation
    if address == runtime.address:
        try:
            pid = local_pid(runtime, path)
        except ActorNotFoundError:
            return PID(address, path, inc, _Gone(runtime, False))
        if incarnation is None or pid.incarnation == inc:
            return pid
        return PID(address, path, inc, _Gone(runtime, False))
    for resolver in runtime.resolvers:
        found = resolver(address, path, incarnation)
        if found is not None:
            return found
    return PID(address, path, inc, _Gone(runtime, True))


def _pid_from_codec(runtime: Runtime, value: object) -> PID:
    if not isinstance(value, str):
        raise CodecError(f"cannot decode a PID from {type(value)!r}")
    try:
        return pid_from_wire(runtime, value)
    except ValueError as exc:
        raise CodecError(f"cannot decode a PID: {exc}") from None


def _pid_to_wire(pid: PID) -> str:
    return pid.wire


@final
class _Gone(SendTarget):
    """The target of a PID read from the codec whose actor is not (or not yet) reachable:
    a local actor that stopped, or another node's actor without remoting."""

    __slots__ = ("remote", "runtime")

    def __init__(self, runtime: Runtime, remote: bool) -> None:
        self.runtime = runtime
        self.remote = remote

    def check(self, message: Any) -> None:
        if self.remote:
            self.deliver(message, None, None)  # raises RemotingDisabledError

    def deliver(self, message: Any, sender: Any, reply: Reply | None) -> bool:
        if self.remote:
            raise RemotingDisabledError(
                f"cannot send to an actor of another node: system {self.runtime.name!r} "
                f"was started without remoting"
            )
        self.runtime.undeliverable(message, sender, None, DeadLetterReason.STOPPED, reply)
        return False

    def alive(self) -> bool:
        return False

    async def stop(self) -> None:
        return None

    def request_stop(self) -> None:
        return None

    def reinstate(self) -> None:
        return None
