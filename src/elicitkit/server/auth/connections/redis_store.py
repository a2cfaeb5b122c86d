"""Connections in a fleet's Redis, beside its tasks, so any instance finds and refreshes them.

Layout under the fleet's prefix: ``conn:<principal, hex>:<provider>`` a hash (``s`` the sealed
tokens, ``m`` the clear metadata, ``p`` and ``v`` the principal and provider);
``connflow:<id>`` a sign-in in progress (sealed), with a Redis expiry. Compare-and-set writes
are Lua scripts (one round trip, atomic). The tokens are sealed under the server's key ring
before they reach Redis; the fleet key's sealing of the backplane is not relied on.
"""

from __future__ import annotations

import json
from typing import Any

from elicitkit.server.auth.connections.store import Row

__all__ = ["RedisConnectionStore"]

_PUT_IF = """
if redis.call('HGET', KEYS[1], 's') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[2], 'm', ARGV[3], 'p', ARGV[4], 'v', ARGV[5])
return 1
"""

_FLOW_PUT = """
if ARGV[2] == '' then
  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PXAT', ARGV[3]) then return 1 end
  return 0
end
if redis.call('GET', KEYS[1]) ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[3])
return 1
"""


class RedisConnectionStore:
    """Connections and sign-in flows in Redis (``client``: a ``redis.asyncio.Redis`` returning bytes)."""

    def __init__(self, client: Any, *, prefix: str = "elicitkit:") -> None:
        self.client = client
        self.prefix = prefix
        self._put_if = client.register_script(_PUT_IF)
        self._flow_put = client.register_script(_FLOW_PUT)

    def _key(self, principal: str, provider: str) -> str:
        return f"{self.prefix}conn:{principal.encode().hex()}:{provider}"

    async def get(self, principal: str, provider: str) -> Row | None:
        found = await self.client.hmget(self._key(principal, provider), "s", "m")
        if found[0] is None:
            return None
        return Row(principal, provider, bytes(found[0]), json.loads(found[1] or b"{}"))

    async def put(self, row: Row, *, expected: bytes | None = None) -> bool:
        key = self._key(row.principal, row.provider)
        meta = json.dumps(row.meta, sort_keys=True)
        if expected is None:
            await self.client.hset(key, mapping={"s": row.sealed, "m": meta, "p": row.principal, "v": row.provider})
            return True
        done = await self._put_if(keys=[key], args=[expected, row.sealed, meta, row.principal, row.provider])
        return int(done) == 1

    async def delete(self, principal: str, provider: str) -> bool:
        return int(await self.client.delete(self._key(principal, provider))) == 1

    async def rows(self, principal: str | None = None) -> list[Row]:
        pattern = f"{self.prefix}conn:" + (principal.encode().hex() + ":*" if principal is not None else "*")
        out: list[Row] = []
        async for key in self.client.scan_iter(match=pattern, count=200):
            found = await self.client.hmget(key, "s", "m", "p", "v")
            if found[0] is None or found[2] is None or found[3] is None:
                continue
            out.append(Row(found[2].decode(), found[3].decode(), bytes(found[0]), json.loads(found[1] or b"{}")))
        return sorted(out, key=lambda r: (r.principal, r.provider))

    async def flow_get(self, flow_id: str) -> bytes | None:
        found = await self.client.get(f"{self.prefix}connflow:{flow_id}")
        return None if found is None else bytes(found)

    async def flow_put(self, flow_id: str, sealed: bytes, expires_at: float, *, expected: bytes | None = None) -> bool:
        args = [sealed, expected if expected is not None else b"", int(expires_at * 1000)]
        return int(await self._flow_put(keys=[f"{self.prefix}connflow:{flow_id}"], args=args)) == 1

    async def close(self) -> None:
        return None  # the client is the fleet's
