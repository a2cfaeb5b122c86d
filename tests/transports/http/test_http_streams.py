"""Resuming a stream with ``Last-Event-ID`` (``streams.py``): an id that is not one of ours, however
odd its characters, gets a 404 JSON-RPC error and never a 500."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from elicitkit.protocol.errors import INVALID_REQUEST
from elicitkit.transports.http.serve import serve_http_background
from kit.raw import RawHTTP
from support_server import SupportServer

from ._wire import exchange, port_of, post_headers, request_bytes

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def server_url() -> AsyncIterator[str]:
    async with serve_http_background(SupportServer()) as handle:
        yield handle.url


@pytest.fixture
async def raw(server_url: str) -> AsyncIterator[RawHTTP]:
    async with httpx.AsyncClient(timeout=10) as http:
        peer = RawHTTP(http, server_url)
        await peer.initialize()
        yield peer


@pytest.mark.parametrize(
    "last_event_id",
    [
        "g/\xb2".encode("latin-1"),  # '²': str.isdigit() is true, int() refuses it
        "g/1\xb9".encode("latin-1"),  # '¹'
        "g/\xb2".encode(),  # the same in UTF-8 (read as latin-1: 'Â²')
        b"g/" + b"9" * 5000,  # all ASCII digits, but more than int() converts
    ],
    ids=["superscript-two", "superscript-one", "utf8-superscript", "5000-digits"],
)
async def test_defect_05_last_event_id_non_ascii_digit(raw: RawHTTP, last_event_id: bytes) -> None:
    assert raw.session_id is not None
    port = port_of(raw.url)
    headers = [*post_headers(port, raw.session_id), ("Accept", "text/event-stream"), ("Last-Event-ID", last_event_id)]
    status, _, body = await exchange(port, request_bytes("GET", headers))
    assert status == 404, body
    assert b"cannot resume from event" in body
    assert b'"code":%d' % INVALID_REQUEST in body
    await raw.assert_ping()  # the session is unharmed


def test_parse_event_id_is_strict() -> None:
    from elicitkit.transports.http.streams import parse_event_id

    assert parse_event_id("r12/34") == ("r12", 34)
    for bad in ("g/²", "g/٣", "g/ 1", "g/+1", "g/-1", "g/", "/1", "g", "g/1/2", "g/" + "1" * 19):
        assert parse_event_id(bad) is None, bad
