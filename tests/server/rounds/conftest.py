"""A real ``redis-server`` for the Redis store tests here (fixtures from ``kit.fleet``)."""

from kit.fleet import client, other_client, prefix, shared_redis

__all__ = ["client", "other_client", "prefix", "shared_redis"]
