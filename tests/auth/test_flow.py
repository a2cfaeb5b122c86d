"""The OAuth flow end to end through ``Client(url, auth=...)``, and every bad input the issue names.

Each refusal is an :class:`AuthError` subclass whose text says what was wrong, and no token,
code or secret the fake handed out (they all contain ``SECRET``) appears in any error or log.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from elicitkit import Client
from elicitkit.auth import (
    AuthError,
    AuthorizationDenied,
    ClientCredentials,
    InsufficientScope,
    IssuerMismatch,
    MemoryTokenStore,
    MetadataError,
    OAuth,
    RefreshRefused,
    RegistrationError,
    ResourceMismatch,
    StateMismatch,
    StaticToken,
    TokenEndpointError,
    WorkloadIdentity,
    client_key,
    token_key,
)

from ._fake import CLIENT_SECRET, MODERN, Fake, FakeConsent, fake_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


def _client(fake: Fake, auth: Any, modern: bool = False) -> Client:
    era: dict[str, Any] = {"mode": "modern", "protocol_version": MODERN} if modern else {"mode": "legacy"}
    return Client(fake.mcp_url, auth=auth, timeout=10, **era)


def _no_secret(text: str) -> None:
    assert "SECRET" not in text, text


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
async def test_sign_in_then_the_stored_token_needs_no_person(modern: bool, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    store = MemoryTokenStore()
    async with fake_server() as fake:
        consent = FakeConsent(fake)
        async with _client(fake, OAuth(store=store, authorizer=consent), modern) as client:
            tools = await client.list_tools()
            assert [t.name for t in tools.tools] == ["echo"]
        query = consent.query()
        assert query["resource"] == fake.mcp_url  # RFC 8707: exactly the metadata's resource
        assert query["code_challenge_method"] == "S256"
        assert fake.registrations[0]["application_type"] == "native"
        assert fake.registrations[0]["grant_types"] == ["authorization_code", "refresh_token"]
        assert fake.token_requests[0]["resource"] == fake.mcp_url
        assert await store.load(token_key(fake.mcp_url, fake.issuer)) is not None

        second = FakeConsent(fake)
        async with _client(fake, OAuth(store=store, authorizer=second), modern) as client:
            await client.call_tool("echo", {})
        assert second.urls == []  # the stored token was used: no person involved
        assert len(fake.registrations) == 1
    for record in caplog.records:
        _no_secret(record.getMessage())


async def test_login_without_an_mcp_request_then_the_client_uses_the_token() -> None:
    store = MemoryTokenStore()
    async with fake_server() as fake:
        consent = FakeConsent(fake)
        tokens = await OAuth(store=store, authorizer=consent).login(fake.mcp_url)
        assert tokens.access_token in fake.tokens
        again = await OAuth(store=store, authorizer=consent).login(fake.mcp_url)
        assert again == tokens and len(consent.urls) == 1  # kept token: no second sign-in
        await OAuth(store=store, authorizer=consent).login(fake.mcp_url, force=True)
        assert len(consent.urls) == 2
        async with _client(fake, OAuth(store=store, authorizer=FakeConsent(fake))) as client:
            await client.list_tools()
        assert fake.mcp_auth[-1] is not None


async def test_a_slow_person_does_not_time_the_request_out() -> None:
    async with fake_server() as fake:
        consent = FakeConsent(fake)
        consent.delay = 2.0
        async with Client(fake.mcp_url, auth=OAuth(authorizer=consent), timeout=1.0) as client:
            await client.list_tools()  # initialize waited 2 s for the person with a 1 s timeout
        assert len(consent.urls) == 1


async def test_a_sign_in_longer_than_the_servers_keep_alive() -> None:
    """A sign-in mid-session that outlasts the server's keep-alive still completes (fresh connections)."""
    async with fake_server(keepalive_timeout=0.3) as fake:
        consent = FakeConsent(fake)
        consent.delay = 1.0
        async with _client(fake, OAuth(authorizer=consent), modern=True) as client:
            await client.list_tools()
            fake.revoke_all()
            fake.refresh_mode = "refuse"  # the next call signs in again, slowly, mid-session
            await client.call_tool("echo", {})
        assert len(consent.urls) == 2


async def test_refresh_before_expiry_rotates_the_refresh_token() -> None:
    async with fake_server() as fake:
        fake.expires_in = 30  # inside the 60 s leeway: every request finds the token about to expire
        consent = FakeConsent(fake)
        async with _client(fake, OAuth(authorizer=consent)) as client:
            await client.list_tools()
            await client.call_tool("echo", {})
        grants = [r["grant_type"] for r in fake.token_requests]
        assert grants[0] == "authorization_code"
        assert grants.count("refresh_token") >= 2
        refreshes = [r["refresh_token"] for r in fake.token_requests if r["grant_type"] == "refresh_token"]
        assert len(set(refreshes)) == len(refreshes)  # each refresh used the newest (rotated) token
        assert len(consent.urls) == 1


async def test_an_unreachable_token_endpoint_keeps_the_refresh_token() -> None:
    store = MemoryTokenStore()
    async with fake_server() as fake:
        fake.expires_in = 30  # every request wants a refresh first
        async with _client(fake, OAuth(store=store, authorizer=FakeConsent(fake), timeout=1.0)) as client:
            fake.token_mode = "hang"
            with pytest.raises(TokenEndpointError) as caught:
                await client.call_tool("echo", {})
        assert not isinstance(caught.value, RefreshRefused)
        assert "did not answer" in str(caught.value)
        _no_secret(str(caught.value))
        record = await store.load(token_key(fake.mcp_url, fake.issuer))
        assert record is not None and record["refresh_token"]  # a network blip does not sign the person out


async def test_refresh_on_401_is_silent() -> None:
    async with fake_server() as fake:
        consent = FakeConsent(fake)
        async with _client(fake, OAuth(authorizer=consent)) as client:
            await client.list_tools()
            fake.revoke_all()  # the server forgets the access token: 401 on the next request
            await client.call_tool("echo", {})
        assert [r["grant_type"] for r in fake.token_requests] == ["authorization_code", "refresh_token"]
        assert len(consent.urls) == 1


async def test_refused_refresh_signs_in_again() -> None:
    async with fake_server() as fake:
        consent = FakeConsent(fake)
        async with _client(fake, OAuth(authorizer=consent)) as client:
            await client.list_tools()
            fake.revoke_all()
            fake.refresh_mode = "refuse"
            await client.call_tool("echo", {})
        assert [r["grant_type"] for r in fake.token_requests] == [
            "authorization_code",
            "refresh_token",
            "authorization_code",
        ]
        assert len(consent.urls) == 2


async def test_step_up_asks_for_the_union_of_scopes_then_gives_up() -> None:
    async with fake_server() as fake:
        fake.prm_scopes = ["read"]
        fake.required_scope = "write"
        consent = FakeConsent(fake)
        async with _client(fake, OAuth(authorizer=consent)) as client:
            await client.call_tool("echo", {})
            assert consent.query(0)["scope"] == "read"
            assert consent.query(1)["scope"].split() == ["read", "write"]

            fake.required_scope = "admin"
            fake.withheld = {"admin"}  # asked for, never granted
            with pytest.raises(InsufficientScope) as caught:
                await client.call_tool("echo", {})
            _no_secret(str(caught.value))
        # one sign-in, then at most two step-ups: three authorizations in all
        assert len(consent.urls) == 3
        assert consent.query(2)["scope"].split() == ["read", "write", "admin"]


async def test_offline_access_only_when_the_server_lists_it() -> None:
    async with fake_server() as fake:
        fake.prm_scopes = ["read"]
        fake.as_overrides = {"scopes_supported": ["read", "offline_access"]}
        consent = FakeConsent(fake)
        async with _client(fake, OAuth(authorizer=consent)) as client:
            await client.list_tools()
        assert consent.query()["scope"].split() == ["read", "offline_access"]
    async with fake_server() as fake:
        fake.prm_scopes = ["read"]
        fake.as_overrides = {"scopes_supported": ["read"]}
        consent = FakeConsent(fake)
        async with _client(fake, OAuth(authorizer=consent)) as client:
            await client.list_tools()
        assert consent.query()["scope"] == "read"


async def test_pre_registered_client_uses_basic_and_skips_registration() -> None:
    async with fake_server() as fake:
        consent = FakeConsent(fake)
        auth = OAuth(client_id="pre", client_secret=CLIENT_SECRET, authorizer=consent)
        async with _client(fake, auth) as client:
            await client.list_tools()
        assert fake.registrations == []
        assert "client_secret" not in fake.token_requests[0]
        assert repr(auth).count("SECRET") == 0


async def test_a_new_loopback_port_reuses_the_registration() -> None:
    """Each sign-in's loopback listener has a new port; the registration kept for the issuer still serves."""
    store = MemoryTokenStore()
    async with fake_server() as fake:
        first = FakeConsent(fake)
        first.redirect_uri = "http://127.0.0.1:50001/callback"
        await OAuth(store=store, authorizer=first).login(fake.mcp_url)
        second = FakeConsent(fake)
        second.redirect_uri = "http://127.0.0.1:50002/callback"
        await OAuth(store=store, authorizer=second).login(fake.mcp_url, force=True)
        assert len(fake.registrations) == 1
        assert second.query()["client_id"] == first.query()["client_id"] == "client-1"
        assert second.query()["redirect_uri"] == "http://127.0.0.1:50002/callback"  # the port in use now
        third = FakeConsent(fake)
        third.redirect_uri = "https://app.example/callback"  # not loopback: the exact URI must be registered
        await OAuth(store=store, authorizer=third).login(fake.mcp_url, force=True)
        assert len(fake.registrations) == 2 and third.query()["client_id"] == "client-2"


async def test_refresh_goes_as_the_client_the_token_was_issued_to() -> None:
    """A registration replaced meanwhile (another server, another redirect) does not strand kept tokens."""
    store = MemoryTokenStore()
    async with fake_server() as fake:
        await OAuth(store=store, authorizer=FakeConsent(fake)).login(fake.mcp_url)
        key = token_key(fake.mcp_url, fake.issuer)
        kept = await store.load(key)
        assert kept is not None
        # another sign-in at the same issuer registered another client and kept it for the issuer
        await store.save(
            client_key(fake.issuer),
            {"client_id": "client-other", "token_endpoint_auth_method": "none", "redirect_uris": ["https://x/cb"]},
        )
        await store.save(key, {**kept, "expires_at": time.time() - 1})  # the kept token has expired
        consent = FakeConsent(fake)
        async with _client(fake, OAuth(store=store, authorizer=consent)) as client:
            await client.call_tool("echo", {})
        assert consent.urls == []  # refreshed silently: no person
        [refresh] = [r for r in fake.token_requests if r["grant_type"] == "refresh_token"]
        assert refresh["client_id"] == "client-1"
        renewed = await store.load(key)
        assert renewed is not None and renewed["refresh_token"] != kept["refresh_token"]
        assert kept["client"] == renewed["client"] == {"client_id": "client-1", "token_endpoint_auth_method": "none"}


# -- bad input: each a clear AuthError, nothing secret in it -------------------------------------


async def _refusal(fake: Fake, consent: FakeConsent | None = None, **options: Any) -> AuthError:
    auth = OAuth(authorizer=consent or FakeConsent(fake), **options)
    with pytest.raises(AuthError) as caught:
        async with _client(fake, auth) as client:
            await client.list_tools()
    _no_secret(str(caught.value))
    _no_secret(repr(caught.value))
    return caught.value


async def test_html_metadata() -> None:
    async with fake_server() as fake:
        fake.prm_body = b"<!doctype html><html>login</html>"
        error = await _refusal(fake)
        assert isinstance(error, MetadataError)
        assert "HTML" in str(error)


async def test_malformed_metadata() -> None:
    async with fake_server() as fake:
        fake.as_body = b'{"issuer": '
        error = await _refusal(fake)
        assert isinstance(error, MetadataError)
        assert "not JSON" in str(error)


async def test_metadata_without_token_endpoint() -> None:
    async with fake_server() as fake:
        fake.as_overrides = {"token_endpoint": None}
        error = await _refusal(fake)
        assert isinstance(error, MetadataError)
        assert "token_endpoint" in str(error)


@pytest.mark.parametrize("issuer", [None, "https://other.example.com"])
async def test_wrong_or_missing_issuer(issuer: str | None) -> None:
    async with fake_server() as fake:
        fake.as_overrides = {"issuer": issuer}
        consent = FakeConsent(fake)
        error = await _refusal(fake, consent)
        assert isinstance(error, IssuerMismatch)
        assert consent.urls == []  # refused before any person was asked


async def test_resource_mismatch_stops_before_authorization() -> None:
    async with fake_server() as fake:
        fake.prm_resource = "https://evil.example.com/mcp"
        consent = FakeConsent(fake)
        error = await _refusal(fake, consent)
        assert isinstance(error, ResourceMismatch)
        assert "evil.example.com" in str(error)
        assert consent.urls == []


async def test_no_pkce_support_is_refused() -> None:
    async with fake_server() as fake:
        fake.as_overrides = {"code_challenge_methods_supported": None}
        error = await _refusal(fake)
        assert isinstance(error, MetadataError)
        assert "PKCE" in str(error)


async def test_no_way_to_register() -> None:
    async with fake_server() as fake:
        fake.registration = False
        error = await _refusal(fake)
        assert isinstance(error, RegistrationError)
        assert "client_id" in str(error)


@pytest.mark.parametrize(
    ("mode", "kind"),
    [
        ("error", AuthorizationDenied),
        ("wrong-state", StateMismatch),
        ("wrong-iss", IssuerMismatch),
        ("no-iss", IssuerMismatch),
        ("wrong-iss-error", IssuerMismatch),  # another issuer's error is not even shown
    ],
)
async def test_bad_redirects(mode: str, kind: type[AuthError]) -> None:
    async with fake_server() as fake:
        error = await _refusal(fake, FakeConsent(fake, mode))
        assert isinstance(error, kind)
        assert not fake.token_requests  # the code was never used


@pytest.mark.parametrize("mode", ["garbage", "html", "error"])
async def test_token_endpoint_answers_garbage(mode: str) -> None:
    async with fake_server() as fake:
        fake.token_mode = mode
        error = await _refusal(fake)
        assert isinstance(error, TokenEndpointError)
        if mode == "error":
            assert "invalid_client" in str(error)


async def test_token_endpoint_that_hangs() -> None:
    async with fake_server() as fake:
        fake.token_mode = "hang"
        started = time.monotonic()
        error = await _refusal(fake, timeout=0.5)
        assert isinstance(error, TokenEndpointError)
        assert "did not answer within 0.5s" in str(error)
        assert time.monotonic() - started < 5


# -- the other auth objects and the hook itself -------------------------------------------------


async def test_static_token_is_sent_and_a_401_is_final() -> None:
    async with fake_server() as fake:
        fake.tokens["given-SECRET"] = []
        async with _client(fake, StaticToken("given-SECRET")) as client:
            await client.list_tools()
        assert fake.mcp_auth[0] == "Bearer given-SECRET"
        assert "SECRET" not in repr(StaticToken("x-SECRET"))
        fake.revoke_all()
        sent_before = len(fake.mcp_auth)
        with pytest.raises(Exception) as caught:
            async with _client(fake, StaticToken("given-SECRET")) as client:
                await client.list_tools()
        assert len(fake.mcp_auth) == sent_before + 1  # refused once, not sent again
        assert "refused our authorization (HTTP 401): the credentials are not accepted" in str(caught.value)
        assert "tries" not in str(caught.value)  # no retry happened: no try count to report
        _no_secret(str(caught.value))


async def test_without_auth_a_401_says_what_to_pass() -> None:
    async with fake_server() as fake:
        with pytest.raises(Exception) as caught:
            async with Client(fake.mcp_url, timeout=10) as client:
                await client.list_tools()
        assert "requires authorization (HTTP 401)" in str(caught.value)
        assert "auth=" in str(caught.value)


def test_auth_is_for_http_servers_only() -> None:
    with pytest.raises(TypeError, match="http"):
        Client(["python", "-m", "server"], auth=StaticToken("t"))


async def test_workload_identity_errors_are_surfaced_not_retried() -> None:
    async with fake_server() as fake:  # its token endpoint knows no jwt-bearer grant
        auth = WorkloadIdentity(assertion=lambda: "jwt-SECRET", client_id="wl")
        with pytest.raises(TokenEndpointError, match="unsupported_grant_type") as caught:
            async with _client(fake, auth) as client:
                await client.list_tools()
        _no_secret(str(caught.value))
        assert [r["grant_type"] for r in fake.token_requests] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
        assert fake.token_requests[0]["resource"] == fake.mcp_url


async def test_client_credentials_with_a_secret() -> None:
    async with fake_server() as fake:
        auth = ClientCredentials(client_id="svc", client_secret=CLIENT_SECRET)
        with pytest.raises(TokenEndpointError) as caught:  # the fake grants no client_credentials
            async with _client(fake, auth) as client:
                await client.list_tools()
        _no_secret(str(caught.value))
        [request] = fake.token_requests
        assert request["grant_type"] == "client_credentials"
        assert "client_secret" not in request  # client_secret_basic: in the Authorization header
        with pytest.raises(ValueError, match="exactly one"):
            ClientCredentials(client_id="svc")
