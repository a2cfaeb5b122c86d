"""The elicitation examples under ``examples/elicitation/`` run, and their tools behave over stdio.

Each example is checked twice: ``python example.py --demo`` (an in-memory client inside the
script; its transcript is asserted line by line), and as a stdio server spawned by our
:class:`~elicitkit.Client`, whose scripted elicitation callback walks the accept, decline and
cancel paths of every tool.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from elicitkit import Client, Context, Server
from elicitkit.client.responder import UrlElicitationRequiredError
from elicitkit.elicitation.enums import TitledEnum
from elicitkit.elicitation.requests import FormRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "elicitation"
BISTRO = EXAMPLES / "bistro.py"
DEPLOY = EXAMPLES / "deploy_wizard.py"
GUESS = EXAMPLES / "guess_the_number.py"
AUTH = EXAMPLES / "third_party_auth.py"

STEP = 30.0  # a hang guard for one test's whole conversation (a cold interpreter start is slow when busy)

pytestmark = pytest.mark.timeout(60)

Answer = ElicitationResult[Any] | Callable[[FormRequest | UrlRequest], Any]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class User:
    """A scripted user: answers questions in order and remembers every question it was asked.

    An answer is an :class:`ElicitationResult`, or a callable (sync or async) given the request.
    """

    def __init__(self) -> None:
        self.answers: list[Answer] = []
        self.asked: list[FormRequest | UrlRequest] = []

    def will(self, *answers: Answer) -> User:
        self.answers.extend(answers)
        return self

    def questions(self) -> list[str]:
        """The messages asked since the last call, then forget them."""
        asked, self.asked = self.asked, []
        return [request.message for request in asked]

    async def __call__(self, request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        self.asked.append(request)
        assert self.answers, f"unexpected question: {request.message!r}"
        answer = self.answers.pop(0)
        if isinstance(answer, ElicitationResult):
            return answer
        outcome = answer(request)
        result: ElicitationResult[Any] = await outcome if inspect.isawaitable(outcome) else outcome
        return result


accept = ElicitationResult.accept
decline = ElicitationResult.decline
cancel = ElicitationResult.cancel


def stdio(script: Path, user: User | None = None, **options: Any) -> Client:
    return Client([sys.executable, str(script)], elicitation_callback=user, timeout=STEP, **options)


# =============================================================================================
# --demo
# =============================================================================================


@pytest.fixture(scope="module")
def demo() -> dict[str, list[str]]:
    """Every example run with ``--demo``, all at once (fresh interpreters, started in parallel)."""
    procs = {
        script.stem: subprocess.Popen(
            [sys.executable, str(script), "--demo"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for script in (BISTRO, DEPLOY, GUESS, AUTH)
    }
    outputs: dict[str, list[str]] = {}
    try:
        for name, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=STEP)
            assert proc.returncode == 0, f"{name} --demo failed:\n{stderr}"
            assert stderr == "", f"{name} --demo wrote to stderr:\n{stderr}"
            outputs[name] = stdout.splitlines()
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return outputs


def test_bistro_demo(demo: dict[str, list[str]]) -> None:
    assert demo["bistro"] == [
        "bistro asks: We are full for 2 on 2025-12-25. Try another evening?",
        "  user: accept {'try_other': True}",
        # the client filled in the schema's default date, which is full as well: asked again
        "bistro asks: We are full for 2 on 2025-12-26. Try another evening?",
        "  user: accept {'try_other': True, 'date': '2025-12-27'}",
        "book_table -> Table for 2 booked on 2025-12-27.",
        "bistro asks: We are full for 4 on 2025-12-24. Try another evening?",
        "  user: decline",
        "book_table -> No booking made: you declined another date.",
        "bistro asks: Pay the 20 EUR deposit that holds your table.",
        "  user: opens https://pay.bistro.example/deposit/42",
        "  user: accept",
        "pay_deposit -> Waiting for the deposit of booking 42; the payment page is open in your browser.",
        "client: waiting for deposit-42 to complete ...",
        "confirm_deposit -> Booking 42: deposit paid, table confirmed.",
        "client: deposit-42 complete",
    ]


def test_deploy_wizard_demo(demo: dict[str, list[str]]) -> None:
    where = "  form: environment [Staging (safe to break) | Production (real customers)], region [eu-west | us-east]"
    assert demo["deploy_wizard"] == [
        "Step 1/2: where should shop run?",
        where,
        "  user: accept {'environment': 'production'}",
        "Step 2/2: how big should shop be in production?",
        "  form: cpu_cores, memory_gb, auto_scale",
        "  user: accept {'cpu_cores': 4, 'memory_gb': 8}",
        "deploy -> Deployed shop to production in eu-west: 4 cores, 8 GB, auto-scale off.",
        "Step 1/2: where should blog run?",
        where,
        "  user: accept {'environment': 'staging', 'region': 'us-east'}",
        "Step 2/2: how big should blog be in staging?",
        "  form: cpu_cores, memory_gb, auto_scale",
        "  user: cancel",
        "deploy -> Deployment of blog stopped at step 2 (cancel).",
        "Roll shop back to its previous release?",
        "  form: confirm",
        "  user: accept {'confirm': True}",
        "rollback -> Rolled shop back.",
    ]


def test_guess_the_number_demo(demo: dict[str, list[str]]) -> None:
    lines = demo["guess_the_number"]
    assert lines[:3] == [
        "server: Shall we play guess-the-number?",
        "  user: yes",
        "server: Guess a number between 1 and 10.",
    ]
    final = re.fullmatch(r"guess_the_number -> You got it: (\d+), in (\d) guess(?:es)?!", lines[-1])
    assert final is not None, lines[-1]
    secret, count = int(final[1]), int(final[2])
    guesses = [int(line.removeprefix("  user: ")) for line in lines[3:-1:2]]
    assert len(guesses) == count <= 4  # bisection over 1..10
    assert guesses[0] == 5 and guesses[-1] == secret
    hints = lines[4:-1:2]
    assert len(hints) == count - 1
    for guess, hint in zip(guesses, hints, strict=False):
        direction = "low" if guess < secret else "high"
        assert hint.startswith(f"server: {guess} is too {direction}. Guess a number between"), hint


def test_third_party_auth_demo(demo: dict[str, list[str]]) -> None:
    consent = [
        "calendar-bridge asks: Connect your Example Calendar account.",
        "  user: opens https://calendar.example.com/oauth/authorize and consents",
        "  provider -> oauth_callback: Calendar connected. You can close this tab.",
    ]
    events = "Next events: 09:00 stand-up, 12:30 lunch with Ada, 16:00 release review."
    assert demo["third_party_auth"] == [
        "== auto_url_elicitation=True: the client completes the step and retries",
        *consent,
        f"list_events -> {events}",
        "== by hand: catch UrlElicitationRequiredError",
        "list_events -> error -32042: Example Calendar access is needed first.",
        *consent,
        "client: completion notice received: True",
        f"list_events (retried) -> {events}",
    ]


# =============================================================================================
# over stdio: bistro
# =============================================================================================


@pytest.mark.anyio
async def test_bistro_over_stdio() -> None:
    user = User()
    with anyio.fail_after(STEP):
        async with stdio(BISTRO, user) as client:
            assert client.server_info == {"name": "bistro", "version": "1.0.0"}
            free = await client.call_tool("book_table", {"date": "2025-12-31", "party_size": 6})
            assert free.text == "Table for 6 booked on 2025-12-31." and user.asked == []

            # accept: the default date (the 26th) is full too, so it is asked about in turn
            user.will(accept({"try_other": True}), accept({"try_other": True, "date": "2025-12-30"}))
            rebooked = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
            form = user.asked[0]
            assert isinstance(form, FormRequest) and form.origin is not None
            assert form.origin.name == "bistro"
            assert form.requested_schema["required"] == ["try_other"]
            assert form.requested_schema["properties"]["date"]["default"] == "2025-12-26"
            assert user.questions() == [
                "We are full for 2 on 2025-12-24. Try another evening?",
                "We are full for 2 on 2025-12-26. Try another evening?",
            ]
            assert rebooked.text == "Table for 2 booked on 2025-12-30."

            user.will(accept({"try_other": False}))
            kept = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 3})
            user.will(decline())
            declined = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 3})
            user.will(cancel())
            cancelled = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 3})
            assert (kept.text, declined.text, cancelled.text) == (
                "No booking made.",
                "No booking made: you declined another date.",
                "No booking made: the question was dismissed.",
            )
            assert not (kept.is_error or declined.is_error or cancelled.is_error)
            assert user.questions() == ["We are full for 3 on 2025-12-25. Try another evening?"] * 3

            # URL mode: accept means "I will go there", then the webhook completes it
            user.will(accept(), decline(), cancel())
            paying = await client.call_tool("pay_deposit", {"booking_id": "7"})
            [page] = user.asked
            assert isinstance(page, UrlRequest)
            assert (page.url, page.elicitation_id) == ("https://pay.bistro.example/deposit/7", "deposit-7")
            assert paying.text == "Waiting for the deposit of booking 7; the payment page is open in your browser."
            refused = await client.call_tool("pay_deposit", {"booking_id": "8"})
            dismissed = await client.call_tool("pay_deposit", {"booking_id": "9"})
            assert refused.text == "No deposit for booking 8 (decline); the table is held for one hour."
            assert dismissed.text == "No deposit for booking 9 (cancel); the table is held for one hour."
            assert not await client.wait_for_elicitation_complete("deposit-7", timeout=0.05)
            confirmed = await client.call_tool("confirm_deposit", {"booking_id": "7"})
            assert confirmed.text == "Booking 7: deposit paid, table confirmed."
            assert await client.wait_for_elicitation_complete("deposit-7", timeout=5)


@pytest.mark.anyio
async def test_bistro_without_an_elicitation_callback_fails_the_call_not_the_session() -> None:
    with anyio.fail_after(STEP):
        async with stdio(BISTRO) as client:
            full = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            deposit = await client.call_tool("pay_deposit", {"booking_id": "1"})
            free = await client.call_tool("book_table", {"date": "2025-12-28", "party_size": 2})
    assert full.is_error and full.text.startswith("book_table: the client cannot be asked in form mode")
    assert deposit.is_error and "url mode" in deposit.text
    assert free.text == "Table for 2 booked on 2025-12-28."


# =============================================================================================
# over stdio: deploy wizard
# =============================================================================================


@pytest.mark.anyio
async def test_deploy_wizard_over_stdio() -> None:
    user = User()
    with anyio.fail_after(STEP):
        async with stdio(DEPLOY, user) as client:
            user.will(accept({"environment": "staging"}), accept({"cpu_cores": 2, "memory_gb": 4, "auto_scale": True}))
            deployed = await client.call_tool("deploy", {"app_name": "api"})
            target, size = user.asked
            assert isinstance(target, FormRequest) and isinstance(size, FormRequest)
            environment = target.requested_schema["properties"]["environment"]
            assert environment["oneOf"] == [
                {"const": "staging", "title": "Staging (safe to break)"},
                {"const": "production", "title": "Production (real customers)"},
            ]
            region = target.requested_schema["properties"]["region"]
            assert (region["enum"], region["default"]) == (["eu-west", "us-east"], "eu-west")
            cores = size.requested_schema["properties"]["cpu_cores"]
            assert (cores["type"], cores["minimum"], cores["maximum"]) == ("integer", 1, 32)
            assert size.requested_schema["properties"]["auto_scale"]["default"] is False
            assert user.questions() == [
                "Step 1/2: where should api run?",
                "Step 2/2: how big should api be in staging?",
            ]
            assert deployed.text == "Deployed api to staging in eu-west: 2 cores, 4 GB, auto-scale on."

            user.will(decline())
            at_step_one = await client.call_tool("deploy", {"app_name": "api"})
            user.will(accept({"environment": "production", "region": "us-east"}), cancel())
            at_step_two = await client.call_tool("deploy", {"app_name": "api"})
            user.will(cancel())
            cancelled_first = await client.call_tool("deploy", {"app_name": "api"})
            assert user.questions()[-2] == "Step 2/2: how big should api be in production?"
            assert at_step_one.text == "Deployment of api stopped at step 1 (decline)."
            assert at_step_two.text == "Deployment of api stopped at step 2 (cancel)."
            assert cancelled_first.text == "Deployment of api stopped at step 1 (cancel)."

            user.will(accept({"confirm": True}), accept({"confirm": False}), decline(), cancel())
            rolled = [(await client.call_tool("rollback", {"app_name": "api"})).text for _ in range(4)]
            confirm = user.asked[0]
            assert isinstance(confirm, FormRequest)
            assert confirm.requested_schema["properties"] == {"confirm": {"type": "boolean"}}
            assert rolled == [
                "Rolled api back.",
                "Left api as it is (accept).",
                "Left api as it is (decline).",
                "Left api as it is (cancel).",
            ]


# =============================================================================================
# over stdio: guess the number
# =============================================================================================


def bisect(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
    """Guess the middle of the range the question names."""
    found = re.search(r"between (\d+) and (\d+)", request.message)
    assert found is not None, request.message
    return accept({"value": (int(found[1]) + int(found[2])) // 2})


@pytest.mark.anyio
async def test_guess_the_number_over_stdio() -> None:
    user = User()
    with anyio.fail_after(STEP):
        async with stdio(GUESS, user) as client:
            user.will(accept({"value": True}), *[bisect] * 4)
            won = await client.call_tool("guess_the_number")
            play = user.asked[0]
            assert isinstance(play, FormRequest)
            assert play.requested_schema["properties"]["value"]["type"] == "boolean"
            guess = user.asked[1]
            assert isinstance(guess, FormRequest)
            assert guess.requested_schema["properties"]["value"]["type"] == "integer"
            asked = user.questions()
            user.answers.clear()
            result = re.fullmatch(r"You got it: (\d+), in (\d) guess(?:es)?!", won.text)
            assert result is not None, won.text
            assert int(result[2]) == len(asked) - 1
            assert asked[0] == "Shall we play guess-the-number?"
            assert asked[1] == "Guess a number between 1 and 10."
            assert all(
                re.fullmatch(r"\d+ is too (low|high)\. Guess a number between \d+ and \d+\.", q) for q in asked[2:]
            )

            user.will(accept({"value": False}))
            no = await client.call_tool("guess_the_number")
            user.will(decline())
            declined = await client.call_tool("guess_the_number")
            user.will(cancel())
            cancelled = await client.call_tool("guess_the_number")
            assert [no.text, declined.text, cancelled.text] == ["Another time, then."] * 3

            user.will(accept({"value": True}), cancel())
            gave_up = await client.call_tool("guess_the_number")
            assert re.fullmatch(r"You gave up\. The number was (10|[1-9])\.", gave_up.text), gave_up.text

            # always guessing 1: out of tries unless the number is small (then it is found)
            user.will(accept({"value": True}), *[accept({"value": 1})] * 5)
            stubborn = await client.call_tool("guess_the_number")
            pattern = r"Out of tries\. The number was ([2-9]|10)\.|You got it: 1, in 1 guess!"
            assert re.fullmatch(pattern, stubborn.text), stubborn.text


# =============================================================================================
# over stdio: third-party auth (-32042)
# =============================================================================================

EVENTS = "Next events: 09:00 stand-up, 12:30 lunch with Ada, 16:00 release review."


@pytest.mark.anyio
async def test_third_party_auth_auto_completes_and_retries_over_stdio() -> None:
    user = User()
    client = stdio(AUTH, user, auto_url_elicitation=True)
    callbacks: list[str] = []

    async def consent_and_redirect(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        assert isinstance(request, UrlRequest)
        # the browser comes back to the server's callback (a tool, from out here)
        done = await client.call_tool("oauth_callback", {"state": request.elicitation_id, "code": "xyz"})
        callbacks.append(done.text)
        return accept()

    with anyio.fail_after(STEP):
        async with client:
            user.will(consent_and_redirect)
            events = await client.call_tool("list_events")
            [request] = user.asked
            assert isinstance(request, UrlRequest) and request.origin is not None
            assert request.origin.name == "calendar-bridge"
            assert request.message == "Connect your Example Calendar account."
            assert request.url == (
                f"https://calendar.example.com/oauth/authorize?client_id=bridge&state={request.elicitation_id}"
            )
            assert events.text == EVENTS and callbacks == ["Calendar connected. You can close this tab."]
            again = await client.call_tool("list_events")  # the grant stays with the session
            assert again.text == EVENTS and len(user.asked) == 1
            reused = await client.call_tool("oauth_callback", {"state": request.elicitation_id, "code": "xyz"})
            assert reused.is_error and reused.text == "unknown or already used state"


@pytest.mark.anyio
@pytest.mark.parametrize("refusal", [decline(), cancel()], ids=["decline", "cancel"])
async def test_third_party_auth_refused_consent_surfaces_the_error(refusal: ElicitationResult[Any]) -> None:
    user = User()
    with anyio.fail_after(STEP):
        async with stdio(AUTH, user, auto_url_elicitation=True) as client:
            user.will(refusal)
            with pytest.raises(UrlElicitationRequiredError) as required:
                await client.call_tool("list_events")
            assert len(user.asked) == 1  # asked once, no retry after a refusal
    assert required.value.code == -32042
    assert required.value.message == "Example Calendar access is needed first."
    [request] = required.value.elicitations
    assert request.url.startswith("https://calendar.example.com/oauth/authorize?")


@pytest.mark.anyio
async def test_third_party_auth_by_hand_over_stdio() -> None:
    user = User()  # never asked: without auto_url_elicitation the error is raised to the caller
    with anyio.fail_after(STEP):
        async with stdio(AUTH, user) as client:
            with pytest.raises(UrlElicitationRequiredError) as required:
                await client.call_tool("list_events")
            [request] = required.value.elicitations
            assert not await client.wait_for_elicitation_complete(request.elicitation_id, timeout=0.05)
            done = await client.call_tool("oauth_callback", {"state": request.elicitation_id, "code": "abc"})
            assert done.text == "Calendar connected. You can close this tab."
            assert await client.wait_for_elicitation_complete(request.elicitation_id, timeout=5)
            retried = await client.call_tool("list_events")
    assert retried.text == EVENTS
    assert user.asked == []


@pytest.mark.anyio
async def test_third_party_auth_without_url_support_gets_a_tool_error() -> None:
    with anyio.fail_after(STEP):
        async with stdio(AUTH, User(), elicitation_modes=("form",)) as client:
            result = await client.call_tool("list_events")
    assert result.is_error
    assert result.text == "Example Calendar access is needed first. (this client cannot open URL elicitations)"


# =============================================================================================
# found while writing the examples
# =============================================================================================


class Placement(BaseModel):
    environment: Stage  # defined below: pydantic resolves the name when the model is first used


class Stage(TitledEnum):
    STAGING = "staging", "Staging"
    PRODUCTION = "production", "Production"


@pytest.mark.anyio
async def test_a_form_model_with_a_forward_reference_can_be_asked() -> None:
    server = Server("forward-reference")

    @server.tool()
    async def place(ctx: Context) -> str:
        answer = await ctx.elicit("Where?", Placement)
        return str(answer.data.environment) if answer.accepted else "no"  # type: ignore[attr-defined]

    assert not Placement.__pydantic_complete__
    user = User().will(accept({"environment": "production"}))
    with anyio.fail_after(STEP):
        async with Client(server, elicitation_callback=user) as client:
            result = await client.call_tool("place")
    assert result.text == "production", result.text
