"""The connection stores (memory, SQLite, Redis) and the vault: the same contract for each.

Compare-and-set writes (one refresh wins, one start link opens once), flows that expire, rows
per principal, and sealed bodies that open only under the ring and only where they were kept.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from elicitkit.auth.tokens import TokenSet
from elicitkit.server.auth.connections import Connections, MemoryConnectionStore, Provider
from elicitkit.server.auth.connections.store import ConnectionStore, Row
from elicitkit.server.auth.connections.vault import Vault
from elicitkit.server.rounds.keys import KeyRing
from kit.fleet import RedisServer, quick_client, redis_server

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ConnectionStore]:
    made: ConnectionStore
    if request.param == "memory":
        made = MemoryConnectionStore()
    elif request.param == "sqlite":
        from elicitkit.server.auth.connections.sqlite_store import SQLiteConnectionStore

        made = SQLiteConnectionStore(tmp_path / "tasks.db")
    else:
        from elicitkit.server.auth.connections.redis_store import RedisConnectionStore

        server: RedisServer = request.getfixturevalue("redis")
        client = quick_client(server.url)
        made = RedisConnectionStore(client, prefix=f"t{id(tmp_path)}:")
    yield made
    await made.close()


async def test_rows_by_principal_and_compare_and_set(store: ConnectionStore) -> None:
    await store.put(Row("ada", "gh", b"one", {"scope": "repo"}))
    await store.put(Row("eve", "gh", b"two", {}))
    await store.put(Row("ada", "bank", b"three", {}))
    assert [(r.principal, r.provider) for r in await store.rows()] == [("ada", "bank"), ("ada", "gh"), ("eve", "gh")]
    assert [r.provider for r in await store.rows("ada")] == ["bank", "gh"]
    found = await store.get("ada", "gh")
    assert found is not None and found.sealed == b"one" and found.meta == {"scope": "repo"}
    assert await store.put(Row("ada", "gh", b"four", {}), expected=b"one")
    assert not await store.put(Row("ada", "gh", b"five", {}), expected=b"one")  # lost the race
    assert not await store.put(Row("zed", "gh", b"six", {}), expected=b"one")  # nothing to replace
    assert (await store.get("ada", "gh")) == Row("ada", "gh", b"four", {})
    assert await store.delete("ada", "gh") and not await store.delete("ada", "gh")
    assert await store.get("ada", "gh") is None and await store.get("eve", "gh") is not None


async def test_flows_are_created_once_swapped_once_and_expire(store: ConnectionStore) -> None:
    later = time.time() + 60
    assert await store.flow_put("f1", b"new", later)
    assert not await store.flow_put("f1", b"again", later)  # exists
    assert await store.flow_put("f1", b"opened", later, expected=b"new")
    assert not await store.flow_put("f1", b"opened-twice", later, expected=b"new")  # a replayed link
    assert await store.flow_get("f1") == b"opened"
    assert await store.flow_put("f2", b"x", time.time() - 1)
    assert await store.flow_get("f2") is None  # expired


def test_the_vault_opens_only_its_own_under_the_ring() -> None:
    old, new = KeyRing.generate_secret(), KeyRing.generate_secret()
    sealed = Vault(KeyRing.from_secrets([old]), b"tokens").seal(b"ada/gh", b"secret")
    rotated = Vault(KeyRing.from_secrets([new, old]), b"tokens")
    assert rotated.open(b"ada/gh", sealed) == b"secret"  # rotation: the old key still opens
    assert rotated.open(b"eve/gh", sealed) is None  # copied under another principal
    assert Vault(KeyRing.from_secrets([old]), b"links").open(b"ada/gh", sealed) is None  # another use
    assert Vault(KeyRing.from_secrets([new]), b"tokens").open(b"ada/gh", sealed) is None  # key gone
    flipped = sealed[:-1] + bytes([sealed[-1] ^ 1])
    assert rotated.open(b"ada/gh", flipped) is None
    assert b"secret" not in sealed


async def test_a_row_copied_to_another_principal_does_not_open() -> None:
    store = MemoryConnectionStore()
    gh = Provider("gh", client_id="app", authorization_endpoint="https://gh/a", token_endpoint="https://gh/t")
    connections = Connections([gh], store=store, keys=KeyRing.generate())
    await connections.save("ada", "gh", TokenSet("at-ada", expires_at=time.time() + 3600))
    row = await store.get("ada", "gh")
    assert row is not None
    await store.put(Row("eve", "gh", row.sealed, row.meta))
    assert (await connections.token("ada", "gh")) is not None
    assert await connections.token("eve", "gh") is None
