"""Protocol versions and the era each belongs to.

"Legacy" versions open a session with ``initialize``; "modern" versions (2026-07-28 on) are
stateless and carry the version in every request's ``_meta``.
"""

from __future__ import annotations

from enum import StrEnum

LATEST_LEGACY = "2025-11-25"
MODERN_2026 = "2026-07-28"

# Newest first; the first entry is what we offer and prefer.
LEGACY_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MODERN_VERSIONS: tuple[str, ...] = (MODERN_2026,)
SUPPORTED_VERSIONS: tuple[str, ...] = MODERN_VERSIONS + LEGACY_VERSIONS

# Meta keys of the 2026 request envelope.
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"


class Era(StrEnum):
    """How a connection carries its state: a handshake session, or per-request envelopes."""

    LEGACY = "legacy"
    MODERN = "modern"


def era_of(version: str) -> Era:
    """The era a version string belongs to (unknown versions are treated as modern-shaped)."""
    return Era.LEGACY if version in LEGACY_VERSIONS else Era.MODERN


def negotiate_legacy(requested: object, supported: tuple[str, ...] = LEGACY_VERSIONS) -> str:
    """The version a server answers to ``initialize``: the requested one if known, else our newest."""
    if isinstance(requested, str) and requested in supported:
        return requested
    return supported[0]


def at_least(version: str | None, minimum: str) -> bool:
    """Date-ordered comparison of two version strings (they are ISO dates); None is no version."""
    return version is not None and version >= minimum


# Feature predicates: the only code outside this module asks these, never compares dates itself.
URL_ELICITATION_SINCE = "2025-11-25"


def supports_url_elicitation(version: str | None) -> bool:
    """URL mode, ``mode`` in requests, elicitation ids and -32042 came with 2025-11-25."""
    return at_least(version, URL_ELICITATION_SINCE)


def declares_elicitation_modes(version: str | None) -> bool:
    """From 2025-11-25 the elicitation capability lists its modes; before, ``{}`` meant form."""
    return at_least(version, URL_ELICITATION_SINCE)


def has_legacy_enum_shape_only(version: str | None) -> bool:
    """Before 2025-11-25 the only enum shape is ``enum`` (+ ``enumNames``): no oneOf/anyOf titles."""
    return not at_least(version, URL_ELICITATION_SINCE)


def sends_priming_events(version: str | None) -> bool:
    """2025-11-25 SSE streams start with an empty event carrying an id, so a client can resume."""
    return at_least(version, URL_ELICITATION_SINCE)


def has_roots_list_changed(version: str | None) -> bool:
    """``notifications/roots/list_changed`` (and ``roots.listChanged``) is gone in 2026-07-28:
    servers ask for roots with each request that needs them."""
    return not is_modern(version)


def refuses_questions_with_errors(version: str | None) -> bool:
    """A question the client will not put to the person is a JSON-RPC error in the 2025 eras (the
    server asked a request); in 2026 an input request is answered, so a refusal is a decline."""
    return not is_modern(version)


def names_url_elicitations(version: str | None) -> bool:
    """A URL question carries its ``elicitationId`` in the request (2025); in 2026 the id is the
    input request's key."""
    return not is_modern(version)


def is_modern(version: str | None) -> bool:
    """2026-07-28 and later: stateless, an envelope per request, input by multi-round-trip."""
    return at_least(version, MODERN_2026)
