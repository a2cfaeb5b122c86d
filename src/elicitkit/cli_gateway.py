"""``elicitkit gateway CONFIG``: serve the backends of CONFIG to hosts, over stdio or Streamable HTTP."""

from __future__ import annotations

import json
import sys

import anyio
import click

__all__ = ["gateway"]


@click.command()
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8000, show_default=True)
@click.option("--path", default="/mcp", show_default=True)
@click.option(
    "--redis",
    "redis_url",
    default=None,
    help="A fleet of gateways: the shared Redis (else [gateway] redis, else $ELICITKIT_REDIS_URL).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (JSON on stdout, HTTP only).")
@click.option(
    "--loop",
    type=click.Choice(["auto", "asyncio", "uvloop"]),
    default="auto",
    show_default=True,
    help="The event loop for HTTP (auto: uvloop when installed, elicitkit[gateway]).",
)
def gateway(
    config: str, transport: str, host: str, port: int, path: str, redis_url: str | None, as_json: bool, loop: str
) -> None:
    """Serve the backends of CONFIG (TOML, or JSON) as one MCP server, to hosts of every era (docs/gateway.md)."""
    from elicitkit.gateway import ConfigError, Gateway
    from elicitkit.transports.http.serve import CannotListen

    try:
        served = Gateway.from_file(config)
        served.event_loop = loop  # type: ignore[assignment]  # (one of click's choices)
        options = served.loop_options("http")
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    if redis_url and transport == "http":
        from elicitkit.backplane.redis_backplane import RedisBackplane

        if not redis_url.startswith(("redis://", "rediss://", "unix://")):  # (never echoed: it may hold a password)
            raise click.BadParameter("must be a redis://, rediss:// or unix:// URL", param_hint="--redis")

        served.use_backplane(RedisBackplane.from_url(redis_url))
    if transport == "stdio":
        if served.config.auth is not None:  # stdio is never authenticated: refuse rather than serve it open
            raise click.UsageError(
                f"{config}: [gateway.auth] protects the HTTP front door; stdio hosts are not authenticated."
                " Serve it with --transport http (or drop [gateway.auth])"
            )
        served.run("stdio")
        return

    def listening(url: str) -> None:
        names = ", ".join(served.backends)
        if as_json:
            click.echo(json.dumps({"listening": url, "server": served.name, "backends": list(served.backends)}))
        else:
            click.echo(f"{served.name}: serving MCP at {url} for {names} (Ctrl-C stops)", err=True)

    try:
        anyio.run(
            lambda: served.run_async("http", host=host, port=port, path=path, on_listening=listening),
            backend_options=options,
        )
    except CannotListen as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
