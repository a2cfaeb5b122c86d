"""JWTs the client signs: DPoP proofs (RFC 9449) and client assertions (RFC 7523, private_key_jwt).

All signing, key generation and thumbprints are joserfc's (docs/decisions/auth.md says why
joserfc over authlib); this module only chooses claims. Nothing here logs, and ``repr`` of a
key never shows its private part.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from joserfc.jwk import ECKey, OKPKey, RSAKey

# joserfc and cryptography are imported inside the functions that sign or load keys: they cost
# about as much as the rest of ``import elicitkit``, and only a client that uses OAuth needs them
# (``elicitkit.errors`` imports the auth errors, which runs ``elicitkit.auth``, this module included).

__all__ = ["DPoPKey", "client_assertion", "htu", "load_signing_key"]

SigningKey: TypeAlias = "ECKey | RSAKey | OKPKey"
_EC_ALGS = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
ASSERTION_LIFETIME = 300  # seconds a client assertion is valid


def load_signing_key(pem: str | bytes, alg: str | None = None) -> tuple[SigningKey, str]:
    """A private key from PEM and the algorithm to sign with (the key's natural one unless ``alg``).

    Raises ``ValueError`` (no key material in the message) when the PEM is not a private key.
    """
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from joserfc.jwk import ECKey, OKPKey, RSAKey

    data = pem.encode() if isinstance(pem, str) else pem
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise ValueError("private_key is not an unencrypted PEM private key (PKCS#8 or traditional)") from None
    if isinstance(key, ec.EllipticCurvePrivateKey):
        natural = _EC_ALGS.get(key.curve.name)
        if natural is None:
            raise ValueError(f"unsupported elliptic curve {key.curve.name} (use P-256, P-384 or P-521)")
        return ECKey.import_key(data), alg or natural
    if isinstance(key, rsa.RSAPrivateKey):
        return RSAKey.import_key(data), alg or "RS256"
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return OKPKey.import_key(data), alg or "EdDSA"
    raise ValueError(f"unsupported private key type {type(key).__name__} (use EC, RSA or Ed25519)")


def client_assertion(
    client_id: str, audience: str, key: SigningKey, alg: str, key_id: str | None = None, now: float | None = None
) -> str:
    """A private_key_jwt client assertion (RFC 7523 section 3): iss = sub = client_id, aud = the issuer."""
    issued = int(now if now is not None else time.time())
    header: dict[str, Any] = {"alg": alg, "typ": "JWT"}
    if key_id is not None:
        header["kid"] = key_id
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": issued,
        "exp": issued + ASSERTION_LIFETIME,
        "jti": secrets.token_urlsafe(16),
    }
    from joserfc import jwt

    return jwt.encode(header, claims, key, algorithms=[alg])


def htu(url: str) -> str:
    """The ``htu`` of a request: its URL without query or fragment (RFC 9449 section 4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class DPoPKey:
    """One DPoP key pair (ES256, P-256) and the proofs it signs.

    Tokens bound to it (``cnf.jkt``) are only usable with this key, so it is stored with them
    (:meth:`to_jwk`, :meth:`from_jwk`).
    """

    alg = "ES256"

    def __init__(self, key: ECKey | None = None) -> None:
        from joserfc.jwk import ECKey

        self._key = key if key is not None else ECKey.generate_key("P-256", private=True)
        self.public_jwk: dict[str, Any] = dict(self._key.as_dict(private=False))
        self.thumbprint = self._key.thumbprint()

    def __repr__(self) -> str:
        return f"DPoPKey(jkt={self.thumbprint})"

    def to_jwk(self) -> dict[str, Any]:
        return dict(self._key.as_dict(private=True))

    @classmethod
    def from_jwk(cls, jwk: dict[str, Any]) -> DPoPKey:
        from joserfc.jwk import ECKey

        return cls(ECKey.import_key(jwk))

    def proof(self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None) -> str:
        """A fresh proof (new ``jti``, current ``iat``) for one request; ``ath`` binds the token."""
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            digest = hashlib.sha256(access_token.encode("ascii")).digest()
            claims["ath"] = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": "dpop+jwt", "alg": self.alg, "jwk": self.public_jwk}
        from joserfc import jwt

        return jwt.encode(header, claims, self._key, algorithms=[self.alg])
