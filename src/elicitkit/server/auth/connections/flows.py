"""A sign-in in progress: what the start link, the confirm page and the provider's callback share.

One record per flow, sealed (it holds the PKCE verifiers) and kept in the connection store, so
the link opened on one instance of a fleet and the callback landing on another agree. Each
step moves ``status`` forward with a compare-and-set: a start link opens once, a callback is
taken once.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

__all__ = ["DONE", "FAILED", "Flow", "flow_from_json", "flow_to_json", "split_state"]

NEW = "new"  # the link is out, nobody opened it
IDENTIFYING = "identifying"  # opened; the browser's user is signing in at the server's own issuer
CONFIRMING = "confirming"  # opened (and the user proven): the confirm page is shown
AUTHORIZING = "authorizing"  # confirmed: the person is at the provider
DONE = "done"
FAILED = "failed"
TERMINAL = (DONE, FAILED)


@dataclass(frozen=True)
class Flow:
    """One sign-in: whose, at which provider, how far it got, and the secrets of its steps."""

    flow_id: str
    principal: str
    provider: str
    link: str
    expires_at: float
    status: str = NEW
    reason: str = ""  # why it failed, in words (never a token)
    session_id: str | None = None  # a 2025 session to tell when done (-32042: nobody waits in the call)
    cookie: str = ""  # digest of the cookie set in the browser that opened the link
    who_secret: str = ""  # the state of the sign-in at the server's own issuer
    who_verifier: str = ""
    confirm: str = ""  # the confirm form's token
    secret: str = ""  # the state of the sign-in at the provider
    verifier: str = ""
    account: str = ""  # who the browser's user proved to be (the sign-in's subject)

    def step(self, **changes: Any) -> Flow:
        return replace(self, **changes)

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL


def new_secret() -> str:
    return secrets.token_urlsafe(24)


def flow_to_json(flow: Flow) -> bytes:
    return json.dumps(asdict(flow), separators=(",", ":")).encode()


def flow_from_json(raw: bytes) -> Flow | None:
    """A flow record, or None for anything that is not exactly one (every field of its type)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) != {f.name for f in fields(Flow)}:
        return None
    for name, value in data.items():
        if name == "expires_at":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif name == "session_id":
            ok = value is None or isinstance(value, str)
        else:
            ok = isinstance(value, str)
        if not ok:
            return None
    return Flow(**data)


def split_state(state: str) -> tuple[str, str] | None:
    """A callback's ``state``: ``<flow id>.<secret>`` (the id finds the flow, the secret proves it)."""
    flow_id, dot, secret = state.partition(".")
    if not dot or not flow_id or not secret or len(state) > 200:
        return None
    return flow_id, secret
