"""A third-party provider, declared once: OIDC issuer discovery, or explicit endpoints.

GitHub-style providers publish no metadata: give their ``authorization_endpoint`` and
``token_endpoint``. OpenID providers (Google, a bank's, oidc-provider) need only ``issuer``;
their metadata is read once (RFC 8414, then OpenID discovery, with the exact issuer check of
:mod:`elicitkit.auth.discovery`) and kept.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from elicitkit.auth.discovery import discover_auth_server
from elicitkit.auth.http import Fetcher
from elicitkit.auth.tokens import ClientIdentity

__all__ = ["Endpoints", "Provider", "load_providers"]


@dataclass(frozen=True)
class Endpoints:
    """Where a provider signs people in and hands out tokens (resolved from metadata, or as given)."""

    issuer: str | None
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str | None = None
    iss_parameter_supported: bool = False


@dataclass(frozen=True)
class Provider:
    """One provider people connect their account at (``ctx.authorize(name)``).

    ``name``: how tools name it; ``title``: what the person reads ("GitHub"). ``issuer``: an
    OpenID / RFC 8414 issuer whose metadata gives the endpoints; or ``authorization_endpoint``
    and ``token_endpoint`` for a provider without metadata (then ``issuer`` is optional, and
    when given the callback's RFC 9207 ``iss`` must equal it). ``client_id`` / ``client_secret``:
    this server's registration there (the secret goes in the token request's Basic header,
    ``auth_method="client_secret_post"`` puts it in the body instead). ``scopes``: what to ask
    for. ``refresh_leeway``: seconds before expiry a token is refreshed. ``timeout``: seconds
    any call to the provider may take. ``params``: extra authorization request parameters.
    """

    name: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    issuer: str | None = None
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    userinfo_endpoint: str | None = None
    scopes: Sequence[str] = ()
    title: str | None = None
    auth_method: str | None = None
    refresh_leeway: float = 60.0
    timeout: float = 10.0
    params: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or "\0" in self.name or "/" in self.name:
            raise ValueError(f"a provider needs a plain name (no '/' or NUL), not {self.name!r}")
        explicit = self.authorization_endpoint is not None and self.token_endpoint is not None
        if not explicit and self.issuer is None:
            raise ValueError(
                f"provider {self.name!r}: give an issuer (OpenID discovery) or both authorization_endpoint and "
                "token_endpoint (a provider without metadata, GitHub-style)"
            )

    @classmethod
    def from_config(cls, name: str, config: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Provider:
        """A provider from a config table (the field names above); the secret comes from the
        environment variable ``client_secret_env`` names, never from the file itself."""
        env = os.environ if environ is None else environ
        settings = dict(config)
        if "client_secret" in settings:
            raise ValueError(f"provider {name!r}: put the secret in the environment and name it with client_secret_env")
        secret_env = settings.pop("client_secret_env", None)
        allowed = {f.name for f in fields(cls)} - {"name", "client_secret"}
        unknown = sorted(set(settings) - allowed)
        if unknown:
            raise ValueError(
                f"provider {name!r}: unknown settings {', '.join(unknown)} (known: {', '.join(sorted(allowed))})"
            )
        secret = None
        if secret_env is not None:
            secret = env.get(str(secret_env))
            if not secret:
                raise ValueError(f"provider {name!r}: ${secret_env} (its client secret) is not set")
        return cls(name, client_secret=secret, **settings)

    @property
    def shown(self) -> str:
        return self.title or self.name

    def identity(self) -> ClientIdentity:
        """This server as a client of the provider (how its token requests authenticate)."""
        method = self.auth_method or ("client_secret_basic" if self.client_secret else "none")
        return ClientIdentity(self.client_id, self.client_secret, method)

    async def endpoints(self, http: Fetcher) -> Endpoints:
        """The endpoints: as given, or from the issuer's metadata (exact issuer check)."""
        if self.authorization_endpoint is not None and self.token_endpoint is not None:
            return Endpoints(
                self.issuer, self.authorization_endpoint, self.token_endpoint, self.userinfo_endpoint, False
            )
        assert self.issuer is not None
        found = await discover_auth_server(http, self.issuer, allow_fallback=False)
        userinfo = found.raw.get("userinfo_endpoint")
        return Endpoints(
            found.issuer,
            self.authorization_endpoint or found.authorization_endpoint or "",
            self.token_endpoint or found.token_endpoint,
            self.userinfo_endpoint or (userinfo if isinstance(userinfo, str) else None),
            found.iss_parameter_supported,
        )


def load_providers(path: str | Path, environ: Mapping[str, str] | None = None) -> list[Provider]:
    """Providers from a TOML or JSON file: one table per provider name, e.g.

    .. code-block:: toml

        [github]
        title = "GitHub"
        client_id = "Iv1.8a61f9b3a7aba766"
        client_secret_env = "GITHUB_CLIENT_SECRET"
        authorization_endpoint = "https://github.com/login/oauth/authorize"
        token_endpoint = "https://github.com/login/oauth/access_token"
        scopes = ["read:user", "repo"]

        [bank]
        issuer = "https://id.bank.example"
        client_id = "mcp-notes"
        client_secret_env = "BANK_CLIENT_SECRET"
    """
    text = Path(path).read_text(encoding="utf-8")
    data: Any = json.loads(text) if str(path).endswith(".json") else tomllib.loads(text)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ValueError(f"{path}: expected one table per provider")
    return [Provider.from_config(name, table, environ) for name, table in data.items()]
