"""The gateway's auth tables: every mistake is one clear error naming the file and the key, a
secret is named by its environment variable (never written in the file, never echoed back),
and a protected gateway is not served open over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from elicitkit.auth import ClientCredentials, OAuth, StaticToken
from elicitkit.cli import main
from elicitkit.gateway import ConfigError, Gateway, parse_config
from elicitkit.gateway.auth import SignInNeeded, backend_auth
from elicitkit.server.auth import IntrospectionVerifier, JWTVerifier

SECRET = "a-secret-that-must-not-be-echoed-back-0123456789"
FRONT = {"issuer": "https://login.example.com", "resource": "https://gw.example.com/mcp", "scopes": ["mcp:tools"]}
URL = "https://tickets.example.com/mcp"


@pytest.fixture(autouse=True)
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GW_SECRET", SECRET)
    monkeypatch.delenv("GW_UNSET", raising=False)


def with_backend_auth(auth: dict[str, Any], **backend: Any) -> dict[str, Any]:
    return {"backends": [{"name": "tickets", "url": URL, "auth": auth, **backend}]}


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (
            {"gateway": {"auth": {"issuer": "https://i"}}, "backends": [{"name": "a", "url": URL}]},
            "auth.resource: Field required",
        ),
        (
            {"gateway": {"auth": {**FRONT, "issuer": "login"}}, "backends": [{"name": "a", "url": URL}]},
            "auth.issuer: Value error, must be an absolute",
        ),
        (
            {"gateway": {"auth": {**FRONT, "scope": "x"}}, "backends": [{"name": "a", "url": URL}]},
            "auth.scope: unknown key",
        ),
        (
            {
                "gateway": {"auth": {**FRONT, "introspection": "https://login.example.com/introspect"}},
                "backends": [{"name": "a", "url": URL}],
            },
            "introspection needs client_id and client_secret_env",
        ),
        (
            {
                "gateway": {
                    "auth": {
                        **FRONT,
                        "introspection": "https://i/x",
                        "client_id": "gw",
                        "client_secret_env": "GW_UNSET",
                    }
                },
                "backends": [{"name": "a", "url": URL}],
            },
            "$GW_UNSET is not set",
        ),
        (
            {"gateway": {"auth": {**FRONT, "client_id": "gw"}}, "backends": [{"name": "a", "url": URL}]},
            "are for introspection",
        ),
        (
            {"backends": [{"name": "a", "command": "x", "auth": {"type": "token", "token_env": "GW_SECRET"}}]},
            "backends[0]: Value error, auth is for HTTP backends",
        ),
        (with_backend_auth({"type": "magic"}), "backends[0].auth.type: Input should be"),
        (
            with_backend_auth({"type": "client_credentials", "client_secret_env": "GW_SECRET"}),
            "client_credentials needs client_id",
        ),
        (
            with_backend_auth({"type": "client_credentials", "client_id": "gw"}),
            "exactly one of client_secret_env and private_key_file",
        ),
        (
            with_backend_auth({"type": "client_credentials", "client_id": "gw", "client_secret_env": "GW_UNSET"}),
            "backends[0].auth: Value error, $GW_UNSET is not set",
        ),
        (
            with_backend_auth(
                {"type": "client_credentials", "client_id": "gw", "private_key_file": "/nonexistent/k.pem"}
            ),
            "private_key_file: no file at /nonexistent/k.pem",
        ),
        (
            with_backend_auth({"type": "client_credentials", "client_id": "gw", "client_secret": SECRET}),
            "backends[0].auth.client_secret: unknown key",
        ),
        (with_backend_auth({"type": "token"}), "needs token_env"),
        (
            with_backend_auth({"type": "token", "token_env": "GW_SECRET", "client_id": "x"}),
            "client_id: not used with type = 'token'",
        ),
        (with_backend_auth({"type": "oauth", "client_secret_env": "GW_SECRET"}), "client_secret_env needs client_id"),
    ],
)
def test_every_auth_mistake_names_its_key(data: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(data, "gw.toml")
    text = str(raised.value)
    assert text.startswith("gw.toml: ") and said in text, text
    assert SECRET not in text


def test_the_front_door_is_the_servers_resource_server(monkeypatch: pytest.MonkeyPatch) -> None:
    gateway = Gateway(parse_config({"gateway": {"auth": FRONT}, "backends": [{"name": "a", "url": URL}]}))
    assert gateway.auth is not None and isinstance(gateway.auth.verifier, JWTVerifier)
    assert gateway.auth.metadata["resource"] == FRONT["resource"]
    assert gateway.auth.metadata["authorization_servers"] == [FRONT["issuer"]]
    assert gateway.auth.metadata["scopes_supported"] == ["mcp:tools"]
    introspected = {
        **FRONT,
        "introspection": "https://login.example.com/introspect",
        "client_id": "gw",
        "client_secret_env": "GW_SECRET",
    }
    gateway = Gateway(parse_config({"gateway": {"auth": introspected}, "backends": [{"name": "a", "url": URL}]}))
    assert gateway.auth is not None and isinstance(gateway.auth.verifier, IntrospectionVerifier)
    assert SECRET not in repr(gateway.config)


def test_each_backend_gets_its_own_client(tmp_path: Path) -> None:
    config = parse_config(
        {
            "backends": [
                {
                    "name": "a",
                    "url": URL,
                    "auth": {"type": "client_credentials", "client_id": "gw", "client_secret_env": "GW_SECRET"},
                },
                {
                    "name": "b",
                    "url": URL,
                    "auth": {"type": "client_credentials", "client_id": "gw", "client_secret_env": "GW_SECRET"},
                },
                {"name": "c", "url": URL, "auth": {"type": "token", "token_env": "GW_SECRET"}},
                {"name": "d", "url": URL, "auth": {"type": "oauth", "token_store": str(tmp_path / "t.json")}},
            ]
        }
    )
    made = [backend_auth(b.auth, b.name, URL) for b in config.backends if b.auth is not None]
    assert isinstance(made[0], ClientCredentials) and isinstance(made[1], ClientCredentials)
    assert made[0] is not made[1]  # each backend keeps its own tokens
    assert isinstance(made[2], StaticToken) and isinstance(made[3], OAuth)
    assert all(SECRET not in repr(auth) for auth in made)


@pytest.mark.anyio
async def test_an_oauth_backend_without_a_kept_token_says_how_to_sign_in() -> None:
    from elicitkit.gateway.auth import _NoPerson

    with pytest.raises(SignInNeeded, match=r"backend 'd' needs a sign-in: run `elicitkit auth login https://"):
        await _NoPerson("d", URL).start()


def test_a_protected_gateway_is_not_served_over_stdio(tmp_path: Path) -> None:
    config = tmp_path / "gw.toml"
    config.write_text(
        '[gateway.auth]\nissuer = "https://login.example.com"\nresource = "https://gw.example.com/mcp"\n\n'
        '[[backends]]\nname = "a"\nurl = "https://a.example.com/mcp"\n'
    )
    result = CliRunner().invoke(main, ["gateway", str(config)])
    assert result.exit_code == 2 and "stdio hosts are not authenticated" in result.output
