"""Issue 12 item 17: examples that broke the replay contract of 2026-07-28 (and their fixes).

The 2026 era re-runs a tool from the top on every round, so the code before each question has
to come out the same for the same arguments and answers, and nothing may be keyed by a
session, which that era has not.
"""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest

from elicitkit import Client, ElicitationResult, FormRequest, UrlRequest

from ._load import load_example

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

ERAS = ("2025-06-18", "2025-11-25", "2026-07-28")
EVENTS = "Next events: 09:00 stand-up, 12:30 lunch with Ada, 16:00 release review."


def era_client(target: Any, era: str, **options: Any) -> Client:
    mode = "modern" if era == "2026-07-28" else "legacy"
    return Client(target, mode=mode, protocol_version=era, **options)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("seed", range(6))
async def test_defect_17_guess_the_number_replay_on_2026(era: str, seed: int) -> None:
    """A bisecting player wins within four guesses, and every hint agrees with the secret."""
    game = load_example("elicitation/guess_the_number.py")
    asked: list[str] = []

    async def bisect(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        asked.append(request.message)
        if request.message.startswith("Shall we play"):
            return ElicitationResult.accept({"value": True})
        found = re.search(r"between (\d+) and (\d+)", request.message)
        assert found is not None, request.message
        return ElicitationResult.accept({"value": (int(found[1]) + int(found[2])) // 2})

    with anyio.fail_after(30):
        async with era_client(game.server, era, elicitation_callback=bisect) as client:
            result = await client.call_tool("guess_the_number", {"seed": seed})
    won = re.fullmatch(r"You got it: (\d+), in (\d) guess(?:es)?!", result.text)
    assert won is not None, (result.text, asked)
    secret, attempts = int(won[1]), int(won[2])
    assert secret == game.draw_secret(seed, 5)  # the first guess (5) seeds the game
    assert asked[0] == "Shall we play guess-the-number?"
    assert asked[1] == "Guess a number between 1 and 10."
    assert len(asked) == attempts + 1 <= 5  # one question per guess: nothing asked twice
    for question in asked[2:]:
        hint = re.match(r"(\d+) is too (low|high)\.", question)
        assert hint is not None, question
        assert (int(hint[1]) < secret) == (hint[2] == "low"), (question, secret)


async def test_defect_17_guess_the_number_same_game_replays_to_the_same_secret() -> None:
    game = load_example("elicitation/guess_the_number.py")
    assert {game.draw_secret(3, 5) for _ in range(20)} == {game.draw_secret(3, 5)}
    assert len({game.draw_secret(seed, 5) for seed in range(50)}) > 1  # seeds do shuffle the game


async def test_defect_17_third_party_auth_consent_survives_another_connection_on_2026() -> None:
    """2026 has no session: the retry after consent may come on any connection (or process)."""
    auth = load_example("elicitation/third_party_auth.py")

    async def unused(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        raise AssertionError(f"nobody answers on this connection: {request.message}")

    with anyio.fail_after(30):
        async with era_client(auth.server, "2026-07-28", elicitation_callback=unused) as first:
            pending = await first.call_tool("list_events", input_required="return")
        [(key, request)] = pending.input_requests.items()
        assert request.params["mode"] == "url"
        state = re.search(r"state=([^&]+)", request.params["url"])
        assert state is not None
        # The browser comes back on a connection of its own.
        async with era_client(auth.server, "2026-07-28") as browser:
            done = await browser.call_tool("oauth_callback", {"state": state[1], "code": "c0ffee"})
        assert done.text == "Calendar connected. You can close this tab."
        # The retry travels on a third connection, as a stateless 2026 client may send it.
        async with era_client(auth.server, "2026-07-28") as retry:
            events = await retry.resume_tool(
                "list_events", pending.params.get("arguments"), {key: {"action": "accept"}}, pending.request_state
            )
    assert events.text == EVENTS


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_defect_17_third_party_auth_asks_once_then_lists_on_every_era(era: str) -> None:
    auth = load_example("elicitation/third_party_auth.py")
    asked: list[UrlRequest] = []
    client: Client | None = None

    async def consent(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        assert isinstance(request, UrlRequest) and client is not None
        asked.append(request)
        state = re.search(r"state=([^&]+)", request.url)
        assert state is not None
        await client.call_tool("oauth_callback", {"state": state[1], "code": "c0ffee"})
        return ElicitationResult.accept()

    with anyio.fail_after(30):
        async with era_client(auth.server, era, elicitation_callback=consent, auto_url_elicitation=True) as client:
            first = await client.call_tool("list_events")
            again = await client.call_tool("list_events")
    assert (first.text, again.text) == (EVENTS, EVENTS)
    assert len(asked) == 1
