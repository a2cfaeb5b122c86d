"""ASGI plumbing shared by the endpoint and the runners: the types, and one-shot responses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from elicitkit.protocol.errors import MCPError
from elicitkit.protocol.jsonrpc import JSON, ErrorResponse, RequestId, encode

# ASGI speaks in loosely typed dicts; these names say which dict is which.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
ASGISend = Callable[[Message], Awaitable[None]]

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]
JSON_CT = (b"content-type", b"application/json")

# A scope key our own uvicorn protocol (:func:`.serve.timed_protocol`) sets to itself: the
# endpoint hands it a watch (``watch_lost(watch)``, ``watch_lost(None)`` to stop) whose ``lost()``
# it calls when the connection goes away. Under any other server the endpoint watches
# ``receive()`` for ``http.disconnect`` instead, which takes a task per waiting request.
DISCONNECT_HOOK = "elicitkit.disconnect"


async def send_json(send: ASGISend, status: int, body: JSON, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    data = encode(body)
    headers = [JSON_CT, (b"content-length", str(len(data)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


async def send_error(send: ASGISend, status: int, code: int, message: str, request_id: RequestId | None = None) -> None:
    await send_json(send, status, ErrorResponse(request_id, MCPError(code, message)).to_wire())


async def send_plain(send: ASGISend, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    data = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(data)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


async def send_accepted(send: ASGISend) -> None:
    """202 with no body: a notification or a response arrived; nothing to say back."""
    await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
