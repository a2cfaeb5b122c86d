"""The floor under S0: a raw JSON-RPC echo, no MCP at all (issue 27).

Each request ``{"id": n, "params": {"arguments": {"text": t}}}`` is answered with the result
S0's ``echo`` tool gives (``{"content": [{"type": "text", "text": t}]}``): parse, build,
encode, nothing else. What a Python request/response costs on the same transport, so the
benchmark can say how far an SDK's round trip is from it.

* stdio: newline-delimited JSON on stdin/stdout, on an asyncio loop (one write per tick's
  answers, as a careful server would).
* HTTP: a bare ASGI app (POST in, JSON out) under uvicorn with the same settings as the SDKs'.
* in-memory: ``handle(bytes) -> bytes``, called directly by the worker (``build_server``).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common


def handle(data: bytes) -> bytes:
    request = orjson.loads(data)
    text = request["params"]["arguments"]["text"]
    result = {"content": [{"type": "text", "text": text}]}
    return orjson.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})


def build_server(scenario: str = "echo") -> Callable[[bytes], bytes]:
    if scenario != "echo":
        raise SystemExit(f"the raw echo has no scenario {scenario!r}")
    return handle


async def serve_stdio() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    transport, _protocol = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout.buffer)
    out = bytearray()

    def flush() -> None:
        transport.write(bytes(out))
        out.clear()

    while line := await reader.readline():
        if not out:
            loop.call_soon(flush)
        out += handle(line) + b"\n"


Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]


async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            kind = message["type"]
            await send({"type": kind + ".complete"})
            if kind == "lifespan.shutdown":
                return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    answer = handle(body)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


async def serve_http(host: str, port: int) -> None:
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, **_common.UVICORN_SETTINGS)
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn offers no started event
        await asyncio.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    _common.announce(f"http://{host}:{bound}/mcp")
    await _common.wait_for_stdin_eof()
    server.should_exit = True
    await task


def main() -> None:
    args = _common.parse_args()
    with _common.profiled(args.profile):
        if args.mode == "stdio":
            asyncio.run(serve_stdio())
        else:
            import anyio

            anyio.run(serve_http, args.host, args.port)


if __name__ == "__main__":
    main()
