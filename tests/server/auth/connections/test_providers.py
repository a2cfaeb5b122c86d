"""Providers declared in a file: OIDC by issuer, GitHub-style by endpoints, secrets from the
environment only; what cannot be a provider is refused saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

from elicitkit.server.auth.connections import Provider, load_providers

CONFIG = """
[github]
title = "GitHub"
client_id = "Iv1.abc"
client_secret_env = "GH_SECRET"
authorization_endpoint = "https://github.com/login/oauth/authorize"
token_endpoint = "https://github.com/login/oauth/access_token"
scopes = ["read:user", "repo"]

[bank]
issuer = "https://id.bank.example"
client_id = "mcp-notes"
"""


def test_a_toml_file_declares_both_kinds(tmp_path: Path) -> None:
    path = tmp_path / "providers.toml"
    path.write_text(CONFIG, encoding="utf-8")
    github, bank = load_providers(path, {"GH_SECRET": "s3cret"})
    assert (github.name, github.shown, github.client_secret, list(github.scopes)) == (
        "github",
        "GitHub",
        "s3cret",
        ["read:user", "repo"],
    )
    assert github.identity().auth_method == "client_secret_basic" and "s3cret" not in repr(github)
    assert (bank.issuer, bank.client_secret, bank.identity().auth_method) == ("https://id.bank.example", None, "none")


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"client_id": "x", "issuer": "https://i", "client_secret": "inline"}, "client_secret_env"),
        ({"client_id": "x", "issuer": "https://i", "colour": "blue"}, "unknown settings colour"),
        ({"client_id": "x", "issuer": "https://i", "client_secret_env": "NOPE"}, "$NOPE"),
        ({"client_id": "x", "token_endpoint": "https://t"}, "give an issuer"),
    ],
)
def test_what_cannot_be_a_provider_is_refused(table: dict[str, str], words: str) -> None:
    with pytest.raises(ValueError, match=words.replace("$", r"\$")):
        Provider.from_config("p", table, {})


def test_a_json_file_works_too(tmp_path: Path) -> None:
    path = tmp_path / "providers.json"
    path.write_text('{"bank": {"issuer": "https://id.bank.example", "client_id": "c"}}', encoding="utf-8")
    (bank,) = load_providers(path, {})
    assert bank.name == "bank"
    path.write_text('{"bank": 1}', encoding="utf-8")
    with pytest.raises(ValueError, match="one table per provider"):
        load_providers(path, {})
