"""``Form.parse``: a checked answer becomes the model without being judged a second time.

The schema check (``answers.validate_answer``) is the one validation on each side; building the
model converts. These tests hold the conversion to what pydantic itself would build, for every
field type a form can have, and keep pydantic in charge where a model has rules of its own.
"""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Any, Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AnyUrl, BaseModel, Field, field_validator, model_validator

from elicitkit.elicitation.answers import validate_answer
from elicitkit.elicitation.enums import Format, TitledEnum
from elicitkit.elicitation.schema import form_for


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Size(TitledEnum):
    SMALL = "s", "Small"
    LARGE = "l", "Large"


class Everything(BaseModel):
    name: str
    email: Annotated[str, Format("email")] = "a@example.com"
    count: int = Field(default=1, ge=0, le=100)
    ratio: float = 0.5
    ok: bool = False
    day: datetime.date | None = None
    when: Optional[datetime.datetime] = None  # noqa: UP045 - both spellings of optional are forms
    site: AnyUrl | None = None
    color: Color = Color.RED
    size: Size | None = None
    pick: Literal["x", "y"] = "x"
    many: list[Literal["a", "b", "c"]] = Field(default_factory=list)
    sizes: set[Size] = Field(default_factory=set)
    aliased: str = Field(default="q", alias="wireName")
    maybe: str | None


ANSWERS: list[dict[str, Any]] = [
    {"name": "ann", "maybe": "m"},
    {"name": "ann"},  # an Optional field without a default, left out
    {
        "name": "bo",
        "email": "b@example.org",
        "count": 0,
        "ratio": 2,  # an integer is a JSON number: the float field gets 2.0
        "ok": True,
        "day": "2024-02-29",
        "when": "2024-03-01T10:30:00Z",
        "site": "https://example.com/a?b=1",
        "color": "green",
        "size": "l",
        "pick": "y",
        "many": ["c", "a"],
        "sizes": ["s", "l"],
        "wireName": "from the wire",
        "maybe": "yes",
    },
    {"name": "", "when": "2024-03-01t10:30:00.123456+02:00", "day": "1999-12-31"},
]


@pytest.mark.parametrize("answer", ANSWERS)
def test_parse_builds_what_pydantic_would(answer: dict[str, Any]) -> None:
    form = form_for(Everything)
    checked = validate_answer(form.schema, answer)
    built = form.parse(checked)
    expected = Everything.model_validate({"maybe": None, **checked})
    assert built == expected
    for name in Everything.model_fields:
        assert type(getattr(built, name)) is type(getattr(expected, name)), name
    assert built.model_fields_set - {"maybe"} == expected.model_fields_set - {"maybe"}


@settings(max_examples=150, deadline=None)
@given(
    st.fixed_dictionaries(
        {"name": st.text(max_size=20)},
        optional={
            "count": st.integers(0, 100),
            "ratio": st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False),
            "ok": st.booleans(),
            "day": st.dates().map(datetime.date.isoformat),
            "when": st.datetimes(timezones=st.just(datetime.UTC)).map(datetime.datetime.isoformat),
            "color": st.sampled_from(["red", "green"]),
            "size": st.sampled_from(["s", "l"]),
            "many": st.lists(st.sampled_from(["a", "b", "c"]), unique=True),
            "sizes": st.lists(st.sampled_from(["s", "l"]), unique=True),
        },
    )
)
def test_parse_agrees_with_pydantic_on_any_checked_answer(answer: dict[str, Any]) -> None:
    form = form_for(Everything)
    checked = validate_answer(form.schema, answer)
    assert form.parse(checked) == Everything.model_validate({"maybe": None, **checked})


def test_parse_does_not_validate_again(monkeypatch: pytest.MonkeyPatch) -> None:
    form = form_for(Everything)
    checked = validate_answer(form.schema, ANSWERS[2])

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the answer was checked already: parse must not validate it again")

    monkeypatch.setattr(Everything, "model_validate", refuse)
    built = form.parse(checked)
    assert built.aliased == "from the wire"
    assert built.sizes == {Size.SMALL, Size.LARGE}


class Booking(BaseModel):
    guests: int
    day: datetime.date

    @field_validator("guests")
    @classmethod
    def even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("tables seat pairs")
        return value


class Window(BaseModel):
    start: int
    end: int

    @model_validator(mode="after")
    def ordered(self) -> Window:
        if self.end < self.start:
            raise ValueError("end before start")
        return self


def test_a_models_own_validators_still_run() -> None:
    assert form_for(Booking).parse({"guests": 2, "day": "2024-01-01"}).day == datetime.date(2024, 1, 1)
    with pytest.raises(ValueError, match="tables seat pairs"):
        form_for(Booking).parse({"guests": 3, "day": "2024-01-01"})
    with pytest.raises(ValueError, match="end before start"):
        form_for(Window).parse({"start": 5, "end": 1})


def test_a_value_that_will_not_convert_goes_to_pydantic() -> None:
    """RFC 3339 allows a leap second that Python's datetime cannot hold: pydantic has the last word."""
    with pytest.raises(ValueError, match="when"):
        form_for(Everything).parse({"name": "x", "maybe": None, "when": "2016-12-31T23:59:60Z"})


def test_scalar_forms_convert_too() -> None:
    assert form_for(datetime.date).parse({"value": "2024-05-06"}) == datetime.date(2024, 5, 6)
    assert form_for(list[Color]).parse({"value": ["green"]}) == [Color.GREEN]
    assert form_for(Size).parse({"value": "s"}) is Size.SMALL
    assert form_for(float).parse({"value": 3}) == 3.0
    assert type(form_for(float).parse({"value": 3})) is float
