# SPDX-License-Identifier: Apache-2.0
r"""The PostgreSQL session layer of the store and the coordinator, and the store's one
connection outside its pool (ownership and change notices).

Opening and failing the tocsin way, for both (the coordinator reaches these through
:mod:`tocsin.stores._spi`): :func:`open_pool` connects with ``search_path`` set to the
schema and a bound on connecting (``connect_timeout``), and words a server that never
answers by its name and the bound (asyncpg's ``TimeoutError`` says nothing);
:func:`create_schema` runs an idempotent schema script under an advisory lock;
:func:`error_wrapper` is the one place asyncpg and network errors become a tocsin error
(``StoreError``, ``CoordinatorError``) saying what failed.

The dedicated connection. A session advisory lock belongs to the session that took it,
so it cannot live on pooled connections (they come and go); ``LISTEN`` is also per
session. One dedicated connection therefore holds the ownership lock (``open(exclusive=True)``, see
:mod:`tocsin.stores._ownership`) and listens for ``announce`` (:data:`CHANGES_CHANNEL`,
the payload naming the schema). The server drops the lock when the session ends, however
it ends, so a dead holder never blocks. If the connection is lost while the store is
open (the server restarted), the session heals by itself (issue 20): it connects again
with capped backoff, takes the ownership lock again (an ERROR if another system took the
store meanwhile: nothing is lost silently), ``LISTEN``\ s again and tells the watchers
once, since changes made while it was away were not announced to it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final, final

from .._idle import real_io
from ..errors import TocsinError
from ._dsn import no_answer
from ._ownership import Holder, ownership_error

__all__ = [
    "CHANGES_CHANNEL",
    "OWNER_LOCK_CLASS",
    "ErrorWrapper",
    "Session",
    "create_schema",
    "driver_errors",
    "error_wrapper",
    "open_pool",
    "unreachable_errors",
]

#: ``errors(what)``: a context in which asyncpg and network errors become a tocsin error
#: saying that ``what`` failed.
ErrorWrapper = Callable[[str], AbstractAsyncContextManager[None]]


@functools.cache
def driver_errors() -> tuple[type[BaseException], ...]:
    """The errors of asyncpg, the network and a timeout that a tocsin error wraps (every
    asyncpg client-side error included: ``InternalClientError`` comes mid-restart)."""
    import asyncpg  # here, not at import: postgres.py says how to install it

    return (
        asyncpg.PostgresError,
        asyncpg.InterfaceError,
        asyncpg.InternalClientError,
        OSError,
        TimeoutError,
    )


@functools.cache
def unreachable_errors() -> tuple[type[BaseException], ...]:
    """The driver errors that mean the server was not reached or is going away (as
    opposed to a statement it refused)."""
    import asyncpg

    return (
        asyncpg.InterfaceError,
        asyncpg.InternalClientError,
        asyncpg.PostgresConnectionError,
        asyncpg.exceptions.OperatorInterventionError,
        OSError,
    )


def error_wrapper(
    label: str,
    error: type[TocsinError],
    *,
    bound: float | None = None,
    unavailable: type[TocsinError] | None = None,
) -> ErrorWrapper:
    """The ``errors(what)`` of one client: inside it, a driver error becomes
    ``error(f"{label}: {what} failed: {exc}")``, raised ``from`` it.

    ``label`` names the client and its redacted URL (``"PostgreSQL coordinator
    postgresql://db/x"``); no password is ever in it. With ``bound``, the block (a pool
    acquire and its statements) must finish within that many seconds (issue 20: a
    frozen server held calls for ever); with ``unavailable``, a timeout and the errors of
    :func:`unreachable_errors` raise that type instead of ``error``.
    """
    down = error if unavailable is None else unavailable

    @asynccontextmanager
    async def errors(what: str) -> AsyncIterator[None]:
        try:
            with real_io():
                async with asyncio.timeout(bound):
                    yield
        except TimeoutError as exc:
            if bound is None:
                raise down(f"{label}: {what} failed: {exc}") from exc
            raise down(
                f"{label}: {what} failed: no answer within {bound:g} s (server down or frozen?)"
            ) from exc
        except unreachable_errors() as exc:
            raise down(f"{label}: {what} failed: {exc}") from exc
        except driver_errors() as exc:
            raise error(f"{label}: {what} failed: {exc}") from exc

    return errors


async def open_pool(
    dsn: str,
    *,
    schema: str,
    connect_timeout: float,
    label: str,
    error: type[TocsinError],
    **options: Any,
) -> Any:
    """An asyncpg pool on ``dsn`` whose sessions use ``schema`` (``search_path``), each
    connection bounded by ``connect_timeout`` seconds; ``options`` go to
    ``asyncpg.create_pool`` (``min_size``, ``max_size``, ``command_timeout``).

    Raises:
        TocsinError: ``error`` saying ``open failed``: with the server's name and the bound
            when it never answered, with the driver's message otherwise.
    """
    import asyncpg

    try:
        return await asyncpg.create_pool(
            dsn,
            timeout=connect_timeout,
            server_settings={"search_path": schema},
            **options,
        )
    except TimeoutError as exc:  # asyncpg's says nothing at all
        raise error(f"{label}: open failed: {no_answer(dsn, connect_timeout)}") from exc
    except driver_errors() as exc:
        raise error(f"{label}: open failed: {exc}") from exc


async def create_schema(
    pool: Any,
    *,
    schema: str,
    lock_key: int,
    script: str,
    errors: ErrorWrapper,
    migrate: Callable[[Any], Awaitable[None]] | None = None,
) -> None:
    """Create ``schema`` and run ``script`` (idempotent) in it, then ``migrate(conn)``,
    in one transaction under the transaction advisory lock ``lock_key``: clients opening
    a new database at once create it one after the other."""
    async with errors("create schema"), pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", lock_key)
        await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        await conn.execute(script)
        if migrate is not None:
            await migrate(conn)


#: First key of the session advisory lock that marks the owner of a schema's tables
#: ("tocs"); the second is the CRC-32 of the schema name, so schemas are owned apart.
OWNER_LOCK_CLASS: Final = 0x746F6373
#: The ``NOTIFY`` channel of ``PostgresStore.announce``; the payload is the schema.
CHANGES_CHANNEL: Final = "tocsin_changes"
#: The longest wait between two attempts to connect the session again, seconds.
_RETRY_CAP: Final = 1.0

_log = logging.getLogger("tocsin.stores.postgres")


@final
class Session:
    """The dedicated connection of one store, opened on first use (internal)."""

    def __init__(
        self,
        dsn: str,
        schema: str,
        url: str,
        errors: Callable[[str], AbstractAsyncContextManager[None]],
        *,
        connect_timeout: float,
    ) -> None:
        self._dsn = dsn
        self._connect_timeout = connect_timeout
        self._schema = schema
        self._url = url
        self._errors = errors
        self._conn: Any = None
        self.owner = False
        self.watchers: list[Callable[[], None]] = []
        #: Reconnecting after the connection was lost (None: not needed).
        self._recovery: asyncio.Task[None] | None = None

    async def take_ownership(self) -> None:
        """Take the schema's ownership lock and record this process as its holder.

        Raises:
            StoreError: another session holds it (naming its host and pid), or the
                server failed.
        """
        if self.owner:
            raise ownership_error(self._url, Holder.me())
        got, row = await self._try_lock()
        if not got:
            if not self.watchers:
                await self.close()
            raise ownership_error(self._url, Holder(None, None) if row is None else Holder(*row))
        self.owner = True

    async def _try_lock(self) -> tuple[bool, Any]:
        """Try the ownership lock; record this process as its holder if it was taken.
        Returns ``(taken, the recorded holder's row if not)``."""
        conn = await self._connect()
        crc = zlib.crc32(self._schema.encode())
        key = crc - (1 << 32) if crc >= 1 << 31 else crc  # int4: signed
        async with self._errors("take ownership"):
            got = await conn.fetchval("SELECT pg_try_advisory_lock($1, $2)", OWNER_LOCK_CLASS, key)
            row = None if got else await conn.fetchrow("SELECT host, pid FROM tocsin_owner")
        if not got:
            return False, row
        me = Holder.me()
        async with self._errors("record the owner"):
            await conn.execute(
                "INSERT INTO tocsin_owner (singleton, host, pid) VALUES (true, $1, $2) "
                "ON CONFLICT (singleton) DO UPDATE SET host = excluded.host, pid = excluded.pid",
                me.host,
                me.pid,
            )
        return True, None

    async def watch(self, callback: Callable[[], None]) -> Callable[[], None]:
        """``LISTEN`` (once) and call ``callback()`` on each notice for this schema."""
        if not self.watchers:
            conn = await self._connect()
            async with self._errors("listen"):
                await conn.add_listener(CHANGES_CHANNEL, self._notified)
        self.watchers.append(callback)

        def unwatch() -> None:
            if callback in self.watchers:
                self.watchers.remove(callback)

        return unwatch

    async def close(self) -> None:
        """Close the connection: the lock and the ``LISTEN`` end with it. Idempotent."""
        conn, self._conn = self._conn, None
        self.owner = False
        self.watchers.clear()
        recovery, self._recovery = self._recovery, None
        if recovery is not None:
            recovery.cancel()
            await asyncio.gather(recovery, return_exceptions=True)
        if conn is not None:
            import asyncpg  # here, not at import: postgres.py says how to install it

            conn.remove_termination_listener(self._lost)
            try:
                await conn.close()
            except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
                conn.terminate()

    async def _connect(self) -> Any:
        if self._conn is None:
            import asyncpg

            async with self._errors("open"):
                conn = await asyncpg.connect(
                    self._dsn,
                    timeout=self._connect_timeout,
                    server_settings={"search_path": self._schema},
                )
            conn.add_termination_listener(self._lost)
            self._conn = conn
        return self._conn

    def _notified(self, connection: Any, pid: int, channel: str, payload: str) -> None:
        if payload == self._schema:
            for callback in list(self.watchers):
                callback()

    def _lost(self, connection: Any) -> None:
        # Say what stopped working: a restarted server holds no lock for us any more, so
        # another system could now take the store.
        owner = self.owner
        what = [w for w, on in (("ownership", owner), ("change notices", self.watchers)) if on]
        if self._conn is not connection:
            return
        self._conn = None
        self.owner = False
        if not what:
            return
        _log.warning(
            "PostgreSQL store %s: the connection holding %s was lost; taking them again "
            "as soon as the server answers",
            self._url,
            " and ".join(what),
        )
        if self._recovery is None or self._recovery.done():
            self._recovery = asyncio.get_running_loop().create_task(
                self._recover(owner), name=f"tocsin-pg-session-{self._schema}"
            )

    async def _recover(self, owner: bool) -> None:
        """Connect again (capped backoff), take the ownership lock again if this store
        held it, ``LISTEN`` again, and tell the watchers once. Never raises."""
        attempt = 0
        while True:
            attempt += 1
            try:
                if owner and not self.owner:
                    got, row = await self._try_lock()
                    if not got:
                        holder = Holder(None, None) if row is None else Holder(*row)
                        _log.error(
                            "PostgreSQL store %s: while the connection was lost another "
                            "system (%s) took this store's ownership; both now run its "
                            "tasks: stop one of them",
                            self._url,
                            holder.describe(),
                        )
                        owner = False
                    else:
                        self.owner = True
                if self.watchers:
                    conn = await self._connect()
                    async with self._errors("listen"):
                        await conn.add_listener(CHANGES_CHANNEL, self._notified)
                    for callback in list(self.watchers):
                        callback()  # changes made meanwhile were never announced here
                _log.info("PostgreSQL store %s: its session is back", self._url)
                return
            except asyncio.CancelledError:
                raise
            except Exception:  # the server is still away: try again
                # 0.1 s doubling, capped at 1 s: back within a second of the server.
                await asyncio.sleep(min(_RETRY_CAP, 0.1 * 2.0 ** min(attempt - 1, 10)))
