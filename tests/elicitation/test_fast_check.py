"""The fast answer check agrees with jsonschema: it never accepts what jsonschema rejects.

``validate_answer`` asks a small compiled checker first and falls back to ``jsonschema`` for
anything it does not accept; so a fast "valid" must always be a jsonschema "valid" too. This
throws a few thousand generated (schema, answer) pairs from the form subset (and a few outside
it) at both and compares.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from elicitkit.elicitation.answers import _compiled, validate_answer
from elicitkit.elicitation.errors import InvalidAnswer

VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -3,
    7,
    2**70,
    1.0,
    2.5,
    float("nan"),
    "",
    "a",
    "abc",
    "x" * 20,
    "red",
    "green",
    "blue",
    "2025-12-25",
    "2025-13-45",
    "2025-12-25T10:00:00Z",
    "not a date",
    "a@b.co",
    "nobody",
    "https://example.com/x",
    "relative/path",
    [],
    ["red"],
    ["red", "blue"],
    ["red", "red"],
    ["purple"],
    [1],
    {},
    {"k": 1},
]


def _property(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(["string", "string", "integer", "number", "boolean", "enum", "titled", "multi", "multi2"])
    prop: dict[str, Any]
    if kind == "string":
        prop = {"type": "string"}
        if rng.random() < 0.4:
            prop["minLength"] = rng.choice([0, 1, 3])
        if rng.random() < 0.4:
            prop["maxLength"] = rng.choice([0, 2, 10])
        if rng.random() < 0.3:
            prop["format"] = rng.choice(["email", "uri", "date", "date-time"])
        if rng.random() < 0.2:
            prop["pattern"] = rng.choice(["^a", "c$", "[0-9]"])
    elif kind in ("integer", "number"):
        prop = {"type": kind}
        if rng.random() < 0.5:
            prop["minimum"] = rng.choice([0, 1, 2.5, -10])
        if rng.random() < 0.5:
            prop["maximum"] = rng.choice([1, 5, 100.5])
    elif kind == "boolean":
        prop = {"type": "boolean"}
    elif kind == "enum":
        prop = {"type": "string", "enum": ["red", "green", "blue"]}
    elif kind == "titled":
        prop = {"type": "string", "oneOf": [{"const": c, "title": c.title()} for c in ("red", "green")]}
    elif kind == "multi":
        prop = {"type": "array", "items": {"type": "string", "enum": ["red", "green", "blue"]}}
    else:
        prop = {"type": "array", "items": {"anyOf": [{"const": "red", "title": "R"}, {"const": "blue", "title": "B"}]}}
    if kind in ("multi", "multi2"):
        if rng.random() < 0.4:
            prop["minItems"] = rng.choice([0, 1, 2])
        if rng.random() < 0.4:
            prop["maxItems"] = rng.choice([1, 2])
    if rng.random() < 0.3:
        prop["title"] = "Field"
    if rng.random() < 0.1:  # outside the fast checker's keywords: jsonschema alone decides
        prop[rng.choice(["const", "multipleOf", "exclusiveMinimum", "x-note"])] = 2
    return prop


def _schema(rng: random.Random) -> dict[str, Any]:
    names = rng.sample(["a", "b", "c", "d"], rng.randint(1, 4))
    properties = {name: _property(rng) for name in names}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = [n for n in names if rng.random() < 0.5]
    if required:
        schema["required"] = required
    return schema


def _answer(rng: random.Random, schema: dict[str, Any]) -> dict[str, Any]:
    names = [*schema["properties"], "zzz"] if rng.random() < 0.1 else list(schema["properties"])
    return {name: rng.choice(VALUES) for name in names if rng.random() < 0.85}


@pytest.mark.parametrize("seed", range(4))
def test_fast_check_never_accepts_what_jsonschema_rejects(seed: int) -> None:
    rng = random.Random(seed)
    fast_used = agreed_valid = 0
    for _ in range(400):
        schema = _schema(rng)
        validator, fast = _compiled(schema)
        for _ in range(10):
            answer = _answer(rng, schema)
            valid = not list(validator.iter_errors(answer))
            if fast is not None:
                fast_used += 1
                if fast(answer):
                    assert valid, (schema, answer)
                    agreed_valid += 1
            try:
                validate_answer(schema, answer, fill_defaults=False)
            except InvalidAnswer:
                assert not valid, (schema, answer)
            else:
                assert valid, (schema, answer)
    assert fast_used > 1000 and agreed_valid > 50  # the fast path was really exercised


def test_fast_check_accepts_the_ordinary_valid_answer() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 1},
            "party_size": {"type": "integer", "minimum": 1, "maximum": 20},
            "confirm": {"type": "boolean"},
            "colour": {"type": "string", "oneOf": [{"const": "red", "title": "Red"}]},
            "when": {"type": "string", "format": "date"},
        },
        "required": ["name", "party_size"],
    }
    _, fast = _compiled(schema)
    assert fast is not None
    assert fast({"name": "Ada", "party_size": 2, "confirm": True, "colour": "red", "when": "2025-12-25"})
    assert not fast({"name": "Ada", "party_size": 2.0})
    assert not fast({"name": "Ada", "party_size": True})
    assert not fast({"name": "Ada"})
    assert not fast({"name": "Ada", "party_size": 2, "extra": 1})
    assert not fast({"name": "Ada", "party_size": 2, "when": "2025-02-30"})
