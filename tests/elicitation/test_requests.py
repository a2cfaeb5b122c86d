"""``parse_request`` (the client's reading of ``elicitation/create``) on hostile schemas: InvalidRequest only."""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit.elicitation.requests import FormRequest, InvalidRequest, create_form_request, parse_request

REF_IN_ITEMS = {
    "type": "object",
    "properties": {"v": {"type": "array", "items": {"type": "string", "enum": ["a"], "$ref": "#/x"}, "default": ["a"]}},
}


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_defect_02_parse_request_refuses_a_ref_in_items_with_a_clear_reason(version: str) -> None:
    """It raised jsonschema's internal referencing error, which the client turned into -32603."""
    with pytest.raises(InvalidRequest) as exc:
        parse_request({"message": "m", "requestedSchema": REF_IN_ITEMS}, version=version)
    assert "$ref" in str(exc.value) and "Pointer" not in str(exc.value)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"v": {"type": "string", "pattern": "(?=a)"}}},
        {"type": "object", "properties": {"v": {"type": "string", "pattern": "^(a+)+$", "default": "b"}}},
        {"type": "object", "properties": {"v": {"type": "array", "items": {"$dynamicRef": "#x"}}}},
        {"type": "object", "properties": {"v": {"type": "string", "not": {"$ref": "#/nowhere"}, "default": "a"}}},
    ],
)
def test_hostile_schemas_are_invalid_requests(schema: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest):
        parse_request({"message": "m", "requestedSchema": schema})


def test_a_lenient_schema_with_a_safe_pattern_is_read() -> None:
    schema = {"type": "object", "title": "Code", "properties": {"v": {"type": "string", "pattern": "^(a+)+$"}}}
    request = parse_request({"message": "m", "requestedSchema": schema})
    assert isinstance(request, FormRequest) and request.requested_schema is schema


def test_create_form_request_title_is_shown_but_never_sent() -> None:
    """The spec's requestedSchema root has no title: the builder keeps it for handlers only."""
    request = create_form_request("?", {"a": {"type": "string"}}, title="Contact")
    assert request.requested_schema["title"] == "Contact"
    assert "title" not in request.to_params("2025-11-25")["requestedSchema"]
