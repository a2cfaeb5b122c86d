"""``requestState`` shared by server processes through ``ELICITKIT_STATE_KEYS``: no sticky routing.

Four ``modern_server.py http`` processes run at once (started together, stopped together,
whatever happens): A and B share one key, C has a key of its own, D has rotated to a new key
and keeps A's as its second. A multi-round call may hop between A and B at every round; C
refuses A's state with the frozen -32602 (the cause only in its log) and serves the same call
from scratch; D opens A's state and seals its own with the new key, which A cannot open.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from elicitkit.server.rounds.keys import ENV_VAR, KeyRing
from elicitkit.server.rounds.sealing import PUBLIC_MESSAGE
from kit.processes import read_url, stop_process
from kit.raw import HttpWire, Modern, Reply, accept, complete, input_required, start_http_process

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

ARGS = {"greeting": "hi"}


@dataclass
class Process:
    url: str
    log: Path

    @property
    def stderr(self) -> str:
        return self.log.read_text()


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Process]]:
    shared, own, new = (KeyRing.generate_secret() for _ in range(3))
    keys = {"A": shared, "B": shared, "C": own, "D": f"{new},{shared}"}
    logs = tmp_path_factory.mktemp("shared-keys")
    started = {}
    try:
        for name, value in keys.items():  # all start at once; their imports overlap
            env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
            env[ENV_VAR] = value
            started[name] = start_http_process(env, logs / f"{name}.log")
        yield {
            name: Process(read_url(proc, logs / f"{name}.log"), logs / f"{name}.log") for name, proc in started.items()
        }
    finally:
        for proc in started.values():
            stop_process(proc)


@pytest.fixture(scope="module")
async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


@pytest.fixture
def on(processes: dict[str, Process], http_client: httpx.AsyncClient) -> dict[str, Modern]:
    """A raw 2026 client per process, all on one connection pool."""
    return {name: Modern(HttpWire(http_client, process.url)) for name, process in processes.items()}


def frozen(reply: Reply) -> None:
    reply.expect_status(400)
    assert reply.error == {"code": -32602, "message": PUBLIC_MESSAGE}


async def test_rounds_hop_between_processes_that_share_keys(
    on: dict[str, Modern], processes: dict[str, Process]
) -> None:
    first = input_required(await on["A"].call("signup", ARGS))
    assert list(first["inputRequests"]) == ["name"]

    second = input_required(
        await on["B"].call("signup", ARGS, responses={"name": accept(name="Ada")}, state=first["requestState"])
    )
    assert second["inputRequests"]["age"]["params"]["message"] == "How old are you, Ada?"

    # Back on A with only the last answer: the name recorded by B travels in B's state.
    done = await on["A"].call("signup", ARGS, responses={"age": accept(age=36)}, state=second["requestState"])
    assert complete(done)["content"] == [{"type": "text", "text": "hi, Ada (36)"}]
    for name in ("A", "B"):
        assert "rejected requestState" not in processes[name].stderr


async def test_a_process_with_other_keys_refuses_the_state_and_starts_over(
    on: dict[str, Modern], processes: dict[str, Process]
) -> None:
    first = input_required(await on["A"].call("signup", ARGS))
    frozen(await on["C"].call("signup", ARGS, responses={"name": accept(name="Ada")}, state=first["requestState"]))
    assert "rejected requestState for tools/call signup: unknown key id" in processes["C"].stderr

    # Restarting without state on C works, start to finish.
    again = input_required(await on["C"].call("signup", ARGS, responses={"name": accept(name="Ada")}))
    assert list(again["inputRequests"]) == ["age"]
    done = await on["C"].call("signup", ARGS, responses={"age": accept(age=9)}, state=again["requestState"])
    assert done.text == "hi, Ada (9)"
    # ... and C's state means nothing to A either.
    frozen(await on["A"].call("signup", ARGS, state=again["requestState"]))


async def test_a_rotated_key_ring_opens_old_state_and_seals_with_the_new_key(
    on: dict[str, Modern], processes: dict[str, Process]
) -> None:
    first = input_required(await on["A"].call("signup", ARGS))
    second = input_required(
        await on["D"].call("signup", ARGS, responses={"name": accept(name="Bo")}, state=first["requestState"])
    )
    assert second["requestState"].split(".")[1] != first["requestState"].split(".")[1]  # another key id
    frozen(await on["A"].call("signup", ARGS, responses={"age": accept(age=5)}, state=second["requestState"]))
    done = await on["D"].call("signup", ARGS, responses={"age": accept(age=5)}, state=second["requestState"])
    assert done.text == "hi, Bo (5)"
    assert "rejected requestState" not in processes["D"].stderr
