"""``_frozen.frozen_builder``: the same frozen objects as the classes' own ``__init__``, for
every class the 2026 path builds this way, and a clear refusal for a class it cannot build."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from elicitkit._frozen import frozen_builder
from elicitkit.elicitation.results import AcceptedElicitation, accepted
from elicitkit.protocol import inbound, modern
from elicitkit.protocol.inbound import Stateless
from elicitkit.protocol.modern import Envelope
from elicitkit.server.rounds import sealing
from elicitkit.server.rounds.sealing import StateBinding

ENVELOPE = Envelope("2026-07-28", {"elicitation": {}}, {"name": "c"}, "info")

CASES: list[tuple[Any, type[Any], tuple[Any, ...]]] = [
    (modern._envelope, Envelope, ("2026-07-28", {"elicitation": {"form": {}}}, {"name": "c", "version": "1"}, None)),
    (sealing._binding, StateBinding, ("tools/call", "book", "ab" * 32, "alice")),
    (sealing._binding, StateBinding, ("tools/call", "book", "ab" * 32, None)),
    (inbound._stateless, Stateless, (ENVELOPE, "bob")),
    (inbound._stateless, Stateless, (None, None)),
    (accepted, AcceptedElicitation, ({"name": "Ada"}, {"name": "Ada"})),
]


@pytest.mark.parametrize(("build", "cls", "values"), CASES)
def test_each_builder_makes_what_the_class_makes(build: Any, cls: type[Any], values: tuple[Any, ...]) -> None:
    made, expected = build(*values), cls(*values)
    assert type(made) is cls
    assert made == expected
    if _hashable(values):
        assert hash(made) == hash(expected)
    for field, value in zip(dataclasses.fields(cls), values, strict=True):
        assert getattr(made, field.name) is value  # the values themselves, not copies
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, dataclasses.fields(cls)[0].name, "changed")


def _hashable(values: tuple[Any, ...]) -> bool:
    try:
        hash(values)
    except TypeError:
        return False
    return True


def test_missing_values_are_a_type_error_not_a_half_built_object() -> None:
    with pytest.raises(TypeError):
        sealing._binding("tools/call", "book")


@dataclasses.dataclass(frozen=True)
class NoSlots:
    a: int


@dataclasses.dataclass(frozen=True, slots=True)
class Computed:
    a: int
    b: int = dataclasses.field(init=False, default=0)


@dataclasses.dataclass(frozen=True, slots=True)
class Checked:
    a: int

    def __post_init__(self) -> None:
        if self.a < 0:
            raise ValueError("negative")


@dataclasses.dataclass(frozen=True, slots=True)
class Shadowing:
    made_: int


class Plain:
    __slots__ = ("a",)


@pytest.mark.parametrize("cls", [NoSlots, Computed, Checked, Shadowing, Plain])
def test_classes_it_cannot_build_exactly_are_refused(cls: type[Any]) -> None:
    with pytest.raises(TypeError, match=cls.__name__):
        frozen_builder(cls)
