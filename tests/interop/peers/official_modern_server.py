"""``official_server.py`` plus tools whose questions are lifted into resolvers (official SDK).

Usage::

    python official_modern_server.py stdio
    python official_modern_server.py http PORT   # Streamable HTTP at http://127.0.0.1:PORT/mcp

With a 2026-07-28 client the SDK answers these tools with ``InputRequiredResult`` rounds
(``Elicit`` markers batched into ``inputRequests``, outcomes carried in ``requestState``):

* ``delete_folder(path)``: asks for a confirmation (one round).
* ``register(team)``: asks for a name, then (depending on it) for an age: two rounds.
* ``where_am_i``: asks for the client's roots.

Nothing here imports elicitkit.
"""

from __future__ import annotations

import sys
from typing import Annotated

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Elicit, ListRoots, Resolve
from mcp_types import ListRootsResult
from official_server import main, server
from pydantic import BaseModel, Field


class Confirm(BaseModel):
    confirm: bool = Field(description="Really delete?")


class Name(BaseModel):
    name: str = Field(description="Your name")


class Age(BaseModel):
    age: int = Field(description="Your age")


def ask_confirmation(path: str) -> Elicit[Confirm]:
    return Elicit(f"Delete {path}?", Confirm)


@server.tool(description="Delete a folder once the user confirms.")
def delete_folder(path: str, confirmation: Annotated[ElicitationResult[Confirm], Resolve(ask_confirmation)]) -> str:
    if isinstance(confirmation, AcceptedElicitation) and confirmation.data.confirm:
        return f"deleted {path}"
    return f"kept {path}"


def ask_name(team: str) -> Elicit[Name]:
    return Elicit(f"Who joins {team}?", Name)


def ask_age(name: Annotated[Name, Resolve(ask_name)]) -> Elicit[Age]:
    return Elicit(f"How old is {name.name}?", Age)


@server.tool(description="Register someone: asks for a name, then for an age.")
def register(team: str, name: Annotated[Name, Resolve(ask_name)], age: Annotated[Age, Resolve(ask_age)]) -> str:
    return f"{name.name} ({age.age}) joins {team}"


def fetch_roots() -> ListRoots:
    return ListRoots()


@server.tool(description="Report the client's roots.")
def where_am_i(roots: Annotated[ListRootsResult, Resolve(fetch_roots)]) -> str:
    return ", ".join(str(root.uri) for root in roots.roots)


if __name__ == "__main__":
    main(sys.argv)
