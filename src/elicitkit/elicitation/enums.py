"""The five enum shapes of an elicitation form, each spelled as a Python type.

======================  ===============================================  ==============================
shape                   Python                                           wire
======================  ===============================================  ==============================
untitled single         ``Literal["a", "b"]`` or a ``str`` ``Enum``      ``{"type":"string","enum":[..]}``
titled single           a :class:`TitledEnum`, or ``Annotated[Literal,   ``oneOf: [{const, title}]``
                        Titles(a="A", ...)]``
untitled multi          ``list[Literal[...]]`` / ``list[Enum]``          ``array`` of ``enum`` items
titled multi            ``list[TitledEnum]`` / ``Annotated[list[...],    ``items.anyOf: [{const,title}]``
                        Titles(...)]``
legacy titled           any titled single plus :data:`LEGACY_ENUM_NAMES`  ``enum`` + ``enumNames``
======================  ===============================================  ==============================
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any


class TitledEnum(StrEnum):
    """A string enum whose members carry a display title (``label``): ``SMALL = "s", "Small (8 inch)"``."""

    label: str

    def __new__(cls, value: str, label: str | None = None) -> TitledEnum:
        member = str.__new__(cls, value)
        member._value_ = value
        member.label = label if label is not None else value
        return member


@dataclass(frozen=True, slots=True)
class Titles:
    """Display titles for the options of a ``Literal`` (single or multi select)."""

    titles: dict[str, str]

    def __init__(self, titles: dict[str, str] | None = None, /, **by_value: str) -> None:
        object.__setattr__(self, "titles", {**(titles or {}), **by_value})


@dataclass(frozen=True, slots=True)
class _LegacyEnumNames:
    """Marker: render a titled single-select the pre-SEP-1330 way (``enum`` + ``enumNames``)."""


LEGACY_ENUM_NAMES = _LegacyEnumNames()


@dataclass(frozen=True, slots=True)
class Format:
    """A string ``format``: ``Annotated[str, Format("email")]`` (email, uri, date, date-time)."""

    name: str


def options_of(enum_type: type[Enum]) -> list[tuple[str, str | None]]:
    """(value, title) pairs of a string enum; title is None for a plain Enum."""
    out: list[tuple[str, str | None]] = []
    for member in enum_type:
        value = member.value
        if not isinstance(value, str):
            raise TypeError(f"enum {enum_type.__name__}.{member.name} has a non-string value {value!r}")
        out.append((value, member.label if isinstance(member, TitledEnum) else None))
    return out


def titled_options(values: list[str], titles: dict[str, str]) -> list[dict[str, Any]]:
    return [{"const": v, "title": titles.get(v, v)} for v in values]
