"""examples/elicitation/guess_the_number.py with the kit: scalar questions, and the replay contract.

Issue 12 item 17: the secret used to be drawn after the first question, so each 2026-07-28
round (which runs the tool again from the top) drew a new one: hints contradicted each
other and rounds ran out. It is now a pure function of the seed and the first guess.
"""

from __future__ import annotations

import re

import pytest

from elicitkit.testing.kit import Kit, Question, Scripted, accept, cancel, decline, reply

from ._load import load_example, spec

GUESS = spec("elicitation/guess_the_number.py")
PLAY = "Shall we play guess-the-number?"
HINT = re.compile(r"(\d+) is too (low|high)\. Guess a number between (\d+) and (\d+)\.")

pytestmark = pytest.mark.timeout(60)


def bisect(question: Question) -> Scripted:
    """Guess the middle of the range the question names."""
    found = re.search(r"between (\d+) and (\d+)", question.message)
    assert found is not None, question.message
    return accept({"value": (int(found[1]) + int(found[2])) // 2})


@pytest.mark.elicitkit_eras(transports=("memory", "stdio", "http"))
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
async def test_defect_17_guess_the_number_replay_on_2026(elicitkit: Kit, seed: int) -> None:
    """A bisecting player wins in at most four guesses, and every hint agrees with the secret."""
    elicitkit.person.when(PLAY, accept({"value": True})).when(re.compile("Guess a number"), reply(bisect), always=True)
    async with elicitkit.connect(GUESS) as client:
        result = await client.call_tool("guess_the_number", {"seed": seed})
    secret = load_example("elicitation/guess_the_number.py").draw_secret(seed, 5)  # 5: the first guess
    guesses = len(elicitkit.asked) - 1
    assert result.text == f"You got it: {secret}, in {guesses} {'guess' if guesses == 1 else 'guesses'}!"
    assert 1 <= guesses <= 4  # bisection over 1..10: nothing asked twice
    elicitkit.asked.assert_messages(PLAY, "Guess a number between 1 and 10.", *[HINT] * (guesses - 1))
    for question in list(elicitkit.asked)[2:]:
        hint = HINT.fullmatch(question.message)
        assert hint is not None
        assert (int(hint[1]) < secret) == (hint[2] == "low"), (question.message, secret)
    assert elicitkit.asked[0].schema == {
        "type": "object",
        "properties": {"value": {"type": "boolean", "title": "Value"}},
        "required": ["value"],
    }
    assert elicitkit.asked[1].schema is not None
    assert elicitkit.asked[1].schema["properties"]["value"]["type"] == "integer"


def test_defect_17_the_same_game_draws_the_same_secret() -> None:
    game = load_example("elicitation/guess_the_number.py")
    assert {game.draw_secret(3, 5) for _ in range(20)} == {game.draw_secret(3, 5)}
    assert len({game.draw_secret(seed, 5) for seed in range(50)}) > 1  # seeds do shuffle the game
    assert {game.draw_secret(0, guess) for guess in range(1, 11)} <= set(range(1, 11))


@pytest.mark.elicitkit_eras()
async def test_no_game_when_the_person_says_no(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"value": False}), decline(), cancel())
    async with elicitkit.connect(GUESS) as client:
        texts = [(await client.call_tool("guess_the_number")).text for _ in range(3)]
    assert texts == ["Another time, then."] * 3
    elicitkit.asked.assert_messages(PLAY, PLAY, PLAY)


@pytest.mark.elicitkit_eras()
async def test_giving_up_before_and_after_the_first_guess(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"value": True}), cancel())
    elicitkit.person.will(accept({"value": True}), accept({"value": 3}), decline())
    game = load_example("elicitation/guess_the_number.py")
    async with elicitkit.connect(GUESS) as client:
        before = await client.call_tool("guess_the_number")
        after_one = await client.call_tool("guess_the_number", {"seed": 7})
    assert before.text == "You gave up before the first guess."
    secret = game.draw_secret(7, 3)
    if secret == 3:
        assert after_one.text == "You got it: 3, in 1 guess!"
    else:
        assert after_one.text == f"You gave up. The number was {secret}."


@pytest.mark.elicitkit_eras()
async def test_out_of_tries(elicitkit: Kit) -> None:
    game = load_example("elicitation/guess_the_number.py")
    seed = next(s for s in range(100) if game.draw_secret(s, 1) != 1)  # a game where 1 is wrong
    elicitkit.person.will(accept({"value": True}), *[accept({"value": 1})] * 5)
    async with elicitkit.connect(GUESS) as client:
        stubborn = await client.call_tool("guess_the_number", {"seed": seed})
    assert stubborn.text == f"Out of tries. The number was {game.draw_secret(seed, 1)}."
    elicitkit.asked.assert_count(6)
