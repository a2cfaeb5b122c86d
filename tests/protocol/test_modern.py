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
