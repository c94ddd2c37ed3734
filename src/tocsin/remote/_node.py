# SPDX-License-Identifier: Apache-2.0
"""A node's remoting: the listener, one endpoint per peer, dispatch, heartbeats, counters.

:class:`RemoteNode` knows nothing of actors. It moves envelopes between nodes and hands
what arrives to a :class:`Host` (the actor system implements it): deliver a tell, deliver an
ask with a :class:`RemoteReply`, resolve a path, report a message that never left. So the
transport is tested on its own, and the system glue stays small.

Every timer (handshake deadline, heartbeats, reconnect backoff) goes through the node's
:class:`~tocsin.Clock`; nothing here reads time on the message path (a connection's
liveness is "bytes received since the last heartbeat tick", a counter).

Strangers are bounded: at most ``max_pending_handshakes`` inbound connections may be in
their handshake at once (each with the ``connect_timeout`` deadline); one more is closed
at once, counted and logged at most once a minute per peer host. A connection is used to
send only by the endpoint that dialled it: what a peer says its address is routes
nothing and is never dialled.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import itertools
import logging
import os
import socket
import stat
from collections.abc import Callable
from typing import Any, Final, cast, final

import msgspec

from .._codec import CostlyDecodeError
from ..actor._spi import DeadLetterReason, RuntimeItem, Tick
from ..clock import Clock, SystemClock
from ..errors import AddressInUseError, BackpressureError, CodecError, NodeUnreachableError
from ._address import NodeAddress, parse_system_address
from ._config import Remoting
from ._connection import Connection
from ._endpoint import Endpoint
from ._envelopes import (
    Ask,
    Completed,
    Envelope,
    Fail,
    Found,
    Lookup,
    Reply,
    Scheduled,
    Tell,
    WireTick,
    encoder,
)
from ._host import Host
from ._messages import WireCodec
from ._metrics import Counters, RemoteMetrics
from ._replies import PendingAsk, RemoteReply, gave_up, outcome, too_big
from ._ticks import Completions, InboundTick, Undelivered
from ._tls import ssl_contexts

__all__ = ["LOG_EVERY", "SILENT_TICKS", "RemoteNode", "refusal"]

#: The remoting Unix socket's mode: only this node's user may connect (DESIGN, "Files
#: are ours"); peers authenticate anyway, this keeps strangers from even trying.
SOCKET_MODE: Final = 0o600

log = logging.getLogger("tocsin.remote")

#: Heartbeat ticks without a frame received after which a connection is closed as lost.
SILENT_TICKS: Final = 3
#: Seconds between two log lines of one kind about one peer (the counters count them all).
LOG_EVERY: Final = 60.0
#: Peers remembered for that rate limit (a flood of addresses cannot grow it further).
_LOG_KEYS: Final = 1024
#: A Tell's payload left out (``RemoteNode.tell_head``): msgspec writes a Raw as it is.
_NO_PAYLOAD: Final = msgspec.Raw(b"")
#: Bytes one read of a connection takes at most (asyncio's own ``max_size``).
_READ_SIZE: Final = 256 * 1024


@final
class RemoteNode:
    """The remoting of one actor system. Made by the system at ``start()``.

    Args:
        config: the validated :class:`Remoting`.
        system_name: the owning system's name (it appears in the node's address).
        host: the actor system side (:class:`Host`).
        codec: encodes and decodes messages (registered classes, PIDs).
        clock: every timer of the transport goes through it.
    """

    def __init__(
        self,
        config: Remoting,
        system_name: str,
        host: Host,
        codec: WireCodec,
        clock: Clock | None = None,
    ) -> None:
        self.config = config
        self.system_name = system_name
        self.host = host
        self.codec = codec
        self.clock = clock if clock is not None else SystemClock()
        self.counters = Counters()
        self.node_address: NodeAddress = config.dial_address
        self.address = ""
        self.stopping = False
        self._encode = encoder().encode
        # Looked up once: every inbound tell uses both (``tell_in``).
        self._unguarded = codec.unguarded
        self._deliver_tell = host.deliver_tell
        self._max_frame = config.max_frame
        self._corr = itertools.count(1)
        #: Tracked ticks sent from here, waiting for their Completed frame (bounded).
        self.completions = Completions()
        self._endpoints: dict[NodeAddress, Endpoint] = {}
        self._connections: set[Connection] = set()
        #: Inbound connections admitted and not authenticated yet (closed at stop).
        self._strangers: set[Connection] = set()
        #: Inbound TLS connections still in their TLS handshake, with the timer that
        #: counts them failed if it never finishes (asyncio tells the protocol nothing).
        self._in_tls: dict[Connection, Any] = {}
        self._own: frozenset[str] = frozenset()  # the addresses this node answers to
        self._server: asyncio.AbstractServer | None = None
        self._heartbeat: Any = None
        self._logged: dict[str, tuple[float, int]] = {}  # key -> (last logged, suppressed)
        self._bound: tuple[int, int] | None = None  # (st_dev, st_ino) of our Unix socket
        self._server_ssl, self._client_ssl = ssl_contexts(config)
        #: What every connection reads into (``Connection.get_buffer``).
        self.read_buffer = memoryview(bytearray(_READ_SIZE))

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> str:
        """Listen; returns the system address (``tocsin://name@host:port``, real port).

        Raises:
            AddressInUseError: a live listener holds the address (for a Unix socket: a
                connect to the path is answered; a stale socket file is replaced).
            OSError: the listen address cannot be bound otherwise.
        """
        loop = asyncio.get_running_loop()
        listen = self.config.listen_address

        def factory() -> Connection:
            conn = Connection(self, dialer=False, host="?")
            if self._server_ssl is not None:
                self._tls_started(conn)
            return conn

        # (A TLS stranger is bounded by the TLS handshake's own deadline; the cap of
        # strangers counts it from the end of the TLS handshake, when we see it.)
        tls_deadline = self.config.connect_timeout if self._server_ssl else None

        if listen.kind == "unix":
            sock = await self._bind_unix(listen.path)
            try:
                self._server = await loop.create_unix_server(
                    factory, sock=sock, ssl=self._server_ssl, ssl_handshake_timeout=tls_deadline
                )
            except BaseException:
                sock.close()
                self._unlink_own_socket()
                raise
        else:
            try:
                self._server = await loop.create_server(
                    factory,
                    listen.host,
                    listen.port,
                    ssl=self._server_ssl,
                    ssl_handshake_timeout=tls_deadline,
                )
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                raise AddressInUseError(
                    f"`listen` address {listen} is in use: another process listens there "
                    "(another node? give each node its own port, or port 0)"
                ) from exc
            if self.config.advertise_address is None and listen.port == 0:
                port = self._server.sockets[0].getsockname()[1]
                self.node_address = NodeAddress("tcp", host=listen.host, port=port)
        self.address = self.node_address.system_address(self.system_name)
        bound = self._server.sockets[0].getsockname() if listen.kind == "tcp" else None
        self._own = own_addresses(self.config, self.node_address, bound[1] if bound else 0)
        if listen.kind == "tcp" and not self.config.tls and not is_loopback(listen.host):
            log.warning(
                "remoting: listening on %s without TLS: frames are authenticated (MACed) "
                "but not encrypted, so anyone on the network path reads them; give "
                "tls_cert, tls_key and tls_ca, or listen on loopback or a Unix socket",
                listen,
            )
        self._arm_heartbeat()
        return self.address

    async def _bind_unix(self, path: str) -> socket.socket:
        """A socket bound at ``path``. A socket file already there is probed with a
        connect: answered, it belongs to a live listener (:class:`AddressInUseError`,
        never taken over); refused, it is stale (a crashed node's) and is replaced.

        asyncio's own ``create_unix_server(path)`` unlinks any socket file in its way,
        live or not: a second node on one path would silently take it over.
        """
        _check_socket_dir(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                sock.bind(path)
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                await self._clear_stale_socket(path)
                try:
                    sock.bind(path)
                except OSError as again:
                    if again.errno != errno.EADDRINUSE:
                        raise
                    # Another node bound it between our probe and our bind.
                    raise _unix_in_use(path) from again
            # Owner-only before anyone can connect: nobody can until create_unix_server
            # calls listen(), and bind() left the mode to the umask (0777 & ~umask).
            os.chmod(path, SOCKET_MODE)
            info = os.lstat(path)
            if not stat.S_ISSOCK(info.st_mode) or stat.S_IMODE(info.st_mode) != SOCKET_MODE:
                raise PermissionError(
                    errno.EPERM, "the socket file changed under us after bind(); not used", path
                )
        except BaseException:
            sock.close()
            raise
        self._bound = (info.st_dev, info.st_ino)
        return sock

    async def _clear_stale_socket(self, path: str) -> None:
        """Remove the socket file at ``path`` if no listener answers there."""
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return  # gone meanwhile: bind again
        if not stat.S_ISSOCK(mode):
            raise AddressInUseError(
                f"`listen` path {path!r} exists and is not a socket: not removing it "
                "(choose another path)"
            )
        try:
            async with asyncio.timeout(self.config.connect_timeout):
                _, writer = await asyncio.open_unix_connection(path)
        except (ConnectionRefusedError, FileNotFoundError):
            # Nobody accepts there: the file of a node that died without unlinking it.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            log.info("remoting: removed the stale socket %s (nobody listens there)", path)
            return
        except (TimeoutError, OSError) as exc:
            # Unanswered in time, or not ours to probe: never remove what may be live.
            raise AddressInUseError(
                f"`listen` path {path!r} is in use: a socket is there and probing it "
                f"failed ({exc or type(exc).__name__}); not removing it"
            ) from exc
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        raise _unix_in_use(path)

    def _unlink_own_socket(self) -> None:
        """Remove our Unix socket file, only if the file there is still the one we bound
        (never another node's that replaced it)."""
        bound, self._bound = self._bound, None
        if bound is None:
            return
        path = self.config.listen_address.path
        with contextlib.suppress(OSError):
            info = os.stat(path)
            if (info.st_dev, info.st_ino) == bound:
                os.unlink(path)

    async def stop(self) -> None:
        """Close the listener and every connection; pending asks fail, queued tells
        become dead letters."""
        self.stopping = True
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None
        if self._server is not None:
            self._server.close()
        for endpoint in list(self._endpoints.values()):
            await endpoint.close()
        for conn in list(self._connections):
            conn.close()
        for conn in list(self._strangers):
            conn.abort()
        for timer in self._in_tls.values():
            timer.cancel()
        self._in_tls.clear()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
            self._server = None
        self._unlink_own_socket()
        # Let the transports run their connection_lost callbacks.
        await asyncio.sleep(0)

    # -- the API the system uses --------------------------------------------------------

    def endpoint(self, address: NodeAddress) -> Endpoint:
        endpoint = self._endpoints.get(address)
        if endpoint is None:
            endpoint = self._endpoints[address] = Endpoint(self, address)
        return endpoint

    def encode_message(self, message: object) -> tuple[str, bytes]:
        """Encode a message to send, checking it can cross and fits in a frame.

        Raises:
            CodecError: the message cannot cross the wire, or is larger than ``max_frame``.
        """
        name, payload = self.codec.encode(message)
        # The envelope adds the path and sender strings; the whole frame is checked again
        # when it is built (still inside the sending call).
        if len(payload) > self.config.max_frame:
            raise too_big(len(payload), self.config.max_frame)
        return name, payload

    def tell(
        self,
        to: Endpoint | NodeAddress,
        path: str,
        incarnation: str,
        sender: str,
        message: tuple[str, bytes],
        info: object,
        expect: str = "",
    ) -> bool:
        """Send a message encoded by :meth:`encode_message` one way, to the system named
        ``expect`` (``""``: whichever listens there). ``False``: dead-letter it, with the
        reason the endpoint's ``refused`` gives (``unreachable`` or ``overflow``)."""
        endpoint = to if isinstance(to, Endpoint) else self.endpoint(to)
        head = self.tell_head(path, incarnation, sender, message[0])
        return self.tell_frame(endpoint, head + message[1], info, expect)

    def tell_head(self, path: str, incarnation: str, sender: str, name: str) -> bytes:
        """The bytes of a :class:`Tell` envelope up to its payload: ``head + payload`` is
        the envelope whole (the payload, a ``msgspec.Raw``, is its last field and is
        written as it is). A sender that tells one actor many times keeps its head."""
        return self._encode(Tell(path, incarnation, sender, name, _NO_PAYLOAD))

    def tell_frame(self, endpoint: Endpoint, body: bytes, info: object, expect: str = "") -> bool:
        """:meth:`tell` of an envelope built as ``tell_head(...) + payload``.

        Raises:
            CodecError: the frame is larger than ``max_frame``.
        """
        if len(body) > self._max_frame:
            raise too_big(len(body), self._max_frame)
        return endpoint.send(body, info, expect, plain=True)

    def send_tick(
        self,
        endpoint: Endpoint,
        path: str,
        incarnation: str,
        sender: str,
        message: tuple[str, bytes],
        tick: Tick | None,
        tracked: RuntimeItem | None,
        info: tuple[Undelivered, Any, Any],
        expect: str = "",
    ) -> bool:
        """Send a schedule's tick: a :class:`Scheduled` frame carrying ``tick``. With
        ``tracked`` (a ``RuntimeItem`` whose ``finished()`` matters) the frame asks for
        completion, and ``tracked.finished()`` is called exactly once: when the hosting
        node's ``Completed`` frame arrives, when the connection is lost, or when the
        frame never leaves (then ``info``'s target also makes the dead letter).
        ``False``: refused at once, as :meth:`tell` (nothing registered, ``finished()``
        not called: the caller makes the dead letter).

        Raises:
            CodecError: the frame is larger than ``max_frame``.
        """
        corr = next(self._corr) if tracked is not None else 0
        # A list where the frame declares a tuple: msgspec encodes both as one array.
        wire = None if tick is None else cast("WireTick", tick.to_wire())
        body = self._encode(
            Scheduled(path, incarnation, sender, message[0], msgspec.Raw(message[1]), wire, corr)
        )
        if len(body) > self._max_frame:
            raise too_big(len(body), self._max_frame)
        if tracked is None:
            return endpoint.send(body, info, expect)
        completions = self.completions
        waiting = completions.pending(corr, tracked, info)
        if not endpoint.request(body, corr, waiting, expect):
            return False
        if completions.add(endpoint, waiting):
            self.warn(
                "completions",
                f"remoting: over {completions.limit} tracked ticks wait for their hosting "
                "node; the oldest was counted finished without its completion frame",
            )
        return True

    def offer(
        self,
        endpoint: Endpoint,
        path: str,
        incarnation: str,
        sender: str,
        message: tuple[str, bytes],
        info: object,
        expect: str = "",
    ) -> bool | asyncio.Future[None]:
        """:meth:`tell` that waits for room (``await pid.send``): see
        :meth:`Endpoint.offer`."""
        body = self._encode(Tell(path, incarnation, sender, message[0], msgspec.Raw(message[1])))
        if len(body) > self._max_frame:
            raise too_big(len(body), self._max_frame)
        return endpoint.offer(body, info, expect)

    def ask(
        self,
        to: Endpoint | NodeAddress,
        path: str,
        incarnation: str,
        sender: str,
        message: tuple[str, bytes],
        expect: str = "",
    ) -> asyncio.Future[object]:
        """Send an encoded request; the future gets the reply value or the failure
        (:class:`RemoteActorError`, :class:`NodeUnreachableError`, ``DeadActorError``,
        :class:`BackpressureError`, ...). Cancelling the future forgets the request."""
        corr = next(self._corr)
        endpoint = to if isinstance(to, Endpoint) else self.endpoint(to)
        body = self._ask_body(corr, path, incarnation, sender, message)
        return self._request(endpoint, body, corr, f"{endpoint.address}{path}", expect)

    def ask_then(
        self,
        endpoint: Endpoint,
        path: str,
        incarnation: str,
        sender: str,
        message: tuple[str, bytes],
        answer: Callable[[object, BaseException | None], None],
        gave_up: Callable[[], bool],
        expect: str = "",
    ) -> int:
        """:meth:`ask` without a future: ``answer(value, None)`` or ``answer(None, error)``
        is called once, synchronously when the reply frame is read (no extra loop turn).
        ``gave_up()`` says whether the asker stopped waiting (timed out): such requests
        are forgotten at the next heartbeat tick, so nothing is registered per ask for
        it. Returns the correlation id, or 0 when the request could not be sent
        (``answer`` is not called; the endpoint's ``refused`` and ``why()`` say why)."""
        corr = next(self._corr)
        body = self._ask_body(corr, path, incarnation, sender, message)
        pending = PendingAsk(self.codec, answer, gave_up, f"{endpoint.address}{path}")
        return corr if endpoint.request(body, corr, pending, expect) else 0

    def _ask_body(
        self, corr: int, path: str, incarnation: str, sender: str, message: tuple[str, bytes]
    ) -> bytes:
        body = self._encode(
            Ask(corr, path, incarnation, sender, message[0], msgspec.Raw(message[1]))
        )
        if len(body) > self._max_frame:
            raise too_big(len(body), self._max_frame)
        return body

    async def lookup(
        self, address: NodeAddress, path: str, *, timeout: float, expect: str = ""
    ) -> str:
        """``str(pid)`` of the actor at ``path`` on that node, or ``""`` when it has none.

        Raises:
            NodeUnreachableError: the node cannot be reached, or is not the system
                ``expect`` (when given).
            BackpressureError: the send buffer to that node is full.
            TimeoutError: no answer within ``timeout`` seconds.
        """
        corr = next(self._corr)
        body = self._encode(Lookup(corr, path))
        future = self._request(self.endpoint(address), body, corr, str(address), expect)
        clock = self.clock
        timer = clock.call_at(clock.monotonic() + timeout, _cancel(future))
        try:
            found = await future
        except asyncio.CancelledError:
            if future.cancelled() and not _current_task_cancelling():
                raise TimeoutError(
                    f"node {address} did not answer a lookup of {path!r} within {timeout} s"
                ) from None
            raise
        finally:
            timer.cancel()
        assert isinstance(found, str)
        return found

    def _request(
        self, endpoint: Endpoint, body: bytes, corr: int, what: str, expect: str = ""
    ) -> asyncio.Future[object]:
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()

        def answer(result: Envelope | BaseException) -> None:
            if future.done():
                return
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                self._settle(future, result, what)

        if not endpoint.request(body, corr, answer, expect):
            future.set_exception(refusal(endpoint, expect, f"cannot send to {what}"))
            return future
        future.add_done_callback(lambda f: endpoint.forget(corr) if f.cancelled() else None)
        return future

    def _settle(self, future: asyncio.Future[object], answer: Envelope, what: str) -> None:
        try:
            future.set_result(outcome(self.codec, answer, what))
        except Exception as exc:
            future.set_exception(exc)

    def metrics(self) -> RemoteMetrics:
        c = self.counters
        return RemoteMetrics(
            frames_in=c.frames_in,
            frames_out=c.frames_out,
            bytes_in=c.bytes_in,
            bytes_out=c.bytes_out,
            connections=len(self._connections),
            reconnects=c.reconnects,
            auth_failures=c.auth_failures,
            protocol_errors=c.protocol_errors,
            undecodable=c.undecodable,
            unreachable=c.unreachable,
            overflow=c.overflow,
            not_found=c.not_found,
            read_pauses=c.read_pauses,
            held_lost=c.held_lost,
            mac_failures=c.mac_failures,
            handshakes_refused=c.handshakes_refused,
        )

    # -- connections --------------------------------------------------------------------

    async def dial(self, address: NodeAddress) -> Connection:
        """Connect and authenticate to ``address``.

        Raises:
            OSError, ConnectionError, TimeoutError: cannot connect, or the handshake failed
                or did not finish within ``connect_timeout``.
        """
        loop = asyncio.get_running_loop()
        host = str(address)  # the peer in logs and errors: tcp://host:port, unix:///path

        def factory() -> Connection:
            return Connection(self, dialer=True, host=host, dialled=host)

        connect: Any
        if address.kind == "unix":
            connect = loop.create_unix_connection(
                factory,
                address.path,
                ssl=self._client_ssl,
                server_hostname="tocsin" if self._client_ssl else None,
            )
        else:
            connect = loop.create_connection(
                factory,
                address.host,
                address.port,
                ssl=self._client_ssl,
                server_hostname=address.host if self._client_ssl else None,
            )
        task = loop.create_task(connect)
        clock = self.clock
        timer = clock.call_at(clock.monotonic() + self.config.connect_timeout, _cancel(task))
        try:
            _, conn = await task
        except asyncio.CancelledError:
            if task.cancelled() and not _current_task_cancelling():
                raise TimeoutError(f"dialling {address} took over the connect timeout") from None
            raise
        finally:
            timer.cancel()
        await conn.ready  # the connection's own timer bounds the handshake
        assert isinstance(conn, Connection)
        return conn

    def _tls_started(self, conn: Connection) -> None:
        clock = self.clock
        deadline = clock.monotonic() + self.config.connect_timeout + 1.0
        self._in_tls[conn] = clock.call_at(deadline, lambda: self._tls_unfinished(conn))

    def _tls_unfinished(self, conn: Connection) -> None:
        """An inbound TLS handshake failed or never finished: asyncio dropped the
        connection without telling its protocol, whose peer is unknown here."""
        if self._in_tls.pop(conn, None) is None:
            return
        self.counters.auth_failures += 1
        self.warn(
            "tls",
            "remoting: an inbound TLS handshake failed or did not finish within "
            f"connect_timeout ({self.config.connect_timeout:g} s): a peer without a "
            "certificate of this deployment's CA, or not speaking TLS (counted in "
            "auth_failures)",
        )

    def admit(self, conn: Connection) -> bool:
        """A stranger connected: admitted while fewer than ``max_pending_handshakes``
        are in their handshake; else refused (counted in ``handshakes_refused``, logged
        at most once a minute per peer host)."""
        timer = self._in_tls.pop(conn, None)
        if timer is not None:
            timer.cancel()  # its TLS handshake finished
        if self.stopping or len(self._strangers) >= self.config.max_pending_handshakes:
            self.counters.handshakes_refused += 1
            self.warn(
                f"refused:{conn.log_key}",
                f"remoting: refused a connection from {conn.host}: "
                f"{len(self._strangers)} connections are in their handshake already "
                f"(max_pending_handshakes={self.config.max_pending_handshakes})",
            )
            return False
        self._strangers.add(conn)
        return True

    def authenticated(self, conn: Connection) -> None:
        """An admitted stranger proved the secret, or closed: its slot is free."""
        self._strangers.discard(conn)

    def answers_to(self, dialled: str) -> bool:
        """Whether ``dialled`` (the address a dialer says it connected to) is one this
        node listens at: its advertised address, its listen address with the real port,
        or, listening on loopback, another loopback name of that port. A dialer that
        reached this node at another address came through something in between."""
        if dialled in self._own:
            return True
        try:
            address = NodeAddress.parse(dialled, param="dialled")
        except ValueError:
            return False
        return str(address) in self._own

    def connection_ready(self, conn: Connection) -> bool:
        """The peer's Hello arrived (naming what its handshake proved): the connection
        serves. Nothing is attached by the name it gives: an endpoint sends only on the
        connection it dialled itself (``Endpoint.adopt``)."""
        assert conn.peer is not None
        try:
            _, address = _peer_node(conn.peer.address)
        except ValueError:
            conn.abort()
            self.counters.protocol_errors += 1
            return False
        self._connections.add(conn)
        conn.identified(str(address))
        return True

    def connection_lost(self, conn: Connection, exc: Exception | None) -> None:
        self._connections.discard(conn)
        owners, pending = conn.release()
        for endpoint in owners:
            endpoint.lost(conn)
        for callback in pending.values():
            callback(NodeUnreachableError(f"lost the connection to {conn.host}"))

    def warn(self, key: str, text: str) -> None:
        """Log a connection-level problem at most once per :data:`LOG_EVERY` seconds per
        ``key`` (a kind and a peer host); the counters keep counting every one, and the
        next line says how many were not logged."""
        now = self.clock.monotonic()
        logged = self._logged
        seen = logged.get(key)
        if seen is not None and now - seen[0] < LOG_EVERY:
            logged[key] = (seen[0], seen[1] + 1)
            return
        if seen is None and len(logged) >= _LOG_KEYS:
            del logged[next(iter(logged))]  # the oldest peer: a flood cannot grow this
        logged[key] = (now, 0)
        if seen is not None and seen[1]:
            text += f" (and {seen[1]} more like it since the last report)"
        log.warning(text)

    # -- inbound ------------------------------------------------------------------------

    def encode(self, envelope: Envelope) -> bytes:
        return self._encode(envelope)

    def dispatch(self, conn: Connection, envelope: Envelope) -> asyncio.Future[None] | None:
        """One envelope from ``conn`` (after its Hello); a future while the actor it is
        for has no room (``conn`` reads nothing more until it is done)."""
        kind = type(envelope)
        if kind is Tell:
            assert isinstance(envelope, Tell)
            return self.tell_in(conn, envelope)
        if kind is Ask:
            assert isinstance(envelope, Ask)
            reply = RemoteReply(self, conn, envelope.corr)
            try:
                message = self.codec.decode(envelope.name, envelope.payload)
            except CodecError as exc:
                self._undecodable(conn, exc)
                conn.send(self._encode(Fail(envelope.corr, "codec", "CodecError", str(exc))))
                return None
            return self.host.deliver_ask(
                envelope.path, envelope.incarnation, envelope.sender, message, reply
            )
        if kind is Reply or kind is Fail or kind is Found or kind is Completed:
            callback = conn.answer(envelope.corr)  # type: ignore[union-attr]
            if callback is not None:
                callback(envelope)
        elif kind is Scheduled:
            assert isinstance(envelope, Scheduled)
            return self._scheduled(conn, envelope)
        elif kind is Lookup:
            assert isinstance(envelope, Lookup)
            conn.send(self._encode(Found(envelope.corr, self.host.resolve(envelope.path))))
        else:  # a second Hello
            conn.abort()
            self.counters.protocol_errors += 1
        return None

    def tell_in(self, conn: Connection, envelope: Tell) -> asyncio.Future[None] | None:
        """A :class:`Tell` from ``conn``: decode its message and hand it to the host (a
        future while the actor it is for has no room, as :meth:`dispatch`). The
        connection calls it directly for every Tell: a flood's one frame kind."""
        name = envelope.name
        decoder = self._unguarded.get(name)
        try:
            if decoder is not None:
                try:
                    message = decoder.decode(envelope.payload)
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    raise self.codec.decode_error(name, exc) from exc
            else:
                message = self.codec.decode(name, envelope.payload)
        except CodecError as exc:
            self._undecodable(conn, exc)
            return None
        return self._deliver_tell(envelope.path, envelope.incarnation, envelope.sender, message)

    def _scheduled(self, conn: Connection, envelope: Scheduled) -> asyncio.Future[None] | None:
        """A tick from the peer: queued as an :class:`InboundTick`, so ``ctx.tick`` is
        the sender's and, when asked, a ``Completed`` frame goes back once it is over.
        A future while the actor it is for has no room, as for a tell."""
        corr = envelope.corr
        try:
            message = self.codec.decode(envelope.name, envelope.payload)
        except CodecError as exc:
            self._undecodable(conn, exc)
            if corr:
                conn.send(self._encode(Completed(corr, False)), force=True)  # never runs
            return None
        # The Tick is rebuilt (and checked) only if the handler reads ctx.tick.
        item = InboundTick(message, envelope.tick, conn, corr, self, conn.log_key)
        return self.host.deliver_tell(envelope.path, envelope.incarnation, envelope.sender, item)

    def bad_tick(self, peer: str, wire: object, error: Exception) -> None:
        """A tick whose values ``Tick.from_wire`` refused (the frame decoder checked its
        shape): counted as undecodable, logged; the delivery goes on without it."""
        self._count_undecodable(peer, f"remoting: from {peer}: bad tick {wire!r}: {error}")

    def _undecodable(self, conn: Connection, exc: CodecError) -> None:
        if isinstance(exc, CostlyDecodeError):
            # Built to cost quadratic time: an attack, so the sender loses its connection
            # as for a malformed frame (and must reconnect, authenticate, to try again).
            self.counters.undecodable += 1
            self.counters.protocol_errors += 1
            conn.abort()
            self.warn(
                f"protocol:{conn.log_key}",
                f"remoting: closed the connection with {conn.host}: {exc}",
            )
            return
        self._count_undecodable(conn.log_key, f"remoting: from {conn.host}: {exc}")

    def _count_undecodable(self, peer: str, text: str) -> None:
        self.counters.undecodable += 1
        self.warn(f"undecodable:{peer}", text)

    # -- heartbeats ---------------------------------------------------------------------

    def _arm_heartbeat(self) -> None:
        clock = self.clock
        self._heartbeat = clock.call_at(
            clock.monotonic() + self.config.heartbeat, self._heartbeat_tick
        )

    def _heartbeat_tick(self) -> None:
        self._heartbeat = None
        if self.stopping:
            return
        for conn in list(self._connections):
            if conn.closed:
                continue
            if conn.waiting:
                conn.forget_if(gave_up)
            if not conn.tick(SILENT_TICKS):
                self.warn(
                    f"silent:{conn.log_key}",
                    f"remoting: {conn.host} went silent (nothing received for "
                    f"{SILENT_TICKS} heartbeats): closed; the tells it did not confirm are "
                    "dead letters there",
                )
                conn.let_go()
        self._arm_heartbeat()


def refusal(endpoint: Endpoint, expect: str, what: str) -> Exception:
    """The error of a request ``endpoint`` refused (its ``refused`` says why)."""
    if endpoint.refused is DeadLetterReason.OVERFLOW:
        return BackpressureError(f"{what}: {endpoint.why(expect)}")
    return NodeUnreachableError(
        f"{what}: node {endpoint.address} is unreachable: {endpoint.why(expect)}"
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an IP or name as given to ``listen``) is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_LOOPBACK_NAMES: Final = ("localhost", "127.0.0.1", "::1")
_EVERY_INTERFACE: Final = frozenset({"0.0.0.0", "::", "*"})


def own_addresses(config: Remoting, real: NodeAddress, port: int = 0) -> frozenset[str]:
    """The addresses a node listening per ``config`` answers a dialer at, as
    ``str(NodeAddress)``: its dial address ``real``, its listen address with the port it
    bound (``port``; 0: the one in ``listen``), and the loopback names of that port when
    it listens on loopback or on every interface."""
    own = {str(real), str(config.listen_address)}
    listen = config.listen_address
    if listen.kind == "tcp":
        port = port or listen.port
        if port:
            own.add(str(NodeAddress("tcp", host=listen.host, port=port)))
        # A listener on loopback, or on every interface, is reached on this port under
        # any loopback name (nothing else can bind that port on loopback meanwhile).
        if (is_loopback(listen.host) or listen.host in _EVERY_INTERFACE) and port:
            for name in _LOOPBACK_NAMES:
                own.add(str(NodeAddress("tcp", host=name, port=port)))
    return frozenset(own)


def _check_socket_dir(path: str) -> None:
    """Refuse to listen in a directory anyone may write into without the sticky bit:
    another user could remove or replace the socket file there. A sticky one (``/tmp``)
    lets only the file's owner remove or rename it; another user can at most take the
    path first, and the bind then fails as "in use", never connecting us to theirs."""
    directory = os.path.dirname(path) or "."
    mode = os.stat(directory).st_mode
    if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
        raise PermissionError(
            errno.EPERM,
            f"`listen` directory {directory!r} has mode {stat.S_IMODE(mode):04o}: any user "
            "can create and replace files in it; put the socket in a directory only you "
            "can write to (e.g. one made with mode 0700), or a sticky one such as /tmp",
            path,
        )


def _unix_in_use(path: str) -> AddressInUseError:
    return AddressInUseError(
        f"`listen` path {path!r} is in use by a live listener (another node? give each "
        "node its own socket path); it was left alone"
    )


def _peer_node(address: str) -> tuple[str, NodeAddress]:
    return parse_system_address(address)


def _cancel(future: asyncio.Future[Any]) -> Callable[[], None]:
    def cancel() -> None:
        future.cancel()

    return cancel


def _current_task_cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
