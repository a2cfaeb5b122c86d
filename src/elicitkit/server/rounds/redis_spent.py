"""Single-use 2026 rounds across a fleet: the spent ``requestState`` nonces, kept in Redis.

In one process ``AeadStateCodec(spent=SpentStates())`` makes every sealed state open once. In a
fleet behind a balancer the replay lands on another instance, whose in-process set has never
seen the nonce; :class:`RedisSpentStates` is the same set shared by every instance::

    codec = AeadStateCodec(load_keyring(), spent=RedisSpentStates(client))
    server = Server("shop", state_codec=codec)   # every instance: the same keys, the same Redis

A claim is one ``SET key 1 NX EXAT <the state's expiry>``: atomic, so of two instances opening the
same state at once exactly one wins, and the key disappears when the state could no longer open
anyway (the state's own expiry), so Redis holds one small key per live round and no more.

Because the claim is a network round trip it is awaited: the codec verifies the token in its
synchronous ``open`` and the round claims the nonce (``InputRound.claim``) before the handler
runs. A server without a shared store never awaits anything for it.

Redis down: the claim cannot be checked, so the round is refused (fail closed: a replay must
never slip through) with a clean -32603 that says to retry, not the driver's text; a retry once
Redis is back works. A Redis that restarts empty forgets the nonces spent before it: states
sealed before the restart may open once more until they expire (their TTL, minutes). Where that
matters, run Redis with persistence.
"""

from __future__ import annotations

import logging

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from elicitkit.protocol.errors import INTERNAL_ERROR, MCPError

__all__ = ["UNAVAILABLE_MESSAGE", "RedisSpentStates"]

logger = logging.getLogger("elicitkit.mrtr")

UNAVAILABLE_MESSAGE = "requestState cannot be checked right now (its shared store is unavailable); retry shortly"


class RedisSpentStates:
    """The fleet-wide :class:`~elicitkit.server.rounds.sealing.SpentStore` (see the module docstring).

    ``client``: a ``redis.asyncio.Redis``, owned by the caller. ``prefix``: put in front of every
    key (``{prefix}spent:{nonce}``), so several servers can share one Redis.
    """

    def __init__(self, client: aioredis.Redis, *, prefix: str = "elicitkit:") -> None:
        self.client = client
        self.prefix = prefix
        self._key_prefix = f"{prefix}spent:"

    async def claim(self, nonce: str, expires: int) -> bool:
        """True the first time ``nonce`` is claimed by any instance; False ever after (until ``expires``).

        ``expires``: epoch seconds, the state's own expiry. Raises an ``MCPError`` (-32603) when
        Redis cannot be reached: unchecked is refused.
        """
        try:
            claimed = await self.client.set(self._key_prefix + nonce, b"1", nx=True, exat=expires)
        except (RedisError, OSError) as exc:
            logger.warning("single-use rounds: Redis claim failed: %s: %s", type(exc).__name__, exc)
            raise MCPError(INTERNAL_ERROR, UNAVAILABLE_MESSAGE) from exc
        return bool(claimed)
