"""2026 hosts and the backend call that waits for them: parked between rounds, found again by the
sealed state; found in no process, replayed from the top and answered from the state."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from elicitkit import Client, MCPError
from elicitkit.client.rounds import InputRequiredResult
from elicitkit.gateway import Gateway, parse_config
from elicitkit.server.rounds import AeadStateCodec, KeyRing
from kit.raw import wait_until

from .support import Person, backends

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


KEYS = KeyRing.generate()


@pytest.fixture(scope="module")
async def gateways(state: Path) -> AsyncIterator[tuple[Gateway, Gateway]]:
    """Two gateway instances sharing their state keys (as a fleet would), each with its own backends."""
    config = parse_config({"name": "gw", "backends": backends(official=False)})
    one, two = (Gateway(config, state_codec=AeadStateCodec(KEYS)) for _ in range(2))
    async with one.running(), two.running():
        yield one, two


def runs(state: Path, mark: str) -> int:
    return int((state / f"runs-{mark}").read_text())


@pytest.mark.parametrize("backend", ["old", "new"])
async def test_a_2025_question_becomes_a_2026_round_and_the_backend_call_waits(
    gateways: tuple[Gateway, Gateway], state: Path, backend: str
) -> None:
    gateway = gateways[0]
    mark = f"parked-{backend}"
    async with Client(gateway, mode="modern", elicitation_callback=Person()) as client:
        pending = await client.call_tool(f"{backend}.book_counted", {"mark": mark}, input_required="return")
        assert isinstance(pending, InputRequiredResult)
        [(key, request)] = pending.input_requests.items()
        assert (key, request.method, request.params["message"]) == ("g1", "elicitation/create", "Who is booking?")
        assert len(gateway.parked) == 1  # the backend call waits on the gateway
        done: Any = await client.resume(pending)
    assert done["content"][0]["text"] == "booked 3 for Ada"
    assert len(gateway.parked) == 0
    # a 2025 backend's tool ran once: its call waited, its question answered in place; a 2026
    # backend's own rounds replay it (its replay contract), once per round
    assert runs(state, mark) == (1 if backend == "old" else 2)


@pytest.mark.parametrize("backend", ["old", "new"])
async def test_a_retry_on_another_instance_replays_the_backend_and_is_answered_from_the_state(
    gateways: tuple[Gateway, Gateway], state: Path, backend: str
) -> None:
    one, two = gateways
    mark = f"moved-{backend}"
    person = Person()
    async with Client(one, mode="modern", elicitation_callback=person) as first:
        pending = await first.call_tool(f"{backend}.book_counted", {"mark": mark}, input_required="return")
        assert isinstance(pending, InputRequiredResult)
        answers = await first.answer_input_requests(pending)
    async with Client(two, mode="modern", elicitation_callback=person) as second:
        done: Any = await second.resume(pending, answers)
    assert done["content"][0]["text"] == "booked 3 for Ada"
    assert runs(state, mark) == (2 if backend == "old" else 3)  # the other instance started the call again
    assert len(two.parked) == 0


async def test_a_round_the_host_never_finishes_expires(gateways: tuple[Gateway, Gateway]) -> None:
    gateway = gateways[1]  # (the first still holds the calls the other instance finished)
    assert len(gateway.parked) == 0
    ttl, gateway.parked.ttl = gateway.parked.ttl, 0.2
    try:
        async with Client(gateway, mode="modern", elicitation_callback=Person()) as client:
            pending = await client.call_tool("old.book", input_required="return")
        assert isinstance(pending, InputRequiredResult) and len(gateway.parked) == 1
        await wait_until(lambda: len(gateway.parked) == 0, 5, "the parked call to expire")
    finally:
        gateway.parked.ttl = ttl


async def test_a_backend_whose_connections_all_wait_on_hosts_says_so(state: Path) -> None:
    config = parse_config({"backends": [{**backends(official=False)[0], "max_connections": 1}]})
    async with Gateway(config).running() as gateway:
        gateway.backends["old"].busy_wait = 0.2
        async with Client(gateway, mode="modern", elicitation_callback=Person()) as client:
            pending = await client.call_tool("old.book", input_required="return")
            assert isinstance(pending, InputRequiredResult)  # holds the one connection
            with pytest.raises(MCPError, match="all 1 connections are busy"):
                await client.call_tool("old.book", input_required="return")
            done: Any = await client.resume(pending)  # the parked call still finishes
        assert done["content"][0]["text"] == "booked 3 for Ada"


async def test_a_call_parked_again_gets_a_fresh_wait(gateways: tuple[Gateway, Gateway], state: Path) -> None:
    """Each round's parking has its own timer: a host that answers round one just before the
    first timer ends still has the whole wait for round two."""
    gateway = gateways[1]
    ttl, gateway.parked.ttl = gateway.parked.ttl, 0.6
    try:
        async with Client(gateway, mode="modern", elicitation_callback=Person()) as client:
            first = await client.call_tool("old.two_questions", {"mark": "fresh"}, input_required="return")
            assert isinstance(first, InputRequiredResult)
            await anyio.sleep(0.4)
            second = await client.resume(first, input_required="return")  # parked again, at 0.4 s
            assert isinstance(second, InputRequiredResult) and list(second.input_requests) == ["g2"]
            await anyio.sleep(0.4)  # past the first parking's 0.6 s, within the second's
            done: Any = await client.resume(second)
        assert done["content"][0]["text"] == "Ada, then Ada"
        assert runs(state, "fresh") == 1  # the same backend call all along, never replayed
    finally:
        gateway.parked.ttl = ttl
