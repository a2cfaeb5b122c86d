"""The official ``mcp`` 2.3.0 client in 2026-07-28 mode drives our examples through multi-round-trip.

``mcp.Client(mode="auto")`` probes ``server/discover``, adopts 2026-07-28, and meets every
question of ours as an ``InputRequiredResult``: it runs its own ``elicitation_callback`` on each
input request and retries the call with ``inputResponses`` and the echoed ``requestState``. A
tap between the SDK's client and its transport (stdio or Streamable HTTP) keeps every message
in both directions, so the tests check what went over the wire too: no server-to-client
request at all on 2026 (the questions only travel inside results), the state echoed byte for
byte, and the legacy client on the same server still asked the old way.

Servers: ``examples/elicitation/delete_folder.py`` (a resolver asks) and the bistro's
``book_table`` (``ctx.elicit``, a second question when the other date is full too), run over
stdio as they are, or over HTTP (``delete_folder.py http PORT``; the bistro through
``peers/elicitation_examples_server.py``).
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from mcp import StdioServerParameters
from mcp import types as mcp_types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from .support import PEERS, http_server_process

pytestmark = [
    pytest.mark.interop,
    pytest.mark.anyio,
    pytest.mark.timeout(60),
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),
]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "elicitation"
DELETE_FOLDER = EXAMPLES / "delete_folder.py"
BISTRO = EXAMPLES / "bistro.py"
BISTRO_OVER_HTTP = PEERS / "elicitation_examples_server.py"
STEP = 45.0  # one test's whole conversation; a hang guard only
V2026 = "2026-07-28"


class Tap:
    """A ``Transport`` around another one that keeps a copy of every message, both ways."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.incoming: list[dict[str, Any]] = []
        self.outgoing: list[dict[str, Any]] = []
        self._stack = AsyncExitStack()

    @staticmethod
    def _dump(item: SessionMessage) -> dict[str, Any]:
        return item.message.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def __aenter__(self) -> Any:
        read, write = await self._stack.enter_async_context(self.inner)
        in_send, in_recv = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
        out_send, out_recv = anyio.create_memory_object_stream[SessionMessage](math.inf)

        async def pump_in() -> None:
            async with in_send:
                async for item in read:
                    if isinstance(item, SessionMessage):
                        self.incoming.append(self._dump(item))
                    await in_send.send(item)

        async def pump_out() -> None:
            async with write:
                async for item in out_recv:
                    self.outgoing.append(self._dump(item))
                    await write.send(item)

        tg = await self._stack.enter_async_context(anyio.create_task_group())
        tg.start_soon(pump_in)
        tg.start_soon(pump_out)
        self._stack.callback(tg.cancel_scope.cancel)
        return in_recv, out_send

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._stack.__aexit__(*exc)

    # -- what went by --------------------------------------------------------------

    def server_requests(self) -> list[dict[str, Any]]:
        """Requests the server sent the client (2026 has none)."""
        return [m for m in self.incoming if "method" in m and "id" in m]

    def sent(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.outgoing if m.get("method") == method]

    def answer_to(self, request: dict[str, Any]) -> dict[str, Any]:
        return next(m for m in self.incoming if m.get("id") == request["id"] and "method" not in m)


class OfficialUser:
    """An ``elicitation_callback`` for the SDK's client: scripted answers, every question kept."""

    def __init__(self, *answers: mcp_types.ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[Any, Any]] = []  # (context.request_id, params)

    async def __call__(self, context: Any, params: Any) -> mcp_types.ElicitResult:
        self.asked.append((context.request_id, params))
        assert self.answers, f"unexpected question: {params.message!r}"
        return self.answers.pop(0)

    @property
    def messages(self) -> list[str]:
        return [params.message for _, params in self.asked]

    @property
    def keys(self) -> list[Any]:
        return [key for key, _ in self.asked]


def text_of(result: mcp_types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


def accept(**content: Any) -> mcp_types.ElicitResult:
    return mcp_types.ElicitResult(action="accept", content=content)


@contextmanager
def reach(kind: str, stdio_script: Path, http_script: Path) -> Iterator[Any]:
    """A factory of fresh transports to the server: spawned per client (stdio), or one HTTP process."""
    if kind == "stdio":
        params = StdioServerParameters(command=sys.executable, args=[str(stdio_script)])
        yield lambda: stdio_client(params)
    else:
        with http_server_process(http_script) as url:
            yield lambda: streamable_http_client(url)


def check_modern_wire(tap: Tap, tool: str) -> list[dict[str, Any]]:
    """2026 on the wire: discover first, no handshake, no server requests, state echoed exactly.

    Returns the ``tools/call`` requests for ``tool``, in order.
    """
    methods = [m.get("method") for m in tap.outgoing if "method" in m]
    assert methods[0] == "server/discover"
    assert "initialize" not in methods and "notifications/initialized" not in methods
    assert tap.server_requests() == []
    calls = [m for m in tap.sent("tools/call") if m["params"]["name"] == tool]
    for call in calls:
        assert call["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == V2026
    for earlier, later in itertools.pairwise(calls):
        result = tap.answer_to(earlier)["result"]
        if result.get("resultType") != "input_required":
            continue  # the next call is a new conversation
        assert later["id"] != earlier["id"]
        assert later["params"]["arguments"] == earlier["params"]["arguments"]
        assert later["params"]["requestState"] == result["requestState"]  # byte for byte
        assert set(later["params"]["inputResponses"]) == set(result["inputRequests"])
    return calls


# ============================================================================ delete_folder (a resolver)


@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_official_2026_client_deletes_folders_through_the_resolver(kind: str) -> None:
    user = OfficialUser(
        accept(ok=False),
        mcp_types.ElicitResult(action="decline"),
        mcp_types.ElicitResult(action="cancel"),
        accept(ok=True),
        mcp_types.ElicitResult(action="decline"),
    )
    texts: list[str] = []
    with reach(kind, DELETE_FOLDER, DELETE_FOLDER) as transport, anyio.fail_after(STEP):
        tap = Tap(transport())
        async with mcp.Client(tap, mode="auto", cache=None, elicitation_callback=user) as client:
            assert client.protocol_version == V2026
            assert client.server_info is not None and client.server_info.name == "files"
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert list(tools["delete_folder"].input_schema["properties"]) == ["path"]

            empty = await client.call_tool("delete_folder", {"path": "/tmp/empty"})
            assert text_of(empty) == "deleted /tmp/empty"
            assert user.asked == []  # nothing to confirm: the first call completed at once

            for _ in range(4):
                result = await client.call_tool("delete_folder", {"path": "/tmp/project"})
                assert not result.is_error, text_of(result)
                texts.append(text_of(result))
            trash = await client.call_tool("empty_trash", {})

    assert texts == [
        "kept the folder",
        "declined: folder not deleted",
        "cancelled: folder not deleted",
        "deleted /tmp/project",
    ]
    assert trash.is_error
    assert text_of(trash) == "empty_trash: the user declined: Empty the trash (1 file(s))?"
    assert user.messages == ["/tmp/project has 2 file(s). Delete anyway?"] * 4 + ["Empty the trash (1 file(s))?"]
    assert user.keys == ["confirm"] * 5  # input-request keys (a legacy request would carry a JSON-RPC id)
    first = user.asked[0][1]
    assert isinstance(first, mcp_types.ElicitRequestFormParams)
    assert first.requested_schema["properties"]["ok"]["type"] == "boolean"

    calls = check_modern_wire(tap, "delete_folder")
    assert len(calls) == 1 + 4 * 2  # the empty folder in one call, each question in a call and its retry
    first_round = tap.answer_to(calls[1])["result"]
    assert first_round["resultType"] == "input_required"
    assert first_round["inputRequests"]["confirm"]["method"] == "elicitation/create"
    assert tap.answer_to(calls[2])["result"]["resultType"] == "complete"


# ============================================================================ the bistro (ctx.elicit)


@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_official_2026_client_books_a_table_over_several_rounds(kind: str) -> None:
    user = OfficialUser(
        accept(try_other=True),  # the form's default date, the 26th: full as well, so asked again
        accept(try_other=True, date="2025-12-27"),
        mcp_types.ElicitResult(action="decline"),
    )
    with reach(kind, BISTRO, BISTRO_OVER_HTTP) as transport, anyio.fail_after(STEP):
        tap = Tap(transport())
        async with mcp.Client(tap, mode="auto", cache=None, elicitation_callback=user) as client:
            assert client.protocol_version == V2026
            booked = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            refused = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 4})
            free = await client.call_tool("book_table", {"date": "2025-12-20", "party_size": 3})

    assert text_of(booked) == "Table for 2 booked on 2025-12-27."
    assert text_of(refused) == "No booking made: you declined another date."
    assert text_of(free) == "Table for 3 booked on 2025-12-20."
    assert not (booked.is_error or refused.is_error or free.is_error)
    assert user.messages == [
        "We are full for 2 on 2025-12-25. Try another evening?",
        "We are full for 2 on 2025-12-26. Try another evening?",
        "We are full for 4 on 2025-12-24. Try another evening?",
    ]
    assert user.keys == ["q1", "q2", "q1"]
    schema = user.asked[0][1].requested_schema
    assert schema["properties"]["date"]["default"] == "2025-12-26"

    calls = check_modern_wire(tap, "book_table")
    assert len(calls) == 3 + 2 + 1  # two questions, one question, none
    # The second retry answers only the open question: the first answer travels in the sealed state.
    assert list(calls[1]["params"]["inputResponses"]) == ["q1"]
    assert list(calls[2]["params"]["inputResponses"]) == ["q2"]
    states = [tap.answer_to(call)["result"].get("requestState") for call in calls[:2]]
    assert all(states) and states[0] != states[1]


# ============================================================================ both eras, one server


async def test_a_legacy_and_a_2026_client_use_one_delete_folder_server_at_once() -> None:
    """The legacy client's question stays open while the 2026 client runs a whole multi-round call."""
    modern_user = OfficialUser(accept(ok=True))
    modern_texts: list[str] = []

    with http_server_process(DELETE_FOLDER) as url, anyio.fail_after(STEP):
        modern_tap = Tap(streamable_http_client(url))
        legacy_tap = Tap(streamable_http_client(url))
        async with mcp.Client(modern_tap, mode="auto", cache=None, elicitation_callback=modern_user) as modern:

            async def legacy_answer(context: Any, params: Any) -> mcp_types.ElicitResult:
                legacy_user.asked.append((context.request_id, params))
                # While this question is open, the 2026 client deletes another folder, start to finish.
                photos = await modern.call_tool("delete_folder", {"path": "/tmp/photos"})
                modern_texts.append(text_of(photos))
                return accept(ok=True)

            legacy_user = OfficialUser()
            async with mcp.Client(legacy_tap, mode="legacy", cache=None, elicitation_callback=legacy_answer) as legacy:
                assert legacy.protocol_version == "2025-11-25"
                assert modern.protocol_version == V2026
                project = await legacy.call_tool("delete_folder", {"path": "/tmp/project"})
                # The server's folders are shared: the project is gone, so 2026 deletes it without asking.
                again = await modern.call_tool("delete_folder", {"path": "/tmp/project"})

    assert text_of(project) == "deleted /tmp/project"
    assert modern_texts == ["deleted /tmp/photos"]
    assert text_of(again) == "deleted /tmp/project"
    assert legacy_user.messages == ["/tmp/project has 2 file(s). Delete anyway?"]
    assert modern_user.messages == ["/tmp/photos has 3 file(s). Delete anyway?"]
    assert modern_user.keys == ["confirm"]

    # The legacy client was asked with a server-to-client request; the 2026 client never was.
    legacy_requests = legacy_tap.server_requests()
    assert [m["method"] for m in legacy_requests] == ["elicitation/create"]
    assert legacy_user.keys == [legacy_requests[0]["id"]]
    assert legacy_tap.sent("initialize") and not legacy_tap.sent("server/discover")
    calls = check_modern_wire(modern_tap, "delete_folder")
    assert [call["params"]["arguments"]["path"] for call in calls] == ["/tmp/photos", "/tmp/photos", "/tmp/project"]
