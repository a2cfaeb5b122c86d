"""What crosses Redis is sealed: encrypted and authenticated (AES-256-GCM) under the fleet key.

Redis is a shared medium: whoever can read it (a managed instance shared with others, a backup,
a replica) could read every answer, question and result a MAC alone leaves in clear, and whoever
can write it could forge them. :class:`Sealer` encrypts a body and binds it to *where* it
travels or is kept (a channel, a key, a key and a version): the same sealed bytes moved anywhere
else, or changed by one bit, do not open. What routing needs (channel and key names, a stream's
name in front of a relayed event, task ids) stays outside the sealed part.

A general wrapper: the backplane's messages and events, the task store's records and any other
record a fleet keeps in Redis (pages) use the same :class:`Sealer` with their own ``where``.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["OVERHEAD", "Sealer"]

_VERSION = b"\x01"
_NONCE = 12
_TAG = 16
OVERHEAD = len(_VERSION) + _NONCE + _TAG  # bytes a sealed body is longer than the body
_LABEL = b"elicitkit/fleet/aead/v1"


class Sealer:
    """Seal and open bodies under one fleet key (any 32 bytes: the fleet key, see :mod:`.signing`).

    Random 96-bit nonces: safe for far more messages than a fleet sends under one key.
    """

    __slots__ = ("_aead", "_key")

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._aead = AESGCM(hmac.new(key, _LABEL, hashlib.sha256).digest())

    def derive(self, label: bytes) -> bytes:
        """A key for another use (``label`` names it), the same on every instance of the fleet."""
        return hmac.new(self._key, b"derive\x00" + label, hashlib.sha256).digest()

    def seal(self, where: bytes, body: bytes) -> bytes:
        """``body`` encrypted, bound to ``where`` (a channel, a key): version, nonce, ciphertext and tag."""
        nonce = os.urandom(_NONCE)
        return _VERSION + nonce + self._aead.encrypt(nonce, body, where)

    def open(self, where: bytes, sealed: bytes) -> bytes | None:
        """The body, or None: forged, changed, sealed for somewhere else, or under another key."""
        if len(sealed) < OVERHEAD or sealed[:1] != _VERSION:
            return None
        try:
            return self._aead.decrypt(sealed[1 : 1 + _NONCE], sealed[1 + _NONCE :], where)
        except InvalidTag:
            return None
