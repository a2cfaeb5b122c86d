"""The OAuth client's parsers against hostile input: challenges, metadata documents, token responses.

Invariants: :func:`parse_challenges` never raises and finds back every well-formed challenge
it is given, whatever junk surrounds it; the metadata and token parsers either return a value
whose fields have the types the flow relies on, or raise the documented ``AuthError`` subclass,
never anything else; an issuer is accepted only when it is exactly the one expected.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from hypothesis import given
from hypothesis import strategies as st

from elicitkit.auth.challenge import parse_challenges
from elicitkit.auth.discovery import check_resource, parse_as_metadata, parse_prm
from elicitkit.auth.errors import IssuerMismatch, MetadataError, ResourceMismatch, TokenEndpointError
from elicitkit.auth.tokens import parse_token_response

from ._budget import fuzz_settings
from ._strategies import json_values

TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~"
tokens = st.text(TOKEN_CHARS, min_size=1, max_size=12)
quoted_values = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30)
header_junk = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)

ISSUER = "https://as.example.com/tenant"
URLS = st.sampled_from(
    [ISSUER, "https://as.example.com", "http://127.0.0.1:9/t", "http://evil.example.com/x", "ftp://x", "", "nope"]
)

RESOURCES = st.sampled_from(
    [
        "https://mcp.example.com/mcp",
        "https://MCP.example.com:443/",
        "https://mcp.example.com/mcpx",
        "https://mcp.example.com:8443/mcp",
    ]
)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@fuzz_settings(300)
@given(header_junk)
def test_challenge_parser_never_raises(header: str) -> None:
    for challenge in parse_challenges(header):
        assert challenge.scheme == challenge.scheme.lower()
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in challenge.params.items())


@fuzz_settings(300)
@given(
    st.lists(
        st.tuples(tokens, st.dictionaries(tokens, quoted_values, min_size=1, max_size=4)),
        min_size=1,
        max_size=3,
    ),
    st.sampled_from(["", " ", ", "]),
)
def test_challenge_parser_reads_back_what_was_written(challenges: list[tuple[str, dict[str, str]]], sep: str) -> None:
    text = ", ".join(
        f"{scheme} " + ", ".join(f"{k}={_quote(v)}" for k, v in params.items()) for scheme, params in challenges
    )
    parsed = parse_challenges(sep + text)
    assert [c.scheme for c in parsed] == [scheme.lower() for scheme, _ in challenges]
    for (_, params), got in zip(challenges, parsed, strict=True):
        expected: dict[str, str] = {}
        for k, v in params.items():
            expected.setdefault(k.lower(), v)
        assert dict(got.params) == expected


def _documents() -> st.SearchStrategy[dict[str, Any]]:
    fields = {
        "resource": RESOURCES | URLS | json_values,
        "authorization_servers": st.lists(URLS, max_size=2) | json_values,
        "scopes_supported": st.lists(st.text(max_size=8), max_size=3) | json_values,
        "issuer": URLS | json_values,
        "token_endpoint": URLS | json_values,
        "authorization_endpoint": URLS | json_values,
        "registration_endpoint": URLS | json_values,
        "code_challenge_methods_supported": st.just(["S256"]) | json_values,
        "authorization_response_iss_parameter_supported": st.booleans() | json_values,
    }
    return st.fixed_dictionaries({}, optional=fields) | st.dictionaries(st.text(max_size=10), json_values, max_size=5)


@fuzz_settings(300)
@given(_documents())
def test_resource_metadata_parser(doc: dict[str, Any]) -> None:
    try:
        prm = parse_prm(doc, "https://mcp.example.com/.well-known/oauth-protected-resource")
    except MetadataError:
        return
    assert isinstance(prm.resource, str) and prm.resource
    assert prm.authorization_servers and all(isinstance(s, str) for s in prm.authorization_servers)
    try:
        check_resource(prm.resource, "https://mcp.example.com/mcp")
    except ResourceMismatch:
        return
    # accepted: the same origin, and a path the server's URL is under
    parts = urlsplit(prm.resource)
    assert (parts.hostname, parts.port or 443) == ("mcp.example.com", 443)
    assert parts.path.rstrip("/") in ("", "/mcp")


@fuzz_settings(300)
@given(_documents())
def test_authorization_server_metadata_parser(doc: dict[str, Any]) -> None:
    try:
        server = parse_as_metadata(doc, ISSUER, "https://as.example.com/.well-known/oauth-authorization-server/tenant")
    except (MetadataError, IssuerMismatch):
        return
    assert server.issuer == ISSUER  # exactly the expected issuer, or refused
    assert server.token_endpoint.startswith(("https://", "http://127.0.0.1"))
    assert isinstance(server.iss_parameter_supported, bool)


@fuzz_settings(300)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "access_token": st.text(max_size=10).map(lambda t: "SECRET" + t) | json_values,
            "token_type": st.sampled_from(["Bearer", "bearer", "DPoP", "mac", ""]) | json_values,
            "expires_in": st.integers(-5, 10**6) | json_values,
            "refresh_token": st.text(max_size=10).map(lambda t: "SECRET" + t) | json_values,
            "scope": st.text(max_size=10) | json_values,
        },
    )
)
def test_token_response_parser(doc: dict[str, Any]) -> None:
    try:
        tokens = parse_token_response(doc, "the token endpoint", now=1000.0)
    except TokenEndpointError as exc:
        assert "SECRET" not in str(exc)  # a refused token response never echoes a token
        return
    assert isinstance(tokens.access_token, str) and tokens.access_token
    assert tokens.token_type in ("Bearer", "DPoP")
    assert tokens.expires_at is None or tokens.expires_at > 1000.0
