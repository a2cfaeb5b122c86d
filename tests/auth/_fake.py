"""A protected MCP server and its authorization server in one aiohttp app, for the flow's tests.

Deliberately small and scripted: the MCP endpoint answers initialize / server/discover /
tools/list / tools/call when the bearer token is one it issued, else 401 with a challenge;
the authorization server's endpoints follow knobs each test sets (HTML metadata, a wrong
issuer, a hanging or garbage token endpoint, a refused refresh...). Every secret it hands
out contains ``SECRET`` so tests can assert none reaches an error text or a log.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from aiohttp import web

MODERN = "2026-07-28"
CODE = "code-SECRET-123"
CLIENT_SECRET = "client-SECRET-456"


@dataclass
class Fake:
    base: str = ""
    # knobs
    prm_body: bytes | None = None  # raw PRM body instead of the right document
    prm_resource: str | None = None  # a resource other than the server's
    prm_scopes: list[str] | None = None
    as_overrides: dict[str, Any] = field(default_factory=dict)  # merged into the AS metadata (None deletes)
    as_body: bytes | None = None
    token_mode: str = "ok"  # ok | hang | garbage | html | error
    refresh_mode: str = "ok"  # ok | refuse
    expires_in: int = 3600
    required_scope: str | None = None  # tools/call needs it (403 insufficient_scope otherwise)
    registration: bool = True
    withheld: set[str] = field(default_factory=set)  # scopes never granted, whatever is asked
    # records
    tokens: dict[str, list[str]] = field(default_factory=dict)  # valid access token -> scopes
    refresh_tokens: set[str] = field(default_factory=set)
    refresh_clients: dict[str, str | None] = field(default_factory=dict)  # refresh token -> its client_id
    token_requests: list[dict[str, str]] = field(default_factory=list)
    registrations: list[dict[str, Any]] = field(default_factory=list)
    mcp_auth: list[str | None] = field(default_factory=list)
    pkce: dict[str, str] = field(default_factory=dict)  # code_challenge from the last authorization
    counter: int = 0

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def issuer(self) -> str:
        return self.base

    def issue(self, scopes: list[str], client_id: str | None = None) -> dict[str, Any]:
        self.counter += 1
        access, refresh = f"at-SECRET-{self.counter}", f"rt-SECRET-{self.counter}"
        scopes = [s for s in scopes if s not in self.withheld]
        self.tokens[access] = scopes
        self.refresh_tokens.add(refresh)
        self.refresh_clients[refresh] = client_id
        body: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": self.expires_in}
        body["refresh_token"] = refresh
        if scopes:
            body["scope"] = " ".join(scopes)
        return body

    def revoke_all(self) -> None:
        self.tokens.clear()


def _rpc(request: Mapping[str, Any], result: dict[str, Any]) -> web.Response:
    return web.json_response({"jsonrpc": "2.0", "id": request.get("id"), "result": result})


def _mcp_result(body: dict[str, Any]) -> dict[str, Any] | None:
    method = body.get("method")
    if method == "initialize":
        return {
            "protocolVersion": body["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake", "version": "0"},
        }
    if method == "server/discover":
        return {
            "resultType": "complete",
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "0"}},
        }
    if method == "tools/list":
        return {"resultType": "complete", "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    if method == "tools/call":
        return {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}
    return {}


def _client_id(request: web.Request, form: Mapping[str, Any]) -> str | None:
    """The client of a token request: HTTP Basic (client_secret_basic), else the form's client_id."""
    basic = request.headers.get("Authorization", "")
    if basic.startswith("Basic "):
        return unquote(base64.b64decode(basic[6:]).decode().split(":", 1)[0])
    value = form.get("client_id")
    return str(value) if value is not None else None


@asynccontextmanager
async def fake_server(keepalive_timeout: float = 75.0) -> AsyncIterator[Fake]:
    fake = Fake()
    released = asyncio.Event()

    def challenge(status: int, error: str | None = None, scope: str | None = None) -> web.Response:
        params = [f'resource_metadata="{fake.base}/.well-known/oauth-protected-resource/mcp"']
        if error:
            params.append(f'error="{error}"')
        if scope:
            params.append(f'scope="{scope}"')
        return web.json_response(
            {"error": error or "invalid_token"},
            status=status,
            headers={"WWW-Authenticate": "Bearer " + ", ".join(params)},
        )

    async def mcp(request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization")
        fake.mcp_auth.append(auth)
        body = await request.json()
        token = auth.split(" ", 1)[1] if auth and auth.startswith("Bearer ") else None
        if token is None or token not in fake.tokens:
            return challenge(401)
        if "id" not in body:
            return web.Response(status=202)
        if body.get("method") == "tools/call" and fake.required_scope and fake.required_scope not in fake.tokens[token]:
            return challenge(403, "insufficient_scope", fake.required_scope)
        result = _mcp_result(body)
        return _rpc(body, result or {})

    async def prm(request: web.Request) -> web.StreamResponse:
        if fake.prm_body is not None:
            return web.Response(body=fake.prm_body, content_type="text/html")
        doc: dict[str, Any] = {"resource": fake.prm_resource or fake.mcp_url, "authorization_servers": [fake.issuer]}
        if fake.prm_scopes is not None:
            doc["scopes_supported"] = fake.prm_scopes
        return web.json_response(doc)

    async def as_metadata(request: web.Request) -> web.StreamResponse:
        if fake.as_body is not None:
            return web.Response(body=fake.as_body, content_type="application/json")
        doc: dict[str, Any] = {
            "issuer": fake.issuer,
            "authorization_endpoint": f"{fake.base}/authorize",
            "token_endpoint": f"{fake.base}/token",
            "registration_endpoint": f"{fake.base}/register",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            "authorization_response_iss_parameter_supported": True,
        }
        if not fake.registration:
            del doc["registration_endpoint"]
        for key, value in fake.as_overrides.items():
            if value is None:
                doc.pop(key, None)
            else:
                doc[key] = value
        return web.json_response(doc)

    async def register(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        fake.registrations.append(body)
        return web.json_response({"client_id": f"client-{len(fake.registrations)}", **body}, status=201)

    async def token(request: web.Request) -> web.StreamResponse:
        form = dict(await request.post())
        fake.token_requests.append({k: str(v) for k, v in form.items()})
        if fake.token_mode == "hang":
            await released.wait()  # until the test ends
        if fake.token_mode == "garbage":
            return web.Response(body=b"\x00\xffnot json at all", content_type="application/json")
        if fake.token_mode == "html":
            return web.Response(text="<html><body>Sign in</body></html>", content_type="text/html")
        if fake.token_mode == "error":
            return web.json_response({"error": "invalid_client", "error_description": "unknown client"}, status=401)
        grant = form.get("grant_type")
        client_id = _client_id(request, form)
        if grant == "authorization_code":
            verifier = str(form.get("code_verifier", ""))
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if form.get("code") != CODE or digest != fake.pkce.get("challenge"):
                return web.json_response({"error": "invalid_grant"}, status=400)
            scopes = str(form.get("scope") or fake.pkce.get("scope", "")).split()
            return web.json_response(fake.issue(scopes, client_id))
        if grant == "refresh_token":
            old = str(form.get("refresh_token"))
            if fake.refresh_mode == "refuse" or old not in fake.refresh_tokens:
                return web.json_response({"error": "invalid_grant", "error_description": "refresh revoked"}, status=400)
            if fake.refresh_clients.get(old) != client_id:  # bound to its client (RFC 6749 section 6)
                return web.json_response({"error": "invalid_grant", "error_description": "another client"}, status=400)
            fake.refresh_tokens.discard(old)  # rotation: each refresh token works once
            return web.json_response(fake.issue([], client_id))
        return web.json_response({"error": "unsupported_grant_type"}, status=400)

    app = web.Application()
    app.router.add_post("/mcp", mcp)
    app.router.add_get("/.well-known/oauth-protected-resource/mcp", prm)
    app.router.add_get("/.well-known/oauth-authorization-server", as_metadata)
    app.router.add_post("/register", register)
    app.router.add_post("/token", token)
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=keepalive_timeout)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    fake.base = f"http://127.0.0.1:{port}"
    try:
        yield fake
    finally:
        released.set()
        await runner.cleanup()


class FakeConsent:
    """The person, scripted: consents at once, or answers with a knob's flaw."""

    def __init__(self, fake: Fake, mode: str = "ok") -> None:
        self.fake = fake
        self.mode = mode  # ok | error | wrong-state | wrong-iss | no-iss | slow
        self.delay = 0.0
        self.redirect_uri = "http://127.0.0.1:1/callback"
        self.urls: list[str] = []
        self.started = 0
        self.closed = 0

    async def start(self) -> None:
        self.started += 1

    async def close(self) -> None:
        self.closed += 1

    async def authorize(self, authorization_url: str) -> Mapping[str, str]:
        self.urls.append(authorization_url)
        if self.delay:
            await asyncio.sleep(self.delay)  # the person reading the page
        query = dict(parse_qsl(urlsplit(authorization_url).query))
        self.fake.pkce = {"challenge": query.get("code_challenge", ""), "scope": query.get("scope", "")}
        if self.mode == "error":
            answer = {"error": "access_denied", "error_description": "the person said no", "state": query["state"]}
            return {**answer, "iss": self.fake.issuer}
        if self.mode == "wrong-iss-error":
            return {"error": "access_denied", "error_description": "SECRET-looking text", "iss": "https://evil.example"}
        answer = {"code": CODE, "state": query["state"], "iss": self.fake.issuer}
        if self.mode == "wrong-state":
            answer["state"] = "not-the-state"
        elif self.mode == "wrong-iss":
            answer["iss"] = "https://evil.example.com"
        elif self.mode == "no-iss":
            del answer["iss"]
        return answer

    def query(self, index: int = -1) -> dict[str, str]:
        return dict(parse_qsl(urlsplit(self.urls[index]).query))
