"""The elicitation tools the server/client tests talk to.

Imported by the in-memory tests (``build_server()``), and run as a script for the stdio tests::

    python tests/elicitation/elicit_server.py

which serves the same tools on stdin/stdout and logs to stderr at INFO, so a test can read
what the server dropped. Every tool records what ``ctx.elicit`` gave it in ``state.outcomes``
(one entry per question asked, or ``"cancelled"``) and answers with a small dict, so the
tests see from the client side exactly what the tool saw.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from elicitkit import Context, MCPError, Server
from elicitkit.elicitation.errors import ElicitationError, ElicitationFailed, InvalidAnswer, UrlElicitationRequired
from elicitkit.elicitation.requests import UrlRequest
from elicitkit.elicitation.results import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationResult,
)


class Person(BaseModel):
    name: Annotated[str, Field(min_length=1, description="Your name")]
    age: Annotated[int, Field(ge=0, le=150)]
    newsletter: bool = False


class Shipping(BaseModel):
    city: str
    express: bool = False
    plan: Literal["standard", "priority"] = "standard"


SCALARS: dict[str, Any] = {
    "int": int,
    "bool": bool,
    "float": float,
    "str": str,
    "plan": Literal["free", "pro"],
    "tags": list[Literal["red", "green", "blue"]],
}


@dataclass
class State:
    outcomes: list[Any] = field(default_factory=list)
    completed: set[str] = field(default_factory=set)
    auth_attempts: int = 0


def _jsonable(data: Any) -> Any:
    if isinstance(data, BaseModel):
        return {"model": type(data).__name__, **data.model_dump(mode="json")}
    return data


def describe(result: ElicitationResult[Any]) -> dict[str, Any]:
    match result:
        case AcceptedElicitation(data=data):
            return {"action": "accept", "data": _jsonable(data), "type": type(data).__name__}
        case DeclinedElicitation():
            return {"action": "decline"}
        case CancelledElicitation():
            return {"action": "cancel"}
    raise AssertionError(result)


def build_server() -> tuple[Server, State]:
    server = Server("elicit-test", "1.0.0", title="Elicitation test server")
    state = State()

    async def asking(ask: Any) -> dict[str, Any]:
        """Run one question and record its single outcome (or the error, or the cancellation)."""
        try:
            result = await ask
        except ElicitationFailed as exc:  # the client answered with an error, carried in .error
            state.outcomes.append(f"ElicitationFailed {exc.error.code}")
            return {"error": "ElicitationFailed", "code": exc.error.code, "message": exc.error.message}
        except ElicitationError as exc:
            state.outcomes.append(type(exc).__name__)
            return {"error": type(exc).__name__, "message": str(exc)}
        except MCPError as exc:
            state.outcomes.append(f"MCPError {exc.code}")
            return {"error": "MCPError", "code": exc.code, "message": exc.message}
        except BaseException:
            state.outcomes.append("cancelled")
            raise
        state.outcomes.append(result.action.value)
        return describe(result)

    @server.tool()
    async def ask_person(ctx: Context, timeout: float | None = None) -> dict[str, Any]:
        """Ask the user who they are."""
        return await asking(ctx.elicit("Who are you?", Person, timeout=timeout))

    @server.tool()
    async def ask_shipping(ctx: Context) -> dict[str, Any]:
        """Ask for a shipping address (fields with defaults)."""
        return await asking(ctx.elicit("Where should we ship?", Shipping))

    @server.tool()
    async def ask_scalar(ctx: Context, kind: str) -> dict[str, Any]:
        """Ask for one value of the given kind."""
        return await asking(ctx.elicit(f"Give me a {kind}", SCALARS[kind]))

    @server.tool()
    async def wizard(ctx: Context) -> dict[str, Any]:
        """Two typed questions in one call."""
        first = await asking(ctx.elicit("Step 1: who are you?", Person))
        if first.get("action") != "accept":
            return {"steps": [first]}
        second = await asking(ctx.elicit(f"Step 2: which plan, {first['data']['name']}?", SCALARS["plan"]))
        return {"steps": [first, second]}

    @server.tool()
    async def ask_twice(ctx: Context, attempts: int = 2) -> dict[str, Any]:
        """Re-ask once when the answer does not fit; report InvalidAnswer when attempts run out."""
        try:
            result = await ctx.elicit("Who are you?", Person, max_attempts=attempts)
        except InvalidAnswer as exc:
            state.outcomes.append("InvalidAnswer")
            return {"error": "InvalidAnswer", "reason": exc.reason, "answer": exc.answer}
        state.outcomes.append(result.action.value)
        return describe(result)

    @server.tool()
    async def ask_url(
        ctx: Context, url: str = "https://example.com/connect", elicitation_id: str = ""
    ) -> dict[str, Any]:
        """Send the user to a URL."""
        return await asking(ctx.elicit_url("Please connect your account", url, elicitation_id or None))

    @server.tool()
    async def ask_dict(ctx: Context, requested: dict[str, Any]) -> dict[str, Any]:
        """Ask with a hand-written schema; a bad schema escapes as the -32602 it raises."""
        try:
            result = await ctx.request_elicitation("Fill this in", requested)
        except ElicitationError as exc:
            return {"error": type(exc).__name__}
        state.outcomes.append(result.action.value)
        return describe(result)

    @server.tool()
    async def ask_elicit_dict(ctx: Context, requested: dict[str, Any]) -> dict[str, Any]:
        """``ctx.elicit`` with a dict schema (issue 12 #4: it failed with "unhashable type")."""
        return await asking(ctx.elicit("Fill this in", requested))

    @server.tool()
    async def ask_uncaught(ctx: Context) -> str:
        """Ask without catching anything: what the framework makes of each failure."""
        result = await ctx.elicit("Who are you?", Person)
        return result.action.value

    @server.tool()
    async def send_raw(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        """Send ``elicitation/create`` exactly as given (no gate), to see how the client judges it."""
        try:
            answer = await ctx.request_context.send_request("elicitation/create", params, timeout=5)
        except MCPError as exc:
            return {"code": exc.code, "message": exc.message}
        return {"answer": answer}

    @server.tool()
    async def complete(ctx: Context, elicitation_id: str) -> str:
        """Mark a URL elicitation finished and tell the client."""
        state.completed.add(elicitation_id)
        await ctx.elicit_complete(elicitation_id)
        return "ok"

    @server.tool()
    async def needs_auth(ctx: Context, key: str = "gh") -> str:
        """Fails with -32042 until ``complete(auth-<key>)`` was called."""
        elicitation_id = f"auth-{key}"
        if elicitation_id in state.completed:
            return f"authorized {key}"
        state.auth_attempts += 1
        raise UrlElicitationRequired(
            [UrlRequest(f"Authorize {key}", f"https://auth.example.com/{key}?state=xyz", elicitation_id)],
            "Authorization required",
        )

    @server.tool()
    async def always_auth(ctx: Context) -> str:
        """Always fails with the same -32042, however often it is retried."""
        state.auth_attempts += 1
        raise UrlElicitationRequired([UrlRequest("Authorize", "https://auth.example.com/loop", "auth-loop")])

    @server.tool()
    async def outcomes() -> dict[str, Any]:
        """What the tools saw so far (for the stdio tests)."""
        return {"outcomes": list(state.outcomes), "auth_attempts": state.auth_attempts}

    return server, state


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
    build_server()[0].run()
