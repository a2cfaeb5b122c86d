"""A second principal can neither read nor answer the first one's page: one process and a
Redis fleet, both eras.

Ada and Eve (two bearer tokens) make the same call, whose question goes to the server's page
(their clients cannot be asked). Each gets a page of their own; Eve's answer on hers never
reaches Ada's call, and Ada's answer only Ada's; in the fleet the calls, the pages and the
answers land on different instances.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from elicitkit import Client, Context, Server
from elicitkit.auth import StaticToken
from elicitkit.server.auth import JWTVerifier, ResourceServer
from elicitkit.transports.http.serve import serve_http_background
from kit.processes import free_port

from ..test_pages import answer_page
from .local_issuer import LocalIssuer, local_issuer
from .test_principal_in_a_fleet import RESOURCE, protected_fleet

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

ERAS = [
    pytest.param({"mode": "legacy", "protocol_version": "2025-11-25"}, id="2025-11-25"),
    pytest.param({"mode": "modern", "protocol_version": "2026-07-28"}, id="2026-07-28"),
]


def link(text: str) -> str:
    found = re.search(r"http://\S+/mcp/ask/[A-Za-z0-9_\-]+", text)
    assert found is not None, text
    return found.group(0)


def page_of(url: str) -> str:
    """The page itself (its token): in a fleet each instance links to it at its own address."""
    return url.rsplit("/ask/", 1)[1]


@asynccontextmanager
async def one_process(issuer: LocalIssuer) -> AsyncIterator[tuple[str, str]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    verifier = JWTVerifier(issuer.url, url, jwks_uri=issuer.jwks_uri)
    server = Server("pages", auth=ResourceServer(verifier, resource=url, authorization_servers=[issuer.url]))

    @server.tool()
    async def book(ctx: Context, day: str) -> str:
        result = await ctx.elicit(f"How many guests on {day}?", int, fallback="page", timeout=10)
        return f"booked {result.data} on {day}" if result.accepted else result.action.value

    async with serve_http_background(server, port=port):
        yield url, url


async def scenario(urls: tuple[str, str], tokens: dict[str, str], era: dict[str, Any], day: str = "Friday") -> None:
    first, second = urls
    book = {"day": day}

    def as_(who: str, url: str) -> Client:
        return Client(url, auth=StaticToken(tokens[who]), **era)  # no elicitation: the page it is

    async with as_("ada", first) as ada, as_("eve", second) as eve, as_("ada", second) as ada_elsewhere:
        ada_page = link((await ada.call_tool("book", book)).text)
        eve_page = link((await eve.call_tool("book", book)).text)
        assert page_of(eve_page) != page_of(ada_page)  # Eve cannot reach Ada's page through her call
        await answer_page(eve_page, {"f0": "9"})
        still = await ada_elsewhere.call_tool("book", book)
        assert "booked" not in still.text and page_of(link(still.text)) == page_of(
            ada_page
        )  # Eve's answer is not Ada's
        assert (await eve.call_tool("book", book)).text == f"booked 9 on {day}"
        await answer_page(ada_page, {"f0": "2"})
        assert "booked" not in (await eve.call_tool("book", book)).text  # Eve used hers; Ada's is not hers
        assert (await ada_elsewhere.call_tool("book", book)).text == f"booked 2 on {day}"


@pytest.mark.parametrize("era", ERAS)
async def test_in_one_process(era: dict[str, Any]) -> None:
    with local_issuer() as issuer:
        async with one_process(issuer) as urls:
            aud = urls[0]
            await scenario(
                urls, {"ada": issuer.token(aud=aud, sub="ada"), "eve": issuer.token(aud=aud, sub="eve")}, era
            )


@pytest.fixture(scope="module")
def fleet() -> Iterator[tuple[LocalIssuer, list[str]]]:
    """Two protected instances on one Redis, shared by both eras (each era's call is its own)."""
    with local_issuer() as issuer, protected_fleet(issuer) as urls:
        yield issuer, urls


@pytest.mark.parametrize("era", ERAS)
async def test_in_a_redis_fleet(fleet: tuple[LocalIssuer, list[str]], era: dict[str, Any]) -> None:
    issuer, (first, second) = fleet
    tokens = {"ada": issuer.token(aud=RESOURCE, sub="ada"), "eve": issuer.token(aud=RESOURCE, sub="eve")}
    await scenario((first, second), tokens, era, day=era["mode"])  # each era its own question
