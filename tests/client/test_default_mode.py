"""Why ``Client``'s (and ``elicitkit call``'s) default mode is ``legacy``: the measurement, kept.

The official ``mcp`` SDK's servers answer ``server/discover``, so ``mode="auto"`` speaks
2026-07-28 to them; their tools that ask (``ctx.elicit``) then fail, because that SDK asks over
a 2025 back-channel only. With the handshake the same tool works. If this test starts failing
because ``auto`` works too, the default can become ``auto`` (docs/modern.md, the client section).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from elicitkit import Client
from elicitkit.cli import call
from elicitkit.client.client import DEFAULT_MODE
from elicitkit.elicitation.requests import ElicitRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.protocol.errors import MCPError
from elicitkit.protocol.versions import Era

pytest.importorskip("mcp")
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

OFFICIAL = Path(__file__).parents[1] / "interop" / "peers" / "official_server.py"


async def _contact(request: ElicitRequest) -> ElicitationResult[Any]:
    return ElicitationResult.accept({"name": "Ada", "age": 36})


def test_the_default_is_legacy_for_the_client_and_the_cli() -> None:
    assert DEFAULT_MODE == "legacy"
    mode = next(p for p in call.params if p.name == "mode")
    assert mode.default == "legacy"


async def test_official_server_asks_with_the_default_and_cannot_on_2026() -> None:
    command = [sys.executable, str(OFFICIAL), "stdio"]
    async with Client(command, elicitation_callback=_contact, timeout=30) as client:
        assert client.era is Era.LEGACY
        assert (await client.call_tool("ask_contact", {})).text == "Hello Ada, age 36"
    async with Client(command, mode="auto", elicitation_callback=_contact, timeout=30) as client:
        assert client.era is Era.MODERN  # it answers server/discover...
        with pytest.raises(MCPError) as caught:  # ...but cannot ask on 2026
            await client.call_tool("ask_contact", {})
    assert "elicitation/create" in caught.value.message
