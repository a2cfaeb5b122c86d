"""The fleet's Redis connection: retried on a broken pooled connection, TLS and ACL from settings.

redis-py's ``from_url`` makes connections that are never retried: after Redis restarts, every
pooled connection fails once on first reuse ("Connection closed by server"), and a registry
write or an event lost that way left new sessions unknown (404) or a relayed call waiting for
events that never came. Here a command or pipeline that fails on a connection error gets a fresh
connection and is tried again, a few times over about a second, before the caller sees it.

TLS: a ``rediss://`` URL; the CA that signed the server's certificate from
``$ELICITKIT_REDIS_CA_FILE`` (else the system's), a client certificate from
``$ELICITKIT_REDIS_CERT_FILE`` and ``$ELICITKIT_REDIS_KEY_FILE`` when Redis asks for one. ACL:
``rediss://user:password@host:6380/0``, or ``$ELICITKIT_REDIS_USERNAME`` and
``$ELICITKIT_REDIS_PASSWORD`` (kept out of the URL, which may be logged). Arguments win over the
environment.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import redis.asyncio

__all__ = ["CONNECT_TIMEOUT", "RETRIES", "connect"]

RETRIES = 4  # attempts after the first, on a connection error or timeout
CONNECT_TIMEOUT = 2.0  # seconds to open a connection (Redis down: fail fast, not after the OS's minutes)
_ENV = {
    "username": "ELICITKIT_REDIS_USERNAME",
    "password": "ELICITKIT_REDIS_PASSWORD",
    "ssl_ca_certs": "ELICITKIT_REDIS_CA_FILE",
    "ssl_certfile": "ELICITKIT_REDIS_CERT_FILE",
    "ssl_keyfile": "ELICITKIT_REDIS_KEY_FILE",
}


def connect(url: str, **options: Any) -> redis.asyncio.Redis:
    """A ``redis.asyncio.Redis`` for ``url`` with the fleet's retry policy; ``options`` go to redis-py
    (``username=``, ``password=``, ``ssl_ca_certs=``, ...), over what the environment says."""
    import redis.asyncio
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialWithJitterBackoff
    from redis.exceptions import ConnectionError, TimeoutError

    tls = url.startswith("rediss://")
    settings: dict[str, Any] = {}
    for name, variable in _ENV.items():
        value = os.environ.get(variable)
        if value and (tls or not name.startswith("ssl_")):
            settings[name] = value
    settings.update(options)
    settings.setdefault("socket_connect_timeout", CONNECT_TIMEOUT)
    settings.setdefault("retry", Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), RETRIES))
    settings.setdefault("retry_on_error", [ConnectionError, TimeoutError, OSError])
    return redis.asyncio.Redis.from_url(url, **settings)
