"""What the instances of a fleet share: sessions, their streams, broadcasts (see ``docs/fleet.md``).

:class:`Backplane` is the interface; :class:`InProcessBackplane` the default (one process);
``RedisBackplane`` (``elicitkit.backplane.redis_backplane``, needs ``elicitkit[redis]``) the
fleet. Importing this package does not import ``redis``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from elicitkit.backplane.base import Backplane, Inbox
from elicitkit.backplane.local import InProcessBackplane
from elicitkit.backplane.signing import FLEET_KEY_ENV, MissingFleetKey

if TYPE_CHECKING:
    from elicitkit.backplane.redis_backplane import RedisBackplane

REDIS_URL_ENV = "ELICITKIT_REDIS_URL"


def __getattr__(name: str) -> Any:
    if name == "RedisBackplane":  # lazily: importing it imports redis
        from elicitkit.backplane.redis_backplane import RedisBackplane

        return RedisBackplane
    raise AttributeError(name)


__all__ = [
    "FLEET_KEY_ENV",
    "REDIS_URL_ENV",
    "Backplane",
    "InProcessBackplane",
    "Inbox",
    "MissingFleetKey",
    "RedisBackplane",
]
