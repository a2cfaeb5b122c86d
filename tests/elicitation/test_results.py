"""The elicitation outcomes as a server builds them."""

import dataclasses

import pytest

from elicitkit.elicitation.results import AcceptedElicitation, accepted


def test_a_quickly_built_acceptance_is_the_frozen_object_its_class_makes() -> None:
    """``results.accepted`` (the server's checked answers) skips the frozen dataclass's __init__."""
    made = accepted({"n": 1}, {"n": 1})
    assert type(made) is AcceptedElicitation
    assert made == AcceptedElicitation(data={"n": 1}, content={"n": 1})
    assert repr(made) == repr(AcceptedElicitation(data={"n": 1}, content={"n": 1}))
    assert made.accepted and made.to_wire() == {"action": "accept", "content": {"n": 1}}
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.data = 2  # type: ignore[misc]
