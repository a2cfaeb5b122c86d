"""The kit as a newcomer meets it (issue 26, points 10-13): failures read from the test's own line,
a script mistake is reported as one, results and eras are what they say."""

from __future__ import annotations

import pytest

from elicitkit import ConnectionClosed, MCPError
from elicitkit.client.results import CallToolResult
from elicitkit.testing.kit import Kit, accept, hang_up

from ._pytester import SHOP_SERVER, run_file
from .booking import server

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.timeout(120)

SHOP = SHOP_SERVER


def test_failures_show_the_tests_line_not_the_kit(pytester: pytest.Pytester) -> None:
    result = run_file(
        pytester,
        SHOP
        + """
async def test_wrong_message(elicitkit):
    elicitkit.person.will(decline())
    await elicitkit.call(server, "order")
    elicitkit.asked.assert_messages("How large?")  # the line a failure must point at


async def test_unforeseen(elicitkit):
    async with elicitkit.connect(server) as client:
        await client.call_tool("order")


async def test_skipped(elicitkit):
    async with elicitkit.connect(server) as client:
        await elicitkit.first_round(client, "order")
""",
        "-rs",
    )
    result.assert_outcomes(failed=2, skipped=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            '*elicitkit.asked.assert_messages("How large?")  # the line a failure must point at',
            "E*AssertionError: the questions asked are not the ones expected:",
            "test_shop.py:*: AssertionError",
            "*unexpected question #1: 'How big?' (form, fields: x)*",
            "SKIPPED [[]1[]] test_shop.py:*: requestState exists on 2026-07-28 only (this case runs 2025-11-25)",
        ]
    )
    for kit_source in ("asked.py", "kit.py", "script.py", "def __aexit__", "AsyncExitStack"):
        assert kit_source not in out, kit_source


def test_an_answer_that_does_not_fit_is_a_script_error(pytester: pytest.Pytester) -> None:
    """``accept({"value": True})`` given to a form with other fields: the test fails saying so, on
    every era (it used to pass on 2025 eras, the tool getting an error result, and raise an
    unexported MultiRoundTripError on 2026)."""
    result = run_file(
        pytester,
        SHOP
        + """
@pytest.mark.elicitkit_eras()
async def test_order(elicitkit):
    elicitkit.person.will(accept({"value": True}))
    async with elicitkit.connect(server) as client:
        await client.call_tool("order")
""",
    )
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        ["*scripted accept({'value': True}) does not fit question #1 'How big?' (form, fields: x): *"]
    )
    assert result.stdout.str().count("does not fit question #1 'How big?'") >= 3
    assert "MultiRoundTripError" not in result.stdout.str()


def test_named_snapshots_have_one_file_per_era_and_stale_ones_are_listed(pytester: pytest.Pytester) -> None:
    tests = (
        SHOP
        + """
@pytest.mark.elicitkit_eras("2025-06-18", "2026-07-28")
async def test_order(elicitkit):
    elicitkit.person.will(decline())
    await elicitkit.call(server, "order")
    elicitkit.assert_snapshot("declined")
"""
    )
    folder = pytester.path / "__snapshots__" / "test_shop"
    folder.mkdir(parents=True)
    (folder / "left_over.json").write_text("[]\n")
    written = run_file(pytester, tests, "--elicitkit-update-snapshots")
    written.assert_outcomes(passed=2)
    assert sorted(p.name for p in folder.iterdir()) == [
        "declined[2025-06-18].json",
        "declined[2026-07-28].json",
        "left_over.json",
    ]
    written.stdout.fnmatch_lines(
        [
            "wrote 2 snapshot(s):",
            "*1 snapshot(s) that no test of this run asserted (stale, or their tests did not run):",
            "  __snapshots__/test_shop/left_over.json",
        ]
    )
    run_file(pytester, tests).assert_outcomes(passed=2)


@pytest.mark.elicitkit_eras("2025-11-25")
async def test_a_connection_on_another_era_records_its_own_era(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"date": "2025-12-27"}), accept({"value": False}))
    elicitkit.person.will(accept({"date": "2025-12-28"}), accept({"value": False}))
    async with elicitkit.connect(server) as client:
        await client.call_tool("book")
    async with elicitkit.connect(server, era="2026-07-28") as client:
        await client.call_tool("book")
    assert [q.era for q in elicitkit.asked] == ["2025-11-25"] * 2 + ["2026-07-28"] * 2


@pytest.mark.elicitkit_eras("2026-07-28")
async def test_retry_returns_what_call_returns(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"date": "2025-12-27"}), accept({"value": True}))
    async with elicitkit.connect(server) as client:
        pending = await elicitkit.first_round(client, "book")
        result = await elicitkit.retry(client, pending)
    assert isinstance(result, CallToolResult)
    assert result.text == "Booked 2 for 2025-12-27."


@pytest.mark.elicitkit_eras()
async def test_hang_up_is_connection_closed_on_every_era(elicitkit: Kit) -> None:
    elicitkit.person.will(hang_up())
    async with elicitkit.connect(server) as client:
        with pytest.raises(ConnectionClosed):
            await client.call_tool("book")
    assert elicitkit.dropped


@pytest.mark.elicitkit_eras("2026-07-28")
async def test_a_form_only_client_is_told_which_mode_is_missing(elicitkit: Kit) -> None:
    async with elicitkit.connect(server, modes=("form",)) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("pay", {"booking": "b1"})
    assert refused.value.code == -32021
    assert refused.value.message == (
        "this request needs the client capability elicitation in url mode (the client declared: form)"
    )


@pytest.mark.elicitkit_eras("2026-07-28")
async def test_process_logs_show_what_a_child_printed_while_it_runs(
    elicitkit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # a user's shell: a child's stdout is a buffered file
    async with elicitkit.processes(server, 2) as (first, _second):
        assert (await first.call_tool("note", {"text": "hello"})).text == "noted"
        logs = elicitkit.process_logs()  # while the children still run
    assert "note: hello" in logs[0]
    assert "note: hello" not in logs[1]
