# SPDX-License-Identifier: Apache-2.0
"""Starting and stopping a console server: :func:`serve` (a running system) and
:func:`serve_store` (the stores alone)."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import secrets
import ssl as _ssl
from typing import TYPE_CHECKING, Final, final
from urllib.parse import quote

from aiohttp import web

from .._resource import AsyncResource
from ._app import MetricsEndpoint, build_app
from ._auth import SESSION_TTL, Sessions
from ._data import ConsoleSource, Members, StoreSource, SystemSource
from ._feed import DEFAULT_INTERVAL
from ._guard import KEEPALIVE_TIMEOUT, MAX_CONNECTIONS, Guard

if TYPE_CHECKING:
    from ..stores import Store
    from ..system import ActorSystem

__all__ = [
    "DEFAULT_BIND",
    "MIN_TOKEN_LENGTH",
    "SESSION_TTL",
    "Console",
    "check_options",
    "parse_bind",
    "serve",
    "serve_store",
]

#: Where the console listens unless told otherwise: loopback only.
DEFAULT_BIND: Final = "127.0.0.1:8765"
#: Shortest token accepted.
MIN_TOKEN_LENGTH: Final = 16

_log = logging.getLogger("tocsin.console")


def parse_bind(bind: str) -> tuple[str, int]:
    """``"host:port"`` (``"[::1]:8765"`` for IPv6) as ``(host, port)``.

    Raises:
        ValueError: not of that form, or the port is not 0..65535.
    """
    if not isinstance(bind, str):
        raise TypeError(f"`bind` must be a str like '127.0.0.1:8765', got {bind!r}")
    host, sep, port_text = bind.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(
            f"`bind` must be 'host:port' with a port in 0..65535 (e.g. '127.0.0.1:8765', "
            f"'[::1]:8765', '0.0.0.0:8765'), got {bind!r}"
        )
    return host, int(port_text)


def check_options(bind: str, token: str | None, no_token: bool = False) -> tuple[str, int]:
    """Check a bind and its token as :func:`serve` does (without serving); return
    ``(host, port)``. ``ActorSystem(console=..., console_token=...)`` calls it at
    construction, so a bad option fails there, not at ``start()``.

    Raises:
        ValueError: a bad ``bind``, a short token, ``no_token`` with a token or with a
            bind that is not loopback.
    """
    host, port = parse_bind(bind)
    if token is not None and (not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH):
        given = f"{len(token)} characters" if isinstance(token, str) else repr(token)
        raise ValueError(
            f"`token` must be a str of at least {MIN_TOKEN_LENGTH} characters "
            f"(e.g. secrets.token_urlsafe()), got {given}"
        )
    if not isinstance(no_token, bool):
        raise TypeError(f"`no_token` must be a bool, got {no_token!r}")
    if no_token and token is not None:
        raise ValueError("`no_token=True` and a `token` were both given: choose one")
    if no_token and not is_loopback(host):
        raise ValueError(
            f"serving without a token (`no_token=True`, `--no-token`) is for loopback "
            f"binds only, got {bind!r}: anyone who can reach it could read the page and "
            "retry or discard tasks; bind to 127.0.0.1 or ::1, or keep a token (one is "
            "made for you when none is given)"
        )
    return host, port


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@final
class _GuardedSite(web.TCPSite):
    """aiohttp's TCP site with the console's gate (``_guard.py``) around every
    connection: the cap and the request deadlines hold before aiohttp reads a byte."""

    def __init__(
        self,
        runner: web.AppRunner,
        host: str,
        port: int,
        guard: Guard,
        ssl_context: _ssl.SSLContext | None,
    ) -> None:
        super().__init__(runner, host, port, ssl_context=ssl_context)
        self._guard = guard

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with its runner
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            self._guard.wrap(server),
            self._host,
            self._port,
            ssl=self._ssl_context,
            ssl_handshake_timeout=self._guard.header_timeout if self._ssl_context else None,
            backlog=self._backlog,
        )


@final
class Console(AsyncResource):
    """A running console server. Close it with :meth:`close` or ``async with``.

    Not constructed directly: use :func:`serve` or :func:`serve_store`.
    """

    def __init__(
        self,
        runner: web.AppRunner,
        app: web.Application,
        host: str,
        port: int,
        token: str | None,
        guard: Guard,
        tls: bool = False,
    ) -> None:
        self._runner = runner
        self.app = app
        self.host = host
        self.port = port
        #: The token every request needs (the one given, or the one made at start);
        #: None only with ``no_token=True``.
        self.token = token
        #: The connection gate: its cap, deadlines and counts (``guard.stats()``).
        self.guard = guard
        #: Whether it serves HTTPS (``ssl=`` given).
        self.tls = tls

    @property
    def url(self) -> str:
        """The page's address, without the token (``http://127.0.0.1:8765/``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/"

    @property
    def login_url(self) -> str:
        """The address to open in a browser: :attr:`url` carrying the token
        (``http://127.0.0.1:8765/?token=...``), which the page swaps for a session cookie
        at once. A secret, like the token; :attr:`url` without a token."""
        if self.token is None:
            return self.url
        return f"{self.url}?token={quote(self.token, safe='')}"  # a token given may hold "&"

    async def close(self) -> None:
        """Stop serving: open pages' event streams end; idempotent."""
        await self._runner.cleanup()

    # `async with await serve(...) as console:` closes it on the way out (AsyncResource;
    # it serves from the start, so entering does nothing).
    async def _exit(self) -> None:
        await self.close()


async def serve(
    system: ActorSystem,
    bind: str = DEFAULT_BIND,
    token: str | None = None,
    *,
    no_token: bool = False,
    metrics: MetricsEndpoint | None = None,
    members: Members | None = None,
    interval: float = DEFAULT_INTERVAL,
    session_ttl: float = SESSION_TTL,
    ssl: _ssl.SSLContext | None = None,
    max_connections: int = MAX_CONNECTIONS,
) -> Console:
    """Serve the live console of a running ``system`` until the returned
    :class:`Console` is closed.

    Args:
        system: the system to show (started; the page says so when it stops).
        bind: ``"host:port"``; loopback by default. Port 0 picks a free port
            (see :attr:`Console.port`).
        token: asked of every request (at least :data:`MIN_TOKEN_LENGTH` characters).
            None (the default): a random one is made for this server
            (:func:`secrets.token_urlsafe`), in :attr:`Console.token`; open
            :attr:`Console.login_url`, which carries it (it is also logged, at INFO on
            ``tocsin.console``).
        no_token: serve without any token: loopback binds only, and then any user of
            this machine can read the page and retry or discard tasks.
        metrics: serves ``/metrics``, e.g.
            ``tocsin.metrics.prometheus_endpoint(tocsin.metrics.Metrics.of(system))``.
        members: an async callable listing cluster members (name, address, joined,
            last_seen), shown when given.
        interval: seconds between live updates of open pages.
        session_ttl: seconds a browser stays signed in after it swapped the token for a
            session cookie (default :data:`SESSION_TTL`, 12 hours).
        ssl: serve HTTPS with this server context (the session cookie is then
            ``Secure``; failed handshakes are counted in ``console.guard.stats()``).
        max_connections: connections open at once; one more is closed at once and
            counted, never queued (default ``MAX_CONNECTIONS``, 100). Request heads must
            arrive within 10 s and bodies within 30 s (docs/security.md).

    Raises:
        ValueError: a bad ``bind``, a short token, ``no_token`` with a token or a bind
            that is not loopback, a bad ``interval``, ``session_ttl`` or
            ``max_connections``.
        TypeError: ``ssl`` is not an :class:`ssl.SSLContext`.
        OSError: the address is in use or cannot be bound.
    """
    source = SystemSource(system, members)
    return await _serve(
        source, bind, token, no_token, metrics, interval, session_ttl, ssl, max_connections
    )


async def serve_store(
    store: Store,
    bind: str = DEFAULT_BIND,
    token: str | None = None,
    *,
    no_token: bool = False,
    metrics: MetricsEndpoint | None = None,
    members: Members | None = None,
    interval: float = DEFAULT_INTERVAL,
    session_ttl: float = SESSION_TTL,
    ssl: _ssl.SSLContext | None = None,
    max_connections: int = MAX_CONNECTIONS,
) -> Console:
    """Serve the console from an opened durable ``store`` alone (no running system):
    durable tasks, parked tasks with retry / discard, and members when given.
    Same arguments and errors as :func:`serve`."""
    source = StoreSource(store, members)
    return await _serve(
        source, bind, token, no_token, metrics, interval, session_ttl, ssl, max_connections
    )


async def _serve(
    source: ConsoleSource,
    bind: str,
    token: str | None,
    no_token: bool,
    metrics: MetricsEndpoint | None,
    interval: float,
    session_ttl: float,
    ssl_context: _ssl.SSLContext | None = None,
    max_connections: int = MAX_CONNECTIONS,
) -> Console:
    host, port = check_options(bind, token, no_token)
    if ssl_context is not None and not isinstance(ssl_context, _ssl.SSLContext):
        raise TypeError(f"`ssl` must be an ssl.SSLContext or None, got {ssl_context!r}")
    if type(max_connections) is not int or max_connections < 1:
        raise ValueError(f"`max_connections` must be an int >= 1, got {max_connections!r}")
    if not (isinstance(interval, int | float) and 0.05 <= interval <= 3600):
        raise ValueError(f"`interval` must be between 0.05 and 3600 seconds, got {interval!r}")
    if not (isinstance(session_ttl, int | float) and 60 <= session_ttl <= 30 * 86400):
        raise ValueError(
            f"`session_ttl` must be between 60 seconds and 30 days (in seconds), "
            f"got {session_ttl!r}"
        )
    made = token is None and not no_token
    if made:
        token = secrets.token_urlsafe(32)
    # Without a token, the Host check is what keeps a hostile page out (DNS rebinding).
    allowed: set[str] | None = set() if token is None else None
    guard = Guard(max_connections=max_connections, tls=ssl_context is not None)
    sessions = Sessions(token, float(session_ttl))
    app = build_app(
        source,
        sessions=sessions,
        csrf=secrets.token_urlsafe(32),
        allowed_hosts=allowed,
        interval=float(interval),
        metrics=metrics,
        guard=guard,
        secure=ssl_context is not None,
    )
    runner = web.AppRunner(
        app,
        access_log=None,
        handle_signals=False,
        shutdown_timeout=1.0,
        keepalive_timeout=KEEPALIVE_TIMEOUT,
    )
    await runner.setup()
    site = _GuardedSite(runner, host, port, guard, ssl_context)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    actual = int(runner.addresses[0][1])  # aiohttp's public (host, port, ...) of the socket
    sessions.bind(host, actual)
    if allowed is not None:
        names = {"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host}
        allowed.update(f"{name}:{actual}" for name in names)
    console = Console(runner, app, host, actual, token, guard, tls=ssl_context is not None)
    # A token made here is logged with its URL (as Jupyter prints it): otherwise nobody
    # could sign in. A token that was given is not: it may live for months, and logs
    # travel; its owner knows it.
    if made:
        _log.info("console: serving %s (a token made for this start)", console.login_url)
    elif token is None:
        _log.info("console: serving %s without a token (no_token=True)", console.url)
    else:
        _log.info("console: serving %s (token required)", console.url)
    return console
