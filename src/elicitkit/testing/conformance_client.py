"""The client under test for the official MCP conformance suite.

The harness runs ``python -m elicitkit.testing.conformance_client <server-url>`` with the
scenario name in ``MCP_CONFORMANCE_SCENARIO`` (and, from 0.2.x on, the protocol version in
``MCP_CONFORMANCE_PROTOCOL_VERSION`` and scenario data in ``MCP_CONFORMANCE_CONTEXT``).
Each scenario is a short coroutine doing what a real client would.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from elicitkit import Client
from elicitkit.elicitation.requests import ElicitRequest
from elicitkit.elicitation.results import ElicitationResult

Scenario = Callable[[str, dict[str, Any]], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {}

log = logging.getLogger("elicitkit.conformance")


def scenario(*names: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        for name in names:
            SCENARIOS[name] = fn
        return fn

    return register


def _client(url: str, **kwargs: Any) -> Client:
    return Client(url, client_info={"name": "elicitkit-conformance-client", "version": "0.1.0"}, timeout=30, **kwargs)


@scenario("initialize")
async def initialize(url: str, context: dict[str, Any]) -> None:
    async with _client(url) as client:
        log.info("connected: %s %s", client.protocol_version, client.server_info)
        await client.list_tools()


@scenario("tools_call")
async def tools_call(url: str, context: dict[str, Any]) -> None:
    async with _client(url) as client:
        tools = await client.list_tools()
        names = [tool.name for tool in tools.tools]
        if "add_numbers" not in names:
            raise SystemExit(f"add_numbers not offered (tools: {names})")
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        log.info("add_numbers -> %s", result.text)


@scenario("sse-retry")
async def sse_retry(url: str, context: dict[str, Any]) -> None:
    async with _client(url) as client:
        result = await client.call_tool("test_reconnection", {})
        log.info("test_reconnection -> %s", result.text)


@scenario("json-schema-2020-12-preservation")
async def json_schema_preservation(url: str, context: dict[str, Any]) -> None:
    async with _client(url) as client:
        tools = await client.list_tools()
        tool = next((t for t in tools.tools if t.name == "json_schema_2020_12_tool"), None)
        if tool is None:
            raise SystemExit("json_schema_2020_12_tool not offered")
        await client.call_tool("json_schema_echo", {"schema": tool.input_schema})


@scenario("elicitation-sep1034-client-defaults", "elicitation-defaults")
async def elicitation_defaults(url: str, context: dict[str, Any]) -> None:
    """Accept without typing anything: the client fills every schema default in (SEP-1034)."""

    async def accept_defaults(request: ElicitRequest) -> ElicitationResult[Any]:
        return ElicitationResult.accept({})

    async with _client(url, elicitation_callback=accept_defaults) as client:
        result = await client.call_tool("test_client_elicitation_defaults", {})
        log.info("test_client_elicitation_defaults -> %s", result.text)


async def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m elicitkit.testing.conformance_client <server-url>", file=sys.stderr)
        return 2
    url = argv[-1]
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    fn = SCENARIOS.get(name)
    if fn is None:
        print(f"unknown scenario {name!r}; known: {', '.join(sorted(SCENARIOS))}", file=sys.stderr)
        return 2
    await fn(url, context)
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    sys.exit(anyio.run(main, sys.argv))
