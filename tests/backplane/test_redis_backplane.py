"""The Redis backplane's own parts, on a real ``redis-server``: a relaying instance gets the
events of every request it relays on its one reply channel and hands each to its own stream;
sends share the writer's pipeline and still say whether anyone listened."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from elicitkit.backplane.base import EVENT, FINAL, Event
from elicitkit.backplane.redis_backplane import RedisBackplane
from elicitkit.backplane.signing import Signer, fleet_key
from elicitkit.protocol.jsonrpc import JSON
from kit.fleet import RedisServer, quick_client

pytestmark = pytest.mark.anyio

KEY = "backplane-tests-key"


class Inbox:
    """What an endpoint would be: it collects what reaches it."""

    def __init__(self) -> None:
        self.received: list[JSON] = []
        self.lost = 0
        self.regained = 0

    async def receive(self, message: JSON) -> None:
        self.received.append(message)

    async def deliver(self, session_id: str, message: JSON) -> bool:
        return False

    def lost_contact(self) -> None:
        self.lost += 1

    def regained_contact(self) -> None:
        self.regained += 1

    def owners_gone(self, owners: Iterable[str]) -> None:
        pass


@pytest.fixture
async def pair(shared_redis: RedisServer, prefix: str) -> AsyncIterator[tuple[RedisBackplane, RedisBackplane]]:
    """Two instances of one fleet: ``own`` holds sessions, ``rel`` relays requests to it."""
    made = []
    for name in ("own", "rel"):
        backplane = RedisBackplane(quick_client(shared_redis.url), key=KEY, instance_id=name, prefix=prefix)
        backplane.owns_client = True
        backplane.attach(Inbox())
        await backplane.start()
        made.append(backplane)
    try:
        yield made[0], made[1]
    finally:
        for backplane in made:
            await backplane.stop()


async def _until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(5):
        while not condition():  # noqa: ASYNC110 - a poll with a deadline
            await anyio.sleep(0.01)


async def test_direct_follows_share_the_reply_channel_each_gets_its_own_events(
    pair: tuple[RedisBackplane, RedisBackplane], client: aioredis.Redis, prefix: str
) -> None:
    own, rel = pair
    got: dict[str, list[Event]] = {"k1": [], "k2": []}
    await rel.follow("s1", "k1", got["k1"].append, direct=True)
    await rel.follow("s1", "k2", got["k2"].append, direct=True)
    # no subscription per stream: only each instance's inbox and reply channel, and the broadcasts
    channels = sorted(c.decode() for c in await client.pubsub_channels(f"{prefix}*"))
    assert channels == sorted(f"{prefix}{c}" for c in ("broadcast", "inbox:own", "inbox:rel", "reply:own", "reply:rel"))
    own.record("s1", "k1", (1, b'{"a":1}', EVENT), reply_to="rel")
    own.record("s1", "k2", (1, b'{"b":1}', EVENT), reply_to="rel")
    own.record("s1", "k1", (2, b'{"a":2}', FINAL), reply_to="rel")
    await _until(lambda: len(got["k1"]) == 2 and len(got["k2"]) == 1)
    assert got == {"k1": [(1, b'{"a":1}', EVENT), (2, b'{"a":2}', FINAL)], "k2": [(1, b'{"b":1}', EVENT)]}
    # recorded all the same: a client that loses its relay resumes on any instance
    assert await own.replay("s1", "k1", 1) == [(2, b'{"a":2}', FINAL)]
    with pytest.raises(ValueError, match="already"):  # one relay per stream key
        await rel.follow("s1", "k2", got["k2"].append, direct=True)


async def test_a_reply_for_a_stream_nobody_follows_any_more_is_dropped(
    pair: tuple[RedisBackplane, RedisBackplane],
) -> None:
    """The relay's client left (its follow closed) while the owner still sends: the late events
    go nowhere, and the streams still followed go on."""
    own, rel = pair
    gone: list[Event] = []
    kept: list[Event] = []
    following = await rel.follow("s2", "left", gone.append, direct=True)
    await rel.follow("s2", "stays", kept.append, direct=True)
    following.close()
    following.close()  # twice is harmless
    own.record("s2", "left", (1, b"{}", EVENT), reply_to="rel")
    own.record("s2", "stays", (1, b"{}", FINAL), reply_to="rel")
    await _until(lambda: len(kept) == 1)  # one writer, one channel: "left"'s event came first
    assert gone == []
    assert await rel.send("own", {"k": "ping"})  # the reading went on
    inbox = own._inbox
    assert isinstance(inbox, Inbox)
    await _until(lambda: len(inbox.received) == 1)


async def test_a_forged_reply_is_dropped(
    pair: tuple[RedisBackplane, RedisBackplane], client: aioredis.Redis, prefix: str
) -> None:
    """Publishing on an instance's reply channel without the fleet key feeds no relayed stream."""
    own, rel = pair
    got: list[Event] = []
    await rel.follow("s3", "k", got.append, direct=True)
    name = f"{prefix}ev:s3:k".encode()
    forged = Signer(fleet_key("not-the-fleet-key")).seal(name, b'1 f\n{"result":"forged"}')
    assert await client.publish(f"{prefix}reply:rel", name + b"\0" + forged) == 1
    own.record("s3", "k", (1, b'{"result":"genuine"}', FINAL), reply_to="rel")
    await _until(lambda: len(got) == 1)
    assert got == [(1, b'{"result":"genuine"}', FINAL)]


async def test_sends_ride_the_writer_and_say_whether_anyone_listens(
    pair: tuple[RedisBackplane, RedisBackplane],
) -> None:
    own, rel = pair
    inbox = own._inbox
    assert isinstance(inbox, Inbox)
    results = await _gather(*(rel.send("own", {"k": "n", "i": i}) for i in range(20)))
    assert results == [True] * 20
    await _until(lambda: len(inbox.received) == 20)
    assert [m["i"] for m in inbox.received] == list(range(20))  # in order
    assert not await rel.send("nobody", {"k": "n"})  # no such instance: nobody subscribed


async def test_a_subscribed_follow_still_gets_a_streams_own_channel(
    pair: tuple[RedisBackplane, RedisBackplane], client: aioredis.Redis, prefix: str
) -> None:
    """A resumption (or the standalone GET stream) subscribes to the stream's channel; the owner
    sends there once no relay is named."""
    own, rel = pair
    got: list[Event] = []
    following = await rel.follow("s4", "g", got.append)
    own.record("s4", "g", (1, b"{}", EVENT))
    await _until(lambda: len(got) == 1)
    following.close()  # and the subscription goes with it
    with anyio.fail_after(5):
        while await client.pubsub_numsub(  # noqa: ASYNC110 - a poll with a deadline
            f"{prefix}ev:s4:g"
        ) != [(f"{prefix}ev:s4:g".encode(), 0)]:
            await anyio.sleep(0.01)


async def test_sends_fail_when_redis_is_gone(prefix: str) -> None:
    from kit.fleet import redis_server

    with redis_server() as server:
        backplane = RedisBackplane(quick_client(server.url), key=KEY, instance_id="x", prefix=prefix)
        backplane.owns_client = True
        inbox = Inbox()
        backplane.attach(inbox)
        await backplane.start()
        try:
            assert not await backplane.send("nobody", {"k": "n"})
            server.stop()
            with pytest.raises(ConnectionError):
                await backplane.send("nobody", {"k": "n"})
            await _until(lambda: inbox.lost > 0)
        finally:
            await backplane.stop()


async def _gather(*awaitables: Any) -> list[Any]:
    results: list[Any] = [None] * len(awaitables)

    async def one(index: int, awaitable: Any) -> None:
        results[index] = await awaitable

    async with anyio.create_task_group() as tg:
        for index, awaitable in enumerate(awaitables):
            tg.start_soon(one, index, awaitable)
    return results


async def test_after_a_restart_pooled_connections_are_retried_and_the_inbox_is_told(prefix: str) -> None:
    """Issue 28, point 2: every pooled connection from before a Redis restart failed once on first
    reuse and nothing retried it. With the fleet's client (``from_url``), the first writes after
    the restart succeed, and the inbox hears once that Redis is back (calls of the outage end)."""
    from kit.fleet import redis_server

    with redis_server() as server:
        backplane = RedisBackplane.from_url(server.url, key=KEY, instance_id="x", prefix=prefix, heartbeat=0.2)
        inbox = Inbox()
        backplane.attach(inbox)
        await backplane.start()
        try:
            for n in range(8):  # several pooled connections, each used once
                await _gather(*(backplane.claim(f"s{n}.{i}") for i in range(4)))
            server.stop()
            await _until(lambda: inbox.lost > 0)
            server.start()
            await _until(lambda: inbox.regained == 1)
            results = await _gather(*(backplane.claim(f"after{i}") for i in range(16)))
            assert results == [None] * 16  # no "Connection closed by server"
            assert await backplane.owner("after3") == "x"
            assert await backplane.send("x", {"k": "n"})  # its inbox is subscribed again
            await _until(lambda: any(m.get("k") == "n" for m in inbox.received))
        finally:
            await backplane.stop()
