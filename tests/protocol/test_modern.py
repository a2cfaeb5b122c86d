"""2026-07-28 wire rules that are pure functions."""

from __future__ import annotations

from elicitkit.protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, RESOURCE_NOT_FOUND, MCPError
from elicitkit.protocol.modern import as_modern_error


def test_resource_not_found_becomes_invalid_params_on_2026() -> None:
    error = MCPError(RESOURCE_NOT_FOUND, "Resource not found: x://y", {"uri": "x://y"})
    modern = as_modern_error(error)
    assert (modern.code, modern.message, modern.data) == (INVALID_PARAMS, error.message, {"uri": "x://y"})


def test_other_errors_pass_unchanged() -> None:
    error = MCPError(INTERNAL_ERROR, "boom")
    assert as_modern_error(error) is error


def test_a_requests_own_capabilities_win_over_the_envelope_defaults() -> None:
    from elicitkit.protocol.modern import Envelope, wrap
    from elicitkit.protocol.versions import META_CLIENT_CAPABILITIES

    envelope = Envelope("2026-07-28", {"elicitation": {}, "sampling": {}})
    own = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    wired = wrap({"name": "t", "_meta": {META_CLIENT_CAPABILITIES: own}}, envelope)
    assert wired["_meta"][META_CLIENT_CAPABILITIES] == {"elicitation": {}, "sampling": {}, **own}
    plain = wrap({"name": "t"}, envelope)
    assert plain["_meta"][META_CLIENT_CAPABILITIES] == {"elicitation": {}, "sampling": {}}
