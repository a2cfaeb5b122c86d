"""``elicitkit serve --auth-issuer ...``: the served endpoint needs a bearer token from that issuer."""

from __future__ import annotations

import subprocess

import httpx
import pytest

from server.auth.local_issuer import local_issuer

from ._support import ELICITKIT, ROOT, child_env, http_server

pytestmark = pytest.mark.timeout(90)


def test_serve_with_auth_options_requires_a_token_for_the_resource() -> None:
    with local_issuer() as issuer:

        def argv(port: int) -> list[str]:
            return [
                *ELICITKIT,
                "serve",
                "examples/tools_basic.py",
                "--transport",
                "http",
                "--port",
                str(port),
                "--auth-issuer",
                issuer.url,
                "--auth-jwks",
                issuer.jwks_uri,
                "--auth-scope",
                "mcp:tools",
            ]

        with http_server(argv, "elicitkit serve --auth-issuer") as served:
            listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            init = {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            }
            headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
            with httpx.Client(trust_env=False, timeout=10) as http:
                refused = http.post(served.url, json=init, headers=headers)
                assert refused.status_code == 401
                assert (
                    f'resource_metadata="http://127.0.0.1:{served.port}/.well-known/oauth-protected-resource/mcp"'
                    in (refused.headers["www-authenticate"])
                )
                metadata = http.get(f"http://127.0.0.1:{served.port}/.well-known/oauth-protected-resource/mcp").json()
                assert metadata["resource"] == served.url and metadata["authorization_servers"] == [issuer.url]
                token = issuer.token(aud=served.url)
                opened = http.post(served.url, json=init, headers={**headers, "Authorization": f"Bearer {token}"})
                assert opened.status_code == 200, opened.text
                session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
                bearer = {**headers, **session, "Authorization": f"Bearer {token}"}
                note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                assert http.post(served.url, json=note, headers=bearer).status_code == 202
                listed = http.post(served.url, json=listing, headers=bearer)
                assert listed.status_code == 200 and listed.json()["result"]["tools"], listed.text
                wrong = issuer.token(aud="http://127.0.0.1:1/mcp")
                assert (
                    http.post(
                        served.url, json=init, headers={**headers, "Authorization": f"Bearer {wrong}"}
                    ).status_code
                    == 401
                )
            assert token not in served.output()


def test_auth_options_on_stdio_are_refused_with_a_reason() -> None:
    ran = subprocess.run(
        [*ELICITKIT, "serve", "examples/tools_basic.py", "--auth-issuer", "http://127.0.0.1:9/"],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 2 and "stdio is not authenticated" in ran.stderr
    lone = subprocess.run(
        [*ELICITKIT, "serve", "examples/tools_basic.py", "--transport", "http", "--auth-scope", "x"],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert lone.returncode == 2 and "need --auth-issuer" in lone.stderr
