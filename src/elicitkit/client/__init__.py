"""Client side: :class:`Client`, and (later) the ready-made elicitation handlers."""

from elicitkit.client.client import Client

__all__ = ["Client"]
