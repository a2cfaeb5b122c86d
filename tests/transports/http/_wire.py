"""Raw HTTP/1.1 over asyncio sockets, for what httpx will not send: two Host fields, header
bytes that are not ASCII, a request trickled a byte at a time."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import orjson

ACCEPT_BOTH = "application/json, text/event-stream"


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def request_bytes(
    method: str,
    headers: list[tuple[str, str | bytes]],
    body: bytes = b"",
    path: str = "/mcp",
) -> bytes:
    """A raw request; headers go out exactly as given (in order, repeated, any bytes)."""
    lines = [f"{method} {path} HTTP/1.1".encode()]
    for name, value in headers:
        lines.append(name.encode() + b": " + (value if isinstance(value, bytes) else value.encode("latin-1")))
    if body or method == "POST":
        lines.append(b"Content-Length: " + str(len(body)).encode())
    lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def post_headers(port: int, session_id: str | None = None, **extra: str) -> list[tuple[str, str | bytes]]:
    headers: list[tuple[str, str | bytes]] = [
        ("Host", f"127.0.0.1:{port}"),
        ("Accept", ACCEPT_BOTH),
        ("Content-Type", "application/json"),
    ]
    if session_id is not None:
        headers += [("Mcp-Session-Id", session_id), ("MCP-Protocol-Version", "2025-11-25")]
    headers += [(name.replace("_", "-"), value) for name, value in extra.items()]
    return headers


async def exchange(port: int, raw: bytes, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """Send ``raw`` (which says ``Connection: close``); (status, headers, body) of the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(-1), timeout)
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


def json_body(body: bytes) -> Any:
    return orjson.loads(body)
