"""The fleet tests' real parts behave as the fleet tests assume: Redis restarts empty on its
port, and haproxy spreads consecutive requests of one keep-alive connection over its backends."""

from __future__ import annotations

import contextlib
import http.client
import http.server
import itertools
import threading
from collections.abc import Iterator

import pytest
import redis

from kit.fleet import redis_server, round_robin
from kit.processes import free_port


def test_redis_restarts_empty_on_the_same_port() -> None:
    with redis_server() as server:
        client = redis.Redis.from_url(server.url)
        client.set("k", "v")
        assert client.get("k") == b"v"
        port = server.port
        server.stop()
        with pytest.raises(redis.ConnectionError):
            client.get("k")
        server.start()
        assert server.port == port
        assert client.get("k") is None
        client.close()


@contextlib.contextmanager
def _named_backend(name: str) -> Iterator[int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = name.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    port = free_port()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_haproxy_balances_each_request_of_one_connection() -> None:
    with _named_backend("a") as a, _named_backend("b") as b, round_robin([a, b]) as balancer:
        connection = http.client.HTTPConnection("127.0.0.1", balancer.port, timeout=5)
        seen = []
        for _ in range(4):
            connection.request("GET", "/mcp")
            seen.append(connection.getresponse().read().decode())
        connection.close()
    assert sorted(seen) == ["a", "a", "b", "b"]
    assert all(first != second for first, second in itertools.pairwise(seen))
