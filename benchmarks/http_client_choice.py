#!/usr/bin/env python3
"""Which HTTP client should elicitkit's Streamable HTTP client transport use?

This script measures it.  It starts a bare Starlette echo app under uvicorn in a
subprocess (on 127.0.0.1 only, on a free port), then drives it with one client
library at a time, each in its own subprocess, and prints a table.

What is measured
----------------
* Server: one Starlette app with POST routes:
    - ``/mcp/json`` reads the JSON body and returns it (``application/json``).
    - ``/mcp/sse``  reads the JSON body and answers ``text/event-stream`` with one
      ``event: message`` / ``data: <json>`` event, then ends the stream (what an
      MCP server does for a tool call).  It is a StreamingResponse, so the body is
      chunked, exactly as a real MCP server sends it.
    - ``/mcp/hang`` (only for the cancellation check) sends one event and then
      keeps the stream open.
  Two uvicorn set-ups: ``httptools`` (httptools parser + uvloop if installed,
  i.e. what ``uvicorn[standard]`` gives you) and ``h11`` (pure-Python h11 parser on
  the stdlib asyncio loop, i.e. plain ``pip install uvicorn``).
* Clients: every client runs under ``anyio.run(..., backend="asyncio")`` (that is
  how elicitkit runs), with ONE shared session/pool, 32 worker tasks in an anyio
  task group (so 32 requests are in flight at all times).  Every response is
  checked (status 200, echoed JSON-RPC id).  For SSE the client reads the body
  line by line, the way a streaming client would, with the client's own line
  iterator when it has one, and feeds the lines to one shared minimal SSE parser
  (``data:`` lines, a blank line dispatches).
* Rounds: each round is a fresh client process doing a warm-up and then N
  measured requests; rounds are interleaved across clients (round 1 of every
  client, then round 2, ...) and the table shows the median over rounds.
  Columns: calls/s, p50/p99 latency, the client process's CPU per call (user+sys,
  all threads), the server's CPU per call, throughput relative to the raw floor,
  and "other load": cores used by processes that are neither the client nor the
  server during the run (anything above ~0.2 means a neighbour disturbed it).
  Before each run the script waits (``--quiet-wait``, default up to 15 s) for the
  machine to go quiet.
* "fair" rows give every client a pool of exactly 32 keep-alive connections;
  rows named ``*-default`` use the library's out-of-the-box pool settings (run
  against the first server only, unless ``--defaults-everywhere``).
* ``--checks``: for each client, (a) 40 times in a row, open an SSE stream that
  never ends, cancel the read with ``anyio.move_on_after(0.1)``, then make a
  normal request under ``anyio.fail_after(5)``.  40 > the pool size of 32, so a
  client that leaks a connection slot on cancellation hangs and fails, and a
  client that turns the cancellation into its own ``CancelledError`` escapes the
  anyio cancel scope and fails.  (b) one SSE event whose ``data:`` line is ~4 MiB
  (a tool result carrying an image), read line by line like the rest.

Needs
-----
Python >= 3.11 on Linux (the CPU columns read /proc), and, in a throwaway venv::

    pip install starlette uvicorn httptools uvloop anyio orjson sniffio \
                aiohttp httpx httpcore h11                       # required
    pip install httpx2 httpx-aiohttp niquests curl_cffi aiosonic pyreqwest  # optional

A client whose library is missing is reported as "not installed" and skipped.
``sniffio`` matters for the httpx/httpcore rows: anyio >= 4.11 no longer pulls
it in, and without it httpcore 1.0.9 retries a failing ``import sniffio`` several
times per request (the header line says whether it was installed).

Reproduce
---------
::

    python3 -m venv /tmp/httpbench-venv
    /tmp/httpbench-venv/bin/pip install starlette uvicorn httptools uvloop anyio orjson sniffio \
        aiohttp httpx httpcore h11 httpx2 httpx-aiohttp niquests curl_cffi aiosonic pyreqwest
    /tmp/httpbench-venv/bin/python benchmarks/http_client_choice.py --checks --quiet-wait 20

It takes about 10 minutes on an idle 2-core machine (longer on a busy one).
Options: ``--requests 3000 --warmup 500 --rounds 3 --concurrency 32``,
``--servers httptools,h11``, ``--kinds json,sse``, ``--clients raw,httpx,...``
(``--list`` shows the names), ``--json results.json`` to save raw numbers,
``--quick`` for a fast smoke run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.metadata
import inspect
import json
import os
import resource
import select
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

HOST = "127.0.0.1"
PATH_JSON = "/mcp/json"
PATH_SSE = "/mcp/sse"
PATH_HANG = "/mcp/hang"
REQUEST_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


# --------------------------------------------------------------------------- server


def build_app() -> Any:
    import anyio
    import orjson
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    async def echo_json(request: Request) -> Response:
        message = orjson.loads(await request.body())
        return Response(orjson.dumps(message), media_type="application/json")

    async def echo_sse(request: Request) -> Response:
        message = orjson.loads(await request.body())
        event = b"event: message\ndata: " + orjson.dumps(message) + b"\n\n"

        async def one_event() -> Any:
            yield event

        return StreamingResponse(one_event(), media_type="text/event-stream", headers={"cache-control": "no-cache"})

    async def hang_sse(request: Request) -> Response:
        message = orjson.loads(await request.body())
        event = b"event: message\ndata: " + orjson.dumps(message) + b"\n\n"

        async def event_then_hang() -> Any:
            yield event
            await anyio.sleep(30)

        return StreamingResponse(event_then_hang(), media_type="text/event-stream")

    return Starlette(
        routes=[
            Route(PATH_JSON, echo_json, methods=["POST"]),
            Route(PATH_SSE, echo_sse, methods=["POST"]),
            Route(PATH_HANG, hang_sse, methods=["POST"]),
        ]
    )


def server_main(variant: str) -> None:
    import uvicorn

    if variant == "httptools":
        http = "httptools"
        try:
            import uvloop  # noqa: F401

            loop = "uvloop"
        except ImportError:
            loop = "asyncio"
    elif variant == "h11":
        http, loop = "h11", "asyncio"
    else:
        raise SystemExit(f"unknown server variant {variant!r}")

    # proto must be IPPROTO_TCP (not the default 0): asyncio only sets TCP_NODELAY on accepted
    # sockets whose proto is IPPROTO_TCP, and without it the h11/asyncio server hits the
    # Nagle + delayed-ACK stall (~40 ms per response).  uvicorn's own bind does the same.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        build_app(),
        host=HOST,
        port=port,
        http=http,
        loop=loop,
        lifespan="off",
        access_log=False,
        log_level="warning",
        backlog=2048,
    )
    server = uvicorn.Server(config)
    print(
        json.dumps({"port": port, "http": http, "loop": loop, "uvicorn": _version("uvicorn")}),
        flush=True,
    )
    server.run(sockets=[sock])


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


# --------------------------------------------------------------------------- SSE helpers


class SSEParser:
    """Minimal SSE parser shared by every client: collects ``data:`` lines, a blank line dispatches."""

    __slots__ = ("_data", "events")

    def __init__(self) -> None:
        self._data: list[str] = []
        self.events: list[str] = []

    def line(self, raw: str | bytes) -> None:
        text = raw.decode() if isinstance(raw, (bytes, bytearray)) else raw
        text = text.rstrip("\r\n")
        if not text:
            if self._data:
                self.events.append("\n".join(self._data))
                self._data = []
            return
        if text.startswith("data:"):
            value = text[5:]
            self._data.append(value[1:] if value.startswith(" ") else value)
        # event:, id:, retry: and comments are irrelevant here


class LineSplitter:
    """Turns arbitrary byte chunks into lines (for clients that only give chunks)."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []  # pieces of an unfinished line (no quadratic +=)

    def feed(self, chunk: bytes) -> list[bytes]:
        if b"\n" not in chunk:
            if chunk:
                self._parts.append(chunk)
            return []
        lines = chunk.split(b"\n")
        if self._parts:
            self._parts.append(lines[0])
            lines[0] = b"".join(self._parts)
            self._parts = []
        tail = lines.pop()
        if tail:
            self._parts.append(tail)
        return lines


def feed_chunks_factory() -> tuple[SSEParser, Callable[[bytes], None]]:
    parser = SSEParser()
    splitter = LineSplitter()

    def feed(chunk: bytes) -> None:
        for line in splitter.feed(bytes(chunk)):
            parser.line(line)

    return parser, feed


# --------------------------------------------------------------------------- client adapters
#
# Every adapter has:   open(base_url) / close()
#                      json(body) -> bytes            (whole JSON body)
#                      sse(body, path) -> SSEParser   (body read line by line until EOF)


class Adapter:
    dist = ""  # distribution whose version is reported
    pool = ""  # pool settings, shown in the table

    def __init__(self, pool_size: int) -> None:
        self.pool_size = pool_size

    async def open(self, base_url: str) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        pass

    async def json(self, body: bytes) -> bytes:
        raise NotImplementedError

    async def sse(self, body: bytes, path: str = PATH_SSE) -> SSEParser:
        raise NotImplementedError


class RawAdapter(Adapter):
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: the floor, not a product."""

    dist = ""

    async def open(self, base_url: str) -> None:
        self.pool = f"{self.pool_size} keep-alive conns (one per worker)"
        host_port = base_url.split("//", 1)[1]
        self._host, port = host_port.split(":")
        self._port = int(port)
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._fixed = f"Host: {host_port}\r\n".encode() + b"".join(
            f"{k}: {v}\r\n".encode() for k, v in REQUEST_HEADERS.items()
        )

    async def close(self) -> None:
        for _, writer in self._idle:
            writer.close()

    async def _send(self, path: bytes, body: bytes) -> tuple[Any, int, int | None, bool, bool]:
        if self._idle:
            conn = self._idle.pop()
        else:
            conn = await asyncio.open_connection(self._host, self._port)
        reader, writer = conn
        writer.write(
            b"POST "
            + path
            + b" HTTP/1.1\r\n"
            + self._fixed
            + b"content-length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length: int | None = None
        chunked = close = False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"connection":
                close = b"close" in value.lower()
        return conn, status, length, chunked, close

    def _release(self, conn: Any, close: bool) -> None:
        if close:
            conn[1].close()
        else:
            self._idle.append(conn)

    async def json(self, body: bytes) -> bytes:
        conn, status, length, _chunked, close = await self._send(PATH_JSON.encode(), body)
        try:
            if status != 200 or length is None:
                raise RuntimeError(f"unexpected response: {status} length={length}")
            data = await conn[0].readexactly(length)
        except BaseException:
            conn[1].close()
            raise
        self._release(conn, close)
        return data

    async def sse(self, body: bytes, path: str = PATH_SSE) -> SSEParser:
        conn, status, length, chunked, close = await self._send(path.encode(), body)
        parser, feed = feed_chunks_factory()
        reader = conn[0]
        try:
            if status != 200:
                raise RuntimeError(f"status {status}")
            if length is not None:
                feed(await reader.readexactly(length))
            elif chunked:
                while True:
                    size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                    if size == 0:
                        while await reader.readuntil(b"\r\n") != b"\r\n":
                            pass
                        break
                    feed((await reader.readexactly(size + 2))[:-2])
            else:
                close = True
                while chunk := await reader.read(65536):
                    feed(chunk)
        except BaseException:
            conn[1].close()
            raise
        self._release(conn, close)
        return parser


class HttpxAdapter(Adapter):
    dist = "httpx"
    module = "httpx"

    def __init__(self, pool_size: int, defaults: bool = False) -> None:
        super().__init__(pool_size)
        self.defaults = defaults

    def _limits(self) -> Any:
        httpx = importlib.import_module(self.module)

        if self.defaults:
            self.pool = "Limits() = max_connections=100, max_keepalive=20"
            return httpx.Limits(max_connections=100, max_keepalive_connections=20)
        self.pool = f"Limits(max_connections={self.pool_size}, max_keepalive={self.pool_size})"
        return httpx.Limits(max_connections=self.pool_size, max_keepalive_connections=self.pool_size)

    def _client(self, limits: Any) -> Any:
        httpx = importlib.import_module(self.module)
        return httpx.AsyncClient(limits=limits, timeout=30.0, trust_env=False)

    async def open(self, base_url: str) -> None:
        self._c = self._client(self._limits())
        self._json_url = base_url + PATH_JSON
        self._base = base_url

    async def close(self) -> None:
        await self._c.aclose()

    async def json(self, body: bytes) -> bytes:
        r = await self._c.post(self._json_url, content=body, headers=REQUEST_HEADERS)
        if r.status_code != 200:
            raise RuntimeError(f"status {r.status_code}")
        return r.content

    async def sse(self, body: bytes, path: str = PATH_SSE) -> SSEParser:
        parser = SSEParser()
        async with self._c.stream("POST", self._base + path, content=body, headers=REQUEST_HEADERS) as r:
            if r.status_code != 200:
                raise RuntimeError(f"status {r.status_code}")
            async for line in r.aiter_lines():
                parser.line(line)
        return parser


class Httpx2Adapter(HttpxAdapter):
    """Pydantic's maintained continuation of httpx (``httpx2`` on PyPI, same API)."""

    dist = "httpx2"
    module = "httpx2"


class HttpxAiohttpAdapter(HttpxAdapter):
    """httpx's API, aiohttp underneath (the ``httpx-aiohttp`` package)."""

    dist = "httpx-aiohttp"

    def _client(self, limits: Any) -> Any:
        from httpx_aiohttp import HttpxAiohttpClient

        return HttpxAiohttpClient(limits=limits, timeout=30.0, trust_env=False)


class HttpcoreAdapter(Adapter):
    dist = "httpcore"

    def __init__(self, pool_size: int, defaults: bool = False) -> None:
        super().__init__(pool_size)
        self.defaults = defaults

    async def open(self, base_url: str) -> None:
        import httpcore

        if self.defaults:
            self.pool = "max_connections=10 (default)"
            self._p = httpcore.AsyncConnectionPool()
        else:
            self.pool = f"max_connections={self.pool_size}"
            self._p = httpcore.AsyncConnectionPool(max_connections=self.pool_size)
        self._base = base_url
        self._headers = [(k.encode(), v.encode()) for k, v in REQUEST_HEADERS.items()]

    async def close(self) -> None:
        await self._p.aclose()

    async def json(self, body: bytes) -> bytes:
        r = await self._p.request("POST", self._base + PATH_JSON, headers=self._headers, content=body)
        if r.status != 200:
            raise RuntimeError(f"status {r.status}")
        return r.content

    async def sse(self, body: bytes, path: str = PATH_SSE) -> SSEParser:
        parser, feed = feed_chunks_factory()
        async with self._p.stream("POST", self._base + path, headers=self._headers, content=body) as r:
            if r.status != 200:
                raise RuntimeError(f"status {r.status}")
            async for chunk in r.aiter_stream():
                feed(chunk)
        return parser


class AiohttpAdapter(Adapter):
    """SSE read as ``resp.content.iter_any()`` chunks split into lines by LineSplitter.

    With ``readline=True`` it uses ``async for line in resp.content`` instead, which is
    aiohttp's own line iterator but refuses lines longer than 2 x read_bufsize
    (512 KiB by default) -- see the large-event check.
    """

    dist = "aiohttp"

    def __init__(self, pool_size: int, defaults: bool = False, readline: bool = False) -> None:
        super().__init__(pool_size)
        self.defaults = defaults
        self.readline = readline

    async def open(self, base_url: str) -> None:
        import aiohttp

        if self.defaults:
            self.pool = "TCPConnector(limit=100) (default)"
            connector = aiohttp.TCPConnector()
        else:
            self.pool = f"TCPConnector(limit={self.pool_size})"
            connector = aiohttp.TCPConnector(limit=self.pool_size)
        self._s = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30))
        self._base = base_url

    async def close(self) -> None:
        await self._s.close()

    async def json(self, body: bytes) -> bytes:
        async with self._s.post(self._base + PATH_JSON, data=body, headers=REQUEST_HEADERS) as r:
            if r.status != 200:
                raise RuntimeError(f"status {r.status}")
            return await r.read()

    async def sse(self, body: bytes, path: str = PATH_SSE) -> SSEParser:
        parser = SSEParser()
        async with self._s.post(self._base + path, data=body, headers=REQUEST_HEADERS) as r:
            if r.status != 200:
                raise RuntimeError(f"status {r.status}")
            if self.readline:
                async for line in r.content:  # StreamReader iterates line by line
                    parser.line(line)
            else:
                splitter = LineSplitter()
                async for chunk in r.content.iter_any():
                    for line in splitter.feed(chunk):
                        parser.line(line)
        return parser


class NiquestsAdapter(Adapter):
    dist = "niquests"

    def __init__(self, pool_size: int, defaults: bool = False) -> None:
        super().__init__(pool_size)
        self.defaults = defaults

    async def open(self, base_url: str) -> None:
        import niquests

        if self.defaults:
            self.pool = "pool_maxsize=10 (default)"
            self._s = niquests.AsyncSession()
        else:
            self.pool = f"pool_maxsize={self.pool_size}"
            self._s = niquests.AsyncSession(pool_maxsize=self.pool_size)
        self._s.trust_env = False
        self._base = base_url

    async def close(self) -> None:
        await self._s.close()

    async def json(self, body: bytes) -> bytes:
        r = await self._s.post(self._base + PATH_JSON, data=body, headers=REQUEST_HEADERS, timeout=30)
        if r.status_code != 200:
            raise RuntimeError(f"status {r.status_code}")
        content = r.content  # a plain attribute, or an awaitable for lazy/streamed responses
        return await content if inspect.isawaitable(content) else content

    async def sse(self, body: bytes, path: str = PATH_SSE) -> SSEParser:
        parser = SSEParser()
        r = await self._s.post(self._base + path, data=body, headers=REQUEST_HEADERS, stream=True, timeout=30)
        try:
            if r.status_code != 200:
                raise RuntimeError(f"status {r.status_code}")
            async for line in r.iter_lines():
                parser.line(line)
        finally:
            await r.close()
        return parser


class CurlCffiAdapter(Adapter):
    dist = "curl_cffi"

    def __init__(self, pool_size: int, defaults: bool = False) -> None:
        super().__init__(pool_size)
        self.defaults = defaults

    async def open(self, base_url: str) -> None:
        from curl_cffi.requests import AsyncSession

        if self.defaults:
            self.pool = "max_clients=10 (default)"
            self._s = AsyncSession(trust_env=False, timeout=30)
        else:
            self.pool = f"max_clients={self.pool_size}"
            self._s = AsyncSession(max_clients=self.pool_size, trust_env=False, timeout=30)
        self._base = base_url

    async def close(self) -> None:
        await self._s.close()

    async def json(self, body: bytes) -> bytes:
        r = await self._s.post(self._base + PATH_JSON, data=body, headers=REQUEST_HEADERS)
        if r.status_code != 200:
            raise RuntimeError(f"status {r.status_code}")
        return r.content

    async def sse(self, body: bytes, path: str = PATH_SSE) -> SSEParser:
        parser = SSEParser()
        async with self._s.stream("POST", self._base + path, data=body, headers=REQUEST_HEADERS) as r:
            if r.status_code != 200:
                raise RuntimeError(f"status {r.status_code}")
            async for line in r.aiter_lines():
                parser.line(line)
        return parser


class AiosonicAdapter(Adapter):
    dist = "aiosonic"

    def __init__(self, pool_size: int, defaults: bool = False) -> None:
        super().__init__(pool_size)
        self.defaults = defaults

    async def open(self, base_url: str) -> None:
        from aiosonic import HTTPClient, TCPConnector
        from aiosonic.pools import PoolConfig

        if self.defaults:
            self.pool = "PoolConfig(size=30) (default)"
            self._c = HTTPClient()
        else:
            self.pool = f"PoolConfig(size={self.pool_size})"
            self._c = HTTPClient(connector=TCPConnector(pool_configs={":default": PoolConfig(size=self.pool_size)}))
        self._base = base_url

    async def close(self) -> None:
        await self._c.connector.cleanup()

    async def json(self, body: bytes) -> bytes:
        r = await self._c.post(self._base + PATH_JSON, data=body, headers=REQUEST_HEADERS)
        if r.status_code != 200:
            raise RuntimeError(f"status {r.status_code}")
        return await r.content()

    async def sse(self, body: bytes, path: str = PATH_SSE) -> SSEParser:
        parser = SSEParser()
        r = await self._c.post(self._base + path, data=body, headers=REQUEST_HEADERS)
        if r.status_code != 200:
            raise RuntimeError(f"status {r.status_code}")
        async for line in r.iter_lines():
            parser.line(line)
        return parser


class PyreqwestAdapter(Adapter):
    dist = "pyreqwest"

    async def open(self, base_url: str) -> None:
        from pyreqwest.client import ClientBuilder

        self.pool = f"max_connections={self.pool_size} (idle pool unbounded by default)"
        self._c = ClientBuilder().max_connections(self.pool_size).build()
        self._base = base_url

    async def close(self) -> None:
        await self._c.close()

    async def json(self, body: bytes) -> bytes:
        r = await self._c.post(self._base + PATH_JSON).headers(REQUEST_HEADERS).body_bytes(body).build().send()
        if r.status != 200:
            raise RuntimeError(f"status {r.status}")
        return bytes(await r.bytes())

    async def sse(self, body: bytes, path: str = PATH_SSE) -> SSEParser:
        parser, feed = feed_chunks_factory()
        request = self._c.post(self._base + path).headers(REQUEST_HEADERS).body_bytes(body).build_streamed()
        async with request as r:
            if r.status != 200:
                raise RuntimeError(f"status {r.status}")
            reader = r.body_reader
            while (chunk := await reader.read_chunk()) is not None:
                feed(chunk)
        return parser


# name -> (factory(pool_size), description)
CLIENTS: dict[str, tuple[Callable[[int], Adapter], str]] = {
    "raw": (RawAdapter, "raw asyncio HTTP/1.1 (floor)"),
    "aiohttp": (AiohttpAdapter, "aiohttp.ClientSession"),
    "httpx": (HttpxAdapter, "httpx.AsyncClient"),
    "httpx2": (Httpx2Adapter, "httpx2.AsyncClient (Pydantic's httpx continuation)"),
    "httpcore": (HttpcoreAdapter, "httpcore.AsyncConnectionPool"),
    "httpx-aiohttp": (HttpxAiohttpAdapter, "httpx API over aiohttp (httpx-aiohttp)"),
    "niquests": (NiquestsAdapter, "niquests.AsyncSession"),
    "curl_cffi": (CurlCffiAdapter, "curl_cffi AsyncSession"),
    "aiosonic": (AiosonicAdapter, "aiosonic.HTTPClient"),
    "pyreqwest": (PyreqwestAdapter, "pyreqwest Client (Rust reqwest)"),
    "aiohttp-readline": (
        lambda n: AiohttpAdapter(n, readline=True),
        "aiohttp, SSE via `async for line in resp.content`",
    ),
    "aiohttp-default": (lambda n: AiohttpAdapter(n, defaults=True), "aiohttp.ClientSession (defaults)"),
    "httpx-default": (lambda n: HttpxAdapter(n, defaults=True), "httpx.AsyncClient (defaults)"),
    "httpx2-default": (lambda n: Httpx2Adapter(n, defaults=True), "httpx2.AsyncClient (defaults)"),
    "httpcore-default": (lambda n: HttpcoreAdapter(n, defaults=True), "httpcore pool (defaults)"),
    "niquests-default": (lambda n: NiquestsAdapter(n, defaults=True), "niquests (defaults)"),
    "curl_cffi-default": (lambda n: CurlCffiAdapter(n, defaults=True), "curl_cffi (defaults)"),
    "aiosonic-default": (lambda n: AiosonicAdapter(n, defaults=True), "aiosonic (defaults)"),
}


# --------------------------------------------------------------------------- client driver


def make_bodies(start: int, n: int) -> list[bytes]:
    import orjson

    return [
        orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {
                    "name": "echo",
                    "arguments": {"text": "The quick brown fox jumps over the lazy dog.", "n": i},
                    "_meta": {"progressToken": f"tok-{i}"},
                },
            }
        )
        for i in range(start, start + n)
    ]


async def run_batch(call: Callable[[bytes], Awaitable[int]], start: int, n: int, concurrency: int) -> dict[str, float]:
    import anyio

    bodies = make_bodies(start, n)
    latencies = [0.0] * n
    cursor = 0

    async def worker() -> None:
        nonlocal cursor
        perf = time.perf_counter
        while cursor < n:
            i = cursor
            cursor += 1
            t0 = perf()
            got = await call(bodies[i])
            latencies[i] = perf() - t0
            if got != start + i:
                raise RuntimeError(f"response id {got!r} != request id {start + i}")

    cpu0 = _cpu()
    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    wall = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    latencies.sort()
    return {
        "rps": n / wall,
        "p50_ms": latencies[n // 2] * 1000,
        "p99_ms": latencies[min(n - 1, int(n * 0.99))] * 1000,
        "cpu_us": cpu / n * 1e6,
    }


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


async def client_main_async(args: argparse.Namespace) -> dict[str, Any]:
    import anyio
    import orjson

    factory, _ = CLIENTS[args.client]
    adapter = factory(args.concurrency)
    await adapter.open(args.base_url)
    try:
        if args.kind == "checks":
            return {
                **await cancel_check(adapter),
                **await large_event_check(adapter),
                "pool": adapter.pool,
                "version": _version(adapter.dist) if adapter.dist else "",
            }

        if args.kind == "json":

            async def call(body: bytes) -> int:
                return orjson.loads(await adapter.json(body))["id"]

        else:

            async def call(body: bytes) -> int:
                parser = await adapter.sse(body)
                if len(parser.events) != 1:
                    raise RuntimeError(f"expected 1 SSE event, got {len(parser.events)}")
                return orjson.loads(parser.events[0])["id"]

        await run_batch(call, 10_000_000, args.warmup, args.concurrency)
        rounds = []
        for r in range(args.rounds):
            rounds.append(await run_batch(call, (r + 1) * 1_000_000, args.requests, args.concurrency))
        version = _version(adapter.dist) if adapter.dist else "python " + sys.version.split()[0]
        return {"rounds": rounds, "pool": adapter.pool, "version": version}
    finally:
        with anyio.move_on_after(5, shield=True):
            await adapter.close()


async def cancel_check(adapter: Adapter) -> dict[str, str]:
    import anyio
    import orjson

    body = make_bodies(1, 1)[0]
    t_cancel = []
    i = 0
    try:
        for i in range(40):
            with anyio.fail_after(5):
                t0 = time.perf_counter()
                with anyio.move_on_after(0.1) as scope:
                    await adapter.sse(body, PATH_HANG)
                t_cancel.append(time.perf_counter() - t0)
                if not scope.cancelled_caught:
                    return {"cancel": f"stream ended instead of hanging (iter {i})"}
                if orjson.loads(await adapter.json(body))["id"] != 1:
                    return {"cancel": "bad echo after cancel"}
    except TimeoutError:
        return {"cancel": f"HANG after {i} cancellations (pool slot leaked?)"}
    except asyncio.CancelledError as exc:
        # Only reachable when the library raised a CancelledError of its own instead of
        # letting the cancel scope's one through, so anyio.move_on_after could not recognise it.
        return {"cancel": f"FAIL: CancelledError({exc}) escaped anyio.move_on_after"}
    except Exception as exc:
        return {"cancel": f"error after {i} cancellations: {type(exc).__name__}: {exc}"}
    return {"cancel": f"ok (40/40, each cancel took <= {max(t_cancel) * 1000:.0f} ms)"}


async def large_event_check(adapter: Adapter) -> dict[str, str]:
    """One SSE event whose data line is ~4 MiB (a tool result with a big image, say)."""
    import anyio
    import orjson

    blob = "A" * (4 * 1024 * 1024)
    body = orjson.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "image", "data": blob}]}})
    try:
        with anyio.fail_after(30):
            t0 = time.perf_counter()
            parser = await adapter.sse(body)
            took = time.perf_counter() - t0
        if len(parser.events) != 1:
            return {"large": f"FAIL: {len(parser.events)} events"}
        if orjson.loads(parser.events[0])["result"]["content"][0]["data"] != blob:
            return {"large": "FAIL: payload mismatch"}
    except Exception as exc:
        return {"large": _one_line(f"FAIL: {type(exc).__name__}: {exc}")[:100]}
    return {"large": f"ok ({took * 1000:.0f} ms)"}


def client_main(args: argparse.Namespace) -> None:
    import anyio

    factory, _ = CLIENTS[args.client]
    try:
        probe = factory(args.concurrency)
        if probe.dist:
            importlib.import_module(probe.dist.replace("-", "_"))
    except ImportError as exc:
        print(json.dumps({"skip": f"not installed ({exc.name})"}), flush=True)
        return
    result = anyio.run(client_main_async, args, backend="asyncio")
    print(json.dumps(result), flush=True)


# --------------------------------------------------------------------------- orchestration

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def pin(cpu: int | None) -> None:
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user+sys, all threads) used so far by a process (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return 0.0


def _system_busy() -> float:
    """CPU seconds spent busy by the whole machine so far (Linux /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        return (sum(values) - values[3] - values[4]) / CLK_TCK  # minus idle and iowait
    except (OSError, IndexError, ValueError):
        return 0.0


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def wait_for_quiet(max_wait: float, threshold: float = 0.25) -> float:
    """Wait (up to max_wait s) until other processes use < threshold cores; return that load."""
    deadline = time.monotonic() + max_wait
    while True:
        b0, t0 = _system_busy(), time.monotonic()
        time.sleep(1.0)
        load = (_system_busy() - b0) / (time.monotonic() - t0)
        if load < threshold or time.monotonic() >= deadline:
            return load


def start_server(variant: str, cpu: int | None) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    cmd = [sys.executable, __file__, "_server", variant]
    if cpu is not None:
        cmd += ["--cpu", str(cpu)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    if not ready:
        proc.kill()
        raise RuntimeError("server did not report its port")
    info = json.loads(proc.stdout.readline())
    deadline = time.monotonic() + 30
    while True:  # wait until uvicorn really answers
        try:
            with socket.create_connection((HOST, info["port"]), timeout=2) as s:
                body = b'{"id":0}'
                s.sendall(
                    f"POST {PATH_JSON} HTTP/1.1\r\nHost: {HOST}\r\ncontent-type: application/json\r\n"
                    f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
                    + body
                )
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    return proc, info
        except OSError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError("server did not start")
        time.sleep(0.1)


def stop_server(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_client(
    args: argparse.Namespace, client: str, kind: str, server: subprocess.Popen[str], port: int, cpu: int | None
) -> dict[str, Any]:
    """One client process: warm-up + one measured round (or the checks)."""
    cmd = [
        sys.executable, __file__, "_client", client, kind, f"http://{HOST}:{port}",
        "--requests", str(args.requests), "--warmup", str(args.warmup),
        "--rounds", "1", "--concurrency", str(args.concurrency),
    ]  # fmt: skip
    if cpu is not None:
        cmd += ["--cpu", str(cpu)]
    quiet = wait_for_quiet(args.quiet_wait) if args.quiet_wait > 0 else None
    busy0, srv0, kids0, t0 = _system_busy(), _proc_cpu(server.pid), _children_cpu(), time.monotonic()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout}s"}
    wall = time.monotonic() - t0
    server_cpu = _proc_cpu(server.pid) - srv0
    other = (_system_busy() - busy0 - server_cpu - (_children_cpu() - kids0)) / wall
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    text = [ln.strip(" |+-") for ln in out.stderr.splitlines()]
    text = [ln for ln in text if ln and not ln.startswith(("File ", "^", "~"))]
    if not lines:
        return {"error": _one_line((text or ["no output"])[-1])}
    result: dict[str, Any] = json.loads(lines[-1])
    if out.returncode != 0:
        # The client printed its result and then died (seen: a native extension aborting
        # during interpreter shutdown).  Keep the numbers, record the crash.
        fatal = next((ln for ln in text if ln.startswith("Fatal Python error")), text[-1] if text else "")
        result["crash"] = _one_line(f"exit {out.returncode}: {fatal}")
    if "rounds" in result:
        r = result["rounds"][0]
        r["server_cpu_us"] = server_cpu / (args.warmup + args.requests) * 1e6
        r["other_load"] = max(0.0, other)
        r["quiet_before"] = quiet
    return result


def _one_line(text: str) -> str:
    return " ".join(text.replace("|", "/").split())[:160]


METRICS = ("rps", "p50_ms", "p99_ms", "cpu_us", "server_cpu_us", "other_load")


def summarize(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in rounds) for k in METRICS}


def print_tables(rows: list[dict[str, Any]], out: Any = sys.stdout) -> None:
    servers = list(dict.fromkeys(r["server"] for r in rows if r["kind"] != "checks"))
    for server in servers:
        srows = [r for r in rows if r["server"] == server and r["kind"] != "checks"]
        print(f"\n### server: uvicorn {srows[0]['server_desc']}\n", file=out)
        print(
            "| response | client | pool | calls/s | p50 ms | p99 ms "
            "| client CPU µs/call | server CPU µs/call | vs raw | other load |",
            file=out,
        )
        print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|", file=out)
        for kind in ("json", "sse"):
            krows = [r for r in srows if r["kind"] == kind]
            floor = next((r["summary"]["rps"] for r in krows if r["client"] == "raw" and "summary" in r), None)
            for r in krows:
                if "summary" not in r:
                    print(f"| {kind} | {r['client']} | | {r.get('error') or r.get('skip')} | | | | | | |", file=out)
                    continue
                s = r["summary"]
                rel = f"{s['rps'] / floor:.2f}" if floor else ""
                print(
                    f"| {kind} | {r['client']} | {r['pool']} | {s['rps']:,.0f} | "
                    f"{s['p50_ms']:.1f} | {s['p99_ms']:.1f} | {s['cpu_us']:.0f} | {s['server_cpu_us']:.0f} | "
                    f"{rel} | {s['other_load']:.2f} |",
                    file=out,
                )
    crashed = [r for r in rows if r.get("crashes")]
    if crashed:
        print("\nclient processes that printed their result and then crashed:", file=out)
        for r in crashed:
            print(f"- {r['server']} {r['kind']} {r['client']}: {r['crashes'][0]} (x{len(r['crashes'])})", file=out)
    checks = [r for r in rows if r["kind"] == "checks"]
    if checks:
        print(
            "\n### checks: cancellation (anyio.move_on_after on an open SSE stream, 40x, pool of 32) "
            "and one 4 MiB SSE event\n",
            file=out,
        )
        print("| client | cancellation under anyio | 4 MiB SSE event |", file=out)
        print("|---|---|---|", file=out)
        for r in checks:
            failure = r.get("error") or r.get("skip")
            crash = f" (process then crashed: {r['crash']})" if r.get("crash") else ""
            print(f"| {r['client']} | {r.get('cancel') or failure} | {r.get('large') or failure}{crash} |", file=out)
    versions = {r["client"]: r["version"] for r in rows if r.get("version")}
    if versions:
        print(
            "\nversions: "
            + ", ".join(f"{k} {v}" for k, v in versions.items() if not k.endswith(("-default", "-readline"))),
            file=out,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd")

    p_server = sub.add_parser("_server")
    p_server.add_argument("variant")
    p_server.add_argument("--cpu", type=int)

    p_client = sub.add_parser("_client")
    p_client.add_argument("client")
    p_client.add_argument("kind")
    p_client.add_argument("base_url")
    p_client.add_argument("--cpu", type=int)

    for p in (parser, p_client):
        p.add_argument("--requests", type=int, default=3000, help="requests per measured round")
        p.add_argument("--warmup", type=int, default=500, help="warm-up requests before each round")
        p.add_argument("--rounds", type=int, default=3)
        p.add_argument("--concurrency", type=int, default=32, help="requests in flight (and fair pool size)")
    parser.add_argument("--servers", default="httptools,h11")
    parser.add_argument("--kinds", default="json,sse")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument(
        "--defaults-everywhere", action="store_true",
        help="run the *-default clients against every server (default: the first server only)",
    )  # fmt: skip
    parser.add_argument("--checks", action="store_true", help="also run the cancellation and 4 MiB event checks")
    parser.add_argument(
        "--pin", action="store_true", help="pin the server to CPU 0 and each client to CPU 1 (default: no pinning)"
    )
    parser.add_argument(
        "--quiet-wait", type=float, default=15,
        help="before each client run, wait up to this many seconds for other processes to go quiet (0: off)",
    )  # fmt: skip
    parser.add_argument("--timeout", type=float, default=300, help="seconds allowed per client run")
    parser.add_argument("--quick", action="store_true", help="1000 requests, 200 warm-up: a smoke run")
    parser.add_argument("--json", help="also write raw results to this file")
    parser.add_argument("--list", action="store_true", help="list client names and exit")
    args = parser.parse_args()

    if args.cmd == "_server":
        pin(args.cpu)
        server_main(args.variant)
        return
    if args.cmd == "_client":
        pin(args.cpu)
        client_main(args)
        return
    if args.list:
        for name, (_, desc) in CLIENTS.items():
            print(f"{name:20} {desc}")
        return
    if args.quick:
        args.requests, args.warmup = 1000, 200

    clients = [c for c in args.clients.split(",") if c]
    unknown = [c for c in clients if c not in CLIENTS]
    if unknown:
        raise SystemExit(f"unknown clients {unknown}; see --list")
    kinds = [k for k in args.kinds.split(",") if k]
    do_pin = args.pin and (os.cpu_count() or 1) >= 2
    server_cpu, client_cpu = (0, 1) if do_pin else (None, None)

    print(
        f"# python {sys.version.split()[0]}, {os.cpu_count()} CPUs, pinned={do_pin}, "
        f"concurrency={args.concurrency}, {args.rounds} rounds x {args.requests} requests "
        f"(each after {args.warmup} warm-up), sniffio installed={_version('sniffio') != '?'}",
        file=sys.stderr,
    )
    rows: list[dict[str, Any]] = []
    servers = [s for s in args.servers.split(",") if s]
    for variant in servers:
        proc, info = start_server(variant, server_cpu)
        desc = f"{info['uvicorn']} http={info['http']} loop={info['loop']}"
        table: dict[tuple[str, str], dict[str, Any]] = {}
        try:
            # Rounds are interleaved (round 1 of every client, then round 2, ...), each in a
            # fresh client process, so a burst of outside load cannot sink one client's 3 rounds.
            for rnd in range(args.rounds):
                for kind in kinds:
                    for client in clients:
                        if client.endswith("-default") and variant != servers[0] and not args.defaults_everywhere:
                            continue
                        row = table.setdefault(
                            (kind, client),
                            {"server": variant, "server_desc": desc, "kind": kind, "client": client, "rounds": []},
                        )
                        if "error" in row or "skip" in row:
                            continue
                        result = run_client(args, client, kind, proc, info["port"], client_cpu)
                        if "crash" in result:
                            row.setdefault("crashes", []).append(result["crash"])
                        if "rounds" in result:
                            row["rounds"] += result["rounds"]
                            row["pool"], row["version"] = result["pool"], result["version"]
                            r = result["rounds"][0]
                            note = (
                                f"{r['rps']:8,.0f} calls/s  p50 {r['p50_ms']:5.1f} ms  p99 {r['p99_ms']:6.1f} ms"
                                f"  cpu {r['cpu_us']:5.0f} us  other load {r['other_load']:.2f}"
                            )
                        else:
                            row.update(result)
                            note = result.get("error") or result.get("skip") or ""
                        print(f"  [{variant:9} r{rnd + 1}] {kind:4} {client:18} {note}", file=sys.stderr, flush=True)
            if args.checks and variant == servers[0]:
                for client in [c for c in clients if not c.endswith("-default")]:
                    result = run_client(args, client, "checks", proc, info["port"], client_cpu)
                    rows.append({"server": variant, "server_desc": desc, "kind": "checks", "client": client, **result})
                    print(f"  [checks      ] {client:18} {result}", file=sys.stderr, flush=True)
        finally:
            stop_server(proc)
        for row in table.values():
            if row["rounds"]:
                row["summary"] = summarize(row["rounds"])
            rows.append(row)

    print_tables(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
