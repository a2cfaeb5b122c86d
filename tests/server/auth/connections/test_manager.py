"""Connections' tokens: refreshed near their end (one refresh for many callers), forgotten when
the provider refuses the refresh, and a refresh that keeps the old refresh token when none comes."""

from __future__ import annotations

import dataclasses
import time

import anyio
import pytest

from elicitkit.auth.tokens import TokenSet
from elicitkit.server.auth.connections import Connections, MemoryConnectionStore, Provider
from elicitkit.server.rounds.keys import KeyRing

from .test_web import FakeProvider, fake

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

__all__ = ["fake"]


def connections_for(fake: FakeProvider) -> Connections:
    hub = Provider(
        "hub",
        client_id="app",
        client_secret="app-secret",
        authorization_endpoint="https://provider.example/authorize",
        token_endpoint=fake.url + "/token",
        timeout=2.0,
    )
    return Connections([hub], store=MemoryConnectionStore(), keys=KeyRing.generate())


async def test_near_its_end_a_token_is_refreshed_once_for_every_caller(fake: FakeProvider) -> None:
    connections = connections_for(fake)
    fake.issued.append("first")
    await connections.save("ada", "hub", TokenSet("first", expires_at=time.time() + 10, refresh_token="refresh-first"))
    results: list[str] = []

    async def caller() -> None:
        tokens = await connections.token("ada", "hub")  # 10 s left, leeway 60: refresh
        assert tokens is not None
        results.append(tokens.access_token)

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(caller)
    assert len(set(results)) == 1 and results[0].endswith("-refreshed") and len(fake.issued) == 2
    kept = await connections.token("ada", "hub")
    assert kept is not None and kept.refresh_token == "refresh-first"  # none came back: the old one stays
    (listed,) = await connections.list("ada")
    assert listed.renews and listed.expires_at is not None and listed.expires_at > time.time()


async def test_a_refused_refresh_forgets_the_connection(fake: FakeProvider) -> None:
    connections = connections_for(fake)
    fake.mode = "refuse-refresh"
    await connections.save("ada", "hub", TokenSet("old", expires_at=time.time() - 1, refresh_token="refresh-old"))
    assert await connections.token("ada", "hub") is None
    assert await connections.list() == []  # the person will be asked again


async def test_a_token_that_cannot_renew_is_not_handed_out_expired(fake: FakeProvider) -> None:
    connections = connections_for(fake)
    await connections.save("ada", "hub", TokenSet("old", expires_at=time.time() + 5))
    assert await connections.token("ada", "hub") is None
    longer = dataclasses.replace(connections.providers["hub"], refresh_leeway=1)
    connections.providers["hub"] = longer
    found = await connections.token("ada", "hub")
    assert found is not None and found.access_token == "old"
