"""A two-step deployment wizard: where should it run, then how big should it be. Each step is a typed form.

python examples/elicitation/deploy_wizard.py          # serve over stdio
python examples/elicitation/deploy_wizard.py --demo   # an in-memory client answers the questions

Step one is a choice: a :class:`TitledEnum` (the client shows the titles, the tool gets the
member) and a ``Literal`` with a default. Step two asks for numbers with bounds and a flag.
``rollback`` asks the older way, with a hand-written schema and without a ``Context``.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

import anyio
from pydantic import BaseModel, Field

from elicitkit import (
    AcceptedElicitation,
    Client,
    Context,
    ElicitationResult,
    FormRequest,
    Server,
    TitledEnum,
    UrlRequest,
)

server = Server("deploy-wizard", "1.0.0", instructions="Deploys applications after asking where and how big.")


class Environment(TitledEnum):
    STAGING = "staging", "Staging (safe to break)"
    PRODUCTION = "production", "Production (real customers)"


class Target(BaseModel):
    environment: Environment = Field(description="Where to deploy")
    region: Literal["eu-west", "us-east"] = Field(default="eu-west", description="Data centre")


class Size(BaseModel):
    cpu_cores: int = Field(ge=1, le=32, description="CPU cores")
    memory_gb: int = Field(ge=1, le=128, description="Memory (GB)")
    auto_scale: bool = Field(default=False, description="Add instances under load")


@server.tool()
async def deploy(app_name: str, ctx: Context) -> str:
    """Deploy an application; the wizard asks for the target, then the size."""
    step1 = await ctx.elicit(f"Step 1/2: where should {app_name} run?", Target)
    if not isinstance(step1, AcceptedElicitation):
        return f"Deployment of {app_name} stopped at step 1 ({step1.action})."
    target = step1.data  # a Target: target.environment is an Environment member
    step2 = await ctx.elicit(f"Step 2/2: how big should {app_name} be in {target.environment}?", Size)
    if not isinstance(step2, AcceptedElicitation):
        return f"Deployment of {app_name} stopped at step 2 ({step2.action})."
    size = step2.data
    return (
        f"Deployed {app_name} to {target.environment} in {target.region}: "
        f"{size.cpu_cores} cores, {size.memory_gb} GB, auto-scale {'on' if size.auto_scale else 'off'}."
    )


@server.tool()
async def rollback(app_name: str) -> str:
    """Roll an application back to its previous release, after a yes."""
    answer = await server.request_elicitation(  # no Context parameter: the current request is used
        f"Roll {app_name} back to its previous release?",
        {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]},
    )
    match answer:
        case AcceptedElicitation(data={"confirm": True}):
            return f"Rolled {app_name} back."
    return f"Left {app_name} as it is ({answer.action})."


# ----------------------------------------------------------------------------- the demo

ANSWERS: list[ElicitationResult[Any]] = [
    ElicitationResult.accept({"environment": "production"}),  # region: the client fills in the default
    ElicitationResult.accept({"cpu_cores": 4, "memory_gb": 8}),
    ElicitationResult.accept({"environment": "staging", "region": "us-east"}),
    ElicitationResult.cancel(),  # closes the second form
    ElicitationResult.accept({"confirm": True}),
]


def fields(schema: dict[str, Any]) -> str:
    """A one-line view of a form: each field, with its choices (titles where there are some)."""
    shown = []
    for name, prop in schema["properties"].items():
        choices = [option["title"] for option in prop.get("oneOf", [])] or prop.get("enum", [])
        shown.append(f"{name} [{' | '.join(choices)}]" if choices else name)
    return ", ".join(shown)


async def answer(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
    assert isinstance(request, FormRequest)
    print(f"{request.message}\n  form: {fields(request.requested_schema)}")
    reply = ANSWERS.pop(0)
    print(f"  user: {reply.action} {reply.content or ''}".rstrip())
    return reply


async def main() -> None:
    async with Client(server, elicitation_callback=answer) as client:
        print("deploy ->", (await client.call_tool("deploy", {"app_name": "shop"})).text)
        print("deploy ->", (await client.call_tool("deploy", {"app_name": "blog"})).text)
        print("rollback ->", (await client.call_tool("rollback", {"app_name": "shop"})).text)


if __name__ == "__main__":
    if "--demo" in sys.argv[1:]:
        anyio.run(main)
    else:
        server.run()
