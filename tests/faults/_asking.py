"""One interface over raw stdio and raw HTTP for tests that ask many questions at once.

A test starts ``ask`` calls by tag, waits for each call's ``elicitation/create``, answers it
(or not, or twice, or late) with exactly the bytes it wants, and reads each call's result.
Everything the server sends is routed by a reader: questions by tag, results by call id,
``notifications/cancelled`` by the request id they cancel.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import orjson
from anyio.abc import TaskGroup

from kit.raw import StdioChild, call, req

from ._support import HttpSession, fresh_http, stdio_server, streamed_call, tag_of, tool_value


class Futures:
    """Futures made on first mention, by key, so a waiter and a setter may come in either order."""

    def __init__(self) -> None:
        self._by_key: dict[Any, asyncio.Future[Any]] = {}

    def __getitem__(self, key: Any) -> asyncio.Future[Any]:
        future = self._by_key.get(key)
        if future is None:
            future = self._by_key[key] = asyncio.get_running_loop().create_future()
        return future

    def set(self, key: Any, value: Any) -> None:
        future = self[key]
        assert not future.done(), f"second value for {key!r}: {value!r} after {future.result()!r}"
        future.set_result(value)


class Asker:
    """The common half; subclasses say how a message goes out and a call starts."""

    kind = "?"

    def __init__(self) -> None:
        self.questions = Futures()  # tag -> elicitation/create message
        self.results = Futures()  # call id -> the response message
        self.cancelled: dict[Any, int] = defaultdict(int)  # request id -> notifications/cancelled seen
        self.stray: list[dict[str, Any]] = []  # anything else the server sent

    def route(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method == "elicitation/create":
            self.questions.set(tag_of(message), message)
        elif method == "notifications/cancelled":
            self.cancelled[message["params"]["requestId"]] += 1
        elif method is None and "id" in message:
            self.results.set(message["id"], message)
        else:
            self.stray.append(message)

    async def start(self, tag: str, timeout: float = 60.0) -> None:
        raise NotImplementedError

    async def send(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    async def send_many(self, messages: list[dict[str, Any]]) -> None:
        """Several messages as close together as the transport allows."""
        raise NotImplementedError

    async def tool(self, request_id: str, name: str, **arguments: Any) -> Any:
        raise NotImplementedError

    async def question(self, tag: str, timeout: float = 20.0) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            return await self.questions[tag]  # type: ignore[no-any-return]

    async def outcome(self, tag: str, timeout: float = 20.0) -> str:
        """The text the ``ask`` call for ``tag`` answered with."""
        with anyio.fail_after(timeout):
            message = await self.results[f"c-{tag}"]
        return str(tool_value(message["result"]))

    async def answer(self, question: dict[str, Any], result: dict[str, Any]) -> None:
        await self.send(response(question["id"], result))


def response(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: Any, code: int = -32603, message: str = "the user's machine broke") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


class StdioAsker(Asker):
    kind = "stdio"

    def __init__(self, child: StdioChild) -> None:
        super().__init__()
        self.child = child

    async def read_forever(self) -> None:
        while True:
            self.route(await self.child.recv(timeout=3600))

    async def start(self, tag: str, timeout: float = 60.0) -> None:
        await self.child.send(call(f"c-{tag}", "ask", tag=tag, timeout=timeout))

    async def send(self, message: dict[str, Any]) -> None:
        await self.child.send(message)

    async def send_many(self, messages: list[dict[str, Any]]) -> None:
        await self.child.write(b"".join(orjson.dumps(m) + b"\n" for m in messages))  # one write

    async def tool(self, request_id: str, name: str, **arguments: Any) -> Any:
        await self.child.send(call(request_id, name, **arguments))
        with anyio.fail_after(20):
            return tool_value((await self.results[request_id])["result"])

    async def ping(self, request_id: str) -> None:
        await self.child.send(req(request_id, "ping"))
        with anyio.fail_after(20):
            assert (await self.results[request_id]) == {"jsonrpc": "2.0", "id": request_id, "result": {}}


class HttpAsker(Asker):
    kind = "http"

    def __init__(self, session: HttpSession, tg: TaskGroup) -> None:
        super().__init__()
        self.session = session
        self.tg = tg

    async def start(self, tag: str, timeout: float = 60.0) -> None:
        started = anyio.Event()
        self.tg.start_soon(self._call, tag, timeout, started)
        await started.wait()

    async def _call(self, tag: str, timeout: float, started: anyio.Event) -> None:
        async with streamed_call(self.session, f"c-{tag}", "ask", tag=tag, timeout=timeout) as events:
            started.set()
            while True:
                message = await events.next_message(timeout=3600)
                self.route(message)
                if message.get("id") == f"c-{tag}" and "method" not in message:
                    return

    async def send(self, message: dict[str, Any]) -> None:
        resp = await self.session.post(message)
        assert resp.status_code == 202, (resp.status_code, resp.text)

    async def send_many(self, messages: list[dict[str, Any]]) -> None:
        async with anyio.create_task_group() as tg:  # concurrent POSTs: either may land first
            for message in messages:
                tg.start_soon(self.send, message)

    async def tool(self, request_id: str, name: str, **arguments: Any) -> Any:
        return await self.session.tool(request_id, name, **arguments)

    async def ping(self, request_id: str) -> None:
        await self.session.ping(request_id)


@contextlib.asynccontextmanager
async def stdio_asker(tmp_path: Path) -> AsyncIterator[StdioAsker]:
    async with stdio_server(tmp_path) as child, anyio.create_task_group() as tg:
        asker = StdioAsker(child)
        tg.start_soon(asker.read_forever)
        try:
            yield asker
        finally:
            tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def http_asker(url: str) -> AsyncIterator[HttpAsker]:
    async with fresh_http() as http, anyio.create_task_group() as tg:
        asker = HttpAsker(await HttpSession(http, url).open(), tg)
        try:
            yield asker
        finally:
            tg.cancel_scope.cancel()
