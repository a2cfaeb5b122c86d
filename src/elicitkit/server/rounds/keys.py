"""The keys that seal ``requestState``: a ring whose first key seals and whose every key opens,
loaded from ``ELICITKIT_STATE_KEYS`` so that processes behind one load balancer agree.

Rotate by putting the new key first and keeping the old one until its tokens have expired.
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import os
from collections.abc import Iterable, Mapping, Sequence

from cryptography.hazmat.primitives.ciphers import algorithms
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from elicitkit.backplane.sealing import Sealer
from elicitkit.errors import ElicitkitError

KEY_BYTES = 32
ENV_VAR = "ELICITKIT_STATE_KEYS"

_LABEL = b"elicitkit/requestState/"


class KeyRingError(ElicitkitError, ValueError):
    """A key could not be used; the message says which one and why, never its value."""


# -- keys ---------------------------------------------------------------------------------


class Key:
    """One master key's derived ciphers and id; the raw bytes are not kept as an attribute."""

    __slots__ = ("_root", "inner", "kid", "outer", "single", "single_aes")

    def __init__(self, key: bytes) -> None:
        self.kid = b64encode(hashlib.sha256(_LABEL + b"key-id\x00" + key).digest()[:6])
        self.outer = AESGCM(hmac.new(key, _LABEL + b"outer", hashlib.sha256).digest())
        self.inner = AESGCM(hmac.new(key, _LABEL + b"inner", hashlib.sha256).digest())
        # v2 tokens: one AES-GCM layer; its block cipher too, to read a refused token's binding
        # for the log (then authenticated under it) without a second layer on every round.
        single = hmac.new(key, _LABEL + b"single-v2", hashlib.sha256).digest()
        self.single, self.single_aes = AESGCM(single), algorithms.AES(single)
        self._root = hmac.new(key, _LABEL + b"derive", hashlib.sha256).digest()  # other uses' keys

    def sealer(self, label: bytes) -> Sealer:
        """An AES-GCM :class:`~elicitkit.backplane.sealing.Sealer` for another use of this key
        (``label`` names it: connection tokens, start links), never the requestState ciphers."""
        return Sealer(hmac.new(self._root, label, hashlib.sha256).digest())

    def __repr__(self) -> str:
        return f"<key {self.kid}>"


class KeyRing:
    """32-byte keys with short ids: the first seals, all open (rotate without dropping rounds).

    Key ids derive from the keys, so processes sharing keys agree on them. To rotate: put the
    new key first and keep the old one until its tokens have expired.
    """

    __slots__ = ("_by_kid", "_keys")

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys:
            raise KeyRingError("a key ring needs at least one key")
        built: list[Key] = []
        for index, key in enumerate(keys, 1):
            if not isinstance(key, bytes) or len(key) != KEY_BYTES:
                raise KeyRingError(f"key {index} must be {KEY_BYTES} raw bytes")
            built.append(Key(key))
        self._keys = tuple(built)
        self._by_kid = {k.kid: k for k in built}
        if len(self._by_kid) != len(built):
            raise KeyRingError("the same key appears twice in the key ring")

    @classmethod
    def generate(cls) -> KeyRing:
        """A ring with one fresh random key: fine for one process, lost on restart."""
        return cls([os.urandom(KEY_BYTES)])

    @staticmethod
    def generate_secret() -> str:
        """A fresh key as base64url text, for ``ELICITKIT_STATE_KEYS``."""
        return b64encode(os.urandom(KEY_BYTES))

    @classmethod
    def from_secrets(cls, keys: Iterable[bytes | str], *, source: str = "secrets") -> KeyRing:
        """Keys given as 32 raw bytes or as base64url text (padding optional); first seals."""
        raw_keys: list[bytes] = []
        for index, secret in enumerate(keys, 1):
            if isinstance(secret, bytes):
                if len(secret) != KEY_BYTES:
                    raise KeyRingError(f"{source}: key {index} is {len(secret)} raw bytes, expected {KEY_BYTES}")
                raw_keys.append(secret)
            elif isinstance(secret, str):
                raw_keys.append(_decode_text_key(secret, f"{source}: key {index}"))
            else:
                raise KeyRingError(f"{source}: key {index} is a {type(secret).__name__}, expected bytes or str")
        if not raw_keys:
            raise KeyRingError(f"{source}: no keys given")
        return cls(raw_keys)

    @classmethod
    def from_env(cls, name: str = ENV_VAR, environ: Mapping[str, str] | None = None) -> KeyRing:
        """Comma-separated base64url keys from an environment variable, first seals."""
        value = (os.environ if environ is None else environ).get(name)
        if value is None or not value.strip():
            raise KeyRingError(f"{name} is not set (comma-separated base64url keys; first seals)")
        return cls.from_secrets([part.strip() for part in value.split(",")], source=name)

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(k.kid for k in self._keys)

    @property
    def sealing_key_id(self) -> str:
        return self._keys[0].kid

    def _sealing(self) -> Key:
        return self._keys[0]

    def _lookup(self, kid: str) -> Key | None:
        return self._by_kid.get(kid)

    def sealers(self, label: bytes) -> list[tuple[str, Sealer]]:
        """``(key id, sealer)`` per key for the use ``label``: the first seals, every one opens."""
        return [(k.kid, k.sealer(label)) for k in self._keys]

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"KeyRing(key_ids={list(self.key_ids)!r})"


def _decode_text_key(text: str, where: str) -> bytes:
    if not text:
        raise KeyRingError(f"{where} is empty")
    raw = b64decode(text.rstrip("="))
    if raw is None:
        raise KeyRingError(f"{where} is not base64url text")
    if len(raw) != KEY_BYTES:
        raise KeyRingError(f"{where} decodes to {len(raw)} bytes, expected {KEY_BYTES}")
    return raw


def load_keyring(environ: Mapping[str, str] | None = None) -> KeyRing:
    """Keys from ``ELICITKIT_STATE_KEYS`` when set (processes share them), else one fresh key."""
    env = os.environ if environ is None else environ
    return KeyRing.from_env(ENV_VAR, env) if env.get(ENV_VAR, "").strip() else KeyRing.generate()


def b64encode(raw: bytes) -> str:
    """Unpadded base64url (binascii directly: ``base64.urlsafe_b64encode`` is three calls more)."""
    # Two replaces, not a translate: each finds its few characters with memchr, where translate
    # maps every byte of the text through its table.
    return binascii.b2a_base64(raw, newline=False).replace(b"+", b"-").replace(b"/", b"_").rstrip(b"=").decode("ascii")


_URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
# The bits of the last character no byte uses, by length mod 4 (2: one byte in 12 bits, 3: two
# in 18): a canonical encoding has them zero.
_UNUSED_LOW_BITS = {2: 0b1111, 3: 0b11}


def b64decode(text: str) -> bytes | None:
    """Strict unpadded base64url: only canonical encodings, so no two strings give one token.

    Without a regular expression or encoding the result again (on a round's requestState those
    scanned the token twice more, character by character): ``+``, ``/`` and ``=`` are refused
    here, a non-canonical ending (unused bits set) by its last character, and every other
    character outside base64url by the length of what decodes: the lenient decoder (twice as
    fast as its strict mode) skips such a character, so fewer bytes come out than ``len(text)``
    characters of base64 make, or (a count one past a multiple of four) none at all.
    """
    size = len(text)
    rest = size % 4
    if rest == 1 or "+" in text or "/" in text or "=" in text:
        return None
    if rest and _URL_ALPHABET.find(text[-1]) & _UNUSED_LOW_BITS[rest]:
        return None  # (find's -1, not in the alphabet, has every bit set: refused as well)
    try:
        padded = (text + "==="[: -rest % 4]).encode("ascii")
        raw = binascii.a2b_base64(padded.replace(b"-", b"+").replace(b"_", b"/"))  # (as in b64encode)
    except (binascii.Error, ValueError):  # a skipped character left a count no padding fits; non-ASCII text
        return None
    return raw if len(raw) == size * 3 // 4 else None  # shorter: a character was skipped
