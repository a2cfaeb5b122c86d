"""The legacy initialize handshake state machines and version negotiation."""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit.protocol.errors import INVALID_PARAMS, INVALID_REQUEST, MCPError
from elicitkit.protocol.handshake import INITIALIZE, INITIALIZED, PING, ClientHandshake, Phase, ServerHandshake
from elicitkit.protocol.versions import (
    LATEST_LEGACY,
    LEGACY_VERSIONS,
    MODERN_2026,
    SUPPORTED_VERSIONS,
    Era,
    at_least,
    era_of,
    negotiate_legacy,
)

SERVER_INFO = {"name": "srv", "version": "1.0"}
CAPS = {"tools": {}, "logging": {}}


def init_params(version: Any = "2025-06-18", **extra: Any) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c", "version": "0"}, **extra}


def initialize(hs: ServerHandshake, params: dict[str, Any] | None, **kw: Any) -> dict[str, Any]:
    return hs.initialize(params, server_info=SERVER_INFO, capabilities=CAPS, **kw)


# ----------------------------------------------------------------------------- versions


def test_version_tables() -> None:
    assert LATEST_LEGACY == "2025-11-25"
    assert LEGACY_VERSIONS[0] == LATEST_LEGACY
    assert {"2025-03-26", "2025-06-18", "2025-11-25"} <= set(LEGACY_VERSIONS)
    assert MODERN_2026 in SUPPORTED_VERSIONS
    assert set(LEGACY_VERSIONS) <= set(SUPPORTED_VERSIONS)


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_negotiate_echoes_a_known_version(version: str) -> None:
    assert negotiate_legacy(version) == version


@pytest.mark.parametrize("requested", ["1999-01-01", "2099-12-31", "", MODERN_2026, None, 20250618])
def test_negotiate_falls_back_to_newest(requested: Any) -> None:
    assert negotiate_legacy(requested) == "2025-11-25"


def test_negotiate_with_a_restricted_table() -> None:
    assert negotiate_legacy("2025-03-26", ("2025-06-18", "2025-03-26")) == "2025-03-26"
    assert negotiate_legacy("2025-11-25", ("2025-06-18", "2025-03-26")) == "2025-06-18"


def test_eras() -> None:
    for version in LEGACY_VERSIONS:
        assert era_of(version) is Era.LEGACY
    assert era_of(MODERN_2026) is Era.MODERN
    assert era_of("2030-01-01") is Era.MODERN


def test_at_least() -> None:
    assert at_least("2025-11-25", "2025-06-18")
    assert at_least("2025-06-18", "2025-06-18")
    assert not at_least("2025-03-26", "2025-06-18")


# ----------------------------------------------------------------------------- server side


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25", "2024-11-05"])
def test_server_echoes_a_supported_version(version: str) -> None:
    hs = ServerHandshake()
    result = initialize(hs, init_params(version))
    assert result == {"protocolVersion": version, "capabilities": CAPS, "serverInfo": SERVER_INFO}
    assert hs.protocol_version == version
    assert hs.phase is Phase.INITIALIZING


@pytest.mark.parametrize("version", ["1999-01-01", "2099-01-01", "not-a-date", MODERN_2026])
def test_server_answers_its_newest_legacy_version_to_an_unknown_one(version: str) -> None:
    hs = ServerHandshake()
    assert initialize(hs, init_params(version))["protocolVersion"] == "2025-11-25"
    assert hs.protocol_version == "2025-11-25"


def test_server_records_client_capabilities_and_info() -> None:
    hs = ServerHandshake()
    initialize(hs, init_params(capabilities={"roots": {"listChanged": True}}, clientInfo={"name": "x", "version": "9"}))
    assert hs.client_capabilities == {"roots": {"listChanged": True}}
    assert hs.client_info == {"name": "x", "version": "9"}


def test_server_tolerates_missing_capabilities_and_client_info() -> None:
    hs = ServerHandshake()
    initialize(hs, {"protocolVersion": "2025-06-18"})
    assert hs.client_capabilities == {}
    assert hs.client_info == {}


def test_server_instructions_only_when_given() -> None:
    assert "instructions" not in initialize(ServerHandshake(), init_params())
    assert "instructions" not in initialize(ServerHandshake(), init_params(), instructions="")
    assert initialize(ServerHandshake(), init_params(), instructions="be nice")["instructions"] == "be nice"


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"protocolVersion": 20250618},
        {"protocolVersion": None},
        init_params(capabilities=[]),
        init_params(capabilities="all"),
        init_params(clientInfo="me"),
        init_params(clientInfo=["me"]),
    ],
)
def test_server_rejects_malformed_initialize_params(params: dict[str, Any] | None) -> None:
    hs = ServerHandshake()
    with pytest.raises(MCPError) as info:
        initialize(hs, params)
    assert info.value.code == INVALID_PARAMS
    assert hs.phase is Phase.NEW
    assert hs.protocol_version is None
    # a correct initialize still works afterwards
    assert initialize(hs, init_params())["protocolVersion"] == "2025-06-18"


def test_second_initialize_is_rejected() -> None:
    hs = ServerHandshake()
    initialize(hs, init_params("2025-06-18"))
    with pytest.raises(MCPError) as info:
        initialize(hs, init_params("2025-03-26"))
    assert info.value.code == INVALID_REQUEST
    assert hs.protocol_version == "2025-06-18"
    hs.initialized()
    with pytest.raises(MCPError):
        initialize(hs, init_params())


def test_phases() -> None:
    hs = ServerHandshake()
    assert hs.phase is Phase.NEW
    hs.initialized()  # notifications/initialized before initialize: ignored
    assert hs.phase is Phase.NEW
    initialize(hs, init_params())
    assert hs.phase is Phase.INITIALIZING
    hs.initialized()
    assert hs.phase is Phase.READY
    hs.initialized()
    assert hs.phase is Phase.READY


@pytest.mark.parametrize("method", ["tools/list", "tools/call", "resources/read", "logging/setLevel", "no/such"])
def test_requests_before_initialize_are_not_admitted(method: str) -> None:
    hs = ServerHandshake()
    with pytest.raises(MCPError) as info:
        hs.admit(method)
    assert info.value.code == INVALID_REQUEST
    assert "initialize" in info.value.message


def test_ping_and_initialize_are_admitted_before_initialize() -> None:
    hs = ServerHandshake()
    hs.admit(PING)
    hs.admit(INITIALIZE)


def test_everything_is_admitted_after_initialize() -> None:
    hs = ServerHandshake()
    initialize(hs, init_params())
    hs.admit("tools/list")  # between initialize and notifications/initialized: allowed
    hs.initialized()
    hs.admit("tools/call")
    hs.admit(PING)


def test_method_names() -> None:
    assert (INITIALIZE, INITIALIZED, PING) == ("initialize", "notifications/initialized", "ping")


def test_server_supported_versions_can_be_restricted() -> None:
    hs = ServerHandshake(supported_versions=("2025-06-18",))
    assert initialize(hs, init_params("2025-11-25"))["protocolVersion"] == "2025-06-18"


# ----------------------------------------------------------------------------- client side


def test_client_initialize_params() -> None:
    hs = ClientHandshake(protocol_version="2025-06-18")
    params = hs.initialize_params({"roots": {}}, {"name": "c", "version": "1"})
    assert params == {
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {}},
        "clientInfo": {"name": "c", "version": "1"},
    }
    assert ClientHandshake().initialize_params({}, {})["protocolVersion"] == "2025-11-25"


def test_client_accepts_a_supported_answer() -> None:
    hs = ClientHandshake()
    hs.accept({"protocolVersion": "2025-03-26", "capabilities": CAPS, "serverInfo": SERVER_INFO, "instructions": "hi"})
    assert hs.negotiated_version == "2025-03-26"
    assert hs.server_capabilities == CAPS
    assert hs.server_info == SERVER_INFO
    assert hs.instructions == "hi"


def test_client_tolerates_odd_optional_fields() -> None:
    hs = ClientHandshake()
    hs.accept({"protocolVersion": "2025-11-25", "capabilities": [], "serverInfo": "x", "instructions": 5})
    assert hs.server_capabilities == {}
    assert hs.server_info == {}
    assert hs.instructions is None


@pytest.mark.parametrize("answer", ["2099-01-01", MODERN_2026, None, 5])
def test_client_rejects_a_version_it_cannot_speak(answer: Any) -> None:
    hs = ClientHandshake(protocol_version="2025-06-18")
    with pytest.raises(MCPError) as info:
        hs.accept({"protocolVersion": answer, "capabilities": {}, "serverInfo": SERVER_INFO})
    assert info.value.code == INVALID_PARAMS
    assert info.value.data["requested"] == "2025-06-18"
    assert "2025-06-18" in info.value.data["supported"]
    assert hs.negotiated_version is None


def test_client_with_restricted_accepted_versions() -> None:
    hs = ClientHandshake(protocol_version="2025-06-18", accepted_versions=("2025-06-18",))
    with pytest.raises(MCPError):
        hs.accept({"protocolVersion": "2025-03-26"})
    hs.accept({"protocolVersion": "2025-06-18"})
    assert hs.negotiated_version == "2025-06-18"


def test_client_and_server_agree() -> None:
    for offered in ("2025-03-26", "2025-06-18", "2025-11-25", "2031-01-01"):
        client = ClientHandshake(protocol_version=offered)
        server = ServerHandshake()
        result = initialize(server, client.initialize_params({}, {"name": "c", "version": "1"}))
        client.accept(result)
        assert client.negotiated_version == server.protocol_version
        assert client.negotiated_version == (offered if offered in LEGACY_VERSIONS else "2025-11-25")
