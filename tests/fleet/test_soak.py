"""Twenty rounds in a row on one fleet (``--slow``; issue 28's "done when"): each round a Redis
restart with 20 calls starting during the outage and 20 in its first second back (each completes
or fails with a clear error within 15 s), 20 of 20 new calls 3 s after, a relayed stream resumed
on its owner, and 30 calls answered out of order with nothing lost or crossed."""

from __future__ import annotations

import contextlib
import json
import random
import time
from typing import Any

import aiohttp
import anyio
import pytest

from elicitkit import Client, ElicitationResult

from .support import fleet
from .test_failures import _raw_session
from .test_redis_restart import _check, restart_round
from .test_resumption import _drop_after_first_progress, _resume

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(1800)]

ROUNDS = 20


async def _answer_later(request: Any) -> ElicitationResult[Any]:
    await anyio.sleep(random.uniform(0, 0.3))  # answers come back out of order
    return ElicitationResult.accept({"value": request.message.removeprefix("question ")})


async def test_twenty_rounds_without_a_hang_or_a_lost_call() -> None:
    figures: list[dict[str, Any]] = []
    with fleet() as f:
        async with contextlib.AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(Client(f.url, mode="legacy", elicitation_callback=_answer_later))
                for _ in range(5)
            ]
            async with aiohttp.ClientSession() as http:
                for round_no in range(ROUNDS):
                    started = time.monotonic()
                    with anyio.fail_after(120):
                        restart = _check(await restart_round(f, clients), value=lambda tag: tag)
                        await anyio.sleep(1.0)  # sessions whose calls failed start again (404 -> new session)
                        results: dict[str, str] = {}

                        async def call(client: Client, tag: str, into: dict[str, str] = results) -> None:
                            into[tag] = (await client.call_tool("ask", {"tag": tag})).text

                        async with anyio.create_task_group() as tg:
                            for n in range(30):
                                tg.start_soon(call, clients[n % len(clients)], f"r{round_no}.{n}")
                        lost = [
                            t
                            for t in (f"r{round_no}.{n}" for n in range(30))
                            if not results.get(t, "").startswith(f"{t}={t}@")
                        ]
                        assert not lost, lost

                        session_id = await _raw_session(http, f.url)
                        owner = f.owner_of(session_id)
                        relay = next(i for i in f.instances.values() if i is not owner)
                        last_id = await _drop_after_first_progress(http, relay.url, session_id, 1)
                        messages = await _resume(http, owner.url, session_id, last_id)
                        assert messages[-1]["result"]["content"][0]["text"] == f"3 ticks@{owner.name}"
                    figures.append({**restart, "round": round_no, "seconds": round(time.monotonic() - started, 1)})
                    print(json.dumps(figures[-1]), flush=True)
    completed = sum(x["completed"] for x in figures)
    failed = sum(x["failed"] for x in figures)
    print(
        f"{ROUNDS} rounds: during/just after the outage {completed} completed, {failed} failed clearly, 0 hung;"
        f" slowest {max(x['slowest_ms'] for x in figures)} ms; 3 s after: {sum(x['later_ok'] for x in figures)}"
        f"/{20 * ROUNDS} completed"
    )
