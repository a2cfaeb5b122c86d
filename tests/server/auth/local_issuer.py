"""A stand-in authorization server in a thread: JWKS and introspection on a loopback port.

It signs tokens with keys this test holds, so each bad token (forged, expired, wrong audience,
``alg: none``, ...) can be made exactly; ``mode`` turns the JWKS or introspection endpoint
down, hostile or hanging. The real oidc-provider runs in test_with_oidc_provider.py.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, RSAKey


@dataclass
class LocalIssuer:
    url: str
    keys: list[Any] = field(default_factory=list)
    mode: str = "ok"  # ok | down | html | huge | hang | garbage-keys
    introspection_mode: str = "ok"  # ok | hang
    active: dict[str, dict[str, Any]] = field(default_factory=dict)  # token -> introspection answer
    jwks_hits: int = 0
    introspection_hits: int = 0

    @property
    def jwks_uri(self) -> str:
        return self.url + "/jwks"

    def rotate(self) -> Any:
        """A new signing key, listed from now on (the old one too)."""
        key = RSAKey.generate_key(2048, parameters={"kid": f"k{len(self.keys)}", "use": "sig"})
        self.keys.append(key)
        return key

    def token(
        self,
        *,
        sub: str = "ada",
        aud: Any,
        scope: str = "mcp:tools",
        client_id: str | None = "app",
        iss: str | None = None,
        exp_in: float = 300,
        key: Any = None,
        header: dict[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        signing = key if key is not None else self.keys[-1]
        now = int(time.time())
        body: dict[str, Any] = {"iss": iss or self.url, "sub": sub, "aud": aud, "iat": now, "exp": now + int(exp_in)}
        body["scope"] = scope
        if client_id:
            body["client_id"] = client_id
        body.update(claims)
        head = {"alg": "RS256", "kid": signing.kid, "typ": "at+jwt", **(header or {})}
        return jwt.encode(head, body, signing)


def unsigned(claims: dict[str, Any]) -> str:
    """An ``alg: none`` JWT."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return part({"alg": "none", "typ": "at+jwt"}) + "." + part(claims) + "."


def other_key(kid: str) -> Any:
    """A key nobody lists, under a key id the issuer does list (a forgery)."""
    return RSAKey.generate_key(2048, parameters={"kid": kid})


def ec_key(kid: str) -> Any:
    return ECKey.generate_key("P-256", parameters={"kid": kid})


@contextmanager
def local_issuer() -> Iterator[LocalIssuer]:
    state: dict[str, LocalIssuer] = {}
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return None

        def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            issuer = state["it"]
            if self.path == "/jwks":
                issuer.jwks_hits += 1
                if issuer.mode == "down":
                    self._send(503, b"down")
                elif issuer.mode == "html":
                    self._send(200, b"<html>login</html>", "text/html")
                elif issuer.mode == "huge":
                    self._send(200, b'{"keys": [' + b" " * 2_000_000 + b"]}")
                elif issuer.mode == "garbage-keys":
                    self._send(200, b'{"keys": [{"kty": "RSA", "n": "!!", "e": 1}]}')
                elif issuer.mode == "hang":
                    stop.wait(30)
                else:
                    keys = KeySet(issuer.keys).as_dict(private=False)
                    self._send(200, json.dumps(keys).encode())
            else:
                self._send(404, b"{}")

        def do_POST(self) -> None:
            issuer = state["it"]
            length = int(self.headers.get("content-length", "0"))
            form = parse_qs(self.rfile.read(length).decode())
            if self.path != "/introspect":
                self._send(404, b"{}")
                return
            issuer.introspection_hits += 1
            if issuer.introspection_mode == "hang":
                stop.wait(30)
                return
            if self.headers.get("authorization", "") != "Basic " + base64.b64encode(b"rs:rs-secret").decode():
                self._send(401, b'{"error": "invalid_client"}')
                return
            token = form.get("token", [""])[0]
            self._send(200, json.dumps(issuer.active.get(token, {"active": False})).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    issuer = LocalIssuer(f"http://127.0.0.1:{server.server_address[1]}")
    issuer.rotate()
    state["it"] = issuer
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
