"""Our Client, 2026-07-28 era, against a server written with the official ``mcp`` SDK (HTTP).

The official ``MCPServer`` answers resolver-backed tools with ``InputRequiredResult`` rounds;
our client answers the embedded questions through its ordinary callbacks and retries.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from elicitkit import Client, MCPError
from elicitkit.client.rounds import InputRequiredResult
from elicitkit.elicitation.requests import ElicitRequest, FormRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.protocol.versions import Era

from .support import PEERS, http_server_process

pytestmark = [pytest.mark.anyio, pytest.mark.interop, pytest.mark.timeout(60)]

MODERN_SERVER = PEERS / "official_modern_server.py"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with http_server_process(MODERN_SERVER) as found:
        yield found


class Person:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any]:
        assert isinstance(request, FormRequest)
        self.asked.append(request.message)
        props = request.requested_schema["properties"]
        if "confirm" in props:
            return ElicitationResult.accept({"confirm": True})
        if "name" in props:
            return ElicitationResult.accept({"name": "Ada"})
        return ElicitationResult.accept({"age": 36})


@pytest.mark.parametrize("mode", ["modern", "auto"])
async def test_one_round_confirmation(url: str, mode: Any) -> None:
    person = Person()
    async with Client(url, mode=mode, elicitation_callback=person) as client:
        assert client.era is Era.MODERN
        assert client.protocol_version == "2026-07-28"
        assert client.server_info.get("name") == "official-peer"
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "confirmation" not in tools["delete_folder"].input_schema.get("properties", {})
        result = await client.call_tool("delete_folder", {"path": "/tmp/x"})
    assert result.text == "deleted /tmp/x"
    assert person.asked == ["Delete /tmp/x?"]


async def test_two_rounds_with_state(url: str) -> None:
    person = Person()
    async with Client(url, mode="modern", elicitation_callback=person) as client:
        result = await client.call_tool("register", {"team": "blue"})
    assert result.text == "Ada (36) joins blue"
    assert person.asked == ["Who joins blue?", "How old is Ada?"]


async def test_roots_input_request(url: str) -> None:
    roots = [{"uri": "file:///work/project", "name": "project"}]
    async with Client(url, mode="modern", roots=roots) as client:
        result = await client.call_tool("where_am_i", {})
    assert result.text == "file:///work/project"


async def test_manual_mode_resumed_by_a_second_client(url: str) -> None:
    async with Client(url, mode="modern", elicitation_callback=Person()) as first:
        pending = await first.call_tool("register", {"team": "red"}, input_required="return")
    assert isinstance(pending, InputRequiredResult)
    [(key, question)] = pending.input_requests.items()
    assert question.method == "elicitation/create"
    stored = pending.to_json()

    restored = InputRequiredResult.from_json(stored)
    async with Client(url, mode="modern", elicitation_callback=Person()) as second:
        responses = {key: {"action": "accept", "content": {"name": "Grace"}}}
        step = await second.resume_tool(
            "register", {"team": "red"}, responses, restored.request_state, input_required="return"
        )
        assert isinstance(step, InputRequiredResult)
        assert step.request_state is not None
        final = await second.resume(step)
    assert not isinstance(final, InputRequiredResult)
    assert final["content"][0]["text"] == "Grace (36) joins red"


async def test_without_the_capability_the_server_refuses_with_32021(url: str) -> None:
    """No elicitation declared: the server must not ask; it refuses the call with -32021."""
    async with Client(url, mode="modern") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("delete_folder", {"path": "/tmp/y"})
    assert caught.value.code == -32021
    assert caught.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}
