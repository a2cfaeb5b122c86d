"""Reading capability objects: which elicitation modes a client declared, and the like."""

from __future__ import annotations

from typing import Any


def elicitation_modes(client_capabilities: dict[str, Any] | None) -> frozenset[str]:
    """Modes a client accepts: ``{}`` means form only; ``{"url": {}}`` alone means url only."""
    if not client_capabilities:
        return frozenset()
    elicitation = client_capabilities.get("elicitation")
    if not isinstance(elicitation, dict):
        return frozenset()
    modes = frozenset(m for m in ("form", "url") if isinstance(elicitation.get(m), dict))
    return modes or frozenset({"form"})


def declares(client_capabilities: dict[str, Any] | None, name: str) -> bool:
    """Whether a top-level capability (``sampling``, ``roots``, ...) is present."""
    return bool(client_capabilities) and isinstance(client_capabilities.get(name), dict)  # type: ignore[union-attr]
