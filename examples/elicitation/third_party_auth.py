"""A tool that needs the user's consent on another site first: -32042, then complete and retry.

python examples/elicitation/third_party_auth.py          # serve over stdio
python examples/elicitation/third_party_auth.py --demo   # an in-memory client goes through it twice

``list_events`` reads a (pretend) third-party calendar. Until the user has connected that
calendar it raises :class:`UrlElicitationRequired`: the call fails with error -32042 carrying
the consent URL. The user opens it, the provider redirects back to ``oauth_callback`` (an HTTP
endpoint in a real server, a tool here), which stores the grant and sends
``notifications/elicitation/complete`` to the session that asked. Then the call is retried.

The demo shows both client sides: ``auto_url_elicitation=True`` (the client runs the URL
callback, waits for the completion and retries by itself) and the manual path that catches
:class:`UrlElicitationRequiredError`.
"""

from __future__ import annotations

import secrets
import sys
import weakref
from typing import Any

import anyio

from elicitkit import Client, Context, Server, ServerSession, ToolError
from elicitkit.client.responder import UrlElicitationRequiredError
from elicitkit.elicitation.errors import UrlElicitationRequired
from elicitkit.elicitation.requests import FormRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult

server = Server("calendar-bridge", "1.0.0", instructions="Reads your Example Calendar once you have connected it.")

# Per connection, forgotten when it closes: the consent each one waits for, and the tokens it got.
pending: weakref.WeakValueDictionary[str, ServerSession] = weakref.WeakValueDictionary()  # OAuth state -> session
grants: weakref.WeakKeyDictionary[ServerSession, str] = weakref.WeakKeyDictionary()  # session -> access token


@server.tool()
async def list_events(ctx: Context) -> str:
    """List the user's next calendar events (needs their consent at the calendar provider)."""
    if ctx.session not in grants:
        state = secrets.token_urlsafe(8)
        pending[state] = ctx.session
        raise UrlElicitationRequired(
            [
                UrlRequest(
                    "Connect your Example Calendar account.",
                    f"https://calendar.example.com/oauth/authorize?client_id=bridge&state={state}",
                    elicitation_id=state,
                )
            ],
            "Example Calendar access is needed first.",
        )
    return "Next events: 09:00 stand-up, 12:30 lunch with Ada, 16:00 release review."


@server.tool()
async def oauth_callback(state: str, code: str) -> str:
    """Where the calendar provider sends the browser back after the user consented."""
    session = pending.pop(state, None)
    if session is None:
        raise ToolError("unknown or already used state")
    grants[session] = f"token-for-{code}"
    await session.send_elicit_complete(state)  # tells that client it can retry now
    return "Calendar connected. You can close this tab."


# ----------------------------------------------------------------------------- the demo


async def open_in_browser(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
    """The client's elicitation callback: show the page; here the user consents at once."""
    assert isinstance(request, UrlRequest) and request.origin is not None
    print(f"{request.origin.display_name} asks: {request.message}")
    print(f"  user: opens {request.url.split('?')[0]} and consents")
    # The provider sends the browser back to the server: an HTTP request in real life, a call here.
    print(f"  provider -> oauth_callback: {await oauth_callback(request.elicitation_id, 'c0ffee')}")
    return ElicitationResult.accept()


async def automatic() -> None:
    print("== auto_url_elicitation=True: the client completes the step and retries")
    async with Client(server, elicitation_callback=open_in_browser, auto_url_elicitation=True) as client:
        print("list_events ->", (await client.call_tool("list_events")).text)


async def manual() -> None:
    print("== by hand: catch UrlElicitationRequiredError")
    async with Client(server, elicitation_callback=open_in_browser) as client:  # the callback declares URL mode
        try:
            print("list_events ->", (await client.call_tool("list_events")).text)
        except UrlElicitationRequiredError as required:
            print(f"list_events -> error {required.code}: {required.message}")
            for request in required.elicitations:
                await open_in_browser(request)
                completed = await client.wait_for_elicitation_complete(request.elicitation_id, timeout=10)
                print(f"client: completion notice received: {completed}")
            print("list_events (retried) ->", (await client.call_tool("list_events")).text)


async def main() -> None:
    await automatic()
    await manual()


if __name__ == "__main__":
    if "--demo" in sys.argv[1:]:
        anyio.run(main)
    else:
        server.run()
