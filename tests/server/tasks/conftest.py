"""A real ``redis-server`` for the Redis store tests here (fixtures from ``kit.fleet``), and a
fleet key in the environment: the Redis store seals its records under it, as a fleet's would."""

from collections.abc import Iterator

import pytest

from kit.fleet import client, other_client, prefix, shared_redis

__all__ = ["client", "fleet_key_env", "other_client", "prefix", "shared_redis"]


@pytest.fixture(autouse=True)
def fleet_key_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("ELICITKIT_FLEET_KEY", "task-store-tests-key")
    yield
