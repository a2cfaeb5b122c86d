"""Messages between instances carry a MAC under the fleet's shared key.

Redis is a shared medium: anyone who can reach it can publish. Without a MAC, publishing one
JSON-RPC response to an instance's inbox would answer someone else's question. Each message is
bound to the channel (or key) it travels on, and inbox messages carry a time and a nonce, so a
captured message cannot be replayed to another instance, another stream, or later.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from elicitkit.errors import ElicitkitError

FLEET_KEY_ENV = "ELICITKIT_FLEET_KEY"
STATE_KEYS_ENV = "ELICITKIT_STATE_KEYS"
MAC_BYTES = 16
_LABEL = b"elicitkit/fleet/v1"


class MissingFleetKey(ElicitkitError, ValueError):
    """A fleet needs a key that every instance shares; none was given or found."""


def fleet_key(explicit: bytes | str | None = None) -> bytes:
    """The MAC key: ``explicit``, else ``$ELICITKIT_FLEET_KEY``, else derived from ``$ELICITKIT_STATE_KEYS``.

    Any text works (it is hashed): the point is that every instance of the fleet has the same.
    """
    secret: bytes | None
    if explicit is not None:
        secret = explicit.encode() if isinstance(explicit, str) else explicit
    else:
        value = os.environ.get(FLEET_KEY_ENV) or os.environ.get(STATE_KEYS_ENV)
        secret = value.encode() if value else None
    if not secret:
        raise MissingFleetKey(
            f"a fleet needs a shared key: set {FLEET_KEY_ENV} (or {STATE_KEYS_ENV}) to the same secret on"
            " every instance, or pass key= to the backplane"
        )
    return hmac.new(secret, _LABEL, hashlib.sha256).digest()


class Signer:
    """Seal and check messages under one fleet key."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        self._key = key

    def derive(self, label: bytes) -> bytes:
        """A key for another use (``label`` names it), the same on every instance of the fleet."""
        return hmac.new(self._key, b"derive\x00" + label, hashlib.sha256).digest()

    def seal(self, where: bytes, body: bytes) -> bytes:
        """``body`` with a MAC over ``where`` (the channel or key) and ``body`` in front."""
        mac = hmac.new(self._key, where + b"\x00" + body, hashlib.sha256).digest()[:MAC_BYTES]
        return mac + body

    def open(self, where: bytes, sealed: bytes) -> bytes | None:
        """The body, or None if the MAC is wrong (forged, or sealed for somewhere else)."""
        if len(sealed) < MAC_BYTES:
            return None
        body = sealed[MAC_BYTES:]
        mac = hmac.new(self._key, where + b"\x00" + body, hashlib.sha256).digest()[:MAC_BYTES]
        return body if hmac.compare_digest(mac, sealed[:MAC_BYTES]) else None
