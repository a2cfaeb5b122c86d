"""Answers that come twice, late, or right at the deadline (stdio and HTTP, raw peers).

Every question must end in exactly one outcome reaching the tool: the first answer, or the
timeout that withdrew the question, never both and never neither; whatever comes after is
dropped without disturbing the session.
"""

from __future__ import annotations

import asyncio
import random
from asyncio import FIRST_COMPLETED
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from ._asking import Asker, error_response, http_asker, response, stdio_asker
from ._support import accept

pytestmark = pytest.mark.anyio

TWICE_ROUNDS = 20
LATE_ROUNDS = 10
FORM_ROUNDS = 3
RACE_ROUNDS = {"stdio": 120, "http": 60}
RACE_TIMEOUT = 0.3
RACE_MODE = {"stdio": 0.0, "http": -0.18}  # an HTTP answer spends longer on its way (a POST)


@pytest.fixture(params=["stdio", "http"])
async def asker(request: pytest.FixtureRequest, tmp_path: Path, url: str) -> AsyncIterator[Asker]:
    if request.param == "stdio":
        async with stdio_asker(tmp_path) as peer:
            yield peer
    else:
        async with http_asker(url) as peer:
            yield peer


async def _still_works(asker: Asker, tag: str) -> None:
    """The session still serves: a ping, and a fresh question answered normally."""
    await asker.ping(f"ping-{tag}")
    await asker.start(tag)
    await asker.answer(await asker.question(tag), accept(7))
    assert await asker.outcome(tag) == "accept:7"


async def test_answer_sent_twice(asker: Asker) -> None:
    """Two responses with the question's id: exactly one reaches the tool; the other is dropped."""
    await asker.tool("o0", "outcomes")
    variants = [
        ("twice", lambda q: [response(q["id"], accept(1)), response(q["id"], accept(2))]),
        ("then-error", lambda q: [response(q["id"], accept(1)), error_response(q["id"])]),
        ("error-then", lambda q: [error_response(q["id"]), response(q["id"], accept(1))]),
    ]
    seen: dict[str, str] = {}
    for i in range(TWICE_ROUNDS):
        name, answers = variants[i % len(variants)]
        tag = f"{name}-{i}"
        await asker.start(tag)
        await asker.send_many(answers(await asker.question(tag)))
        seen[tag] = await asker.outcome(tag)
    await _still_works(asker, "after-twice")
    recorded = await asker.tool("o1", "outcomes")
    assert recorded == {**{tag: [outcome] for tag, outcome in seen.items()}, "after-twice": ["accept:7"]}
    for tag, outcome in seen.items():
        if asker.kind == "stdio":  # one write, in order: the first answer wins
            assert outcome == ("failed" if tag.startswith("error-then") else "accept:1"), (tag, outcome)
        else:  # two concurrent POSTs: either may land first, but only one counts
            assert outcome in {"accept:1", "accept:2", "failed"}, (tag, outcome)
    assert not asker.stray


async def test_late_answer_after_timeout(asker: Asker) -> None:
    """The question timed out (the tool saw ElicitationTimeout once); the late answer is dropped."""
    await asker.tool("o0", "outcomes")
    tags = [f"late-{i}" for i in range(LATE_ROUNDS)]
    for tag in tags:
        await asker.start(tag, timeout=0.2)
    questions = {tag: await asker.question(tag) for tag in tags}
    for tag in tags:
        assert await asker.outcome(tag) == "timeout"
    for tag in tags:
        await asker.answer(questions[tag], accept(5))
    await _still_works(asker, "after-late")
    assert await asker.tool("o1", "outcomes") == {**{tag: ["timeout"] for tag in tags}, "after-late": ["accept:7"]}
    # The server withdrew each question (notifications/cancelled) where the client can see it:
    # over HTTP on the stream of the call that asked, which is where the question came.
    assert {tag: asker.cancelled[questions[tag]["id"]] for tag in tags} == {tag: 1 for tag in tags}
    assert not asker.stray


async def test_answer_racing_the_timeout(asker: Asker) -> None:
    """Answers sent around the deadline (jittered): in every round exactly one of answer and
    timeout reaches the tool, and the call's result says the same."""
    await asker.tool("o0", "outcomes")
    rounds = RACE_ROUNDS[asker.kind]
    rng = random.Random(12)
    outcomes: dict[str, str] = {}

    stuck: dict[str, str] = {}
    unsent: list[str] = []

    async def one(i: int) -> None:
        tag = f"race-{i}"
        stage = "asking"
        try:
            await asker.start(tag, timeout=RACE_TIMEOUT)
            with anyio.fail_after(20):  # a loaded server may time out before the question even went out
                await asyncio.wait([asker.questions[tag], asker.results[f"c-{tag}"]], return_when=FIRST_COMPLETED)
            if not asker.questions[tag].done():
                unsent.append(tag)
                outcomes[tag] = await asker.outcome(tag)
                return
            question = asker.questions[tag].result()
            # from well before the deadline to well after it, most of them close to it
            offset = rng.triangular(-0.25, 0.25, RACE_MODE[asker.kind])
            await anyio.sleep(max(0.0, RACE_TIMEOUT + offset))
            stage = f"answered {offset:+.3f}s from the deadline"
            await asker.answer(question, accept(i))
            outcomes[tag] = await asker.outcome(tag)
        except TimeoutError:
            stuck[tag] = stage  # neither outcome came back: a hang, reported below

    async with anyio.create_task_group() as tg:
        for i in range(rounds):
            tg.start_soon(one, i)
            await anyio.sleep(0.005)
    assert not stuck, f"calls that never finished: {stuck}"
    recorded = await asker.tool("o1", "outcomes")
    assert recorded == {tag: [outcome] for tag, outcome in outcomes.items()}  # exactly one each
    for i in range(rounds):
        assert outcomes[f"race-{i}"] in (f"accept:{i}", "timeout")
    counts = Counter("timeout" if o == "timeout" else "answer" for o in outcomes.values())
    print(f"\n{asker.kind}: {rounds} races -> {dict(counts)}, {len(unsent)} withdrawn before they went out")
    assert all(outcomes[tag] == "timeout" for tag in unsent)
    assert counts["timeout"] and counts["answer"], counts  # the sweep straddles the deadline
    # A withdrawal (notifications/cancelled) goes out at most once, and only when the timeout
    # won. A timeout may come without one: the answer arrived after the deadline fired but
    # before the tool resumed, so there was nothing left to withdraw (and it was ignored).
    await asker.ping("flush")
    sent = [tag for tag in outcomes if tag not in unsent]
    withdrawn = {tag: asker.cancelled.get(asker.questions[tag].result()["id"], 0) for tag in sent}
    assert set(withdrawn.values()) <= {0, 1}
    assert all(outcomes[tag] == "timeout" for tag, count in withdrawn.items() if count)
    silent = sum(1 for tag in sent if outcomes[tag] == "timeout" and not withdrawn[tag])
    print(f"{asker.kind}: {silent} timeouts with the answer already in (no withdrawal sent)")
    await _still_works(asker, "after-race")


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_withdrawn_question_closes_the_clients_form(transport: str, url: str) -> None:
    """When the question times out, the real Client's elicitation callback (the open form) is
    cancelled, once per question (over HTTP the Client also holds the standalone GET stream, so
    it saw withdrawals before they moved to the asking call's stream; raw clients did not)."""
    import sys

    from elicitkit import Client
    from elicitkit.elicitation import ElicitRequest

    from ._support import SERVER, server_env

    closed: list[str] = []

    async def form(request: ElicitRequest) -> dict[str, object]:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            closed.append(request.message)
            raise
        raise AssertionError("unreachable")

    target: object = [sys.executable, str(SERVER), "stdio"] if transport == "stdio" else url
    options = {"env": server_env()} if transport == "stdio" else {}
    async with Client(target, elicitation_callback=form, timeout=30, transport_options=options) as client:
        for i in range(FORM_ROUNDS):
            result = await client.call_tool("ask", {"tag": f"closed-{i}", "timeout": 0.2})
            assert result.content[0].text == "timeout"  # type: ignore[union-attr]
            with anyio.fail_after(10):
                while len(closed) <= i:  # noqa: ASYNC110 - the callback's cancellation has no event
                    await anyio.sleep(0.01)
        assert closed == [f"Pick a number for closed-{i}" for i in range(FORM_ROUNDS)]
