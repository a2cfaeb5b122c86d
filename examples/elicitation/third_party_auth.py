"""A tool that needs the user's consent on another site first: -32042, then complete and retry.

python examples/elicitation/third_party_auth.py          # serve over stdio
python examples/elicitation/third_party_auth.py --demo   # an in-memory client goes through it twice

``list_events`` reads a (pretend) third-party calendar. Until the user has connected that
calendar it raises :class:`UrlElicitationRequired`: on 2025-11-25 the call fails with error
-32042 carrying the consent URL. 2026-07-28 has no -32042: there the tool asks for the URL
with ``ctx.elicit_url`` (an input request of the call), so a decline ends the call with a
clear error instead of the same URL coming back round after round.
The user opens it, the provider redirects back to ``oauth_callback`` (an HTTP endpoint in a
real server, a tool here), which stores the grant and, on 2025-11-25, sends
``notifications/elicitation/complete`` to the session that asked. Then the call is retried.

The grant is kept per calendar account, not per connection: a 2026-07-28 client has no
session, and each retry is a new request, so anything keyed by the session would be
forgotten between the consent and the retry (and the URL asked for again and again). A real
server keys it by the authenticated user behind the request.

The demo shows both client sides: ``auto_url_elicitation=True`` (the client runs the URL
callback, waits for the completion and retries by itself) and the manual path that catches
:class:`UrlElicitationRequired`.
"""

from __future__ import annotations

import secrets
import sys
import weakref
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio

from elicitkit import (
    Client,
    Context,
    ElicitationResult,
    FormRequest,
    Server,
    ToolError,
    UrlElicitationRequired,
    UrlRequest,
)

server = Server("calendar-bridge", "1.0.0", instructions="Reads your Example Calendar once you have connected it.")

ACCOUNT = "ada@example.com"
EVENTS = "Next events: 09:00 stand-up, 12:30 lunch with Ada, 16:00 release review."
# Only this era has -32042, elicitation ids and the completion notice.
COMPLETION_NOTICE_ERAS = frozenset({"2025-11-25"})
# Here a URL is a question of the call itself, answered in the retry: a decline can be seen.
ROUND_ERAS = frozenset({"2026-07-28"})


@dataclass
class Consent:
    """A consent the provider has not confirmed yet: for which account, and who to tell."""

    account: str
    notify: weakref.ReferenceType[Any] | None  # the session to send the completion notice on


pending: dict[str, Consent] = {}  # OAuth state -> the consent it stands for
waiting: dict[str, str] = {}  # account -> its OAuth state, so asking twice shows the same URL
grants: dict[str, str] = {}  # account -> access token


@server.tool()
async def list_events(ctx: Context, account: str = ACCOUNT) -> str:
    """List the user's next calendar events (needs their consent at the calendar provider)."""
    if account in grants:
        return EVENTS
    state = waiting.get(account)
    if state is None:
        state = waiting[account] = secrets.token_urlsafe(8)
    notify = weakref.ref(ctx.session) if ctx.protocol_version in COMPLETION_NOTICE_ERAS else None
    pending[state] = Consent(account, notify)
    consent = UrlRequest(
        "Connect your Example Calendar account.",
        f"https://calendar.example.com/oauth/authorize?client_id=bridge&state={state}",
        elicitation_id=state,
    )
    if ctx.protocol_version in ROUND_ERAS and "url" in ctx.client_capabilities.get("elicitation", {}):
        # The URL is a question of this call; the retry brings the person's answer (keyed by the state).
        answer = await ctx.elicit_url(consent.message, consent.url, key=state)
        if account in grants:  # the provider called back while the person was on the page
            return EVENTS
        why = {"decline": "you declined", "cancel": "you dismissed it"}.get(answer.action, "consent not completed")
        raise ToolError(f"Example Calendar access is needed first ({why}).")
    raise UrlElicitationRequired([consent], "Example Calendar access is needed first.")


@server.tool()
async def oauth_callback(state: str, code: str) -> str:
    """Where the calendar provider sends the browser back after the user consented."""
    consent = pending.pop(state, None)
    if consent is None:
        raise ToolError("unknown or already used state")
    waiting.pop(consent.account, None)
    grants[consent.account] = f"token-for-{code}"
    session = consent.notify() if consent.notify is not None else None
    if session is not None:
        await session.send_elicit_complete(state)  # tells that client it can retry now
    return "Calendar connected. You can close this tab."


# ----------------------------------------------------------------------------- the demo


async def open_in_browser(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
    """The client's elicitation callback: show the page; here the user consents at once."""
    assert isinstance(request, UrlRequest) and request.origin is not None
    print(f"{request.origin.display_name} asks: {request.message}")
    print(f"  user: opens {request.url.split('?')[0]} and consents")
    # The provider sends the browser back to the server: an HTTP request in real life, a call here.
    # The OAuth state rides in the URL (2026-07-28 has no elicitation ids).
    state = parse_qs(urlsplit(request.url).query)["state"][0]
    print(f"  provider -> oauth_callback: {await oauth_callback(state, 'c0ffee')}")
    return ElicitationResult.accept()


async def automatic() -> None:
    print("== auto_url_elicitation=True: the client completes the step and retries")
    async with Client(server, elicitation_callback=open_in_browser, auto_url_elicitation=True) as client:
        print("list_events ->", (await client.call_tool("list_events")).text)


async def manual() -> None:
    print("== by hand: catch UrlElicitationRequired")
    calendar = {"account": "grace@example.com"}  # Ada's calendar is connected already
    async with Client(server, elicitation_callback=open_in_browser) as client:  # the callback declares URL mode
        try:
            print("list_events ->", (await client.call_tool("list_events", calendar)).text)
        except UrlElicitationRequired as required:
            print(f"list_events -> error {required.code}: {required.message}")
            for request in required.elicitations:
                await open_in_browser(request)
                completed = await client.wait_for_elicitation_complete(request.elicitation_id, timeout=10)
                print(f"client: completion notice received: {completed}")
            print("list_events (retried) ->", (await client.call_tool("list_events", calendar)).text)


async def main() -> None:
    await automatic()
    await manual()


if __name__ == "__main__":
    if "--demo" in sys.argv[1:]:
        anyio.run(main)
    else:
        server.run()
