"""Gateways sharing a Redis backplane: a 2026 host's retry on another instance continues the
backend call parked on the first (never replayed), a stopped holder's call is replayed from the
sealed state, and Redis gone is a clear error that loses nothing.

In process (two ``Gateway`` objects, one real ``redis-server``); ``test_fleet_processes.py``
runs the same behind haproxy with ``elicitkit gateway`` processes.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from elicitkit import Client, MCPError
from elicitkit.backplane.redis_backplane import RedisBackplane
from elicitkit.client.rounds import InputRequiredResult, retry_params
from elicitkit.gateway import ConfigError, Gateway, parse_config
from elicitkit.gateway.fleet import NOT_REGISTERED
from elicitkit.server.rounds import AeadStateCodec, KeyRing
from kit.fleet import RedisServer, quick_client, redis_server
from kit.raw import wait_until

from .support import Person, backends, resume, start

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

KEYS = KeyRing.generate()


def runs(state: Path, mark: str) -> int:
    return int((state / f"runs-{mark}").read_text())


@contextlib.asynccontextmanager
async def member(redis: RedisServer, prefix: str, name: str) -> AsyncIterator[Gateway]:
    """One gateway instance of the fleet (the ``old`` backend: a 2025 server), started."""
    backplane = RedisBackplane(quick_client(redis.url), key="gw-fleet", instance_id=name, prefix=prefix, heartbeat=0.2)
    config = parse_config({"name": "gw", "backends": backends(official=False)[:1]})
    gateway = Gateway(config, state_codec=AeadStateCodec(KEYS), backplane=backplane)
    await backplane.start()
    try:
        async with gateway.running():
            yield gateway
    finally:
        await backplane.stop()
        await backplane.client.aclose()


@pytest.fixture(scope="module")
def redis() -> Any:
    with redis_server() as server:
        yield server


@pytest.fixture(scope="module")
async def pair(redis: RedisServer, state: Path) -> AsyncIterator[tuple[Gateway, Gateway]]:
    prefix = f"gwf-{uuid.uuid4().hex[:8]}:"
    async with member(redis, prefix, "a") as one, member(redis, prefix, "b") as two:
        yield one, two


async def test_retries_alternating_instances_continue_the_one_backend_call(
    pair: tuple[Gateway, Gateway], state: Path
) -> None:
    one, two = pair
    first = await start(one, "old.two_questions", "alternating")
    assert len(one.parked) == 1 and len(two.parked) == 0
    second = await resume(two, first, input_required="return")  # driven from b, still held by a
    assert isinstance(second, InputRequiredResult) and list(second.input_requests) == ["g2"]
    assert second.input_requests["g2"].params["message"] == "Who pays?"
    assert len(one.parked) == 1 and len(two.parked) == 0
    done = await resume(two, second)
    assert done["content"][0]["text"] == "Ada, then Ada"
    assert runs(state, "alternating") == 1  # one backend call all along: nothing replayed
    assert len(one.parked) == 0 and len(two.parked) == 0


async def test_redis_sees_no_question_answer_or_result(
    redis: RedisServer, pair: tuple[Gateway, Gateway], state: Path
) -> None:
    """Every command Redis runs while b drives a's call (MONITOR): none carries the question,
    the person's answer or the result in clear."""
    one, two = pair
    seen: list[str] = []
    watcher = quick_client(redis.url)
    try:
        async with watcher.monitor() as monitor, anyio.create_task_group() as tg:

            async def record() -> None:
                async for command in monitor.listen():
                    seen.append(str(command.get("command", "")))

            tg.start_soon(record)
            await anyio.sleep(0.2)
            first = await start(one, "old.two_questions", "sealed")
            second = await resume(two, first, input_required="return")
            done = await resume(two, second)
            await wait_until(lambda: any("gw:reply:" in c for c in seen), 5, "the steps to be seen")
            await anyio.sleep(0.3)
            tg.cancel_scope.cancel()
    finally:
        await watcher.aclose()
    assert done["content"][0]["text"] == "Ada, then Ada" and runs(state, "sealed") == 1
    assert any("gw:in:a" in c for c in seen) and any("gw:call:" in c for c in seen)
    for secret in ("Who is booking?", "Who pays?", "Ada, then Ada", "Your name", "seats"):  # question, answer, result
        assert not [c for c in seen if secret in c], secret


async def test_a_call_parked_on_either_side_is_found_from_the_other(pair: tuple[Gateway, Gateway], state: Path) -> None:
    one, two = pair
    first = await start(two, "old.book_counted", "from-b")
    done = await resume(one, first)
    assert done["content"][0]["text"] == "booked 3 for Ada"
    assert runs(state, "from-b") == 1
    assert len(one.parked) == 0 and len(two.parked) == 0


async def test_progress_crosses_and_a_cancel_reaches_the_backend_on_the_holder(
    pair: tuple[Gateway, Gateway], state: Path
) -> None:
    one, two = pair
    pending = await start(one, "old.ask_then_work", "progress")
    progress: list[tuple[float, str | None]] = []
    async with Client(two, mode="modern", elicitation_callback=Person()) as host:
        answers = await host.answer_input_requests(pending)
        params = retry_params(pending.params, answers, pending.request_state)
        done = await host.connection.request("tools/call", params, on_progress=lambda p, _t, m: progress.append((p, m)))
    assert done["content"][0]["text"] == "worked for Ada"
    assert progress == [(1, "step 1"), (2, "step 2"), (3, "step 3")]  # from a's backend, through b

    pending = await start(one, "old.ask_then_work", "wait-cancel")
    async with Client(two, mode="modern", elicitation_callback=Person()) as host:
        with pytest.raises(MCPError, match="timed out"):  # the host gives up: it cancels its request
            await host.resume(pending, timeout=1.0)
    await wait_until((state / "cancelled-wait-cancel").exists, 10, "the backend call on a to be cancelled")
    await wait_until(lambda: len(one.parked) == 0, 5, "nothing left parked")


async def test_a_stopped_holder_s_call_is_replayed_from_the_sealed_state(
    redis: RedisServer, pair: tuple[Gateway, Gateway], state: Path
) -> None:
    one, _two = pair
    prefix = one.backplane.prefix  # type: ignore[union-attr]
    async with member(redis, prefix, "c") as doomed:
        first = await start(doomed, "old.book_counted", "holder-gone")
        other = await start(one, "old.book_counted", "survivor")  # held by a: keeps working
        assert doomed.backplane is not None
        await doomed.backplane.stop()  # its heartbeat ends: for the fleet it is gone
    done = await resume(one, first)
    assert done["content"][0]["text"] == "booked 3 for Ada"
    assert runs(state, "holder-gone") == 2  # started again on a, answered from the state
    done = await resume(one, other)
    assert done["content"][0]["text"] == "booked 3 for Ada"
    assert runs(state, "survivor") == 1


async def test_redis_gone_is_a_clear_error_and_the_parked_call_survives_it(state: Path) -> None:
    with redis_server() as own:
        prefix = "gwf-dead:"
        async with member(own, prefix, "a") as one, member(own, prefix, "b") as two:
            first = await start(one, "old.book_counted", "redis-gone")
            own.stop()
            with pytest.raises(MCPError) as refused:  # no instance can find the call now: say so
                await resume(two, first)
            assert "try again" in refused.value.message or "retry" in refused.value.message
            with pytest.raises(MCPError, match="could not be kept"):  # never parked where none finds it
                await start(two, "old.book_counted", "no-parking")
            assert NOT_REGISTERED.startswith("the gateway fleet's shared store")
            assert len(two.parked) == 0 and len(one.parked) == 1
            own.start()  # back (empty): the call still waits on a, and a retry there continues it
            with anyio.fail_after(10):
                done = await resume(one, first)
        assert done["content"][0]["text"] == "booked 3 for Ada"
        assert runs(state, "redis-gone") == 1


def test_the_config_takes_a_redis_url_and_refuses_anything_else() -> None:
    config = parse_config(
        {"gateway": {"redis": "redis://127.0.0.1:6379/0"}, "backends": [{"name": "x", "url": "http://h/mcp"}]}
    )
    assert config.redis == "redis://127.0.0.1:6379/0"
    with pytest.raises(ConfigError) as exc:
        parse_config({"redis": "http://user:s3cret@h/0", "backends": [{"name": "x", "url": "http://h/mcp"}]}, "gw.toml")
    assert "gw.toml: redis: " in str(exc.value) and "redis://" in str(exc.value)
    assert "s3cret" not in str(exc.value)  # the URL may carry a password: never echoed
