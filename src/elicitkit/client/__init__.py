"""Client side: :class:`Client` (typed API), and below it, one concern per module.

``connect`` (transport, peer, era selection), ``rounds`` (the 2026 multi-round-trip driver),
``responder`` (answering what the server asks, on both eras), ``results`` (typed results),
``handlers/`` (ready-made people and policies that answer questions).
"""

from elicitkit.client.client import Client
from elicitkit.client.connect import ModernNotSupported, ServerUnreachable, SessionExpired

__all__ = ["Client", "ModernNotSupported", "ServerUnreachable", "SessionExpired"]
