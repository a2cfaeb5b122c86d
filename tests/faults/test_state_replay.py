"""Issue 12 item 19: what a sealed 2026-07-28 ``requestState`` allows today, pinned exactly.

A sealed state is not single-use. Within its TTL it can be replayed any number of times (each
replay runs the tool to the end again), a retry may carry an answer for a question the state
already holds and that answer wins, and an earlier state still opens after a later one was
issued (a client can branch from any round). Only the TTL ends it. A later single-use option
(one round per state, with a store) should turn the marked assertions around, and only those.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kit.raw import HttpWire, Modern, Reply, complete, input_required

from ._support import fresh_http
from .fault_server import STATE_TTL_SECONDS

pytestmark = pytest.mark.anyio

REPLAYS = 5
PUBLIC_MESSAGE = "requestState is invalid or expired; restart the request without it"


@pytest.fixture
async def modern(url: str) -> AsyncIterator[Modern]:
    async with fresh_http() as http:
        yield Modern(HttpWire(http, url))


def _form(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def _text(reply: Reply) -> str:
    result = complete(reply)
    return str(result["content"][0]["text"])


async def _runs(modern: Modern) -> list[str]:
    """The finished runs of ``pair`` since the last look."""
    taken = complete(await modern.call("outcomes"))["structuredContent"]
    return list(taken.get("pair", []))


async def _advance(modern: Modern, seconds: float) -> None:
    complete(await modern.call("advance_clock", {"seconds": seconds}))


async def test_sealed_state_replays_within_its_ttl(modern: Modern) -> None:
    await _runs(modern)
    first = input_required(await modern.call("pair", {"greeting": "hi"}))
    assert list(first["inputRequests"]) == ["name"]
    s0 = first["requestState"]
    second = input_required(
        await modern.call("pair", {"greeting": "hi"}, responses={"name": _form(name="alice")}, state=s0)
    )
    assert list(second["inputRequests"]) == ["age"]
    s1 = second["requestState"]

    # Replayable: the same state and answer finish the call every time, and every time the
    # tool body runs to its end (its side effects happen again). [single-use: only the first]
    for _ in range(REPLAYS):
        assert (
            _text(await modern.call("pair", {"greeting": "hi"}, responses={"age": _form(age=30)}, state=s1))
            == "hi alice 30"
        )
    assert await _runs(modern) == ["done:hi alice 30"] * REPLAYS

    # A retry may answer a question the state already holds: the new answer replaces the sealed
    # one. [single-use: refused, s1 is spent]
    replaced = await modern.call(
        "pair", {"greeting": "hi"}, responses={"name": _form(name="bob"), "age": _form(age=31)}, state=s1
    )
    assert _text(replaced) == "hi bob 31"

    # An earlier state still opens after a later one was issued: a client may branch from any
    # round, and the branch gets a state of its own. [single-use: s0 is spent]
    branch = input_required(
        await modern.call("pair", {"greeting": "hi"}, responses={"name": _form(name="carol")}, state=s0)
    )
    s1b = branch["requestState"]
    assert s1b != s1 and branch["inputRequests"]["age"]["params"]["message"] == "Your age, carol?"
    assert (
        _text(await modern.call("pair", {"greeting": "hi"}, responses={"age": _form(age=32)}, state=s1b))
        == "hi carol 32"
    )
    assert (
        _text(await modern.call("pair", {"greeting": "hi"}, responses={"age": _form(age=30)}, state=s1))
        == "hi alice 30"
    )
    assert await _runs(modern) == ["done:hi bob 31", "done:hi carol 32", "done:hi alice 30"]

    # Bound to its request: the same state does not open for other arguments.
    other = await modern.call("pair", {"greeting": "yo"}, responses={"age": _form(age=30)}, state=s1)
    assert other.status == 400 and other.error["code"] == -32602

    try:
        # Only the TTL ends it: a few seconds before the expiry it still replays ...
        await _advance(modern, STATE_TTL_SECONDS - 5)
        assert (
            _text(await modern.call("pair", {"greeting": "hi"}, responses={"age": _form(age=30)}, state=s1))
            == "hi alice 30"
        )
        # ... and once it has passed, every state of the flow is refused the same way.
        await _advance(modern, 6)
        for state in (s0, s1, s1b):
            expired = await modern.call("pair", {"greeting": "hi"}, responses={"age": _form(age=30)}, state=state)
            assert expired.status == 400
            assert expired.error == {"code": -32602, "message": PUBLIC_MESSAGE}
        assert await _runs(modern) == ["done:hi alice 30"]
    finally:
        await _advance(modern, -(STATE_TTL_SECONDS + 1))
