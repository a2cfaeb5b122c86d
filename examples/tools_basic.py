"""Tools from plain functions: the signature is the input schema, the return type the output.

python examples/tools_basic.py          # serve over stdio (point an MCP client at it)
python examples/tools_basic.py --demo   # connect in memory and show what a client sees
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import anyio
from pydantic import BaseModel, Field

from elicitkit import Client, Context, Server, ToolError

server = Server("tools-basic", "1.0.0", instructions="A calculator and a unit converter.")


class Conversion(BaseModel):
    celsius: float
    fahrenheit: float


@server.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int = 1) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@server.tool(title="Celsius to Fahrenheit")
def to_fahrenheit(celsius: Annotated[float, Field(description="Temperature in °C", ge=-273.15)]) -> Conversion:
    """Convert a temperature."""
    return Conversion(celsius=celsius, fahrenheit=celsius * 9 / 5 + 32)


@server.tool()
async def countdown(n: int, ctx: Context) -> str:
    """Count down from n, reporting progress and logging as it goes."""
    for i in range(n, 0, -1):
        await ctx.report_progress(n - i + 1, n, f"{i}...")
        await ctx.info(f"{i}...")
    return "liftoff"


@server.tool()
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    if b == 0:
        raise ToolError("cannot divide by zero")
    return a / b


async def main() -> None:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        print(f"progress {progress:g}/{total:g}: {message}")

    async with Client(
        server, logging_callback=lambda params: print(f"log {params['level']}: {params['data']}")
    ) as client:
        print("tools:", ", ".join(tool.name for tool in (await client.list_tools()).tools))
        print("add schema:", json.dumps((await client.list_tools()).tools[0].input_schema, sort_keys=True))
        print("add(2, 3) =", (await client.call_tool("add", {"a": 2, "b": 3})).structured_content)
        converted = await client.call_tool("to_fahrenheit", {"celsius": 100})
        print("to_fahrenheit(100) =", converted.structured_content)
        await client.set_logging_level("info")
        done = await client.call_tool("countdown", {"n": 3}, progress_callback=on_progress)
        print("countdown:", done.text)
        failed = await client.call_tool("divide", {"a": 1, "b": 0})
        print(f"divide(1, 0): isError={failed.is_error} {failed.text}")
        bad = await client.call_tool("add", {"a": "two"})
        print(f"add('two'): isError={bad.is_error} {bad.text}")


if __name__ == "__main__":
    if "--demo" in sys.argv[1:]:
        anyio.run(main)
    else:
        server.run()
