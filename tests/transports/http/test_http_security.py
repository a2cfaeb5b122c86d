"""The DNS-rebinding guard and content negotiation, over a real server (``security.py``).

Host and Origin are parsed by their grammars (RFC 3986 authority, RFC 6454 origin): a value that
only *starts* like a loopback name is refused, as is a second Host hiding behind the first.
Media types are parsed too: case-insensitive, parameters allowed, q-values and wildcards honoured.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import orjson
import pytest

from elicitkit.transports.http.serve import serve_http_background
from kit.raw import RawHTTP, init_request, req
from support_server import SupportServer

from ._wire import exchange, port_of, post_headers, request_bytes

pytestmark = pytest.mark.anyio


def json_init() -> bytes:
    return orjson.dumps(init_request())


@pytest.fixture(scope="module")
async def server_url() -> AsyncIterator[str]:
    async with serve_http_background(SupportServer()) as handle:  # bound to 127.0.0.1: the guard is on
        yield handle.url


@pytest.fixture(scope="module")
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


async def _post_init(http: httpx.AsyncClient, url: str, **headers: str) -> httpx.Response:
    peer = RawHTTP(http, url)
    return await peer.post(init_request(), headers=peer.headers(**headers))


# -- defect 8: Host and Origin -------------------------------------------------------------


@pytest.mark.parametrize("host", ["localhost:{port}@evil.example", "localhost:evil", "[::1]evil"])
async def test_defect_08_malformed_host_is_refused(http: httpx.AsyncClient, server_url: str, host: str) -> None:
    resp = await _post_init(http, server_url, Host=host.format(port=port_of(server_url)))
    assert resp.status_code == 400, resp.text
    assert "malformed Host" in resp.text
    assert "mcp-session-id" not in resp.headers


@pytest.mark.parametrize(
    "host",
    ["[::1", "[127.0.0.1]:80", "[v1.fe]:80", "::1", "localhost:99999", "localhost:+80", "localhost:8 0", "a b"],
)
async def test_more_malformed_hosts_are_refused(http: httpx.AsyncClient, server_url: str, host: str) -> None:
    assert (await _post_init(http, server_url, Host=host)).status_code == 400


@pytest.mark.parametrize("origin", ["http://localhost:80@evil.example", "http://[::1].evil.example"])
async def test_defect_08_malformed_origin_is_refused(http: httpx.AsyncClient, server_url: str, origin: str) -> None:
    resp = await _post_init(http, server_url, Origin=origin)
    assert resp.status_code == 403, resp.text
    assert "mcp-session-id" not in resp.headers


@pytest.mark.parametrize(
    "origin",
    ["null", "localhost", "http//localhost", "http://localhost/path", "http://localhost:1:2", "1http://localhost"],
)
async def test_more_malformed_origins_are_refused(http: httpx.AsyncClient, server_url: str, origin: str) -> None:
    assert (await _post_init(http, server_url, Origin=origin)).status_code == 403


@pytest.mark.parametrize("order", ["evil-first", "evil-last"])
async def test_defect_08_two_host_headers_are_400(server_url: str, order: str) -> None:
    port = port_of(server_url)
    hosts = [("Host", "evil.example"), ("Host", f"localhost:{port}")]
    if order == "evil-first":
        hosts.reverse()
    headers = hosts + post_headers(port)[1:]  # post_headers' own Host left out
    status, _, body = await exchange(port, request_bytes("POST", headers, json_init()))
    assert status == 400, body


async def test_two_origin_headers_are_refused(server_url: str) -> None:
    port = port_of(server_url)
    headers = [*post_headers(port), ("Origin", "http://evil.example"), ("Origin", f"http://localhost:{port}")]
    status, _, body = await exchange(port, request_bytes("POST", headers, json_init()))
    assert status == 403, body


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "localhost:{port}"},
        {"Host": "LOCALHOST:{port}"},
        {"Host": "127.0.0.1:{port}"},
        {"Host": "[::1]:{port}"},
        {"Host": "localhost"},
        {"Host": "127.0.0.1"},
        {"Host": "[::1]"},
        {"Host": "localhost:"},
        {"Origin": "http://localhost:{port}"},
        {"Origin": "http://127.0.0.1"},
        {"Origin": "http://[::1]:{port}"},
        {"Origin": "https://localhost/"},
        {"Host": "localhost:{port}", "Origin": "http://[0:0:0:0:0:0:0:1]:3000"},
    ],
)
async def test_valid_hosts_and_origins_pass(http: httpx.AsyncClient, server_url: str, headers: dict[str, str]) -> None:
    port = port_of(server_url)
    resp = await _post_init(http, server_url, **{k: v.format(port=port) for k, v in headers.items()})
    assert resp.status_code == 200, resp.text
    assert "mcp-session-id" in resp.headers


async def test_two_identical_accept_headers_are_combined_not_refused(server_url: str) -> None:
    port = port_of(server_url)
    headers = [*post_headers(port), ("Accept", "application/json")]  # a list field given twice is one list
    status, _, body = await exchange(port, request_bytes("POST", headers, json_init()))
    assert status == 200, body


def test_parsers_agree_with_the_grammar() -> None:
    from elicitkit.transports.http.security import parse_authority, parse_origin

    assert parse_authority("LocalHost:8000") == ("localhost", 8000)
    assert parse_authority("[::1]") == ("[::1]", None)
    assert parse_authority("localhost:1@evil") is None
    assert parse_origin("HTTP://[::1]:80") == ("http", "[::1]", 80)
    assert parse_origin("http://a@localhost") is None


# -- defect 9: media types -----------------------------------------------------------------


@pytest.fixture
async def raw(http: httpx.AsyncClient, server_url: str) -> RawHTTP:
    peer = RawHTTP(http, server_url)
    await peer.initialize()
    return peer


@pytest.mark.parametrize(
    "content_type",
    ["application/jsonx", "application/json5", "application/json-seq", "application/jsonfoo; charset=utf-8"],
)
async def test_defect_09_content_type_prefix_is_not_json(raw: RawHTTP, content_type: str) -> None:
    resp = await raw.post(req(1, "ping"), headers=raw.headers(**{"Content-Type": content_type}))
    assert resp.status_code == 415, resp.text
    await raw.assert_ping()


@pytest.mark.parametrize("content_type", ["application/json; charset=latin-1", "application/", "json"])
async def test_content_type_other_charset_or_malformed_is_415(raw: RawHTTP, content_type: str) -> None:
    resp = await raw.post(req(1, "ping"), headers=raw.headers(**{"Content-Type": content_type}))
    assert resp.status_code == 415, resp.text


@pytest.mark.parametrize(
    "content_type",
    ["APPLICATION/JSON", "application/json; charset=utf-8", 'Application/Json ; Charset="UTF-8"', "application/json;"],
)
async def test_content_type_any_case_with_parameters_is_json(raw: RawHTTP, content_type: str) -> None:
    resp = await raw.post(req(1, "ping"), headers=raw.headers(**{"Content-Type": content_type}))
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize(
    "accept",
    [
        "APPLICATION/JSON, TEXT/EVENT-STREAM",
        "Application/Json;q=0.9, Text/Event-Stream;q=0.1",
        "application/*, text/*",
        "application/json, text/*;q=0.5",
    ],
)
async def test_defect_09_accept_is_parsed_case_insensitively(raw: RawHTTP, accept: str) -> None:
    resp = await raw.post(req(1, "ping"), headers=raw.headers(Accept=accept))
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize(
    "accept",
    [
        "application/json;q=0, text/event-stream",
        "*/*, text/event-stream;q=0",
        "application/jsonx, text/event-stream",
        "application/json, text/event-streams",
        "*/json, text/event-stream",
    ],
)
async def test_accept_q_zero_and_lookalikes_are_406(raw: RawHTTP, accept: str) -> None:
    resp = await raw.post(req(1, "ping"), headers=raw.headers(Accept=accept))
    assert resp.status_code == 406, resp.text


@pytest.mark.parametrize("accept", ["TEXT/EVENT-STREAM", "text/*", "*/*;q=0.1"])
async def test_defect_09_get_accept_is_parsed(raw: RawHTTP, accept: str) -> None:
    async with raw.http.stream("GET", raw.url, headers=raw.headers(Accept=accept)) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"] == "text/event-stream"


def test_accepts_takes_the_most_specific_range() -> None:
    from elicitkit.transports.http.security import accepts

    assert accepts("*/*;q=0.1, application/json;q=0", "text/event-stream")
    assert not accepts("*/*;q=0.1, application/json;q=0", "application/json")
    assert not accepts("", "application/json")
    assert not accepts("application/json;q=2", "application/json")  # not a qvalue: skipped
