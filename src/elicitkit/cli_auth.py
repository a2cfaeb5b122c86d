"""``elicitkit auth login|status|logout``, and the OAuth that ``elicitkit call`` engages on a 401.

Tokens live in :func:`~elicitkit.auth.default_token_store` (the OS keyring, else a 0600 file),
one entry per server and authorization server. ``status`` shows what a person needs to know
(which server, which issuer, which scopes, when it expires, whether it renews by itself) and
never a token, a refresh token, a client secret or a key, with or without ``--json``.
"""

from __future__ import annotations

import datetime
import json
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import click

from elicitkit.errors import AuthError

if TYPE_CHECKING:  # imported when used: a stdio `elicitkit call` never loads the OAuth machinery
    from elicitkit.auth import OAuth, TokenStore

__all__ = ["auth", "http_auth"]

NO_BROWSER_HELP = "Do not open a browser to sign in: print the address to open instead."


def _is_http(server: str) -> bool:
    return server.startswith(("http://", "https://"))


def http_auth(server: str, no_browser: bool, store: TokenStore | None = None) -> OAuth | None:
    """The OAuth for an http(s) SERVER (it stays idle unless the server answers 401); None for stdio."""
    if not _is_http(server):
        return None
    from elicitkit.auth import LoopbackAuthorizer, OAuth

    return OAuth(
        store=store if store is not None else _DefaultStore(),
        authorizer=LoopbackAuthorizer(open_browser=not no_browser),
    )


class _DefaultStore:
    """:func:`~elicitkit.auth.default_token_store`, chosen on first use: a server that never asks
    for a token costs no keyring probe (a D-Bus round trip on Linux)."""

    def __init__(self) -> None:
        self._store: TokenStore | None = None

    def _chosen(self) -> TokenStore:
        if self._store is None:
            from elicitkit.auth import default_token_store

            self._store = default_token_store()
        return self._store

    async def load(self, key: str) -> dict[str, Any] | None:
        return await self._chosen().load(key)

    async def save(self, key: str, value: dict[str, Any]) -> None:
        await self._chosen().save(key, value)

    async def delete(self, key: str) -> None:
        await self._chosen().delete(key)

    async def keys(self) -> list[str]:
        return await self._chosen().keys()


def _normal(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def covers(resource: str, server: str) -> bool:
    """Whether tokens for ``resource`` (RFC 8707: the server or a prefix of its path) serve ``server``."""
    resource, server = _normal(resource), _normal(server)
    return server == resource or server.startswith(resource + "/")


# ------------------------------------------------------------------------------ what status shows


def _when(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _in_words(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def describe(record: Mapping[str, Any], resource: str, issuer: str, now: float | None = None) -> dict[str, Any]:
    """What may be shown of one stored token set: never a token, a secret or a key."""
    now = time.time() if now is None else now
    expires = record.get("expires_at")
    expires_at = float(expires) if isinstance(expires, (int, float)) and not isinstance(expires, bool) else None
    scope = record.get("scope")
    requested = record.get("requested_scopes")
    scopes = scope.split() if isinstance(scope, str) else None
    if scopes is None and isinstance(requested, list):
        scopes = [s for s in requested if isinstance(s, str)]
    token_type = record.get("token_type")
    return {
        "server": resource,
        "issuer": issuer,
        "scopes": scopes or [],
        "token_type": token_type if token_type in ("Bearer", "DPoP") else "Bearer",
        "expires_at": _when(expires_at) if expires_at is not None else None,
        "expired": expires_at is not None and expires_at <= now,
        "expires_in_seconds": round(expires_at - now) if expires_at is not None else None,
        "renews_itself": isinstance(record.get("refresh_token"), str) and bool(record.get("refresh_token")),
    }


def _show(entry: Mapping[str, Any]) -> str:
    lines = [entry["server"], f"  issuer:   {entry['issuer']}"]
    lines.append(f"  scopes:   {' '.join(entry['scopes']) or '(none named)'}")
    lines.append(f"  type:     {entry['token_type']}")
    seconds = entry["expires_in_seconds"]
    if seconds is None:
        expiry = "no expiry given"
    elif entry["expired"]:
        expiry = f"expired {entry['expires_at']} ({_in_words(seconds)} ago)"
    else:
        expiry = f"{entry['expires_at']} (in {_in_words(seconds)})"
    lines.append(f"  expires:  {expiry}")
    renews = "yes (a refresh token is kept)" if entry["renews_itself"] else "no: sign in again when it expires"
    lines.append(f"  renews:   {renews}")
    return "\n".join(lines)


async def _entries(store: TokenStore, server: str | None) -> list[tuple[str, dict[str, Any]]]:
    """(store key, description) of every token set for ``server`` (every one with None)."""
    from elicitkit.auth import split_key

    found: list[tuple[str, dict[str, Any]]] = []
    for key in await store.keys():
        parsed = split_key(key)
        if parsed is None:
            continue
        kind, resource, issuer = parsed
        if kind != "tokens" or resource is None:
            continue
        if server is not None and not covers(resource, server):
            continue
        record = await store.load(key)
        if record is not None:
            found.append((key, describe(record, resource, issuer)))
    return found


# ------------------------------------------------------------------------------ the commands


async def _login(server: str, no_browser: bool, timeout: float, as_json: bool) -> int:
    from elicitkit.auth import LoopbackAuthorizer, OAuth, default_token_store

    store = default_token_store()
    # The address to open goes to stderr either way, so --json keeps stdout to the one document.
    oauth = OAuth(store=store, authorizer=LoopbackAuthorizer(open_browser=not no_browser), timeout=timeout)
    await oauth.login(server, force=True)  # kept tokens are replaced only once this succeeds
    entries = [entry for _, entry in await _entries(store, server)]
    if as_json:
        click.echo(json.dumps({"signed_in": entries}, indent=2))
        return 0
    click.echo("Signed in.")
    for entry in entries:
        click.echo(_show(entry))
    return 0


async def _status(server: str | None, as_json: bool) -> int:
    from elicitkit.auth import default_token_store

    store = default_token_store()
    entries = [entry for _, entry in await _entries(store, server)]
    if as_json:
        click.echo(json.dumps({"store": repr(store), "signed_in": entries}, indent=2))
        return 0 if entries else 1
    if not entries:
        click.echo(f"Not signed in to {server}." if server else "Not signed in to any server.")
        click.echo(f"(tokens are kept in {store!r})")
        return 1
    for entry in entries:
        click.echo(_show(entry))
    return 0


async def _logout(server: str, as_json: bool) -> int:
    from elicitkit.auth import default_token_store

    store = default_token_store()
    entries = await _entries(store, server)
    for key, _ in entries:
        await store.delete(key)
    if as_json:
        forgot = [{"server": entry["server"], "issuer": entry["issuer"]} for _, entry in entries]
        click.echo(json.dumps({"server": server, "forgot": forgot}, indent=2))
        return 0
    if not entries:
        click.echo(f"Not signed in to {server}: nothing to forget.")
        return 0
    issuers = ", ".join(sorted({entry["issuer"] for _, entry in entries}))
    click.echo(f"Signed out of {server}: forgot {len(entries)} token set(s) from {issuers}.")
    return 0


def _run(fn: Any, *args: Any, as_json: bool = False) -> int:
    try:
        code: int = anyio.run(fn, *args)
    except (AuthError, OSError) as exc:  # an AuthError's message says what to do and holds no secret
        click.echo(f"error: {exc}", err=True)
        if as_json:  # a script reads the failure from stdout too, as from every other subcommand
            click.echo(json.dumps({"error": str(exc), "exitCode": 2}, ensure_ascii=False))
        return 2
    return code


def _url(server: str) -> str:
    if not _is_http(server):
        raise click.BadParameter("must be an http(s):// URL (stdio servers take no sign-in)", param_hint="SERVER_URL")
    return server


@click.group()
def auth() -> None:
    """Sign in to OAuth-protected servers, see where you are signed in, sign out.

    Tokens are kept per server and authorization server in the OS keyring, or in a 0600 file in
    $XDG_STATE_HOME/elicitkit/ when there is no usable keyring ($ELICITKIT_TOKEN_STORE=file|keyring
    decides). `elicitkit call` signs in by itself when a server asks; these commands are for doing
    it ahead of time, checking, and forgetting.
    """


@auth.command()
@click.argument("server_url")
@click.option("--no-browser", is_flag=True, help=NO_BROWSER_HELP)
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Seconds per request.")
@click.option("--json", "as_json", is_flag=True, help="Print what is now kept (never a token) as JSON.")
def login(server_url: str, no_browser: bool, timeout: float, as_json: bool) -> None:
    """Sign in to SERVER_URL now (a fresh sign-in, replacing any kept tokens once it succeeds)."""
    sys.exit(_run(_login, _url(server_url), no_browser, timeout, as_json, as_json=as_json))


@auth.command()
@click.argument("server_url", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def status(server_url: str | None, as_json: bool) -> None:
    """Where you are signed in (SERVER_URL, or every server): issuer, scopes, expiry; never a token.

    Exit status 0 when signed in, 1 when not.
    """
    sys.exit(_run(_status, _url(server_url) if server_url else None, as_json, as_json=as_json))


@auth.command()
@click.argument("server_url")
@click.option("--json", "as_json", is_flag=True, help="Print which token sets were forgotten as JSON.")
def logout(server_url: str, as_json: bool) -> None:
    """Forget the tokens kept for SERVER_URL."""
    sys.exit(_run(_logout, _url(server_url), as_json, as_json=as_json))
