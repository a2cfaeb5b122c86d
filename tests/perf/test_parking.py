"""Thousands of legacy elicitations parked on one Streamable HTTP server, then all answered.

One elicitkit server (``serve_http_background``, in this event loop) and one elicitkit
``Client`` (legacy era, 2025-11-25). A tool asks a 3-field form question with ``ctx.elicit``;
the client's callback holds every answer back (a person who has not answered yet) until all
the calls are parked at once, then answers them all. Every answer is derived from its own
question, and every call checks its result, so an answer routed to the wrong call fails.
"""

from __future__ import annotations

import resource
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, Field

from elicitkit import AcceptedElicitation, Client, Context, ElicitationResult, FormRequest, Server
from elicitkit.transports.http.serve import serve_http_background

pytestmark = [pytest.mark.anyio, pytest.mark.perf, pytest.mark.timeout(120)]

WANTED = 3000  # parked at once
FDS_PER_CALL = 2  # client socket + server socket, both in this process
SPARE_FDS = 600  # the answers' pooled connections, the runtime's own files, pytest's


class Booking(BaseModel):
    name: str = Field(description="Name for the booking")
    party_size: int = Field(description="How many people")
    confirm: bool = Field(description="Confirm the booking?")


def _server() -> Server:
    server = Server("parking")

    @server.tool()
    async def book(date: str, ctx: Context) -> str:
        answer = await ctx.elicit(f"Book a table on {date}?", Booking)
        assert isinstance(answer, AcceptedElicitation)
        booking = answer.data
        return f"booked {booking.party_size} for {booking.name} on {date}" if booking.confirm else "not booked"

    return server


def _party(date: str) -> int:
    return int(date[1:]) % 12 + 1


def _how_many() -> int:
    """As many as this process may open sockets for, up to WANTED (raising the soft limit if we can)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = WANTED * FDS_PER_CALL + SPARE_FDS
    if soft < target and (hard == resource.RLIM_INFINITY or hard > soft):
        new_soft = target if hard == resource.RLIM_INFINITY else min(hard, target)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
            soft = new_soft
        except (ValueError, OSError):
            pass
    return max(0, min(WANTED, (soft - SPARE_FDS) // FDS_PER_CALL))


async def test_thousands_of_parked_elicitations_are_all_answered_right() -> None:
    n = _how_many()
    if n < 1000:
        pytest.skip(f"only {n} calls fit under this process's open-file limit")
    gate = anyio.Event()
    all_parked = anyio.Event()
    asked: set[str] = set()

    async def person(request: Any) -> ElicitationResult[Any]:
        assert isinstance(request, FormRequest)
        assert set(request.requested_schema["properties"]) == {"name", "party_size", "confirm"}
        date = request.message.removeprefix("Book a table on ").removesuffix("?")
        assert date not in asked, f"asked twice about {date}"
        asked.add(date)
        if len(asked) == n:
            all_parked.set()
        await gate.wait()  # nobody answers until every question is waiting
        return ElicitationResult.accept({"name": f"guest {date}", "party_size": _party(date), "confirm": True})

    results: dict[int, str] = {}
    failures: list[str] = []

    async def call(client: Client, i: int) -> None:
        try:
            result = await client.call_tool("book", {"date": f"d{i}"})
        except Exception as exc:  # collected, so one failure does not hide the others
            failures.append(f"d{i}: {type(exc).__name__}: {exc}")
            return
        results[i] = "" if result.is_error else result.text

    async with (
        serve_http_background(_server()) as http,
        Client(http.url, elicitation_callback=person, timeout=90) as client,
        anyio.create_task_group() as tg,
    ):
        for i in range(n):
            tg.start_soon(call, client, i)
        with anyio.fail_after(60):
            await all_parked.wait()
        assert not results and not failures  # every call is still waiting for its person
        gate.set()

    assert not failures, failures[:5]
    assert len(asked) == n
    wrong = {i: text for i, text in results.items() if text != f"booked {_party(f'd{i}')} for guest d{i} on d{i}"}
    assert not wrong, dict(list(wrong.items())[:5])
    assert len(results) == n
