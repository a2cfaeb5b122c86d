"""A sign-in that crosses a fleet: the call waits on instance A, the person opens the start link,
confirms and comes back from the provider on instance B; A sees it finished (the store is the
fleet's Redis, the tokens sealed under the shared state keys) and carries on. Both eras.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest

from elicitkit import Client, ElicitationResult
from elicitkit.backplane.redis_backplane import RedisBackplane
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.server.rounds import AeadStateCodec
from elicitkit.server.rounds.keys import KeyRing
from elicitkit.transports.http.serve import serve_http_background
from kit.fleet import RedisServer, redis_server

from .test_web import FakeProvider, build, fake, finish_by_hand

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

__all__ = ["fake"]

ERAS = [
    pytest.param({"protocol_version": "2025-11-25"}, id="2025-11-25"),
    pytest.param({"mode": "modern", "protocol_version": "2026-07-28"}, id="2026-07-28"),
]


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


@asynccontextmanager
async def two_instances(fake: FakeProvider, redis: RedisServer, prefix: str) -> AsyncIterator[list[str]]:
    keys = KeyRing.from_secrets([KeyRing.generate_secret()])  # the fleet's shared state keys
    async with AsyncExitStack() as stack:
        urls = []
        for name in ("a", "b"):
            server = build(fake, fleet=True)
            server.state_codec = AeadStateCodec(keys)
            server.use_backplane(
                RedisBackplane.from_url(redis.url, instance_id=name, key="fleet-key-for-tests", prefix=prefix)
            )
            handle = await stack.enter_async_context(serve_http_background(server))
            urls.append(handle.url)
        yield urls


@pytest.mark.parametrize("era", ERAS)
async def test_the_link_and_the_callback_on_another_instance(
    fake: FakeProvider, redis: RedisServer, era: dict[str, Any]
) -> None:
    asked: list[UrlRequest] = []
    prefix = f"fleet-{era['protocol_version']}:"
    async with two_instances(fake, redis, prefix) as (a, b):

        async def host(request: ElicitRequest) -> ElicitationResult[Any]:
            assert isinstance(request, UrlRequest)
            asked.append(request)
            assert request.url.startswith(a.removesuffix("/mcp"))
            on_b = b.removesuffix("/mcp") + request.url.removeprefix(a.removesuffix("/mcp"))
            await finish_by_hand(on_b, fake)  # the person lands on B for every step
            return ElicitationResult.accept()

        async with Client(a, elicitation_callback=host, **era) as on_a:
            result = await on_a.call_tool("repos", {})
        async with Client(b, elicitation_callback=host, **era) as on_b:
            again = await on_b.call_tool("repos", {})  # B finds Ada's connection too
    assert result.text.startswith("token ") and again.text == result.text and len(asked) == 1
