"""Limits a server puts on one request: how many questions it may ask (issue 12 item 16), and
whose ``requestState`` it may open (item 18: the principal hook, or the identity an HTTP
authentication layer vouches for)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from elicitkit import Client, Context, Server
from elicitkit.elicitation.requests import ElicitRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.server.rounds.sealing import PUBLIC_MESSAGE
from elicitkit.testing.kit.serving import asgi_in_process
from elicitkit.transports.http.asgi import StreamableHTTPHandler
from kit.raw import HttpWire, Modern, accept, complete, headers_for, input_required, memory_wire, meta

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


class Again(BaseModel):
    again: bool


def looping_server(cap: int) -> Server:
    server = Server("looper", max_questions=cap)

    @server.tool()
    async def keep_asking(ctx: Context) -> str:
        """Asks until told to stop, which this client never does (a runaway loop)."""
        rounds = 0
        while True:
            rounds += 1
            answer = await ctx.elicit(f"Try again? ({rounds})", Again, key=f"again{rounds}")
            if not (answer.action == "accept" and answer.data.again):
                return f"stopped after {rounds}"

    return server


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_defect_16_a_request_asking_past_the_cap_ends_with_an_error_naming_it(mode: str) -> None:
    asked: list[str] = []

    async def always_again(request: ElicitRequest) -> ElicitationResult[Any]:
        asked.append(request.message)
        return ElicitationResult.accept({"again": True})

    server = looping_server(cap=5)
    async with Client(server, mode=mode, elicitation_callback=always_again, max_input_rounds=50) as client:
        result = await client.call_tool("keep_asking", {})
    assert result.is_error
    assert "more than 5 questions" in result.text and "max_questions" in result.text
    assert len(set(asked)) == 5  # the person saw five questions, never a sixth


def test_the_cap_must_allow_a_question() -> None:
    with pytest.raises(ValueError, match="max_questions"):
        Server("nothing", max_questions=0)


async def test_the_default_cap_leaves_ordinary_tools_alone() -> None:
    answers = iter([True, True, False])

    async def answer(request: ElicitRequest) -> ElicitationResult[Any]:
        return ElicitationResult.accept({"again": next(answers)})

    async with Client(looping_server(cap=Server("x").max_questions), elicitation_callback=answer) as client:
        assert (await client.call_tool("keep_asking", {})).text == "stopped after 3"


# -- the principal -------------------------------------------------------------------------


def principal_server() -> Server:
    server = Server("bound", principal=lambda ctx: ctx.meta.get("example.com/user"))

    @server.tool()
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Go ahead?", Again, key="go")
        return f"go={answer.data.again}" if answer.action == "accept" else answer.action

    return server


def as_user(user: str) -> dict[str, Any]:
    return meta(**{"example.com/user": user})


async def test_defect_18_a_state_sealed_for_one_principal_is_refused_for_another() -> None:
    server = principal_server()
    async with memory_wire(server) as wire:
        client = Modern(wire)
        first = input_required(await client.call("confirm", envelope=as_user("alice")))
        state = first["requestState"]

        async def retry(user: str) -> Any:
            return await client.request(
                "tools/call",
                {
                    "name": "confirm",
                    "arguments": {},
                    "inputResponses": {"go": accept(again=True)},
                    "requestState": state,
                },
                envelope=as_user(user),
            )

        refused = await retry("bob")
        assert refused.error["code"] == -32602
        assert refused.error["message"] == PUBLIC_MESSAGE
        done = complete(await retry("alice"))
        assert done["content"][0]["text"] == "go=True"


async def test_without_a_principal_hook_state_is_not_bound_to_one() -> None:
    server = Server("unbound")

    @server.tool()
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Go ahead?", Again, key="go")
        return f"go={answer.data.again}" if answer.action == "accept" else answer.action

    async with memory_wire(server) as wire:
        client = Modern(wire)
        first = input_required(await client.call("confirm", envelope=as_user("alice")))
        params = {"name": "confirm", "arguments": {}, "inputResponses": {"go": accept(again=False)}}
        params["requestState"] = first["requestState"]
        done = complete(await client.request("tools/call", params, envelope=as_user("bob")))
        assert done["content"][0]["text"] == "go=False"


# -- the principal an HTTP authentication layer vouches for ---------------------------------


@asynccontextmanager
async def _served_behind_auth(server: Server) -> AsyncIterator[str]:
    """The endpoint behind a stand-in for an authentication middleware: ``X-Test-User`` becomes
    ``scope["user"]``, as Starlette's AuthenticationMiddleware would set it."""
    from starlette.authentication import SimpleUser

    handler = StreamableHTTPHandler(server)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            user = dict(scope["headers"]).get(b"x-test-user")
            if user:
                scope["user"] = SimpleUser(user.decode())
        await handler(scope, receive, send)

    async with asgi_in_process(app) as base:
        yield f"{base}/mcp"


async def test_defect_18_over_http_a_state_is_bound_to_the_authenticated_user() -> None:
    server = Server("bound-by-auth")

    @server.tool()
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Go ahead?", Again, key="go")
        return f"go={answer.data.again}" if answer.action == "accept" else answer.action

    async with _served_behind_auth(server) as url, httpx.AsyncClient(timeout=10) as http:
        client = Modern(HttpWire(http, url))

        async def call(user: str, **extra: Any) -> Any:
            headers = {**headers_for("tools/call", {"name": "confirm"}), "X-Test-User": user}
            params = {"name": "confirm", "arguments": {}, **extra}
            return await client.request("tools/call", params, headers=headers)

        state = input_required(await call("alice"))["requestState"]
        answered = {"inputResponses": {"go": accept(again=True)}, "requestState": state}
        refused = await call("mallory", **answered)
        assert (refused.status, refused.error["message"]) == (400, PUBLIC_MESSAGE)
        assert complete(await call("alice", **answered))["content"][0]["text"] == "go=True"
