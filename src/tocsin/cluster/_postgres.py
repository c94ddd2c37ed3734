# SPDX-License-Identifier: Apache-2.0
"""The PostgreSQL coordinator (asyncpg): for nodes on several machines sharing a database.

The server's ``clock_timestamp()`` judges leases and lateness, never a node's clock. Each
method is one statement or one transaction. Where a step waits for a row lock (two nodes
renewing and taking over the same lease, two claimers of one tick), the time it compares
against is read *after* the lock is taken, or is the earlier reading, which can only make
a takeover less likely: an expired lease is never renewed and a live one never taken over.

Times are ``double precision`` epoch seconds, as in the Python API.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources
from typing import Any, Final, final

from ..errors import CoordinatorError, CoordinatorUnavailableError, InvalidCoordinatorURLError
from ..stores._spi import (
    CONNECT_TIMEOUT,
    PG_OPTIONS,
    check_connect_timeout,
    create_pg_schema,
    error_wrapper,
    open_pool,
    redact,
    split_options,
    unknown_message,
)
from ._protocol import EXPIRED_LEASE_RETENTION as RETENTION
from ._protocol import ClaimOutcome, LeaseRow, Ownership, PauseNote, TickClaim, TickRequest
from ._protocol import ClaimsInBatches as _OneClaimAsBatch
from ._rendezvous import rendezvous_owner

try:  # fail at import with the install hint (the session layer imports it on first use)
    import asyncpg  # noqa: F401  (only the install hint: the session layer uses it)
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the PostgreSQL coordinator needs asyncpg: pip install 'tocsin[postgres]'"
    ) from exc

__all__ = ["PostgresCoordinator"]

#: Advisory lock key held while creating the schema ("tcclus" in ASCII).
SCHEMA_LOCK_KEY: Final = 0x74636C7573
_SCHEMA_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: Connections of the control pool (renewals, membership, directory reads).
CONTROL_CONNECTIONS: Final = 2
#: Times a batch of claims aborted by PostgreSQL's deadlock detector is run again.
DEADLOCK_RETRIES: Final = 3
#: Claims between two purges of expired claims.
PURGE_EVERY: Final = 512

# $1 in every statement is the test-only clock offset (0 in production).
_NOW: Final = "(extract(epoch FROM clock_timestamp())::float8 + $1::float8)"

_LEASE_COLUMNS: Final = "node, incarnation, address, joined, renewed, expires, zone"
# The lease's cron zone came with issue 19: added to tables of every age (the default is
# what leases written before it mean: those versions ran cluster cron in UTC). Looked up
# first, so a node's open never takes the table's ALTER lock once the column exists.
_HAS_ZONE: Final = """
SELECT 1 FROM information_schema.columns
WHERE table_schema = $1 AND table_name = 'tocsin_cluster_leases' AND column_name = 'zone'
"""
_ADD_ZONE: Final = (
    "ALTER TABLE tocsin_cluster_leases ADD COLUMN IF NOT EXISTS zone text NOT NULL DEFAULT 'UTC'"
)
# The claims' fence and delivery lease came with issue 23 (claims written before them are
# done at_most_once claims with no fence); looked up first, as the zone is.
_CLAIM_COLUMNS: Final = """
SELECT column_name FROM information_schema.columns
WHERE table_schema = $1 AND table_name = 'tocsin_cluster_claims'
"""
_ADD_CLAIM_COLUMNS: Final = {
    "fence": "ALTER TABLE tocsin_cluster_claims ADD COLUMN IF NOT EXISTS "
    "fence bigint NOT NULL DEFAULT 0",
    "held": "ALTER TABLE tocsin_cluster_claims ADD COLUMN IF NOT EXISTS "
    "held float8 NOT NULL DEFAULT 0",
}

_JOIN: Final = f"""
WITH c AS MATERIALIZED (SELECT {_NOW} AS now),
purge AS (DELETE FROM tocsin_cluster_leases
          WHERE expires < (SELECT now FROM c) - {RETENTION} AND node <> $2)
INSERT INTO tocsin_cluster_leases AS l
    (node, incarnation, address, joined, renewed, expires, zone)
SELECT $2, $3, $4, c.now, c.now, c.now + $5, $6 FROM c
ON CONFLICT (node) DO UPDATE SET
    incarnation = excluded.incarnation, address = excluded.address, zone = excluded.zone,
    joined = CASE WHEN l.incarnation = excluded.incarnation THEN l.joined
                  ELSE excluded.joined END,
    renewed = excluded.renewed, expires = excluded.expires
WHERE l.incarnation = excluded.incarnation OR l.expires <= excluded.renewed
RETURNING {_LEASE_COLUMNS}
"""
# clock_timestamp() in the WHERE is evaluated again after a row-lock wait, so a lease
# that expired while this statement waited is not renewed.
_RENEW: Final = f"""
UPDATE tocsin_cluster_leases SET renewed = {_NOW}, expires = {_NOW} + $4
WHERE node = $2 AND incarnation = $3 AND expires > {_NOW}
RETURNING {_LEASE_COLUMNS}
"""
# One statement. ARGV: $2 key, $3 reference, $4 node, $5 fire_at, $6 ttl, $7 keep,
# $8 lease (NULL: at_most_once), $9 backfill. The claim row is locked (FOR UPDATE) before
# anything is decided, so two claimers of one key are serialized on it; the fence is the
# reference's counter, bumped only by a caller that may win (a first-insert race can leave
# a gap: fences grow, not necessarily by one), to the clock in microseconds if that is
# larger (least_fence: fences keep growing across a coordinator that lost its data). The
# clock is the earlier reading, which can only make a take-over less likely.
_CLAIM: Final = f"""
WITH c AS MATERIALIZED (SELECT {_NOW} AS now),
p AS MATERIALIZED (
    SELECT EXISTS (SELECT 1 FROM tocsin_cluster_paused WHERE reference = $3) AS paused),
old AS MATERIALIZED (
    SELECT expires, held FROM tocsin_cluster_claims WHERE key = $2 FOR UPDATE),
go AS MATERIALIZED (
    SELECT c.now AS now, (
        NOT p.paused AND (c.now - $5 <= $6 OR $9::bool) AND (
            NOT EXISTS (SELECT 1 FROM old)
            OR (SELECT expires FROM old) <= c.now
            OR ($8::float8 IS NOT NULL AND (SELECT held FROM old) > 0
                AND (SELECT held FROM old) <= c.now))) AS win
    FROM c, p),
f AS (
    INSERT INTO tocsin_cluster_fences AS f (reference, fence)
    SELECT $3, (go.now * 1000000)::bigint FROM go WHERE go.win
    ON CONFLICT (reference) DO UPDATE SET fence = greatest(f.fence + 1, excluded.fence)
    RETURNING fence),
ins AS (
    INSERT INTO tocsin_cluster_claims AS k (key, node, expires, fence, held)
    SELECT $2, $4,
        CASE WHEN (SELECT expires FROM old) > go.now THEN (SELECT expires FROM old)
             ELSE greatest(go.now, $5) + greatest($6, $7) END,
        f.fence,
        CASE WHEN $8::float8 IS NULL THEN 0 ELSE go.now + $8::float8 END
    FROM go, f
    ON CONFLICT (key) DO UPDATE SET node = excluded.node, expires = excluded.expires,
        fence = excluded.fence, held = excluded.held
    WHERE k.expires <= (SELECT now FROM c)
       OR (excluded.held > 0 AND k.held > 0 AND k.held <= (SELECT now FROM c))
    RETURNING fence)
SELECT (SELECT now FROM c), (SELECT paused FROM p), (SELECT fence FROM ins),
       (SELECT expires FROM old), (SELECT held FROM old)
"""
# The batch (claim_ticks): _CLAIM for many ticks in one statement. $2..$8 are arrays
# (key, reference, fire_at, ttl, keep, lease with NULL for at_most_once, backfill), $9 the
# node. The references of one statement are distinct (the caller splits the batch), so
# each winning tick bumps its own fence row and each key is inserted once. Lock order: the
# batch's existing fence rows first (reference order), then its existing claim rows (key
# order), then fence bumps and claim inserts (same orders; key = reference@instant). The
# fence row lock serializes every claimer of a reference, so a claim row is never waited
# for by one statement while another that holds it waits for a fence: without it, a key
# one node saw committed (locked as "old") and another did not (inserting it) closed a
# cycle. A reference's first claim has no fence row to lock; a deadlock there is retried.
_CLAIM_BATCH: Final = f"""
WITH c AS MATERIALIZED (SELECT {_NOW} AS now),
lk AS MATERIALIZED (
    SELECT reference FROM tocsin_cluster_fences
    WHERE reference = ANY($3::text[]) ORDER BY reference FOR UPDATE),
r AS MATERIALIZED (
    SELECT * FROM unnest($2::text[], $3::text[], $4::float8[], $5::float8[], $6::float8[],
                         $7::float8[], $8::bool[])
        WITH ORDINALITY AS r(key, reference, fire_at, ttl, keep, lease, backfill, i)),
old AS MATERIALIZED (
    SELECT key, expires, held FROM tocsin_cluster_claims
    WHERE key = ANY($2::text[]) AND (SELECT count(*) FROM lk) >= 0  -- after lk
    ORDER BY key FOR UPDATE),
go AS MATERIALIZED (
    SELECT r.i, r.key, r.reference, r.fire_at, r.ttl, r.keep, r.lease, c.now,
        p.reference IS NOT NULL AS paused, o.expires AS old_expires, o.held AS old_held,
        (p.reference IS NULL AND (c.now - r.fire_at <= r.ttl OR r.backfill) AND (
            o.key IS NULL
            OR o.expires <= c.now
            OR (r.lease IS NOT NULL AND o.held > 0 AND o.held <= c.now))) AS win
    FROM r CROSS JOIN c
    LEFT JOIN tocsin_cluster_paused p ON p.reference = r.reference
    LEFT JOIN old o ON o.key = r.key),
f AS (
    INSERT INTO tocsin_cluster_fences AS f (reference, fence)
    SELECT reference, (go.now * 1000000)::bigint FROM go WHERE go.win ORDER BY reference
    ON CONFLICT (reference) DO UPDATE SET fence = greatest(f.fence + 1, excluded.fence)
    RETURNING reference, fence),
ins AS (
    INSERT INTO tocsin_cluster_claims AS k (key, node, expires, fence, held)
    SELECT go.key, $9,
        CASE WHEN go.old_expires > go.now THEN go.old_expires
             ELSE greatest(go.now, go.fire_at) + greatest(go.ttl, go.keep) END,
        f.fence,
        CASE WHEN go.lease IS NULL THEN 0 ELSE go.now + go.lease END
    FROM go JOIN f ON f.reference = go.reference
    ORDER BY go.key
    ON CONFLICT (key) DO UPDATE SET node = excluded.node, expires = excluded.expires,
        fence = excluded.fence, held = excluded.held
    WHERE k.expires <= (SELECT now FROM c)
       OR (excluded.held > 0 AND k.held > 0 AND k.held <= (SELECT now FROM c))
    RETURNING key, fence)
SELECT go.now, go.paused, ins.fence, go.old_expires, go.old_held
FROM go LEFT JOIN ins ON ins.key = go.key ORDER BY go.i
"""
_RENEW_TICK: Final = f"""
UPDATE tocsin_cluster_claims SET held = {_NOW} + $4
WHERE key = $2 AND fence = $3 AND held > 0
"""
_FINISH_TICK: Final = """
UPDATE tocsin_cluster_claims SET held = 0 WHERE key = $1 AND fence = $2
"""
_PURGE: Final = f"""
DELETE FROM tocsin_cluster_claims WHERE key IN (
    SELECT key FROM tocsin_cluster_claims WHERE expires <= {_NOW} LIMIT 256)
"""


def _lease(row: Any, now: float) -> LeaseRow:
    return LeaseRow(
        row["node"],
        row["incarnation"],
        row["address"],
        row["joined"],
        row["renewed"],
        row["expires"],
        row["expires"] > now,
        row["zone"],
    )


def _decide(
    request: TickRequest,
    now: float,
    paused: bool,
    fence: int | None,
    old_expires: float | None,
    old_held: float | None,
) -> TickClaim:
    """A claim statement's row as a :class:`TickClaim`."""
    if fence is not None:
        return TickClaim(ClaimOutcome.WON, fence)
    if paused:
        return TickClaim(ClaimOutcome.PAUSED)
    if request.late(now):
        return TickClaim(ClaimOutcome.LATE)
    if request.lease is None:
        return TickClaim(ClaimOutcome.LOST)
    if old_expires is not None and old_expires > now:
        if old_held == 0:
            return TickClaim(ClaimOutcome.LOST)  # done
        if old_held is not None and old_held > now:
            return TickClaim(ClaimOutcome.LOST, retry_in=old_held - now)
    # Another claimer took it in this very step: its lease has just begun.
    return TickClaim(ClaimOutcome.LOST, retry_in=float(request.lease))


def _rounds(requests: Sequence[TickRequest]) -> list[list[int]]:
    """The indices of ``requests`` in rounds of distinct references, in order: a later
    request of a reference goes in a later round (one statement bumps a fence once)."""
    rounds: list[list[int]] = []
    last: dict[str, int] = {}
    for index, request in enumerate(requests):
        at = last.get(request.reference, -1) + 1
        if at == len(rounds):
            rounds.append([])
        rounds[at].append(index)
        last[request.reference] = at
    return rounds


@final
class PostgresCoordinator(_OneClaimAsBatch):
    """A :class:`~tocsin.cluster.Coordinator` in a PostgreSQL database.

    Args:
        dsn: ``postgresql://user:password@host:port/database``; the ``schema=NAME`` and
            ``connect_timeout=SECONDS`` query options are read by tocsin (not sent to the
            server); any option not in :data:`~tocsin.stores._dsn.PG_OPTIONS` is refused.
        schema: the PostgreSQL schema holding the ``tocsin_cluster_*`` tables, created if
            missing (default: the DSN's ``schema=``, else ``"public"``).
        command_timeout: seconds a statement may take before it fails (its outcome then
            unknown, as for any :class:`~tocsin.errors.CoordinatorError`).
        connect_timeout: seconds opening a connection may take, server startup and login
            included (default: the DSN's ``connect_timeout=``, else 10): a server that
            accepts TCP but never answers fails ``open()`` after that long, and the error
            names the server and the bound.

    Raises:
        InvalidCoordinatorURLError: an unknown query option, or a bad ``connect_timeout``.
        ValueError: a ``schema`` that is not a lower-case SQL identifier.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        command_timeout: float = 10.0,
        connect_timeout: float | None = None,
    ) -> None:
        self._dsn, options, unknown = split_options(dsn, PG_OPTIONS, ("schema", "connect_timeout"))
        if unknown:
            raise InvalidCoordinatorURLError(
                "coordinator URL " + unknown_message(dsn, unknown, PG_OPTIONS)
            )
        self.schema = schema or options.get("schema") or "public"
        if not _SCHEMA_NAME.fullmatch(self.schema):
            raise ValueError(
                "`schema` must be a lower-case SQL identifier ([a-z_][a-z0-9_]*), "
                f"got {self.schema!r}"
            )
        try:
            self.connect_timeout = check_connect_timeout(
                connect_timeout
                if connect_timeout is not None
                else options.get("connect_timeout", CONNECT_TIMEOUT)
            )
        except ValueError as exc:
            raise InvalidCoordinatorURLError(f"coordinator URL {redact(dsn)!r}: {exc}") from None
        self.url = redact(dsn)
        #: The one place asyncpg/OS errors become :class:`CoordinatorError` (the stores'
        #: session layer, as for the PostgreSQL store).
        self._label = f"PostgreSQL coordinator {self.url}"
        # Every call bounded, pool acquire included (issue 20, item 6); a server not
        # reached or not answering is CoordinatorUnavailableError.
        self._errors = error_wrapper(
            self._label,
            CoordinatorError,
            bound=max(command_timeout, self.connect_timeout),
            unavailable=CoordinatorUnavailableError,
        )
        self._command_timeout = command_timeout
        self._pool: Any = None
        #: Lease renewals, membership and directory reads: their own connections, so a
        #: burst of claims (or directory claims) never delays a renewal past the lease.
        self._control: Any = None
        self._claims = 0
        #: References whose fence row this coordinator made sure exists (see
        #: :meth:`_ensure_fences`).
        self._fenced: set[str] = set()
        #: Seconds added to the server's clock; tests move time with it, never sleeping.
        self._offset = 0.0

    def __repr__(self) -> str:
        return f"PostgresCoordinator({self.url!r}, schema={self.schema!r})"

    def _require(self) -> Any:
        if self._pool is None:
            raise CoordinatorError(f"{self!r} is not open: `await coordinator.open()` first")
        return self._pool

    async def open(self) -> None:
        if self._pool is not None:
            return
        pool = await open_pool(
            self._dsn,
            schema=self.schema,
            connect_timeout=self.connect_timeout,
            label=self._label,
            error=CoordinatorError,
            min_size=1,
            max_size=4,
            command_timeout=self._command_timeout,
        )
        try:
            script = resources.files("tocsin.cluster").joinpath("sql/postgres_coordinator.sql")
            await create_pg_schema(
                pool,
                schema=self.schema,
                lock_key=SCHEMA_LOCK_KEY,
                script=script.read_text("utf-8"),
                errors=self._errors,
                migrate=self._migrate,
            )
            control = await open_pool(
                self._dsn,
                schema=self.schema,
                connect_timeout=self.connect_timeout,
                label=self._label,
                error=CoordinatorError,
                min_size=1,
                max_size=CONTROL_CONNECTIONS,
                command_timeout=self._command_timeout,
            )
        except BaseException:
            await pool.close()
            raise
        self._pool = pool
        self._control = control

    async def _migrate(self, conn: Any) -> None:
        """Columns added after the first version, to tables of every age."""
        if await conn.fetchval(_HAS_ZONE, self.schema) is None:
            await conn.execute(_ADD_ZONE)
        columns = {row["column_name"] for row in await conn.fetch(_CLAIM_COLUMNS, self.schema)}
        for column, sql in _ADD_CLAIM_COLUMNS.items():
            if column not in columns:
                await conn.execute(sql)

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        control, self._control = self._control, None
        for each in (pool, control):
            if each is not None:
                async with self._errors("close"):
                    await each.close()

    def _require_control(self) -> Any:
        self._require()
        return self._control

    async def now(self) -> float:
        async with self._errors("now"):
            value: float = await self._require_control().fetchval(f"SELECT {_NOW}", self._offset)
            return value

    # -- membership ------------------------------------------------------------------

    async def join(
        self, node: str, incarnation: str, address: str, lease: float, zone: str = "UTC"
    ) -> LeaseRow | None:
        async with self._errors("join"):
            row = await self._require_control().fetchrow(
                _JOIN, self._offset, node, incarnation, address, float(lease), zone
            )
        return None if row is None else _lease(row, row["renewed"])

    async def renew(self, node: str, incarnation: str, lease: float) -> LeaseRow | None:
        async with self._errors("renew"):
            row = await self._require_control().fetchrow(
                _RENEW, self._offset, node, incarnation, float(lease)
            )
        return None if row is None else _lease(row, row["renewed"])

    async def leave(self, node: str, incarnation: str) -> bool:
        async with self._errors("leave"):
            status: str = await self._require_control().execute(
                "DELETE FROM tocsin_cluster_leases WHERE node = $1 AND incarnation = $2",
                node,
                incarnation,
            )
        return status != "DELETE 0"

    async def leases(self) -> tuple[float, list[LeaseRow]]:
        async with (
            self._errors("leases"),
            self._require_control().acquire() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            now: float = await conn.fetchval(f"SELECT {_NOW}", self._offset)
            rows = await conn.fetch(
                f"SELECT {_LEASE_COLUMNS} FROM tocsin_cluster_leases ORDER BY node"
            )
        return now, [_lease(row, now) for row in rows]

    # -- directory -------------------------------------------------------------------

    async def owner(self, kind: str, identity: str) -> Ownership | None:
        async with self._errors("owner"):
            row = await self._require_control().fetchrow(
                f"SELECT d.node, d.incarnation, d.epoch, l.expires > {_NOW} AS alive "
                "FROM tocsin_cluster_directory d LEFT JOIN tocsin_cluster_leases l "
                "ON l.node = d.node AND l.incarnation = d.incarnation "
                "WHERE d.kind = $2 AND d.identity = $3",
                self._offset,
                kind,
                identity,
            )
        if row is None:
            return None
        return Ownership(
            kind, identity, row["node"], row["incarnation"], row["epoch"], bool(row["alive"])
        )

    async def claim_owner(
        self,
        kind: str,
        identity: str,
        node: str,
        incarnation: str,
        *,
        floor: int = 0,
        place: bool = False,
    ) -> Ownership | None:
        async with (
            self._errors("claim_owner"),
            self._require().acquire() as conn,
            conn.transaction(),
        ):
            return await self._claim_owner(conn, kind, identity, node, incarnation, floor, place)

    async def _claim_owner(
        self,
        conn: Any,
        kind: str,
        identity: str,
        node: str,
        incarnation: str,
        floor: int,
        place: bool,
    ) -> Ownership | None:
        # Lock order: the directory row, then lease rows (FOR SHARE: waits for a renewal
        # in flight and sees its result). The clock is read after every lock is held.
        current = await conn.fetchrow(
            "SELECT node, incarnation, epoch FROM tocsin_cluster_directory "
            "WHERE kind = $1 AND identity = $2 FOR UPDATE",
            kind,
            identity,
        )
        lease_sql = (
            "SELECT expires FROM tocsin_cluster_leases "
            "WHERE node = $1 AND incarnation = $2 FOR SHARE"
        )
        owner_expires = None
        if current is not None:
            owner_expires = await conn.fetchval(lease_sql, current["node"], current["incarnation"])
        my_expires = await conn.fetchval(lease_sql, node, incarnation)
        now: float = await conn.fetchval(f"SELECT {_NOW}", self._offset)
        owner_alive = owner_expires is not None and owner_expires > now
        found = None
        if current is not None:
            found = Ownership(
                kind, identity, current["node"], current["incarnation"], current["epoch"],
                owner_alive,
            )  # fmt: skip
        if my_expires is None or my_expires <= now:
            return found  # the caller holds no live lease: nothing changes
        owner, owner_incarnation = node, incarnation
        if found is not None and (found.node, found.incarnation) == (node, incarnation):
            if found.epoch >= floor:
                return found
            epoch = floor
        elif found is not None and owner_alive:
            return found
        else:
            epoch = max(1 if found is None else found.epoch + 1, floor)
            if place:
                # The leases live in this transaction: placement on the coordinator's
                # view (a lease that lapses a moment later is a node dying right after).
                rows = await conn.fetch(
                    f"SELECT node, incarnation FROM tocsin_cluster_leases WHERE expires > {_NOW}",
                    self._offset,
                )
                live = {row["node"]: row["incarnation"] for row in rows}
                live.setdefault(node, incarnation)
                owner = rendezvous_owner(kind, identity, live) or node
                owner_incarnation = live[owner]
        written = await conn.fetchval(
            "INSERT INTO tocsin_cluster_directory AS d VALUES ($1, $2, $3, $4, $5) "
            "ON CONFLICT (kind, identity) DO UPDATE SET node = excluded.node, "
            "incarnation = excluded.incarnation, epoch = excluded.epoch "
            "WHERE d.epoch = $6 RETURNING epoch",
            kind,
            identity,
            owner,
            owner_incarnation,
            epoch,
            -1 if found is None else found.epoch,
        )
        if written is None:
            # A concurrent first claim inserted the row after our (empty) FOR UPDATE
            # read: it won. Report it as it is now.
            row = await conn.fetchrow(
                "SELECT node, incarnation, epoch FROM tocsin_cluster_directory "
                "WHERE kind = $1 AND identity = $2",
                kind,
                identity,
            )
            return Ownership(kind, identity, row["node"], row["incarnation"], row["epoch"], True)
        return Ownership(kind, identity, owner, owner_incarnation, epoch, True)

    async def hand_over(
        self, kind: str, identity: str, node: str, incarnation: str, *, floor: int = 0
    ) -> Ownership | None:
        async with (
            self._errors("hand_over"),
            self._require().acquire() as conn,
            conn.transaction(),
        ):
            current = await conn.fetchrow(
                "SELECT node, incarnation, epoch FROM tocsin_cluster_directory "
                "WHERE kind = $1 AND identity = $2 FOR UPDATE",
                kind,
                identity,
            )
            if current is None:
                return None
            rows = await conn.fetch(
                "SELECT node, incarnation FROM tocsin_cluster_leases "
                f"WHERE expires > {_NOW} FOR SHARE",
                self._offset,
            )
            live = {row["node"]: row["incarnation"] for row in rows}
            found = Ownership(
                kind, identity, current["node"], current["incarnation"], current["epoch"],
                live.get(current["node"]) == current["incarnation"],
            )  # fmt: skip
            chosen = rendezvous_owner(kind, identity, live)
            if (
                (found.node, found.incarnation) != (node, incarnation)
                or live.get(node) != incarnation
                or chosen is None
                or chosen == node
            ):
                return found
            epoch = max(found.epoch + 1, floor)
            await conn.execute(
                "UPDATE tocsin_cluster_directory SET node = $3, incarnation = $4, epoch = $5 "
                "WHERE kind = $1 AND identity = $2",
                kind,
                identity,
                chosen,
                live[chosen],
                epoch,
            )
            return Ownership(kind, identity, chosen, live[chosen], epoch, True)

    # -- cron single fire ------------------------------------------------------------

    async def _claim_one(self, request: TickRequest, node: str) -> TickClaim:
        # One tick: the single statement, lighter than a batch of one.
        pool = self._require()
        lease = request.lease
        async with self._errors("claim_tick"):
            row = await pool.fetchrow(
                _CLAIM,
                self._offset,
                request.key,
                request.reference,
                node,
                float(request.fire_at),
                float(request.ttl),
                float(request.keep or 0.0),
                None if lease is None else float(lease),
                request.backfill,
            )
            await self._count_claims(pool, 1)
        return _decide(request, *row)

    async def claim_ticks(self, requests: Sequence[TickRequest], node: str) -> list[TickClaim]:
        pool = self._require()
        answers: list[TickClaim | None] = [None] * len(requests)
        async with self._errors("claim_ticks"):
            # One statement per round of distinct references: a tick's batch (every
            # reference firing at one instant) is one round, so one round trip and one
            # commit however many ticks.
            await self._ensure_fences(pool, requests)
            for indices in _rounds(requests):
                batch = [requests[i] for i in indices]
                rows = await self._fetch_batch(pool, batch, node)
                for index, request, row in zip(indices, batch, rows, strict=True):
                    answers[index] = _decide(request, *row)
            await self._count_claims(pool, len(requests))
        decided = [answer for answer in answers if answer is not None]
        assert len(decided) == len(requests)  # every round answers each of its rows
        return decided

    async def _ensure_fences(self, pool: Any, requests: Sequence[TickRequest]) -> None:
        """Create the fence rows of references this coordinator has not claimed yet, in
        reference order, before their first batch: a batch locks existing fence rows
        first, and a reference without one left two nodes' first batches of the same
        references free to deadlock on their claim rows (PostgreSQL breaks it after
        ``deadlock_timeout``, 1 s: at start-up, every reference's first instants came
        a second late). Fence 0 grants nothing: the first grant still takes the clock
        in microseconds. Inserting new keys in one order on every node cannot deadlock."""
        new = sorted({r.reference for r in requests} - self._fenced)
        if not new:
            return
        await pool.execute(
            "INSERT INTO tocsin_cluster_fences (reference, fence) "
            "SELECT r, 0 FROM unnest($1::text[]) AS r ORDER BY r ON CONFLICT DO NOTHING",
            new,
        )
        self._fenced.update(new)

    async def _fetch_batch(self, pool: Any, batch: list[TickRequest], node: str) -> Any:
        """One batch statement; retried when PostgreSQL broke a deadlock by aborting it
        (rolled back whole: nothing of it was written, so running it again is safe)."""
        from asyncpg.exceptions import DeadlockDetectedError

        for attempt in range(DEADLOCK_RETRIES + 1):
            try:
                return await pool.fetch(
                    _CLAIM_BATCH,
                    self._offset,
                    [r.key for r in batch],
                    [r.reference for r in batch],
                    [float(r.fire_at) for r in batch],
                    [float(r.ttl) for r in batch],
                    [float(r.keep or 0.0) for r in batch],
                    [None if r.lease is None else float(r.lease) for r in batch],
                    [r.backfill for r in batch],
                    node,
                )
            except DeadlockDetectedError:
                if attempt == DEADLOCK_RETRIES:
                    raise
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _count_claims(self, pool: Any, count: int) -> None:
        """Purge expired claims once every :data:`PURGE_EVERY` claims."""
        before = self._claims
        self._claims += count
        if before // PURGE_EVERY != self._claims // PURGE_EVERY:
            await pool.execute(_PURGE, self._offset)

    async def renew_tick(self, key: str, fence: int, lease: float) -> bool:
        async with self._errors("renew_tick"):
            status: str = await self._require().execute(
                _RENEW_TICK, self._offset, key, int(fence), float(lease)
            )
        return status != "UPDATE 0"

    async def finish_tick(self, key: str, fence: int) -> bool:
        async with self._errors("finish_tick"):
            status: str = await self._require().execute(_FINISH_TICK, key, int(fence))
        return status != "UPDATE 0"

    async def set_cron_paused(self, reference: str, paused: bool) -> None:
        sql = (
            "INSERT INTO tocsin_cluster_paused VALUES ($1) ON CONFLICT DO NOTHING"
            if paused
            else "DELETE FROM tocsin_cluster_paused WHERE reference = $1"
        )
        async with self._errors("set_cron_paused"):
            await self._require().execute(sql, reference)

    async def paused_crons(self) -> frozenset[str]:
        async with self._errors("paused_crons"):
            rows = await self._require().fetch("SELECT reference FROM tocsin_cluster_paused")
        return frozenset(row["reference"] for row in rows)

    async def set_pause_note(self, reference: str, note: PauseNote | None) -> None:
        async with self._errors("set_pause_note"):
            if note is None:
                await self._require().execute(
                    "DELETE FROM tocsin_cluster_pause_notes WHERE reference = $1", reference
                )
            else:
                await self._require().execute(
                    "INSERT INTO tocsin_cluster_pause_notes VALUES ($1, $2, $3, $4) "
                    "ON CONFLICT (reference) DO UPDATE SET note = EXCLUDED.note, "
                    "paused_at = EXCLUDED.paused_at, paused_by = EXCLUDED.paused_by",
                    reference,
                    note.note,
                    note.paused_at,
                    note.paused_by,
                )

    async def pause_notes(self) -> dict[str, PauseNote]:
        async with self._errors("pause_notes"):
            rows = await self._require().fetch("SELECT * FROM tocsin_cluster_pause_notes")
        return {
            row["reference"]: PauseNote(row["note"], float(row["paused_at"]), row["paused_by"])
            for row in rows
        }
