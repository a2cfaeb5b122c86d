"""Tasks on Redis: one :class:`~elicitkit.server.tasks.store.TaskStore` for a whole fleet.

Every instance of a fleet gives its ``Server(task_store=RedisTaskStore(client))`` the same Redis,
and a task created on instance A is read, answered and finished on any instance.

How a task moves between instances (nothing here is new machinery; it is the task runner's
replay contract with a shared store):

* A waiting task holds no coroutine anywhere: it is one record. ``tasks/get`` on B reads it.
* ``tasks/update`` on B records the answers with a compare-and-set; the update that answers the
  last open question also takes the run lease for B in the same write, and B runs the body again
  from the top with the recorded answers (no message to A: A holds nothing to tell).
* Two instances answering at once race on the record's version: exactly one wins, so the tail
  after the last question runs once.
* If the instance running a body dies, its lease stops being renewed; the sweeper of any other
  instance finds the task in :meth:`list_stale` and settles it (fails it, or runs it again for
  tools declared ``rerun_on_restart``).

Layout, under ``prefix`` (default ``elicitkit:``):

* ``{prefix}task:{id}``: a hash, ``v`` (the version) and ``b`` (the record as compact JSON, sealed:
  encrypted and authenticated under the fleet key, bound to the key and the version, so Redis
  access alone can neither read a question, an answer or a result nor change a record, its owner
  included; a record that does not open is refused with a log line, as if it did not exist);
* ``{prefix}tasks:expiry``: a sorted set of ids by expiry (creation + TTL), for :meth:`list_expired`;
* ``{prefix}tasks:stale``: a sorted set of ``working`` ids by lease expiry (``-inf`` when no
  lease), for :meth:`list_stale`; other statuses are not in it;
* ``{prefix}tasks:changed``: a pub/sub channel; every committed write publishes the task id (in
  clear: routing, not content; a message that is not an id is dropped with one log line)
  (:meth:`changes`), so the other instances can tell their ``subscriptions/listen`` streams
  (:class:`~elicitkit.server.tasks.relay.TaskChangeRelay`, started by the server on first use).

Every write is one Lua script (compare, write, re-index, set the key's expiry, publish), so it
is atomic on the server and costs one round trip. A record with a TTL also gets a Redis expiry
``GRACE`` seconds after it (set as a duration from each write: the time the record has left by
its own clock, plus ``GRACE``), so Redis never keeps it long even if no instance sweeps; ids whose
record Redis already dropped are removed from the sorted sets by the next listing. Records with
no TTL (``ttl_ms=None``) are kept until deleted, as in the other stores. One Redis (or a primary
with replicas), not Redis Cluster: the scripts touch keys in more than one hash slot.

Redis down or restarting: every method raises :class:`TaskStoreUnavailable` (an ``MCPError``,
-32603 with a fixed message), so the client gets a clean error and the driver's text stays in the
log; the next call after Redis is back works (redis-py reconnects, scripts are loaded again).
Give the client a ``socket_timeout`` so a Redis that stops answering fails calls instead of
hanging them. The client is the caller's: :meth:`close` does not close it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from elicitkit.backplane.sealing import Sealer
from elicitkit.backplane.signing import fleet_key
from elicitkit.protocol.tasks import WORKING
from elicitkit.server.tasks.store import (
    TaskExists,
    TaskRecord,
    TaskStore,
    TaskStoreUnavailable,
    record_from_json,
    record_to_json,
)

__all__ = ["GRACE", "RedisTaskStore"]

logger = logging.getLogger("elicitkit.tasks")

GRACE = 300.0  # seconds Redis keeps a record past its TTL, so the sweepers get to delete it first

# ARGV[1] body, ARGV[2] expiry score or '', ARGV[3] staleness score or '', ARGV[4] PEXPIRE ms or '',
# ARGV[5] the id; KEYS[1] the record, KEYS[2] the expiry set, KEYS[3] the stale set, KEYS[4] the channel.
_INDEX = """
if ARGV[2] == '' then redis.call('ZREM', KEYS[2], ARGV[5]) else redis.call('ZADD', KEYS[2], ARGV[2], ARGV[5]) end
if ARGV[3] == '' then redis.call('ZREM', KEYS[3], ARGV[5]) else redis.call('ZADD', KEYS[3], ARGV[3], ARGV[5]) end
if ARGV[4] == '' then redis.call('PERSIST', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
redis.call('PUBLISH', KEYS[4], ARGV[5])
"""

_CREATE = (
    """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'v', '1', 'b', ARGV[1])
"""
    + _INDEX
    + "return 1\n"
)

# ARGV[6] the expected version
_REPLACE = (
    """
local v = redis.call('HGET', KEYS[1], 'v')
if (not v) or v ~= ARGV[6] then return 0 end
redis.call('HINCRBY', KEYS[1], 'v', 1)
redis.call('HSET', KEYS[1], 'b', ARGV[1])
"""
    + _INDEX
    + "return 1\n"
)

# ARGV[1] the expected version or '', ARGV[2] the id
_DELETE = """
if ARGV[1] ~= '' then
  local v = redis.call('HGET', KEYS[1], 'v')
  if (not v) or v ~= ARGV[1] then return 0 end
end
local n = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
if n == 1 then redis.call('PUBLISH', KEYS[4], ARGV[2]) end
return n
"""

# KEYS[1] the set to list, KEYS[2] the other set; ARGV[1] now, ARGV[2] limit, ARGV[3] the record key prefix.
# Ids whose record Redis expired on its own are dropped from both sets on the way.
_LIST_DUE = """
local out = {}
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  if redis.call('EXISTS', ARGV[3] .. id) == 1 then
    out[#out + 1] = id
  else
    redis.call('ZREM', KEYS[1], id)
    redis.call('ZREM', KEYS[2], id)
  end
end
return out
"""

_UNAVAILABLE = (RedisError, OSError)


class RedisTaskStore(TaskStore):
    """Task records in Redis, shared by every instance of a fleet (see the module docstring).

    ``client``: a ``redis.asyncio.Redis`` returning bytes (the default), owned by the caller.
    ``prefix``: put in front of every key and channel, so several servers (or tests) can share
    one Redis. ``sealer``: what seals the records (the backplane's, when the server makes the
    store); else one under ``key`` (default: ``$ELICITKIT_FLEET_KEY``, as the backplane).
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        prefix: str = "elicitkit:",
        sealer: Sealer | None = None,
        key: bytes | str | None = None,
    ) -> None:
        self.client = client
        self.sealer = sealer if sealer is not None else Sealer(fleet_key(key))
        self.prefix = prefix
        self._record_prefix = f"{prefix}task:"
        self._expiry = f"{prefix}tasks:expiry"
        self._stale = f"{prefix}tasks:stale"
        self.channel = f"{prefix}tasks:changed"
        self._create: AsyncScript = client.register_script(_CREATE)
        self._replace: AsyncScript = client.register_script(_REPLACE)
        self._delete: AsyncScript = client.register_script(_DELETE)
        self._list_due: AsyncScript = client.register_script(_LIST_DUE)
        self._closed = False

    # -- plumbing

    def _keys(self, task_id: str) -> list[str]:
        return [self._record_prefix + task_id, self._expiry, self._stale, self.channel]

    def _seal(self, record: TaskRecord, version: int) -> bytes:
        return self.sealer.seal(self._where(record.task_id, version), record_to_json(record))

    def _where(self, task_id: str, version: int) -> bytes:
        return b"%s%s\0%d" % (self._record_prefix.encode(), task_id.encode(), version)

    def _index_args(self, record: TaskRecord, version: int) -> list[Any]:
        """What the scripts need to re-index a record: its body, its scores, its Redis expiry."""
        expires = record.expires_at
        if record.status != WORKING:
            stale = ""
        elif record.lease_expires_at is None:
            stale = "-inf"  # working with no lease: stale at once
        else:
            stale = repr(record.lease_expires_at)
        return [
            self._seal(record, version),
            "" if expires is None else repr(expires),
            stale,
            # a duration, not a date: the record's clock need not be Redis's (tests inject one)
            "" if expires is None else str(int((max(expires - record.updated_at, 0.0) + GRACE) * 1000)),
            record.task_id,
        ]

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (then every method raises ``RuntimeError``)."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the task store is closed")

    @staticmethod
    def _unavailable(action: str, exc: BaseException, *, log: bool = True) -> TaskStoreUnavailable:
        reason = f"Redis {action} failed: {type(exc).__name__}: {exc}"
        if log:
            logger.warning("task store unavailable: %s", reason)
        return TaskStoreUnavailable(reason)

    # -- the interface

    async def create(self, record: TaskRecord) -> TaskRecord:
        self._check_open()
        try:
            created = await self._create(keys=self._keys(record.task_id), args=self._index_args(record, 1))
        except _UNAVAILABLE as exc:
            raise self._unavailable("create", exc) from exc
        if not created:
            raise TaskExists(record.task_id)
        return dataclasses.replace(record, version=1)

    async def get(self, task_id: str) -> TaskRecord | None:
        self._check_open()
        try:
            version, body = await self.client.hmget(self._record_prefix + task_id, ["v", "b"])
        except _UNAVAILABLE as exc:
            raise self._unavailable("get", exc) from exc
        if version is None or body is None:
            return None
        sealed = body if isinstance(body, bytes) else body.encode()
        opened = self.sealer.open(self._where(task_id, int(version)), sealed)
        if opened is None:
            logger.warning("task record %s in Redis does not open (changed or forged there): refused", task_id)
            return None
        return record_from_json(opened, int(version))

    async def replace(self, record: TaskRecord, *, expected_version: int) -> TaskRecord | None:
        self._check_open()
        args = [*self._index_args(record, expected_version + 1), str(expected_version)]
        try:
            changed = await self._replace(keys=self._keys(record.task_id), args=args)
        except _UNAVAILABLE as exc:
            raise self._unavailable("replace", exc) from exc
        return dataclasses.replace(record, version=expected_version + 1) if changed else None

    async def delete(self, task_id: str, *, expected_version: int | None = None) -> bool:
        self._check_open()
        args = ["" if expected_version is None else str(expected_version), task_id]
        try:
            removed = await self._delete(keys=self._keys(task_id), args=args)
        except _UNAVAILABLE as exc:
            raise self._unavailable("delete", exc) from exc
        return bool(removed)

    async def list_expired(self, now: float, *, limit: int = 100) -> list[str]:
        return await self._due(self._expiry, self._stale, now, limit)

    async def list_stale(self, now: float, *, limit: int = 100) -> list[str]:
        return await self._due(self._stale, self._expiry, now, limit)

    async def _due(self, listed: str, other: str, now: float, limit: int) -> list[str]:
        self._check_open()
        if limit <= 0:
            return []
        try:
            ids: Sequence[bytes | str] = await self._list_due(
                keys=[listed, other], args=[repr(now), str(limit), self._record_prefix]
            )
        except _UNAVAILABLE as exc:
            raise self._unavailable("listing", exc) from exc
        return [_text(task_id) for task_id in ids]

    async def close(self) -> None:
        """Stop using the store; the records stay in Redis, and the client stays open (it is the caller's)."""
        self._closed = True

    # -- beyond the interface

    async def changes(self, *, subscribed: Callable[[], Awaitable[None]] | None = None) -> AsyncIterator[str]:
        """The id of every task any instance changes from now on (created, replaced or deleted).

        For carrying ``notifications/tasks`` across a fleet (:class:`~elicitkit.server.tasks.relay.TaskChangeRelay`
        reads the record and hands it to the local :class:`~elicitkit.server.tasks.events.TaskEvents`).
        ``subscribed`` is awaited each time Redis confirms the subscription: at first, and again
        after redis-py reconnected on its own, since changes made while it was away are lost (pub/sub
        is at most once) and the caller may want to read what it watches again. Raises
        :class:`TaskStoreUnavailable` when the connection is lost for good.
        """
        self._check_open()
        pubsub = self.client.pubsub()
        try:
            await pubsub.subscribe(self.channel)
            async for message in pubsub.listen():
                kind = message.get("type")  # redis-py gives it as str
                if kind == "message":
                    task_id = _task_id(message["data"])
                    if task_id is not None:
                        yield task_id
                elif kind == "subscribe" and subscribed is not None:
                    await subscribed()
        except _UNAVAILABLE as exc:
            raise self._unavailable("subscribe", exc, log=False) from exc  # the caller retries: it logs
        finally:
            try:
                await pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
            except _UNAVAILABLE:
                logger.debug("closing the task change subscription failed", exc_info=True)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _task_id(data: bytes | str) -> str | None:
    """A task id from the change channel, or None (logged once per message) if it is not one."""
    try:
        return _text(data)
    except UnicodeDecodeError:
        logger.warning("dropped a message on the task change channel that is not UTF-8 (%d bytes)", len(data))
        return None
