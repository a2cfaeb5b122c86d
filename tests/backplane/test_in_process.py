"""One process, no Redis: the in-process backplane changes nothing on a request's path, and
``notify_session`` still finds the session (code written for a fleet runs unchanged)."""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit import Client, Server
from elicitkit.backplane import InProcessBackplane
from elicitkit.transports.http.serve import serve_http_background

pytestmark = pytest.mark.anyio


async def test_notify_session_reaches_a_local_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ELICITKIT_REDIS_URL", raising=False)
    server = Server("solo")
    heard: list[tuple[str, Any]] = []

    @server.tool()
    async def ping() -> str:
        return "pong"

    async with serve_http_background(server) as handle:
        assert isinstance(server.backplane, InProcessBackplane)
        assert handle.handler is not None and handle.handler.fleet is None  # no fleet path runs
        notes = lambda method, params: heard.append((method, params))  # noqa: E731
        async with Client(handle.url, mode="legacy", notification_callback=notes) as client:
            assert (await client.call_tool("ping")).text == "pong"
            session_id = client.transport.session_id  # type: ignore[attr-defined]
            assert await server.notify_elicitation_complete(session_id, "e-1")
            assert not await server.notify_elicitation_complete("no-such-session", "e-1")
            assert await client.wait_for_elicitation_complete("e-1", timeout=5)


def test_a_server_without_a_backplane_has_none_until_it_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ELICITKIT_REDIS_URL", raising=False)
    server = Server("solo")
    assert server.backplane is None
    assert isinstance(server.http_backplane(), InProcessBackplane)


def test_the_redis_backplane_brings_its_stores_unless_the_server_has_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from elicitkit.backplane.redis_backplane import RedisBackplane
    from elicitkit.server.rounds import AeadStateCodec, SpentStates
    from elicitkit.server.rounds.keys import KeyRing
    from elicitkit.server.rounds.redis_spent import RedisSpentStates
    from elicitkit.server.tasks.redis_store import RedisTaskStore
    from elicitkit.tasks import InMemoryTaskStore

    backplane = RedisBackplane.from_url("redis://127.0.0.1:1/0", key="k")
    codec = AeadStateCodec(KeyRing.generate(), spent=SpentStates())
    shared = Server("fleet", state_codec=codec, backplane=backplane)
    assert isinstance(shared.tasks.store, RedisTaskStore)
    assert isinstance(codec.spent, RedisSpentStates)
    assert codec.spent_later is codec.spent  # claimed by the round, awaited, fleet-wide
    own = InMemoryTaskStore()
    kept = Server("fleet", task_store=own, backplane=RedisBackplane.from_url("redis://127.0.0.1:1/0", key="k"))
    assert kept.tasks.store is own


def test_elicitkit_redis_url_makes_a_fleet(monkeypatch: pytest.MonkeyPatch) -> None:
    """``$ELICITKIT_REDIS_URL`` is read when HTTP serving starts (constructing connects nothing)."""
    from elicitkit.backplane.redis_backplane import RedisBackplane

    monkeypatch.setenv("ELICITKIT_REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("ELICITKIT_FLEET_KEY", "k")
    server = Server("fleet")
    assert server.backplane is None
    backplane = server.http_backplane()
    assert isinstance(backplane, RedisBackplane) and backplane.shared
    assert server.http_backplane() is backplane
