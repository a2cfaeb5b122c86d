"""Answers: fill defaults (SEP-1034), then validate against the requested schema.

Servers and clients both call :func:`validate_answer` and :func:`parse_result`, so an answer
is judged the same way on either side. Validation is JSON Schema (``jsonschema``, with
format checks) over a copy of the requested schema that forbids unknown fields, plus the
rules JSON Schema leaves loose: an integer field takes an ``int`` (not ``30.0``, not ``True``).
Remote ``$ref`` is never fetched: the gate refuses ``$ref`` and the validator has no
retrieval.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

import orjson
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError
from jsonschema.validators import extend
from referencing import Registry

from elicitkit.elicitation.errors import InvalidAnswer
from elicitkit.elicitation.results import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationResult,
)

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _is_int(_: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_TYPES = Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int)
_StrictValidator = extend(Draft202012Validator, type_checker=_TYPES)  # type: ignore[no-untyped-call]
_FORMATS = FormatChecker(["date", "date-time", "uri", "email"])


def _email(value: object) -> bool:
    return not isinstance(value, str) or bool(_EMAIL.match(value))


_FORMATS.checks("email")(_email)  # stricter than jsonschema's "contains an @"


_NO_REMOTE: Registry[Any] = Registry()  # nothing to retrieve from: remote $ref can never be fetched
_CACHE: OrderedDict[bytes, Any] = OrderedDict()
_CACHE_SIZE = 512


def _validator(schema: dict[str, Any]) -> Any:
    key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    found = _CACHE.get(key)
    if found is not None:
        _CACHE.move_to_end(key)
        return found
    closed = {**schema, "additionalProperties": False}
    validator = _StrictValidator(closed, format_checker=_FORMATS, registry=_NO_REMOTE)
    _CACHE[key] = validator
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return validator


def _describe(error: ValidationError) -> tuple[str | None, str]:
    path = [p for p in error.absolute_path]
    field = str(path[0]) if path else None
    if error.validator == "additionalProperties":
        schema: Any = error.schema
        instance: Any = error.instance
        extra = sorted(set(instance) - set(schema.get("properties", {})))
        return (extra[0] if len(extra) == 1 else None), f"unknown field(s): {', '.join(extra)}"
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return missing, "required field is missing"
    if error.validator == "type":
        expected = error.validator_value
        return field, f"expected {expected}, got {type(error.instance).__name__} {error.instance!r}"
    if error.validator in ("oneOf", "anyOf"):
        return field, f"{error.instance!r} is not one of the offered choices"
    return field, error.message


def apply_defaults(schema: dict[str, Any], content: dict[str, Any]) -> dict[str, Any]:
    """``content`` with every omitted field that has a schema default filled in (SEP-1034)."""
    filled = dict(content)
    for name, prop in schema.get("properties", {}).items():
        if name not in filled and isinstance(prop, dict) and "default" in prop:
            filled[name] = prop["default"]
    return filled


def validate_answer(schema: dict[str, Any], content: Any, *, fill_defaults: bool = True) -> dict[str, Any]:
    """The accepted form content, defaults applied and checked; raises :class:`InvalidAnswer`."""
    if not isinstance(content, dict):
        raise InvalidAnswer([(None, f"content must be an object, got {type(content).__name__}")], content)
    answer: dict[str, Any] = apply_defaults(schema, content) if fill_defaults else content
    errors = sorted(_validator(schema).iter_errors(answer), key=lambda e: list(e.absolute_path))
    if errors:
        raise InvalidAnswer([_describe(e) for e in errors], answer)
    return answer


def field_problems(prop: dict[str, Any], value: Any) -> list[str]:
    """Why ``value`` does not fit one property schema (used to check defaults)."""
    schema = {"type": "object", "properties": {"v": prop}, "required": ["v"]}
    return [e.message for e in _validator(schema).iter_errors({"v": value})]


def parse_result(raw: Any, *, mode: str, schema: dict[str, Any] | None = None) -> ElicitationResult[Any]:
    """An ``ElicitResult`` from the wire, checked for its mode; content validated for forms.

    The accepted result's ``data`` is the validated content dict; typed callers convert it.
    """
    if not isinstance(raw, dict):
        raise InvalidAnswer([(None, "the answer must be an object")], raw)
    action = raw.get("action")
    content = raw.get("content")
    if action == "accept":
        if mode == "url":
            if content is not None:
                raise InvalidAnswer([(None, "a URL-mode accept carries no content")], raw)
            return AcceptedElicitation(data=None, content=None)
        if schema is None:
            raise InvalidAnswer([(None, "no schema to check the answer against")], raw)
        checked = validate_answer(schema, content if content is not None else {})
        return AcceptedElicitation(data=checked, content=checked)
    if action in ("decline", "cancel"):
        if content is not None and content != {}:
            raise InvalidAnswer([(None, f"a {action} carries no content")], raw)
        return DeclinedElicitation() if action == "decline" else CancelledElicitation()
    raise InvalidAnswer([(None, f"unknown action {action!r}; expected accept, decline or cancel")], raw)
