"""Frozen slotted dataclasses built on a hot path without their ``__init__``.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``; a 2026
request makes several such objects (its route, its envelope, its state binding, an accepted
answer), and pays that on each. :func:`frozen_builder` writes, once per class, a function that
sets the slots through their own descriptors instead (generated the way :mod:`dataclasses`
generates ``__init__``, since a loop over the fields would cost what it saves): the same frozen
object, one call fewer per field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["frozen_builder"]


def frozen_builder(cls: type[T]) -> Callable[..., T]:
    """``cls(*values)`` without ``cls.__init__``: the fields positionally, in ``__init__``'s order.

    Only for a slotted dataclass whose fields all go through ``__init__`` and have no
    ``__post_init__`` (anything else would come out different): TypeError for any other class.
    """
    if not dataclasses.is_dataclass(cls) or "__slots__" not in vars(cls) or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: frozen_builder takes a slotted dataclass without __post_init__")
    fields = dataclasses.fields(cls)
    if not all(field.init for field in fields):
        raise TypeError(f"{cls.__name__}: every field must be an __init__ field")
    names = [field.name for field in fields]
    if any(name.endswith("_") for name in names):  # (the generated function's own names end so)
        raise TypeError(f"{cls.__name__}: a field name ending in '_' is not supported")
    scope: dict[str, Any] = {"_new_": object.__new__, "_cls_": cls}
    lines = [f"def build({', '.join(names)}):", "    made_ = _new_(_cls_)"]
    for i, name in enumerate(names):
        scope[f"_set{i}_"] = vars(cls)[name].__set__  # the slot's member descriptor
        lines.append(f"    _set{i}_(made_, {name})")
    lines.append("    return made_")
    exec("\n".join(lines), scope)  # (field names are identifiers: nothing else is pasted in)
    build: Callable[..., T] = scope["build"]
    build.__qualname__ = f"frozen_builder({cls.__name__})"
    return build
