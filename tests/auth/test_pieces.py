"""The flow's pure pieces: well-known URLs, the resource check, challenges, PKCE, DPoP proofs, assertions."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from joserfc import jwt
from joserfc.jwk import ECKey

from elicitkit.auth import ResourceMismatch, TokenSet, split_key, token_key
from elicitkit.auth.base import client_key
from elicitkit.auth.challenge import parse_challenges
from elicitkit.auth.discovery import as_metadata_urls, check_resource, prm_urls
from elicitkit.auth.jose import DPoPKey, client_assertion, load_signing_key
from elicitkit.auth.oauth import pkce_pair, redirect_matches
from elicitkit.auth.tokens import ClientIdentity


def test_well_known_urls_in_the_spec_order() -> None:
    assert prm_urls("https://h.example/a/mcp") == [
        "https://h.example/.well-known/oauth-protected-resource/a/mcp",
        "https://h.example/.well-known/oauth-protected-resource",
    ]
    assert prm_urls("https://h.example") == ["https://h.example/.well-known/oauth-protected-resource"]
    assert as_metadata_urls("https://as.example/tenant1") == [
        "https://as.example/.well-known/oauth-authorization-server/tenant1",
        "https://as.example/.well-known/openid-configuration/tenant1",
        "https://as.example/tenant1/.well-known/openid-configuration",
    ]
    assert as_metadata_urls("https://as.example") == [
        "https://as.example/.well-known/oauth-authorization-server",
        "https://as.example/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    "resource", ["https://h.example/mcp", "https://h.example", "https://H.EXAMPLE:443/mcp/", "https://h.example/"]
)
def test_resource_may_be_the_server_or_a_parent(resource: str) -> None:
    check_resource(resource, "https://h.example/mcp")


@pytest.mark.parametrize(
    "resource",
    ["https://evil.example/mcp", "http://h.example/mcp", "https://h.example:8443/mcp", "https://h.example/other"],
)
def test_resource_elsewhere_is_refused(resource: str) -> None:
    with pytest.raises(ResourceMismatch, match="another resource"):
        check_resource(resource, "https://h.example/mcp")


def test_challenges() -> None:
    [dpop, bearer] = parse_challenges('DPoP algs="ES256", Bearer error="insufficient_scope", scope="a b"')
    assert (dpop.scheme, dict(dpop.params)) == ("dpop", {"algs": "ES256"})
    assert bearer.get("error") == "insufficient_scope"
    assert bearer.scopes == ["a", "b"]
    assert parse_challenges("Basic abc==, Bearer")[1].scheme == "bearer"
    assert parse_challenges('Bearer realm="unterminated') == [parse_challenges("Bearer")[0]]


@pytest.mark.parametrize(
    ("registered", "redirect", "matches"),
    [
        ("http://127.0.0.1:50001/callback", "http://127.0.0.1:50001/callback", True),
        ("http://127.0.0.1:50001/callback", "http://127.0.0.1:60002/callback", True),  # RFC 8252 7.3
        ("http://127.0.0.1/callback", "http://127.0.0.1:60002/callback", True),
        ("http://[::1]:1/callback", "http://[::1]:2/callback", True),
        ("http://localhost:1/callback", "http://localhost:2/callback", True),
        ("http://127.0.0.1:1/callback", "http://localhost:1/callback", False),  # another host
        ("http://127.0.0.1:1/callback", "http://127.0.0.1:2/other", False),  # another path
        ("http://127.0.0.1:1/callback?a=1", "http://127.0.0.1:2/callback?a=2", False),
        ("https://app.example:1/callback", "https://app.example:2/callback", False),  # not loopback
        ("http://app.example:1/callback", "http://app.example:2/callback", False),
        ("https://127.0.0.1:1/callback", "https://127.0.0.1:2/callback", False),  # only http loopback
        ("http://127.0.0.1:99999999/callback", "http://127.0.0.1:1/callback", False),  # malformed port
    ],
)
def test_a_loopback_redirect_matches_on_any_port(registered: str, redirect: str, matches: bool) -> None:
    assert redirect_matches(registered, redirect) is matches


def test_pkce_s256() -> None:
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128
    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert challenge == digest
    assert pkce_pair()[0] != verifier


def test_dpop_proof_verifies_and_binds_the_token() -> None:
    key = DPoPKey()
    proof = key.proof("post", "https://h.example/mcp?x=1#f", access_token="tok", nonce="n1")
    public = ECKey.import_key(key.public_jwk)
    decoded = jwt.decode(proof, public, algorithms=["ES256"])
    assert decoded.header["typ"] == "dpop+jwt"
    assert "d" not in decoded.header["jwk"]
    claims = decoded.claims
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://h.example/mcp"  # no query or fragment (RFC 9449 4.2)
    assert claims["nonce"] == "n1"
    assert claims["ath"] == base64.urlsafe_b64encode(hashlib.sha256(b"tok").digest()).rstrip(b"=").decode()
    assert key.proof("POST", "https://h.example/mcp") != key.proof("POST", "https://h.example/mcp")  # fresh jti
    again = DPoPKey.from_jwk(key.to_jwk())
    assert again.thumbprint == key.thumbprint
    assert key.to_jwk()["d"] not in repr(key) and key.thumbprint in repr(key)


def test_private_key_jwt_assertion() -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    key, alg = load_signing_key(pem)
    assert alg == "ES256"
    token = client_assertion("me", "https://as.example", key, alg, key_id="k1", now=1000)
    decoded = jwt.decode(token, key, algorithms=["ES256"])
    assert decoded.header["kid"] == "k1"
    assert decoded.claims["iss"] == decoded.claims["sub"] == "me"
    assert decoded.claims["aud"] == "https://as.example"
    assert decoded.claims["exp"] == 1300
    with pytest.raises(ValueError, match="not an unencrypted PEM private key") as caught:
        load_signing_key("-----BEGIN PRIVATE KEY-----\nSECRET\n-----END PRIVATE KEY-----")
    assert "SECRET" not in str(caught.value)


def test_client_secret_basic_is_form_encoded_first() -> None:
    form: dict[str, str] = {}
    headers: dict[str, str] = {}
    ClientIdentity("a b:c", "p@ss:w", "client_secret_basic").apply(form, headers, "https://as")
    decoded = base64.b64decode(headers["Authorization"].removeprefix("Basic ")).decode()
    assert decoded == "a%20b%3Ac:p%40ss%3Aw"  # RFC 6749 2.3.1
    assert form == {}
    assert "p@ss" not in repr(ClientIdentity("a", "p@ss", "client_secret_post"))


def test_store_keys_and_token_repr() -> None:
    key = token_key("https://h.example/mcp", "https://as.example")
    assert split_key(key) == ("tokens", "https://h.example/mcp", "https://as.example")
    assert split_key(client_key("https://as.example")) == ("client", None, "https://as.example")
    assert split_key("something else") is None
    tokens = TokenSet("at-SECRET", refresh_token="rt-SECRET", expires_at=100.0)
    assert "SECRET" not in repr(tokens)
    assert tokens.expired(leeway=60, now=41) and not tokens.expired(leeway=60, now=39)
    assert TokenSet.from_json(tokens.to_json()) == tokens
