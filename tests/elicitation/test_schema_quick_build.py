"""``Form.parse`` builds a model's instance without ``model_construct``'s loop only where that
loop would make the very same object; every other model still goes through pydantic."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr

from elicitkit._models import plain_builder
from elicitkit.elicitation.schema import form_for


class Plain(BaseModel):
    name: str = Field(description="Name")
    size: int
    ok: bool = True


class Extra(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


class Aliased(BaseModel):
    name: str = Field(alias="fullName")


class Chosen(BaseModel):
    name: str = Field(validation_alias=AliasChoices("name", "n"))


class Private(BaseModel):
    name: str
    _seen: int = PrivateAttr(default=0)


class PostInit(BaseModel):
    name: str

    def model_post_init(self, context: Any, /) -> None:
        object.__setattr__(self, "name", self.name.upper())


class OwnConstruct(BaseModel):
    name: str

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> OwnConstruct:
        return super().model_construct(_fields_set, **{k: f"own {v}" for k, v in values.items()})


def _same(made: BaseModel, reference: BaseModel) -> None:
    assert type(made) is type(reference)
    assert made == reference
    assert list(made.__dict__.items()) == list(reference.__dict__.items())
    assert made.model_fields_set == reference.model_fields_set
    assert made.model_extra == reference.model_extra
    assert made.__pydantic_private__ == reference.__pydantic_private__
    assert made.model_dump() == reference.model_dump()


def test_quick_build_is_model_construct_for_a_plain_model() -> None:
    for model, fields in ((Plain, {"name": "a", "size": 2, "ok": False}), (Extra, {"name": "b"})):
        quick = plain_builder(model)
        assert quick is not None
        _same(quick(dict(fields)), model.model_construct(**fields))


def test_models_the_loop_does_more_for_are_left_to_pydantic() -> None:
    for model in (Aliased, Chosen, Private, PostInit, OwnConstruct):
        assert plain_builder(model) is None, model


def test_parse_with_a_field_left_out_fills_its_default_as_before() -> None:
    form = form_for(Plain)
    parsed = form.parse({"name": "a", "size": 3})
    _same(parsed, Plain.model_construct(name="a", size=3))
    assert parsed.ok is True and parsed.model_fields_set == {"name", "size"}
    full = form.parse({"name": "a", "size": 3, "ok": False})
    _same(full, Plain.model_construct(name="a", size=3, ok=False))


def test_parse_runs_a_models_own_hooks() -> None:
    assert form_for(PostInit).parse({"name": "ann"}).name == "ANN"
    assert form_for(OwnConstruct).parse({"name": "x"}).name == "own x"
