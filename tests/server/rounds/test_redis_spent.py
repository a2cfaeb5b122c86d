"""Single-use 2026 rounds across a fleet: spent requestState nonces in a real Redis."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import redis.asyncio as aioredis

from elicitkit import Client, Context, ElicitationResult, KeyRing, MCPError, Server
from elicitkit.client.rounds import InputRequiredResult
from elicitkit.protocol.errors import INTERNAL_ERROR, INVALID_PARAMS
from elicitkit.server.rounds import AeadStateCodec, SpentStates
from elicitkit.server.rounds.redis_spent import UNAVAILABLE_MESSAGE, RedisSpentStates
from elicitkit.server.rounds.round import InputRound
from elicitkit.server.rounds.sealing import SealedState, SpentStore, StateBinding
from kit.fleet import quick_client, redis_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

PARAMS = {"name": "pay", "arguments": {"amount": 5}}


# ----------------------------------------------------------------------------- the store


async def test_a_nonce_is_claimed_once(client: aioredis.Redis, prefix: str) -> None:
    spent = RedisSpentStates(client, prefix=prefix)
    later = int(time.time()) + 60
    assert await spent.claim("n1", later)
    assert not await spent.claim("n1", later)
    assert await spent.claim("n2", later)
    assert isinstance(spent, SpentStore)


async def test_two_instances_racing_on_one_nonce_have_one_winner(
    client: aioredis.Redis, other_client: aioredis.Redis, prefix: str
) -> None:
    a, b = RedisSpentStates(client, prefix=prefix), RedisSpentStates(other_client, prefix=prefix)
    later = int(time.time()) + 60
    results = await asyncio.gather(*(store.claim("race", later) for store in (a, b, a, b, a, b)))
    assert sorted(results) == [False] * 5 + [True]


async def test_a_claim_expires_with_its_state(client: aioredis.Redis, prefix: str) -> None:
    spent = RedisSpentStates(client, prefix=prefix)
    expires = int(time.time()) + 2  # at least a second away: the second claim comes before it
    assert await spent.claim("short", expires)
    ttl = await client.pttl(f"{prefix}spent:short")
    assert 0 < ttl <= 2000  # Redis forgets it by itself: no key outlives its state
    assert not await spent.claim("short", expires)
    await asyncio.sleep(max(0.0, expires + 0.05 - time.time()))
    assert await client.exists(f"{prefix}spent:short") == 0
    assert await spent.claim("short", int(time.time()) + 60)


async def test_redis_down_refuses_with_a_clean_error_and_recovers() -> None:
    with redis_server() as server:
        own = quick_client(server.url)
        try:
            spent = RedisSpentStates(own)
            server.stop()
            with pytest.raises(MCPError) as refused:
                await spent.claim("n", int(time.time()) + 60)
            assert refused.value.code == INTERNAL_ERROR
            assert refused.value.message == UNAVAILABLE_MESSAGE  # not the driver's text
            server.start()
            assert await spent.claim("n", int(time.time()) + 60)
        finally:
            await own.aclose()


# ----------------------------------------------------------------------------- the seam


def _round_for(codec: AeadStateCodec) -> InputRound:
    binding = StateBinding.for_request("tools/call", PARAMS)
    token = codec.seal(SealedState(), binding)
    return InputRound("tools/call", {**PARAMS, "requestState": token}, codec)


async def test_the_in_process_store_is_claimed_in_open_and_leaves_nothing_to_await() -> None:
    ring = KeyRing.generate()
    spent = SpentStates()
    codec = AeadStateCodec(ring, spent=spent)
    assert codec.spent_later is None
    round_ = _round_for(codec)
    assert round_.unclaimed is None and len(spent) == 1  # claimed inside open(), synchronously
    plain = AeadStateCodec(ring)
    assert _round_for(plain).unclaimed is None and "unclaimed" not in vars(_round_for(plain))


async def test_a_shared_store_is_claimed_by_the_round(client: aioredis.Redis, prefix: str) -> None:
    codec = AeadStateCodec(KeyRing.generate(), spent=RedisSpentStates(client, prefix=prefix))
    binding = StateBinding.for_request("tools/call", PARAMS)
    token = codec.seal(SealedState(), binding)
    first = InputRound("tools/call", {**PARAMS, "requestState": token}, codec)
    assert first.unclaimed is not None  # opened, not yet spent
    await first.claim()
    assert first.unclaimed is None
    second = InputRound("tools/call", {**PARAMS, "requestState": token}, codec)
    with pytest.raises(MCPError) as refused:
        await second.claim()
    assert refused.value.code == INVALID_PARAMS


# ----------------------------------------------------------------------------- two servers, one Redis


def _payment_server(ring: KeyRing, client: aioredis.Redis, prefix: str, paid: list[str], name: str) -> Server:
    codec = AeadStateCodec(ring, spent=RedisSpentStates(client, prefix=prefix))
    server = Server("payments", state_codec=codec)

    @server.tool()
    async def pay(amount: int, ctx: Context) -> str:
        answer = await ctx.elicit(f"Pay {amount} EUR?", bool)
        if answer.accepted and answer.data:
            paid.append(name)  # the side effect after the last question
            return f"paid on {name}"
        return "not paid"

    return server


async def yes(request: Any) -> ElicitationResult[Any]:
    return ElicitationResult.accept({"value": True})


async def test_a_replayed_state_is_refused_on_the_other_instance(
    client: aioredis.Redis, other_client: aioredis.Redis, prefix: str
) -> None:
    ring = KeyRing.generate()  # ELICITKIT_STATE_KEYS: every instance seals and opens alike
    paid: list[str] = []
    a = _payment_server(ring, client, prefix, paid, "a")
    b = _payment_server(ring, other_client, prefix, paid, "b")
    async with (
        Client(a, mode="modern", elicitation_callback=yes) as on_a,
        Client(b, mode="modern", elicitation_callback=yes) as on_b,
    ):
        pending = await on_a.call_tool("pay", {"amount": 5}, input_required="return")
        assert isinstance(pending, InputRequiredResult)
        responses = {key: {"action": "accept", "content": {"value": True}} for key in pending.input_requests}
        first = await on_b.resume(pending, responses)  # the retry lands on B
        assert isinstance(first, dict) and first["content"][0]["text"] == "paid on b"
        with pytest.raises(MCPError) as replayed:  # the same state again, now on A
            await on_a.resume(pending, responses)
        assert replayed.value.code == INVALID_PARAMS
        with pytest.raises(MCPError):  # and on B
            await on_b.resume(pending, responses)
    assert paid == ["b"]


async def test_redis_down_fails_the_round_cleanly_over_the_wire() -> None:
    with redis_server() as server:
        own = quick_client(server.url)
        try:
            paid: list[str] = []
            app = _payment_server(KeyRing.generate(), own, "t:", paid, "a")
            async with Client(app, mode="modern", elicitation_callback=yes) as on_app:
                pending = await on_app.call_tool("pay", {"amount": 5}, input_required="return")
                assert isinstance(pending, InputRequiredResult)
                responses = {key: {"action": "accept", "content": {"value": True}} for key in pending.input_requests}
                server.stop()
                with pytest.raises(MCPError) as down:
                    await on_app.resume(pending, responses)
                assert (down.value.code, down.value.message) == (INTERNAL_ERROR, UNAVAILABLE_MESSAGE)
                assert paid == []  # unchecked is refused: the tool did not run
                server.start()
                done = await on_app.resume(pending, responses)  # the same round, once Redis is back
                assert isinstance(done, dict) and done["content"][0]["text"] == "paid on a"
        finally:
            await own.aclose()
    assert paid == ["a"]


def _asking_server(ring: KeyRing, client: aioredis.Redis, prefix: str, served: list[str]) -> Server:
    codec = AeadStateCodec(ring, spent=RedisSpentStates(client, prefix=prefix))
    server = Server("asking", state_codec=codec)

    @server.prompt()
    async def greeting(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", str)
        served.append("prompt")
        return f"Hello {answer.data if answer.accepted else 'stranger'}"

    @server.resource("notes://today")
    async def today(ctx: Context) -> str:
        answer = await ctx.elicit("Which notes?", str)
        served.append("resource")
        return f"notes for {answer.data if answer.accepted else 'nobody'}"

    return server


async def test_prompts_and_resources_are_single_use_across_instances_too(
    client: aioredis.Redis, other_client: aioredis.Redis, prefix: str
) -> None:
    ring = KeyRing.generate()
    served: list[str] = []
    a = _asking_server(ring, client, prefix, served)
    b = _asking_server(ring, other_client, prefix, served)

    async def named(request: Any) -> ElicitationResult[Any]:
        return ElicitationResult.accept({"value": "Ada"})

    async with (
        Client(a, mode="modern", elicitation_callback=named) as on_a,
        Client(b, mode="modern", elicitation_callback=named) as on_b,
    ):
        for pending in (
            await on_a.get_prompt("greeting", input_required="return"),
            await on_a.read_resource("notes://today", input_required="return"),
        ):
            assert isinstance(pending, InputRequiredResult)
            responses = {key: {"action": "accept", "content": {"value": "Ada"}} for key in pending.input_requests}
            await on_b.resume(pending, responses)  # spent on B
            with pytest.raises(MCPError) as replayed:
                await on_a.resume(pending, responses)  # refused on A
            assert replayed.value.code == INVALID_PARAMS
    assert served == ["prompt", "resource"]
