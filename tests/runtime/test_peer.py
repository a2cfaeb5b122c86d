"""The peer's edges: a handler that outlives its connection answers nobody and raises nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from elicitkit.protocol.connection import Role
from elicitkit.protocol.errors import MCPError
from elicitkit.runtime.peer import IncomingRequest, Peer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("outcome", ["result", "error"])
async def test_a_handler_that_ends_after_its_connection_closed_sends_nothing(
    outcome: str,
) -> None:
    """The connection closes while the handler is finishing (here: the handler closes it, as a
    person's answer arriving as the medium dies would); its answer has nowhere to go and must
    not turn into a protocol error."""
    sent: list[Any] = []
    finished = anyio.Event()
    handlers: list[asyncio.Task[Any]] = []

    async def send(message: Any, related: Any = None) -> None:
        sent.append(message)

    async def on_request(request: IncomingRequest) -> dict[str, Any]:
        handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            peer.close("the medium went away")
            if outcome == "error":
                raise MCPError(-32000, "too late")
            return {"late": True}
        finally:
            finished.set()

    peer = Peer(Role.CLIENT, send, on_request=on_request)
    async with peer:
        await peer.feed({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": {}})
        with anyio.fail_after(5):
            await finished.wait()
        await anyio.sleep(0.05)  # let the handler task reach its answer
    assert handlers and handlers[0].done()
    # The task's own exception would surface only as "Task exception was never retrieved".
    assert handlers[0].cancelled() or handlers[0].exception() is None
    assert sent == []
