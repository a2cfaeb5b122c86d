"""Building pydantic models from values the caller has already checked, without validation.

``Model.model_construct`` loops over every field in Python (defaults, aliases, extras) and
costs as much as validating a small model; on a hot path whose values are known good (a
payload this process sealed, a result it has just checked field by field) that loop is
waste. :func:`constructor` returns a function that sets what ``model_construct`` would set
when every field is given, after checking once, at import, that the result is the same model
``model_construct`` makes (another pydantic version falls back to ``model_construct``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

__all__ = ["constructor", "plain_builder"]


def _builder(cls: type[M]) -> Callable[[dict[str, Any]], M]:
    """What ``model_construct`` sets, set directly: the dict becomes the model's own."""
    allows_extra = cls.model_config.get("extra") == "allow"
    new, setattr_ = cls.__new__, object.__setattr__

    def quick(fields: dict[str, Any]) -> M:
        model = new(cls)
        setattr_(model, "__dict__", fields)
        setattr_(model, "__pydantic_fields_set__", set(fields))
        setattr_(model, "__pydantic_extra__", {} if allows_extra else None)
        setattr_(model, "__pydantic_private__", None)
        return model

    return quick


def plain_builder(cls: type[M]) -> Callable[[dict[str, Any]], M] | None:
    """A builder of ``cls`` from a dict holding every field by name, in the model's order, for a
    model where ``model_construct``'s loop or hooks would add nothing; None for one where they
    would (aliases, a root model, ``model_post_init``, private attributes, its own
    ``model_construct``)."""
    if (
        cls.__pydantic_root_model__
        or cls.__pydantic_post_init__
        or cls.__private_attributes__
        or getattr(cls.model_construct, "__func__", None) is not BaseModel.model_construct.__func__  # type: ignore[attr-defined]
    ):
        return None
    for name, info in cls.model_fields.items():
        if info.alias not in (None, name) or info.validation_alias not in (None, name):
            return None
    return _builder(cls)


def constructor(cls: type[M], sample: dict[str, Any]) -> Callable[[dict[str, Any]], M]:
    """A builder of ``cls`` from a dict holding every field (the dict becomes the model's own).

    ``sample``: every field with a value of its type, to check the quick way against pydantic's.
    """
    names = frozenset(cls.model_fields)
    quick = _builder(cls)

    def slow(fields: dict[str, Any]) -> M:  # pragma: no cover - a pydantic whose internals differ
        return cls.model_construct(**fields)

    try:
        made, reference = quick(dict(sample)), cls.model_construct(**sample)
        same = (
            set(sample) == names
            and made == reference
            and made.model_dump() == reference.model_dump()
            and made.model_fields_set == reference.model_fields_set
            and made.model_extra == reference.model_extra
        )
    except Exception:  # pragma: no cover - a pydantic whose internals differ
        same = False
    return quick if same else slow
