"""The spec's ``requestedSchema`` as JSON Schema, per era: the reference the gate fuzzer compares with.

Written for these tests from the definitions in modelcontextprotocol/modelcontextprotocol,
``schema/2025-06-18/schema.ts`` and ``schema/2025-11-25/schema.ts`` (``ElicitRequest`` /
``ElicitRequestFormParams.requestedSchema`` and ``PrimitiveSchemaDefinition`` with its member
interfaces); ``schema/2026-07-28`` and ``schema/draft`` define the same types as 2025-11-25.
Every object here is closed (``additionalProperties: false``): the TypeScript interfaces admit
no other members, while the generated schema.json leaves them open. Only this sub-schema is
reproduced, nothing else of the spec.
"""

from __future__ import annotations

from typing import Any

_TEXT = {"type": "string"}
_INT = {"type": "integer"}
_NUM = {"type": "number"}
_STRINGS = {"type": "array", "items": _TEXT}
_OPTIONS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"const": _TEXT, "title": _TEXT},
        "required": ["const", "title"],
        "additionalProperties": False,
    },
}


def _shape(type_: Any, required: list[str] | None = None, **properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"type": type_, "title": _TEXT, "description": _TEXT, **properties},
        "required": ["type", *(required or [])],
        "additionalProperties": False,
    }


_STRING_TYPE = {"const": "string"}
_FORMAT = {"enum": ["email", "uri", "date", "date-time"]}

_PRIMITIVES_2025_06_18 = [
    _shape(_STRING_TYPE, minLength=_INT, maxLength=_INT, format=_FORMAT),  # StringSchema
    _shape({"enum": ["number", "integer"]}, minimum=_NUM, maximum=_NUM),  # NumberSchema
    _shape({"const": "boolean"}, default={"type": "boolean"}),  # BooleanSchema
    _shape(_STRING_TYPE, ["enum"], enum=_STRINGS, enumNames=_STRINGS),  # EnumSchema
]
_PRIMITIVES_2025_11_25 = [
    _shape(_STRING_TYPE, minLength=_INT, maxLength=_INT, format=_FORMAT, default=_TEXT),  # StringSchema
    _shape({"enum": ["number", "integer"]}, minimum=_NUM, maximum=_NUM, default=_NUM),  # NumberSchema
    _shape({"const": "boolean"}, default={"type": "boolean"}),  # BooleanSchema
    _shape(_STRING_TYPE, ["enum"], enum=_STRINGS, default=_TEXT),  # UntitledSingleSelectEnumSchema
    _shape(_STRING_TYPE, ["oneOf"], oneOf=_OPTIONS, default=_TEXT),  # TitledSingleSelectEnumSchema
    _shape(  # UntitledMultiSelectEnumSchema
        {"const": "array"},
        ["items"],
        minItems=_INT,
        maxItems=_INT,
        default=_STRINGS,
        items={
            "type": "object",
            "properties": {"type": _STRING_TYPE, "enum": _STRINGS},
            "required": ["type", "enum"],
            "additionalProperties": False,
        },
    ),
    _shape(  # TitledMultiSelectEnumSchema
        {"const": "array"},
        ["items"],
        minItems=_INT,
        maxItems=_INT,
        default=_STRINGS,
        items={
            "type": "object",
            "properties": {"anyOf": _OPTIONS},
            "required": ["anyOf"],
            "additionalProperties": False,
        },
    ),
    _shape(_STRING_TYPE, ["enum"], enum=_STRINGS, enumNames=_STRINGS, default=_TEXT),  # LegacyTitledEnumSchema
]


def _requested(primitives: list[dict[str, Any]], root: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "type": {"const": "object"},
            "properties": {"type": "object", "additionalProperties": {"anyOf": primitives}},
            "required": _STRINGS,
            **root,
        },
        "required": ["type", "properties"],
        "additionalProperties": False,
    }


REQUESTED_SCHEMA: dict[str, dict[str, Any]] = {
    "2025-06-18": _requested(_PRIMITIVES_2025_06_18, {}),
    "2025-11-25": _requested(_PRIMITIVES_2025_11_25, {"$schema": _TEXT}),
}
REQUESTED_SCHEMA["2026-07-28"] = REQUESTED_SCHEMA["2025-11-25"]
