"""A fleet's pages on a real ``redis-server``: three "instances" (three servers with three page
apps, one Redis) serve one page; posts race through different instances; the answer is taken
once; a step saved after the answer (a slow instance) does not hide it; an answer taken by one
call and put back reaches that call's next attempt, never another page's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from elicitkit.backplane.redis_backplane import RedisBackplane
from elicitkit.server import Server
from elicitkit.server.pages import PageHost, configure_pages
from kit.fleet import RedisServer, prefix, quick_client, shared_redis  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

BASE = "http://fleet.test"
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"guests": {"type": "integer"}}, "required": ["guests"]}


@pytest.fixture
async def instances(shared_redis: RedisServer, prefix: str) -> AsyncIterator[list[PageHost]]:  # noqa: F811
    hosts: list[PageHost] = []
    servers: list[Server] = []
    for name in ("a", "b", "c"):
        server = Server("book-test", "1.0")
        backplane = RedisBackplane(quick_client(shared_redis.url), key="k", instance_id=name, prefix=prefix)
        backplane.owns_client = True
        server.use_backplane(backplane)
        host = configure_pages(server, public_url=BASE + "/mcp")
        host.mount("/mcp/ask/", None)
        servers.append(server)
        hosts.append(host)
    try:
        yield hosts
    finally:
        for host, server in zip(hosts, servers, strict=True):
            await host.aclose()
            backplane = server.backplane
            assert isinstance(backplane, RedisBackplane)
            await backplane.client.aclose()


def client_of(host: PageHost) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=host.app), base_url=BASE)


async def test_a_page_opened_on_one_instance_is_answered_through_the_others_once(instances: list[PageHost]) -> None:
    a, b, c = instances
    question, url = await a.open("key-1", "Guests?", SCHEMA, "chain-1")
    assert url == f"{BASE}/mcp/ask/{question.token}"
    async with client_of(b) as on_b, client_of(c) as on_c:
        page = await on_b.get(question.path)
        assert page.status_code == 200 and "Guests?" in page.text
        form = {"csrf": question.csrf, "action": "review", "f0": "4"}
        assert (await on_c.post(question.path, data=form)).status_code == 303
        review = await on_b.get(question.path)
        assert "Check your answers" in review.text
        stored = await b.app.store.load(question.token)  # type: ignore[union-attr]
        assert stored is not None
        sends = [{"csrf": question.csrf, "action": "send", "review": stored.review_id}] * 3
        decline = {"csrf": question.csrf, "action": "decline"}
        statuses: list[int] = []

        async def post(http: httpx.AsyncClient, data: dict[str, str]) -> None:
            statuses.append((await http.post(question.path, data=data)).status_code)

        async with anyio.create_task_group() as tg:  # a double click and a decline, on two instances
            for data in [*sends, decline]:
                tg.start_soon(post, on_b, data)
                tg.start_soon(post, on_c, data)
        assert all(status in (303, 403, 404) for status in statuses), statuses
        done = await on_c.get(question.path)
        assert 'data-outcome="' in done.text
    first = await c.take("key-1")
    assert first is not None and await a.take("key-1") is None and await b.take("key-1") is None
    if first.accepted:
        assert first.content == {"guests": 4}


async def test_a_step_saved_after_the_answer_does_not_hide_it(instances: list[PageHost]) -> None:
    a, b, _ = instances
    question, _ = await a.open("key-2", "Guests?", SCHEMA, "chain-2")
    store_b = b.app.store
    assert store_b is not None
    stale = await store_b.load(question.token)  # a slow instance read the page before the answer
    assert stale is not None and stale.result is None
    async with client_of(a) as on_a:
        await on_a.post(question.path, data={"csrf": question.csrf, "action": "decline"})
    stale.notice = "shown once"
    await store_b.save(stale)  # ...and saves its step after it
    seen = await store_b.load(question.token)
    assert seen is not None and seen.result is not None and seen.result.action.value == "decline"
    assert await a.wait(question, 2) is not None


async def test_an_answer_put_back_reaches_only_the_call_that_took_it(instances: list[PageHost]) -> None:
    a, b, c = instances
    question, _ = await a.open("key-3", "Guests?", SCHEMA, "chain-3")
    async with client_of(b) as on_b:
        await on_b.post(question.path, data={"csrf": question.csrf, "action": "decline"})
    call, other_call = object(), object()
    assert await c.take("key-3", call) is not None
    await c.restore("chain-3", other_call)  # another call's restore: nothing of ours comes back
    assert await b.take("key-3") is None
    assert await c.take("key-3", call) is None
    await c.restore("chain-3", call)  # this call needed another page: its answer waits for its next attempt
    back = await a.take("key-3")
    assert back is not None and back.action.value == "decline"
