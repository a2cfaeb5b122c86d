"""An elicitkit server behind oidc-provider's bearer tokens, for the OAuth client tests.

    python protected_server.py PORT ISSUER

Serves MCP at ``http://127.0.0.1:PORT/mcp`` behind :class:`kit.oidc.bearer.BearerGate` (RFC 9728
metadata pointing at ISSUER; JWT access tokens checked against ISSUER's JWKS). ``/_stats``,
outside the gate, tells a test what the gate saw. ``greet`` asks the person's name (a form), so
a test answers a question over an authorized connection; ``whoami`` only answers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import uvicorn
from pydantic import BaseModel, Field
from starlette.types import Receive, Scope, Send

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for kit.oidc

from elicitkit import AcceptedElicitation, Context, Server
from elicitkit.transports.http.serve import create_app
from kit.oidc.bearer import BearerGate

server = Server("protected", "1.0.0")


class Name(BaseModel):
    name: str = Field(description="Your name")


@server.tool()
async def greet(ctx: Context) -> str:
    """Ask the person's name, then greet them."""
    answer = await ctx.elicit("Who is calling?", Name)
    if isinstance(answer, AcceptedElicitation):
        return f"Hello, {answer.data.name}!"
    return f"No name given ({answer.action})."


@server.tool()
def whoami() -> str:
    """Answer without asking anything."""
    return "a protected server"


def build(port: int, issuer: str) -> tuple[BearerGate, object]:
    gate = BearerGate(create_app(server), resource=f"http://127.0.0.1:{port}/mcp", issuer=issuer)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/_stats":
            body = json.dumps({"seen": dict(gate.seen), "subjects": gate.subjects}).encode()
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await gate(scope, receive, send)

    return gate, app


if __name__ == "__main__":
    _gate, application = build(int(sys.argv[1]), sys.argv[2])
    uvicorn.run(application, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="on")  # type: ignore[arg-type]
