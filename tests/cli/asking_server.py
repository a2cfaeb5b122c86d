"""A small elicitkit server for the ``elicitkit call`` tests (stdio: ``python asking_server.py``).

* ``sign_in`` asks with a form that has a ``password`` field: the CLI's sensitive-field guard
  refuses it, and the tool answers with what it got back (the client's error, or the answer).
* ``echo_args`` echoes its arguments as JSON, so a test sees how ``--arg`` text was typed by
  the tool's input schema (optional parameters are ``anyOf`` there).
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from elicitkit import AcceptedElicitation, Context, Server
from elicitkit.elicitation.errors import ElicitationFailed

server = Server("asking", "1.0.0")


class Login(BaseModel):
    username: str = Field("ada", description="Your user name")
    password: str = Field(description="Your password")


@server.tool()
async def sign_in(service: str, ctx: Context) -> str:
    """Ask for a user name and a password with a form (a careful client refuses to)."""
    try:
        answer = await ctx.elicit(f"Sign in to {service}.", Login)
    except ElicitationFailed as exc:
        return f"refused ({exc.error.code}): {exc.error.message}"
    if isinstance(answer, AcceptedElicitation):
        login = answer.data
        return f"signed in to {service} as {login.username} (a password of {len(login.password)} characters)"
    return f"not signed in to {service} ({answer.action})"


@server.tool()
def echo_args(
    note: str | None = None,
    count: int | None = None,
    ratio: float = 1.0,
    flag: bool = False,
    tags: list[str] | None = None,
) -> str:
    """Echo the arguments, as JSON with their types intact."""
    return json.dumps({"note": note, "count": count, "ratio": ratio, "flag": flag, "tags": tags}, sort_keys=True)


if __name__ == "__main__":
    server.run()
