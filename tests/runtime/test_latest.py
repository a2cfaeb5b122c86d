"""``Latest``: one pending value per key, taken in the order keys last changed."""

from __future__ import annotations

import asyncio

import pytest

from elicitkit.runtime.latest import Latest

pytestmark = pytest.mark.anyio


async def test_a_newer_value_replaces_an_unread_one_and_moves_to_the_back() -> None:
    latest: Latest[str, int] = Latest()
    latest.put("a", 1)
    latest.put("b", 2)
    latest.put("a", 3)
    assert len(latest) == 2 and latest.waiting() == [2, 3]
    assert [await latest.take(), await latest.take()] == [2, 3]


async def test_take_waits_for_a_value() -> None:
    latest: Latest[str, int] = Latest()
    taking = asyncio.ensure_future(latest.take())
    await asyncio.sleep(0)
    assert not taking.done()
    latest.put("a", 7)
    assert await asyncio.wait_for(taking, 1) == 7


async def test_the_end_lets_pending_values_out_first_then_stops_or_raises() -> None:
    latest: Latest[str, int] = Latest()
    latest.put("a", 1)
    latest.end()
    latest.put("b", 2)  # after the end: dropped
    assert await latest.take() == 1
    with pytest.raises(StopAsyncIteration):
        await latest.take()

    failed: Latest[str, int] = Latest()
    failed.end(ConnectionError("gone"))
    failed.end()  # the first end counts
    with pytest.raises(ConnectionError, match="gone"):
        await failed.take()


async def test_a_waiter_is_woken_by_the_end() -> None:
    latest: Latest[str, int] = Latest()
    taking = asyncio.ensure_future(latest.take())
    await asyncio.sleep(0)
    latest.end()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(taking, 1)


def test_discard_and_contains() -> None:
    latest: Latest[str, int] = Latest()
    latest.put("a", 1)
    assert "a" in latest
    latest.discard("a")
    latest.discard("missing")
    assert "a" not in latest and not latest.waiting()
