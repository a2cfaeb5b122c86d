"""Task records in Redis are sealed: Redis access alone neither reads a question, an answer or a
result, nor changes a record (its owner included); and the change channel survives a message
that is not a task id (issue 28, point 6)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import pytest
import redis.asyncio as aioredis

from elicitkit.server.tasks.redis_store import RedisTaskStore
from elicitkit.server.tasks.store import record_to_json
from server.tasks.test_store import waiting_task

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def _raw(client: aioredis.Redis, prefix: str, task_id: str) -> bytes:
    body = await client.hget(f"{prefix}task:{task_id}", "b")
    assert isinstance(body, bytes)
    return body


async def test_a_record_in_redis_shows_no_question_answer_result_or_owner(client: aioredis.Redis, prefix: str) -> None:
    store = RedisTaskStore(client, prefix=prefix)
    record = await store.create(waiting_task(result={"content": [{"type": "text", "text": "the-secret-result"}]}))
    raw = await _raw(client, prefix, record.task_id)
    for clear in (b"prod", b"alice", b"the-secret-result", b"waiting for an approver", b"deploy", b"api"):
        assert clear not in raw, clear
    assert (await store.get(record.task_id)) == record  # and it opens for the fleet


async def test_a_record_changed_in_redis_is_refused(
    client: aioredis.Redis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = RedisTaskStore(client, prefix=prefix)
    record = await store.create(waiting_task())
    other = await store.create(waiting_task(owner="bob"))
    key = f"{prefix}task:{record.task_id}"
    sealed = await _raw(client, prefix, record.task_id)

    phishing = dataclasses.replace(record, status_message="enter your password at https://evil.example")
    ownerless = dataclasses.replace(record, owner=None)
    flipped = sealed[:-1] + bytes([sealed[-1] ^ 1])
    moved = await _raw(client, prefix, other.task_id)  # a genuine record, sealed for another task
    with caplog.at_level(logging.WARNING, logger="elicitkit.tasks"):
        for forged in (record_to_json(phishing), record_to_json(ownerless), flipped, moved):
            await client.hset(key, "b", forged)
            assert await store.get(record.task_id) is None  # refused, never served
        # a genuine older body with the version bumped (a rollback of its state) does not open either
        await client.hset(key, mapping={"b": sealed, "v": b"2"})
        assert await store.get(record.task_id) is None
    assert sum("does not open" in r.getMessage() for r in caplog.records) == 5
    assert record.task_id in caplog.text and "evil" not in caplog.text
    await client.hset(key, mapping={"b": sealed, "v": b"1"})
    assert await store.get(record.task_id) == record  # the genuine body opens again


async def test_a_store_under_another_key_cannot_read_the_records(client: aioredis.Redis, prefix: str) -> None:
    record = await RedisTaskStore(client, prefix=prefix).create(waiting_task())
    assert await RedisTaskStore(client, prefix=prefix, key="another-fleet").get(record.task_id) is None


async def test_a_non_utf8_change_message_is_dropped_with_one_line_and_the_feed_goes_on(
    client: aioredis.Redis, other_client: aioredis.Redis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    watcher = RedisTaskStore(client, prefix=prefix)
    writer = RedisTaskStore(other_client, prefix=prefix)
    subscribed = asyncio.Event()
    seen: list[str] = []

    async def on_subscribed() -> None:
        subscribed.set()

    async def watch() -> None:
        async for task_id in watcher.changes(subscribed=on_subscribed):
            seen.append(task_id)
            return

    with caplog.at_level(logging.WARNING, logger="elicitkit.tasks"):
        watching = asyncio.create_task(watch())
        await asyncio.wait_for(subscribed.wait(), 5)
        assert await other_client.publish(writer.channel, b"\xff\xfe\x00not-utf8") == 1
        record = await writer.create(waiting_task())
        await asyncio.wait_for(watching, 5)
    assert seen == [record.task_id]  # the same subscription carried the next change
    dropped = [r for r in caplog.records if "not UTF-8" in r.getMessage()]
    assert len(dropped) == 1 and dropped[0].exc_info is None  # one line, no traceback
