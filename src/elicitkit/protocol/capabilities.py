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
    form, url = isinstance(elicitation.get("form"), dict), isinstance(elicitation.get("url"), dict)
    return _BOTH if form and url else (_URL if url else _FORM)  # nothing named: form only


_FORM, _URL, _BOTH = frozenset({"form"}), frozenset({"url"}), frozenset({"form", "url"})


def declares(client_capabilities: dict[str, Any] | None, name: str) -> bool:
    """Whether a top-level capability (``sampling``, ``roots``, ...) is present."""
    return bool(client_capabilities) and isinstance(client_capabilities.get(name), dict)  # type: ignore[union-attr]
