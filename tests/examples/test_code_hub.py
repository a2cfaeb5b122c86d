"""examples/connections/code_hub.py: a protected server whose tool needs the person's GitHub-style
connection. GitHub itself is this test's own provider (the token endpoint and ``/user/repos``,
see tests/server/auth/connections/test_web.py); the person confirms and comes back by hand.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from elicitkit import Client, ElicitationResult
from elicitkit.auth import StaticToken
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.transports.http.serve import serve_http_background
from kit.processes import free_port
from server.auth.connections.test_web import FakeProvider, fake, finish_by_hand
from server.auth.local_issuer import local_issuer

from ._load import load_example

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

__all__ = ["fake"]  # the provider's fixture


async def test_the_first_call_connects_github_and_the_next_one_just_works(fake: FakeProvider) -> None:
    example = load_example("connections/code_hub.py")
    provider = dataclasses.replace(
        example.github("app", "app-secret"),
        authorization_endpoint="https://provider.example/authorize",
        token_endpoint=fake.url + "/token",
        timeout=2.0,
    )
    asked: list[UrlRequest] = []

    async def host(request: ElicitRequest) -> ElicitationResult[Any]:
        assert isinstance(request, UrlRequest)
        asked.append(request)
        await finish_by_hand(request.url, fake, title="GitHub", scope="read:user repo")
        return ElicitationResult.accept()

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with local_issuer() as issuer:
        server = example.build(url, issuer.url, None, provider, api=fake.url)
        server.auth.verifier.jwks_uri = issuer.jwks_uri
        token = StaticToken(issuer.token(aud=url, sub="ada"))
        async with (
            serve_http_background(server, port=port),
            Client(url, auth=token, elicitation_callback=host, protocol_version="2025-11-25") as client,
        ):
            first = await client.call_tool("my_repositories", {})
            again = await client.call_tool("my_repositories", {})
    assert first.text == "ada/dotfiles\nada/recipes" and again.text == first.text
    assert len(asked) == 1 and asked[0].message == "Connect your GitHub account to list your repositories."
