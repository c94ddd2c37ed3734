# SPDX-License-Identifier: Apache-2.0
"""The Redis coordinator (redis-py asyncio): every step is one Lua script reading ``TIME``.

A Lua script runs atomically on the server, so the clock read and the write it decides are
one step, on Redis' clock. Cron claims are ``SET key node NX PX ttl`` inside the script,
after the pause flag and the lateness check. Times are integer milliseconds inside Redis
(``cjson`` prints integers up to 14 digits exactly) and float seconds in Python.

Keys, under a prefix (default ``tocsin:``; ``redis://host/0?prefix=shop:`` picks another):
``leases`` and ``dir`` hashes of JSON rows, ``paused`` set, ``fences`` hash (the last
fence granted per cron reference), ``claim:<key>`` strings.

Prior art: GoAkt's ``ClaimScheduleFire`` (``SET NX`` with an expiry), the Redlock notes
on using the server's clock in scripts rather than the client's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, final

import msgspec

from .._idle import real_io
from ..errors import CoordinatorError, CoordinatorUnavailableError
from ..stores._spi import REDIS_OPTIONS, redact, split_options
from ._protocol import EXPIRED_LEASE_RETENTION as RETENTION
from ._protocol import ClaimOutcome, LeaseRow, Ownership, PauseNote, TickClaim, TickRequest
from ._protocol import ClaimsInBatches as _OneClaimAsBatch
from ._url import check_coordinator_url

try:
    import redis.asyncio as aioredis
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("the Redis coordinator needs redis-py: pip install 'tocsin[redis]'") from exc

__all__ = ["CLAIM_CONNECTIONS", "CONTROL_CONNECTIONS", "RedisCoordinator"]

#: Connections for claims, directory and pause calls; more callers wait for one.
CLAIM_CONNECTIONS: Final = 64
#: Connections kept for lease renewals and membership reads, never used by claims.
CONTROL_CONNECTIONS: Final = 2

# ARGV[1] of every script is the test-only clock offset in ms (0 in production).
_NOW: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
"""
_JOIN: Final = (
    _NOW
    + """
local all = redis.call('HGETALL', KEYS[1])
for k = 1, #all, 2 do
  if all[k] ~= ARGV[2] and cjson.decode(all[k + 1]).e < now - tonumber(ARGV[6]) then
    redis.call('HDEL', KEYS[1], all[k])
  end
end
local raw = redis.call('HGET', KEYS[1], ARGV[2])
local joined = now
if raw then
  local l = cjson.decode(raw)
  if l.i ~= ARGV[3] and l.e > now then return false end
  if l.i == ARGV[3] then joined = l.j end
end
local enc = cjson.encode({i = ARGV[3], a = ARGV[4], j = joined, r = now,
                          e = now + tonumber(ARGV[5]), z = ARGV[7]})
redis.call('HSET', KEYS[1], ARGV[2], enc)
return {enc, now}
"""
)
_RENEW: Final = (
    _NOW
    + """
local raw = redis.call('HGET', KEYS[1], ARGV[2])
if not raw then return false end
local l = cjson.decode(raw)
if l.i ~= ARGV[3] or l.e <= now then return false end
l.r = now
l.e = now + tonumber(ARGV[4])
local enc = cjson.encode(l)
redis.call('HSET', KEYS[1], ARGV[2], enc)
return {enc, now}
"""
)
_LEAVE: Final = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
if cjson.decode(raw).i ~= ARGV[2] then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[1])
"""
_LEASES: Final = (
    _NOW
    + """
return {now, redis.call('HGETALL', KEYS[1])}
"""
)
_ALIVE: Final = """
local function alive(node, inc)
  local raw = redis.call('HGET', KEYS[2], node)
  if not raw then return false end
  local l = cjson.decode(raw)
  return l.i == inc and l.e > now
end
"""
_OWNER: Final = (
    _NOW
    + _ALIVE
    + """
local cur = redis.call('HGET', KEYS[1], ARGV[2])
if not cur then return false end
local d = cjson.decode(cur)
return {cur, alive(d.n, d.i) and 1 or 0}
"""
)
# The live lease (in KEYS[2]) that (kind, identity) prefers, and its incarnation: the
# rendezvous weight repeats tocsin.cluster._rendezvous.weight byte for byte (the
# coordinator contract test checks they agree). Needs _NOW.
_PREFERRED: Final = """
local function preferred(kind, identity)
  local prefix = #kind .. ':' .. kind .. #identity .. ':' .. identity
  local best, bestw, inc = nil, nil, nil
  local all = redis.call('HGETALL', KEYS[2])
  for k = 1, #all, 2 do
    local l = cjson.decode(all[k + 1])
    if l.e > now then
      local w = redis.sha1hex(prefix .. all[k])
      if best == nil or w > bestw or (w == bestw and all[k] < best) then
        best, bestw, inc = all[k], w, l.i
      end
    end
  end
  return best, inc
end
"""
# ARGV: offset, field, node, incarnation, floor, place ("1"), kind, identity.
_CLAIM_OWNER: Final = (
    _NOW
    + _ALIVE
    + _PREFERRED
    + """
if not alive(ARGV[3], ARGV[4]) then
  local cur = redis.call('HGET', KEYS[1], ARGV[2])
  if cur then
    local d = cjson.decode(cur)
    return {cur, alive(d.n, d.i) and 1 or 0}
  end
  return false
end
local floor = tonumber(ARGV[5])
local owner, inc = ARGV[3], ARGV[4]
local cur = redis.call('HGET', KEYS[1], ARGV[2])
local epoch = 1
if cur then
  local d = cjson.decode(cur)
  if d.n == ARGV[3] and d.i == ARGV[4] then
    if d.e >= floor then return {cur, 1} end
    local enc = cjson.encode({n = d.n, i = d.i, e = floor})
    redis.call('HSET', KEYS[1], ARGV[2], enc)
    return {enc, 1}
  end
  if alive(d.n, d.i) then return {cur, 1} end
  epoch = d.e + 1
end
if floor > epoch then epoch = floor end
if ARGV[6] == '1' then
  local best, best_inc = preferred(ARGV[7], ARGV[8])
  if best then owner, inc = best, best_inc end
end
local enc = cjson.encode({n = owner, i = inc, e = epoch})
redis.call('HSET', KEYS[1], ARGV[2], enc)
return {enc, 1}
"""
)
# ARGV: offset, field, node, incarnation, floor, kind, identity.
_HAND_OVER: Final = (
    _NOW
    + _ALIVE
    + _PREFERRED
    + """
local cur = redis.call('HGET', KEYS[1], ARGV[2])
if not cur then return false end
local d = cjson.decode(cur)
if d.n ~= ARGV[3] or d.i ~= ARGV[4] or not alive(d.n, d.i) then
  return {cur, alive(d.n, d.i) and 1 or 0}
end
local best, inc = preferred(ARGV[6], ARGV[7])
if best == nil or best == ARGV[3] then return {cur, 1} end
local epoch = d.e + 1
if tonumber(ARGV[5]) > epoch then epoch = tonumber(ARGV[5]) end
local enc = cjson.encode({n = best, i = inc, e = epoch})
redis.call('HSET', KEYS[1], ARGV[2], enc)
return {enc, 1}
"""
)
# The claim value is "<expires ms> <fence> <held ms> <node>" (held: an at_least_once
# claim's delivery lease end while undone, 0 once done); claims written before the fence
# read "<expires ms> <node>": done, fence 0. A grant's fence is the reference's last one
# plus one, or the clock in microseconds if larger (least_fence: fences keep growing
# across a flush); kept in the fences hash as a decimal string (Lua numbers are doubles,
# exact for integers below 2^53, so for microsecond clocks until the year 2255). With a
# clock offset (tests) Redis' own expiry and ours differ, so an expired-by-offset claim
# is taken over explicitly.
# KEYS: paused, claim, fences. ARGV: offset, reference, fire, ttl, node, keep, lease ("":
# at_most_once), backfill ("1").
_CLAIM_TICK: Final = (
    _NOW
    + """
if redis.call('SISMEMBER', KEYS[1], ARGV[2]) == 1 then return {'paused'} end
local fire = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
if ARGV[8] ~= '1' and now - fire > ttl then return {'late'} end
local lease = tonumber(ARGV[7])
local expires = nil
local held = redis.call('GET', KEYS[2])
if held then
  local e = tonumber(string.match(held, '^(%d+)'))
  local h = tonumber(string.match(held, '^%d+ %d+ (%d+) ') or '0')
  if e > now then
    if lease == nil or h == 0 then return {'lost'} end
    if h > now then return {'lost', h - now} end
    expires = e
  end
end
if expires == nil then expires = math.max(now, fire) + math.max(ttl, tonumber(ARGV[6])) end
local fence = math.max(tonumber(redis.call('HGET', KEYS[3], ARGV[2]) or '0') + 1, now * 1000)
redis.call('HSET', KEYS[3], ARGV[2], string.format('%d', fence))
local until_ms = 0
if lease then until_ms = now + lease end
local value = string.format('%d %d %d %s', expires, fence, until_ms, ARGV[5])
redis.call('SET', KEYS[2], value, 'PX', math.max(1, expires - now))
return {'won', fence}
"""
)
# The batch (claim_ticks): _CLAIM_TICK's decision for each tick of ARGV[4], a JSON array
# of [key, reference, fire ms, ttl ms, keep ms, lease ms (-1: at_most_once), backfill
# (0/1)], in order, in one script (one round trip, atomic as a whole). The claim keys are
# built from the prefix (ARGV[2]) in the script: one primary, as the coordinator needs
# anyway (DESIGN "Cluster"). One JSON argument and one answer string keep the client's
# cost per tick to a few microseconds (a pipeline of single scripts cost ~150 µs a tick
# in redis-py's encoding and parsing). Answer: comma-separated "w<fence>" (won),
# "o" (lost, done or at_most_once), "o<ms>" (lost to a holder whose lease ends in ms),
# "l" (late), "p" (paused).
# KEYS: paused, fences. ARGV: offset, claim key prefix, node, batch.
_CLAIM_TICKS: Final = (
    _NOW
    + """
local prefix = ARGV[2]
local node = ARGV[3]
local batch = cjson.decode(ARGV[4])
local out = {}
for i, r in ipairs(batch) do
  local reference, fire, ttl, keep = r[2], r[3], r[4], r[5]
  local lease = r[6]
  if lease < 0 then lease = nil end
  local answer = nil
  if redis.call('SISMEMBER', KEYS[1], reference) == 1 then
    answer = 'p'
  elseif r[7] ~= 1 and now - fire > ttl then
    answer = 'l'
  else
    local claim = prefix .. r[1]
    local expires = nil
    local held = redis.call('GET', claim)
    if held then
      local e = tonumber(string.match(held, '^(%d+)'))
      local h = tonumber(string.match(held, '^%d+ %d+ (%d+) ') or '0')
      if e > now then
        if lease == nil or h == 0 then
          answer = 'o'
        elseif h > now then
          answer = 'o' .. string.format('%d', h - now)
        else
          expires = e
        end
      end
    end
    if answer == nil then
      if expires == nil then expires = math.max(now, fire) + math.max(ttl, keep) end
      local fence = math.max(tonumber(redis.call('HGET', KEYS[2], reference) or '0') + 1,
                             now * 1000)
      redis.call('HSET', KEYS[2], reference, string.format('%d', fence))
      local until_ms = 0
      if lease then until_ms = now + lease end
      local value = string.format('%d %d %d %s', expires, fence, until_ms, node)
      redis.call('SET', claim, value, 'PX', math.max(1, expires - now))
      answer = 'w' .. string.format('%d', fence)
    end
  end
  out[i] = answer
end
return table.concat(out, ',')
"""
)
# KEYS: claim. ARGV: offset, fence, lease ms ("0": finish).
_SETTLE_TICK: Final = (
    _NOW
    + """
local held = redis.call('GET', KEYS[1])
if not held then return 0 end
local e, f, h, n = string.match(held, '^(%d+) (%d+) (%d+) (.*)$')
if not f or tonumber(f) ~= tonumber(ARGV[2]) then return 0 end
local lease = tonumber(ARGV[3])
local until_ms = 0
if lease > 0 then
  if tonumber(h) == 0 then return 0 end
  until_ms = now + lease
end
local px = math.max(1, tonumber(e) - now)
redis.call('SET', KEYS[1], string.format('%s %s %d %s', e, f, until_ms, n), 'PX', px)
return 1
"""
)


class _Lease(msgspec.Struct):
    i: str
    a: str
    j: float
    r: float
    e: float
    z: str = "UTC"  # the cron zone (issue 19); leases written before it: UTC


class _Entry(msgspec.Struct):
    n: str
    i: str
    e: int


class _Note(msgspec.Struct, array_like=True, frozen=True):
    """A pause note as the ``notes`` hash holds it (JSON array)."""

    note: str | None
    paused_at: float
    paused_by: str


_note_encoder: Final = msgspec.json.Encoder()
_note_decoder: Final = msgspec.json.Decoder(_Note)
_lease_decoder: Final = msgspec.json.Decoder(_Lease)
_entry_decoder: Final = msgspec.json.Decoder(_Entry)


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _lease(node: str, raw: str, now_ms: float) -> LeaseRow:
    lease = _lease_decoder.decode(raw)
    return LeaseRow(
        node,
        lease.i,
        lease.a,
        lease.j / 1000,
        lease.r / 1000,
        lease.e / 1000,
        lease.e > now_ms,
        lease.z,
    )


def _field(kind: str, identity: str) -> str:
    # Length-prefixed, so no (kind, identity) pair can collide with another.
    return f"{len(kind)}:{kind}{identity}"


def _split_url(url: str) -> tuple[str, str | None]:
    # The same checks as Cluster(...): an unknown option or a database that is not a
    # number is refused here too, for a RedisCoordinator made by hand.
    check_coordinator_url(url)
    rest, options, _ = split_options(url, REDIS_OPTIONS, ("prefix",))
    return rest, options.get("prefix")


def _tick_claim(result: Any) -> TickClaim:
    """The claim script's answer as a :class:`TickClaim`."""
    outcome = ClaimOutcome(result[0])
    if outcome is ClaimOutcome.WON:
        return TickClaim(outcome, int(result[1]))
    if outcome is ClaimOutcome.LOST and len(result) > 1:
        return TickClaim(outcome, retry_in=int(result[1]) / 1000)
    return TickClaim(outcome)


_BATCH_OUTCOMES: Final = {
    "w": ClaimOutcome.WON,
    "o": ClaimOutcome.LOST,
    "l": ClaimOutcome.LATE,
    "p": ClaimOutcome.PAUSED,
}


def _batch_claim(part: str) -> TickClaim:
    """One answer of the batch script (``_CLAIM_TICKS``) as a :class:`TickClaim`."""
    outcome = _BATCH_OUTCOMES[part[0]]
    if outcome is ClaimOutcome.WON:
        return TickClaim(outcome, int(part[1:]))
    if outcome is ClaimOutcome.LOST and len(part) > 1:
        return TickClaim(outcome, retry_in=int(part[1:]) / 1000)
    return TickClaim(outcome)


@final
class RedisCoordinator(_OneClaimAsBatch):
    """A :class:`~tocsin.cluster.Coordinator` on a Redis server (one primary).

    Args:
        url: ``redis://[user:password@]host:port/db`` (also ``rediss://``, ``unix://``);
            a ``prefix=`` query option is read by tocsin, not sent to Redis; any option
            not in :data:`~tocsin.stores._dsn.REDIS_OPTIONS` is refused, and so is a
            database that is not a number (``redis://host/abc``).
        prefix: the prefix of every key (default: the URL's ``prefix=``, else ``tocsin:``).
        socket_timeout: seconds a command may take before it fails (outcome unknown).

    Redis replication is asynchronous: a claim acknowledged by a primary that dies before
    replicating it can be won again on the promoted replica. Use one primary (with AOF
    ``appendfsync everysec`` or stricter) when single fire must survive a failover.
    """

    def __init__(
        self, url: str, *, prefix: str | None = None, socket_timeout: float = 10.0
    ) -> None:
        self._url, url_prefix = _split_url(url)
        self.prefix = prefix or url_prefix or "tocsin:"
        self.url = redact(url)
        self._socket_timeout = socket_timeout
        self._client: Any = None
        self._control: Any = None
        self._scripts: dict[str, Any] = {}
        self._keys = {
            name: self.prefix + name for name in ("leases", "dir", "paused", "fences", "notes")
        }
        #: Seconds added to Redis' clock; tests move time with it, never sleeping.
        self._offset = 0.0

    def __repr__(self) -> str:
        return f"RedisCoordinator({self.url!r}, prefix={self.prefix!r})"

    @asynccontextmanager
    async def _errors(self, what: str) -> AsyncIterator[None]:
        if self._client is None:
            raise CoordinatorError(f"{self!r} is not open: `await coordinator.open()` first")
        try:
            with real_io():
                yield
        except (RedisConnectionError, RedisTimeoutError, OSError, TimeoutError) as exc:
            # Not reached, or no answer within socket_timeout (every call is bounded).
            raise CoordinatorUnavailableError(
                f"Redis coordinator {self.url}: {what} failed: {exc}"
            ) from exc
        except RedisError as exc:
            raise CoordinatorError(f"Redis coordinator {self.url}: {what} failed: {exc}") from exc

    def _pool_client(self, max_connections: int) -> Any:
        # A blocking pool: a caller beyond max_connections waits (bounded by socket_timeout)
        # for a free connection instead of failing at once, as redis-py's default pool does
        # ("Too many connections"): a busy node must never lose a tick for want of a socket.
        pool = aioredis.BlockingConnectionPool.from_url(
            self._url,
            max_connections=max_connections,
            timeout=self._socket_timeout,
            decode_responses=True,
            socket_timeout=self._socket_timeout,
            socket_connect_timeout=self._socket_timeout,
        )
        return aioredis.Redis(connection_pool=pool)

    async def open(self) -> None:
        if self._client is not None:
            return
        client = self._pool_client(CLAIM_CONNECTIONS)
        # Lease renewals and membership reads have their own connections, so they never
        # queue behind a burst of claims: a node that is busy claiming keeps its lease.
        control = self._pool_client(CONTROL_CONNECTIONS)
        try:
            await client.ping()
            await control.ping()
        except (RedisError, OSError) as exc:
            await client.aclose()
            await control.aclose()
            raise CoordinatorError(f"Redis coordinator {self.url}: open failed: {exc}") from exc
        self._client = client
        self._control = control
        for name, source in (
            ("join", _JOIN),
            ("renew", _RENEW),
            ("leave", _LEAVE),
            ("leases", _LEASES),
        ):
            self._scripts[name] = control.register_script(source)
        for name, source in (
            ("owner", _OWNER),
            ("claim_owner", _CLAIM_OWNER),
            ("hand_over", _HAND_OVER),
            ("claim_tick", _CLAIM_TICK),
            ("claim_ticks", _CLAIM_TICKS),
            ("settle_tick", _SETTLE_TICK),
        ):
            self._scripts[name] = client.register_script(source)

    async def close(self) -> None:
        client, self._client = self._client, None
        control, self._control = self._control, None
        failure: BaseException | None = None
        for each in (client, control):
            if each is None:
                continue
            try:
                await each.aclose(close_connection_pool=True)
            except (RedisError, OSError) as exc:
                failure = exc
        if failure is not None:
            raise CoordinatorError(
                f"Redis coordinator {self.url}: close failed: {failure}"
            ) from failure

    async def _run(self, name: str, keys: list[str], *args: Any) -> Any:
        async with self._errors(name):
            return await self._scripts[name](keys=keys, args=[_ms(self._offset), *args])

    async def now(self) -> float:
        async with self._errors("now"):
            seconds, micros = await self._control.time()
        return float(seconds) + float(micros) / 1e6 + self._offset

    # -- membership ------------------------------------------------------------------

    async def join(
        self, node: str, incarnation: str, address: str, lease: float, zone: str = "UTC"
    ) -> LeaseRow | None:
        result = await self._run(
            "join",
            [self._keys["leases"]],
            node,
            incarnation,
            address,
            _ms(lease),
            _ms(RETENTION),
            zone,
        )
        return None if result is None else _lease(node, result[0], float(result[1]))

    async def renew(self, node: str, incarnation: str, lease: float) -> LeaseRow | None:
        result = await self._run("renew", [self._keys["leases"]], node, incarnation, _ms(lease))
        return None if result is None else _lease(node, result[0], float(result[1]))

    async def leave(self, node: str, incarnation: str) -> bool:
        async with self._errors("leave"):
            deleted = await self._scripts["leave"](
                keys=[self._keys["leases"]], args=[node, incarnation]
            )
        return bool(deleted)

    async def leases(self) -> tuple[float, list[LeaseRow]]:
        now_ms, flat = await self._run("leases", [self._keys["leases"]])
        now = float(now_ms)
        pairs = sorted(zip(flat[::2], flat[1::2], strict=True))
        return now / 1000, [_lease(node, raw, now) for node, raw in pairs]

    # -- directory -------------------------------------------------------------------

    def _ownership(self, kind: str, identity: str, result: Any) -> Ownership | None:
        if result is None:
            return None
        entry = _entry_decoder.decode(result[0])
        return Ownership(kind, identity, entry.n, entry.i, entry.e, bool(result[1]))

    async def owner(self, kind: str, identity: str) -> Ownership | None:
        keys = [self._keys["dir"], self._keys["leases"]]
        result = await self._run("owner", keys, _field(kind, identity))
        return self._ownership(kind, identity, result)

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
        keys = [self._keys["dir"], self._keys["leases"]]
        result = await self._run(
            "claim_owner",
            keys,
            _field(kind, identity),
            node,
            incarnation,
            int(floor),
            "1" if place else "0",
            kind,
            identity,
        )
        return self._ownership(kind, identity, result)

    async def hand_over(
        self, kind: str, identity: str, node: str, incarnation: str, *, floor: int = 0
    ) -> Ownership | None:
        keys = [self._keys["dir"], self._keys["leases"]]
        result = await self._run(
            "hand_over", keys, _field(kind, identity), node, incarnation, int(floor), kind, identity
        )
        return self._ownership(kind, identity, result)

    # -- cron single fire ------------------------------------------------------------

    async def _claim_one(self, request: TickRequest, node: str) -> TickClaim:
        # One tick: the single script, lighter than a batch of one.
        result = await self._run("claim_tick", *self._claim_call(request, node))
        return _tick_claim(result)

    async def claim_ticks(self, requests: Sequence[TickRequest], node: str) -> list[TickClaim]:
        if not requests:
            return []
        batch = msgspec.json.encode(
            [
                (
                    r.key,
                    r.reference,
                    _ms(r.fire_at),
                    _ms(r.ttl),
                    _ms(r.keep or 0.0),
                    -1 if r.lease is None else _ms(r.lease),
                    1 if r.backfill else 0,
                )
                for r in requests
            ]
        )
        keys = [self._keys["paused"], self._keys["fences"]]
        answer = await self._run("claim_ticks", keys, self.prefix + "claim:", node, batch)
        claims = [_batch_claim(part) for part in answer.split(",")]
        if len(claims) != len(requests):
            raise CoordinatorError(
                f"Redis coordinator {self.url}: claim_ticks answered {len(claims)} claims "
                f"for {len(requests)} ticks"
            )
        return claims

    def _claim_call(self, request: TickRequest, node: str) -> list[Any]:
        """The claim script's keys, then its arguments but the clock offset."""
        keys = [self._keys["paused"], self.prefix + "claim:" + request.key, self._keys["fences"]]
        return [
            keys,
            request.reference,
            _ms(request.fire_at),
            _ms(request.ttl),
            node,
            _ms(request.keep or 0.0),
            "" if request.lease is None else _ms(request.lease),
            "1" if request.backfill else "0",
        ]

    async def renew_tick(self, key: str, fence: int, lease: float) -> bool:
        keys = [self.prefix + "claim:" + key]
        return bool(await self._run("settle_tick", keys, int(fence), max(1, _ms(lease))))

    async def finish_tick(self, key: str, fence: int) -> bool:
        keys = [self.prefix + "claim:" + key]
        return bool(await self._run("settle_tick", keys, int(fence), 0))

    async def set_cron_paused(self, reference: str, paused: bool) -> None:
        async with self._errors("set_cron_paused"):
            if paused:
                await self._client.sadd(self._keys["paused"], reference)
            else:
                await self._client.srem(self._keys["paused"], reference)

    async def paused_crons(self) -> frozenset[str]:
        async with self._errors("paused_crons"):
            members = await self._client.smembers(self._keys["paused"])
        return frozenset(members)

    async def set_pause_note(self, reference: str, note: PauseNote | None) -> None:
        async with self._errors("set_pause_note"):
            if note is None:
                await self._client.hdel(self._keys["notes"], reference)
            else:
                value = _note_encoder.encode(_Note(note.note, note.paused_at, note.paused_by))
                await self._client.hset(self._keys["notes"], reference, value)

    async def pause_notes(self) -> dict[str, PauseNote]:
        async with self._errors("pause_notes"):
            rows = await self._client.hgetall(self._keys["notes"])
        notes: dict[str, PauseNote] = {}
        for reference, value in rows.items():
            try:  # JSON of a closed shape, decoded by msgspec (never eval'd)
                row = _note_decoder.decode(value)
            except msgspec.DecodeError:
                continue  # not ours: skipped, as a malformed lease row would be
            notes[reference] = PauseNote(row.note, row.paused_at, row.paused_by)
        return notes
