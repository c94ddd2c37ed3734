# SPDX-License-Identifier: Apache-2.0
"""Bounded strangers: the console's connection cap, request deadlines and their counts.

An attack review held 300 idle TCP connections to a console: aiohttp has no deadline for
a request head, so each stayed open for ever, the console and ``/metrics`` stopped
answering, and 91 MB of tracebacks were written in 40 s. Here every connection passes
one gate before aiohttp sees it:

* **A cap.** At most ``max_connections`` open at once (default
  :data:`MAX_CONNECTIONS`), of which at most :data:`MAX_PENDING` have not yet sent a
  complete request head. Past either bound a new connection takes the place of the
  *oldest* connection still waiting for its head, which is closed and counted (a client
  that sends its request at once, as a browser, curl or Prometheus does, always gets
  in; idle strangers only push each other out); when every open connection is a
  request in progress (event streams), the new one is closed at once. Never queued.
* **A head deadline.** The request head (through the blank line) must arrive within
  ``header_timeout`` seconds (default :data:`HEADER_TIMEOUT`) of the connection, or of
  the end of the previous request on a kept-alive connection once a byte of the next
  one came; else the connection is closed and counted.
* **A body deadline.** A body announced by ``Content-Length`` (or chunked) must arrive
  within ``body_timeout`` seconds (default :data:`BODY_TIMEOUT`) after its head.
* **TLS handshakes** that fail (or never finish) are counted.
* **Logs.** Each refusal is logged at WARNING on ``tocsin.console`` at most once a
  minute per peer address (with how many were refused meanwhile), never with a
  traceback.

Idle kept-alive connections between requests are aiohttp's (its keep-alive timeout,
which the console sets to :data:`KEEPALIVE_TIMEOUT`); an open event stream is a response
in progress and is not timed. Deadlines run on the console's own clock
(:class:`~tocsin.SystemClock`; tests swap in a :class:`~tocsin.ManualClock`).

Prior art: nginx's ``client_header_timeout`` / ``client_body_timeout`` and
``limit_conn`` (refuse, do not queue), and OpenSSH's ``MaxStartups``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, cast, final

from ..clock import Clock, SystemClock, TimerHandle

__all__ = [
    "BODY_TIMEOUT",
    "HEADER_TIMEOUT",
    "KEEPALIVE_TIMEOUT",
    "LOG_EVERY",
    "MAX_CONNECTIONS",
    "MAX_PENDING",
    "MAX_WRONG_TOKENS",
    "Guard",
    "GuardStats",
]

#: Connections open at once, by default (a browser opens about 6 per page).
MAX_CONNECTIONS: Final = 100
#: Connections open at once that have not sent a complete request head yet.
MAX_PENDING: Final = 64
#: Seconds a request head may take to arrive.
HEADER_TIMEOUT: Final = 10.0
#: Seconds a request body may take to arrive after its head.
BODY_TIMEOUT: Final = 30.0
#: Seconds aiohttp keeps an idle kept-alive connection between two requests.
KEEPALIVE_TIMEOUT: Final = 15.0
#: Seconds between two log lines about one peer.
LOG_EVERY: Final = 60.0
#: Wrong tokens one peer may give per minute; beyond, it gets HTTP 429 until the minute
#: is over, whatever it sends (a 43-character token cannot be guessed, but a short one
#: given by hand could be, and every try is logged work).
MAX_WRONG_TOKENS: Final = 10

_log = logging.getLogger("tocsin.console")
_LENGTH: Final = re.compile(rb"\r\ncontent-length:[ \t]*(\d{1,12})[ \t]*\r\n", re.IGNORECASE)
_CHUNKED: Final = re.compile(rb"\r\ntransfer-encoding:[^\r\n]*chunked", re.IGNORECASE)
#: A head larger than this never completes: aiohttp refuses it (8 KiB lines, 32 KiB
#: fields); the scan for its end keeps only the last few bytes.
_END: Final = b"\r\n\r\n"


@final
@dataclass(frozen=True, slots=True)
class GuardStats:
    """What the gate counted since the console started (a snapshot)."""

    #: Connections open now.
    open: int
    #: Connections closed at once because ``max_connections`` requests were in progress.
    refused: int
    #: Connections closed, still without a request head, to make room for a new one.
    evicted: int
    #: Connections closed because a request head took longer than ``header_timeout``.
    header_timeouts: int
    #: Connections closed because a request body took longer than ``body_timeout``.
    body_timeouts: int
    #: TLS handshakes that failed or never finished.
    tls_failures: int
    #: Requests that gave a wrong token (``?token=``, the sign-in form, ``Bearer``).
    wrong_tokens: int
    #: Form posts refused for a missing or wrong CSRF token.
    wrong_csrf: int


@final
class Guard:
    """The gate of one console server: wraps aiohttp's protocol factory.

    Not constructed directly: :func:`~tocsin.console.serve` makes one per server
    (:attr:`~tocsin.console.Console.guard`).
    """

    def __init__(
        self,
        *,
        max_connections: int = MAX_CONNECTIONS,
        header_timeout: float = HEADER_TIMEOUT,
        body_timeout: float = BODY_TIMEOUT,
        tls: bool = False,
    ) -> None:
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.tls = tls
        #: Real time for deadlines and log spacing; a test may swap in a ManualClock.
        self.clock: Clock = SystemClock()
        self._open = 0
        self._counts = dict.fromkeys(_WHY, 0)
        #: Open connections still waiting for a request head, oldest first.
        self._pending: dict[_Gate, None] = {}
        # peer -> (when it was last logged, refusals since then)
        self._logged: dict[str, tuple[float, int]] = {}
        # peer -> (start of its minute, wrong tokens in it)
        self._wrong: dict[str, tuple[float, int]] = {}

    def token_blocked(self, peer: str) -> bool:
        """Whether ``peer`` gave :data:`MAX_WRONG_TOKENS` wrong tokens this minute."""
        start, count = self._wrong.get(peer, (0.0, 0))
        if self.clock.monotonic() - start >= LOG_EVERY:
            return False
        return count >= MAX_WRONG_TOKENS

    def wrong_token(self, peer: str) -> None:
        """Count and log (at most once a minute per peer) a wrong token from ``peer``."""
        now = self.clock.monotonic()
        start, count = self._wrong.get(peer, (now, 0))
        if now - start >= LOG_EVERY:
            start, count = now, 0
        if len(self._wrong) > 4096:
            self._wrong = {p: v for p, v in self._wrong.items() if now - v[0] < LOG_EVERY}
        self._wrong[peer] = (start, count + 1)
        self.refuse(peer, "token")

    def stats(self) -> GuardStats:
        """A snapshot of the counts."""
        c = self._counts
        return GuardStats(
            self._open,
            c["refused"],
            c["evicted"],
            c["header"],
            c["body"],
            c["tls"],
            c["token"],
            c["csrf"],
        )

    def wrap(self, inner: Callable[[], asyncio.BaseProtocol]) -> Callable[[], asyncio.Protocol]:
        """A protocol factory for ``loop.create_server`` around aiohttp's ``inner``."""

        def factory() -> asyncio.Protocol:
            if self._open >= self.max_connections or len(self._pending) >= MAX_PENDING:
                oldest = next(iter(self._pending), None)
                if oldest is None:
                    return _Refused(self)
                oldest.evict()
            self._open += 1
            gate = _Gate(self, inner())
            if self.tls:
                # The handshake runs before connection_made: a gate dropped without it
                # is a handshake that failed or was abandoned.
                weakref.finalize(gate, self._dropped, gate.state)
            return gate

        return factory

    def refuse(self, peer: str, why: str) -> None:
        """Count a refusal (``why``: refused, header, body, tls, token) and log it at most
        once a minute per peer."""
        self._counts[why] += 1
        now = self.clock.monotonic()
        last, missed = self._logged.get(peer, (-LOG_EVERY, 0))
        if now - last < LOG_EVERY:
            self._logged[peer] = (last, missed + 1)
            return
        if len(self._logged) > 4096:  # many peers: forget the quiet ones
            self._logged = {p: v for p, v in self._logged.items() if now - v[0] < LOG_EVERY}
        self._logged[peer] = (now, 0)
        more = f" ({missed} more from it in the last minute)" if missed else ""
        _log.warning("console: %s from %s%s", _WHY[why].format(guard=self), peer, more)

    def closed(self, gate: _Gate) -> None:
        """A gate's connection closed (called by the gate only)."""
        self._open -= 1
        self._pending.pop(gate, None)

    def waiting(self, gate: _Gate, waiting: bool) -> None:
        """A gate's connection waits for a request head, or no longer (the gate only)."""
        if waiting:
            self._pending[gate] = None
        else:
            self._pending.pop(gate, None)

    def _dropped(self, state: list[bool]) -> None:
        made, lost = state
        if not made:
            self._open -= 1
            self.refuse("a TLS client", "tls")
        elif not lost:  # pragma: no cover - connection_lost always runs first
            self._open -= 1


_WHY: Final = {
    "refused": "connection refused: {guard.max_connections} requests already in progress",
    "evicted": "connection closed without a request head, to make room for a new one",
    "header": "connection closed: no complete request head within {guard.header_timeout:g} s",
    "body": "connection closed: request body not complete within {guard.body_timeout:g} s",
    "tls": "TLS handshake failed or was abandoned",
    "token": "wrong console token",
    "csrf": "form refused: missing or wrong CSRF token",
}


def _peer(transport: asyncio.BaseTransport) -> str:
    name = transport.get_extra_info("peername")
    if isinstance(name, tuple) and name:
        return str(name[0])
    return "a local client" if name is None or not name else str(name)


@final
class _Refused(asyncio.Protocol):
    """Closes the connection it is given at once: never queued behind the cap."""

    def __init__(self, guard: Guard) -> None:
        self._guard = guard

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._guard.refuse(_peer(transport), "refused")
        cast(asyncio.Transport, transport).abort()


@final
class _Gate(asyncio.Protocol):
    """aiohttp's protocol behind deadlines on each request's head and body.

    Forwards every protocol call to the inner protocol; watches the bytes only for the
    end of a head (a search over the new bytes and the last three) and the body length.
    """

    def __init__(self, guard: Guard, inner: asyncio.BaseProtocol) -> None:
        self._guard = guard
        self._inner: Any = inner
        self._transport: asyncio.Transport | None = None
        self._timer: TimerHandle | None = None
        self._tail = b""
        self._head: bytearray | None = bytearray()  # None: reading a body or idle
        self._body_left = 0  # bytes of body still expected (-1: chunked, until 0\r\n\r\n)
        #: [connection_made was called, connection_lost was called] (for the finalizer).
        self.state = [False, False]

    # -- the deadlines ---------------------------------------------------------------

    def _arm(self, seconds: float, why: str) -> None:
        self._cancel()
        clock = self._guard.clock
        self._timer = clock.call_at(clock.monotonic() + seconds, lambda: self._expire(why))

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def evict(self) -> None:
        """Close this connection (still without a request head) for a newer one."""
        self._guard.waiting(self, False)
        self._expire("evicted")

    def _expire(self, why: str) -> None:
        self._timer = None
        transport = self._transport
        if transport is not None and not transport.is_closing():
            self._guard.refuse(_peer(transport), why)
            transport.abort()

    # -- protocol calls ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.state[0] = True
        self._transport = cast(asyncio.Transport, transport)  # a stream server's
        self._guard.waiting(self, True)
        self._arm(self._guard.header_timeout, "header")
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._watch(data)
        self._inner.data_received(data)

    def _watch(self, data: bytes) -> None:
        if self._head is None and self._body_left == 0:
            # Idle between requests (aiohttp's keep-alive times that): a new head begins.
            self._head = bytearray()
            self._tail = b""
            self._arm(self._guard.header_timeout, "header")
        if self._head is not None:
            seen = self._tail + data
            end = seen.find(_END)
            if end < 0:
                if len(self._head) < 65536:
                    self._head += data
                self._tail = seen[-3:]
                return
            cut = end + len(_END) - len(self._tail)
            self._head += data[:cut]
            head, rest = bytes(self._head), data[cut:]
            self._head = None
            self._tail = b""
            self._guard.waiting(self, False)
            length = _LENGTH.search(head)
            if length is not None and int(length[1]) > 0:
                self._body_left = int(length[1])
            elif _CHUNKED.search(head):
                self._body_left = -1
            else:
                self._cancel()
                if rest:
                    self._watch(rest)
                return
            self._arm(self._guard.body_timeout, "body")
            data = rest
            if not data:
                return
        # Reading a body.
        if self._body_left > 0:
            taken = min(len(data), self._body_left)
            self._body_left -= taken
            rest = data[taken:]
        else:
            seen = self._tail + data
            if seen.find(b"0\r\n\r\n") < 0:
                self._tail = seen[-4:]
                return
            self._body_left, rest = 0, b""
        if self._body_left == 0:
            self._cancel()
            self._tail = b""
            if rest:
                self._watch(rest)

    def eof_received(self) -> bool | None:
        result: bool | None = self._inner.eof_received()
        return result

    def connection_lost(self, exc: Exception | None) -> None:
        self.state[1] = True
        self._cancel()
        self._transport = None
        self._guard.closed(self)
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()
