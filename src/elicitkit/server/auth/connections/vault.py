"""Connection tokens and start links, sealed under the server's key ring (AES-256-GCM).

The ring is the one that seals ``requestState`` (``ELICITKIT_STATE_KEYS``, see
:mod:`elicitkit.server.rounds.keys`), used with labels of its own, so a fleet that shares its
state keys opens each other's connections, and rotation works the same way: the first key
seals, every key opens. A sealed body is bound to where it is kept (principal and provider),
so a record copied under another principal does not open.
"""

from __future__ import annotations

from elicitkit.server.rounds.keys import KeyRing

__all__ = ["Vault"]

_SEP = b"."


class Vault:
    """Seal and open bodies for one use (``label``) of a key ring."""

    __slots__ = ("_by_kid", "_first")

    def __init__(self, ring: KeyRing, label: bytes) -> None:
        sealers = ring.sealers(b"elicitkit/connections/" + label)
        self._first = sealers[0]
        self._by_kid = dict(sealers)

    def seal(self, where: bytes, body: bytes) -> bytes:
        kid, sealer = self._first
        return kid.encode("ascii") + _SEP + sealer.seal(where, body)

    def open(self, where: bytes, sealed: bytes) -> bytes | None:
        """The body, or None: changed, sealed for somewhere else, or under a key no longer in the ring."""
        kid, sep, rest = sealed.partition(_SEP)
        sealer = self._by_kid.get(kid.decode("ascii", "replace")) if sep else None
        return sealer.open(where, rest) if sealer is not None else None
