"""The legacy (2024-11-05 .. 2025-11-25) ``initialize`` handshake, as plain state machines.

The server side decides which requests a session admits in each phase and negotiates the
version; the client side builds the ``initialize`` params and checks the answer. Neither
sends anything: the runtime does, with what these return.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from elicitkit.protocol.errors import INVALID_PARAMS, INVALID_REQUEST, MCPError
from elicitkit.protocol.versions import LEGACY_VERSIONS, negotiate_legacy

INITIALIZE = "initialize"
INITIALIZED = "notifications/initialized"
PING = "ping"


class Phase(StrEnum):
    NEW = "new"
    INITIALIZING = "initializing"  # initialize answered, notifications/initialized not yet seen
    READY = "ready"


@dataclass(slots=True)
class ServerHandshake:
    """What a server knows about its client after ``initialize``."""

    supported_versions: tuple[str, ...] = LEGACY_VERSIONS
    phase: Phase = Phase.NEW
    protocol_version: str | None = None
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] = field(default_factory=dict)

    def initialize(
        self,
        params: dict[str, Any] | None,
        *,
        server_info: dict[str, Any],
        capabilities: dict[str, Any],
        instructions: str | None = None,
    ) -> dict[str, Any]:
        """Validate ``initialize`` params and produce the ``InitializeResult``."""
        if self.phase is not Phase.NEW:
            raise MCPError(INVALID_REQUEST, "the session is already initialized")
        params = params or {}
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise MCPError(INVALID_PARAMS, "initialize: protocolVersion must be a string")
        caps = params.get("capabilities", {})
        if not isinstance(caps, dict):
            raise MCPError(INVALID_PARAMS, "initialize: capabilities must be an object")
        info = params.get("clientInfo", {})
        if not isinstance(info, dict):
            raise MCPError(INVALID_PARAMS, "initialize: clientInfo must be an object")
        self.protocol_version = negotiate_legacy(requested, self.supported_versions)
        self.client_capabilities = caps
        self.client_info = info
        self.phase = Phase.INITIALIZING
        result: dict[str, Any] = {
            "protocolVersion": self.protocol_version,
            "capabilities": capabilities,
            "serverInfo": server_info,
        }
        if instructions:
            result["instructions"] = instructions
        return result

    def initialized(self) -> None:
        if self.phase is Phase.INITIALIZING:
            self.phase = Phase.READY

    def admit(self, method: str) -> None:
        """Raise if ``method`` may not be served in the current phase."""
        if self.phase is Phase.NEW and method not in (INITIALIZE, PING):
            raise MCPError(INVALID_REQUEST, f"{method}: the session is not initialized; send initialize first")


@dataclass(slots=True)
class ClientHandshake:
    """The client half: what to offer, and what the server answered."""

    protocol_version: str = LEGACY_VERSIONS[0]
    accepted_versions: tuple[str, ...] = LEGACY_VERSIONS
    negotiated_version: str | None = None
    server_capabilities: dict[str, Any] = field(default_factory=dict)
    server_info: dict[str, Any] = field(default_factory=dict)
    instructions: str | None = None

    def initialize_params(self, capabilities: dict[str, Any], client_info: dict[str, Any]) -> dict[str, Any]:
        return {"protocolVersion": self.protocol_version, "capabilities": capabilities, "clientInfo": client_info}

    def accept(self, result: dict[str, Any]) -> None:
        """Check the ``InitializeResult``; raises when the server picked a version we cannot speak."""
        version = result.get("protocolVersion")
        if not isinstance(version, str) or version not in self.accepted_versions:
            raise MCPError(
                INVALID_PARAMS,
                f"server answered protocol version {version!r}, which this client does not support",
                {"supported": list(self.accepted_versions), "requested": self.protocol_version},
            )
        caps = result.get("capabilities")
        info = result.get("serverInfo")
        self.negotiated_version = version
        self.server_capabilities = caps if isinstance(caps, dict) else {}
        self.server_info = info if isinstance(info, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
