"""Redis restarts under load (issue 28, points 2 and 3): 20 calls start during the outage and 20
in Redis's first second back; each completes or fails with a clear error within 15 s (none
hangs), and 3 s after Redis is back 20 of 20 new calls complete."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from elicitkit import Client, ElicitationResult, ElicitkitError

from .support import Fleet, fleet

pytestmark = pytest.mark.anyio

BOUND = 15.0  # seconds a call may take, at worst, to complete or fail


async def _answer(request: Any) -> ElicitationResult[Any]:
    return ElicitationResult.accept({"value": "ok"})


async def _timed_call(client: Client, tag: str, outcome: dict[str, Any]) -> None:
    """``ask`` for ``tag``: its text, or the error it failed with, or "HUNG" past the bound."""
    started = time.monotonic()
    try:
        with anyio.fail_after(BOUND):
            outcome[tag] = (await client.call_tool("ask", {"tag": tag})).text
    except TimeoutError:
        outcome[tag] = "HUNG"
    except ElicitkitError as exc:
        outcome[tag] = exc
    outcome[tag + ".s"] = time.monotonic() - started


async def restart_round(f: Fleet, clients: list[Client], *, outage: float = 2.0) -> dict[str, Any]:
    """One Redis restart with calls during and right after it; what each call got, and the 3 s check."""
    outcome: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        f.redis.stop()
        for n in range(20):  # spread over the outage
            tg.start_soon(_timed_call, clients[n % len(clients)], f"down{n}", outcome)
            await anyio.sleep(outage / 20)
        f.redis.start()
        back = time.monotonic()
        for n in range(20):  # within Redis's first second back
            tg.start_soon(_timed_call, clients[n % len(clients)], f"back{n}", outcome)
            await anyio.sleep(0.04)
        await anyio.sleep(max(0.0, back + 3.0 - time.monotonic()))
        later: dict[str, Any] = {}
        async with anyio.create_task_group() as after:
            for n in range(20):
                after.start_soon(_timed_call, clients[n % len(clients)], f"later{n}", later)
    return {"during": outcome, "later": later}


def _check(result: dict[str, Any], value: Callable[[str], str] = lambda tag: "ok") -> dict[str, int]:
    """Every call completed with its own answer or failed saying why; none hung; 20/20 later."""
    during, later = result["during"], result["later"]
    tags = [t for t in during if not t.endswith(".s")]
    assert len(tags) == 40
    hung = [t for t in tags if during[t] == "HUNG"]
    assert not hung, f"calls hung past {BOUND} s: {hung}"
    for tag in tags:
        got = during[tag]
        assert isinstance(got, ElicitkitError) or got.startswith(f"{tag}={value(tag)}@"), (tag, got)
        if isinstance(got, ElicitkitError):
            assert str(got).strip(), tag  # an error that says something
    failed_later = {
        t: v for t, v in later.items() if not t.endswith(".s") and not str(v).startswith(f"{t}={value(t)}@")
    }
    assert not failed_later, f"3 s after Redis is back, calls failed: {failed_later}"
    return {
        "completed": sum(1 for t in tags if isinstance(during[t], str)),
        "failed": sum(1 for t in tags if isinstance(during[t], ElicitkitError)),
        "slowest_ms": int(1000 * max(during[t + ".s"] for t in tags)),
        "later_ok": sum(1 for t in later if not t.endswith(".s")),
    }


async def test_a_redis_restart_under_load_leaves_no_call_hanging() -> None:
    with fleet() as f, anyio.fail_after(90):
        async with contextlib.AsyncExitStack() as stack:
            clients = []
            for _ in range(5):
                clients.append(
                    await stack.enter_async_context(Client(f.url, mode="legacy", elicitation_callback=_answer))
                )
            figures = _check(await restart_round(f, clients))
            print("redis restart:", figures)
