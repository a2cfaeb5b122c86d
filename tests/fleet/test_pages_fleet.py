"""Server pages through three instances behind round-robin haproxy (issue 25).

Every request (the call, the page's GET, each POST, the re-call) goes to the next instance, so
a page opened on one is shown, answered and delivered through the others. Two and three people
at once: each answer reaches its own call exactly once, no tab shows another's question, and a
re-call after the answer was used opens a fresh page whose answer is the one used.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from elicitkit import Client
from elicitkit.client.results import CallToolResult
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from kit.page_tab import Tab

from .support import fleet

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

APP = Path(__file__).with_name("pages_app.py")
LINK = re.compile(r"http://\S+/mcp/ask/[A-Za-z0-9_\-]+")
BOOKED = re.compile(r"booked (\d+) on (\w+)@(i\d)")

ERAS = [
    pytest.param({"protocol_version": "2025-11-25"}, id="2025-sessions"),
    pytest.param({"mode": "modern", "protocol_version": "2026-07-28"}, id="2026-stateless-claims"),
]


def link_of(result: CallToolResult) -> str:
    found = LINK.search(result.text)
    assert found is not None, result.text
    return found.group(0)


def extra_args(result: CallToolResult) -> dict[str, Any]:
    return dict((result.structured_content or {}).get("addArguments") or {})


@pytest.mark.parametrize("people", [2, 3])
@pytest.mark.parametrize("era", ERAS)
async def test_people_answer_pages_through_the_fleet_each_once_to_their_own_call(
    people: int, era: dict[str, Any]
) -> None:
    names = ["alice", "bob", "carol"][:people]
    with fleet(app=APP) as f:
        async with httpx.AsyncClient(timeout=15) as raw, contextlib.AsyncExitStack() as stack:
            clients = {name: await stack.enter_async_context(Client(f.url, **era)) for name in names}
            tabs = {name: Tab(raw) for name in names}
            firsts: dict[str, CallToolResult] = {}

            async def call(name: str) -> None:
                firsts[name] = await clients[name].call_tool("book", {"day": "Friday"})

            async with anyio.create_task_group() as tg:
                for name in names:
                    tg.start_soon(call, name)
            links = {name: link_of(firsts[name]) for name in names}
            assert all(link.startswith(f.url + "/ask/") for link in links.values())  # through the balancer
            assert len(set(links.values())) == people
            guests = {name: str(index + 2) for index, name in enumerate(names)}

            async def person(name: str, url: str, value: str) -> None:
                await tabs[name].answer(url, value)
                await tabs[name].keep_reloading(url, 4)

            async with anyio.create_task_group() as tg:
                for name in names:
                    tg.start_soon(person, name, links[name], guests[name])
            used: dict[str, str] = {}

            async def recall(name: str) -> None:
                args = {"day": "Friday", **extra_args(firsts[name])}
                used[name] = (await clients[name].call_tool("book", args)).text

            async with anyio.create_task_group() as tg:
                for name in names:
                    tg.start_soon(recall, name)
            served_by: set[str] = set()
            for name in names:
                found = BOOKED.fullmatch(used[name])
                assert found is not None and found.group(1) == guests[name], (name, used[name])
                served_by.add(found.group(3))

            # the answers were used: each re-call opens a fresh page, whose answer is then the one used
            thirds = {
                name: await clients[name].call_tool("book", {"day": "Friday", **extra_args(firsts[name])})
                for name in names
            }
            fresh = {name: link_of(thirds[name]) for name in names}
            assert all(fresh[name] != links[name] for name in names)
            again = {name: str(index + 7) for index, name in enumerate(names)}
            async with anyio.create_task_group() as tg:
                for name in names:
                    tg.start_soon(person, name, fresh[name], again[name])
            for name in names:
                args = {"day": "Friday", **extra_args(thirds[name])}
                text = (await clients[name].call_tool("book", args)).text
                found = BOOKED.fullmatch(text)
                assert found is not None and found.group(1) == again[name], (name, text)
                served_by.add(found.group(3))
                gone = await clients[name].call_tool("book", args)  # used once: never again
                assert BOOKED.fullmatch(gone.text) is None, gone.text
    for name in names:
        assert tabs[name].strangers() == [], (name, tabs[name].shown)
    if era.get("mode") == "modern":  # stateless: the calls themselves went round-robin too
        assert len(served_by) > 1, served_by


@pytest.mark.parametrize("people", [2, 3])
async def test_via_web_pages_through_the_fleet_reach_the_waiting_calls(people: int) -> None:
    """URL mode on 2025 sessions: the call waits on its session's owner, the person's POST lands on
    whichever instance the balancer picks; the answer reaches the waiting call once."""
    names = ["alice", "bob", "carol"][:people]
    keys = {name: f"sk-{name}-{index}" for index, name in enumerate(names)}
    results: dict[str, str] = {}
    with fleet(app=APP) as f:
        async with httpx.AsyncClient(timeout=15) as raw:
            tabs = {name: Tab(raw) for name in names}

            def consent(name: str) -> Any:
                async def callback(request: ElicitRequest) -> ElicitationResult[Any]:
                    assert isinstance(request, UrlRequest) and request.url.startswith(f.url + "/ask/")
                    people_tasks.start_soon(tabs[name].answer, request.url, keys[name])
                    return ElicitationResult.accept()

                return callback

            async def run(name: str) -> None:
                async with Client(f.url, elicitation_callback=consent(name), protocol_version="2025-11-25") as client:
                    results[name] = (await client.call_tool("setup_key", {})).text

            async with anyio.create_task_group() as people_tasks, anyio.create_task_group() as tg:
                for name in names:
                    tg.start_soon(run, name)
    for name in names:
        assert re.fullmatch(rf"key {keys[name]}@i\d", results[name]), results[name]
        assert tabs[name].strangers() == [], (name, tabs[name].shown)
