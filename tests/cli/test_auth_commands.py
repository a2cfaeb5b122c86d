"""``elicitkit auth status|logout`` over a real token file: what is shown, and what never is."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from elicitkit.auth import FileTokenStore, client_key, token_key
from elicitkit.cli import main
from elicitkit.cli_auth import covers, describe

SERVER = "https://mcp.example.com/mcp"
ISSUER = "https://login.example.com"
OTHER = "https://other.example.org/mcp"
SECRETS = ("at-SECRET-1", "rt-SECRET-2", "cs-SECRET-3", "jwk-SECRET-4")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FileTokenStore:
    monkeypatch.setenv("ELICITKIT_TOKEN_STORE", "file")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    store = FileTokenStore()
    now = time.time()

    async def seed() -> None:
        await store.save(
            token_key(SERVER, ISSUER),
            {
                "access_token": SECRETS[0],
                "refresh_token": SECRETS[1],
                "token_type": "DPoP",
                "expires_at": now + 1800,
                "scope": "mcp:tools offline_access",
                "issuer": ISSUER,
                "resource": SERVER,
                "requested_scopes": ["mcp:tools"],
                "dpop_jwk": {"kty": "EC", "d": SECRETS[3]},
            },
        )
        await store.save(
            token_key(OTHER, "https://as.other.org"),
            {"access_token": "x", "token_type": "Bearer", "expires_at": now - 120, "scope": None},
        )
        await store.save(client_key(ISSUER), {"client_id": "c1", "client_secret": SECRETS[2]})

    anyio.run(seed)
    return store


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_status_shows_issuer_scopes_expiry_and_no_secret(store: FileTokenStore) -> None:
    code, out = run("auth", "status", SERVER)
    assert code == 0, out
    assert SERVER in out and f"issuer:   {ISSUER}" in out
    assert "scopes:   mcp:tools offline_access" in out
    assert "type:     DPoP" in out
    assert "(in 30 min)" in out or "(in 29 min)" in out
    assert "renews:   yes" in out
    assert OTHER not in out
    for secret in SECRETS:
        assert secret not in out


def test_status_json_lists_every_server_and_no_secret(store: FileTokenStore) -> None:
    code, out = run("auth", "status", "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert "FileTokenStore" in doc["store"]
    by_server = {entry["server"]: entry for entry in doc["signed_in"]}
    assert set(by_server) == {SERVER, OTHER}
    mine, other = by_server[SERVER], by_server[OTHER]
    assert mine["issuer"] == ISSUER and mine["scopes"] == ["mcp:tools", "offline_access"]
    assert mine["expired"] is False and 1700 < mine["expires_in_seconds"] <= 1800
    assert mine["renews_itself"] is True and mine["token_type"] == "DPoP"
    assert other["expired"] is True and other["renews_itself"] is False and other["scopes"] == []
    for secret in SECRETS:
        assert secret not in out


def test_status_of_an_unknown_server_says_so_with_exit_1(store: FileTokenStore) -> None:
    code, out = run("auth", "status", "https://nowhere.example/mcp")
    assert code == 1
    assert "Not signed in to https://nowhere.example/mcp" in out and "FileTokenStore" in out
    code, out = run("auth", "status", "https://nowhere.example/mcp", "--json")
    assert code == 1 and json.loads(out)["signed_in"] == []


def test_logout_forgets_that_server_only(store: FileTokenStore) -> None:
    code, out = run("auth", "logout", SERVER + "/")  # a trailing slash names the same server
    assert code == 0, out
    assert f"Signed out of {SERVER}/: forgot 1 token set(s) from {ISSUER}." in out

    async def keys() -> list[str]:
        return await store.keys()

    remaining = anyio.run(keys)
    assert token_key(SERVER, ISSUER) not in remaining
    assert token_key(OTHER, "https://as.other.org") in remaining
    assert client_key(ISSUER) in remaining  # the client registration stays: it holds no user's grant
    code, out = run("auth", "logout", SERVER)
    assert code == 0 and "nothing to forget" in out
    assert run("auth", "status", SERVER)[0] == 1


def test_a_stdio_server_is_refused_clearly(store: FileTokenStore) -> None:
    result = CliRunner().invoke(main, ["auth", "status", "python server.py"])
    assert result.exit_code == 2
    assert "must be an http(s):// URL" in result.output


def test_a_bad_store_choice_is_a_clear_error(store: FileTokenStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELICITKIT_TOKEN_STORE", "vault")
    result = CliRunner().invoke(main, ["auth", "status", SERVER])
    assert result.exit_code == 2
    assert "ELICITKIT_TOKEN_STORE must be 'keyring' or 'file'" in result.output


def test_a_corrupt_token_file_is_kept_aside_and_status_goes_on(store: FileTokenStore) -> None:
    store.path.write_text("{not json")
    code, out = run("auth", "status", SERVER)
    assert code == 1 and "Not signed in" in out
    assert os.path.exists(str(store.path) + ".corrupt-1")


@pytest.mark.parametrize(
    ("resource", "server", "expected"),
    [
        (SERVER, SERVER, True),
        (SERVER, SERVER + "/", True),
        ("https://MCP.example.com/mcp/", SERVER, True),
        ("https://mcp.example.com", SERVER, True),
        (SERVER, "https://mcp.example.com/mcpx", False),
        (SERVER, "https://mcp.example.com/", False),
        (SERVER, "http://mcp.example.com/mcp", False),
    ],
)
def test_which_tokens_serve_which_server(resource: str, server: str, expected: bool) -> None:
    assert covers(resource, server) is expected


def test_describe_ignores_odd_values() -> None:
    entry = describe({"expires_at": True, "scope": 5, "token_type": "Mac", "refresh_token": ""}, SERVER, ISSUER)
    assert entry["expires_at"] is None and entry["scopes"] == [] and entry["token_type"] == "Bearer"
    assert entry["renews_itself"] is False


def test_call_gets_oauth_for_urls_only_and_picks_the_store_on_first_use(
    store: FileTokenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import elicitkit.auth
    from elicitkit.auth import LoopbackAuthorizer, OAuth
    from elicitkit.cli_auth import http_auth

    assert http_auth("python server.py", no_browser=False) is None
    chosen: list[str] = []
    real = elicitkit.auth.default_token_store

    def counting() -> Any:
        chosen.append("store")
        return real()

    monkeypatch.setattr(elicitkit.auth, "default_token_store", counting)
    auth = http_auth(SERVER, no_browser=True)
    assert isinstance(auth, OAuth)
    assert isinstance(auth.authorizer, LoopbackAuthorizer) and auth.authorizer.open_browser is False
    assert chosen == []  # nothing probed while the server has not asked for a token

    async def first_use() -> list[str]:
        return await auth.store.keys()

    assert token_key(SERVER, ISSUER) in anyio.run(first_use)
    assert chosen == ["store"]


def test_logout_json_names_what_was_forgotten_and_no_secret(store: FileTokenStore) -> None:
    code, out = run("auth", "logout", SERVER, "--json")
    assert code == 0, out
    assert json.loads(out) == {"server": SERVER, "forgot": [{"server": SERVER, "issuer": ISSUER}]}
    assert not any(secret in out for secret in SECRETS)
    code, out = run("auth", "logout", SERVER, "--json")
    assert code == 0 and json.loads(out)["forgot"] == []


def test_login_json_reports_a_failure_as_json_on_stdout(store: FileTokenStore) -> None:
    # Nothing listens on port 9 of loopback: the sign-in cannot start, and a script gets the error as JSON.
    result = CliRunner().invoke(
        main, ["auth", "login", "http://127.0.0.1:9/mcp", "--no-browser", "--timeout", "5", "--json"]
    )
    assert result.exit_code == 2
    document = json.loads(result.stdout)
    assert document["exitCode"] == 2 and "127.0.0.1:9" in document["error"]
