"""The fleet's backplane on Redis (or Valkey), over ``redis.asyncio`` (``pip install elicitkit[redis]``).

What lives in Redis, under ``prefix`` (default ``elicitkit:``):

=============================  ==================================================================
``inst:<id>``                  an instance is alive: set by its heartbeat, expires after ``owner_ttl``
``sess:<session id>``          the instance that owns a session (refreshed while the owner lives)
``ev:<session>:<stream>``      a stream's recent events (a list, at most ``max_events``, kept
                               ``retention_seconds``), for ``Last-Event-ID`` on any instance
channel ``inbox:<id>``         messages to one instance (forwarded requests, answers, DELETE, ...)
channel ``ev:<session>:<s>``   a stream's live events, for whoever resumes it (a GET on any instance)
channel ``reply:<id>``         the live events of the requests one instance relays (each names its
                               stream): one subscription per instance, not one per request
channel ``broadcast``          list changes and resource updates, for every instance
=============================  ==================================================================

Every message and stored event is sealed (AES-GCM) under the fleet key (:mod:`.sealing`): Redis sees
channel and key names, never a question, an answer or a result.

Failure: when the connection to Redis breaks, the instance tells its transport
(:meth:`Inbox.lost_contact`): calls relayed through Redis end with an error, the sessions an
instance holds itself go on. When Redis is back (even empty, after a restart), the heartbeat
registers the instance and its sessions again, and new calls work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from elicitkit.backplane.base import Backplane, Event, Following, RedisPlace
from elicitkit.backplane.sealing import Sealer
from elicitkit.backplane.signing import fleet_key
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.runtime.stopping import stop_tasks

if TYPE_CHECKING:
    import redis.asyncio as aioredis

logger = logging.getLogger("elicitkit.fleet")

REDIS_URL_ENV = "ELICITKIT_REDIS_URL"
_MESSAGE_WINDOW = 30.0  # seconds an inbox message stays valid (clocks of a fleet roughly agree)

# The owner of a session, if that owner is alive: one round trip.
_OWNER_SCRIPT = """
local owner = redis.call('GET', KEYS[1])
if not owner then return false end
if redis.call('EXISTS', ARGV[1] .. owner) == 1 then return owner end
return false
"""

# Record one event: keep it (bounded, expiring) and tell whoever follows; one command, not four.
# ARGV[4]: the reply channel of the instance relaying the stream (the event goes there, after
# the stream's name and a NUL), or empty (the event goes to the stream's own channel).
_RECORD_SCRIPT = """
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if ARGV[4] == '' then return redis.call('PUBLISH', KEYS[1], ARGV[1]) end
return redis.call('PUBLISH', ARGV[4], KEYS[1] .. '\\0' .. ARGV[1])
"""


# One write for the writer task: (op, key or channel, value, reply channel, who awaits the result).
_Write = tuple[bytes, bytes, bytes | None, bytes, "asyncio.Future[int] | None"]


class _Follow:
    __slots__ = ("backplane", "callback", "channel", "direct")

    def __init__(
        self, backplane: RedisBackplane, channel: bytes, callback: Callable[[Event], None], direct: bool
    ) -> None:
        self.backplane = backplane
        self.channel = channel  # the stream's name
        self.callback = callback
        self.direct = direct  # its events come on this instance's reply channel

    def close(self) -> None:
        self.backplane._unfollow(self)


class RedisBackplane(Backplane):
    """A fleet's shared state on Redis; give every instance the same Redis, prefix and key.

    >>> backplane = RedisBackplane.from_url("redis://redis.internal:6379/0")
    >>> server = Server("shop", backplane=backplane)

    ``key``: the fleet's key (default: ``$ELICITKIT_FLEET_KEY``, else derived from
    ``$ELICITKIT_STATE_KEYS``). ``heartbeat``: seconds between heartbeats; an instance that
    misses them for ``owner_ttl`` seconds (default three beats) is dead and its sessions get 404.
    """

    shared = True

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        key: bytes | str | None = None,
        instance_id: str | None = None,
        prefix: str = "elicitkit:",
        heartbeat: float = 1.0,
        owner_ttl: float | None = None,
        session_ttl: float = 3600.0,
        retention_seconds: float = 300.0,
        max_events: int = 1000,
    ) -> None:
        self.client = client
        self.sealer = Sealer(fleet_key(key))  # the task store and pages seal their records with it too
        self.instance_id = instance_id or secrets.token_hex(6)
        self.prefix = prefix
        self.heartbeat = heartbeat
        self.owner_ttl = owner_ttl if owner_ttl is not None else 3 * heartbeat
        self.session_ttl = session_ttl
        self.retention_ms = int(retention_seconds * 1000)
        self.max_events = max_events
        p = prefix.encode()
        self._inst_prefix = p + b"inst:"
        self._inbox = None
        self._inbox_channel = p + b"inbox:" + self.instance_id.encode()
        self._broadcast_channel = p + b"broadcast"
        self._reply_prefix = p + b"reply:"
        self._reply_channel = self._reply_prefix + self.instance_id.encode()
        self._owner_script = client.register_script(_OWNER_SCRIPT)
        self._record_script = client.register_script(_RECORD_SCRIPT)
        self._local: set[str] = set()  # sessions this instance owns
        self._follows: dict[bytes, list[_Follow]] = {}  # subscribed streams, by name
        self._direct: dict[bytes, _Follow] = {}  # streams whose events come on the reply channel
        self._watched: dict[str, int] = {}
        self._seen: dict[bytes, float] = {}  # nonces of recent inbox messages (replay guard)
        self._seen_limit = 4096
        self._missed: dict[str, int] = {}  # watched owners found without a heartbeat, and how often
        self._queue: asyncio.Queue[_Write] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._pubsub: Any = None
        self._listen_client: aioredis.Redis | None = None
        self._connected = False
        self._was_lost = False  # lost since the last connection: tell the inbox when Redis is back
        self._started = 0
        self.owns_client = False  # from_url made the client: stop() closes it

    @property
    def signer(self) -> Sealer:
        """The old name of :attr:`sealer` (messages were MACed before they were sealed)."""
        return self.sealer

    @classmethod
    def from_url(cls, url: str, *, redis_options: dict[str, Any] | None = None, **options: Any) -> RedisBackplane:
        """A backplane on the Redis at ``url`` (``redis://host:6379/0``, ``rediss://`` for TLS);
        ``options`` as for the class, ``redis_options`` for the client (:func:`.redis_client.connect`:
        retried connections, TLS files and ACL credentials, also from the environment)."""
        from elicitkit.backplane.redis_client import connect

        backplane = cls(connect(url, **(redis_options or {})), **options)
        backplane.owns_client = True
        return backplane

    # -- life ----------------------------------------------------------------------------------

    def redis(self) -> RedisPlace:
        return RedisPlace(self.client, self.prefix, self.sealer)

    async def start(self) -> None:
        self._started += 1
        if self._started > 1:
            return
        self._queue = asyncio.Queue()
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        self._tasks = [
            loop.create_task(self._read_forever(ready), name="elicitkit.fleet.read"),
            loop.create_task(self._write_forever(self._queue), name="elicitkit.fleet.write"),
            loop.create_task(self._beat_forever(), name="elicitkit.fleet.heartbeat"),
        ]
        with contextlib.suppress(TimeoutError):  # Redis down at start: serve anyway, join when it is up
            await asyncio.wait_for(asyncio.shield(ready), 5.0)

    async def stop(self) -> None:
        self._started -= 1
        if self._started > 0:
            return
        deadline = time.monotonic() + 1.0  # let the last events out (a stream's end, a session's release)
        while self._queue is not None and not self._queue.empty() and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        await asyncio.sleep(0)
        await stop_tasks(self._tasks)
        self._tasks = []
        self._queue = None  # nothing writes any more: a send now goes straight to Redis
        with contextlib.suppress(Exception):
            keys = [self._inst_prefix + self.instance_id.encode()]
            keys += [self._sess_key(sid) for sid in self._local]
            await self.client.delete(*keys)
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
            self._pubsub = None
        if self._listen_client is not None:
            with contextlib.suppress(Exception):
                await self._listen_client.aclose()
                await self._listen_client.connection_pool.disconnect()  # its own pool: ours to close
            self._listen_client = None
        if self.owns_client:
            with contextlib.suppress(Exception):
                await self.client.aclose()

    # -- the registry --------------------------------------------------------------------------

    def _sess_key(self, session_id: str) -> bytes:
        return self.prefix.encode() + b"sess:" + session_id.encode()

    async def claim(self, session_id: str) -> None:
        self._local.add(session_id)
        await self.client.set(self._sess_key(session_id), self.instance_id, ex=int(self.session_ttl))

    def release(self, session_id: str) -> None:
        self._local.discard(session_id)
        if self._queue is not None:
            self._queue.put_nowait((b"del", self._sess_key(session_id), None, b"", None))

    async def owner(self, session_id: str) -> str | None:
        found = await self._owner_script(keys=[self._sess_key(session_id)], args=[self._inst_prefix])
        return found.decode() if isinstance(found, bytes) else None

    # -- messages ------------------------------------------------------------------------------

    async def send(self, instance_id: str, message: JSON) -> bool:
        channel = self.prefix.encode() + b"inbox:" + instance_id.encode()
        sealed = self._seal_message(channel, message)
        if self._queue is None:  # not started
            return await self.client.publish(channel, sealed) > 0
        # Through the writer: one pipeline (one connection, one round trip) carries whatever
        # sends and events are due together, in order, instead of a pool checkout per send.
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((b"pub", channel, sealed, b"", done))
        return await done > 0

    async def broadcast(self, method: str, params: dict[str, Any] | None) -> None:
        message = {"k": "bc", "method": method, "params": params, "from": self.instance_id}
        await self.client.publish(self._broadcast_channel, self._seal_message(self._broadcast_channel, message))

    def _seal_message(self, channel: bytes, message: JSON) -> bytes:
        body = orjson.dumps({**message, "t": time.time(), "n": secrets.token_hex(8)})
        return self.sealer.seal(channel, body)

    def _open_message(self, channel: bytes, data: bytes) -> JSON | None:
        body = self.sealer.open(channel, data)
        if body is None:
            where = channel.decode(errors="replace")
            logger.warning("dropped a fleet message that does not open (forged, changed or misplaced) on %s", where)
            return None
        message = orjson.loads(body)
        now = time.time()
        sent, nonce = message.get("t"), message.get("n")
        if not isinstance(sent, float | int) or abs(now - sent) > _MESSAGE_WINDOW or not isinstance(nonce, str):
            logger.warning("dropped a stale fleet message")
            return None
        seen_key = channel + nonce.encode()
        if seen_key in self._seen:
            logger.warning("dropped a replayed fleet message")
            return None
        self._seen[seen_key] = now
        if len(self._seen) > self._seen_limit:  # prune, and let the limit follow the load
            self._seen = {k: t for k, t in self._seen.items() if now - t <= _MESSAGE_WINDOW}
            self._seen_limit = max(4096, 2 * len(self._seen))
        return message  # type: ignore[no-any-return]

    # -- event streams --------------------------------------------------------------------------

    def _stream_name(self, session_id: str, key: str) -> bytes:
        return f"{self.prefix}ev:{session_id}:{key}".encode()

    def record(self, session_id: str, key: str, event: Event, reply_to: str | None = None) -> None:
        if self._queue is None:
            return
        name = self._stream_name(session_id, key)
        seq, payload, kind = event
        blob = self.sealer.seal(name, b"%d %s\n" % (seq, kind.encode()) + payload)
        self._queue.put_nowait((b"ev", name, blob, self._reply_prefix + reply_to.encode() if reply_to else b"", None))

    def _open_event(self, name: bytes, blob: bytes) -> Event | None:
        body = self.sealer.open(name, blob)
        if body is None:
            where = name.decode(errors="replace")
            logger.warning("dropped a fleet event that does not open (forged, changed or misplaced) on %s", where)
            return None
        head, _, payload = body.partition(b"\n")
        seq, _, kind = head.partition(b" ")
        return int(seq), payload, kind.decode()

    async def replay(self, session_id: str, key: str, after: int) -> list[Event] | None:
        name = self._stream_name(session_id, key)
        blobs = await self.client.lrange(name, 0, -1)
        if not blobs:
            return None
        opened = (self._open_event(name, b) for b in blobs if isinstance(b, bytes))
        events = [e for e in opened if e is not None]
        return [e for e in events if e[0] > after]

    async def follow(
        self, session_id: str, key: str, on_event: Callable[[Event], None], *, direct: bool = False
    ) -> Following:
        if not self._connected or self._pubsub is None:
            raise ConnectionError("the fleet's Redis is not reachable")
        channel = self._stream_name(session_id, key)
        if direct:  # the reply channel is subscribed already: nothing to ask Redis
            if channel in self._direct:
                raise ValueError(f"stream {key!r} of session {session_id[:8]} is followed directly already")
            follow = _Follow(self, channel, on_event, True)
            self._direct[channel] = follow
            return follow
        follow = _Follow(self, channel, on_event, False)
        followers = self._follows.get(channel)
        if followers is None:
            self._follows[channel] = [follow]
            await self._pubsub.subscribe(channel)
        else:
            followers.append(follow)
        return follow

    def _unfollow(self, follow: _Follow) -> None:
        if follow.direct:
            if self._direct.get(follow.channel) is follow:
                del self._direct[follow.channel]
            return
        followers = self._follows.get(follow.channel)
        if followers is None or follow not in followers:
            return
        followers.remove(follow)
        if not followers:
            del self._follows[follow.channel]
            if self._queue is not None and self._connected:
                self._queue.put_nowait((b"unsub", follow.channel, None, b"", None))

    # -- page storage (server pages): sealed under the fleet key, bound to its key name --------

    def shared_secret(self, label: str) -> bytes | None:
        return self.sealer.derive(label.encode())

    def _page_key(self, name: str) -> bytes:
        return self.prefix.encode() + b"page:" + name.encode()

    async def page_put(self, name: str, value: bytes, ttl: float, *, only_new: bool = False) -> bool:
        key = self._page_key(name)
        done = await self.client.set(key, self.sealer.seal(key, value), px=max(1, int(ttl * 1000)), nx=only_new)
        return bool(done)

    async def page_get(self, name: str) -> bytes | None:
        key = self._page_key(name)
        sealed = await self.client.get(key)
        return None if not isinstance(sealed, bytes) else self.sealer.open(key, sealed)

    async def page_take(self, name: str) -> bytes | None:
        key = self._page_key(name)
        sealed = await self.client.getdel(key)
        return None if not isinstance(sealed, bytes) else self.sealer.open(key, sealed)

    async def page_delete(self, name: str) -> None:
        await self.client.delete(self._page_key(name))

    def watch(self, owner: str) -> None:
        self._watched[owner] = self._watched.get(owner, 0) + 1

    def unwatch(self, owner: str) -> None:
        left = self._watched.get(owner, 0) - 1
        if left > 0:
            self._watched[owner] = left
        else:
            self._watched.pop(owner, None)
            self._missed.pop(owner, None)

    # -- the background tasks -------------------------------------------------------------------

    async def _read_forever(self, ready: asyncio.Future[None]) -> None:
        """Receive this instance's inbox, the broadcasts and followed streams; reconnect forever."""
        while True:
            try:
                pubsub = self._listener().pubsub()
                self._pubsub = pubsub
                await pubsub.subscribe(self._inbox_channel, self._broadcast_channel, self._reply_channel)
                self._connected = True
                if not ready.done():
                    ready.set_result(None)
                if self._was_lost:
                    self._was_lost = False
                    logger.warning("the fleet's Redis is back; calls that ran during the outage end")
                    if self._inbox is not None:
                        self._inbox.regained_contact()
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
                    if message is not None and message["type"] == "message":
                        await self._dispatch(message["channel"], message["data"])
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self._connected:
                    logger.warning("lost the fleet's Redis (%s); relayed calls end, local sessions go on", exc)
                    self._connected = False
                    self._was_lost = True
                    self._lost()
                with contextlib.suppress(Exception):
                    await self._pubsub.aclose()
                self._pubsub = None
                await asyncio.sleep(0.2)

    def _lost(self) -> None:
        follows = [f for group in self._follows.values() for f in group]
        follows += self._direct.values()
        self._follows.clear()
        self._direct.clear()
        if self._inbox is not None:
            self._inbox.lost_contact()
        for follow in follows:  # anything still following gets nothing more: end it
            follow.callback((0, b"", "lost"))

    def _listener(self) -> aioredis.Redis:
        """The client the subscriptions use: the same server and settings, but never retried.

        A pub/sub connection that redis-py silently replaced after a break has missed whatever
        was published meanwhile (an answer, a relayed call's result) and nobody would know: this
        one fails instead, so the loss is seen (relayed calls end) and the subscriptions are made again.
        """
        if self._listen_client is None:
            import redis.asyncio

            pool = self.client.connection_pool
            settings = {**pool.connection_kwargs, "retry": None, "retry_on_error": []}
            self._listen_client = redis.asyncio.Redis(
                connection_pool=redis.asyncio.ConnectionPool(connection_class=pool.connection_class, **settings)
            )
        return self._listen_client

    async def _dispatch(self, channel: bytes, data: bytes) -> None:
        if channel == self._reply_channel:  # an event of a stream this instance relays
            name, _, blob = data.partition(b"\0")
            follow = self._direct.get(name)
            if follow is None:  # the relay ended (its client left, or it timed out): nobody wants it
                return
            event = self._open_event(name, blob)
            if event is not None:
                follow.callback(event)
            return
        if channel == self._inbox_channel:
            message = self._open_message(channel, data)
            if message is not None and self._inbox is not None:
                try:
                    await self._inbox.receive(message)
                except Exception:
                    logger.exception("a forwarded message failed")
            return
        if channel == self._broadcast_channel:
            message = self._open_message(channel, data)
            if message is not None and message.get("from") != self.instance_id and self._on_broadcast is not None:
                try:
                    await self._on_broadcast(message["method"], message.get("params"))
                except Exception:
                    logger.exception("a broadcast from another instance failed")
            return
        followers = self._follows.get(channel)
        if followers and isinstance(data, bytes):
            event = self._open_event(channel, data)
            if event is not None:
                for follow in list(followers):
                    follow.callback(event)

    async def _write_forever(self, queue: asyncio.Queue[_Write]) -> None:
        """Sends, events and registry updates, in order, as few round trips as the load allows."""
        batch: list[_Write] = []
        try:
            while True:
                batch = [await queue.get()]
                await asyncio.sleep(0)  # let the handlers that are ready add theirs: bigger batches
                while not queue.empty():
                    batch.append(queue.get_nowait())
                await self._write(batch)
                batch = []
        finally:  # cancelled (stop): whoever awaits a send not yet written gets an error
            while not queue.empty():
                batch.append(queue.get_nowait())
            for *_, done in batch:
                if done is not None and not done.done():
                    done.set_exception(ConnectionError("the fleet's backplane stopped"))

    async def _write(self, batch: list[_Write]) -> None:
        import redis.exceptions

        retention, keep = self.retention_ms, self.max_events
        sha = self._record_script.sha
        todo = [item for item in batch if item[0] != b"unsub"]
        for attempt in range(2):
            pipe = self.client.pipeline(transaction=False)
            for op, name, blob, reply, _ in todo:
                if op == b"ev":
                    pipe.evalsha(sha, 1, name, blob, keep, retention, reply)  # type: ignore[arg-type]
                elif op == b"pub":
                    pipe.publish(name, blob)  # type: ignore[arg-type]
                elif op == b"del":
                    pipe.delete(name)
            try:
                results = await pipe.execute(raise_on_error=False) if len(pipe) else []
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.info("could not write %d fleet update(s): %s", len(todo), exc)
                for *_, done in todo:
                    if done is not None and not done.done():
                        done.set_exception(ConnectionError(f"the fleet's Redis is not reachable: {exc}"))
                break
            missing = []  # events whose script Redis lacks (it restarted empty): load it, then once more
            for item, result in zip(todo, results, strict=True):
                done = item[4]
                if isinstance(result, redis.exceptions.NoScriptError) and not attempt:
                    missing.append(item)
                elif done is not None and not done.done():
                    if isinstance(result, Exception):
                        done.set_exception(result)
                    else:
                        done.set_result(int(result))
                elif isinstance(result, Exception):
                    logger.info("could not write a fleet update: %s", result)
            if not missing:
                break
            todo = missing
            with contextlib.suppress(Exception):
                await self.client.script_load(_RECORD_SCRIPT)
        unsubscribe = [name for op, name, *_ in batch if op == b"unsub"]
        if unsubscribe and self._pubsub is not None and self._connected:
            with contextlib.suppress(Exception):
                await self._pubsub.unsubscribe(*unsubscribe)

    async def _beat_forever(self) -> None:
        """Say this instance is alive; register it again after Redis lost its data; check the
        owners this instance relays for."""
        inst_key = self._inst_prefix + self.instance_id.encode()
        ttl_ms = int(self.owner_ttl * 1000)
        refreshed = time.monotonic()
        while True:
            try:
                was = await self.client.set(inst_key, b"1", px=ttl_ms, get=True)
                now = time.monotonic()
                if (was is None or now - refreshed > self.session_ttl / 4) and self._local:
                    pipe = self.client.pipeline(transaction=False)  # Redis restarted empty, or time to refresh
                    for sid in list(self._local):
                        pipe.set(self._sess_key(sid), self.instance_id, ex=int(self.session_ttl))
                    await pipe.execute()
                    refreshed = now
                if self._watched:
                    owners = list(self._watched)
                    pipe = self.client.pipeline(transaction=False)
                    for owner in owners:
                        pipe.exists(self._inst_prefix + owner.encode())
                    alive = await pipe.execute()
                    for owner, up in zip(owners, alive, strict=True):
                        self._missed[owner] = 0 if up else self._missed.get(owner, 0) + 1
                    # twice in a row: one miss may be Redis restarting, before the owner's next beat
                    gone = [o for o in owners if self._missed.get(o, 0) >= 2]
                    for owner in gone:
                        del self._missed[owner]
                    if gone and self._inbox is not None:
                        logger.warning("instance(s) %s stopped their heartbeat", ", ".join(gone))
                        self._inbox.owners_gone(gone)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.debug("fleet heartbeat failed: %s", exc)
            await asyncio.sleep(self.heartbeat)
