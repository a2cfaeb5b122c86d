"""2026-07-28 rounds and tasks through the same balancer (issue 14): three instances behind a
round-robin haproxy without stickiness, sharing only Redis (tasks, spent rounds) and the state
keys. Our client talks to the balancer; every request may land on any instance.

* rounds: 50 two-round calls, each retry elsewhere, nothing lost or crossed; a replayed
  ``requestState`` is refused on another instance (single-use rounds, fleet-wide);
* a task created on one instance, read on the next, answered on the third, which finishes it;
* the instance running a task is SIGKILLed: another takes the task over and finishes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from elicitkit import Client, ElicitationResult, MCPError
from elicitkit.client.rounds import InputRequiredResult
from elicitkit.elicitation.requests import ElicitRequest, FormRequest
from elicitkit.protocol.errors import INVALID_PARAMS
from elicitkit.server.rounds.keys import ENV_VAR as STATE_KEYS
from elicitkit.server.rounds.keys import KeyRing
from elicitkit.tasks import TaskHandle
from kit.fleet import Balancer, RedisServer, redis_server, round_robin
from kit.processes import serve_on_free_port

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

SCRIPT = Path(__file__).with_name("_stateless_server.py")
INSTANCES = 3


@dataclass
class Fleet:
    """The balancer, the instances by pid, and the directory their side effects go to."""

    balancer: Balancer
    processes: dict[int, subprocess.Popen[bytes]]
    directory: Path
    order: list[int]  # the pids in the balancer's rotation, learned by asking whoami

    @property
    def url(self) -> str:
        return self.balancer.url

    def lines(self, name: str) -> list[str]:
        path = self.directory / name
        return path.read_text().splitlines() if path.exists() else []


@contextlib.contextmanager
def _instances(redis: RedisServer, directory: Path) -> Iterator[tuple[dict[int, subprocess.Popen[bytes]], list[int]]]:
    """The instances, by pid, and their ports; each started once it serves HTTP, all stopped after."""
    env = {**os.environ, STATE_KEYS: KeyRing.generate_secret()}  # the one secret every instance shares
    env.pop("ELICITKIT_REDIS_URL", None)  # this fleet shares tasks and rounds only, wired by the script
    prefix = f"fleet-{uuid.uuid4().hex[:8]}:"
    argv = [str(SCRIPT), redis.url, prefix, str(directory)]
    with contextlib.ExitStack() as stack:
        processes: dict[int, subprocess.Popen[bytes]] = {}
        ports: list[int] = []
        for index in range(INSTANCES):
            port, proc, _log = stack.enter_context(
                serve_on_free_port(
                    lambda port: [sys.executable, argv[0], str(port), *argv[1:]], f"fleet instance {index}", env=env
                )
            )
            processes[proc.pid] = proc
            ports.append(port)
        yield processes, ports


@pytest.fixture(scope="module")
def fleet_parts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Balancer, dict[int, Any], Path]]:
    """Redis, three instances and haproxy, once for the module (the last test kills an instance)."""
    directory = tmp_path_factory.mktemp("fleet")
    with redis_server() as redis, _instances(redis, directory) as (processes, ports), round_robin(ports) as balancer:
        yield balancer, processes, directory


@pytest.fixture
async def fleet(fleet_parts: tuple[Balancer, dict[int, subprocess.Popen[bytes]], Path]) -> AsyncIterator[Fleet]:
    balancer, processes, directory = fleet_parts
    alive = {pid: proc for pid, proc in processes.items() if proc.poll() is None}
    order: list[int] = []
    async with Client(balancer.url, mode="modern") as client:
        for _ in range(len(alive)):
            order.append(int((await client.call_tool("whoami")).text))
    assert sorted(order) == sorted(alive), "each instance answers once in a round of the balancer"
    yield Fleet(balancer, alive, directory, order)


async def steer(client: Client, fleet: Fleet, pid: int) -> None:
    """Make the balancer send this client's next request to instance ``pid``.

    Round robin with no other traffic: after the instance before it in the rotation answered a
    whoami, the next request goes to ``pid``.
    """
    before = fleet.order[(fleet.order.index(pid) - 1) % len(fleet.order)]
    for _ in range(2 * len(fleet.order)):
        if int((await client.call_tool("whoami")).text) == before:
            return
    raise AssertionError(f"the balancer does not rotate as learned: {fleet.order}")


async def never(request: ElicitRequest) -> ElicitationResult[Any]:
    """The callback of a client that answers by hand (it declares elicitation, never asked)."""
    raise AssertionError(f"not expected to be asked: {request}")


# ----------------------------------------------------------------------------- (a) rounds


async def test_fifty_two_round_calls_through_the_balancer_lose_and_cross_nothing(fleet: Fleet) -> None:
    async def person(request: ElicitRequest) -> ElicitationResult[Any]:
        assert isinstance(request, FormRequest)
        found = re.fullmatch(r"n=(\d+) (first|second)", request.message)
        assert found is not None, request.message
        return ElicitationResult.accept({"value": f"{found.group(2)[0]}{found.group(1)}"})

    async with Client(fleet.url, mode="modern", elicitation_callback=person) as client:
        limit = asyncio.Semaphore(8)

        async def one(n: int) -> str:
            async with limit:
                return (await client.call_tool("book", {"n": n})).text

        results = await asyncio.gather(*(one(n) for n in range(50)))
    for n, text in enumerate(results):  # each call got its own answers: none lost, none swapped
        assert re.fullmatch(rf"n={n} first=f{n} second=s{n} by=\d+", text), text
    runs: dict[int, list[int]] = {}
    for line in fleet.lines("book-runs"):
        n, pid = map(int, line.split())
        runs.setdefault(n, []).append(pid)
    assert all(len(runs[n]) == 3 for n in range(50)), runs  # three rounds each, no more
    assert set().union(*runs.values()) == set(fleet.processes)  # every instance served rounds
    spread = sum(len(set(pids)) > 1 for pids in runs.values())
    assert spread >= 25, f"only {spread} of 50 calls had rounds on more than one instance"  # sticky: 0


async def test_a_question_that_differs_per_instance_is_named_as_the_cause(fleet: Fleet) -> None:
    """Issue 28, point 5: a question naming the process ended in TooManyInputRounds after 10
    rounds; the retry that lands on another instance now says the replay contract is broken."""

    async def person(request: ElicitRequest) -> ElicitationResult[Any]:
        return ElicitationResult.accept({"value": "v"})

    async with Client(fleet.url, mode="modern", elicitation_callback=person) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("careless", {})
    assert "replay contract" in info.value.message and info.value.data == {"replayMismatch": "q1"}


async def test_a_replayed_round_is_refused_on_another_instance(fleet: Fleet) -> None:
    order = f"order-{uuid.uuid4().hex[:6]}"
    async with Client(fleet.url, mode="modern", elicitation_callback=never) as client:
        await steer(client, fleet, fleet.order[0])
        pending = await client.call_tool("pay", {"order": order}, input_required="return")
        assert isinstance(pending, InputRequiredResult)
        responses = {key: {"action": "accept", "content": {"value": "yes"}} for key in pending.input_requests}
        first = await client.resume(pending, responses)  # lands on order[1]
        assert isinstance(first, dict) and first["content"][0]["text"] == f"paid {order} on {fleet.order[1]}"
        for _ in range(INSTANCES):  # the same state again, on each instance in turn
            with pytest.raises(MCPError) as replayed:
                await client.resume(pending, responses)
            assert replayed.value.code == INVALID_PARAMS
    assert [line for line in fleet.lines("payments") if line.startswith(order)] == [f"{order} yes {fleet.order[1]}"]


# ----------------------------------------------------------------------------- (b) a task across instances


async def test_a_task_is_created_read_answered_and_finished_on_three_instances(fleet: Fleet) -> None:
    item = f"item-{uuid.uuid4().hex[:6]}"
    creator, reader, answerer = fleet.order
    async with Client(fleet.url, mode="modern") as client:
        await steer(client, fleet, creator)
        handle = await client.start_task("approve", {"item": item})
        assert isinstance(handle, TaskHandle)

        deadline = time.monotonic() + 15
        while True:  # the first run (on the creator) stops at the question
            await steer(client, fleet, reader)
            task = await client.get_task(handle.task_id)
            if task["status"] == "input_required":
                break
            assert task["status"] == "working" and time.monotonic() < deadline, task
            await asyncio.sleep(0.05)
        ((key, question),) = task["inputRequests"].items()
        assert question["params"]["message"] == f"Approve {item}?"

        await steer(client, fleet, answerer)
        await client.answer_task(handle.task_id, {key: {"action": "accept", "content": {"value": "approved"}}})
        result = await client.follow_task(handle.task_id)  # polls land anywhere
    assert result.text == f"{item}: approved (finished by {answerer})"  # the answering instance ran the rest
    assert [line for line in fleet.lines("approvals") if line.startswith(item)] == [f"{item} approved {answerer}"]
    # the body ran twice: up to the question on the creator, then from the top on the answerer
    assert [line for line in fleet.lines("approval-runs") if line.startswith(item)] == [
        f"{item} {creator}",
        f"{item} {answerer}",
    ]


# ----------------------------------------------------------------------------- (c) its instance dies


async def test_the_instance_running_a_task_dies_and_another_finishes_it(fleet: Fleet) -> None:
    name = f"job-{uuid.uuid4().hex[:6]}"
    marker = fleet.directory / f"{name}.started"
    async with Client(fleet.url, mode="modern") as client:
        handle = await client.start_task("long_job", {"name": name})
        assert isinstance(handle, TaskHandle)
        for _ in range(200):
            if marker.exists() and marker.read_text():
                break
            await asyncio.sleep(0.05)
        victim = int(marker.read_text())
        process = fleet.processes[victim]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        started = time.monotonic()
        result = await asyncio.wait_for(client.follow_task(handle.task_id), 20)
        took_over_in = time.monotonic() - started
    found = re.fullmatch(rf"{name} finished by (\d+)", result.text)
    assert found is not None, result.text
    assert int(found.group(1)) in set(fleet.processes) - {victim}
    assert took_over_in < 10, f"the takeover took {took_over_in:.1f}s"
