# SPDX-License-Identifier: Apache-2.0
"""Answers on the wire: the way back of an inbound ask, and a failure frame as an error.

A handler's exception does not cross the wire (decoding never constructs a class the peer
names): its type name and text do, and the asking node raises
:class:`~tocsin.RemoteActorError` with them, or the matching tocsin error for a stopped,
suspended or absent target.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, final

import msgspec

from ..errors import (
    ActorNotFoundError,
    ActorSuspendedError,
    CodecError,
    DeadActorError,
    RemoteActorError,
)
from ._envelopes import Envelope, Fail, Found, Reply

if TYPE_CHECKING:
    from ._config import Remoting
    from ._connection import Connection
    from ._messages import WireCodec

__all__ = [
    "PendingAsk",
    "RemoteReply",
    "ReplyWire",
    "clip",
    "failure",
    "gave_up",
    "outcome",
    "too_big",
]


class ReplyWire(Protocol):
    """What a :class:`RemoteReply` needs from the node it answers through (the
    ``RemoteNode``): the codec, the envelope encoder and the frame cap."""

    @property
    def codec(self) -> WireCodec: ...
    @property
    def config(self) -> Remoting: ...
    def encode(self, envelope: Envelope) -> bytes: ...


@final
class RemoteReply:
    """The way back for one ask that came from another node: answer it once with
    :meth:`respond` or :meth:`fail`. Later calls, or calls after the connection is gone,
    do nothing.

    It is also the kernel's ``Reply`` (the four methods of ``asyncio.Future`` the kernel
    uses: ``done``, ``set_result``, ``set_exception``, ``add_done_callback``), so the ask
    travels through the receiving actor's mailbox like a local one, with no wrapper.
    """

    __slots__ = ("_callbacks", "_conn", "_corr", "_node")

    def __init__(self, node: ReplyWire, conn: Connection, corr: int) -> None:
        self._node = node
        self._conn: Connection | None = conn
        self._corr = corr
        self._callbacks: list[Callable[[Any], object]] | None = None

    def done(self) -> bool:
        return self._conn is None

    def set_result(self, result: Any, /) -> None:
        self.respond(result)

    def set_exception(self, exception: BaseException | type[BaseException], /) -> None:
        self.fail(exception() if isinstance(exception, type) else exception)

    def add_done_callback(self, fn: Callable[[Any], object], /) -> None:
        if self._conn is None:
            fn(self)
        elif self._callbacks is None:
            self._callbacks = [fn]
        else:
            self._callbacks.append(fn)

    def _finished(self) -> None:
        callbacks, self._callbacks = self._callbacks, None
        for fn in callbacks or ():
            fn(self)

    def respond(self, value: object) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._callbacks is not None:
            self._finished()
        node = self._node
        try:
            name, payload = node.codec.encode(value, name="reply")
            body = node.encode(Reply(self._corr, name, msgspec.Raw(payload)))
            if len(body) > node.config.max_frame:
                raise too_big(len(body), node.config.max_frame)
        except CodecError as exc:
            conn.send(node.encode(Fail(self._corr, "codec", "CodecError", clip(str(exc)))))
            return
        conn.send(body)

    def fail(self, error: BaseException) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._callbacks is not None:
            self._finished()
        kind = "error"
        if isinstance(error, ActorSuspendedError):
            kind = "suspended"
        elif isinstance(error, DeadActorError):
            kind = "stopped"
        elif isinstance(error, ActorNotFoundError):
            kind = "not_found"
        text = clip(str(error))
        conn.send(self._node.encode(Fail(self._corr, kind, type(error).__name__, text)))


def clip(text: str) -> str:
    # An exception's text crosses in one frame: keep it well under any frame cap.
    return text if len(text) <= 4000 else text[:4000] + "…"


def too_big(size: int, cap: int) -> CodecError:
    return CodecError(f"message is {size} bytes encoded; the frame cap `max_frame` is {cap} bytes")


def failure(fail: Fail, what: str) -> BaseException:
    if fail.kind == "error":
        return RemoteActorError(fail.type_name, fail.text, target=what)
    if fail.kind == "suspended":
        return ActorSuspendedError(fail.text)
    if fail.kind in ("stopped", "not_found"):
        return DeadActorError(fail.text)
    if fail.kind == "codec":
        return CodecError(fail.text)
    return RemoteActorError(fail.type_name, fail.text, target=what)


def outcome(codec: WireCodec, answer: Envelope, what: str) -> object:
    """The value an answer frame carries, or raise the failure it reports."""
    if type(answer) is Reply:
        return codec.decode(answer.name, answer.payload)
    if type(answer) is Found:
        return answer.pid
    if type(answer) is Fail:
        raise failure(answer, what)
    raise CodecError(f"unexpected answer {type(answer).__name__} from {what}")


@final
class PendingAsk:
    """A request waiting for its answer frame (see ``RemoteNode.ask_then``)."""

    __slots__ = ("answer", "codec", "gave_up", "what")

    def __init__(
        self,
        codec: WireCodec,
        answer: Callable[[object, BaseException | None], None],
        gave_up: Callable[[], bool],
        what: str,
    ) -> None:
        self.codec = codec
        self.answer = answer
        self.gave_up = gave_up
        self.what = what

    def __call__(self, result: Envelope | BaseException) -> None:
        if isinstance(result, BaseException):
            self.answer(None, result)
            return
        try:
            value = outcome(self.codec, result, self.what)
        except Exception as error:
            self.answer(None, error)
        else:
            self.answer(value, None)


def gave_up(callback: Callable[[Envelope | BaseException], None]) -> bool:
    """Whether a waiting request's asker stopped waiting (an ``ask_then`` that timed
    out): such requests are forgotten at the next heartbeat tick."""
    return isinstance(callback, PendingAsk) and callback.gave_up()
