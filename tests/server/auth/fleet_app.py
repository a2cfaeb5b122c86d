"""One instance of a protected fleet: ``python fleet_app.py PORT REDIS_URL PREFIX ISSUER JWKS_URI``.

Legacy sessions shared through the Redis backplane, tasks in a Redis task store, rounds sealed
with the shared state keys; every request needs a bearer token for ``https://fleet.example/mcp``
checked against ``JWKS_URI``.
"""

from __future__ import annotations

import os
import sys

import anyio
import redis.asyncio as aioredis

from elicitkit import Context, Server
from elicitkit.backplane.redis_backplane import RedisBackplane
from elicitkit.server.auth import JWTVerifier, ResourceServer
from elicitkit.server.rounds import AeadStateCodec
from elicitkit.server.rounds.keys import load_keyring
from elicitkit.server.rounds.redis_spent import RedisSpentStates
from elicitkit.server.tasks.redis_store import RedisTaskStore

RESOURCE = "https://fleet.example/mcp"


def main() -> None:
    port, redis_url, prefix, issuer, jwks = sys.argv[1:6]
    client = aioredis.Redis.from_url(redis_url, socket_connect_timeout=2, socket_timeout=5)
    codec = AeadStateCodec(load_keyring(), spent=RedisSpentStates(client, prefix=prefix))
    server = Server(
        "protected-fleet",
        state_codec=codec,
        task_store=RedisTaskStore(client, prefix=prefix),
        auth=ResourceServer(
            JWTVerifier(issuer, RESOURCE, jwks_uri=jwks), resource=RESOURCE, authorization_servers=[issuer]
        ),
    )
    instance = f"i{port}"

    @server.tool()
    def whoami(ctx: Context) -> str:
        return f"{ctx.principal}@{instance}"

    @server.tool()
    async def book(ctx: Context, day: str) -> str:
        """A question on the server's page for a client without elicitation (the link, then again)."""
        result = await ctx.elicit(f"How many guests on {day}?", int, fallback="page", timeout=10)
        return f"booked {result.data} on {day}" if result.accepted else result.action.value

    @server.tool(task="optional")
    async def slow() -> str:
        await anyio.sleep(30)
        return "done"

    server.use_backplane(RedisBackplane.from_url(redis_url, instance_id=instance, heartbeat=0.3))
    server.run("http", port=int(port), json_response=True, shutdown_grace=0.5)


if __name__ == "__main__":
    os.environ.pop("ELICITKIT_REDIS_URL", None)
    main()
