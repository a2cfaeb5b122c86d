"""A real ``redis-server`` for the backplane tests: one per session (tests keep apart by key
prefix); the tests that stop Redis start their own."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from kit.fleet import RedisServer, redis_server


def quick_client(url: str) -> aioredis.Redis:
    """A client that gives up fast when Redis is down (the default retries for seconds)."""
    return aioredis.Redis.from_url(url, retry=Retry(NoBackoff(), 1), socket_connect_timeout=1, socket_timeout=2)


@pytest.fixture(scope="session")
def shared_redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


@pytest.fixture
def prefix() -> str:
    """A key prefix of this test's own, so tests sharing the session's Redis never meet."""
    return f"test-{uuid.uuid4().hex[:12]}:"


@pytest.fixture
async def client(shared_redis: RedisServer) -> AsyncIterator[aioredis.Redis]:
    made = quick_client(shared_redis.url)
    try:
        yield made
    finally:
        await made.aclose()


@pytest.fixture
async def other_client(shared_redis: RedisServer) -> AsyncIterator[aioredis.Redis]:
    """A second connection pool: what another instance of the fleet would have."""
    made = quick_client(shared_redis.url)
    try:
        yield made
    finally:
        await made.aclose()
