"""The scripted person, on every era: answers in order or by question, and each kind of answer."""

from __future__ import annotations

import re

import anyio
import pytest

from elicitkit import ConnectionClosed, MCPError
from elicitkit.testing.kit import Kit, accept, after, cancel, decline, hang_up, never, wrong

from . import booking
from .booking import server

pytestmark = pytest.mark.timeout(60)


@pytest.mark.elicitkit_eras(transports=("memory", "stdio", "http"))
async def test_answers_in_order_on_every_era_and_transport(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"date": "2025-12-27", "guests": 4}), accept({"value": True}))
    async with elicitkit.connect(server) as client:
        result = await client.call_tool("book")
    assert result.text == "Booked 4 for 2025-12-27."
    elicitkit.asked.assert_messages("Which evening?", "Book 4 for 2025-12-27?")
    assert [q.era for q in elicitkit.asked] == [elicitkit.era] * 2


@pytest.mark.elicitkit_eras()
async def test_a_decline_at_each_step(elicitkit: Kit) -> None:
    elicitkit.person.will(decline(), accept({"date": "2025-12-27"}), cancel())
    async with elicitkit.connect(server) as client:
        first = await client.call_tool("book")
        second = await client.call_tool("book")
    assert (first.text, second.text) == ("No booking (decline at step 1).", "No booking (cancel at step 2).")
    elicitkit.asked.assert_count(3)


@pytest.mark.elicitkit_eras("2025-11-25", "2026-07-28")  # URL mode came with 2025-11-25
async def test_answers_matched_by_message_pattern_fields_mode_and_url(elicitkit: Kit) -> None:
    person = elicitkit.person
    person.when(re.compile(r"^Book \d+ for"), accept({"value": True}))  # a pattern
    person.when(None, accept({"date": "2026-01-02"}), fields=["date", "guests"])
    person.when(None, decline(), mode="url", url=re.compile(r"pay\.example\.com/deposit/8$"))
    person.when("Pay the deposit.", accept(), always=True)  # the last answer keeps answering
    async with elicitkit.connect(server) as client:
        booked = await client.call_tool("book")
        paid = [(await client.call_tool("pay", {"booking": b})).text for b in ("7", "8", "9", "10")]
    assert booked.text == "Booked 2 for 2026-01-02."  # the client filled in the default guests
    assert paid == ["deposit 7: accept", "deposit 8: decline", "deposit 9: accept", "deposit 10: accept"]
    elicitkit.asked[2].assert_url(domain="pay.example.com")


@pytest.mark.elicitkit_eras()
async def test_rules_come_before_the_queue(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"date": "2025-12-30"})).when("Book 2 for 2025-12-30?", decline())
    async with elicitkit.connect(server) as client:
        assert (await client.call_tool("book")).text == "No booking (decline at step 2)."


@pytest.mark.elicitkit_eras("2025-06-18", "2025-11-25")
async def test_never_answers_and_the_tool_times_out(elicitkit: Kit) -> None:
    elicitkit.person.will(never())
    async with elicitkit.connect(server) as client:
        assert (await client.call_tool("hurry")).text == "too slow"


@pytest.mark.elicitkit_eras("2025-06-18", "2025-11-25")
async def test_answers_after_some_seconds(elicitkit: Kit) -> None:
    elicitkit.person.will(after(0.05, accept({"value": True})), after(1.5, accept({"value": True})))
    async with elicitkit.connect(server) as client:
        in_time = await client.call_tool("hurry")
        late = await client.call_tool("hurry")
    assert (in_time.text, late.text) == ("in time: accept", "too slow")
    assert elicitkit.asked[1].answer == "accept {'value': True} after 1.5s"


@pytest.mark.elicitkit_eras()
async def test_a_wrong_answer_reaches_the_server_past_the_clients_check(elicitkit: Kit) -> None:
    elicitkit.person.will(wrong({"date": 20251227, "guests": 99}))
    if elicitkit.modern:  # a 2026 round asks again, saying what was wrong
        elicitkit.person.when(re.compile(r"How many guests\?\n\n\(Your previous answer was not accepted"), decline())
    async with elicitkit.connect(server) as client:
        result = await client.call_tool("strict")
    reason = "date: expected string, got int 20251227; guests: 99 is greater than the maximum of 12"
    if elicitkit.modern:
        assert result.text == "got decline"
        assert reason in elicitkit.asked[1].message
    else:
        assert result.text == f"refused: {reason}"


@pytest.mark.elicitkit_eras("2025-06-18", "2025-11-25", transports=("memory", "http"))
async def test_hang_up_while_a_question_waits_cancels_the_tool(elicitkit: Kit) -> None:
    booking.CANCELLED.clear()
    elicitkit.person.will(hang_up())
    async with elicitkit.connect(server) as client:
        with pytest.raises(ConnectionClosed):
            await client.call_tool("watch")
    assert elicitkit.dropped
    for _ in range(100):
        if booking.CANCELLED:
            break
        await anyio.sleep(0.02)
    assert booking.CANCELLED == ["watch"]


async def test_hang_up_on_2026_ends_the_call(elicitkit: Kit) -> None:
    elicitkit.person.will(hang_up())
    async with elicitkit.connect(server, era="2026-07-28") as client:
        # no question waits on a 2026 server: the retry never leaves, and the call ends with
        # ConnectionClosed itself, as on the other eras (not a MultiRoundTripError around it)
        with pytest.raises(ConnectionClosed, match=r"the test dropped the connection"):
            await client.call_tool("watch")


async def test_without_a_marker_the_test_runs_once_on_2025_11_25_in_memory(elicitkit: Kit) -> None:
    assert (elicitkit.era, elicitkit.transport, elicitkit.modern) == ("2025-11-25", "memory", False)
    elicitkit.person.will(accept({"date": "2025-12-27"}), accept({"value": False}))
    assert (await elicitkit.call(server, "book")).text == "No booking (accept at step 2)."


@pytest.mark.elicitkit_eras()
async def test_a_client_without_the_elicitation_capability(elicitkit: Kit) -> None:
    async with elicitkit.connect(server, elicitation=False) as client:
        if elicitkit.modern:  # 2026 refuses the request itself: -32021, the capability it needs
            with pytest.raises(MCPError) as refused:
                await client.call_tool("book")
            assert refused.value.code == -32021
        else:
            result = await client.call_tool("book")
            assert result.is_error and result.text.startswith("book: the client cannot be asked"), result.text
    elicitkit.asked.assert_nothing_asked()


@pytest.mark.elicitkit_eras("2025-11-25", "2026-07-28")
async def test_a_client_that_declares_form_mode_only(elicitkit: Kit) -> None:
    async with elicitkit.connect(server, modes=("form",)) as client:
        if elicitkit.modern:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("pay", {"booking": "1"})
            assert refused.value.code == -32021
        else:
            result = await client.call_tool("pay", {"booking": "1"})
            assert result.is_error and "url mode" in result.text, result.text


def test_script_errors_are_caught_early() -> None:
    from elicitkit.testing.kit import Person

    with pytest.raises(TypeError, match="a scripted answer comes from accept"):
        Person().will({"action": "accept"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs at least one answer"):
        Person().when("Which evening?")
    with pytest.raises(ValueError, match="mode is 'form' or 'url'"):
        Person().when(None, accept(), mode="sms")


@pytest.mark.elicitkit_eras("2026-07-28")
async def test_never_on_2026_leaves_the_clients_call_waiting(elicitkit: Kit) -> None:
    elicitkit.person.will(never())
    async with elicitkit.connect(server) as client:
        with anyio.move_on_after(0.5) as waited:
            await client.call_tool("hurry")
    assert waited.cancelled_caught  # no server timeout applies: nothing waits on a 2026 server
    assert elicitkit.asked[0].answer == "never"


async def test_assert_done_reports_once(elicitkit: Kit) -> None:
    elicitkit.person.will(decline(), accept({"date": "2025-12-27"}))
    elicitkit.person.when("Never asked?", cancel())
    await elicitkit.call(server, "book")
    with pytest.raises(AssertionError) as left:
        elicitkit.person.assert_done()
    assert str(left.value) == (
        "the scripted person:\n"
        "  scripted answer #2 (accept {'date': '2025-12-27'}) was never used\n"
        "  answer(s) cancel for questions message 'Never asked?' were never used"
    )
    elicitkit.person.assert_done()  # said once: the teardown stays quiet
