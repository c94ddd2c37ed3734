# SPDX-License-Identifier: Apache-2.0
"""One peer connection: the handshake, then MACed records of frames, corked writes.

An :class:`asyncio.BufferedProtocol`, not streams: ``data_received`` splits records and
frames without an ``await`` per frame, and writes are corked (frames appended during one
loop iteration go out in one record, one ``transport.write``), which is most of the
throughput on small messages, and what makes a MAC per record cheap (:mod:`._records`).
Buffered, because a plain ``Protocol`` gets a fresh 256 KiB ``bytes`` per ``recv``,
shrunk to what arrived: below glibc's mmap threshold that is free, above it (where the
threshold happens to sit depends on the process's past) it is an ``mmap``, ``mremap``
and ``munmap`` per read, 20-30 µs of an ask's round trip. Reading into the node's one
buffer and copying out what arrived costs a ``memcpy`` of those bytes.

Reading, in order: the handshake (:mod:`._handshake`: two openings and a proof, whose
lengths are checked before their bodies are read), then records. A record's length is
checked against the cap as soon as its 12-byte head is here, its MAC and sequence number
before any frame in it is decoded; a wrong MAC or sequence (counted in ``mac_failures``),
a frame length outside ``1..max_frame``, a body that is not a valid envelope, or a first
frame that is not a :class:`Hello` naming what the handshake proved, closes *this*
connection (logged at most once a minute per peer host) and nothing else.

A failed handshake is counted (``auth_failures``) and logged with the peer's address on
the side that sees it: a wrong proof, bad opening bytes, a dialled address the listener
does not answer to, no handshake within ``connect_timeout``, or (listening side) a dialer
that closes after the challenge, which is what a dialer holding another secret does. A
connection closed before sending a byte (a port probe, a health check) is not counted.
The dialer's failure says "authentication failed" and reaches its caller
(:class:`~tocsin.NodeUnreachableError`, the dead letter's log line).

Nothing silently lost: a tell leaves this node in a record the peer confirms
(:class:`Received`, sent once :data:`CONFIRM_EVERY` bytes of records were handed on, at
each heartbeat tick while some were not, and before a graceful close). Until then the
connection keeps what the tell was sent for; if the connection is lost first, every tell
not confirmed (or not yet written) is handed back (:meth:`Connection.take_held`) and
becomes a dead letter ``unreachable``. A close this node starts writes everything first
and trusts TCP to deliver it (the peer confirms on its way out when it closes).

Writing never blocks: :meth:`Connection.send` returns ``False`` when the frames queued on
this connection would exceed ``max_buffer`` (they queue here while the transport's own
buffer is over its high-water mark: asyncio's ``pause_writing``); the caller turns that
into a dead letter.

Prior art: msgspec ``examples/asyncio-kv`` (length prefix + msgspec), asyncio's
``Protocol`` flow control (``pause_writing``), Proto.Actor's endpoint writer batching,
TLS records, Akka Artery's system-message acknowledgements.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import socket
import struct
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import msgspec

from . import _handshake as hs
from . import _records as rec
from ._envelopes import PROTOCOL_VERSION, Envelope, Heartbeat, Hello, Received, Tell, decoder

if TYPE_CHECKING:
    from ..clock import Clock
    from ._config import Remoting
    from ._metrics import Counters

__all__ = ["CONFIRM_EVERY", "FROM_FRAME", "Connection", "Hub", "LostFrame", "Owner"]

log = logging.getLogger("tocsin.remote")

_PREFIX: Final = 4
_pack_prefix: Final = struct.Struct(">I").pack
_unpack_prefix: Final = struct.Struct(">I").unpack_from
_HEARTBEAT: Final = msgspec.msgpack.encode(Heartbeat())
_encode: Final = msgspec.msgpack.encode
_same: Final = hmac.compare_digest
#: Bytes of records handed on after which the reader confirms them (:class:`Received`)
#: without waiting for the next heartbeat tick: what a sender holds for its dead letters
#: stays near this plus what the sockets hold. What it holds are the tells' own objects,
#: tracked by the garbage collector: 256 KiB cost a tell flood 0.3 µs per tell (both
#: nodes, in one process) in collections, 64 KiB 0.2 µs, less no better (a read is
#: confirmed as a whole; Received frames cost a MAC on each side).
CONFIRM_EVERY: Final = 64 * 1024


@final
class _FromFrame:
    """The ``info`` of a plain tell: its frame alone makes its dead letter."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "FROM_FRAME"


#: Sent as a plain tell's ``info``: nothing is held per tell while it is unconfirmed but
#: the record's bytes (one object per record, not the tell's objects: holding a flood's
#: in-flight tells cost the sender 0.35 µs per tell, most of it memory that was not hot
#: any more); a lost one comes back as a :class:`LostFrame`.
FROM_FRAME: Final = _FromFrame()


@final
class LostFrame:
    """A plain tell's frame (its envelope's bytes) that was not confirmed when its
    connection was lost: its owner decodes it into the dead letter."""

    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        self.body = body


# Reading stages.
_HANDSHAKE: Final = 0  # the handshake's steps (``_handshake.Handshake``)
_FRAMES: Final = 1  # MACed records of frames

Callback = Callable[[Envelope | BaseException], None]


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
    @property
    def read_buffer(self) -> memoryview:
        """Where every connection of the node reads into (copied out at once)."""

    def dispatch(self, conn: Connection, envelope: Envelope) -> asyncio.Future[None] | None:
        """One envelope arrived on ``conn`` (after its Hello). A future when the actor it
        is for has no room (its bounded mailbox is full): done once the message is in
        that mailbox. The connection reads nothing more until then."""

    def tell_in(self, conn: Connection, envelope: Tell) -> asyncio.Future[None] | None:
        """:meth:`dispatch` of a :class:`Tell` (the hot path of a flood, called for it
        directly): the same outcome."""

    def admit(self, conn: Connection) -> bool:
        """A stranger connected (inbound, not yet authenticated): False when too many
        are in their handshake already (``conn`` is then closed at once)."""

    def authenticated(self, conn: Connection) -> None:
        """``conn``, admitted, proved the secret or closed: it is a stranger no more."""

    def answers_to(self, dialled: str) -> bool:
        """Whether this node listens at ``dialled`` (the address a dialer connected to)."""

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
class Connection(asyncio.BufferedProtocol):
    """One authenticated connection to a peer node. Made by a :class:`Hub` (the node).

    Args:
        node: the node it belongs to.
        dialer: this side connected (else it accepted).
        host: the peer for logs (the dialled address; an inbound one finds its own).
        dialled: the address the dialer connected to, as it wrote it (``str`` of a
            ``NodeAddress``); bound into the session keys. Empty on the listening side.
    """

    def __init__(self, node: Hub, *, dialer: bool, host: str, dialled: str = "") -> None:
        self.node = node
        self.dialer = dialer
        self.host = host  # the peer, for logs: its address (dialled, or host:port seen)
        self.log_key = host  # the peer as logs are rate-limited: its host, not its port
        #: Why the connection failed before it was ready, in words (the dialer's error).
        self.failure = ""
        self._counted = False  # this connection's failed handshake is counted already
        self._stranger = False  # inbound, admitted, not authenticated yet
        self.peer: Hello | None = None  # set when the peer's Hello arrives
        #: The peer's system address as the handshake proved it (its Hello must agree).
        self.peer_id = ""
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = False
        self._pending: dict[int, Callback] = {}
        #: Endpoints using this connection (the one that dialled it).
        self.owners: list[Owner] = []
        self.rx_frames = 0
        self.rx_bytes = 0
        self.tx_frames = 0
        self.quiet_ticks = 0
        self.seen_rx = -1  # rx_bytes / tx_frames at the last heartbeat tick
        self.seen_tx = -1
        self._max_frame = node.config.max_frame
        self._max_buffer = node.config.max_buffer
        self._record_cap = rec.cap(node.config.max_frame)
        self._decode = decoder().decode
        self._metrics = node.counters
        self._transport: asyncio.Transport | None = None
        self._read_into = node.read_buffer
        self._chunks: list[bytes] = []
        self._have = 0
        self._stage = _HANDSHAKE
        self._shake = hs.Handshake(
            node.config.secret_bytes,
            dialer=dialer,
            own_id=node.address,
            peer=host,
            dialled=dialled,
            answers_to=node.answers_to,
        )
        self._need = self._shake.need
        self._mac_in = rec.keyed(b"")  # keyed with the session's keys once authenticated
        self._mac_out = self._mac_in
        self._seq_in = 0  # the last record read whose MAC and number were right
        self._seq_out = 0  # the last record written
        #: A record read and checked whose frames are not all handed on yet (reading was
        #: paused for backpressure inside it): (view, next frame, end of frames, record
        #: size, whether it carried a message so far).
        self._plain: tuple[memoryview, int, int, int, bool] | None = None
        self._rx_done = 0  # the last record whose frames were all handed on
        self._rx_unconfirmed = 0  # bytes of such records with messages, not confirmed
        #: Records written and not yet confirmed by the peer, with their frames and what
        #: each frame was sent for: (seq, frames, infos; ``None`` for what is not a
        #: tell, :data:`FROM_FRAME` for a plain tell).
        self._unconfirmed: deque[tuple[int, bytes, list[object]]] = deque()
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
            if not self.node.admit(self):
                # Over the cap of strangers: refused at once, before reading a byte (the
                # node counted and logged it). Not an authentication failure.
                self._counted = True
                self.abort()
                return
            self._stranger = True
        clock = self.node.clock
        self._timer = clock.call_at(
            clock.monotonic() + self.node.config.connect_timeout, self._handshake_timeout
        )
        if self.dialer:
            transport.write(self._shake.opening())

    def get_buffer(self, sizehint: int) -> memoryview:
        # The node's one read buffer: asyncio reads into it and calls buffer_updated at
        # once, on this thread, and what arrived is copied out there, so no two
        # connections ever hold it at the same time.
        return self._read_into

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(self._read_into[:nbytes].tobytes())

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self._chunks.append(data)
        self._have += len(data)
        self.rx_bytes += len(data)
        self._metrics.bytes_in += len(data)
        self._consume()

    def _consume(self) -> None:
        """Handle what is buffered: the rest of a record reading paused in, handshake
        steps, whole records."""
        if self._holding is not None:
            return  # paused for backpressure (a TLS transport may still hand over a little)
        if self._plain is not None and not self._hand_on():
            return  # held again, or closed
        if self._have < self._need:
            return  # not enough for the next step: keep the chunks, copy nothing
        buf = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
        pos = 0
        if self._stage != _FRAMES:
            pos = self._handshake(buf)
            if pos < 0 or self.closed:
                return
        pos = self._records(buf, pos)
        if pos < 0:
            return  # closed
        rest = buf[pos:] if pos else buf
        self._chunks = [rest] if rest else []
        self._have = len(rest)
        if self._rx_unconfirmed >= CONFIRM_EVERY:
            self._confirm()

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
        elif self._shake.challenged:
            # A dialer that finds our proof wrong (it holds another secret) closes here:
            # the one trace of its failed attempt on this side.
            self._count_failure(
                "authentication failed: the dialer closed the connection instead of "
                "proving it holds the secret (it holds another one?)"
            )
        elif self._have:
            self._count_failure("not a tocsin peer (closed before a whole opening)")

    # -- handshake ----------------------------------------------------------------------

    def _handshake(self, buf: bytes) -> int:
        """Consume handshake steps from ``buf``; the offset reached, or -1 when waiting
        (the buffer is kept) or closed."""
        assert self._transport is not None
        shake = self._shake
        pos = 0
        while not shake.done:
            need = shake.need
            if len(buf) - pos < need:
                self._chunks = [buf[pos:]]
                self._have = len(buf) - pos
                self._need = need
                return -1
            step = buf[pos : pos + need]
            pos += need
            try:
                answer = shake.step(step)
            except hs.Refused as exc:
                self._count_failure(str(exc))
                self.abort()
                return -1
            if answer:
                self._transport.write(answer)
        self.peer_id = shake.peer_id
        self._mac_in, self._mac_out = rec.keyed(shake.key_in), rec.keyed(shake.key_out)
        self._stage = _FRAMES
        if self._stranger:
            self._stranger = False
            self.node.authenticated(self)
        if self.dialer:
            self._send_hello()
        self._need = rec.HEAD
        return pos

    def _send_hello(self) -> None:
        hello = Hello(PROTOCOL_VERSION, self.node.system_name, self.node.address)
        self.send(_encode(hello), force=True)

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
        self._timer = None
        if not self.ready.done() and not self.closed:
            self._count_failure(
                f"{self.host} did not finish the handshake within "
                f"{self.node.config.connect_timeout:g} s"
            )
            self.abort()

    # -- records and frames -------------------------------------------------------------

    def _records(self, buf: bytes, pos: int) -> int:
        """Check and hand on every whole record in ``buf`` from ``pos``; the offset
        reached, or -1 when the connection was closed meanwhile."""
        end = len(buf)
        view = memoryview(buf)
        mac_in = self._mac_in
        cap = self._record_cap
        while end - pos >= rec.HEAD:
            size, seq = rec.unpack_head(buf, pos)
            if size == 0 or size > cap:
                self._protocol_error(f"record length {size} outside 1..{cap}")
                return -1
            body = pos + rec.HEAD
            stop = body + size
            if end - stop < rec.MAC:
                self._need = stop + rec.MAC - pos
                return pos
            mac = mac_in.copy()
            mac.update(view[pos:stop])
            if not _same(mac.digest(), view[stop : stop + rec.MAC]):
                self._bad_record("a record's MAC is wrong (not written by a holder of the key)")
                return -1
            if seq != self._seq_in + 1:
                self._bad_record(f"record {seq} where {self._seq_in + 1} was due (replayed?)")
                return -1
            self._seq_in = seq
            pos = stop + rec.MAC
            self._plain = (view, body, stop, size, False)
            if not self._hand_on():
                self._need = rec.HEAD
                return -1 if self.closed else pos
        self._need = rec.HEAD
        return pos

    def _hand_on(self) -> bool:
        """Decode and hand on the frames of the checked record in ``_plain``. False when
        reading paused inside it (``_plain`` keeps the rest) or the connection closed."""
        assert self._plain is not None
        view, pos, stop, size, messages = self._plain
        decode = self._decode
        node = self.node
        dispatch = node.dispatch
        tell_in = node.tell_in
        cap = self._max_frame
        frames = 0
        try:
            while pos < stop:
                if stop - pos < _PREFIX:
                    self._protocol_error("a frame split across two records")
                    return False
                (length,) = _unpack_prefix(view, pos)
                start = pos + _PREFIX
                pos = start + length
                if length == 0 or length > cap or pos > stop:
                    self._protocol_error(f"frame length {length} outside 1..{cap} or its record")
                    return False
                try:
                    envelope = decode(view[start:pos])
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    self._protocol_error(f"undecodable frame: {exc}")
                    return False
                frames += 1
                kind = type(envelope)
                if kind is Tell and self.peer is not None:
                    # A flood's frame: straight to the node's tell path.
                    messages = True
                    waiter = tell_in(self, envelope)  # type: ignore[arg-type]
                else:
                    if kind is Heartbeat:
                        continue
                    if kind is Received:
                        if not self._confirmed(envelope.seq):  # type: ignore[union-attr]
                            return False
                        continue
                    messages = True
                    if self.peer is None:
                        if not self._on_hello(envelope):
                            return False
                        continue
                    waiter = dispatch(self, envelope)
                if self.closed:
                    return False
                if waiter is not None and self._hold(waiter):
                    self._plain = (view, pos, stop, size, True)
                    return False
            self._plain = None
            self._rx_done = self._seq_in
            if messages:
                self._rx_unconfirmed += size + rec.HEAD + rec.MAC
            return True
        finally:
            self.rx_frames += frames
            self._metrics.frames_in += frames

    def _bad_record(self, reason: str) -> None:
        self._metrics.mac_failures += 1
        self.failure = reason
        self.node.warn(
            f"mac:{self.log_key}",
            f"remoting: closed the connection with {self.host}: {reason}",
        )
        self.abort()

    # -- confirmations: what the peer has read ---------------------------------------------

    def _confirm(self) -> None:
        """Tell the peer every record up to the last one handed on was read."""
        self._rx_unconfirmed = 0
        self.send(_encode(Received(self._rx_done)), force=True)

    def _confirmed(self, seq: int) -> bool:
        """The peer read our records up to ``seq``: forget the tells they carried."""
        if seq > self._seq_out:
            self._protocol_error(f"confirms record {seq}, only {self._seq_out} were written")
            return False
        unconfirmed = self._unconfirmed
        while unconfirmed and unconfirmed[0][0] <= seq:
            unconfirmed.popleft()
        return True

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
        if envelope.address != self.peer_id:
            # The name a peer goes by is the one its handshake proved, nothing else.
            self._protocol_error(
                f"its Hello names {envelope.address!r}, its handshake proved {self.peer_id!r}"
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
        connection is dropped before the peer confirmed the frame.
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
            # are corked and leave together, one record, at the end of it.
            self._flush_armed = True
            self._loop.call_soon(self._flush)
            assert self._transport is not None
            self._seq_out = seq = self._seq_out + 1
            frame = _pack_prefix(size) + body
            record = rec.seal(self._mac_out, seq, frame)
            if info is not None:
                self._unconfirmed.append((seq, frame, [info]))
            self._metrics.frames_out += 1
            self._metrics.bytes_out += len(record)
            self._transport.write(record)
            return True
        out = self._out
        out.append(_pack_prefix(size))
        out.append(body)
        self._held.append(info)
        self._out_size += size + _PREFIX
        return True

    # Flow control: while the transport's own buffer is over its high-water mark, frames
    # stay in ``_out`` (bounded by ``max_buffer``, so the bound covers both buffers but
    # the transport's small one). They are handed to the transport at most a CHUNK of
    # bytes (one record) at a time, and no more once it pauses.
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
        if self._out_size <= rec.CHUNK:
            self._write_all()  # the common case: what one loop iteration corked
        else:
            self._write_chunks()
        if self.room_wanted:
            for owner in list(self.owners):
                owner.drained(self)

    def _write_record(self, frames: bytes, held: list[object], count: int) -> None:
        """Seal ``frames`` (``count`` of them, sent for ``held``) as the next record and
        hand it to the transport; the tells among them wait for the peer's confirmation."""
        assert self._transport is not None
        self._seq_out = seq = self._seq_out + 1
        record = rec.seal(self._mac_out, seq, frames)
        if held.count(None) != len(held):
            self._unconfirmed.append((seq, frames, held))
        self._metrics.frames_out += count
        self._metrics.bytes_out += len(record)
        self._transport.write(record)

    def _write_all(self) -> None:
        out, held = self._out, self._held
        self._out, self._held = [], []
        self._out_size = 0
        self._write_record(b"".join(out), held, len(held))

    def want_room(self, wanted: bool) -> None:
        """Whether the owners want :meth:`Owner.drained` calls (sends wait for room)."""
        self.room_wanted = wanted

    def _write_chunks(self) -> None:
        """Hand ``_out`` to the transport a record at a time until it pauses (it calls
        ``pause_writing`` from inside ``write`` once over its high-water mark)."""
        out = self._out
        n = len(out)
        i = 0
        written = 0
        while i < n and not self._paused and not self.closed:
            j = i
            size = 0
            while j < n and size < rec.CHUNK:
                size += len(out[j]) + len(out[j + 1])  # prefix, body
                j += 2
            self._write_record(b"".join(out[i:j]), self._held[i // 2 : j // 2], (j - i) // 2)
            i = j
            written += size
        del out[:i]
        del self._held[: i // 2]
        self._out_size -= written

    def heartbeat(self) -> None:
        self.send(_HEARTBEAT, force=True)

    def tick(self, silent_ticks: int) -> bool:
        """One heartbeat tick of the node: count it quiet when no byte arrived since the
        last one, confirm what was read, and send a heartbeat when nothing left. False
        (nothing sent) once ``silent_ticks`` quiet ticks in a row: the peer went
        silent, the node lets it go (:meth:`let_go`)."""
        if self.rx_bytes == self.seen_rx and self._holding is None:
            # (Bytes, not frames: a large frame still arriving is not silence. Not while
            # reading is paused for backpressure: we are not listening then.)
            self.quiet_ticks += 1
            if self.quiet_ticks >= silent_ticks:
                return False
        else:
            self.quiet_ticks = 0
        self.seen_rx = self.rx_bytes
        if self._rx_unconfirmed:
            self._confirm()
        elif self.tx_frames == self.seen_tx:
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

    @property
    def waiting(self) -> int:
        """How many requests wait for their answer on this connection."""
        return len(self._pending)

    def waits_for(self, corr: int) -> bool:
        """Whether the answer to request ``corr`` is awaited on this connection."""
        return corr in self._pending

    def expect(self, corr: int, callback: Callback) -> None:
        """``callback`` gets the answer frame to request ``corr`` (or the loss)."""
        self._pending[corr] = callback

    def answer(self, corr: int) -> Callback | None:
        """The callback waiting for the answer to ``corr``, handed over once (``None``
        when nobody waits: answered, forgotten, or never asked here)."""
        return self._pending.pop(corr, None)

    def forget(self, corr: int) -> None:
        """Stop waiting for the answer to ``corr`` (its asker gave up); an answer that
        arrives later is dropped."""
        self._pending.pop(corr, None)

    def forget_if(self, gave_up: Callable[[Callback], bool]) -> None:
        """Forget every request whose callback ``gave_up`` says its asker gave up on."""
        pending = self._pending
        for corr in [c for c, callback in pending.items() if gave_up(callback)]:
            del pending[corr]

    def release(self) -> tuple[list[Owner], dict[int, Callback]]:
        """The owners and the waiting requests, handed over once (the connection closed)."""
        owners, self.owners = self.owners, []
        return owners, self.take_pending()

    def take_held(self) -> list[object]:
        """What the tells this closed connection sent and the peer never confirmed, or
        never wrote, were sent for (their ``info``), handed over once: the owner
        dead-letters them."""
        lost: list[object] = []
        for _, frames, infos in self._unconfirmed:
            _lost(frames, infos, lost)
        held = self._held
        if held:
            _lost(b"".join(self._out), held, lost)
        self._unconfirmed.clear()
        self._held = []
        self._out = []
        self._metrics.held_lost += len(lost)
        return lost

    def take_pending(self) -> dict[int, Callback]:
        """The requests waiting on this connection, handed over (to be failed)."""
        pending, self._pending = self._pending, {}
        return pending

    # -- closing ------------------------------------------------------------------------

    def close(self) -> None:
        """Close after writing what is queued (all of it: the transport writes its
        buffer before it closes) and confirming what was read. What was written is
        taken as delivered (TCP delivers it before the close)."""
        if self.closed:
            return
        if self._stage == _FRAMES and self._transport is not None:
            if self._rx_unconfirmed:
                self._confirm()
            if self._out:
                self._write_all()
        self._unconfirmed.clear()
        self._close_state()
        if self._transport is not None:
            self._transport.close()

    def let_go(self) -> None:
        """Close a peer that went silent: confirm what was read (so the peer, if it is
        only busy, dead-letters exactly what it sent after), keep what was not confirmed
        for :meth:`take_held`."""
        if self.closed:
            return
        transport = self._transport
        if self._stage == _FRAMES and transport is not None and self._rx_unconfirmed:
            self._rx_unconfirmed = 0
            self._seq_out = seq = self._seq_out + 1
            frame = _encode(Received(self._rx_done))
            transport.write(rec.seal(self._mac_out, seq, _pack_prefix(len(frame)) + frame))
        self._close_state()
        if transport is None:
            return
        if transport.get_write_buffer_size():
            # The peer is not reading (dead, or stuck): a graceful close would wait for
            # it forever. Its unconfirmed tells are dead letters there all the same.
            transport.abort()
        else:
            transport.close()

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
        # (``_out`` and ``_held`` stay for take_held: those become dead letters.)
        self._out_size = 0
        self._chunks = []
        self._plain = None
        if self._stranger:
            self._stranger = False
            self.node.authenticated(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.ready.done():
            why = self.failure or f"the connection to {self.host} closed"
            self.ready.set_exception(ConnectionError(why))
            self.ready.exception()  # retrieved: a failed dial is reported by its caller


def _lost(frames: bytes, infos: list[object], into: list[object]) -> None:
    """Add to ``into`` what each frame in ``frames`` was sent for (``infos``, one per
    frame, in order), a :class:`LostFrame` for a plain tell's, nothing for ``None``."""
    pos = 0
    for info in infos:
        (size,) = _unpack_prefix(frames, pos)
        start = pos + _PREFIX
        pos = start + size
        if info is FROM_FRAME:
            into.append(LostFrame(frames[start:pos]))
        elif info is not None:
            into.append(info)


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
