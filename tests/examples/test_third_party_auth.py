"""examples/elicitation/third_party_auth.py with the kit: consent on another site, then the call again.

2025-11-25: -32042 with the URL, a completion notice, a retry. 2026-07-28: the URL is an
input request of the call itself, and the retry carries the answer. 2025-06-18 has no URL
mode: the tool says so. Issue 12 item 17: consent used to be kept per session, which 2026
has not, so a retry on another connection asked for consent again and again.
"""

from __future__ import annotations

import re

import pytest

from elicitkit import Client
from elicitkit.compat import UrlElicitationRequiredError
from elicitkit.testing.kit import Kit, Question, Scripted, accept, cancel, decline, reply

from ._load import load_example, spec

AUTH = spec("elicitation/third_party_auth.py")
EVENTS = "Next events: 09:00 stand-up, 12:30 lunch with Ada, 16:00 release review."
CONSENT = "Connect your Example Calendar account."

pytestmark = pytest.mark.timeout(60)


def state_of(url: str) -> str:
    found = re.search(r"[?&]state=([^&]+)", url)
    assert found is not None, url
    return found[1]


class Browser:
    """The person's browser: consents at the provider, which calls the server's ``oauth_callback``."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.callbacks: list[str] = []

    async def consent(self, question: Question) -> Scripted:
        assert self.client is not None and question.url is not None
        done = await self.client.call_tool("oauth_callback", {"state": state_of(question.url), "code": "c0ffee"})
        self.callbacks.append(done.text)
        return accept()


@pytest.mark.elicitkit_eras("2025-11-25", "2026-07-28", transports=("memory", "stdio", "http"))
async def test_consent_then_the_events(elicitkit: Kit) -> None:
    browser = Browser()
    elicitkit.person.when(CONSENT, reply(browser.consent), mode="url")
    async with elicitkit.connect(AUTH, auto_url_elicitation=True) as client:
        browser.client = client
        events = await client.call_tool("list_events")
        again = await client.call_tool("list_events")  # the grant is kept for the account
        used = state_of(elicitkit.asked[0].url or "")
        reused = await client.call_tool("oauth_callback", {"state": used, "code": "x"})
    assert (events.text, again.text) == (EVENTS, EVENTS)
    assert browser.callbacks == ["Calendar connected. You can close this tab."]
    elicitkit.asked.assert_messages(CONSENT)  # asked once
    page = elicitkit.asked[0]
    page.assert_url(re.compile(r"https://calendar\.example\.com/oauth/authorize\?client_id=bridge&state=[\w-]+"))
    page.assert_url(domain="calendar.example.com")
    assert page.server == "calendar-bridge"
    assert reused.is_error and reused.text == "unknown or already used state"


@pytest.mark.elicitkit_eras("2026-07-28")
async def test_defect_17_third_party_auth_consent_survives_another_connection_on_2026(elicitkit: Kit) -> None:
    """2026 has no session: the retry after consent may come on any connection to the server."""
    auth = load_example("elicitation/third_party_auth.py")
    elicitkit.person.will(accept())
    async with elicitkit.connect(auth.server) as first:
        pending = await elicitkit.first_round(first, "list_events")
    [request] = pending.input_requests.values()
    async with elicitkit.connect(auth.server) as browser:  # the provider's redirect
        done = await browser.call_tool("oauth_callback", {"state": state_of(request.params["url"]), "code": "c"})
    assert done.text == "Calendar connected. You can close this tab."
    async with elicitkit.connect(auth.server) as retry:  # a third connection retries
        result = await elicitkit.retry(retry, pending)
    assert result.text == EVENTS
    elicitkit.asked.assert_messages(CONSENT)


@pytest.mark.elicitkit_eras("2025-11-25", "2026-07-28")
@pytest.mark.parametrize("refusal", ["decline", "cancel"])
async def test_refused_consent_ends_the_call(elicitkit: Kit, refusal: str) -> None:
    elicitkit.person.will(decline() if refusal == "decline" else cancel())
    async with elicitkit.connect(AUTH, auto_url_elicitation=True) as client:
        if elicitkit.modern:  # the tool sees the refusal in the retry and says so
            result = await client.call_tool("list_events")
            why = "you declined" if refusal == "decline" else "you dismissed it"
            assert result.is_error and result.text == f"Example Calendar access is needed first ({why})."
        else:  # -32042 comes back to the caller: the client does not retry after a refusal
            with pytest.raises(UrlElicitationRequiredError) as required:
                await client.call_tool("list_events")
            assert (required.value.code, required.value.message) == (-32042, "Example Calendar access is needed first.")
            [request] = required.value.elicitations
            assert request.url.startswith("https://calendar.example.com/oauth/authorize?")
    elicitkit.asked.assert_messages(CONSENT)  # asked once, never again


@pytest.mark.elicitkit_eras("2026-07-28")
async def test_accepted_but_not_completed_on_2026(elicitkit: Kit) -> None:
    elicitkit.person.will(accept())  # "I went there", but the provider never called back
    async with elicitkit.connect(AUTH) as client:
        result = await client.call_tool("list_events")
    assert result.is_error and result.text == "Example Calendar access is needed first (consent not completed)."


@pytest.mark.elicitkit_eras("2025-11-25", transports=("memory", "stdio"))
async def test_by_hand_catching_the_error(elicitkit: Kit) -> None:
    async with elicitkit.connect(AUTH) as client:  # without auto_url_elicitation the error reaches the caller
        with pytest.raises(UrlElicitationRequiredError) as required:
            await client.call_tool("list_events")
        [request] = required.value.elicitations
        assert not await client.wait_for_elicitation_complete(request.elicitation_id, timeout=0.05)
        done = await client.call_tool("oauth_callback", {"state": request.elicitation_id, "code": "abc"})
        assert done.text == "Calendar connected. You can close this tab."
        assert await client.wait_for_elicitation_complete(request.elicitation_id, timeout=5)
        retried = await client.call_tool("list_events")
    assert retried.text == EVENTS
    elicitkit.asked.assert_nothing_asked()


@pytest.mark.elicitkit_eras()
async def test_a_client_without_url_mode_gets_a_tool_error(elicitkit: Kit) -> None:
    async with elicitkit.connect(AUTH, modes=("form",)) as client:
        result = await client.call_tool("list_events")
    assert result.is_error
    assert result.text == "Example Calendar access is needed first. (this client cannot open URL elicitations)"
