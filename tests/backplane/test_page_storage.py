"""The backplane's page storage, in one process and on a real ``redis-server``: what is put is got
back until it expires; ``only_new`` lets one writer win; a take hands the value to one taker
only; a value not sealed under the fleet's key (written into Redis by someone else) reads as
nothing; the claim secret is the same on every instance of one fleet and differs between fleets."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from elicitkit.backplane.base import Backplane
from elicitkit.backplane.redis_backplane import RedisBackplane
from kit.fleet import RedisServer, quick_client, shared_redis  # noqa: F401  (shared_redis: a fixture)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["in-process", "redis"])
async def store(request: pytest.FixtureRequest, prefix: str) -> AsyncIterator[Backplane]:
    if request.param == "in-process":
        yield Backplane()
        return
    server: RedisServer = request.getfixturevalue("shared_redis")
    backplane = RedisBackplane(quick_client(server.url), key="k", instance_id="a", prefix=prefix)
    backplane.owns_client = True
    try:
        yield backplane
    finally:
        await backplane.client.aclose()


async def test_put_get_expire_and_only_new(store: Backplane) -> None:
    assert await store.page_put("x", b"one", 0.3)
    assert await store.page_get("x") == b"one"
    assert not await store.page_put("x", b"two", 10, only_new=True) and await store.page_get("x") == b"one"
    await anyio.sleep(0.4)
    assert await store.page_get("x") is None
    assert await store.page_put("x", b"three", 10, only_new=True) and await store.page_get("x") == b"three"
    await store.page_delete("x")
    assert await store.page_get("x") is None


async def test_of_many_takers_one_gets_the_value(store: Backplane) -> None:
    await store.page_put("answer", b"42", 10)
    got: list[bytes | None] = []

    async def take() -> None:
        got.append(await store.page_take("answer"))

    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(take)
    assert sorted(got, key=lambda v: v or b"") == [None] * 7 + [b"42"]


async def test_a_value_written_without_the_fleets_key_reads_as_nothing(shared_redis: RedisServer, prefix: str) -> None:  # noqa: F811
    backplane = RedisBackplane(quick_client(shared_redis.url), key="k", instance_id="a", prefix=prefix)
    other_fleet = RedisBackplane(quick_client(shared_redis.url), key="other", instance_id="b", prefix=prefix)
    try:
        await backplane.client.set(f"{prefix}page:a:key", b'{"action":"accept","content":{"x":1}}')
        assert await backplane.page_get("a:key") is None and await backplane.page_take("a:key") is None
        await other_fleet.page_put("q:t", b"state", 10)
        assert await backplane.page_get("q:t") is None  # sealed for another fleet
        same = RedisBackplane(quick_client(shared_redis.url), key="k", instance_id="c", prefix=prefix)
        try:
            assert backplane.shared_secret("pages") == same.shared_secret("pages")
        finally:
            await same.client.aclose()
        assert backplane.shared_secret("pages") != other_fleet.shared_secret("pages")
        assert backplane.shared_secret("pages") != backplane.shared_secret("other use")
        assert Backplane().shared_secret("pages") is None
    finally:
        await backplane.client.aclose()
        await other_fleet.client.aclose()
