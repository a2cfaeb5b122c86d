"""Collect an API key without it passing through the client or the model: ``ctx.elicit(..., via="web")``.

python examples/elicitation/api_key_setup.py          # serve over stdio
python examples/elicitation/api_key_setup.py --demo   # an in-memory client; a scripted person answers the page

The spec forbids asking for passwords, API keys or other secrets in form mode: a form answer
travels through the client, and often the model's context. ``via="web"`` asks the same
question on a one-time page this server serves itself (beside ``/mcp`` over HTTP, on a
loopback port over stdio), through a URL-mode question: the client only sees the link, the
key goes from the person's browser straight into the waiting call.
"""

from __future__ import annotations

import re
import sys

import aiohttp
import anyio
from pydantic import BaseModel, Field

from elicitkit import Client, Context, ElicitationResult, FormRequest, Server, UrlRequest

server = Server("weather", "1.0.0", title="Weather service")
KEYS: dict[str, str] = {}  # a real server keeps it in a secret store


class WeatherKey(BaseModel):
    api_key: str = Field(min_length=8, description="From your account page at weather.example")


@server.tool()
async def connect_weather(ctx: Context) -> str:
    """Connect the weather service: asks the person for their API key on this server's own page."""
    answer = await ctx.elicit("Paste your weather.example API key", WeatherKey, via="web")
    if not answer.accepted:
        return f"Not connected ({answer.action})."
    KEYS["weather"] = answer.data.api_key
    return f"Connected: a key ending in ...{answer.data.api_key[-4:]} is stored."


# ----------------------------------------------------------------------------- the demo


async def person(url: str) -> None:
    """Stands in for the person at the browser: fills in the key, reviews, sends."""
    async with aiohttp.ClientSession() as http:
        async with http.get(url) as page:
            csrf = re.search(r'name="csrf" value="([^"]+)"', await page.text())
        assert csrf is not None
        form = {"csrf": csrf.group(1), "action": "review", "f0": "wk-0123456789abcd"}
        async with http.post(url, data=form) as review:
            review_id = re.search(r'name="review" value="([^"]+)"', await review.text())
        assert review_id is not None
        async with http.post(url, data={"csrf": csrf.group(1), "action": "send", "review": review_id.group(1)}):
            pass


async def answer(request: FormRequest | UrlRequest) -> ElicitationResult[object]:
    assert isinstance(request, UrlRequest)  # the client is only ever sent the link
    print(f"client: {request.message} -> opens a page on the server")
    await person(request.url)
    return ElicitationResult.accept()


async def main() -> None:
    async with Client(server, elicitation_callback=answer) as client:
        print("connect_weather ->", (await client.call_tool("connect_weather", {})).text)


if __name__ == "__main__":
    if "--demo" in sys.argv[1:]:
        anyio.run(main)
    else:
        server.run()
