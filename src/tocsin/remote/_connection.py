# SPDX-License-Identifier: Apache-2.0
"""One peer connection: handshake, 4-byte length-prefixed frames, corked writes.

An :class:`asyncio.Protocol`, not streams: ``data_received`` splits frames without an
``await`` per frame, and writes are corked (frames appended during one loop iteration go
out in one ``transport.write``), which is most of the throughput on small messages.

Reading, in order: the fixed-size handshake (:mod:`._handshake`), then frames. A frame's
4-byte big-endian length is checked against ``max_frame`` as soon as the 4 bytes are here,
before any of the body is buffered; a zero or oversize length, a body that is not a valid
envelope, or a first frame that is not :class:`Hello` closes *this* connection (counted,
logged at most once a minute per peer host) and nothing else.

A failed handshake is counted (``auth_failures``) and logged with the peer's address on
the side that sees it: a wrong proof, bad opening bytes, no handshake within
``connect_timeout``, or (listening side) a dialer that closes after the challenge, which
is what a dialer holding another secret does. A connection closed before sending a byte
(a port probe, a health check) is not an authentication attempt and is not counted. The
dialer's failure says "authentication failed" and reaches its caller
(:class:`~tocsin.NodeUnreachableError`, the dead letter's log line).

Writing never blocks: :meth:`Connection.send` returns ``False`` when the frames queued on
this connection would exceed ``max_buffer`` (they queue here while the transport's own
buffer is over its high-water mark: asyncio's ``pause_writing``); the caller turns that
into a dead letter.

Prior art: msgspec ``examples/asyncio-kv`` (length prefix + msgspec), asyncio's
``Protocol`` flow control (``pause_writing``), Proto.Actor's endpoint writer batching.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import msgspec

from . import _handshake as hs
from ._envelopes import PROTOCOL_VERSION, Envelope, Heartbeat, Hello, decoder

if TYPE_CHECKING:
    from ..clock import Clock
    from ._config import Remoting
    from ._metrics import Counters

__all__ = ["Connection", "Hub", "Owner"]

log = logging.getLogger("tocsin.remote")

_PREFIX: Final = 4
_pack_prefix: Final = struct.Struct(">I").pack
_unpack_prefix: Final = struct.Struct(">I").unpack_from
_HEARTBEAT: Final = msgspec.msgpack.encode(Heartbeat())
#: Bytes of queued frames handed to the transport in one ``write`` once more than this
#: is queued (a flush of one loop iteration's frames is usually one write).
_CHUNK: Final = 256 * 1024

# Reading stages.
_AWAIT_DIALER_HELLO: Final = 0  # listener: MAGIC | nonce_d
_AWAIT_LISTENER_REPLY: Final = 1  # dialer: MAGIC | nonce_l | mac_l
_AWAIT_DIALER_PROOF: Final = 2  # listener: mac_d
_FRAMES: Final = 3


class Hub(Protocol):
    """What a connection needs from the node that made it (the ``RemoteNode``)."""

    @property
    def config(self) -> Remoting: ...
    @property
    def counters(self) -> Counters: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def system_name(self) -> str: ...
    @property
    def address(self) -> str: ...
    def dispatch(self, conn: Connection, envelope: Envelope) -> asyncio.Future[None] | None:
        """One envelope arrived on ``conn`` (after its Hello). A future when the actor it
        is for has no room (its bounded mailbox is full): done once the message is in
        that mailbox. The connection reads nothing more until then."""

    def connection_ready(self, conn: Connection) -> bool:
        """The peer's Hello arrived; False when the node refused the connection."""

    def connection_lost(self, conn: Connection, exc: Exception | None) -> None:
        """``conn`` closed (for whatever reason)."""

    def warn(self, key: str, text: str) -> None:
        """Log a connection-level problem, rate-limited by ``key``."""


class Owner(Protocol):
    """What uses a connection to send (an ``Endpoint``): told when it is lost, and when
    its send buffer has room again (only while :attr:`Connection.room_wanted`)."""

    def lost(self, conn: Connection) -> None: ...

    def drained(self, conn: Connection) -> None: ...


@final
class Connection(asyncio.Protocol):
    """One authenticated connection to a peer node. Made by a :class:`Hub` (the node)."""

    def __init__(self, node: Hub, *, dialer: bool, host: str) -> None:
        self.node = node
        self.dialer = dialer
        self.host = host  # the peer, for logs: its address (dialled, or host:port seen)
        self.log_key = host  # the peer as logs are rate-limited: its host, not its port
        #: Why the connection failed before it was ready, in words (the dialer's error).
        self.failure = ""
        self._counted = False  # this connection's failed handshake is counted already
        self.peer: Hello | None = None  # set when the peer's Hello arrives
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = False
        self.pending: dict[int, Callable[[Envelope | BaseException], None]] = {}
        #: Endpoints using this connection (usually one; two when a peer was dialled at
        #: another address than the one it advertises).
        self.owners: list[Owner] = []
        self.rx_frames = 0
        self.tx_frames = 0
        self.quiet_ticks = 0
        self.seen_rx = -1  # rx_frames / tx_frames at the last heartbeat tick
        self.seen_tx = -1
        self._secret = node.config.secret_bytes
        self._max_frame = node.config.max_frame
        self._max_buffer = node.config.max_buffer
        self._decode = decoder().decode
        self._metrics = node.counters
        self._transport: asyncio.Transport | None = None
        self._chunks: list[bytes] = []
        self._have = 0
        self._stage = _AWAIT_LISTENER_REPLY if dialer else _AWAIT_DIALER_HELLO
        self._need = hs.LISTENER_REPLY_SIZE if dialer else hs.DIALER_HELLO_SIZE
        self._nonce = hs.new_nonce()
        self._peer_nonce = b""
        self._out: list[bytes] = []
        #: What each frame in ``_out`` was sent for (one entry per frame, ``None`` but
        #: for tells): made dead letters if the connection is dropped before they leave.
        self._held: list[object] = []
        self._out_size = 0
        #: A sender waits for room in the send buffer (``await pid.send``): the owners
        #: are told (``Owner.drained``) each time frames leave it.
        self.room_wanted = False
        self._flush_armed = False
        self._paused = False  # the transport's buffer is over its high-water mark
        #: Reading is paused until this message is in its actor's mailbox (backpressure:
        #: the actor's bounded mailbox was full; TCP then pushes back to the sender).
        self._holding: asyncio.Future[None] | None = None
        self._loop = asyncio.get_running_loop()
        self._timer: Any = None

    # -- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        if not self.dialer:
            self.host, self.log_key = _peer_of(transport)
        clock = self.node.clock
        self._timer = clock.call_at(
            clock.monotonic() + self.node.config.connect_timeout, self._handshake_timeout
        )
        if self.dialer:
            transport.write(hs.dialer_hello(self._nonce))

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self._chunks.append(data)
        self._have += len(data)
        self._metrics.bytes_in += len(data)
        self._consume()

    def _consume(self) -> None:
        """Handle what the buffered chunks hold (handshake steps, whole frames)."""
        if self._have < self._need or self._holding is not None:
            # Not enough for the next step (keep chunks, copy nothing), or reading is
            # paused for backpressure (a TLS transport may still hand over a little).
            return
        buf = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
        pos = 0
        if self._stage != _FRAMES:
            pos = self._handshake(buf)
            if pos < 0 or self.closed:
                return
        pos = self._frames(buf, pos)
        if pos < 0:
            return  # closed
        rest = buf[pos:] if pos else buf
        self._chunks = [rest] if rest else []
        self._have = len(rest)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed and not self.ready.done():
            self._closed_in_handshake()
        self._close_state()
        self.node.connection_lost(self, exc)

    def _closed_in_handshake(self) -> None:
        """The peer closed the connection before the handshake was done."""
        if self.dialer:
            self.failure = (
                f"the node at {self.host} closed the connection during the handshake "
                "(it refused this node, or is not a tocsin node)"
            )
        elif self._stage == _AWAIT_DIALER_PROOF:
            # A dialer that finds our proof wrong (it holds another secret) closes here:
            # the one trace of its failed attempt on this side.
            self._count_failure(
                "authentication failed: the dialer closed the connection instead of "
                "proving it holds the secret (it holds another one?)"
            )
        elif self._stage == _AWAIT_DIALER_HELLO and self._have:
            self._count_failure("not a tocsin peer (closed before a whole opening)")

    # -- handshake ----------------------------------------------------------------------

    def _handshake(self, buf: bytes) -> int:
        """Consume handshake steps from ``buf``; the offset reached, or -1 when waiting
        (the buffer is kept) or closed."""
        pos = 0
        while self._stage != _FRAMES:
            if len(buf) - pos < self._need:
                self._chunks = [buf[pos:]]
                self._have = len(buf) - pos
                return -1
            step = buf[pos : pos + self._need]
            pos += self._need
            if not self._handshake_step(step):
                return -1
        self._need = _PREFIX
        return pos

    def _handshake_step(self, step: bytes) -> bool:
        assert self._transport is not None
        if self._stage == _AWAIT_DIALER_HELLO:
            nonce_d = hs.verify_dialer_hello(step)
            if nonce_d is None:
                return self._auth_failed("not a tocsin peer (bad opening bytes)")
            self._peer_nonce = nonce_d
            self._transport.write(hs.listener_reply(self._secret, nonce_d, self._nonce))
            self._stage, self._need = _AWAIT_DIALER_PROOF, hs.DIALER_PROOF_SIZE
            return True
        if self._stage == _AWAIT_LISTENER_REPLY:
            nonce_l = hs.verify_listener_reply(self._secret, self._nonce, step)
            if nonce_l is None:
                return self._auth_failed(
                    f"authentication failed: the node at {self.host} does not prove it "
                    "holds this node's secret (another secret, or not a tocsin node)"
                )
            self._transport.write(hs.dialer_proof(self._secret, self._nonce, nonce_l))
            self._stage = _FRAMES
            self._send_hello()
            return True
        # _AWAIT_DIALER_PROOF
        if not hs.verify_dialer_proof(self._secret, self._peer_nonce, self._nonce, step):
            return self._auth_failed(
                "authentication failed: the dialer does not hold this node's secret"
            )
        self._stage = _FRAMES
        return True

    def _send_hello(self) -> None:
        hello = Hello(PROTOCOL_VERSION, self.node.system_name, self.node.address)
        self.send(msgspec.msgpack.encode(hello), force=True)

    def _auth_failed(self, reason: str) -> bool:
        self._count_failure(reason)
        self.abort()
        return False

    def _count_failure(self, reason: str) -> None:
        """Count and log (rate-limited, with the peer's address) a failed handshake."""
        self.failure = reason
        if self._counted:
            return
        self._counted = True
        self._metrics.auth_failures += 1
        side = "dialling" if self.dialer else "from"
        self.node.warn(f"auth:{self.log_key}", f"remoting: refused {side} {self.host}: {reason}")

    def _handshake_timeout(self) -> None:
        if not self.ready.done() and not self.closed:
            self._count_failure(
                f"{self.host} did not finish the handshake within "
                f"{self.node.config.connect_timeout:g} s"
            )
            self.abort()

    # -- frames -------------------------------------------------------------------------

    def _frames(self, buf: bytes, pos: int) -> int:
        """Handle every whole frame in ``buf`` from ``pos``; the offset reached, or -1
        when the connection was closed meanwhile."""
        end = len(buf)
        view = memoryview(buf)
        decode = self._decode
        dispatch = self.node.dispatch
        cap = self._max_frame
        first = self.rx_frames
        try:
            while end - pos >= _PREFIX:
                (size,) = _unpack_prefix(buf, pos)
                if size == 0 or size > cap:
                    self._protocol_error(f"frame length {size} outside 1..{cap}")
                    return -1
                if end - pos - _PREFIX < size:
                    self._need = _PREFIX + size
                    return pos
                start = pos + _PREFIX
                pos = start + size
                try:
                    envelope = decode(view[start:pos])
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    self._protocol_error(f"undecodable frame: {exc}")
                    return -1
                self.rx_frames += 1
                if self.peer is None:
                    if not self._on_hello(envelope):
                        return -1
                elif type(envelope) is not Heartbeat:
                    waiter = dispatch(self, envelope)
                    if self.closed:
                        return -1
                    if waiter is not None and self._hold(waiter):
                        self._need = _PREFIX
                        return pos  # the rest waits in the buffer, unread
            self._need = _PREFIX
            return pos
        finally:
            self._metrics.frames_in += self.rx_frames - first

    # -- backpressure: reading stops while the actor a frame is for has no room -----------

    def _hold(self, waiter: asyncio.Future[None]) -> bool:
        """The frame just read waits for room in its actor's mailbox (``waiter``): stop
        reading (the high-water mark is that mailbox's bound: it is full) until the
        mailbox has taken it, which it does once it is down to half its bound (the
        low-water mark). Meanwhile the kernel's socket buffer fills and TCP stops the
        sender, whose own send buffer then fills (its tells become ``overflow`` dead
        letters there, its ``await pid.send`` waits). False: no need (already done)."""
        if waiter.done():
            _retrieve(waiter)
            return False
        self._holding = waiter
        self._metrics.read_pauses += 1
        if self._transport is not None:
            self._transport.pause_reading()
        waiter.add_done_callback(self._admitted)
        return True

    def _admitted(self, waiter: asyncio.Future[None]) -> None:
        """The held frame is in its mailbox (or its actor stopped: a dead letter there):
        read on, first what was buffered, then from the socket."""
        _retrieve(waiter)
        if self._holding is not waiter:
            return
        self._holding = None
        if self.closed:
            return
        self._consume()
        if self._holding is None and not self.closed and self._transport is not None:
            self._transport.resume_reading()

    def _on_hello(self, envelope: Envelope) -> bool:
        if type(envelope) is not Hello:
            self._protocol_error(f"first frame is {type(envelope).__name__}, not Hello")
            return False
        if envelope.version != PROTOCOL_VERSION:
            self._protocol_error(
                f"protocol version {envelope.version}, this node speaks {PROTOCOL_VERSION}"
            )
            return False
        self.peer = envelope
        if not self.dialer:
            self._send_hello()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.ready.done():
            self.ready.set_result(None)
        return self.node.connection_ready(self)

    def _protocol_error(self, reason: str) -> None:
        self._metrics.protocol_errors += 1
        self.failure = reason
        self.node.warn(
            f"protocol:{self.log_key}",
            f"remoting: closed the connection with {self.host}: {reason}",
        )
        self.abort()

    # -- writing ------------------------------------------------------------------------

    def send(self, body: bytes, *, force: bool = False, info: object = None) -> bool:
        """Queue one frame. ``False`` (nothing queued) when closed or over ``max_buffer``.

        Never blocks and never raises for the network: a full buffer is the caller's
        dead letter. ``info`` (a tell's) is handed back by :meth:`take_held` if the
        connection is dropped while the frame is still held here.
        """
        if self.closed:
            return False
        size = len(body)
        if self._out_size + size > self._max_buffer and not force:
            return False
        self.tx_frames += 1
        if not self._flush_armed and not self._paused:
            # The first frame of a loop iteration leaves at once (an ask's round trip
            # does not wait a turn); the frames that follow it in the same iteration
            # are corked and leave together at the end of it.
            self._flush_armed = True
            self._loop.call_soon(self._flush)
            assert self._transport is not None
            frame = _pack_prefix(size) + body
            self._metrics.frames_out += 1
            self._metrics.bytes_out += len(frame)
            self._transport.write(frame)
            return True
        out = self._out
        out.append(_pack_prefix(size))
        out.append(body)
        self._held.append(info)
        self._out_size += size + _PREFIX
        return True

    # Flow control: while the transport's own buffer is over its high-water mark, frames
    # stay in ``_out`` (bounded by ``max_buffer``, so the bound covers both buffers but
    # the transport's small one). They are handed to the transport at most _CHUNK bytes
    # at a time, and no more once it pauses: what a dropped connection still holds is
    # here, with what each tell was, so it becomes dead letters (``take_held``) instead
    # of vanishing inside the transport's buffer.
    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._out and not self._flush_armed:
            self._flush_armed = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_armed = False
        if self.closed or self._transport is None or not self._out or self._paused:
            return
        if self._out_size <= _CHUNK:
            self._write_all()  # the common case: what one loop iteration corked
        else:
            self._write_chunks()
        if self.room_wanted:
            for owner in list(self.owners):
                owner.drained(self)

    def _write_all(self) -> None:
        assert self._transport is not None
        data = b"".join(self._out)
        self._wrote(len(self._out) // 2, len(data))
        self._out.clear()
        self._held.clear()
        self._out_size = 0
        self._transport.write(data)

    def _wrote(self, frames: int, size: int) -> None:
        self._metrics.frames_out += frames
        self._metrics.bytes_out += size

    def want_room(self, wanted: bool) -> None:
        """Whether the owners want :meth:`Owner.drained` calls (sends wait for room)."""
        self.room_wanted = wanted

    def _write_chunks(self) -> None:
        """Hand ``_out`` to the transport a chunk at a time until it pauses (it calls
        ``pause_writing`` from inside ``write`` once over its high-water mark)."""
        transport = self._transport
        assert transport is not None
        out = self._out
        n = len(out)
        i = 0
        written = 0
        while i < n and not self._paused and not self.closed:
            j = i
            size = 0
            while j < n and size < _CHUNK:
                size += len(out[j]) + len(out[j + 1])  # prefix, body
                j += 2
            data = b"".join(out[i:j])
            i = j
            written += size
            transport.write(data)
        self._wrote(i // 2, written)
        del out[:i]
        del self._held[: i // 2]
        self._out_size -= written

    def heartbeat(self) -> None:
        self.send(_HEARTBEAT, force=True)

    def tick(self, silent_ticks: int) -> bool:
        """One heartbeat tick of the node: count it quiet when no frame arrived since the
        last one, and send a heartbeat when none left. False (nothing sent) once
        ``silent_ticks`` quiet ticks in a row: the peer went silent, the node closes it."""
        if self.rx_frames == self.seen_rx and self._holding is None:
            # (Not while reading is paused for backpressure: we are not listening, the
            # peer is not silent.)
            self.quiet_ticks += 1
            if self.quiet_ticks >= silent_ticks:
                return False
        else:
            self.quiet_ticks = 0
        self.seen_rx = self.rx_frames
        if self.tx_frames == self.seen_tx:
            self.heartbeat()
        self.seen_tx = self.tx_frames
        return True

    # -- who uses it, and what waits on it ------------------------------------------------

    def identified(self, host: str) -> None:
        """The peer's Hello named its address: an inbound connection is logged by it."""
        if not self.dialer:
            self.host = host

    def adopted(self, owner: Owner) -> None:
        """``owner`` sends on this connection (told by :meth:`Owner.lost` when it closes)."""
        if owner not in self.owners:
            self.owners.append(owner)

    def expect(self, corr: int, callback: Callable[[Envelope | BaseException], None]) -> None:
        """``callback`` gets the answer frame to request ``corr`` (or the loss)."""
        self.pending[corr] = callback

    def release(
        self,
    ) -> tuple[list[Owner], dict[int, Callable[[Envelope | BaseException], None]]]:
        """The owners and the waiting requests, handed over once (the connection closed)."""
        owners, self.owners = self.owners, []
        return owners, self.take_pending()

    def take_held(self) -> list[object]:
        """What the tells still held unsent in this closed connection's send buffer were
        sent for (their ``info``), handed over once: the owner dead-letters them."""
        held, self._held = self._held, []
        lost = [info for info in held if info is not None]
        self._metrics.held_lost += len(lost)
        return lost

    def take_pending(self) -> dict[int, Callable[[Envelope | BaseException], None]]:
        """The requests waiting on this connection, handed over (to be failed)."""
        pending, self.pending = self.pending, {}
        return pending

    # -- closing ------------------------------------------------------------------------

    def close(self) -> None:
        """Close after writing what is queued (all of it: the transport writes its
        buffer before it closes)."""
        if self.closed:
            return
        if self._out and self._transport is not None:
            self._write_all()
        self._close_state()
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        """Close at once, dropping what is queued (hostile or failed peer)."""
        if self.closed:
            return
        self._close_state()
        if self._transport is not None:
            self._transport.abort()

    def _close_state(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._out.clear()  # (``_held`` stays for take_held: those become dead letters)
        self._out_size = 0
        self._chunks = []
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.ready.done():
            why = self.failure or f"the connection to {self.host} closed"
            self.ready.set_exception(ConnectionError(why))
            self.ready.exception()  # retrieved: a failed dial is reported by its caller


def _retrieve(waiter: asyncio.Future[None]) -> None:
    """Mark a held frame's outcome seen: a refusal (its actor stopped while the frame
    waited) is a dead letter on this node already, not an error of the connection."""
    if not waiter.cancelled():
        waiter.exception()


def _peer_of(transport: asyncio.Transport) -> tuple[str, str]:
    """The inbound peer for logs: ``(label, rate-limit key)``.

    TCP: ``host:port`` and the host. A Unix socket has no peer address; on Linux its
    credentials say which process dialled (``SO_PEERCRED``).
    """
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        host = str(peer[0])
        return (f"[{host}]:{peer[1]}" if ":" in host else f"{host}:{peer[1]}"), host
    sock = transport.get_extra_info("socket")
    option = getattr(socket, "SO_PEERCRED", None)
    if sock is not None and option is not None:
        try:
            pid, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, 12))
        except (OSError, struct.error):
            pass
        else:
            return f"a local process (pid {pid}, uid {uid}) on the Unix socket", f"uid {uid}"
    return "a local process on the Unix socket", "unix"
