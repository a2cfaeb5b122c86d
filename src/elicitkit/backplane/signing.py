"""The fleet's shared key: every message between instances is sealed under it (:mod:`.sealing`).

Redis is a shared medium: anyone who can reach it can publish. Without a key, publishing one
JSON-RPC response to an instance's inbox would answer someone else's question, and reading Redis
would read it. Each message is sealed (AES-GCM) and bound to the channel (or key) it travels on,
and inbox messages carry a time and a nonce inside the sealed part, so a captured message can be
neither read nor replayed to another instance, another stream, or later.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from elicitkit.backplane.sealing import Sealer
from elicitkit.errors import ElicitkitError

FLEET_KEY_ENV = "ELICITKIT_FLEET_KEY"
STATE_KEYS_ENV = "ELICITKIT_STATE_KEYS"
_LABEL = b"elicitkit/fleet/v1"


class MissingFleetKey(ElicitkitError, ValueError):
    """A fleet needs a key that every instance shares; none was given or found."""


def fleet_key(explicit: bytes | str | None = None) -> bytes:
    """The fleet key: ``explicit``, else ``$ELICITKIT_FLEET_KEY``, else derived from ``$ELICITKIT_STATE_KEYS``.

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


# The name the backplane and its tests knew when messages were only MACed: the same interface,
# now sealed (encrypted and authenticated), see :mod:`.sealing`.
Signer = Sealer
