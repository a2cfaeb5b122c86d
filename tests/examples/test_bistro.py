"""examples/elicitation/bistro.py with the kit: a form when the evening is full, a URL for the deposit.

Forms on every era; the URL deposit from 2025-11-25 (the first era with URL mode); the
completion notice on 2025-11-25 only (2026-07-28 dropped it).
"""

from __future__ import annotations

import pytest

from elicitkit import MCPError
from elicitkit.testing.kit import Kit, accept, cancel, decline

from ._load import spec

BISTRO = spec("elicitation/bistro.py")
FULL = "We are full for {} on {}. Try another evening?"

pytestmark = pytest.mark.timeout(60)


@pytest.mark.elicitkit_eras(transports=("memory", "stdio", "http"))
async def test_a_full_evening_asks_again_until_a_free_one(elicitkit: Kit) -> None:
    # accept: the client fills in the default date (the 26th), which is full too, so it is asked in turn
    elicitkit.person.will(accept({"try_other": True}), accept({"try_other": True, "date": "2025-12-30"}))
    async with elicitkit.connect(BISTRO) as client:
        assert client.server_info["name"] == "bistro"
        free = await client.call_tool("book_table", {"date": "2025-12-31", "party_size": 6})
        assert free.text == "Table for 6 booked on 2025-12-31."
        elicitkit.asked.assert_nothing_asked()
        rebooked = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})
    assert rebooked.text == "Table for 2 booked on 2025-12-30."
    elicitkit.asked.assert_messages(FULL.format(2, "2025-12-24"), FULL.format(2, "2025-12-26"))
    form = elicitkit.asked[0]
    assert form.server == "bistro"
    assert form.schema is not None and form.schema["required"] == ["try_other"]
    date = form.schema["properties"]["date"]
    if elicitkit.era == "2025-06-18":  # no defaults in that era's schemas: the model's own applies
        assert "default" not in date
    else:
        assert date["default"] == "2025-12-26"


@pytest.mark.elicitkit_eras()
async def test_no_booking_when_unticked_declined_or_dismissed(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"try_other": False}), decline(), cancel())
    async with elicitkit.connect(BISTRO) as client:
        results = [await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 3}) for _ in range(3)]
    assert [r.text for r in results] == [
        "No booking made.",
        "No booking made: you declined another date.",
        "No booking made: the question was dismissed.",
    ]
    assert not any(r.is_error for r in results)
    elicitkit.asked.assert_messages(*[FULL.format(3, "2025-12-25")] * 3)


@pytest.mark.elicitkit_eras("2025-11-25", "2026-07-28", transports=("memory", "stdio"))
async def test_the_deposit_is_paid_on_a_page(elicitkit: Kit) -> None:
    elicitkit.person.will(accept(), decline(), cancel())
    async with elicitkit.connect(BISTRO) as client:
        paying = await client.call_tool("pay_deposit", {"booking_id": "7"})
        refused = await client.call_tool("pay_deposit", {"booking_id": "8"})
        dismissed = await client.call_tool("pay_deposit", {"booking_id": "9"})
        if not elicitkit.modern:  # the completion notice exists on 2025-11-25 only
            assert not await client.wait_for_elicitation_complete("deposit-7", timeout=0.05)
        confirmed = await client.call_tool("confirm_deposit", {"booking_id": "7"})
        if not elicitkit.modern:
            assert await client.wait_for_elicitation_complete("deposit-7", timeout=5)
    assert paying.text == "Waiting for the deposit of booking 7; the payment page is open in your browser."
    assert refused.text == "No deposit for booking 8 (decline); the table is held for one hour."
    assert dismissed.text == "No deposit for booking 9 (cancel); the table is held for one hour."
    assert confirmed.text == "Booking 7: deposit paid, table confirmed."
    page = elicitkit.asked[0]
    page.assert_url("https://pay.bistro.example/deposit/7", domain="pay.bistro.example")
    assert page.elicitation_id == (None if elicitkit.modern else "deposit-7")
    elicitkit.asked.assert_messages(*["Pay the 20 EUR deposit that holds your table."] * 3)


@pytest.mark.elicitkit_eras()
async def test_a_client_that_cannot_be_asked(elicitkit: Kit) -> None:
    async with elicitkit.connect(BISTRO, elicitation=False) as client:
        free = await client.call_tool("book_table", {"date": "2025-12-28", "party_size": 2})
        if elicitkit.modern:  # 2026 refuses the call up front: -32021 names the capability
            with pytest.raises(MCPError) as refused:
                await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            assert refused.value.code == -32021
        else:  # the call fails, the session lives on
            full = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            deposit = await client.call_tool("pay_deposit", {"booking_id": "1"})
            assert full.is_error and full.text.startswith("book_table: the client cannot be asked in form mode")
            assert deposit.is_error and "url mode" in deposit.text
    assert free.text == "Table for 2 booked on 2025-12-28."


@pytest.mark.elicitkit_eras("2025-06-18")
async def test_the_first_era_has_no_url_mode(elicitkit: Kit) -> None:
    async with elicitkit.connect(BISTRO) as client:
        deposit = await client.call_tool("pay_deposit", {"booking_id": "1"})
    assert deposit.is_error and "url mode" in deposit.text, deposit.text


@pytest.mark.elicitkit_eras()
async def test_the_question_snapshot(elicitkit: Kit) -> None:
    elicitkit.person.will(decline())
    async with elicitkit.connect(BISTRO) as client:
        await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    elicitkit.assert_snapshot()
