"""The peer's edges: a handler that outlives its connection answers nobody and raises nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from elicitkit.protocol.connection import Role
from elicitkit.protocol.errors import ConnectionClosed, MCPError, RequestTimeout
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


# -- many parked questions: their deadlines ------------------------------------------------


class _Pair:
    """A server peer asking a client peer whose person never answers (each question waits until
    cancelled); what the client received and what it was told to cancel are recorded."""

    def __init__(self) -> None:
        self.asked: list[Any] = []
        self.cancelled: list[Any] = []
        self.answer: dict[Any, asyncio.Future[dict[str, Any]]] = {}

        async def server_send(message: Any, related: Any = None) -> None:
            if message.get("method") == "notifications/cancelled":
                self.cancelled.append(message["params"]["requestId"])
            await self.client.feed(message)

        async def client_send(message: Any, related: Any = None) -> None:
            await self.server.feed(message)

        async def person(request: IncomingRequest) -> dict[str, Any]:
            self.asked.append(request.id)
            future = self.answer[request.id] = asyncio.get_running_loop().create_future()
            return await future  # never set: a person who does not answer (unless a test does)

        async def nothing(request: IncomingRequest) -> dict[str, Any]:
            return {}

        self.server = Peer(Role.SERVER, server_send, on_request=nothing)
        self.client = Peer(Role.CLIENT, client_send, on_request=person)


async def test_many_parked_questions_all_time_out_with_a_clear_error_and_leave_nothing() -> None:
    pair = _Pair()
    n = 300
    async with pair.server, pair.client:
        loop = asyncio.get_running_loop()
        started = loop.time()
        outcomes = await asyncio.gather(
            *(pair.server.request("elicitation/create", {"i": i}, timeout=0.3) for i in range(n)),
            return_exceptions=True,
        )
        elapsed = loop.time() - started
        assert all(isinstance(outcome, RequestTimeout) for outcome in outcomes), outcomes[:3]
        assert "elicitation/create" in str(outcomes[0]) and "0.3" in str(outcomes[0])
        assert elapsed >= 0.3 - 0.005  # none timed out early
        assert len(pair.asked) == n and sorted(pair.cancelled) == sorted(pair.asked)  # each one told
        # nothing is left of them on the asking side: no waiter, no deadline, no timer
        assert pair.server._waiters == {}
        assert len(pair.server._deadlines) == 0 and pair.server._deadlines.timers() == 0
        assert pair.server.conn.pending_outgoing == 0
        await anyio.sleep(0.05)  # the client's handlers end on the cancellations
        assert pair.client._handlers == {}


async def test_parked_questions_share_a_few_timers() -> None:
    pair = _Pair()
    async with pair.server, pair.client:
        loop = asyncio.get_running_loop()
        scheduled_before = len(loop._scheduled)  # type: ignore[attr-defined]
        tasks = [loop.create_task(pair.server.request("elicitation/create", {"i": i}, timeout=600)) for i in range(500)]
        await anyio.sleep(0.05)
        assert len(pair.asked) == 500
        assert len(pair.server._deadlines) == 500
        assert pair.server._deadlines.timers() <= 2  # 600 s deadlines round to whole seconds
        assert len(loop._scheduled) - scheduled_before <= 2  # type: ignore[attr-defined]
        # answered: the deadline goes with the answer
        for request_id in pair.asked[:100]:
            pair.answer[request_id].set_result({"action": "decline"})
        await asyncio.gather(*tasks[:100])
        assert len(pair.server._deadlines) == 400 and len(pair.server._waiters) == 400
        # cancelled: its state goes, the person is told, the others still wait
        for task in tasks[100:200]:
            task.cancel()
        await asyncio.gather(*tasks[100:200], return_exceptions=True)
        assert all(task.cancelled() for task in tasks[100:200])
        assert len(pair.server._deadlines) == 300 and len(pair.server._waiters) == 300
        assert sorted(pair.cancelled) == sorted(pair.asked[100:200])
        assert not any(task.done() for task in tasks[200:])
        # the connection closes: every waiting one fails as closed, and no timer is left
        pair.server.close()
        outcomes = await asyncio.gather(*tasks[200:], return_exceptions=True)
        assert all(isinstance(outcome, ConnectionClosed) for outcome in outcomes)
        assert len(pair.server._deadlines) == 0 and pair.server._deadlines.timers() == 0


async def test_a_deadline_stands_still_while_timeouts_are_paused() -> None:
    pair = _Pair()
    async with pair.server, pair.client:
        loop = asyncio.get_running_loop()
        started = loop.time()
        asking = loop.create_task(pair.server.request("elicitation/create", {}, timeout=0.2))
        await anyio.sleep(0.05)
        with pair.server.timeouts_paused():
            await anyio.sleep(0.3)  # past the deadline: it waits for the pause to end
            assert not asking.done()
        with pytest.raises(RequestTimeout):
            await asking
        # 0.2 s of its own plus the 0.3 s paused
        assert loop.time() - started >= 0.5 - 0.005
        assert len(pair.server._deadlines) == 0
