"""The resource server (``Server(auth=ResourceServer(...))``) on both eras, with tokens this test signs.

Each bad token gets a 401 that names the metadata and says why, without the token in the answer
or the log; a missing scope gets a 403 naming it; a good token's subject (and client) is the
principal: ``ctx.principal``, the owner of a legacy session, of a task and of a sealed round.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import orjson
import pytest
from pydantic import BaseModel

from elicitkit import AcceptedElicitation, Context, Server
from elicitkit.protocol.tasks import EXTENSION_ID
from elicitkit.server.auth import IntrospectionVerifier, JWTVerifier, ResourceServer
from elicitkit.server.tasks import InMemoryTaskStore
from elicitkit.transports.http.serve import serve_http_background
from kit.processes import free_port
from kit.raw import ACCEPT, headers_for, init_request, meta

from .local_issuer import LocalIssuer, local_issuer, other_key, unsigned

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

V2025 = "2025-11-25"
EXT = meta(caps={"extensions": {EXTENSION_ID: {}}, "elicitation": {"form": {}}})


class Name(BaseModel):
    name: str


def build() -> Server:
    server = Server("protected", task_store=InMemoryTaskStore())

    @server.tool()
    def whoami(ctx: Context) -> str:
        return ctx.principal or "nobody"

    @server.tool()
    def delete_everything() -> str:
        return "deleted"

    @server.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("Who is calling?", Name)
        return f"Hello, {answer.data.name}!" if isinstance(answer, AcceptedElicitation) else "no name"

    @server.tool(task="optional")
    async def slow() -> str:
        await anyio.sleep(30)
        return "done"

    return server


@asynccontextmanager
async def protected(issuer: LocalIssuer, verifier: Any = None) -> AsyncIterator[tuple[str, Server]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = build()
    server.auth = ResourceServer(
        verifier or JWTVerifier(issuer.url, url, jwks_uri=issuer.jwks_uri, refresh_interval=0.5, timeout=2),
        resource=url,
        authorization_servers=[issuer.url],
        scopes=["mcp:tools"],
        tool_scopes={"delete_everything": ["admin:write"]},
    )
    async with serve_http_background(server, port=port) as handle:
        assert handle.url == url
        yield url, server


def h26(method: str, params: dict[str, Any], token: str | None) -> dict[str, str]:
    headers = {"Accept": ACCEPT, "Content-Type": "application/json", **headers_for(method, params)}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


async def call26(
    http: httpx.AsyncClient, url: str, token: str | None, method: str, params: dict[str, Any], envelope: Any = None
) -> httpx.Response:
    params = {**params, "_meta": envelope or meta()}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return await http.post(url, content=orjson.dumps(body), headers=h26(method, params, token))


def legacy_headers(token: str | None, session: str | None = None) -> dict[str, str]:
    headers = {"Accept": ACCEPT, "Content-Type": "application/json", "MCP-Protocol-Version": V2025}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if session is not None:
        headers["Mcp-Session-Id"] = session
    return headers


async def open_legacy(http: httpx.AsyncClient, url: str, token: str) -> str:
    reply = await http.post(url, json=init_request(), headers=legacy_headers(token))
    assert reply.status_code == 200, reply.text
    session = reply.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=note, headers=legacy_headers(token, session))).status_code == 202
    return session


def challenge(reply: httpx.Response) -> dict[str, str]:
    header = reply.headers["www-authenticate"]
    assert header.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


async def test_no_token_gets_401_with_the_metadata_link_on_both_eras() -> None:
    with local_issuer() as issuer:
        async with protected(issuer) as (url, _), httpx.AsyncClient(trust_env=False) as http:
            legacy = await http.post(url, json=init_request(), headers=legacy_headers(None))
            modern = await call26(http, url, None, "tools/list", {})
            stream = await http.get(url, headers={"Accept": "text/event-stream"})
            delete = await http.delete(url, headers={"Mcp-Session-Id": "x"})
            for reply in (legacy, modern, stream, delete):
                assert reply.status_code == 401
                params = challenge(reply)
                assert params["resource_metadata"] == "http://127.0.0.1:" + url.split(":")[2].split("/")[0] + (
                    "/.well-known/oauth-protected-resource/mcp"
                )
                assert params["scope"] == "mcp:tools"
                assert "error" not in params  # no token at all: no error code (RFC 6750 section 3.1)


async def test_the_metadata_follows_rfc_9728() -> None:
    with local_issuer() as issuer:
        async with protected(issuer) as (url, _), httpx.AsyncClient(trust_env=False) as http:
            origin = url.removesuffix("/mcp")
            doc = (await http.get(origin + "/.well-known/oauth-protected-resource/mcp")).json()
            root = (await http.get(origin + "/.well-known/oauth-protected-resource")).json()
            assert doc == root
            # RFC 9728 section 2: resource is REQUIRED and equals the resource identifier the
            # metadata was fetched for (section 3.3); the rest are optional but typed.
            assert doc["resource"] == url
            assert doc["authorization_servers"] == [issuer.url]
            assert all(isinstance(s, str) for s in doc["scopes_supported"])
            assert set(doc["scopes_supported"]) == {"mcp:tools", "admin:write"}
            assert doc["bearer_methods_supported"] == ["header"]
            assert set(doc) <= {
                "resource",
                "authorization_servers",
                "jwks_uri",
                "scopes_supported",
                "bearer_methods_supported",
                "resource_signing_alg_values_supported",
                "resource_name",
                "resource_documentation",
                "resource_policy_uri",
                "resource_tos_uri",
                "tls_client_certificate_bound_access_tokens",
                "authorization_details_types_supported",
                "dpop_signing_alg_values_supported",
                "dpop_bound_access_tokens_required",
            }
            refused = await http.post(origin + "/.well-known/oauth-protected-resource/mcp", json={})
            assert refused.status_code == 405


async def test_a_good_token_is_the_principal_on_both_eras() -> None:
    with local_issuer() as issuer:
        async with protected(issuer) as (url, _), httpx.AsyncClient(trust_env=False) as http:
            token = issuer.token(aud=url)
            modern = await call26(http, url, token, "tools/call", {"name": "whoami", "arguments": {}})
            assert modern.status_code == 200, modern.text
            assert modern.json()["result"]["content"][0]["text"] == "ada via app"
            session = await open_legacy(http, url, token)
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
            legacy = await http.post(url, json=call, headers=legacy_headers(token, session))
            assert legacy.status_code == 200, legacy.text
            assert legacy.json()["result"]["content"][0]["text"] == "ada via app"


BAD_TOKENS = {
    "forged": ("signature does not verify", lambda i, url: i.token(aud=url, key=other_key(i.keys[-1].kid))),
    "expired": ("expired", lambda i, url: i.token(aud=url, exp_in=-3600)),
    "wrong audience": ("another resource", lambda i, url: i.token(aud="http://127.0.0.1:1/other")),
    "wrong issuer": ("another authorization server", lambda i, url: i.token(aud=url, iss="http://evil.example")),
    "alg none": (
        "algorithm",
        lambda i, url: unsigned({"iss": i.url, "aud": url, "sub": "ada", "exp": int(time.time()) + 300}),
    ),
    "not yet valid": ("not valid yet", lambda i, url: i.token(aud=url, nbf=int(time.time()) + 3600)),
    "no subject": ("no subject", lambda i, url: i.token(aud=url, sub="")),
    "not a jwt": ("well-formed", lambda i, url: "not-a-jwt"),
    "unknown key": ("does not list", lambda i, url: i.token(aud=url, key=other_key("nobody-lists-me"))),
}


@pytest.mark.parametrize("case", list(BAD_TOKENS))
async def test_each_bad_token_gets_401_saying_why_and_is_never_logged(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    why, make = BAD_TOKENS[case]
    with local_issuer() as issuer:
        async with protected(issuer) as (url, _), httpx.AsyncClient(trust_env=False) as http:
            token = make(issuer, url)
            for reply in (
                await call26(http, url, token, "tools/list", {}),
                await http.post(url, json=init_request(), headers=legacy_headers(token)),
            ):
                assert reply.status_code == 401, reply.text
                params = challenge(reply)
                assert params["error"] == "invalid_token"
                assert why in params["error_description"], params
                assert why in reply.json()["error_description"]
                assert token not in reply.text and token not in reply.headers["www-authenticate"]
    assert any(why in r.getMessage() for r in caplog.records)
    assert not any(token in r.getMessage() for r in caplog.records)


def hmac_with_the_public_key(issuer: LocalIssuer, url: str) -> str:
    """The alg-confusion attack: HS256 keyed with the RSA public key the JWKS publishes (made by
    hand: joserfc itself refuses to use a public key as an HMAC secret)."""
    import base64
    import hashlib
    import hmac

    def part(value: bytes) -> str:
        return base64.urlsafe_b64encode(value).rstrip(b"=").decode()

    public = issuer.keys[-1].as_pem(private=False)
    now = int(time.time())
    claims = {"iss": issuer.url, "aud": url, "sub": "ada", "exp": now + 300}
    head = {"alg": "HS256", "kid": issuer.keys[-1].kid, "typ": "at+jwt"}
    signing_input = part(orjson.dumps(head)) + "." + part(orjson.dumps(claims))
    signature = hmac.new(public, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + part(signature)


async def test_alg_confusion_hs256_with_the_public_key_is_refused() -> None:
    with local_issuer() as issuer:
        async with protected(issuer) as (url, _), httpx.AsyncClient(trust_env=False) as http:
            reply = await call26(http, url, hmac_with_the_public_key(issuer, url), "tools/list", {})
            assert reply.status_code == 401
            assert "algorithm" in challenge(reply)["error_description"]


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("down", "HTTP 503"),
        ("html", "HTML, not JSON"),
        ("huge", "larger than"),
        ("garbage-keys", "not a usable JWK set"),
        ("hang", "did not answer within"),
    ],
)
async def test_a_jwks_that_is_down_or_hostile_gives_401_saying_so(mode: str, why: str) -> None:
    with local_issuer() as issuer:
        issuer.mode = mode
        async with protected(issuer) as (url, _), httpx.AsyncClient(trust_env=False, timeout=20) as http:
            started = time.monotonic()
            reply = await call26(http, url, issuer.token(aud=url), "tools/list", {})
            assert reply.status_code == 401
            assert why in challenge(reply)["error_description"]
            assert time.monotonic() - started < 10  # the JWKS timeout is 2 s


async def test_keys_are_cached_refetched_on_rotation_and_not_on_every_unknown_kid() -> None:
    with local_issuer() as issuer:
        async with protected(issuer) as (url, server), httpx.AsyncClient(trust_env=False) as http:
            verifier = server.auth.verifier  # type: ignore[union-attr]
            for _ in range(5):
                ok = await call26(http, url, issuer.token(aud=url), "tools/list", {})
                assert ok.status_code == 200
            assert issuer.jwks_hits == 1  # cached
            issuer.rotate()
            await anyio.sleep(0.6)  # past refresh_interval
            rotated = await call26(http, url, issuer.token(aud=url), "tools/list", {})
            assert rotated.status_code == 200, rotated.text
            assert issuer.jwks_hits == 2
            # a flood of made-up key ids: at most one fetch per refresh interval (0.5 s)
            stranger = other_key("x")
            flood = [issuer.token(aud=url, key=stranger, header={"kid": f"made-up-{n}"}) for n in range(40)]
            started = time.monotonic()
            for bad in flood:
                assert (await call26(http, url, bad, "tools/list", {})).status_code == 401
            elapsed = time.monotonic() - started
            assert issuer.jwks_hits - 2 <= 1 + elapsed / 0.5, (issuer.jwks_hits, elapsed)
            assert issuer.jwks_hits - 2 < len(flood) / 4
            assert verifier.fetches == issuer.jwks_hits


async def test_a_missing_scope_gets_403_naming_it() -> None:
    with local_issuer() as issuer:
        async with protected(issuer) as (url, _), httpx.AsyncClient(trust_env=False) as http:
            weak = issuer.token(aud=url, scope="openid")
            reply = await call26(http, url, weak, "tools/list", {})
            assert reply.status_code == 403
            params = challenge(reply)
            assert params["error"] == "insufficient_scope" and "mcp:tools" in params["error_description"]
            assert "mcp:tools" in params["scope"].split()

            user = issuer.token(aud=url, scope="mcp:tools")
            call = {"name": "delete_everything", "arguments": {}}
            tool = await call26(http, url, user, "tools/call", call)
            assert tool.status_code == 403
            params = challenge(tool)
            assert "admin:write" in params["error_description"] and set(params["scope"].split()) >= {
                "mcp:tools",
                "admin:write",
            }
            session = await open_legacy(http, url, user)
            legacy_call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}
            legacy = await http.post(url, json=legacy_call, headers=legacy_headers(user, session))
            assert legacy.status_code == 403 and "admin:write" in challenge(legacy)["error_description"]

            admin = issuer.token(aud=url, scope="mcp:tools admin:write")
            allowed = await call26(http, url, admin, "tools/call", call)
            assert allowed.status_code == 200 and allowed.json()["result"]["content"][0]["text"] == "deleted"


async def test_introspection_cached_and_a_hanging_endpoint_gives_401() -> None:
    with local_issuer() as issuer:
        port_probe = free_port()
        url = f"http://127.0.0.1:{port_probe}/mcp"
        verifier = IntrospectionVerifier(
            issuer.url + "/introspect", client_id="rs", client_secret="rs-secret", audience=url, timeout=1.5
        )
        issuer.active["opaque-good"] = {
            "active": True,
            "sub": "bob",
            "client_id": "cli",
            "aud": url,
            "scope": "mcp:tools",
            "exp": int(time.time()) + 600,
        }
        issuer.active["opaque-other-aud"] = {**issuer.active["opaque-good"], "aud": "http://elsewhere"}
        server = build()
        server.auth = ResourceServer(verifier, resource=url, authorization_servers=[issuer.url], scopes=["mcp:tools"])
        async with serve_http_background(server, port=port_probe), httpx.AsyncClient(trust_env=False) as http:
            for _ in range(3):
                good = await call26(http, url, "opaque-good", "tools/call", {"name": "whoami", "arguments": {}})
                assert good.status_code == 200 and good.json()["result"]["content"][0]["text"] == "bob via cli"
            assert issuer.introspection_hits == 1  # cached
            wrong = await call26(http, url, "opaque-other-aud", "tools/list", {})
            assert wrong.status_code == 401 and "another resource" in challenge(wrong)["error_description"]
            gone = await call26(http, url, "opaque-unknown", "tools/list", {})
            assert gone.status_code == 401 and "not active" in challenge(gone)["error_description"]
            issuer.introspection_mode = "hang"
            started = time.monotonic()
            hung = await call26(http, url, "opaque-new", "tools/list", {})
            assert hung.status_code == 401 and "did not answer within" in challenge(hung)["error_description"]
            assert time.monotonic() - started < 5


# -- one principal everywhere ------------------------------------------------------------------


async def test_another_principals_token_cannot_use_a_legacy_session() -> None:
    with local_issuer() as issuer:
        async with protected(issuer) as (url, _), httpx.AsyncClient(trust_env=False) as http:
            ada, eve = issuer.token(aud=url, sub="ada"), issuer.token(aud=url, sub="eve")
            session = await open_legacy(http, url, ada)
            call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
            post = await http.post(url, json=call, headers=legacy_headers(eve, session))
            assert post.status_code == 403 and "another principal" in post.text
            answer = {"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {"name": "eve"}}}
            assert (await http.post(url, json=answer, headers=legacy_headers(eve, session))).status_code == 403
            get = await http.get(url, headers={**legacy_headers(eve, session), "Accept": "text/event-stream"})
            assert get.status_code == 403
            delete = await http.delete(url, headers=legacy_headers(eve, session))
            assert delete.status_code == 403
            # the owner still has it
            mine = await http.post(url, json=call, headers=legacy_headers(ada, session))
            assert mine.status_code == 200 and mine.json()["result"]["content"][0]["text"] == "ada via app"
            # the same person through another client is another principal
            other_app = issuer.token(aud=url, sub="ada", client_id="other-app")
            assert (await http.post(url, json=call, headers=legacy_headers(other_app, session))).status_code == 403


async def test_another_principal_cannot_see_or_cancel_a_task() -> None:
    with local_issuer() as issuer:
        async with protected(issuer) as (url, _), httpx.AsyncClient(trust_env=False) as http:
            ada, eve = issuer.token(aud=url, sub="ada"), issuer.token(aud=url, sub="eve")
            made = await call26(http, url, ada, "tools/call", {"name": "slow", "arguments": {}}, EXT)
            assert made.status_code == 200, made.text
            task_id = made.json()["result"]["taskId"]
            for method in ("tasks/get", "tasks/cancel", "tasks/update"):
                params: dict[str, Any] = {"taskId": task_id}
                if method == "tasks/update":
                    params["inputResponses"] = {}
                theirs = await call26(http, url, eve, method, params, EXT)
                error = theirs.json().get("error")
                assert error is not None and "not found" in error["message"].lower(), (method, theirs.text)
            mine = await call26(http, url, ada, "tasks/get", {"taskId": task_id}, EXT)
            assert mine.json()["result"]["status"] == "working", mine.text
            listed = await call26(http, url, eve, "tasks/list", {}, EXT)
            assert task_id not in listed.text
            cancelled = await call26(http, url, ada, "tasks/cancel", {"taskId": task_id}, EXT)
            assert "error" not in cancelled.json(), cancelled.text


async def test_a_round_sealed_for_one_principal_is_refused_for_another(caplog: pytest.LogCaptureFixture) -> None:
    with local_issuer() as issuer:
        async with protected(issuer) as (url, _), httpx.AsyncClient(trust_env=False) as http:
            ada, eve = issuer.token(aud=url, sub="ada"), issuer.token(aud=url, sub="eve")
            envelope = meta(caps={"elicitation": {"form": {}}})
            asked = await call26(http, url, ada, "tools/call", {"name": "greet", "arguments": {}}, envelope)
            result = asked.json()["result"]
            state, (key,) = result["requestState"], result["inputRequests"]
            answer = {"action": "accept", "content": {"name": "Ada"}}
            retry = {"name": "greet", "arguments": {}, "requestState": state, "inputResponses": {key: answer}}
            stolen = await call26(http, url, eve, "tools/call", retry, envelope)
            assert stolen.json()["error"]["code"] == -32602 and "requestState" in stolen.text, stolen.text
            assert any("replayed by another principal" in r.getMessage() for r in caplog.records)
            done = await call26(http, url, ada, "tools/call", retry, envelope)
            assert done.json()["result"]["content"][0]["text"] == "Hello, Ada!", done.text


async def test_a_verified_token_is_remembered_until_it_expires() -> None:
    from elicitkit.server.auth import InvalidToken

    with local_issuer() as issuer:
        verifier = JWTVerifier(issuer.url, "http://127.0.0.1:1/mcp", jwks_uri=issuer.jwks_uri, leeway=0)
        token = issuer.token(aud="http://127.0.0.1:1/mcp", exp_in=2)
        first = await verifier.verify(token)
        issuer.mode = "down"  # a second check of the signature would need the keys again: it must not happen
        verifier._keys = None
        assert await verifier.verify(token) == first
        await anyio.sleep(2.2)
        with pytest.raises(InvalidToken):  # expired: checked afresh, and the keys are gone now
            await verifier.verify(token)
        forged = issuer.token(aud="http://127.0.0.1:1/mcp", key=other_key(issuer.keys[-1].kid))
        for _ in range(2):  # a refused token is never remembered
            with pytest.raises(InvalidToken):
                await verifier.verify(forged)
