"""``elicitkit connections list|revoke``: the accounts a server's users connected (ctx.authorize).

Reads the server's connection store where it keeps it: the task store's SQLite file (``--db``,
or ``--server NAME`` for that server's default file, or ``$ELICITKIT_TASK_DB``), or a fleet's
Redis (``--redis``, or ``$ELICITKIT_REDIS_URL``, with ``--prefix``). Shows who, which provider,
the scopes, the expiry and whether it renews by itself, never a token; needs no keys to do so.
``revoke`` forgets a principal's tokens at a provider: their next ``ctx.authorize`` asks again.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from typing import TYPE_CHECKING, Any

import anyio
import click

if TYPE_CHECKING:
    from elicitkit.server.auth.connections.store import ConnectionStore

__all__ = ["connections"]


def _store(db: str | None, server: str | None, redis: str | None, prefix: str) -> tuple[ConnectionStore, str]:
    """The store the options name, and words saying which it is."""
    redis = redis or (None if db or server else os.environ.get("ELICITKIT_REDIS_URL"))
    if redis:
        from elicitkit.backplane.redis_client import connect
        from elicitkit.server.auth.connections.redis_store import RedisConnectionStore

        return RedisConnectionStore(connect(redis), prefix=prefix), f"Redis, prefix {prefix!r}"
    from elicitkit.server.auth.connections.sqlite_store import SQLiteConnectionStore

    if db is None and server is not None:
        from elicitkit.server.tasks.serving import default_task_db

        db = str(default_task_db(server))
    db = db or os.environ.get("ELICITKIT_TASK_DB")
    if not db:
        raise click.UsageError("say where the server keeps them: --db FILE, --server NAME or --redis URL")
    if not os.path.exists(db):
        raise click.UsageError(f"there is no store at {db}")
    return SQLiteConnectionStore(db), db


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "no expiry given"
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


async def _list(store: ConnectionStore, where: str, principal: str | None, as_json: bool) -> int:
    from elicitkit.server.auth.connections.manager import described

    try:
        found = [described(row) for row in await store.rows(principal)]
    finally:
        await store.close()
    if as_json:
        click.echo(json.dumps({"store": where, "connections": [c.to_json() for c in found]}, indent=2))
        return 0
    if not found:
        click.echo("No connections" + (f" for {principal}" if principal else "") + f" (in {where}).")
        return 0
    for c in found:
        renews = "renews by itself" if c.renews else "does not renew"
        click.echo(f"{c.principal}  {c.provider}  scopes: {c.scope or '-'}  expires: {_when(c.expires_at)}  {renews}")
    return 0


async def _revoke(store: ConnectionStore, principal: str, provider: str, as_json: bool) -> int:
    try:
        forgot = await store.delete(principal, provider)
    finally:
        await store.close()
    if as_json:
        click.echo(json.dumps({"principal": principal, "provider": provider, "revoked": forgot}))
    elif forgot:
        click.echo(f"Revoked {principal}'s {provider} connection: their next call asks them to connect again.")
    else:
        click.echo(f"{principal} has no {provider} connection: nothing to revoke.")
    return 0 if forgot else 1


def _store_options(fn: Any) -> Any:
    for option in reversed(
        [
            click.option("--db", help="The server's task store file (SQLite), where connections are kept."),
            click.option("--server", "server_name", help="The server's name: its default task store file."),
            click.option("--redis", help="A fleet's Redis URL (default $ELICITKIT_REDIS_URL)."),
            click.option("--prefix", default="elicitkit:", show_default=True, help="The fleet's Redis key prefix."),
            click.option("--json", "as_json", is_flag=True, help="Print as JSON (never a token)."),
        ]
    ):
        fn = option(fn)
    return fn


def _run(fn: Any, *args: Any, as_json: bool) -> int:
    try:
        code: int = anyio.run(fn, *args)
    except (OSError, RuntimeError) as exc:
        click.echo(f"error: {exc}", err=True)
        if as_json:
            click.echo(json.dumps({"error": str(exc), "exitCode": 2}))
        return 2
    return code


@click.group()
def connections() -> None:
    """The accounts your server's users connected at third-party providers (ctx.authorize).

    Never shows a token: who, which provider, the scopes, the expiry, whether it renews.
    """


@connections.command("list")
@click.argument("principal", required=False)
@_store_options
def list_(
    principal: str | None, db: str | None, server_name: str | None, redis: str | None, prefix: str, as_json: bool
) -> None:
    """Every connection, or PRINCIPAL's."""
    store, where = _store(db, server_name, redis, prefix)
    sys.exit(_run(_list, store, where, principal, as_json, as_json=as_json))


@connections.command()
@click.argument("principal")
@click.argument("provider")
@_store_options
def revoke(
    principal: str,
    provider: str,
    db: str | None,
    server_name: str | None,
    redis: str | None,
    prefix: str,
    as_json: bool,
) -> None:
    """Forget PRINCIPAL's tokens at PROVIDER (exit status 1 when there were none)."""
    store, _ = _store(db, server_name, redis, prefix)
    sys.exit(_run(_revoke, store, principal, provider, as_json, as_json=as_json))
