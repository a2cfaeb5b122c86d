"""Hosts' ``resources/subscribe`` reaches the backend that owns the URI, once per URI however
many hosts subscribe (and ``resources/unsubscribe`` when the last leaves), so a backend that
sends updates only to its subscribers (an elicitkit server does) reaches every subscribed host."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest

from elicitkit import Client
from elicitkit.gateway import Gateway, parse_config
from elicitkit.transports.http.serve import serve_http_background
from kit.processes import serve_on_free_port
from kit.raw import ACCEPT, headers_for, meta, wait_until

from .support import BACKEND, Person

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

URI = "note://hello"


@pytest.fixture(scope="module")
def http_backend(state: Path) -> Iterator[str]:
    """Our backend over Streamable HTTP: one process, so every gateway connection sees its subscriptions."""
    argv = lambda port: [sys.executable, str(BACKEND), "http", str(port)]  # noqa: E731
    with serve_on_free_port(argv, "backend", env={**os.environ, "GATEWAY_TEST_STATE": str(state)}) as served:
        yield f"http://127.0.0.1:{served[0]}/mcp"


@pytest.fixture(scope="module")
async def gateway(http_backend: str) -> AsyncIterator[Gateway]:
    config = parse_config({"backends": [{"name": "web", "url": http_backend, "namespace": "web."}]})
    async with Gateway(config).running() as running:
        yield running


def hearing(into: list[str]) -> Any:
    async def heard(method: str, params: Any) -> None:
        if method == "notifications/resources/updated":
            into.append(params["uri"])

    return heard


async def subscribers(host: Client) -> int:
    return int((await host.call_tool("web.subscribers", {"uri": URI})).text)


async def test_subscriptions_are_forwarded_once_per_uri_and_updates_reach_every_subscriber(gateway: Gateway) -> None:
    heard_a: list[str] = []
    heard_b: list[str] = []
    async with (
        Client(gateway, elicitation_callback=Person(), notification_callback=hearing(heard_a)) as a,
        Client(gateway, elicitation_callback=Person(), notification_callback=hearing(heard_b)) as b,
    ):
        assert (await a.call_tool("web.touch", {"uri": URI})).text == f"touched {URI}"
        await anyio.sleep(0.3)
        assert heard_a == [] and heard_b == []  # nobody subscribed: the backend sends nothing
        assert await subscribers(a) == 0

        await a.subscribe_resource(URI)
        await b.subscribe_resource(URI)
        assert await subscribers(a) == 1  # one subscription at the backend for both hosts
        await a.call_tool("web.touch", {"uri": URI})
        await wait_until(lambda: heard_a == [URI] and heard_b == [URI], 10, "both hosts to hear the update")

        await a.unsubscribe_resource(URI)
        assert await subscribers(a) == 1  # b still wants it
        await b.call_tool("web.touch", {"uri": URI})
        await wait_until(lambda: heard_b == [URI, URI], 10, "the host still subscribed to hear it")
        await anyio.sleep(0.3)
        assert heard_a == [URI]  # a left: it hears no more
        await b.unsubscribe_resource(URI)
        assert await subscribers(b) == 0  # the last one left: the backend was told
        assert gateway.subscriptions.leases == {}  # and the connection went back to the pool


async def test_a_host_that_goes_away_without_unsubscribing_is_dropped(gateway: Gateway) -> None:
    heard: list[str] = []
    async with Client(gateway, elicitation_callback=Person(), notification_callback=hearing(heard)) as a:
        await a.subscribe_resource(URI)
        assert await subscribers(a) == 1
    async with Client(gateway, elicitation_callback=Person()) as b:
        await b.call_tool("web.touch", {"uri": URI})  # the update finds no subscriber left
        await wait_until(lambda: URI not in gateway.subscriptions.at_backend, 10, "the backend to be unsubscribed")
        assert await subscribers(b) == 0


async def test_a_uri_no_backend_has_is_subscribed_at_the_gateway_only(gateway: Gateway) -> None:
    async with Client(gateway, elicitation_callback=Person()) as a:
        await a.subscribe_resource("note://nobody-has-this")
        assert "note://nobody-has-this" not in gateway.subscriptions.at_backend
        await a.unsubscribe_resource("note://nobody-has-this")


async def test_a_2026_listen_stream_holds_its_subscriptions_at_the_backend(gateway: Gateway) -> None:
    """A 2026 host's ``subscriptions/listen`` naming the URI subscribes the backend while it is open."""
    async with (
        serve_http_background(gateway, port=0) as served,
        Client(gateway, elicitation_callback=Person()) as other,
    ):
        params = {"notifications": {"resourceSubscriptions": [URI]}, "_meta": meta()}
        body = {"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen", "params": params}
        headers = {"Accept": ACCEPT, "Content-Type": "application/json", **headers_for("subscriptions/listen", params)}
        frames: list[dict[str, Any]] = []
        async with (
            httpx.AsyncClient(timeout=10, trust_env=False) as http,
            http.stream("POST", served.url, content=orjson.dumps(body), headers=headers) as response,
        ):
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = response.aiter_lines()
            async for line in lines:
                if line.startswith("data:") and line[5:].strip():
                    frames.append(orjson.loads(line[5:]))
                    break  # the acknowledgement
            assert frames[0]["params"]["notifications"]["resourceSubscriptions"] == [URI], frames
            assert await subscribers(other) == 1
            await other.call_tool("web.touch", {"uri": URI})
            with anyio.fail_after(10):
                async for line in lines:
                    if line.startswith("data:") and line[5:].strip():
                        frames.append(orjson.loads(line[5:]))
                        break
            assert frames[1]["method"] == "notifications/resources/updated", frames
            assert frames[1]["params"]["uri"] == URI
        # the stream closed: the backend is told once the gateway sees it go
        await wait_until(lambda: URI not in gateway.subscriptions.at_backend, 10, "the backend to be unsubscribed")
        assert await subscribers(other) == 0


@pytest.fixture(scope="module")
async def gateway_2026(http_backend: str) -> AsyncIterator[Gateway]:
    """The same backend, spoken to on 2026-07-28: it sends nothing unasked, only on a listen stream."""
    config = parse_config({"backends": [{"name": "new", "url": http_backend, "namespace": "new.", "mode": "modern"}]})
    async with Gateway(config).running() as running:
        yield running


async def test_a_2026_backends_list_change_reaches_the_hosts(gateway_2026: Gateway) -> None:
    heard: list[str] = []
    await wait_until(lambda: "new" in gateway_2026.subscriptions.watches, 10, "the gateway to listen to the backend")
    note = lambda method, params: heard.append(method)  # noqa: E731
    async with Client(gateway_2026, elicitation_callback=Person(), notification_callback=note) as client:
        assert (await client.call_tool("new.grow", {"name": "shoot"})).text == "added shoot"
        await wait_until(lambda: "new.shoot" in gateway_2026.catalogue.tools, 10, "the gateway to list the new tool")
        await wait_until(lambda: "notifications/tools/list_changed" in heard, 10, "the host to hear of it")
        assert (await client.call_tool("new.shoot")).text == "shoot is here"


async def test_a_2026_backend_is_subscribed_through_its_listen_stream(gateway_2026: Gateway) -> None:
    heard: list[str] = []
    async with Client(gateway_2026, elicitation_callback=Person(), notification_callback=hearing(heard)) as a:
        await a.subscribe_resource(URI)
        watching = gateway_2026.subscriptions.watches["new"]
        assert URI in watching.agreed and gateway_2026.subscriptions.at_backend[URI] == "new"
        await a.call_tool("new.touch", {"uri": URI})
        await wait_until(lambda: heard == [URI], 10, "the host to hear the update")

        await a.unsubscribe_resource(URI)
        assert URI not in gateway_2026.subscriptions.watches["new"].agreed  # a new stream, without it
        await wait_until(lambda: not watching.open, 10, "the old stream to close after the new one opened")
        await a.call_tool("new.touch", {"uri": URI})
        await anyio.sleep(0.3)
        assert heard == [URI]  # unsubscribed: no more updates
