"""Elicitation across SDKs, both ways, over stdio and Streamable HTTP.

1. The official ``mcp`` 2.3.0 ``Client`` (``mode="legacy"``), answering with its own
   ``elicitation_callback``, drives every tool of ``examples/elicitation/``: form accept,
   decline and cancel, URL accept, the completion notification, and the ``-32042`` flow.
   Over stdio it spawns each example file; over HTTP one server
   (``peers/elicitation_examples_server.py``) carries all of their tools.
2. Our :class:`~elicitkit.Client` answers questions asked by tools written with the official
   SDK (``peers/official_elicitation_server.py``, over HTTP): a form whose defaults our client
   fills in, a URL elicitation with its completion, and a ``-32042`` that our client completes
   and retries.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from mcp import StdioServerParameters
from mcp import types as mcp_types

from elicitkit import Client
from elicitkit.elicitation.requests import FormRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult

from .support import PEERS, http_server_process

pytestmark = [
    pytest.mark.interop,
    pytest.mark.anyio,
    pytest.mark.timeout(60),
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),
]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "elicitation"
EXAMPLES_SERVER = PEERS / "elicitation_examples_server.py"
OFFICIAL_ELICITATION_SERVER = PEERS / "official_elicitation_server.py"
STEP = 30.0  # one test's whole conversation; a hang guard only
EVENTS = "Next events: 09:00 stand-up, 12:30 lunch with Ada, 16:00 release review."


@pytest.fixture(scope="module")
def examples_http_url() -> Iterator[str]:
    with http_server_process(EXAMPLES_SERVER) as url:
        yield url


@pytest.fixture(scope="module")
def official_elicitation_http_url() -> Iterator[str]:
    with http_server_process(OFFICIAL_ELICITATION_SERVER) as url:
        yield url


# =============================================================================================
# 1. the official client  ->  our example servers
# =============================================================================================

OfficialAnswer = mcp_types.ElicitResult | Callable[[Any], Any]


class OfficialUser:
    """An ``elicitation_callback`` for the SDK's client: scripted answers, every question kept."""

    def __init__(self) -> None:
        self.answers: list[OfficialAnswer] = []
        self.asked: list[mcp_types.ElicitRequestFormParams | mcp_types.ElicitRequestURLParams] = []

    def will(self, *answers: OfficialAnswer) -> None:
        self.answers.extend(answers)

    def questions(self) -> list[str]:
        asked, self.asked = self.asked, []
        return [params.message for params in asked]

    async def __call__(self, context: Any, params: Any) -> mcp_types.ElicitResult:
        self.asked.append(params)
        assert self.answers, f"unexpected question: {params.message!r}"
        answer = self.answers.pop(0)
        if isinstance(answer, mcp_types.ElicitResult):
            return answer
        outcome = answer(params)
        result: mcp_types.ElicitResult = await outcome if inspect.isawaitable(outcome) else outcome
        return result


def accepted(**content: Any) -> mcp_types.ElicitResult:
    return mcp_types.ElicitResult(action="accept", content=content or None)


DECLINE = mcp_types.ElicitResult(action="decline")
CANCEL = mcp_types.ElicitResult(action="cancel")


class Completions:
    """A ``message_handler`` collecting ``notifications/elicitation/complete``."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, mcp_types.ElicitCompleteNotification):
            self.ids.append(message.params.elicitation_id)
            self._arrived.set()

    async def wait_for(self, elicitation_id: str, timeout: float = 5.0) -> bool:
        with anyio.move_on_after(timeout):
            while elicitation_id not in self.ids:
                await self._arrived.wait()
                self._arrived = anyio.Event()
        return elicitation_id in self.ids


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest) -> Callable[..., mcp.Client]:
    """``connect(example, **client_options)``: the SDK's client on one example (stdio) or on all (HTTP)."""
    url = str(request.getfixturevalue("examples_http_url")) if request.param == "http" else None

    def make(example: str, **options: Any) -> mcp.Client:
        target: StdioServerParameters | str = url or StdioServerParameters(
            command=sys.executable, args=[str(EXAMPLES / f"{example}.py")]
        )
        return mcp.Client(target, mode="legacy", cache=None, **options)

    return make


def text_of(result: mcp_types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


async def call(session: mcp.Client, tool: str, arguments: dict[str, Any] | None = None) -> str:
    result = await session.call_tool(tool, arguments or {})
    assert not result.is_error, text_of(result)
    return text_of(result)


async def test_official_client_books_a_table_and_pays_the_deposit(connect: Callable[..., mcp.Client]) -> None:
    user = OfficialUser()
    completions = Completions()
    with anyio.fail_after(STEP):
        async with connect("bistro", elicitation_callback=user, message_handler=completions) as session:
            assert session.protocol_version == "2025-11-25"
            # accept; the SDK's client sends no date, so the model's default (the 26th, also full) applies
            user.will(accepted(try_other=True), accepted(try_other=True, date="2026-01-02"))
            booked = await call(session, "book_table", {"date": "2025-12-25", "party_size": 2})
            first = user.asked[0]
            assert isinstance(first, mcp_types.ElicitRequestFormParams)
            assert first.requested_schema["properties"]["date"]["default"] == "2025-12-26"
            assert first.requested_schema["required"] == ["try_other"]
            assert user.questions() == [
                "We are full for 2 on 2025-12-25. Try another evening?",
                "We are full for 2 on 2025-12-26. Try another evening?",
            ]
            user.will(DECLINE, CANCEL, accepted(try_other=False))
            declined = await call(session, "book_table", {"date": "2025-12-24", "party_size": 5})
            cancelled = await call(session, "book_table", {"date": "2025-12-24", "party_size": 5})
            kept = await call(session, "book_table", {"date": "2025-12-24", "party_size": 5})
            assert len(user.questions()) == 3

            user.will(accepted(), DECLINE)
            paying = await call(session, "pay_deposit", {"booking_id": "99"})
            refused = await call(session, "pay_deposit", {"booking_id": "98"})
            page = user.asked[0]
            assert isinstance(page, mcp_types.ElicitRequestURLParams)
            assert (page.url, page.elicitation_id) == ("https://pay.bistro.example/deposit/99", "deposit-99")
            assert page.message == "Pay the 20 EUR deposit that holds your table."
            confirmed = await call(session, "confirm_deposit", {"booking_id": "99"})
            assert await completions.wait_for("deposit-99")

    assert booked == "Table for 2 booked on 2026-01-02."
    assert declined == "No booking made: you declined another date."
    assert cancelled == "No booking made: the question was dismissed."
    assert kept == "No booking made."
    assert paying == "Waiting for the deposit of booking 99; the payment page is open in your browser."
    assert refused == "No deposit for booking 98 (decline); the table is held for one hour."
    assert confirmed == "Booking 99: deposit paid, table confirmed."
    assert completions.ids == ["deposit-99"]


async def test_official_client_runs_the_deploy_wizard(connect: Callable[..., mcp.Client]) -> None:
    user = OfficialUser()
    with anyio.fail_after(STEP):
        async with connect("deploy_wizard", elicitation_callback=user) as session:
            user.will(accepted(environment="production"), accepted(cpu_cores=8, memory_gb=16))
            deployed = await call(session, "deploy", {"app_name": "shop"})
            target, size = user.asked
            assert isinstance(target, mcp_types.ElicitRequestFormParams)
            assert isinstance(size, mcp_types.ElicitRequestFormParams)
            assert [o["title"] for o in target.requested_schema["properties"]["environment"]["oneOf"]] == [
                "Staging (safe to break)",
                "Production (real customers)",
            ]
            assert size.requested_schema["properties"]["memory_gb"]["maximum"] == 128
            assert user.questions() == [
                "Step 1/2: where should shop run?",
                "Step 2/2: how big should shop be in production?",
            ]

            user.will(DECLINE)
            stopped_first = await call(session, "deploy", {"app_name": "shop"})
            user.will(accepted(environment="staging", region="us-east"), CANCEL)
            stopped_second = await call(session, "deploy", {"app_name": "shop"})
            user.will(accepted(confirm=True), CANCEL)
            rolled = await call(session, "rollback", {"app_name": "shop"})
            kept = await call(session, "rollback", {"app_name": "shop"})

    assert deployed == "Deployed shop to production in eu-west: 8 cores, 16 GB, auto-scale off."
    assert stopped_first == "Deployment of shop stopped at step 1 (decline)."
    assert stopped_second == "Deployment of shop stopped at step 2 (cancel)."
    assert (rolled, kept) == ("Rolled shop back.", "Left shop as it is (cancel).")


def bisect(params: Any) -> mcp_types.ElicitResult:
    found = re.search(r"between (\d+) and (\d+)", params.message)
    assert found is not None, params.message
    return accepted(value=(int(found[1]) + int(found[2])) // 2)


async def test_official_client_plays_guess_the_number(connect: Callable[..., mcp.Client]) -> None:
    user = OfficialUser()
    with anyio.fail_after(STEP):
        async with connect("guess_the_number", elicitation_callback=user) as session:
            user.will(accepted(value=True), *[bisect] * 4)
            won = await call(session, "guess_the_number")
            play, first_guess = user.asked[:2]
            assert isinstance(play, mcp_types.ElicitRequestFormParams)
            assert play.requested_schema["properties"]["value"]["type"] == "boolean"
            assert isinstance(first_guess, mcp_types.ElicitRequestFormParams)
            assert first_guess.requested_schema["properties"]["value"]["type"] == "integer"
            guesses = len(user.questions()) - 1
            user.answers.clear()

            user.will(DECLINE)
            declined = await call(session, "guess_the_number")
            user.will(accepted(value=True), CANCEL)
            gave_up = await call(session, "guess_the_number")

    result = re.fullmatch(r"You got it: (\d+), in (\d) guess(?:es)?!", won)
    assert result is not None, won
    assert int(result[2]) == guesses
    assert declined == "Another time, then."
    assert gave_up == "You gave up before the first guess."  # the secret is drawn from the first guess (2026 replay)


async def test_official_client_completes_the_url_elicitation_required_error(
    connect: Callable[..., mcp.Client],
) -> None:
    user = OfficialUser()  # declares URL mode; the -32042 path never calls it
    completions = Completions()
    with anyio.fail_after(STEP):
        async with connect("third_party_auth", elicitation_callback=user, message_handler=completions) as session:
            with pytest.raises(mcp.MCPError) as failed:
                await session.call_tool("list_events", {})
            required = mcp.UrlElicitationRequiredError.from_error(failed.value.error)
            [elicitation] = required.elicitations
            state = elicitation.elicitation_id
            assert state is not None
            assert elicitation.message == "Connect your Example Calendar account."
            assert elicitation.url == f"https://calendar.example.com/oauth/authorize?client_id=bridge&state={state}"
            # the browser comes back to the server's callback; it tells this session it is done
            done = await call(session, "oauth_callback", {"state": state, "code": "sdk"})
            assert await completions.wait_for(state)
            retried = await call(session, "list_events")
    assert failed.value.code == -32042
    assert required.message == "Example Calendar access is needed first."
    assert done == "Calendar connected. You can close this tab."
    assert retried == EVENTS
    assert user.asked == []


# =============================================================================================
# 2. our Client  ->  tools written with the official SDK
# =============================================================================================


@pytest.fixture
def official_target(official_elicitation_http_url: str) -> str:
    """Over Streamable HTTP (``test_official_sdk.py`` already has our client answering a form over stdio)."""
    return official_elicitation_http_url


async def test_our_client_fills_defaults_for_an_official_form(official_target: Any) -> None:
    asked: list[FormRequest | UrlRequest] = []
    answers = [ElicitationResult.accept({"name": "Ada"}), ElicitationResult.accept({"name": "Bo", "area": "bar"})]

    async def user(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        asked.append(request)
        return answers.pop(0) if answers else ElicitationResult.decline()

    with anyio.fail_after(STEP):
        async with Client(official_target, elicitation_callback=user, timeout=STEP) as client:
            defaults = json.loads((await client.call_tool("seating")).text)
            some = json.loads((await client.call_tool("seating")).text)
            declined = json.loads((await client.call_tool("seating")).text)
    form = asked[0]
    assert isinstance(form, FormRequest) and form.origin is not None
    assert form.origin.name == "official-peer"
    assert form.message == "How should we seat you?"
    assert form.requested_schema["properties"]["area"]["default"] == "window"
    assert defaults == {
        "action": "accept",
        "content": {"name": "Ada", "party_size": 2, "terrace": False, "area": "window"},
    }
    assert some["content"] == {"name": "Bo", "party_size": 2, "terrace": False, "area": "bar"}
    assert declined == {"action": "decline", "content": None}


async def test_our_client_accepts_an_official_url_elicitation(official_target: Any) -> None:
    asked: list[FormRequest | UrlRequest] = []

    async def user(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        asked.append(request)
        return ElicitationResult.accept() if len(asked) == 1 else ElicitationResult.cancel()

    with anyio.fail_after(STEP):
        async with Client(official_target, elicitation_callback=user, timeout=STEP) as client:
            accepted_url = await client.call_tool("connect_account", {"account": "acme"})
            assert await client.wait_for_elicitation_complete("connect-acme", timeout=5)
            cancelled_url = await client.call_tool("connect_account", {"account": "globex"})
            assert not await client.wait_for_elicitation_complete("connect-globex", timeout=0.05)
    page = asked[0]
    assert isinstance(page, UrlRequest)
    assert (page.message, page.url, page.elicitation_id) == (
        "Sign in to acme.",
        "https://auth.example.com/acme",
        "connect-acme",
    )
    assert page.domain == "auth.example.com"
    assert accepted_url.text == "acme: accept"
    assert cancelled_url.text == "globex: cancel"


async def test_our_client_completes_an_official_url_elicitation_required_error(official_target: Any) -> None:
    asked: list[FormRequest | UrlRequest] = []
    client: Client

    async def browser(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        asked.append(request)
        await client.call_tool("grant")  # the provider's redirect to the server, simulated
        return ElicitationResult.accept()

    client = Client(official_target, elicitation_callback=browser, auto_url_elicitation=True, timeout=STEP)
    with anyio.fail_after(STEP):
        async with client:
            report = await client.call_tool("gated_report")
            again = await client.call_tool("gated_report")
    [request] = asked
    assert isinstance(request, UrlRequest)
    assert (request.url, request.elicitation_id) == ("https://reports.example.com/authorize", "reports-auth")
    assert report.text == "report: all green"
    assert again.text == "report: all green"
