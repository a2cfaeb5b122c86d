"""The small public shapes of client auth: a provider, a person's consent, a token store.

``AuthProvider`` is what ``Client(url, auth=...)`` takes: the HTTP transport's hook
(:class:`~elicitkit.transports.http.auth.HTTPAuth`), re-exported under the name people look
for. ``Authorizer`` is how a person consents (a loopback redirect in their browser, or a test's
headless one). ``TokenStore`` keeps tokens and client registrations between runs, under the keys
:func:`token_key` and :func:`client_key` build, so each server and authorization server (issuer)
has its own entry and a new issuer never sees another's credentials.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from elicitkit.transports.http.auth import HTTPAuth

__all__ = [
    "AuthProvider",
    "Authorizer",
    "MemoryTokenStore",
    "StaticToken",
    "TokenStore",
    "client_key",
    "split_key",
    "token_key",
]

AuthProvider = HTTPAuth
"""Anything ``Client(url, auth=...)`` accepts: ``headers(method, url)`` and ``on_challenge(...)``."""


@runtime_checkable
class Authorizer(Protocol):
    """How the person consents: show the authorization URL, hand back the redirect's parameters.

    ``redirect_uri`` is read only after ``await start()`` (a loopback listener learns its port
    there). ``authorize`` returns the redirect's query parameters (``code``, ``state``, ``iss``,
    or ``error``...); checking them is the flow's job.
    """

    redirect_uri: str

    async def start(self) -> None: ...

    async def authorize(self, authorization_url: str) -> Mapping[str, str]: ...

    async def close(self) -> None: ...


@runtime_checkable
class TokenStore(Protocol):
    """Where tokens and client registrations live between runs: JSON objects under string keys."""

    async def load(self, key: str) -> dict[str, Any] | None: ...

    async def save(self, key: str, value: dict[str, Any]) -> None: ...

    async def delete(self, key: str) -> None: ...

    async def keys(self) -> list[str]: ...


def token_key(resource: str, issuer: str) -> str:
    """The store key of the tokens for ``resource`` (the server) from ``issuer``."""
    return "tokens " + json.dumps([resource, issuer])


def client_key(issuer: str) -> str:
    """The store key of this client's registration (client_id, ...) at ``issuer``."""
    return "client " + json.dumps([issuer])


def split_key(key: str) -> tuple[str, str | None, str] | None:
    """``(kind, resource or None, issuer)`` of a key built above; None for any other key."""
    kind, _, rest = key.partition(" ")
    try:
        parts = json.loads(rest)
    except ValueError:
        return None
    if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
        return None
    if kind == "tokens" and len(parts) == 2:
        return kind, parts[0], parts[1]
    if kind == "client" and len(parts) == 1:
        return kind, None, parts[0]
    return None


class MemoryTokenStore:
    """A :class:`TokenStore` in this process only (the default): nothing outlives the program."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}

    async def load(self, key: str) -> dict[str, Any] | None:
        value = self._data.get(key)
        return copy.deepcopy(value) if value is not None else None

    async def save(self, key: str, value: dict[str, Any]) -> None:
        self._data[key] = copy.deepcopy(value)

    async def delete(self, key: str) -> None:
        self._data.pop(key, None)

    async def keys(self) -> list[str]:
        return list(self._data)


class StaticToken:
    """A bearer token you already have: sent as ``Authorization: Bearer ...``, never refreshed.

    A 401 is final (there is nothing to renew), so the request fails with the server's refusal.
    """

    def __init__(self, token: str, *, scheme: str = "Bearer") -> None:
        if not token or any(c in token for c in "\r\n"):
            raise ValueError("StaticToken needs a non-empty token on one line")
        self._header = {"Authorization": f"{scheme} {token}"}

    def __repr__(self) -> str:
        return "StaticToken(<hidden>)"

    async def headers(self, method: str, url: str) -> Mapping[str, str]:
        return self._header

    async def on_challenge(self, status: int, headers: Mapping[str, str], url: str, sent: Mapping[str, str]) -> bool:
        return False
