"""Start links: which sign-in, for whom, at which provider, until when; sealed, so only this
server (or its fleet, sharing the state keys) makes one, and a changed one does not open."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from elicitkit.server.auth.connections.vault import Vault

__all__ = ["MAX_CHARS", "Link", "open_link", "seal_link"]

MAX_CHARS = 2048  # far above a real link's token; anything longer is not read at all
_WHERE = b"link"


@dataclass(frozen=True)
class Link:
    flow_id: str
    principal: str
    provider: str
    expires_at: float


def seal_link(vault: Vault, link: Link) -> str:
    body = json.dumps({"f": link.flow_id, "p": link.principal, "v": link.provider, "e": link.expires_at})
    return base64.urlsafe_b64encode(vault.seal(_WHERE, body.encode())).rstrip(b"=").decode()


def open_link(vault: Vault, token: str) -> Link | None:
    """The link if this server sealed it (any key of the ring) and it is whole, else None."""
    if len(token) > MAX_CHARS:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (ValueError, binascii.Error):
        return None
    body = vault.open(_WHERE, raw)
    try:
        data = json.loads(body) if body is not None else None
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    flow_id, principal, provider, expires = (data.get(k) for k in ("f", "p", "v", "e"))
    if not (isinstance(flow_id, str) and isinstance(principal, str) and isinstance(provider, str)):
        return None
    if not isinstance(expires, (int, float)) or isinstance(expires, bool):
        return None
    return Link(flow_id, principal, provider, float(expires))
