"""One principal everywhere, across a Redis fleet: two protected instances share sessions (the
backplane), tasks (a Redis task store) and rounds (the state keys). A second principal's token
cannot use the first one's legacy session through the instance that does not own it (the
principal travels, signed, with the relayed request), nor see or cancel the first one's task
from either instance; the owner can, from both.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from elicitkit.server.rounds.keys import ENV_VAR as STATE_KEYS
from elicitkit.server.rounds.keys import KeyRing
from kit.fleet import redis_server
from kit.processes import serve_on_free_port

from .local_issuer import LocalIssuer, local_issuer
from .test_resource_server import EXT, call26, legacy_headers, open_legacy

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

APP = Path(__file__).with_name("fleet_app.py")
RESOURCE = "https://fleet.example/mcp"
FLEET_KEY = "principal-fleet-tests-secret"


@contextlib.contextmanager
def protected_fleet(issuer: LocalIssuer) -> Iterator[list[str]]:
    with redis_server() as redis, contextlib.ExitStack() as stack:
        env = {**os.environ, STATE_KEYS: KeyRing.generate_secret(), "ELICITKIT_FLEET_KEY": FLEET_KEY}
        prefix = f"auth-{uuid.uuid4().hex[:8]}:"
        urls = []
        for index in range(2):
            port, _proc, _log = stack.enter_context(
                serve_on_free_port(
                    lambda p: [sys.executable, str(APP), str(p), redis.url, prefix, issuer.url, issuer.jwks_uri],
                    f"protected instance {index}",
                    env=env,
                )
            )
            urls.append(f"http://127.0.0.1:{port}/mcp")
        yield urls


def text(reply: httpx.Response) -> str:
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()["result"]
    return str(result["content"][0]["text"])


async def test_sessions_and_tasks_stay_with_their_principal_across_the_fleet() -> None:
    with local_issuer() as issuer, protected_fleet(issuer) as (first, second):
        ada = issuer.token(aud=RESOURCE, sub="ada")
        eve = issuer.token(aud=RESOURCE, sub="eve")
        async with httpx.AsyncClient(trust_env=False, timeout=20) as http:
            # a legacy session opened on the first instance
            session = await open_legacy(http, first, ada)
            call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
            relayed = await http.post(second, json=call, headers=legacy_headers(ada, session))
            assert text(relayed) == f"ada via app@i{first.split(':')[2].split('/')[0]}"  # served by its owner
            for url in (first, second):
                refused = await http.post(url, json={**call, "id": 6}, headers=legacy_headers(eve, session))
                assert refused.status_code == 403, (url, refused.text)
                assert "another principal" in refused.text
            for url in (first, second):  # its standalone stream, directly or through the backplane
                stream_headers = {**legacy_headers(eve, session), "Accept": "text/event-stream"}
                get = await http.get(url, headers=stream_headers)
                assert get.status_code == 403, (url, get.text)
            async with http.stream(
                "GET", second, headers={**legacy_headers(ada, session), "Accept": "text/event-stream"}
            ) as mine:
                assert mine.status_code == 200 and mine.headers["content-type"].startswith("text/event-stream")
            # the owner's session still works after the refusals
            again = await http.post(second, json={**call, "id": 7}, headers=legacy_headers(ada, session))
            assert text(again).startswith("ada via app@")

            # a 2026 task made on the first instance
            made = await call26(http, first, ada, "tools/call", {"name": "slow", "arguments": {}}, EXT)
            task_id = made.json()["result"]["taskId"]
            for url in (first, second):
                for method in ("tasks/get", "tasks/cancel"):
                    theirs = await call26(http, url, eve, method, {"taskId": task_id}, EXT)
                    error = theirs.json().get("error")
                    assert error is not None and "not found" in error["message"].lower(), (url, method, theirs.text)
            mine = await call26(http, second, ada, "tasks/get", {"taskId": task_id}, EXT)
            assert mine.json()["result"]["status"] == "working", mine.text
            cancelled = await call26(http, second, ada, "tasks/cancel", {"taskId": task_id}, EXT)
            assert "error" not in cancelled.json(), cancelled.text
