"""Guess the number: a game the server plays with the user, one question at a time.

python examples/elicitation/guess_the_number.py          # serve over stdio
python examples/elicitation/guess_the_number.py --demo   # an in-memory client plays it

The questions use the scalar shorthands: ``ctx.elicit(message, bool)`` asks a yes/no,
``ctx.elicit(message, int)`` asks for a whole number, and the answer's ``.data`` is that value.

The secret is not drawn with ``random.randint`` mid-game: on a 2026-07-28 connection the tool
runs again from the top on every round, so everything before a question must come out the
same for the same arguments and answers (the replay contract). The user's first guess seeds
it instead (with the optional ``seed`` argument), through a generator of its own: the same
game replays to the same secret, and different first guesses or seeds give different games.
"""

from __future__ import annotations

import random
import re
import sys
from typing import Any

import anyio

from elicitkit import AcceptedElicitation, Client, Context, ElicitationResult, FormRequest, Server, UrlRequest

server = Server("guess-the-number", "1.0.0")

LOW, HIGH, TRIES = 1, 10, 5


def draw_secret(seed: int, first_guess: int) -> int:
    """The secret, a pure function of what the game was given: replaying a round draws it again."""
    return random.Random(f"guess-the-number/{seed}/{first_guess}").randint(LOW, HIGH)


@server.tool()
async def guess_the_number(ctx: Context, seed: int = 0) -> str:
    """Play a game: the server thinks of a number between 1 and 10, the user guesses it."""
    play = await ctx.elicit("Shall we play guess-the-number?", bool)
    if not (isinstance(play, AcceptedElicitation) and play.data):
        return "Another time, then."
    secret: int | None = None  # drawn once the first guess is in (see the module docstring)
    low, high, hint = LOW, HIGH, ""
    for attempt in range(1, TRIES + 1):
        guess = await ctx.elicit(f"{hint}Guess a number between {low} and {high}.", int)
        if secret is None and isinstance(guess, AcceptedElicitation):
            secret = draw_secret(seed, guess.data)
        if not isinstance(guess, AcceptedElicitation):
            if secret is None:
                return "You gave up before the first guess."
            return f"You gave up. The number was {secret}."
        assert secret is not None
        if guess.data == secret:
            return f"You got it: {secret}, in {attempt} {'guess' if attempt == 1 else 'guesses'}!"
        if guess.data < secret:
            low, hint = max(low, guess.data + 1), f"{guess.data} is too low. "
        else:
            high, hint = min(high, guess.data - 1), f"{guess.data} is too high. "
    return f"Out of tries. The number was {secret}."


# ----------------------------------------------------------------------------- the demo


async def player(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
    """A player who always wants to play and always guesses the middle of the range it is given."""
    print(f"server: {request.message}")
    if request.message.startswith("Shall we play"):
        print("  user: yes")
        return ElicitationResult.accept({"value": True})  # a scalar question has one field: "value"
    found = re.search(r"between (\d+) and (\d+)", request.message)
    assert found is not None
    low, high = int(found[1]), int(found[2])
    guess = (low + high) // 2
    print(f"  user: {guess}")
    return ElicitationResult.accept({"value": guess})


async def main() -> None:
    async with Client(server, elicitation_callback=player) as client:
        print("guess_the_number ->", (await client.call_tool("guess_the_number")).text)


if __name__ == "__main__":
    if "--demo" in sys.argv[1:]:
        anyio.run(main)
    else:
        server.run()
