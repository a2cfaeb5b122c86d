#!/usr/bin/env python3
"""The cost of bearer verification per call: the same server with and without ``auth``, one run.

    python benchmarks/bearer.py [--calls 300] [--blocks 5]

Two servers in this process over Streamable HTTP (2026-07-28 stateless ``tools/call`` of a tool
that only returns): one plain, one behind ``ResourceServer(JWTVerifier(...))`` whose JWKS is
fetched once from a loopback endpoint and then cached, so what is measured is the per-call
work: reading the header, checking the RS256 signature and the claims. Blocks of calls
alternate between the two so that load on the machine hits both alike; the medians are
printed, and the verifier alone (no HTTP) is timed too: a token it already verified (the
per-call case) and a full signature check (``cache_size=0``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from elicitkit import Server
from elicitkit.server.auth import JWTVerifier, ResourceServer
from elicitkit.transports.http.serve import serve_http_background

ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
}


def jwks_server(keys: KeySet) -> tuple[ThreadingHTTPServer, str]:
    body = json.dumps(keys.as_dict(private=False)).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return None

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def build() -> Server:
    server = Server("bench")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


async def block(http: httpx.AsyncClient, url: str, token: str | None, calls: int) -> float:
    """Microseconds per call over ``calls`` sequential calls."""
    params = {"name": "echo", "arguments": {"text": "hi"}, "_meta": ENVELOPE}
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "echo",
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
    started = time.perf_counter()
    for _ in range(calls):
        reply = await http.post(url, content=body, headers=headers)
        assert reply.status_code == 200, reply.text
    return (time.perf_counter() - started) / calls * 1e6


async def main(calls: int, blocks: int) -> None:
    key = RSAKey.generate_key(2048, parameters={"kid": "bench", "use": "sig"})
    jwks, issuer = jwks_server(KeySet([key]))
    try:
        plain = build()
        protected = build()
        async with serve_http_background(plain, port=0) as a:
            # the protected server's resource URL must be known before it binds: bind, learn, rebind
            from socket import socket

            with socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            url = f"http://127.0.0.1:{port}/mcp"
            verifier = JWTVerifier(issuer, url, jwks_uri=issuer + "/jwks")
            protected.auth = ResourceServer(verifier, resource=url, authorization_servers=[issuer])
            now = int(time.time())
            claims = {"iss": issuer, "aud": url, "sub": "ada", "client_id": "bench", "iat": now, "exp": now + 3600}
            token = jwt.encode({"alg": "RS256", "kid": "bench", "typ": "at+jwt"}, claims, key)
            async with serve_http_background(protected, port=port) as b, httpx.AsyncClient(trust_env=False) as http:
                await block(http, a.url, None, 20)  # warm up both
                await block(http, b.url, token, 20)
                plain_us, auth_us = [], []
                for _ in range(blocks):
                    plain_us.append(await block(http, a.url, None, calls))
                    auth_us.append(await block(http, b.url, token, calls))
            started = time.perf_counter()
            for _ in range(calls):
                await verifier.verify(token)
            verify_us = (time.perf_counter() - started) / calls * 1e6
            uncached = JWTVerifier(issuer, url, jwks_uri=issuer + "/jwks", cache_size=0)
            await uncached.verify(token)  # fetch the keys once
            started = time.perf_counter()
            for _ in range(calls):
                await uncached.verify(token)
            full_us = (time.perf_counter() - started) / calls * 1e6
    finally:
        jwks.shutdown()
    p, q = statistics.median(plain_us), statistics.median(auth_us)
    print(f"calls per block: {calls}, blocks: {blocks}, JWKS fetches: {verifier.fetches}")
    print(f"unauthenticated tools/call: {p:8.1f} us/call (median of blocks: {', '.join(f'{x:.0f}' for x in plain_us)})")
    print(f"bearer JWT tools/call:      {q:8.1f} us/call (median of blocks: {', '.join(f'{x:.0f}' for x in auth_us)})")
    print(f"difference:                 {q - p:8.1f} us/call ({(q / p - 1) * 100:+.1f}%)")
    print(f"verify, token remembered:   {verify_us:8.1f} us/call (what the server does per call)")
    print(f"verify, full RS256 check:   {full_us:8.1f} us/call (cached JWKS, cache_size=0)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--blocks", type=int, default=5)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.blocks))
