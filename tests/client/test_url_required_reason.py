"""A -32042 error's message reaches the URL handler as ``UrlRequest.reason``, before consent is asked.

The server says why it needs the page in the error (``UrlElicitationRequired(..., message)``);
the handler that asks the person to open the page must be able to say it first.
"""

from __future__ import annotations

import pytest

from elicitkit import Client, Context, ElicitationResult, Server, UrlElicitationRequired, UrlRequest

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(20)]

REASON = "GitHub access is needed to list your private repositories."
URL = "https://github.example/login/oauth?state=s1"


def build() -> Server:
    server = Server("repos")

    @server.tool()
    async def repos(ctx: Context) -> str:
        raise UrlElicitationRequired([UrlRequest("Authorize GitHub", URL, "gh-1")], REASON)

    @server.tool()
    async def pay(ctx: Context) -> str:
        answer = await ctx.elicit_url("Pay the deposit.", "https://pay.example/d/1", elicitation_id="pay-1")
        return answer.action.value

    return server


async def test_the_reason_reaches_the_handler_with_the_url() -> None:
    asked: list[UrlRequest] = []

    async def person(request: object) -> ElicitationResult[None]:
        assert isinstance(request, UrlRequest)
        asked.append(request)
        return ElicitationResult.decline()

    async with Client(build(), elicitation_callback=person, auto_url_elicitation=True) as client:
        with pytest.raises(UrlElicitationRequired) as refused:
            await client.call_tool("repos")
        assert (await client.call_tool("pay")).text == "decline"
    required, plain = asked
    assert (required.message, required.url, required.reason) == ("Authorize GitHub", URL, REASON)
    assert plain.reason is None  # an elicitation/create has no error message to carry
    assert refused.value.message == REASON
    assert [e.reason for e in refused.value.elicitations] == [REASON]  # the raised error's requests say it too


def test_the_reason_is_typed_and_not_part_of_equality() -> None:
    one = UrlRequest("Authorize", URL, "id-1", reason="why")
    assert one == UrlRequest("Authorize", URL, "id-1")  # the same question, whatever the error said
    assert one.reason == "why" and "reason" not in one.to_params()
