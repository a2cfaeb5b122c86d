"""Faults a kit test can inject: bad or expired ``requestState``, a retry on another process."""

from __future__ import annotations

import re

import pytest

from elicitkit import MCPError
from elicitkit.testing.kit import Kit, accept, decline, tamper

from .booking import server

pytestmark = pytest.mark.timeout(90)

REFUSED = "requestState is invalid or expired; restart the request without it"


def test_tamper_changes_exactly_one_character() -> None:
    state = "abcdefAhij"
    changed = tamper(state)
    assert len(changed) == len(state) and sum(a != b for a, b in zip(state, changed, strict=True)) == 1
    assert tamper("AAAA") == "AABA" and tamper("") == "x"


@pytest.mark.elicitkit_eras("2026-07-28", transports=("memory", "http"))
async def test_a_tampered_state_is_refused(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"date": "2025-12-27"}))
    async with elicitkit.connect(server) as client:
        pending = await elicitkit.first_round(client, "book")
        with pytest.raises(MCPError) as refused:
            await elicitkit.retry(client, pending, state=tamper(pending.request_state))
    assert (refused.value.code, refused.value.message) == (-32602, REFUSED)


@pytest.mark.elicitkit_eras()
async def test_first_round_skips_before_2026(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"date": "2025-12-27"}), decline())
    async with elicitkit.connect(server) as client:
        pending = await elicitkit.first_round(client, "book")  # skips on 2025 eras
        result = await elicitkit.retry(client, pending)
    assert result.text == "No booking (decline at step 2)."
    elicitkit.asked.assert_messages("Which evening?", "Book 2 for 2025-12-27?")


async def test_an_expired_state_is_refused(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"date": "2025-12-27"}))
    async with elicitkit.connect(server, era="2026-07-28") as client:
        with elicitkit.short_lived_states(server, seconds=1):
            pending = await client.call_tool("book", input_required="return")
        await elicitkit.wait_until_expired(seconds=1)
        with pytest.raises(MCPError) as refused:
            await elicitkit.retry(client, pending)
    assert (refused.value.code, refused.value.message) == (-32602, REFUSED)


@pytest.mark.elicitkit_eras("2026-07-28")
async def test_a_retry_lands_on_another_process_sharing_the_keys(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"date": "2025-12-27", "guests": 3}), accept({"value": True}))
    async with elicitkit.processes(server, 2) as (first, second):
        pending = await elicitkit.first_round(first, "book")
        result = await elicitkit.retry(second, pending)  # answers q1 there; q2 is asked by the second process
    assert result.text == "Booked 3 for 2025-12-27."
    elicitkit.asked.assert_messages("Which evening?", "Book 3 for 2025-12-27?")


@pytest.mark.elicitkit_eras("2026-07-28")
async def test_a_process_with_other_keys_refuses_the_state(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"date": "2025-12-27"}))
    async with elicitkit.processes(server, 2, shared_keys=False) as (first, other):
        pending = await elicitkit.first_round(first, "book")
        with pytest.raises(MCPError) as refused:
            await elicitkit.retry(other, pending)
    assert (refused.value.code, refused.value.message) == (-32602, REFUSED)
    assert "rejected requestState for tools/call book" in elicitkit.process_logs()[1]


async def test_a_server_defined_in_a_function_cannot_go_to_a_child_process(elicitkit: Kit) -> None:
    from elicitkit import Server

    local = Server("local")
    with pytest.raises(RuntimeError, match=re.escape("define 'local' at module level, or pass 'path/to/file.py:attr'")):
        async with elicitkit.connect(local, transport="stdio"):
            pass


async def test_a_failing_stdio_server_shows_its_stderr(elicitkit: Kit) -> None:
    with pytest.raises(Exception) as failed:
        async with elicitkit.connect(f"{__file__.replace('test_faults.py', 'broken.py')}:server", transport="stdio"):
            pass
    notes = "\n".join(getattr(failed.value, "__notes__", []))
    assert "the stdio server's stderr" in notes and "RuntimeError: this server does not start" in notes
