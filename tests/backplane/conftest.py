from __future__ import annotations

from kit.fleet import client, prefix, shared_redis

__all__ = ["client", "prefix", "shared_redis"]
